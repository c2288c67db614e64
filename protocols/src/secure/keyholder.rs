//! The key holder role: holds the Paillier secret key and garbles. It decrypts only masked
//! values (which it cannot tell from random), N, the standardisation moments and the
//! PrivLogit-Local steps included, and those only within the study's [`DecryptionBudget`]; it
//! learns nothing from the circuits it garbles.

use num_bigint::{BigInt, BigUint};
use num_traits::One;
use privlogit_circuits::channel::Channel;
use privlogit_circuits::matrix_circuits::Matrix;
use privlogit_circuits::session::GarblerSession;

use super::gc::{self, Comparison, KeyholderGc};
use super::masked::MaskedHelper;
use super::masked::matrix::IntMatrix;
use super::masked::msgs::Request;
use super::perturbation::{self, NoiseShare, Release};
use super::ranking;
use super::wire::{self, Reader, Step, Writer};
use super::{Breach, SecureConfig, SecureError};
use crate::paillier::{DjnNoise, EncryptedMatrix, EncryptedVector, Fixed, PublicKey, SecretKey};
use crate::transport::Role;

mod vertical_garbler;

use vertical_garbler::{KeyholderVertical, Serving};

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

/// The decryptions outside circuits and masked arithmetic that a study may ask the key holder
/// for, fixed by its public plan: exact counts, exact lengths, in order. The aggregator masks
/// each of them, so this is defence in depth: an aggregator that tried to use the key holder
/// as a decryption oracle (for a Node's gradient, say) gets no more than these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecryptionBudget {
    /// The row count N: one value, once.
    pub count: usize,
    /// Standardisation: two rounds of `features` values each (means, then variances).
    pub moments: usize,
    /// An unstandardised study: one round of `features` mean squares, right after the count
    /// (the aggregator's scaling of large features, `SecureAggregation::scale_raw`).
    pub raw_moments: usize,
    /// Values per moments round.
    pub features: usize,
    /// PrivLogit-Local: one step of `dimension` values per evaluated point (at most two an
    /// iteration), at most this many.
    pub steps: usize,
    /// Values per step.
    pub dimension: usize,
    /// Whether the study decrypts steps at all (PrivLogit-Local).
    pub local: bool,
}

impl DecryptionBudget {
    /// The budget of a study with `features` columns (`dimension` coefficients), standardised
    /// or not, running PrivLogit-Local (`local`) for at most `max_iterations`.
    pub fn new(
        features: usize,
        dimension: usize,
        standardize: bool,
        local: bool,
        max_iterations: usize,
    ) -> Self {
        Self {
            count: 1,
            moments: if standardize { 2 } else { 0 },
            raw_moments: usize::from(!standardize),
            features,
            // One step per point the Nodes evaluate: an accelerated candidate's goes with its
            // acceptance test, kept or not (`aggregator::early_step`), and a rejected one's is
            // followed by the plain point's, so at most two an iteration; the one at the final
            // coefficients, which the aggregator decrypts to see whether the gradient-norm test
            // can be skipped; and those of an unpenalised study's separation probe, Newton
            // steps after the last iteration (`secure::SEPARATION_PROBE`).
            steps: if local {
                2 * max_iterations + 1 + super::SEPARATION_PROBE
            } else {
                0
            },
            dimension,
            local,
        }
    }

    /// The budget of a study taken up again after a lost party: the PrivLogit-Local steps
    /// that were decrypted while the lost iteration was in flight (after the last checkpoint;
    /// a candidate's and the plain point's) are given back, since the resumed study repeats
    /// that iteration. Each resume can so add two steps; a resume needs every party restarted.
    ///
    /// The resumed aggregator also counts the rows again, and a `standardize`d study pools the
    /// means again, to check that the Nodes came back with the checkpointed run's rows: N and
    /// one moments round more (values the first run already revealed).
    pub fn resumed(mut self, standardize: bool) -> Self {
        if self.local && self.count == 0 && self.moments == 0 {
            self.steps += 2;
        }
        if self.count == 0 {
            self.count = 1;
            if standardize && self.moments == 0 {
                self.moments = 1;
            }
        }
        self
    }

