//! The Center's linear algebra on a secret positive-definite matrix (the PrivLogit bound or a
//! Newton Hessian): factor it once, then solve against it, by one of two methods
//! (`--linear-algebra`):
//!
//! - [`LinearAlgebra::Masked`] (the default): the key holder and the aggregator invert the
//!   matrix with masked arithmetic ([`super::masked`]); the aggregator keeps the inverse shared
//!   and a solve is one masked matrix-vector product, revealed (the step is public by design).
//! - [`LinearAlgebra::Circuit`]: the matrix is unmasked, factored (and for PrivLogit-Local
//!   inverted) in a garbled circuit on fixed-point words; the factor stays in the circuit
//!   session and a solve is a garbled forward and back substitution.
//!
//! Both serve every protocol; the circuit method is kept as the cross-check.

use crate::secure::{CheckpointFault, Inconsistency};
use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use num_bigint::{BigInt, BigUint, Sign};
use privlogit_circuits::channel::Channel;
use privlogit_circuits::matrix_circuits::Matrix;

use super::gc::{self, AggregatorGc};
use super::masked::block_spd::{self, SpdBounds};
use super::masked::engine::to_f64;
use super::masked::packed::PackedMatrix;
use super::masked::{MaskedEngine, MaskedStats, Shared};
use super::wire::{self, Reader, Step, Writer};
use super::{Breach, Overflow, SecureConfig, SecureError, pow2};
use crate::paillier::{DjnNoise, EncryptedMatrix, EncryptedVector, PublicKey};
use crate::transport::Role;
use sha2::{Digest, Sha256};

/// How the Center computes on secret matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinearAlgebra {
    /// Garbled circuits on fixed-point words.
    Circuit,
    /// Masked arithmetic on Paillier ciphertexts, pivots in small circuits.
    #[default]
    Masked,
}

impl LinearAlgebra {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LinearAlgebra::Circuit => "circuit",
            LinearAlgebra::Masked => "masked",
        }
    }
}

impl fmt::Display for LinearAlgebra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LinearAlgebra {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "circuit" => Ok(LinearAlgebra::Circuit),
            "masked" => Ok(LinearAlgebra::Masked),
            other => Err(format!(
                "unknown linear algebra {other:?} (expected circuit or masked)"
            )),
        }
    }
}

/// A factored matrix as the Center holds it.
enum Held {
    /// The Cholesky factor's wires in the circuit session.
    Circuit(Matrix<u128>),
    /// The shared inverse.
    Masked(Shared),
}

/// What it takes to hold a factor again after a restart, from what the aggregator may keep
/// (ciphertexts): the continued study then solves with the same matrix as before.
#[derive(Debug, Clone)]
pub enum SavedFactor {
    /// Masked method: `Enc(A^-1)` packed by columns (made by the key holder from its view),
    /// and the bits of its public bound; shared again with fresh masks.
    Inverse {
        /// The encrypted inverse.
        packed: PackedMatrix,
        /// Bits of the bound on its entries (at the engine's fractional bits).
        bits: u32,
    },
    /// Circuit method: `Enc(A)`, the lower triangle; the circuit factors it again, and gives
    /// the same words every time.
    Lower(EncryptedVector),
}

/// A factored matrix as [`Solver::factor`] returns it.
#[derive(Debug)]
pub struct Factored {
    /// Its index in the solver.
    pub index: usize,
    /// `Enc(A^-1)` for the Nodes, when asked for (PrivLogit-Local).
    pub inverse: Option<EncryptedMatrix>,
    /// What holds it again after a restart, when asked for.
    pub saved: Option<SavedFactor>,
}

/// Where the solver's time went.
#[derive(Debug, Clone, Default)]
pub struct SolverStats {
    /// Seconds in garbled circuits (the circuit method; evaluating and waiting for tables).
    pub gc_seconds: f64,
    /// Seconds in masked arithmetic (the masked method, pivot circuits included).
    pub masked_seconds: f64,
    /// The masked engine's own counters.
    pub masked: MaskedStats,
}

