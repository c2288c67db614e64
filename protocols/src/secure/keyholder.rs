//! The key holder role: holds the Paillier secret key and garbles. It decrypts only masked
//! values (which it cannot tell from random) and the values that are public by design (N and
//! the PrivLogit-Local step), and learns nothing from the circuits it garbles.

use num_bigint::{BigInt, BigUint};
use num_traits::One;
use privlogit_circuits::channel::Channel;
use privlogit_circuits::linalg::Matrix;
use privlogit_circuits::session::GarblerSession;

use super::gc::{self, Comparison, KeyholderGc};
use super::masked::MaskedHelper;
use super::masked::msgs::Request;
use super::wire::{self, Reader, Step, Writer};
use super::{SecureConfig, SecureError};
use crate::paillier::{DjnNoise, EncryptedMatrix, EncryptedVector, Fixed, SecretKey};

/// What the key holder did, for the cost report.
#[derive(Debug, Clone, Default)]
pub struct KeyholderStats {
    /// AND gates garbled.
    pub and_gates: u64,
    /// Bytes sent to the aggregator (garbled tables included).
    pub bytes_sent: u64,
    /// Seconds in Paillier decryptions and encryptions.
    pub paillier_seconds: f64,
    /// Seconds garbling (including waiting for the evaluator's OT messages and bits).
    pub gc_seconds: f64,
    /// Masked arithmetic: Paillier, plaintext products and pivot circuits.
    pub masked: super::masked::HelperStats,
}

