//! The aggregator's checkpoint: what it needs to continue a study after any party was lost,
//! written after the setup and after every iteration. It holds only what the aggregator holds
//! anyway and may keep: the study's public parameters, the public key, N and the
//! standardisation statistics (public by design), the bound's factor as ciphertexts under the
//! key holder's key, and the public progress of the optimiser (coefficients, convergence
//! history). No mask and no secret is in it: a checkpoint is as safe to keep as the study's
//! transcript.
//!
//! Layout: `"PLCK"`, version (u64), then [`super::wire`] fields in the order of
//! [`Checkpoint`]; every length is checked against the bytes that are there before anything
//! is allocated for it.

use ndarray::Array1;

use super::masked::packed::PackedMatrix;
use super::solver::SavedFactor;
use super::wire::{Reader, Writer};
use super::{CheckpointFault, MAX_DIMENSION, ResumeMismatch, SecureError};
use crate::optimizer::{IterationRecord, Progress, StepKind};
use crate::paillier::{EncryptedVector, PublicKey};

const MAGIC: &[u8; 4] = b"PLCK";
const VERSION: u64 = 1;

/// Most iterations a checkpoint may record.
const MAX_HISTORY: usize = super::MAX_ITERATIONS;

/// Everything a resumed aggregator starts from.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The study id every connection is bound to (the study file's parties and label).
    pub study: [u8; 32],
    /// Digest of the study's plan (protocol, optimiser, penalty, stopping rule, formats): a
    /// checkpoint resumes only the same plan.
    pub plan: [u8; 32],
    /// The session id of every message.
    pub session: u64,
    /// The key holder's public key (its bytes).
    pub key: Vec<u8>,
    /// The Nodes' feature names.
    pub names: Vec<String>,
    /// N.
    pub rows: u64,
    /// The pooled means and standard deviations, when standardised.
    pub standardization: Option<(Vec<f64>, Vec<f64>)>,
    /// The bound's factor (PrivLogit), once made.
    pub bound: Option<SavedFactor>,
    /// The optimiser's progress.
    pub progress: Progress,
}

impl Checkpoint {
    /// The checkpoint's bytes.
    pub fn to_bytes(&self, key: &PublicKey) -> Vec<u8> {
        let mut w = Writer::new()
            .u64(VERSION)
            .bytes(&self.study)
            .bytes(&self.plan)
            .u64(self.session)
            .bytes(&self.key)
            .u64(self.names.len() as u64);
        for n in &self.names {
            w = w.string(n);
        }
        w = w.u64(self.rows);
        w = match &self.standardization {
            Some((means, scales)) => w.u64(1).f64s(means).f64s(scales),
            None => w.u64(0),
        };
        w = match &self.bound {
            None => w.u64(0),
            Some(SavedFactor::Inverse { packed, bits }) => {
                packed.write(key, w.u64(1).u64(u64::from(*bits)))
            }
            Some(SavedFactor::Lower(lower)) => w.u64(2).bytes(&lower.to_bytes(key)),
        };
        let p = &self.progress;
        w = w
            .f64s(p.beta.as_slice().expect("contiguous"))
            .u64(p.rounds as u64)
            .u64(p.rejected as u64);
        w = optional(w, p.initial_objective);
        w = w.u64(p.window.len() as u64);
        for (x, f) in &p.window {
            w = w
                .f64s(x.as_slice().expect("contiguous"))
                .f64s(f.as_slice().expect("contiguous"));
        }
        w = w.u64(p.history.len() as u64);
        for r in &p.history {
            w = w
                .u64(r.iteration as u64)
                .f64s(r.beta.as_slice().expect("contiguous"))
                .u64(step_code(r.step))
                .u64(r.rounds as u64);
            w = optional(w, r.objective);
            w = optional(w, r.relative_change);
        }
        let mut out = MAGIC.to_vec();
        out.extend(w.finish());
        out
    }

    /// The public key a checkpoint was written under (read first, to read the ciphertexts).
    pub fn key_of(bytes: &[u8]) -> Result<PublicKey, SecureError> {
        let mut r = Self::reader(bytes)?;
        for _ in 0..2 {
            r.bytes().map_err(bad)?;
        }
        r.u64().map_err(bad)?;
        let key = r.bytes().map_err(bad)?;
        Ok(
            PublicKey::from_bytes(key)
                .or_else(|_| PublicKey::from_bytes_insecure_for_tests(key))?,
        )
    }