/// The Center's factored matrices and the method that made them.
pub struct Solver {
    method: LinearAlgebra,
    engine: Option<MaskedEngine>,
    /// Reproducible runs: the masks of each factorisation come from this and its label.
    seed: Option<[u8; 32]>,
    held: Vec<Held>,
    gc_seconds: f64,
    masked_seconds: f64,
}

impl fmt::Debug for Solver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Solver {{ {}, {} held }}", self.method, self.held.len())
    }
}

/// `lower + lambda/N I` style public bounds of a shared SPD matrix: entries below `lower`'s
/// slot bound, smallest eigenvalue at least `min_eigenvalue`.
pub fn bounds_of(lower: &EncryptedVector, d: usize, min_eigenvalue: f64) -> SpdBounds {
    let entry = big_to_f64(lower.slot_bound()) / f64::from(lower.scale()).exp2();
    SpdBounds::new(d, entry, min_eigenvalue)
}

/// How far a secure step may be from the exact step of the rounded sums: the 1e-6
/// agreement with the plaintext run, with a factor 10 of room.
pub const STEP_TOLERANCE: f64 = 1e-7;

/// The largest `||A^-1||` (bounded by its trace) for which the gradient's rounding moves the
/// step by at most [`STEP_TOLERANCE`]: every Node rounds `g_i / N` to `2^-(frac + 1)`, so the
/// sum of `parties` Nodes and the penalty is off by at most `(parties + 1) 2^-(frac + 1)` per
/// entry and `sqrt(d)` times that in norm. A matrix past it is refused with a named error:
/// its step (and so the model) would be noise in some direction (collinear columns, a tiny
/// penalty), where the plaintext run is itself ill-determined.
pub fn largest_inverse_norm(config: &SecureConfig) -> f64 {
    let per_entry = config.terms() as f64 * f64::from(config.frac + 1).exp2().recip();
    STEP_TOLERANCE / (per_entry * (config.dimension as f64).sqrt())
}

fn big_to_f64(v: &BigUint) -> f64 {
    use num_traits::ToPrimitive;
    v.to_f64().unwrap_or(f64::INFINITY)
}

impl Solver {
    /// A solver using `method` in the study `config`, encrypting with `noise` (under the
    /// study's key).
    pub fn new(method: LinearAlgebra, noise: &DjnNoise, config: &SecureConfig) -> Self {
        let engine = (method == LinearAlgebra::Masked).then(|| {
            let mut engine = MaskedEngine::with_noise(noise.clone(), config.session, config.frac);
            engine.set_block(config.circuit_block);
            engine
        });
        Self {
            method,
            engine,
            seed: None,
            held: Vec::new(),
            gc_seconds: 0.0,
            masked_seconds: 0.0,
        }
    }

    /// Draws the masks of every factorisation from `seed` and the factorisation's label, so
    /// that a run repeats another's rounding (benchmarks and tests only: the seed is as secret
    /// as the masks).
    pub fn set_seed(&mut self, seed: [u8; 32]) {
        self.seed = Some(seed);
    }

    /// The method.
    pub fn method(&self) -> LinearAlgebra {
        self.method
    }

    /// The masked engine (the masked method only).
    pub fn engine(&mut self) -> Option<&mut MaskedEngine> {
        self.engine.as_mut()
    }

    /// The counters.
    pub fn stats(&self) -> SolverStats {
        SolverStats {
            gc_seconds: self.gc_seconds,
            masked_seconds: self.masked_seconds,
            masked: self
                .engine
                .as_ref()
                .map(|e| e.stats().clone())
                .unwrap_or_default(),
        }
    }

