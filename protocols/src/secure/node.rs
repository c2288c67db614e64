//! The Node role: answers the aggregator's requests with encrypted sums over its own rows.
//! Everything a Node sends is encrypted under the key holder's key; what it receives (N, the
//! coefficients, `Enc((B/N)^-1)`) is public by design or encrypted.

use ndarray::Array1;
use num_bigint::BigUint;
use num_traits::One;
use privlogit_circuits::channel::Channel;

use super::wire::{self, Reader, Step, Writer};
use super::{SecureConfig, SecureError};
use crate::objective::PartyData;
use crate::paillier::{DjnNoise, EncryptedMatrix, EncryptedVector, Fixed, Packing, PublicKey};

/// Serves the aggregator over `channel` until it says [`Step::Done`].
pub fn serve<C: Channel>(
    mut channel: C,
    party: &PartyData,
    key: &PublicKey,
    config: &SecureConfig,
) -> Result<(), SecureError> {
    let noise = DjnNoise::new(key, &mut rand::rng());
    let frac = config.format.frac();
    let mut n_total: Option<f64> = None;
    let mut inverse: Option<EncryptedMatrix> = None;
    let at = |step| move |e| SecureError::io(format!("Node, {step}"), e);
    loop {
        let (step, payload) = wire::recv(
            &mut channel,
            config.session,
            &[
                Step::Count,
                Step::Total,
                Step::Bound,
                Step::Inverse,
                Step::Gradient,
                Step::Newton,
                Step::Done,
            ],
        )
        .map_err(at("waiting for the aggregator"))?;
        let mut reader = Reader::new(&payload);
        let reply = match step {
            Step::Done => return Ok(()),
            Step::Count => {
                let count = Fixed::integer(party.rows() as u64);
                let bound = BigUint::from(config.max_rows);
                if party.rows() as u64 > config.max_rows {
                    return Err(SecureError::Protocol(format!(
                        "a Node holds {} rows, above the study's limit {}",
                        party.rows(),
                        config.max_rows
                    )));
                }
                let v = EncryptedVector::encrypt(
                    key,
                    &[count],
                    &bound,
                    Packing::unpacked(key),
                    &noise,
                )?;
                Some((
                    Step::CountReply,
                    Writer::new().bytes(&v.to_bytes(key)).finish(),
                ))
            }
            Step::Total => {
                let n = reader.u64().map_err(at("reading N"))?;
                reader.end().map_err(at("reading N"))?;
                if n < party.rows() as u64 {
                    return Err(SecureError::Protocol(format!(
                        "N = {n} is below this Node's own {} rows",
                        party.rows()
                    )));
                }
                n_total = Some(n as f64);
                None
            }
            Step::Bound => {
                let n = n_total
                    .ok_or_else(|| SecureError::Protocol("bound requested before N".to_string()))?;
                let sums = party.information_bound_sums().values();
                let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
                let v = encrypt_values(
                    key,
                    &values,
                    frac,
                    config,
                    config.bound_packing(key)?,
                    &noise,
                )?;
                Some((
                    Step::BoundReply,
                    Writer::new().bytes(&v.to_bytes(key)).finish(),
                ))
            }
            Step::Inverse => {
                let bytes = reader.bytes().map_err(at("reading the inverse"))?;
                reader.end().map_err(at("reading the inverse"))?;
                inverse = Some(EncryptedMatrix::from_bytes(key, bytes)?);
                None
            }
            Step::Gradient | Step::Newton => {
                let n = n_total.ok_or_else(|| {
                    SecureError::Protocol("gradient requested before the setup".to_string())
                })?;
                let beta = Array1::from(reader.f64s().map_err(at("reading beta"))?);
                reader.end().map_err(at("reading beta"))?;
                if beta.len() != party.columns() {
                    return Err(SecureError::Protocol(format!(
                        "beta of {} coefficients for {} columns",
                        beta.len(),
                        party.columns()
                    )));
                }
                let mut sums = party.gradient_sums(&beta).values();
                let log_likelihood = sums.pop().expect("p + 1 sums") / n;
                let gradient: Vec<f64> = sums.iter().map(|v| v / n).collect();
                // Unpacked, so that the Center can take dot products with public vectors.
                let g =
                    encrypt_values(key, &gradient, frac, config, Packing::unpacked(key), &noise)?;
                let l = encrypt_values(
                    key,
                    &[log_likelihood],
                    2 * frac,
                    config,
                    Packing::unpacked(key),
                    &noise,
                )?;
                let mut w = Writer::new()
                    .bytes(&g.to_bytes(key))
                    .bytes(&l.to_bytes(key));
                if let Some(m) = &inverse {
                    let fixed = gradient
                        .iter()
                        .map(|&v| Fixed::from_f64(v, frac))
                        .collect::<Result<Vec<_>, _>>()?;
                    let step = m.mul_vector(key, &fixed)?.rerandomized(key, &noise);
                    w = w.bytes(&step.to_bytes(key));
                }
                if step == Step::Newton {
                    // The local information X_i^T A X_i / N (eq. 2.13), lower triangle.
                    let sums = party.information_sums(&beta).values();
                    let values: Vec<f64> = sums.iter().map(|v| v / n).collect();
                    let packing = config.bound_packing(key)?;
                    let h = encrypt_values(key, &values, frac, config, packing, &noise)?;
                    w = w.bytes(&h.to_bytes(key));
                }
                Some((Step::GradientReply, w.finish()))
            }
            other => unreachable!("{other:?} was not expected"),
        };
        if let Some((step, bytes)) = reply {
            wire::send(&mut channel, config.session, step, &bytes)
                .map_err(at("replying to the aggregator"))?;
        }
    }
}

/// Encrypts reals at `scale`, refusing values at or above the study's public bound
/// `2^value_bits` (a value that large would not fit the masks' and slots' widths).
fn encrypt_values(
    key: &PublicKey,
    values: &[f64],
    scale: u32,
    config: &SecureConfig,
    packing: Packing,
    noise: &DjnNoise,
) -> Result<EncryptedVector, SecureError> {
    let limit = f64::from(config.value_bits).exp2();
    if let Some(v) = values.iter().find(|v| v.is_nan() || v.abs() >= limit) {
        return Err(SecureError::Protocol(format!(
            "a Node's value {v} is outside the study's bound 2^{} (raise value_bits)",
            config.value_bits
        )));
    }
    let fixed = values
        .iter()
        .map(|&v| Fixed::from_f64(v, scale))
        .collect::<Result<Vec<_>, _>>()?;
    let bound = BigUint::one() << (config.value_bits + scale);
    Ok(EncryptedVector::encrypt(
        key, &fixed, &bound, packing, noise,
    )?)
}