    /// Spends one decryption of `len` values, or refuses it with what was expected.
    pub fn spend(&mut self, len: usize) -> Result<(), SecureError> {
        let (left, want, what) = if self.count > 0 {
            (&mut self.count, 1, "the row count")
        } else if self.moments > 0 {
            (&mut self.moments, self.features, "standardisation moments")
        } else if self.raw_moments > 0 && len == self.features {
            (
                &mut self.raw_moments,
                self.features,
                "the features' mean squares",
            )
        } else {
            // The mean squares come first or not at all (a vertical study has none).
            self.raw_moments = 0;
            (&mut self.steps, self.dimension, "a PrivLogit-Local step")
        };
        if *left == 0 || len != want {
            return Err(SecureError::DecryptionBudget {
                asked: len,
                allowed: if *left == 0 { 0 } else { want },
                what,
            });
        }
        *left -= 1;
        Ok(())
    }
}

impl DecryptionBudget {
    fn write(&self, w: Writer) -> Writer {
        w.u64(self.count as u64)
            .u64(self.moments as u64)
            .u64(self.features as u64)
            .u64(self.steps as u64)
            .u64(self.dimension as u64)
            .u64(u64::from(self.local))
            .u64(self.raw_moments as u64)
    }

    fn read(r: &mut Reader<'_>) -> std::io::Result<Self> {
        let mut next = || r.u64().map(|v| v as usize);
        Ok(Self {
            count: next()?,
            moments: next()?,
            features: next()?,
            steps: next()?,
            dimension: next()?,
            local: next()? == 1,
            // Absent from a key kept by an earlier release.
            raw_moments: next().unwrap_or(0),
        })
    }
}

/// Where the key holder keeps a study's key and what is left of its decryption budget, so
/// that a restarted key holder continues the study (`--resume`) with the same key, and a
/// restart does not refill the budget.
pub trait KeyStore {
    /// Keeps the secret key and its budget for the study `session` (called with a new key
    /// before its public half leaves the key holder, and after every decryption the budget
    /// counts): what [`Self::load`] gives back.
    fn save(
        &mut self,
        session: u64,
        kept: (&SecretKey, &DecryptionBudget),
    ) -> Result<(), SecureError>;
    /// The key and budget kept for `session`, if any.
    fn load(&mut self, session: u64) -> Result<Option<(SecretKey, DecryptionBudget)>, SecureError>;
}

/// Keeps nothing: a study in one process ends with any of its parties.
#[derive(Debug, Default)]
pub struct NoKeyStore;

impl KeyStore for NoKeyStore {
    fn save(&mut self, _: u64, _: (&SecretKey, &DecryptionBudget)) -> Result<(), SecureError> {
        Ok(())
    }

    fn load(&mut self, _: u64) -> Result<Option<(SecretKey, DecryptionBudget)>, SecureError> {
        Ok(None)
    }
}

const KEPT_MAGIC: &[u8; 4] = b"PLKK";

/// The bytes a [`KeyStore`] keeps for a study: `"PLKK"`, the session, the budget, the secret
/// key's primes (wiped when dropped).
pub fn encode_kept(
    session: u64,
    secret: &SecretKey,
    budget: &DecryptionBudget,
) -> zeroize::Zeroizing<Vec<u8>> {
    let exported = secret.export_secret();
    let body = budget
        .write(Writer::new().u64(session))
        .bytes(&exported)
        .finish();
    let mut out = zeroize::Zeroizing::new(Vec::with_capacity(4 + body.len()));
    out.extend_from_slice(KEPT_MAGIC);
    out.extend_from_slice(&body);
    let mut body = body;
    zeroize::Zeroize::zeroize(&mut body);
    out
}

/// Reads what [`encode_kept`] wrote.
pub fn decode_kept(bytes: &[u8]) -> Result<(u64, SecretKey, DecryptionBudget), SecureError> {
    let bad = SecureError::MalformedKeyFile;
    if bytes.len() < 4 || &bytes[..4] != KEPT_MAGIC {
        return Err(bad("bad magic".into()));
    }
    let mut r = Reader::new(&bytes[4..]);
    let session = r.u64().map_err(|e| bad(e.to_string()))?;
    let budget = DecryptionBudget::read(&mut r).map_err(|e| bad(e.to_string()))?;
    let secret = SecretKey::import_secret(r.bytes().map_err(|e| bad(e.to_string()))?)?;
    r.end().map_err(|e| bad(e.to_string()))?;
    Ok((session, secret, budget))
}