    /// Factors the SPD matrix whose lower triangle (row by row, at the study's fractional bits)
    /// is `lower`, and keeps it; returns its index and, with `encrypted_inverse`, `Enc(A^-1)`
    /// for the Nodes (PrivLogit-Local), and with `save`, what holds it again after a restart.
    /// `label` names the matrix for a seeded run's masks.
    #[allow(clippy::too_many_arguments)]
    pub fn factor<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        key: &PublicKey,
        config: &SecureConfig,
        lower: &EncryptedVector,
        bounds: &SpdBounds,
        encrypted_inverse: bool,
        save: bool,
        label: &[u8],
    ) -> Result<Factored, SecureError> {
        let d = config.dimension;
        if lower.len() != d * (d + 1) / 2 || bounds.dim != d {
            return Err(SecureError::inconsistent(Inconsistency::Triangle {
                entries: lower.len(),
                dimension: d,
            }));
        }
        let start = Instant::now();
        if let (Some(seed), Some(engine)) = (self.seed, self.engine.as_mut()) {
            let mut h = Sha256::new();
            h.update(b"privlogit masks of a factorisation v1");
            h.update(seed);
            h.update(label);
            engine.reseed(h.finalize().into());
        }
        let (held, inverse, saved) = match self.method {
            LinearAlgebra::Circuit => {
                let (l, inverse) = circuit_factor(gc, key, config, lower, encrypted_inverse)?;
                self.gc_seconds += start.elapsed().as_secs_f64();
                let saved = save.then(|| SavedFactor::Lower(lower.clone()));
                (Held::Circuit(l), inverse, saved)
            }
            LinearAlgebra::Masked => {
                let engine = self
                    .engine
                    .as_mut()
                    .expect("the masked method has an engine");
                let frac = engine.frac();
                let norm = largest_inverse_norm(config);
                // Pivots of an inverse that passes the trace test below are at least 1 / norm:
                // stop early at one that is not.
                let bounds = bounds.with_min_pivot(norm.recip());
                let shared = engine.share_lower(gc, lower, d, lower.slot_bound().bits() as u32)?;
                let inverse = block_spd::spd_inverse(engine, gc, &shared, &bounds)?;
                engine.release(gc, &[&shared])?;
                // trace(A^-1) >= ||A^-1||_2: one revealed bit certifies the step's accuracy.
                let trace = engine.trace(gc, &inverse)?;
                let limit = (norm * f64::from(frac).exp2()).log2().floor().max(1.0) as u32;
                if !engine.check_range(gc, &trace, &BigInt::from(0), limit)? {
                    return Err(SecureError::Range(Overflow::IllConditioned {
                        frac,
                        norm,
                        tolerance: STEP_TOLERANCE,
                    }));
                }
                engine.release(gc, &[&trace])?;
                let bits = bounds.inverse_bits(frac);
                let packed = if encrypted_inverse || save {
                    let packing = config.inverse_packing(key, d, bits, inverse.mask_bits() + 1)?;
                    Some(engine.encrypted(gc, &inverse, packing)?)
                } else {
                    None
                };
                let encrypted = match (&packed, encrypted_inverse) {
                    (Some(p), true) => Some(p.to_encrypted_matrix(key, frac, pow2(bits))?),
                    _ => None,
                };
                let saved = packed.filter(|_| save).map(|packed| SavedFactor::Inverse {
                    packed,
                    bits: inverse.bound(),
                });
                self.masked_seconds += start.elapsed().as_secs_f64();
                (Held::Masked(inverse), encrypted, saved)
            }
        };
        self.held.push(held);
        Ok(Factored {
            index: self.held.len() - 1,
            inverse,
            saved,
        })
    }

    /// Holds a saved factor again (after a restart); returns its index and, with
    /// `encrypted_inverse`, `Enc(A^-1)` for the Nodes, equal in value to the one first made.
    pub fn restore<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        key: &PublicKey,
        config: &SecureConfig,
        saved: &SavedFactor,
        encrypted_inverse: bool,
    ) -> Result<(usize, Option<EncryptedMatrix>), SecureError> {
        let d = config.dimension;
        let start = Instant::now();
        let (held, inverse) = match (saved, self.method) {
            (SavedFactor::Lower(lower), LinearAlgebra::Circuit) => {
                let (l, inverse) = circuit_factor(gc, key, config, lower, encrypted_inverse)?;
                self.gc_seconds += start.elapsed().as_secs_f64();
                (Held::Circuit(l), inverse)
            }
            (SavedFactor::Inverse { packed, bits }, LinearAlgebra::Masked) => {
                if packed.rows() != d || packed.cols() != d {
                    return Err(SecureError::checkpoint(CheckpointFault::SavedInverse {
                        shape: (packed.rows(), packed.cols()),
                        dimension: d,
                    }));
                }
                let engine = self
                    .engine
                    .as_mut()
                    .expect("the masked method has an engine");
                let frac = engine.frac();
                let shared = engine.share(gc, packed, *bits)?;
                let inverse = encrypted_inverse
                    .then(|| packed.to_encrypted_matrix(key, frac, pow2(*bits)))
                    .transpose()?;
                self.masked_seconds += start.elapsed().as_secs_f64();
                (Held::Masked(shared), inverse)
            }
            _ => {
                return Err(SecureError::checkpoint(CheckpointFault::FactorMethod {
                    method: self.method.name(),
                }));
            }
        };
        self.held.push(held);
        Ok((self.held.len() - 1, inverse))
    }

    /// `A^-1 g` for the factor `index` and the encrypted gradient `g` (unpacked, at the study's
    /// fractional bits), revealed to the aggregator.
    pub fn solve<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        key: &PublicKey,
        config: &SecureConfig,
        index: usize,
        gradient: &EncryptedVector,
    ) -> Result<Vec<f64>, SecureError> {
        let start = Instant::now();
        let held = self.held.get_mut(index).ok_or_else(|| {
            SecureError::inconsistent(Inconsistency::Unknown {
                what: "factor",
                id: index,
            })
        })?;
        match held {
            Held::Circuit(l) => {
                let format = config.format;
                let (masked, masks, width) =
                    gc::mask(key, gradient, gradient.slot_bound().bits(), &gc.noise)?;
                let payload = Writer::new()
                    .u64(index as u64)
                    .u64(width as u64)
                    .bytes(&masked.to_bytes(key))
                    .finish();
                let at = |e| SecureError::io(Role::Aggregator, "the solve circuit", e);
                let ch = gc.session.channel().map_err(at)?;
                wire::send(ch, config.session, Step::Solve, &payload).map_err(at)?;
                let raw = gc::solve_circuit(gc, l, None, Some(&masks), width, format)
                    .map_err(at)?
                    .expect("the aggregator learns the step")
                    .ok_or_else(|| {
                        SecureError::Range(Overflow::CircuitStep {
                            width: format.width(),
                            frac: format.frac(),
                        })
                    })?;
                self.gc_seconds += start.elapsed().as_secs_f64();
                Ok(raw.into_iter().map(|r| format.decode(r)).collect())
            }
            Held::Masked(_) => {
                let engine = self
                    .engine
                    .as_mut()
                    .expect("the masked method has an engine");
                let bound = gradient.slot_bound().bits() as u32;
                let mut g = engine.share_vector(gc, gradient, bound)?;
                self.masked_seconds += start.elapsed().as_secs_f64();
                let step = self.solve_shared(gc, index, &mut g);
                let engine = self.engine.as_mut().expect("checked above");
                engine.release(gc, &[&g])?;
                step
            }
        }
    }

    /// `A^-1 g` for the masked factor `index` and a gradient already shared in masked
    /// arithmetic (at the study's fractional bits), revealed to the aggregator.
    pub fn solve_shared<C: Channel>(
        &mut self,
        gc: &mut AggregatorGc<C>,
        index: usize,
        gradient: &mut Shared,
    ) -> Result<Vec<f64>, SecureError> {
        let start = Instant::now();
        let Some(Held::Masked(inverse)) = self.held.get_mut(index) else {
            return Err(SecureError::inconsistent(Inconsistency::Unknown {
                what: "masked factor (for a shared gradient)",
                id: index,
            }));
        };
        let engine = self
            .engine
            .as_mut()
            .expect("the masked method has an engine");
        let step = engine.product_revealed(gc, inverse, gradient)?;
        self.masked_seconds += start.elapsed().as_secs_f64();
        let frac = engine.frac();
        Ok(step.data().iter().map(|v| to_f64(v, frac)).collect())
    }
}