/// Serves the aggregator over `channel` until it says [`Step::Done`].
pub fn serve<C: Channel>(
    channel: C,
    secret: &SecretKey,
    config: &SecureConfig,
) -> Result<KeyholderStats, SecureError> {
    let at = |step| move |e| SecureError::io(format!("key holder, {step}"), e);
    let key = secret.public_key();
    let mut rng = rand::rng();
    let session = GarblerSession::new(channel, &mut rng).map_err(at("base OT"))?;
    let mut party = KeyholderGc { session, rng };
    let noise = DjnNoise::new(key, &mut rand::rng());
    let format = config.format;
    let mut factors: Vec<Matrix<u128>> = Vec::new();
    let mut masked = MaskedHelper::new(DjnNoise::new(key, &mut rand::rng()));
    let (mut paillier_seconds, mut gc_seconds) = (0.0, 0.0);
    let clock = std::time::Instant::now;
    loop {
        let ch = party.session.channel().map_err(at("flushing"))?;
        let (step, payload) = wire::recv(
            ch,
            config.session,
            &[
                Step::DecryptPublic,
                Step::Factor,
                Step::Solve,
                Step::Compare,
                Step::Masked,
                Step::Done,
            ],
        )
        .map_err(at("waiting for the aggregator"))?;
        let mut r = Reader::new(&payload);
        let bad = at("reading a request");
        match step {
            Step::Done => {
                let stats = KeyholderStats {
                    and_gates: party.session.and_gates(),
                    bytes_sent: party
                        .session
                        .channel()
                        .map_err(at("flushing"))?
                        .bytes_sent(),
                    paillier_seconds,
                    gc_seconds,
                    masked: masked.stats().clone(),
                };
                return Ok(stats);
            }
            Step::Masked => {
                let request = Request::decode(key, &payload)?;
                masked.handle(request, secret, &mut party, config.session)?;
            }
            Step::DecryptPublic => {
                let v = EncryptedVector::from_bytes(key, r.bytes().map_err(bad)?)?;
                r.end().map_err(at("reading a request"))?;
                let t = clock();
                let values: Vec<f64> = v.decrypt(secret)?.iter().map(Fixed::to_f64).collect();
                paillier_seconds += t.elapsed().as_secs_f64();
                let ch = party.session.channel().map_err(at("replying"))?;
                wire::send(
                    ch,
                    config.session,
                    Step::DecryptPublicReply,
                    &Writer::new().f64s(&values).finish(),
                )
                .map_err(at("replying"))?;
            }
            Step::Factor => {
                let d = r.u64().map_err(bad)? as usize;
                let local = r.u64().map_err(at("reading a request"))? == 1;
                let masked = r.u64().map_err(at("reading a request"))? as usize;
                let v =
                    EncryptedVector::from_bytes(key, r.bytes().map_err(at("reading a request"))?)?;
                r.end().map_err(at("reading a request"))?;
                check_request(d, masked, v.len(), d * (d + 1) / 2)?;
                let t = clock();
                let values = decrypt_values(&v, secret)?;
                paillier_seconds += t.elapsed().as_secs_f64();
                let t = clock();
                let (l, inverse, _) = gc::factor_circuit(
                    &mut party,
                    d,
                    Some(&values),
                    None,
                    masked,
                    format,
                    local,
                    None,
                    super::solver::largest_inverse_norm(config).recip(),
                )
                .map_err(at("the factor circuit"))?;
                gc_seconds += t.elapsed().as_secs_f64();
                factors.push(l);
                if let Some(masked_inverse) = inverse {
                    let t = clock();
                    let width = format.width();
                    let packing = config.inverse_packing(key, d, width, width + gc::SIGMA + 1)?;
                    let bound = BigUint::one() << (format.width() + gc::SIGMA + 2);
                    let columns = (0..d)
                        .map(|j| {
                            let column: Vec<Fixed> = (0..d)
                                .map(|i| Fixed {
                                    value: masked_inverse[i * d + j].clone(),
                                    scale: format.frac(),
                                })
                                .collect();
                            EncryptedVector::encrypt(key, &column, &bound, packing, &noise)
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    let m = EncryptedMatrix::from_columns(d, columns)?;
                    paillier_seconds += t.elapsed().as_secs_f64();
                    let ch = party.session.channel().map_err(at("replying"))?;
                    wire::send(
                        ch,
                        config.session,
                        Step::FactorReply,
                        &Writer::new().bytes(&m.to_bytes(key)).finish(),
                    )
                    .map_err(at("replying"))?;
                }
            }
            Step::Solve => {
                let index = r.u64().map_err(bad)? as usize;
                let masked = r.u64().map_err(at("reading a request"))? as usize;
                let v =
                    EncryptedVector::from_bytes(key, r.bytes().map_err(at("reading a request"))?)?;
                r.end().map_err(at("reading a request"))?;
                let l = factors.get(index).ok_or_else(|| {
                    SecureError::Protocol(format!("no factor {index} to solve against"))
                })?;
                check_request(l.len(), masked, v.len(), l.len())?;
                let t = clock();
                let values = decrypt_values(&v, secret)?;
                paillier_seconds += t.elapsed().as_secs_f64();
                let l = l.clone();
                let t = clock();
                gc::solve_circuit(&mut party, &l, Some(&values), None, masked, format)
                    .map_err(at("the solve circuit"))?;
                gc_seconds += t.elapsed().as_secs_f64();
            }
            Step::Compare => {
                let kind = Comparison::from_code(r.u64().map_err(bad)?)
                    .ok_or_else(|| SecureError::Protocol("unknown comparison".to_string()))?;
                let masked = r.u64().map_err(at("reading a request"))? as usize;
                let width = r.u64().map_err(at("reading a request"))? as usize;
                let a =
                    EncryptedVector::from_bytes(key, r.bytes().map_err(at("reading a request"))?)?;
                let b =
                    EncryptedVector::from_bytes(key, r.bytes().map_err(at("reading a request"))?)?;
                r.end().map_err(at("reading a request"))?;
                check_request(1, masked, a.len() + b.len(), 2)?;
                if width + gc::SIGMA as usize > masked || width < 2 {
                    return Err(SecureError::Protocol(
                        "inconsistent comparison widths".to_string(),
                    ));
                }
                let t = clock();
                let mut values = decrypt_values(&a, secret)?;
                values.extend(decrypt_values(&b, secret)?);
                paillier_seconds += t.elapsed().as_secs_f64();
                let t = clock();
                gc::compare_circuit(&mut party, kind, Some(&values), None, masked, width)
                    .map_err(at("the comparison circuit"))?;
                gc_seconds += t.elapsed().as_secs_f64();
            }
            other => unreachable!("{other:?} was not expected"),
        }
    }
}

/// Masked values of a request as integers.
fn decrypt_values(v: &EncryptedVector, secret: &SecretKey) -> Result<Vec<BigInt>, SecureError> {
    Ok(v.decrypt(secret)?.into_iter().map(|f| f.value).collect())
}

/// Bounds a request's sizes before any circuit is built for it.
fn check_request(d: usize, masked: usize, got: usize, expected: usize) -> Result<(), SecureError> {
    if d == 0 || d > super::MAX_DIMENSION || masked > 4096 || got != expected {
        return Err(SecureError::Protocol(format!(
            "malformed request: dimension {d}, {got} values (expected {expected}), mask width {masked}"
        )));
    }
    Ok(())
}