/// Serves the aggregator over `channel` until it says [`Step::Done`], decrypting outside
/// circuits and masked arithmetic no more than `budget`, and telling `spent` what is left
/// after every such decryption.
pub fn serve<C: Channel>(
    channel: C,
    secret: &SecretKey,
    config: &SecureConfig,
    budget: DecryptionBudget,
    spent: &mut dyn FnMut(&DecryptionBudget) -> Result<(), SecureError>,
    share: Option<(Release, &mut dyn NoiseShare)>,
) -> Result<KeyholderStats, SecureError> {
    let key = secret.public_key();
    let mut rng = rand::rng();
    let session = GarblerSession::new(channel, &mut rng).map_err(at("base OT"))?;
    let noise = DjnNoise::shared(key);
    let mut keyholder = Session {
        secret,
        key,
        config,
        budget,
        spent,
        share,
        party: KeyholderGc { session, rng },
        masked: MaskedHelper::new(noise.clone()),
        noise,
        factors: Vec::new(),
        ranked: false,
        vertical: None,
        paillier_seconds: 0.0,
        gc_seconds: 0.0,
        deferred: None,
    };
    loop {
        let ch = keyholder.party.session.channel().map_err(at("flushing"))?;
        let (step, payload) =
            wire::recv(ch, config.session, &REQUESTS).map_err(at("waiting for the aggregator"))?;
        let r = Reader::new(&payload);
        match step {
            Step::Done => return keyholder.stats(),
            Step::Perturb => keyholder.perturb(r)?,
            Step::Rank => keyholder.rank(r)?,
            Step::VerticalSetup => keyholder.vertical_setup(&payload)?,
            Step::VerticalBound | Step::VerticalRound => {
                keyholder.vertical_round(&payload, step == Step::VerticalBound)?
            }
            Step::Masked => {
                let request = Request::decode(key, &payload)?;
                keyholder
                    .masked
                    .handle(request, secret, &mut keyholder.party, config.session)?;
            }
            Step::DecryptPublic => keyholder.decrypt_public(r, false)?,
            Step::DecryptPublicAfterNext => keyholder.decrypt_public(r, true)?,
            Step::Factor => keyholder.factor(r)?,
            Step::Solve => keyholder.solve(r)?,
            Step::Compare => keyholder.compare(r)?,
            other => unreachable!("{other:?} was not expected"),
        }
        if step != Step::DecryptPublicAfterNext
            && let Some(answer) = keyholder.deferred.take()
        {
            keyholder.reply(Step::DecryptPublicReply, &answer, "replying")?;
        }
    }
}

/// The requests the key holder answers.
const REQUESTS: [Step; 12] = [
    Step::DecryptPublic,
    Step::DecryptPublicAfterNext,
    Step::Factor,
    Step::Solve,
    Step::Compare,
    Step::Masked,
    Step::Perturb,
    Step::Rank,
    Step::VerticalSetup,
    Step::VerticalBound,
    Step::VerticalRound,
    Step::Done,
];

/// `e` while the key holder does `step`.
fn at(step: &'static str) -> impl Fn(std::io::Error) -> SecureError {
    move |e| SecureError::io(Role::KeyHolder, step, e)
}

/// The key holder while it serves one study: its key and decryption budget, its end of the
/// circuits, what earlier requests left (PrivLogit's factors, the vertical state, whether the
/// held-out rows were ranked) and its timings.
struct Session<'a, 'f, 's, C: Channel> {
    secret: &'a SecretKey,
    key: &'a PublicKey,
    config: &'a SecureConfig,
    budget: DecryptionBudget,
    spent: &'f mut dyn FnMut(&DecryptionBudget) -> Result<(), SecureError>,
    share: Option<(Release, &'s mut dyn NoiseShare)>,
    party: KeyholderGc<C, rand::rngs::ThreadRng>,
    noise: DjnNoise,
    factors: Vec<Matrix<u128>>,
    ranked: bool,
    vertical: Option<KeyholderVertical>,
    masked: MaskedHelper,
    paillier_seconds: f64,
    gc_seconds: f64,
    /// A decryption's answer held until the next request is answered
    /// ([`Step::DecryptPublicAfterNext`]).
    deferred: Option<Vec<u8>>,
}