    fn reader(bytes: &[u8]) -> Result<Reader<'_>, SecureError> {
        if bytes.len() < 4 || &bytes[..4] != MAGIC {
            return Err(SecureError::checkpoint(CheckpointFault::Magic));
        }
        let mut r = Reader::new(&bytes[4..]);
        let version = r.u64().map_err(bad)?;
        if version != VERSION {
            return Err(SecureError::checkpoint(CheckpointFault::Version {
                found: version,
                supported: VERSION,
            }));
        }
        Ok(r)
    }

    /// Reads a checkpoint written under `key`, refusing anything malformed with a named error
    /// (every count bounded before it is allocated).
    pub fn from_bytes(bytes: &[u8], key: &PublicKey) -> Result<Self, SecureError> {
        let mut r = Self::reader(bytes)?;
        let study = array32(r.bytes().map_err(bad)?)?;
        let plan = array32(r.bytes().map_err(bad)?)?;
        let session = r.u64().map_err(bad)?;
        let key_bytes = r.bytes().map_err(bad)?.to_vec();
        if key_bytes != key.to_bytes() {
            return Err(ResumeMismatch::CheckpointKey.into());
        }
        let count = bounded(r.u64().map_err(bad)?, MAX_DIMENSION, "feature names")?;
        let names = (0..count)
            .map(|_| r.string())
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        let rows = r.u64().map_err(bad)?;
        let standardization = match r.u64().map_err(bad)? {
            0 => None,
            1 => Some((r.f64s().map_err(bad)?, r.f64s().map_err(bad)?)),
            other => return Err(tag("standardisation flag", other)),
        };
        let bound = match r.u64().map_err(bad)? {
            0 => None,
            1 => {
                let bits =
                    u32::try_from(r.u64().map_err(bad)?).map_err(|_| malformed("bound bits"))?;
                let packed = PackedMatrix::read(key, &mut r, MAX_DIMENSION * MAX_DIMENSION)?;
                Some(SavedFactor::Inverse { packed, bits })
            }
            2 => Some(SavedFactor::Lower(EncryptedVector::from_bytes(
                key,
                r.bytes().map_err(bad)?,
            )?)),
            other => return Err(tag("factor kind", other)),
        };
        let beta = Array1::from(r.f64s().map_err(bad)?);
        let rounds = r.u64().map_err(bad)? as usize;
        let rejected = r.u64().map_err(bad)? as usize;
        let initial_objective = read_optional(&mut r)?;
        let windows = bounded(r.u64().map_err(bad)?, MAX_HISTORY, "window pairs")?;
        let window = (0..windows)
            .map(|_| {
                Ok((
                    Array1::from(r.f64s().map_err(bad)?),
                    Array1::from(r.f64s().map_err(bad)?),
                ))
            })
            .collect::<Result<Vec<_>, SecureError>>()?;
        let records = bounded(r.u64().map_err(bad)?, MAX_HISTORY, "iterations")?;
        let mut history = Vec::with_capacity(records.min(1024));
        for k in 0..records {
            let iteration = r.u64().map_err(bad)? as usize;
            let beta = Array1::from(r.f64s().map_err(bad)?);
            let step = step_of(r.u64().map_err(bad)?)?;
            let rounds = r.u64().map_err(bad)? as usize;
            let objective = read_optional(&mut r)?;
            let relative_change = read_optional(&mut r)?;
            if iteration != k + 1 {
                return Err(SecureError::checkpoint(CheckpointFault::Order {
                    iteration: iteration as u64,
                    place: k + 1,
                }));
            }
            history.push(IterationRecord {
                iteration,
                beta,
                objective,
                relative_change,
                step,
                rounds,
            });
        }
        r.end().map_err(bad)?;
        let dimension = beta.len();
        if dimension == 0
            || history.iter().any(|h| h.beta.len() != dimension)
            || window
                .iter()
                .any(|(x, f)| x.len() != dimension || f.len() != dimension)
            || beta.iter().any(|b| !b.is_finite())
        {
            return Err(malformed(
                "coefficient vectors of different lengths, or not finite",
            ));
        }
        Ok(Self {
            study,
            plan,
            session,
            key: key_bytes,
            names,
            rows,
            standardization,
            bound,
            progress: Progress {
                beta,
                history,
                rounds,
                initial_objective,
                window,
                rejected,
            },
        })
    }
}

fn optional(w: Writer, v: Option<f64>) -> Writer {
    match v {
        Some(x) => w.u64(1).f64s(&[x]),
        None => w.u64(0),
    }
}

fn read_optional(r: &mut Reader<'_>) -> Result<Option<f64>, SecureError> {
    match r.u64().map_err(bad)? {
        0 => Ok(None),
        1 => match r.f64s().map_err(bad)?.as_slice() {
            [x] => Ok(Some(*x)),
            _ => Err(malformed("an optional value of several")),
        },
        other => Err(tag("optional flag", other)),
    }
}