/// The circuit method's setup: the masked lower triangle goes to the key holder, the circuit
/// unmasks and factors it (and for PrivLogit-Local inverts it and hands the inverse back
/// masked, which the aggregator unmasks under encryption).
fn circuit_factor<C: Channel>(
    gc: &mut AggregatorGc<C>,
    key: &PublicKey,
    config: &SecureConfig,
    lower: &EncryptedVector,
    local: bool,
) -> Result<(Matrix<u128>, Option<EncryptedMatrix>), SecureError> {
    config.check_circuit_scale()?;
    let d = config.dimension;
    let format = config.format;
    let (masked, masks, width) = gc::mask(key, lower, lower.slot_bound().bits(), &gc.noise)?;
    let inverse_masks: Option<Vec<BigUint>> = local.then(|| {
        let mut rng = rand::rng();
        (0..d * d)
            .map(|_| gc::random_mask(u64::from(format.width() + gc::SIGMA), &mut rng))
            .collect()
    });
    let payload = Writer::new()
        .u64(d as u64)
        .u64(u64::from(local))
        .u64(width as u64)
        .bytes(&masked.to_bytes(key))
        .finish();
    let at = |e| SecureError::io(Role::Aggregator, "the factor circuit", e);
    let ch = gc.session.channel().map_err(at)?;
    wire::send(ch, config.session, Step::Factor, &payload).map_err(at)?;
    let (l, _, in_range) = gc::factor_circuit(
        gc,
        d,
        None,
        Some(&masks),
        width,
        format,
        local,
        inverse_masks.as_deref(),
        largest_inverse_norm(config).recip(),
    )
    .map_err(at)?;
    if in_range != Some(true) {
        return Err(SecureError::Range(Overflow::CircuitFactor {
            width: format.width(),
            frac: format.frac(),
            threshold: largest_inverse_norm(config).recip(),
        }));
    }
    let Some(masks) = inverse_masks else {
        return Ok((l, None));
    };
    let ch = gc.session.channel().map_err(at)?;
    let (_, reply) = wire::recv(ch, config.session, &[Step::FactorReply]).map_err(at)?;
    let mut r = Reader::new(&reply);
    let m = EncryptedMatrix::from_bytes(key, r.bytes().map_err(at)?)?;
    r.end().map_err(at)?;
    if m.rows() != d || m.cols() != d {
        return Err(SecureError::violation(
            Role::KeyHolder,
            Breach::wrong_shape("an inverse", (m.rows(), m.cols()), (d, d)),
        ));
    }
    // Unmask column by column; the result is a fixed-point word, below 2^(width - 1).
    let columns = m
        .columns()
        .iter()
        .enumerate()
        .map(|(j, column)| {
            let minus: Vec<BigInt> = (0..d)
                .map(|i| -BigInt::from_biguint(Sign::Plus, masks[i * d + j].clone()))
                .collect();
            Ok(column
                .add_plain(key, &minus)?
                .assume_slot_bound(pow2(format.width() - 1)))
        })
        .collect::<Result<Vec<_>, SecureError>>()?;
    Ok((l, Some(EncryptedMatrix::from_columns(d, columns)?)))
}