impl<C: Channel> Session<'_, '_, '_, C> {
    fn stats(&mut self) -> Result<KeyholderStats, SecureError> {
        Ok(KeyholderStats {
            and_gates: self.party.session.and_gates(),
            bytes_sent: self
                .party
                .session
                .channel()
                .map_err(at("flushing"))?
                .bytes_sent(),
            paillier_seconds: self.paillier_seconds,
            gc_seconds: self.gc_seconds,
            masked: self.masked.stats().clone(),
        })
    }

    /// `values` decrypted, timed as Paillier work.
    fn decrypt(&mut self, v: &EncryptedVector) -> Result<Vec<BigInt>, SecureError> {
        let t = std::time::Instant::now();
        let values = decrypt_values(v, self.secret);
        self.paillier_seconds += t.elapsed().as_secs_f64();
        values
    }

    fn reply(&mut self, step: Step, bytes: &[u8], doing: &'static str) -> Result<(), SecureError> {
        let ch = self.party.session.channel().map_err(at("replying"))?;
        wire::send(ch, self.config.session, step, bytes).map_err(at(doing))
    }

    /// Secure PLR's noise: this server's share, drawn once and encrypted.
    fn perturb(&mut self, mut r: Reader<'_>) -> Result<(), SecureError> {
        let config = self.config;
        let rows = r.u64().map_err(at("reading a request"))?;
        r.end().map_err(at("reading a request"))?;
        let Some((release, noise_share)) = self.share.take() else {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::OutOfOrder {
                    what: "the aggregator asked for a noise share twice, or in a study that is \
                           not differentially private",
                },
            ));
        };
        let rows = usize::try_from(rows)
            .ok()
            .filter(|&n| n > 0 && n as u64 <= config.max_rows * config.parties as u64)
            .ok_or_else(|| {
                SecureError::violation(
                    Role::Aggregator,
                    Breach::OutOfRange {
                        what: "the declared row count N",
                        value: rows,
                        min: 1,
                        max: config.max_rows * config.parties as u64,
                    },
                )
            })?;
        let draw = noise_share
            .draw(&release, rows, config.dimension)
            .map_err(|cause| SecureError::NoiseShare {
                party: Role::KeyHolder,
                cause,
            })?;
        let t = std::time::Instant::now();
        let encrypted = perturbation::encrypt_share(self.key, config, &draw, rows, &self.noise)?;
        self.paillier_seconds += t.elapsed().as_secs_f64();
        let reply = Writer::new()
            .f64s(&[draw.penalty])
            .bytes(&encrypted.to_bytes(self.key))
            .finish();
        self.reply(Step::PerturbReply, &reply, "sending its noise share")
    }

    /// The held-out rows' ranking circuit (the exact AUC), once.
    fn rank(&mut self, r: Reader<'_>) -> Result<(), SecureError> {
        if std::mem::replace(&mut self.ranked, true) {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::OutOfOrder {
                    what: "a second ranking of held-out rows",
                },
            ));
        }
        let (counts, seeds) = read_rank_request(r, self.key, self.config)?;
        let t = std::time::Instant::now();
        let shares = ranking::expand_seeds(&seeds, &counts, self.secret)?;
        self.paillier_seconds += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        ranking::rank_circuit(&mut self.party, &counts, Some(&shares), None)
            .map_err(at("the ranking circuit"))?;
        self.gc_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    fn vertical_setup(&mut self, payload: &[u8]) -> Result<(), SecureError> {
        if self.vertical.is_some() {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::OutOfOrder {
                    what: "a second vertical setup",
                },
            ));
        }
        let t = std::time::Instant::now();
        self.vertical = Some(KeyholderVertical::setup(
            payload,
            &mut self.party,
            self.secret,
            self.config,
        )?);
        self.paillier_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// A vertical study's bound (`bound`) or one of its rounds.
    fn vertical_round(&mut self, payload: &[u8], bound: bool) -> Result<(), SecureError> {
        let Some(state) = self.vertical.as_mut() else {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::OutOfOrder {
                    what: "a vertical request before the vertical setup",
                },
            ));
        };
        let t = std::time::Instant::now();
        let serve = if bound {
            KeyholderVertical::bound
        } else {
            KeyholderVertical::round
        };
        let at = Serving {
            party: &mut self.party,
            secret: self.secret,
            config: self.config,
            noise: &self.noise,
        };
        serve(state, payload, at)?;
        self.gc_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Values the protocol reveals to the aggregator, decrypted against the budget; answered
    /// now, or (`after_next`) once the next request is answered.
    fn decrypt_public(&mut self, mut r: Reader<'_>, after_next: bool) -> Result<(), SecureError> {
        let v = EncryptedVector::from_bytes(self.key, r.bytes().map_err(at("reading a request"))?)?;
        r.end().map_err(at("reading a request"))?;
        self.budget.spend(v.len())?;
        (self.spent)(&self.budget)?;
        let values = self.decrypt(&v)?;
        let reply = IntMatrix::from_vec(1, values.len(), values)
            .write(Writer::new())
            .finish();
        if after_next {
            if self.deferred.replace(reply).is_some() {
                return Err(SecureError::violation(
                    Role::Aggregator,
                    Breach::OutOfOrder {
                        what: "a second decryption deferred before the first was answered",
                    },
                ));
            }
            return Ok(());
        }
        self.reply(Step::DecryptPublicReply, &reply, "replying")
    }

    /// The circuit method's factorisation (and, for PrivLogit-Local, the inverse it encrypts
    /// for the Nodes), kept for later solves.
    fn factor(&mut self, mut r: Reader<'_>) -> Result<(), SecureError> {
        let (config, key, format) = (self.config, self.key, self.config.format);
        config.check_circuit_scale()?;
        let d = r.u64().map_err(at("reading a request"))?;
        let local = r.u64().map_err(at("reading a request"))? == 1;
        let masked = r.u64().map_err(at("reading a request"))?;
        let v = EncryptedVector::from_bytes(key, r.bytes().map_err(at("reading a request"))?)?;
        r.end().map_err(at("reading a request"))?;
        let (d, masked) = check_request(config, d, masked, v.len(), |d| d * (d + 1) / 2)?;
        if d != config.dimension {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::Mismatch {
                    what: "the dimension of a factor request",
                    got: d as u64,
                    expected: config.dimension as u64,
                },
            ));
        }
        let values = self.decrypt(&v)?;
        let t = std::time::Instant::now();
        let (l, inverse, _) = gc::factor_circuit(
            &mut self.party,
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
        self.gc_seconds += t.elapsed().as_secs_f64();
        self.factors.push(l);
        let Some(masked_inverse) = inverse else {
            return Ok(());
        };
        let t = std::time::Instant::now();
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
                EncryptedVector::encrypt(key, &column, &bound, packing, &self.noise)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let m = EncryptedMatrix::from_columns(d, columns)?;
        self.paillier_seconds += t.elapsed().as_secs_f64();
        self.reply(
            Step::FactorReply,
            &Writer::new().bytes(&m.to_bytes(key)).finish(),
            "replying",
        )
    }

    /// A solve against a kept factor, in a circuit.
    fn solve(&mut self, mut r: Reader<'_>) -> Result<(), SecureError> {
        let config = self.config;
        let index = r.u64().map_err(at("reading a request"))?;
        let masked = r.u64().map_err(at("reading a request"))?;
        let v = EncryptedVector::from_bytes(self.key, r.bytes().map_err(at("reading a request"))?)?;
        r.end().map_err(at("reading a request"))?;
        let l = usize::try_from(index)
            .ok()
            .and_then(|i| self.factors.get(i))
            .ok_or_else(|| {
                SecureError::violation(
                    Role::Aggregator,
                    Breach::Unknown {
                        what: "factor to solve against",
                        id: index,
                    },
                )
            })?
            .clone();
        let (_, masked) = check_request(config, l.len() as u64, masked, v.len(), |d| d)?;
        let values = self.decrypt(&v)?;
        let t = std::time::Instant::now();
        gc::solve_circuit(
            &mut self.party,
            &l,
            Some(&values),
            None,
            masked,
            config.format,
        )
        .map_err(at("the solve circuit"))?;
        self.gc_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// One comparison of two encrypted values, in a circuit.
    fn compare(&mut self, mut r: Reader<'_>) -> Result<(), SecureError> {
        let config = self.config;
        let kind =
            Comparison::from_code(r.u64().map_err(at("reading a request"))?).ok_or_else(|| {
                SecureError::violation(
                    Role::Aggregator,
                    Breach::Malformed {
                        what: "an unknown comparison",
                    },
                )
            })?;
        let masked = r.u64().map_err(at("reading a request"))?;
        let width = r.u64().map_err(at("reading a request"))?;
        let a = EncryptedVector::from_bytes(self.key, r.bytes().map_err(at("reading a request"))?)?;
        let b = EncryptedVector::from_bytes(self.key, r.bytes().map_err(at("reading a request"))?)?;
        r.end().map_err(at("reading a request"))?;
        let (_, masked) = check_request(config, 1, masked, a.len() + b.len(), |_| 2)?;
        let width = usize::try_from(width).unwrap_or(usize::MAX);
        if width.saturating_add(gc::SIGMA as usize) > masked || width < 2 {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::OutOfRange {
                    what: "comparison width (bits)",
                    value: width as u64,
                    min: 2,
                    max: (masked as u64).saturating_sub(u64::from(gc::SIGMA)),
                },
            ));
        }
        let mut values = self.decrypt(&a)?;
        values.extend(self.decrypt(&b)?);
        let t = std::time::Instant::now();
        gc::compare_circuit(&mut self.party, kind, Some(&values), None, masked, width)
            .map_err(at("the comparison circuit"))?;
        self.gc_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }
}