fn step_code(s: StepKind) -> u64 {
    match s {
        StepKind::Newton => 0,
        StepKind::Bound => 1,
        StepKind::Accelerated => 2,
    }
}

fn step_of(c: u64) -> Result<StepKind, SecureError> {
    match c {
        0 => Ok(StepKind::Newton),
        1 => Ok(StepKind::Bound),
        2 => Ok(StepKind::Accelerated),
        other => Err(tag("step kind", other)),
    }
}

fn bounded(n: u64, most: usize, what: &'static str) -> Result<usize, SecureError> {
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= most)
        .ok_or_else(|| {
            SecureError::checkpoint(CheckpointFault::TooMany {
                what,
                count: n,
                limit: most,
            })
        })
}

fn array32(b: &[u8]) -> Result<[u8; 32], SecureError> {
    b.try_into()
        .map_err(|_| SecureError::checkpoint(CheckpointFault::Id { bytes: b.len() }))
}

fn bad(e: std::io::Error) -> SecureError {
    SecureError::checkpoint(CheckpointFault::Read(e))
}

fn malformed(what: &'static str) -> SecureError {
    SecureError::checkpoint(CheckpointFault::Malformed { what })
}

fn tag(what: &'static str, value: u64) -> SecureError {
    SecureError::checkpoint(CheckpointFault::Tag { what, value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paillier::{DjnNoise, Fixed, KeyPair, Packing};
    use num_bigint::BigUint;

    fn sample(key: &PublicKey, bound: Option<SavedFactor>) -> Checkpoint {
        let record = |k: usize, s| IterationRecord {
            iteration: k,
            beta: Array1::from(vec![k as f64, -0.5]),
            objective: None,
            relative_change: Some(1e-3),
            step: s,
            rounds: 2 * k,
        };
        Checkpoint {
            study: [7; 32],
            plan: [9; 32],
            session: 0xfeed,
            key: key.to_bytes(),
            names: vec!["age".into(), "bmi".into()],
            rows: 569,
            standardization: Some((vec![1.0, 2.0], vec![0.5, 0.25])),
            bound,
            progress: Progress {
                beta: Array1::from(vec![0.25, -1.0]),
                history: vec![record(1, StepKind::Bound), record(2, StepKind::Accelerated)],
                rounds: 5,
                initial_objective: Some(-3.5),
                window: vec![(Array1::from(vec![0.0, 1.0]), Array1::from(vec![2.0, 3.0]))],
                rejected: 1,
            },
        }
    }

    /// A checkpoint reads back as written, with either kind of saved factor; the ciphertexts
    /// keep their values.
    #[test]
    fn round_trip() {
        let pair = KeyPair::generate_insecure_for_tests(512, &mut rand::rng());
        let key = pair.secret.public_key();
        let noise = DjnNoise::new(key, &mut rand::rng());
        let values: Vec<Fixed> = [3i64, -4, 5].into_iter().map(Fixed::integer).collect();
        let lower = EncryptedVector::encrypt(
            key,
            &values,
            &BigUint::from(100u8),
            Packing::unpacked(key),
            &noise,
        )
        .expect("encrypt");
        for bound in [None, Some(SavedFactor::Lower(lower))] {
            let c = sample(key, bound);
            let bytes = c.to_bytes(key);
            assert_eq!(
                Checkpoint::key_of(&bytes).expect("key").to_bytes(),
                key.to_bytes()
            );
            let back = Checkpoint::from_bytes(&bytes, key).expect("reads");
            assert_eq!(back.progress, c.progress);
            assert_eq!(
                (back.study, back.plan, back.session, back.rows),
                (c.study, c.plan, c.session, c.rows)
            );
            assert_eq!(back.names, c.names);
            assert_eq!(back.standardization, c.standardization);
            if let Some(SavedFactor::Lower(v)) = &back.bound {
                let got: Vec<i64> = v
                    .decrypt(&pair.secret)
                    .expect("decrypt")
                    .iter()
                    .map(|f| i64::try_from(&f.value).expect("small"))
                    .collect();
                assert_eq!(got, vec![3, -4, 5]);
            }
            // Every truncation and every flipped byte is refused or read, never a panic.
            for cut in 0..bytes.len() {
                assert!(Checkpoint::from_bytes(&bytes[..cut], key).is_err());
            }
            for at in (0..bytes.len()).step_by(7) {
                let mut b = bytes.clone();
                b[at] ^= 0x5a;
                let _ = Checkpoint::from_bytes(&b, key);
            }
        }
    }
}