/// A ranking request: one count of held-out rows per Node (in all at most
/// [`ranking::MAX_RANKED_ROWS`]) and the encrypted seed of each Node with rows.
#[allow(clippy::type_complexity)]
fn read_rank_request(
    mut r: Reader<'_>,
    key: &crate::paillier::PublicKey,
    config: &SecureConfig,
) -> Result<(Vec<usize>, Vec<Option<EncryptedVector>>), SecureError> {
    let at = |e| SecureError::io(Role::KeyHolder, "reading a ranking request", e);
    let bad = |breach| SecureError::violation(Role::Aggregator, breach);
    let nodes = r.u64().map_err(at)?;
    if nodes != config.parties as u64 {
        return Err(bad(Breach::Mismatch {
            what: "Nodes in a ranking",
            got: nodes,
            expected: config.parties as u64,
        }));
    }
    let (mut counts, mut seeds, mut total) = (Vec::new(), Vec::new(), 0usize);
    for _ in 0..nodes {
        let rows = r.u64().map_err(at)?;
        let seed = r.bytes().map_err(at)?;
        total = usize::try_from(rows)
            .ok()
            .and_then(|n| total.checked_add(n))
            .filter(|&t| t <= ranking::MAX_RANKED_ROWS)
            .ok_or_else(|| {
                bad(Breach::TooMany {
                    what: "held-out rows to rank",
                    count: (total as u64).saturating_add(rows),
                    limit: ranking::MAX_RANKED_ROWS as u64,
                })
            })?;
        let seed = match (rows, seed.is_empty()) {
            (0, true) => None,
            (r, false) if r > 0 => {
                let v = EncryptedVector::from_bytes(key, seed)?;
                if v.len() != 1 {
                    return Err(bad(Breach::Malformed {
                        what: "a ranking seed of more than one value",
                    }));
                }
                Some(v)
            }
            _ => {
                return Err(bad(Breach::Malformed {
                    what: "a ranking seed that does not match its rows",
                }));
            }
        };
        counts.push(rows as usize);
        seeds.push(seed);
    }
    r.end().map_err(at)?;
    Ok((counts, seeds))
}

/// Masked values of a request as integers.
fn decrypt_values(v: &EncryptedVector, secret: &SecretKey) -> Result<Vec<BigInt>, SecureError> {
    Ok(v.decrypt(secret)?.into_iter().map(|f| f.value).collect())
}

/// Largest mask width a request may ask for, in bits.
const MAX_MASKED: u64 = 4096;

/// Bounds a request's sizes before any arithmetic on them or any circuit: the dimension first
/// (at most the study's), then the count of values it implies, then the mask width (at least
/// the circuit format's width plus the statistical margin sigma, so a masked value is never
/// narrower than the word cut from it, and at most [`MAX_MASKED`]). Returns `(d, masked)`.
fn check_request(
    config: &SecureConfig,
    d: u64,
    masked: u64,
    got: usize,
    expected: impl Fn(usize) -> usize,
) -> Result<(usize, usize), SecureError> {
    let d = usize::try_from(d)
        .ok()
        .filter(|&d| d >= 1 && d <= config.dimension.min(super::MAX_DIMENSION))
        .ok_or_else(|| {
            SecureError::violation(
                Role::Aggregator,
                Breach::OutOfRange {
                    what: "malformed request: dimension",
                    value: d,
                    min: 1,
                    max: config.dimension.min(super::MAX_DIMENSION) as u64,
                },
            )
        })?;
    let want = expected(d);
    if got != want {
        return Err(SecureError::violation(
            Role::Aggregator,
            Breach::wrong_length("malformed request", got, want),
        ));
    }
    let least = u64::from(config.format.width() + gc::SIGMA);
    if masked < least || masked > MAX_MASKED {
        return Err(SecureError::violation(
            Role::Aggregator,
            Breach::OutOfRange {
                what: "malformed request: mask width (bits)",
                value: masked,
                min: least,
                max: MAX_MASKED,
            },
        ));
    }
    Ok((d, masked as usize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secure::DEFAULT_FORMAT;

    /// The key holder decrypts exactly the study's public-by-design values, in order, and
    /// refuses anything else: a vector of another length (a Node's gradient asked for in place
    /// of N), a third moments round, a step more than the iterations allow.
    #[test]
    fn decryption_budget_is_exact() {
        let mut b = DecryptionBudget::new(3, 4, true, true, 2);
        assert!(b.clone().spend(4).is_err(), "a gradient in place of N");
        b.spend(1).expect("N");
        assert!(b.clone().spend(1).is_err(), "N twice");
        b.spend(3).expect("means");
        b.spend(3).expect("variances");
        assert!(b.clone().spend(3).is_err(), "a third moments round");
        for k in 0..4 {
            b.spend(4)
                .unwrap_or_else(|e| panic!("step {k} of two iterations' four points: {e}"));
        }
        b.spend(4).expect("the step at the final coefficients");
        for k in 0..crate::secure::SEPARATION_PROBE {
            b.spend(4)
                .unwrap_or_else(|e| panic!("separation probe step {k}: {e}"));
        }
        let e = b.clone().spend(4).expect_err("past the iterations");
        assert!(e.to_string().contains("nothing more"), "{e}");
        // A resume gives back the steps of the iteration in flight, two per resume, after N
        // and the means counted again.
        let mut b = b.resumed(true);
        assert!(b.clone().spend(4).is_err(), "N first");
        b.spend(1).expect("N again");
        b.spend(3).expect("the means again");
        b.spend(4).expect("the repeated candidate's step");
        b.spend(4).expect("the repeated plain step");
        assert!(b.spend(4).is_err());
        let mut hessian = DecryptionBudget::new(3, 4, false, false, 100);
        hessian.spend(1).expect("N");
        // An unstandardised study's mean squares come right after N, once.
        hessian.clone().spend(3).expect("mean squares");
        let mut after = hessian.clone();
        after.spend(3).expect("mean squares");
        assert!(after.spend(3).is_err(), "a second mean-squares round");
        let mut hessian = hessian.resumed(false);
        hessian.spend(1).expect("N again");
        let e = hessian
            .spend(4)
            .expect_err("Hessian reveals no step to the key holder");
        assert!(
            e.to_string().contains("outside the decryption budget"),
            "{e}"
        );
    }

    /// A ranking request is bounded before any decryption: one count per Node of the study,
    /// the total within the largest ranking, a seed exactly for each Node with rows.
    #[test]
    fn ranking_requests_are_bounded() {
        use crate::paillier::{KeyPair, Packing};
        let pair = KeyPair::generate_insecure_for_tests(512, &mut rand::rng());
        let key = pair.secret.public_key();
        let noise = DjnNoise::new(key, &mut rand::rng());
        let seed = EncryptedVector::encrypt(
            key,
            &[Fixed::integer(7)],
            &(BigUint::one() << 256),
            Packing::unpacked(key),
            &noise,
        )
        .expect("seed")
        .to_bytes(key);
        let config = SecureConfig::new(1, 2, 3, DEFAULT_FORMAT);
        let request = |nodes: u64, rows: &[(u64, &[u8])]| {
            let mut w = Writer::new().u64(nodes);
            for (n, s) in rows {
                w = w.u64(*n).bytes(s);
            }
            w.finish()
        };
        let read = |bytes: &[u8]| read_rank_request(Reader::new(bytes), key, &config);
        let (counts, seeds) = read(&request(2, &[(5, &seed), (0, &[])])).expect("fine");
        assert_eq!(counts, [5, 0]);
        assert!(seeds[0].is_some() && seeds[1].is_none());
        let too_many = ranking::MAX_RANKED_ROWS as u64;
        for (bytes, why) in [
            (
                request(3, &[(5, &seed), (0, &[]), (0, &[])]),
                "Nodes in a ranking: 3, expected 2",
            ),
            (
                request(2, &[(too_many, &seed), (1, &seed)]),
                "held-out rows",
            ),
            (
                request(2, &[(u64::MAX, &seed), (1, &seed)]),
                "held-out rows",
            ),
            (request(2, &[(5, &[]), (0, &[])]), "does not match"),
            (request(2, &[(0, &seed), (0, &[])]), "does not match"),
        ] {
            let e = read(&bytes).expect_err(why);
            assert!(e.to_string().contains(why), "{e}");
        }
    }

    /// What a key store keeps reads back: session, budget and a key that decrypts what the
    /// original encrypted.
    #[test]
    fn kept_key_round_trips() {
        use crate::paillier::{KeyPair, KeySize};
        let pair = KeyPair::generate(KeySize::Bits2048, &mut rand::rng());
        let mut budget = DecryptionBudget::new(3, 4, true, true, 9);
        budget.spend(1).expect("N");
        let bytes = encode_kept(77, &pair.secret, &budget);
        let (session, secret, back) = decode_kept(&bytes).expect("reads");
        assert_eq!((session, back), (77, budget));
        assert_eq!(
            secret.public_key().to_bytes(),
            pair.secret.public_key().to_bytes()
        );
        assert!(decode_kept(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode_kept(b"PLKKshort").is_err());
    }

    /// Sizes off the wire are checked before any arithmetic on them: a dimension that would
    /// overflow `d (d + 1) / 2`, a dimension other than the study's, a mask width of 0 (which
    /// panicked in `chunks`) or narrower than the circuit word plus sigma (which panicked when
    /// the word was cut), and one beyond the largest, are all named errors.
    #[test]
    fn requests_are_bounded_before_arithmetic() {
        let config = SecureConfig::new(1, 3, 10, DEFAULT_FORMAT);
        let ok = u64::from(DEFAULT_FORMAT.width() + gc::SIGMA);
        let tri = |d: usize| d * (d + 1) / 2;
        assert_eq!(
            check_request(&config, 10, ok, 55, tri).expect("fine"),
            (10, ok as usize)
        );
        for (d, masked, got) in [
            (u64::MAX, ok, 55),
            (1 << 40, ok, 55),
            (0, ok, 0),
            (11, ok, 66),
            (10, 0, 55),
            (10, ok - 1, 55),
            (10, MAX_MASKED + 1, 55),
            (10, ok, 54),
        ] {
            let e = check_request(&config, d, masked, got, tri).expect_err("refused");
            assert!(e.to_string().contains("malformed request"), "{e}");
        }
    }
}
