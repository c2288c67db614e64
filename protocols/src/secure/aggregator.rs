//! The aggregator role: drives the study. It implements [`Aggregation`], so the optimisers run
//! on it unchanged: sums are formed under Paillier, and whatever must be computed on them is
//! computed in a garbled circuit with the key holder.
//!
//! What the aggregator learns: N, the steps (hence the coefficients) and the revealed bits. It
//! sees only ciphertexts otherwise; the masks it draws hide every value it hands to the key
//! holder.

mod early_step;
mod inference_round;
mod revealed;
mod vertical_shares;
mod vertical_state;

pub use revealed::{HeldOut, Reveal, Revealed};

use early_step::{AskedDecryption, EarlyStep};

use crate::secure::{CheckpointFault, Inconsistency, ResumeMismatch};
use std::cell::{Cell, OnceCell};
use std::sync::{Arc, Mutex};

use ndarray::Array1;
use num_bigint::BigInt;
use privlogit_circuits::channel::Channel;
use privlogit_circuits::session::EvaluatorSession;

use super::gc::{self, AggregatorGc, Comparison};
use super::masked::SpdBounds;
use super::masked::dealt::ChannelDealer;
use super::masked::matrix::IntMatrix;
use super::masked::packed::PackedMatrix;
use super::masked::{ProductKind, Shared};
use super::perturbation::{self, NoiseShare, Release};
use super::round_trips::{Ledger, Phase, Reading, RoundTrips};
use super::shapes::Shape;
use super::solver::{self, LinearAlgebra, SavedFactor, Solver, SolverStats};
use super::wire::{self, Reader, Step, Writer};
use super::{Breach, Overflow, PlanReason, SecureConfig, SecureError};
use crate::aggregation::{Aggregation, NewtonSystem};
use crate::paillier::{
    DjnNoise, EncryptedMatrix, EncryptedNumber, EncryptedVector, Fixed, Packing, PublicKey,
};
use crate::penalty::Penalty;
use crate::stopping::StoppingRule;
use crate::transport::Role;

/// Which secure protocol the aggregator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// PrivLogit-Hessian (dissertation Algorithm 6, setup Algorithm 7): the factor stays in the
    /// circuit; every step is a garbled solve.
    Hessian,
    /// PrivLogit-Local (Algorithm 8): `Enc((B/N)^-1)` goes to the Nodes, which multiply it
    /// into their gradients; the step is decrypted.
    Local,
    /// Secure Newton (the baseline of section 5.4): a Hessian every iteration (eq. 2.13),
    /// factored and solved in circuits.
    Newton,
}

impl Protocol {
    /// Its name in messages (as `Debug` prints it).
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Hessian => "Hessian",
            Protocol::Local => "Local",
            Protocol::Newton => "Newton",
        }
    }
}

/// The aggregator's view of an aggregated gradient.
#[derive(Debug, Clone)]
pub struct SecureGradient {
    /// `Enc(g/N)` at the study's Paillier fractional bits, packed or not as the study's
    /// [`SecureConfig::packed_gradient`] says.
    gradient: EncryptedVector,
    /// Its number in the study, under which the aggregator keeps its masked share.
    serial: u64,
    /// PrivLogit-Local: `Enc((B/N)^-1 g/N)` at twice the fractional bits.
    step: Option<EncryptedVector>,
    /// The step once decrypted (the convergence test may need it before the next iteration
    /// takes it).
    plain_step: OnceCell<Vec<f64>>,
}

/// Counters for the cost report.
#[derive(Debug, Clone, Default)]
pub struct AggregatorStats {
    /// AND gates evaluated.
    pub and_gates: u64,
    /// Bytes the aggregator sent to all Nodes.
    pub bytes_to_nodes: u64,
    /// Bytes the Nodes sent to the aggregator, in all.
    pub bytes_from_nodes: u64,
    /// Bytes each Node sent, in Node order.
    pub bytes_from_each_node: Vec<u64>,
    /// Bytes the aggregator sent to the key holder (masked values, OT messages).
    pub bytes_to_keyholder: u64,
    /// Seconds spent forming and factoring the PrivLogit bound (the one-time setup round).
    pub bound_seconds: f64,
    /// Seconds in garbled circuits (evaluating, and waiting for the garbler's tables).
    pub gc_seconds: f64,
    /// Seconds waiting for the Nodes' replies (their local compute and encryption).
    pub node_wait_seconds: f64,
    /// The method of the Center's linear algebra.
    pub linear_algebra: LinearAlgebra,
    /// Its time: garbled circuits (circuit method), masked arithmetic (masked method).
    pub solver: SolverStats,
    /// The sequential round trips the aggregator waited for, by phase.
    pub round_trips: RoundTrips,
}

/// Where the aggregator puts what holds the PrivLogit bound's factor again after a restart,
/// for the checkpoint writer to read (it runs while the optimiser holds the aggregation).
pub type SavedBound = Arc<Mutex<Option<SavedFactor>>>;

/// What a resumed study starts from: what the Center computed in its setup, kept in a
/// checkpoint.
#[derive(Debug, Clone)]
pub struct SetupState {
    /// N.
    pub rows: usize,
    /// The pooled means and standard deviations, when standardised.
    pub standardization: Option<(Vec<f64>, Vec<f64>)>,
    /// The bound's factor (PrivLogit), when it was made.
    pub bound: Option<SavedFactor>,
}

/// What an aggregator starts from: its links to the Nodes and the key holder, the study's key,
/// and the protocol it runs.
pub struct AggregatorSetup<C: Channel> {
    /// A link to every Node (none in a vertical study).
    pub nodes: Vec<C>,
    /// The link to the key holder.
    pub keyholder: C,
    /// The study's key.
    pub key: PublicKey,
    /// The study's public numbers.
    pub config: SecureConfig,
    /// The secure protocol.
    pub protocol: Protocol,
    /// How the secret curvature matrices are factored.
    pub linear_algebra: LinearAlgebra,
}

/// The aggregator, connected to every Node and to the key holder.
pub struct SecureAggregation<C: Channel> {
    nodes: Vec<C>,
    gc: AggregatorGc<C>,
    key: PublicKey,
    config: SecureConfig,
    protocol: Protocol,
    rows: usize,
    /// `Enc((B/N)^-1)` for PrivLogit-Local.
    inverse: Option<EncryptedMatrix>,
    /// Factors and solves on the secret curvature matrices.
    solver: Solver,
    /// Where the bound's factor is saved for checkpoints (`None`: not saved).
    saved_bound: Option<SavedBound>,
    /// A resumed study's bound factor, held again, for the optimiser's setup.
    restored_bound: Option<usize>,
    /// The bound's factor (PrivLogit-Local solves with it through the Nodes).
    bound_index: Option<usize>,
    /// Secure PLR: `Enc(-(b_1 + b_2)/N)`, added to every gradient (and `beta^T` it to every
    /// objective).
    perturbation: Option<EncryptedVector>,
    /// Secure PLR under PrivLogit-Local: `Enc((B/N)^-1 (-(b_1 + b_2)/N))`, the noise's part of
    /// every step (the Nodes multiply only their own gradients into the inverse).
    noise_step: Option<EncryptedVector>,
    /// PrivLogit-Local: the lambda on the bound's diagonal, so `B >= lambda I` (see
    /// [`Self::step_rules_out_convergence`]).
    bound_lambda: Option<f64>,
    bound_seconds: f64,
    gc_seconds: f64,
    node_wait_seconds: f64,
    /// A vertical study's shares (its sums come from the servers, not from Nodes).
    vertical: Option<vertical_state::Vertical>,
    /// The serial the next gradient gets.
    next_gradient: Cell<u64>,
    /// The latest gradients shared in masked arithmetic, oldest first (a round's solve,
    /// stopping test and acceptance test use one share).
    shared_gradients: Vec<(u64, Shared)>,
    /// The round trips waited for, by phase.
    trips: Ledger,
    /// PrivLogit-Local's step at the latest evaluated point, decrypted with its acceptance
    /// test.
    early: EarlyStep,
}

/// How many shared gradients the aggregator keeps: an iteration looks at its base gradient,
/// a candidate's and the plain point's; kept generously, because a gradient shared again would
/// give the key holder a second masked view of it.
const SHARED_GRADIENTS: usize = 8;

/// Integer bits of the public weights the aggregator takes a shared gradient's dot product
/// with (a step's entries, a selection): their width goes to the key holder with the product,
/// so it is this public constant (beside the weights' fractional bits), never their size.
const WEIGHT_BITS: u32 = 32;

impl<C: Channel> SecureAggregation<C> {
    /// Connects: runs the base OTs with the key holder, then the count round (the Nodes'
    /// encrypted row counts are summed and N alone is decrypted).
    pub fn connect(setup: AggregatorSetup<C>) -> Result<Self, SecureError> {
        let mut me = Self::base(setup)?;
        me.rows = me.count_rows()?;
        let payload = Writer::new().u64(me.rows as u64).finish();
        me.tell_nodes(Step::Total, &payload)?;
        Ok(me)
    }

    /// The count round: the Nodes' encrypted row counts summed, N alone decrypted.
    fn count_rows(&mut self) -> Result<usize, SecureError> {
        let replies = self.ask_nodes(Step::Count, &[], Step::CountReply)?;
        let shape = self.config.count_shape(&self.key);
        let counts = self.read_each(&replies, &[&shape], "row count")?;
        let total = EncryptedVector::sum(&self.key, &counts.iter().collect::<Vec<_>>())?;
        let n = self
            .decrypt_masked(&total)?
            .first()
            .copied()
            .unwrap_or(f64::NAN);
        if n < 1.0 || n.is_nan() {
            return Err(SecureError::NoRows);
        }
        Ok(n as usize)
    }

    /// Connected, after the base OTs, before any round.
    fn base(setup: AggregatorSetup<C>) -> Result<Self, SecureError> {
        let AggregatorSetup {
            nodes,
            keyholder,
            key,
            config,
            protocol,
            linear_algebra,
        } = setup;
        let session = EvaluatorSession::new(keyholder, &mut rand::rng())
            .map_err(|e| SecureError::io(Role::Aggregator, "base OT with the key holder", e))?;
        // One noise table for the circuits' inputs and the masked engine.
        let noise = DjnNoise::shared(&key);
        let solver = Solver::new(linear_algebra, &noise, &config);
        Ok(Self {
            nodes,
            gc: AggregatorGc::with_noise(session, noise),
            key,
            config,
            protocol,
            rows: 0,
            inverse: None,
            solver,
            saved_bound: None,
            restored_bound: None,
            bound_index: None,
            perturbation: None,
            noise_step: None,
            bound_lambda: None,
            bound_seconds: 0.0,
            gc_seconds: 0.0,
            node_wait_seconds: 0.0,
            vertical: None,
            next_gradient: Cell::new(0),
            shared_gradients: Vec::new(),
            trips: Ledger::default(),
            early: EarlyStep::default(),
        })
    }

    /// The round-trip counts of every link now.
    pub(crate) fn reading(&mut self) -> Reading {
        let keyholder = self
            .gc
            .session
            .channel()
            .map(|c| c.round_trips())
            .unwrap_or(0);
        Reading::of(keyholder, &self.nodes)
    }

    /// The study moves on to `phase` (the optimiser is done, the inference, the evaluation):
    /// what the phase before took is counted.
    pub fn enter(&mut self, phase: Phase) {
        let now = self.reading();
        self.trips.enter(phase, now);
    }

    /// Connects from `start` to a study that is resumed from `setup`: tells the Nodes N and the
    /// standardisation statistics again (nothing of them is recomputed), and holds the bound's
    /// factor again (for PrivLogit-Local the Nodes get `Enc((B/N)^-1)` again, the same values).
    pub fn resume(
        start: AggregatorSetup<C>,
        setup: &SetupState,
        names: &[String],
    ) -> Result<Self, SecureError> {
        let mut me = Self::base(start)?;
        if setup.rows == 0 || setup.rows as u64 > me.config.max_rows * me.config.parties as u64 {
            return Err(SecureError::checkpoint(CheckpointFault::Rows {
                rows: setup.rows as u64,
            }));
        }
        // The Nodes must bring back the checkpointed run's rows: N counted again (and a
        // standardised study's pooled means), compared with what the checkpoint kept.
        let counted = me.count_rows()?;
        if counted != setup.rows {
            return Err(SecureError::Resume(ResumeMismatch::OtherRows {
                what: format!("N {counted}, the checkpoint's {}", setup.rows),
            }));
        }
        me.rows = setup.rows;
        let payload = Writer::new().u64(me.rows as u64).finish();
        me.tell_nodes(Step::Total, &payload)?;
        if let Some((means, scales)) = &setup.standardization {
            if means.len() != names.len() || scales.len() != names.len() {
                return Err(SecureError::checkpoint(CheckpointFault::Standardization {
                    means: means.len(),
                    scales: scales.len(),
                    features: names.len(),
                }));
            }
            if !means.iter().all(|&m| m == 0.0) {
                let pooled = me.pooled_moments(&[], names.len())?;
                if let Some(j) = (0..names.len()).find(|&j| pooled[j] != means[j]) {
                    return Err(SecureError::Resume(ResumeMismatch::OtherRows {
                        what: format!(
                            "the mean of {:?} is {}, the checkpoint's {}",
                            names[j], pooled[j], means[j]
                        ),
                    }));
                }
            }
            let payload = Writer::new().f64s(means).f64s(scales).finish();
            me.tell_nodes(Step::Standardize, &payload)?;
        }
        if let Some(saved) = &setup.bound {
            let local = me.protocol == Protocol::Local;
            let (index, inverse) = me
                .solver
                .restore(&mut me.gc, &me.key, &me.config, saved, local)?;
            if let Some(inverse) = inverse {
                me.send_inverse(inverse)?;
            }
            me.restored_bound = Some(index);
        }
        Ok(me)
    }

    /// Keeps what holds the bound's factor again after a restart, where the returned handle
    /// reads it (for checkpoints).
    pub fn save_bound(&mut self) -> SavedBound {
        let handle = SavedBound::default();
        self.saved_bound = Some(Arc::clone(&handle));
        handle
    }

    /// Draws the masks of every factorisation from `seed` (reproducible runs only).
    pub fn seed_masks(&mut self, seed: [u8; 32]) {
        self.solver.set_seed(seed);
    }

    /// Secure standardisation: the pooled mean of every feature, then the pooled variance
    /// around it (two rounds, the two-pass algorithm of the plaintext standardiser), each summed
    /// under encryption and decrypted as public by design; the Nodes then standardise their
    /// own rows. Returns the means and the standard deviations (ddof = 0).
    pub fn standardize(&mut self, names: &[String]) -> Result<(Vec<f64>, Vec<f64>), SecureError> {
        let means = self.pooled_moments(&[], names.len())?;
        let variances = self.pooled_moments(&means, names.len())?;
        let scales: Vec<f64> = variances.iter().map(|v| v.max(0.0).sqrt()).collect();
        for ((name, &m), &s) in names.iter().zip(&means).zip(&scales) {
            if s == 0.0 || s <= 1e-12 * m.abs() {
                return Err(SecureError::ConstantColumn {
                    column: name.clone(),
                    value: m,
                });
            }
        }
        let payload = Writer::new().f64s(&means).f64s(&scales).finish();
        self.tell_nodes(Step::Standardize, &payload)?;
        Ok((means, scales))
    }

    /// Public power-of-two scales for an unstandardised study: one moments round gives each
    /// feature's pooled mean of `x^2`, and each feature whose root mean square is above
    /// `2^RAW_RMS_BITS` or below [`RAW_RMS_FLOOR`] is divided by the power of two `2^k` that
    /// puts it in `(2^(RAW_RMS_BITS - 1), 2^RAW_RMS_BITS]` (the Nodes scale their rows, as they
    /// standardise them, with means 0). Large features so fit the protocols' bounds: every sum
    /// a Node sends is a mean over rows of products of at most two scaled values, bounded by
    /// the scaled mean squares whatever a single row holds; small ones are scaled up, which
    /// evens the columns' scales and so the bound's conditioning (the demo raw: 104 accelerated
    /// iterations where scaling large features only took 158). The estimator stays the raw one
    /// (the penalty is weighed back). `None` when every feature is near unit scale (nothing is
    /// sent: such a study runs as it always did). The aggregator learns the pooled mean
    /// squares; the Nodes the powers of two.
    pub fn scale_raw(&mut self, names: &[String]) -> Result<Option<Vec<f64>>, SecureError> {
        let squares = self.pooled_moments(&vec![0.0; names.len()], names.len())?;
        let scales: Vec<f64> = squares
            .iter()
            .map(|&m| {
                let rms = m.max(0.0).sqrt();
                // Features near unit scale are left as they are (a standardised design runs as
                // it always did); |k| < 1000 keeps 2^k a normal number (k < 1024 for any
                // finite f64; a feature that small is a column of zeros in all but name).
                let unit = (RAW_RMS_FLOOR..=f64::from(RAW_RMS_BITS).exp2()).contains(&rms);
                let k = if rms > 0.0 && !unit {
                    (rms.log2().ceil() as i64 - i64::from(RAW_RMS_BITS)).max(-1000)
                } else {
                    0
                };
                (k as f64).exp2()
            })
            .collect();
        if scales.iter().all(|&s| s == 1.0) {
            return Ok(None);
        }
        let payload = Writer::new()
            .f64s(&vec![0.0; names.len()])
            .f64s(&scales)
            .finish();
        self.tell_nodes(Step::Standardize, &payload)?;
        Ok(Some(scales))
    }

    /// One moments round: per feature, the pooled sum of `x` (no means given) or of
    /// `(x - mean)^2`, divided by N.
    fn pooled_moments(&mut self, means: &[f64], features: usize) -> Result<Vec<f64>, SecureError> {
        let payload = Writer::new().f64s(means).finish();
        let replies = self.ask_nodes(Step::Moments, &payload, Step::MomentsReply)?;
        let shape = self.config.moments_shape(&self.key, features)?;
        let parts = self.read_each(&replies, &[&shape], "moments")?;
        let total = EncryptedVector::sum(&self.key, &parts.iter().collect::<Vec<_>>())?;
        self.decrypt_masked(&total)
    }

    /// Tells every party the study is over and returns the counters.
    pub fn finish(mut self) -> Result<AggregatorStats, SecureError> {
        let session = self.config.session;
        for (i, node) in self.nodes.iter_mut().enumerate() {
            wire::send(node, session, Step::Done, &[])
                .map_err(|e| SecureError::io(Role::Aggregator, "ending", e).with_node(i + 1))?;
        }
        let ch = self.keyholder()?;
        wire::send(ch, session, Step::Done, &[])
            .map_err(|e| SecureError::io(Role::Aggregator, "ending the key holder", e))?;
        let bytes_to_keyholder = self.keyholder()?.bytes_sent();
        let now = self.reading();
        let round_trips = std::mem::take(&mut self.trips).finish(now);
        Ok(AggregatorStats {
            round_trips,
            and_gates: self.gc.session.and_gates(),
            bytes_to_nodes: self.nodes.iter().map(Channel::bytes_sent).sum(),
            bytes_from_nodes: self.nodes.iter().map(Channel::bytes_received).sum(),
            bytes_from_each_node: self.nodes.iter().map(Channel::bytes_received).collect(),
            bytes_to_keyholder,
            bound_seconds: self.bound_seconds,
            gc_seconds: self.gc_seconds + self.solver.stats().gc_seconds,
            node_wait_seconds: self.node_wait_seconds,
            linear_algebra: self.solver.method(),
            solver: self.solver.stats(),
        })
    }

    fn keyholder(&mut self) -> Result<&mut C, SecureError> {
        self.gc
            .session
            .channel()
            .map_err(|e| SecureError::io(Role::Aggregator, "talking to the key holder", e))
    }

    /// Computes the masked products' cross terms from correlations the dealer on `channel`
    /// hands out ([`super::masked::dealt`]); nothing to deal under the circuit method.
    pub fn use_dealer<D: Channel + Send + 'static>(
        &mut self,
        channel: D,
    ) -> Result<(), SecureError> {
        let Some(engine) = self.solver.engine() else {
            return Ok(());
        };
        // The dealer's frames carry the handshake's session: it serves one study per link.
        let (dealer, seed, sealed) = ChannelDealer::connect(channel, wire::HANDSHAKE, &self.key)?;
        engine.use_dealer(&mut self.gc, seed, Box::new(dealer), sealed)
    }

    /// Stops the study on every connection, telling the peers `reason` (a network party's
    /// connections stop together; memory channels ignore it).
    pub fn abort(&mut self, reason: &str) {
        match self.gc.session.channel() {
            Ok(keyholder) => keyholder.abort(reason),
            Err(_) => {
                if let Some(node) = self.nodes.first() {
                    node.abort(reason);
                }
            }
        }
    }

    /// Stops the study after a verdict on the data: the key holder is told first (a
    /// [`Step::Verdict`] frame, so that it deletes the key a resume would otherwise need), then
    /// every connection is aborted with the verdict.
    pub fn end_with_verdict(&mut self, verdict: &str) {
        let mut end = verdict.len().min(4096);
        while !verdict.is_char_boundary(end) {
            end -= 1;
        }
        let session = self.config.session;
        if let Ok(keyholder) = self.gc.session.channel() {
            // Best effort: a key holder already gone has nothing left to delete.
            let _ = wire::send(
                keyholder,
                session,
                Step::Verdict,
                &verdict.as_bytes()[..end],
            );
        }
        self.abort(verdict);
    }

    /// Sends `payload` to every Node.
    fn tell_nodes(&mut self, step: Step, payload: &[u8]) -> Result<(), SecureError> {
        let session = self.config.session;
        for (i, node) in self.nodes.iter_mut().enumerate() {
            wire::send(node, session, step, payload).map_err(|e| {
                SecureError::io(Role::Aggregator, "sending to", e)
                    .with_step(step)
                    .with_node(i + 1)
            })?;
        }
        Ok(())
    }

    /// Sends `payload` to every Node, then collects one `reply` from each, in Node order.
    fn ask_nodes(
        &mut self,
        step: Step,
        payload: &[u8],
        reply: Step,
    ) -> Result<Vec<Vec<u8>>, SecureError> {
        let start = std::time::Instant::now();
        self.tell_nodes(step, payload)?;
        let session = self.config.session;
        let replies = self
            .nodes
            .iter_mut()
            .enumerate()
            .map(|(i, node)| {
                wire::recv(node, session, &[reply])
                    .map(|(_, p)| p)
                    .map_err(|e| {
                        SecureError::io(Role::Aggregator, "receiving from", e)
                            .with_step(reply)
                            .with_node(i + 1)
                    })
            })
            .collect();
        self.node_wait_seconds += start.elapsed().as_secs_f64();
        replies
    }

    /// The encrypted vectors of one reply from Node `node` (counted from 1), each refused
    /// unless it has its public shape.
    fn read_vectors(
        &self,
        payload: &[u8],
        shapes: &[&Shape],
        node: usize,
        what: &'static str,
    ) -> Result<Vec<EncryptedVector>, SecureError> {
        let at = |e| {
            SecureError::io(Role::Aggregator, "reading from", e)
                .with_what(what)
                .with_node(node)
        };
        let mut r = Reader::new(payload);
        let mut out = Vec::with_capacity(shapes.len());
        for shape in shapes {
            let v = EncryptedVector::from_bytes(&self.key, r.bytes().map_err(at)?)?;
            shape.check(&v, node, what)?;
            out.push(v);
        }
        r.end().map_err(at)?;
        Ok(out)
    }

    /// The single vector of shape `shape` in every Node's reply, in Node order.
    fn read_each(
        &self,
        replies: &[Vec<u8>],
        shape: &[&Shape; 1],
        what: &'static str,
    ) -> Result<Vec<EncryptedVector>, SecureError> {
        replies
            .iter()
            .enumerate()
            .map(|(i, r)| {
                self.read_vectors(r, shape, i + 1, what)
                    .map(|mut v| v.remove(0))
            })
            .collect()
    }

    /// One revealed bit: is the gradient's Euclidean norm below `tolerance`? The Center holds
    /// `Enc(g/N)` at `frac` fractional bits, shared with the key holder in masked arithmetic
    /// (once per gradient, [`Self::shared_gradient`]). Its square `G^T G` (with `G = 2^frac
    /// g/N`) is taken exactly, at `2 frac` fractional bits (a tolerance of 1e-10 on `g` is far
    /// below `2^-frac` on `(g/N)^2`), and compared with the public `ceil((tolerance/N)^2 2^(2
    /// frac))` in a circuit. Neither server sees the norm. Needs the masked method (its engine).
    fn gradient_below(
        &mut self,
        gradient: &SecureGradient,
        tolerance: f64,
    ) -> Result<bool, SecureError> {
        let frac = self.config.frac;
        if gradient.gradient.scale() != frac {
            return Err(SecureError::inconsistent(Inconsistency::Count {
                what: "fractional bits in the gradient (for the test)",
                got: gradient.gradient.scale() as usize,
                expected: frac as usize,
            }));
        }
        let n = self.rows as f64;
        let threshold = ((tolerance / n).powi(2) * 2f64.powi(2 * (frac as i32))).ceil();
        let threshold = num_traits::FromPrimitive::from_f64(threshold).ok_or_else(|| {
            SecureError::invalid_plan(
                "gradient_tolerance",
                PlanReason::Value {
                    what: "gradient tolerance",
                    value: tolerance,
                    rule: "out of range",
                },
            )
        })?;
        if self.solver.engine().is_none() {
            return Err(SecureError::invalid_plan(
                "gradient_tolerance",
                "the gradient-norm stopping test needs setting `linear_algebra` masked",
            ));
        }
        let at = self.shared_gradient(gradient)?;
        let engine = self.solver.engine().expect("checked above");
        let column = &mut self.shared_gradients[at].1;
        let bound = column.bound();
        let d = column.rows() as u64;
        // Entries of G below 2^bound: G^T G below 2^(2 bound + bits(d)).
        let square_bits = 2 * bound + (64 - d.leading_zeros()) + 1;
        let mut row = engine.transpose(&mut self.gc, column)?;
        let square = engine.product(
            &mut self.gc,
            &mut row,
            column,
            square_bits,
            ProductKind::Exact,
        )?;
        engine.release(&mut self.gc, &[&row])?;
        let bits = square.mask_bits().min(square_bits + 1);
        let large = engine.check_range(&mut self.gc, &square, &threshold, bits)?;
        engine.release(&mut self.gc, &[&square])?;
        Ok(!large)
    }

    /// Where `gradient`'s masked share is kept: shared now unless one of the latest was it
    /// (the oldest kept one is let go). A packed gradient goes to the key holder masked as it
    /// is; an unpacked one is packed first. Needs the masked method.
    fn shared_gradient(&mut self, gradient: &SecureGradient) -> Result<usize, SecureError> {
        if let Some(at) = self
            .shared_gradients
            .iter()
            .position(|(serial, _)| *serial == gradient.serial)
        {
            return Ok(at);
        }
        let engine = self
            .solver
            .engine()
            .ok_or_else(|| SecureError::inconsistent("a shared gradient without the engine"))?;
        let g = &gradient.gradient;
        let bound = g.slot_bound().bits() as u32;
        let shared = if g.packing().slots() == 1 {
            engine.share_vector(&mut self.gc, g, bound)?
        } else {
            // The mask goes into the slots as they are: they must hold it (the bound's packing
            // leaves room for the Center's terms; a larger penalty term would not fit).
            if bound + gc::SIGMA + 2 > g.packing().slot_bits() {
                return Err(SecureError::Range(Overflow::GradientMask {
                    bound,
                    slot_bits: g.packing().slot_bits(),
                }));
            }
            let column =
                PackedMatrix::from_blocks(g.len(), 1, g.packing(), g.ciphertexts().to_vec())?;
            engine.share(&mut self.gc, &column, bound)?
        };
        if self.shared_gradients.len() == SHARED_GRADIENTS {
            let (_, oldest) = self.shared_gradients.remove(0);
            engine.release(&mut self.gc, &[&oldest])?;
        }
        self.shared_gradients.push((gradient.serial, shared));
        Ok(self.shared_gradients.len() - 1)
    }

    /// `Enc(w^T g)` for public weights `w` (one scale for all), at the gradient's scale plus
    /// theirs. An unpacked gradient takes it under encryption; a packed one in masked
    /// arithmetic: `w` held by the aggregator times the gradient's share, exactly, which the
    /// key holder then encrypts from its view (one value) and the aggregator unmasks.
    fn gradient_dot(
        &mut self,
        gradient: &SecureGradient,
        weights: &[Fixed],
    ) -> Result<EncryptedVector, SecureError> {
        let g = &gradient.gradient;
        if g.packing().slots() == 1 {
            let dot = g.dot(&self.key, weights)?;
            return Ok(EncryptedVector::from_number(&self.key, &dot));
        }
        let d = g.len();
        let scale = weights.first().map_or(0, |w| w.scale);
        if weights.len() != d || weights.iter().any(|w| w.scale != scale) {
            return Err(SecureError::inconsistent(Inconsistency::Count {
                what: "weights (of one scale) for the gradient",
                got: weights.len(),
                expected: d,
            }));
        }
        let at = self.shared_gradient(gradient)?;
        let engine = self.solver.engine().expect("shared above");
        let values = IntMatrix::from_vec(1, d, weights.iter().map(|w| w.value.clone()).collect());
        let weight_bits = scale + WEIGHT_BITS;
        if values.max_bits() > u64::from(weight_bits) {
            return Err(SecureError::Range(Overflow::StepEntry {
                bits: WEIGHT_BITS,
            }));
        }
        let column = &mut self.shared_gradients[at].1;
        let bound = weight_bits + column.bound() + super::bits_for(d as u64);
        let mut row = engine.held(&mut self.gc, &values, weight_bits)?;
        let dot = engine.product(&mut self.gc, &mut row, column, bound, ProductKind::Exact)?;
        let encrypted = engine.encrypted(&mut self.gc, &dot, Packing::unpacked(&self.key));
        engine.release(&mut self.gc, &[&row, &dot])?;
        let block = encrypted?.blocks().first().cloned().ok_or_else(|| {
            SecureError::violation(
                Role::KeyHolder,
                Breach::Malformed {
                    what: "an empty encryption",
                },
            )
        })?;
        let number =
            EncryptedNumber::from_parts(&self.key, block, g.scale() + scale, super::pow2(bound))?;
        Ok(EncryptedVector::from_number(&self.key, &number))
    }

    /// PrivLogit-Local: the step `s = B^-1 g`, public to the aggregator by design (it moves the
    /// public coefficients), decrypted once.
    fn local_step(&mut self, gradient: &SecureGradient) -> Result<Option<Vec<f64>>, SecureError> {
        let Some(step) = &gradient.step else {
            return Ok(None);
        };
        if let Some(plain) = gradient.plain_step.get() {
            return Ok(Some(plain.clone()));
        }
        if self.early.is_in_flight(gradient.serial) {
            self.read_early_step()?;
        }
        let plain = match self.early.take(gradient.serial) {
            Some(early) => early,
            None => self.decrypt_masked(step)?,
        };
        let _ = gradient.plain_step.set(plain.clone());
        Ok(Some(plain))
    }

    /// PrivLogit-Local: true when the public step alone shows the gradient is not below
    /// `tolerance`, so the masked norm test (a shared vector, a product and a circuit, most of
    /// an iteration's cost) can be skipped with the same outcome. The bound has `B >= lambda I`
    /// (every coefficient is penalised in a secure study), so `||g|| = ||B s|| >= lambda ||s||`.
    /// A margin of 2, and the step's fixed-point resolution taken off its norm, cover the
    /// rounding of the encrypted inverse and of the step. The key holder sees which iterations
    /// ran the test: one bit per iteration, "the step was long", written into the security
    /// model; the aggregator decrypts the step at the final coefficients too.
    fn step_rules_out_convergence(
        &mut self,
        gradient: &SecureGradient,
        tolerance: f64,
    ) -> Result<bool, SecureError> {
        let Some(lambda) = self.bound_lambda else {
            return Ok(false);
        };
        let Some(step) = self.local_step(gradient)? else {
            return Ok(false);
        };
        let norm = step.iter().map(|s| s * s).sum::<f64>().sqrt();
        let resolution = step.len() as f64 * 2f64.powi(-(self.config.frac as i32));
        Ok(lambda * (norm - resolution) >= 2.0 * tolerance)
    }

    /// Secure PLR ([`perturbation`]): draws the aggregator's share of the objective's noise, has
    /// the key holder draw its own (it learns N for that), checks that both derived the same
    /// penalty `N (lambda + Delta)`, and keeps `Enc(-(b_1 + b_2)/N)` for every round. Returns
    /// the penalty.
    pub fn perturb(
        &mut self,
        release: &Release,
        own: &mut dyn NoiseShare,
    ) -> Result<f64, SecureError> {
        let (n, d) = (self.rows, self.config.dimension);
        let mine = own
            .draw(release, n, d)
            .map_err(|cause| SecureError::NoiseShare {
                party: Role::Aggregator,
                cause,
            })?;
        let my_share =
            perturbation::encrypt_share(&self.key, &self.config, &mine, n, &self.gc.noise)?;
        let session = self.config.session;
        let payload = Writer::new().u64(n as u64).finish();
        let ch = self.keyholder()?;
        let at = |e| SecureError::io(Role::Aggregator, "the key holder's noise share", e);
        wire::send(ch, session, Step::Perturb, &payload).map_err(at)?;
        let (_, reply) = wire::recv(ch, session, &[Step::PerturbReply]).map_err(at)?;
        let mut r = Reader::new(&reply);
        let penalty = r.f64s().map_err(at)?;
        let theirs = EncryptedVector::from_bytes(&self.key, r.bytes().map_err(at)?)?;
        r.end().map_err(at)?;
        Shape {
            len: d,
            scale: self.config.frac,
            bound: perturbation::share_bound(&self.config),
            packing: crate::paillier::Packing::unpacked(&self.key),
        }
        .check_from(&theirs, Role::KeyHolder, None, "noise share")?;
        if penalty.len() != 1 || penalty[0].to_bits() != mine.penalty.to_bits() {
            return Err(SecureError::PlanMismatch {
                with: Role::KeyHolder,
                setting: "the penalty derived from epsilon, lambda and N",
                ours: mine.penalty.to_string(),
                theirs: format!("{penalty:?}"),
            });
        }
        self.perturbation = Some(EncryptedVector::sum(&self.key, &[&my_share, &theirs])?);
        Ok(mine.penalty)
    }

    /// Secure PLR under PrivLogit-Local: the noise's part of every step, `(B/N)^-1 (-b/N)`,
    /// solved once against the bound's factor in masked arithmetic (revealed to the aggregator,
    /// as Local's steps are; the key holder learns nothing) and encrypted in the shape of one
    /// Node's share of the step, whose public bound covers it (the noise is one term of the
    /// gradient sum, below a Node value's bound).
    fn local_noise_step(&mut self, factor: usize) -> Result<EncryptedVector, SecureError> {
        let noise = self
            .perturbation
            .as_ref()
            .expect("called with a perturbation");
        let solved = self
            .solver
            .solve(&mut self.gc, &self.key, &self.config, factor, noise)?;
        let inverse = self
            .inverse
            .as_ref()
            .ok_or_else(|| SecureError::inconsistent("Local's inverse is missing"))?;
        let shape = self.config.local_step_shape(inverse)?;
        let values = solved
            .iter()
            .map(|v| Fixed::from_f64(*v, shape.scale))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(EncryptedVector::encrypt(
            &self.key,
            &values,
            &shape.bound,
            shape.packing,
            &self.gc.noise,
        )?)
    }

    /// Values public by design to the aggregator (N, the standardisation moments, a
    /// PrivLogit-Local step), decrypted by the key holder without its learning them: each is
    /// masked with a fresh integer sigma bits wider than its public bound, and the aggregator
    /// removes the mask from the plaintext the key holder returns.
    fn decrypt_masked(&mut self, v: &EncryptedVector) -> Result<Vec<f64>, SecureError> {
        let (payload, asked) = AskedDecryption::ask(&self.key, v, &self.gc.noise)?;
        self.send_decryption(Step::DecryptPublic, &payload)?;
        self.read_decryption(asked)
    }

    fn send_decryption(&mut self, step: Step, payload: &[u8]) -> Result<(), SecureError> {
        let session = self.config.session;
        let at = |e| SecureError::io(Role::Aggregator, "a masked decryption", e);
        wire::send(self.keyholder()?, session, step, payload).map_err(at)
    }

    fn read_decryption(&mut self, asked: AskedDecryption) -> Result<Vec<f64>, SecureError> {
        let session = self.config.session;
        let at = |e| SecureError::io(Role::Aggregator, "a masked decryption", e);
        let (_, reply) =
            wire::recv(self.keyholder()?, session, &[Step::DecryptPublicReply]).map_err(at)?;
        asked.read(&reply)
    }

    /// Sends the decryption of the latest evaluated point's PrivLogit-Local step, to be
    /// answered after the request that follows (the acceptance test), whose circuit then
    /// carries it in its round trip ([`early_step`]).
    fn ask_step_early(&mut self) -> Result<(), SecureError> {
        let Some((serial, step)) = self.early.unasked() else {
            return Ok(());
        };
        let (payload, asked) = AskedDecryption::ask(&self.key, &step, &self.gc.noise)?;
        self.send_decryption(Step::DecryptPublicAfterNext, &payload)?;
        self.early.asked(serial, asked);
        Ok(())
    }

    /// Reads the answer to a decryption asked early, if one is in flight (the key holder
    /// sends it right after its answer to the request that followed it).
    fn read_early_step(&mut self) -> Result<(), SecureError> {
        if let Some((serial, asked)) = self.early.in_flight() {
            let step = self.read_decryption(asked)?;
            self.early.answered(serial, step);
        }
        Ok(())
    }

    /// Factors the SPD matrix with lower triangle `lower` (the bound or a Newton Hessian, with
    /// the penalty); for PrivLogit-Local also distributes `Enc((B/N)^-1)` to the Nodes.
    /// `label` names the matrix for a seeded run's masks; `save` keeps what holds the factor
    /// again after a restart.
    fn factor(
        &mut self,
        lower: &EncryptedVector,
        (lambda, penalised): (f64, bool),
        local: bool,
        label: &[u8],
        save: bool,
    ) -> Result<(usize, Option<SavedFactor>), SecureError> {
        let bounds = self.bounds(lower, lambda, penalised);
        let before = self.reading();
        let factored = self.solver.factor(
            &mut self.gc,
            &self.key,
            &self.config,
            lower,
            &bounds,
            local,
            save,
            label,
        )?;
        let after = self.reading();
        self.trips.factor(&before, &after);
        if let Some(inverse) = factored.inverse {
            self.send_inverse(inverse)?;
        }
        Ok((factored.index, factored.saved))
    }

    /// The public bounds of `lower`, whose diagonal carries `lambda / N`: lambda_min(M / N +
    /// lambda / N I) >= lambda / N bounds the inverse. Unpenalised (`lambda` is a curvature
    /// floor), every pivot must be at least twice the floor, so that the data's own part of it
    /// is at least the floor: a column that is (nearly) a combination of the earlier ones, or has
    /// almost no variance of its own, stops the study at its pivot, named.
    fn bounds(&self, lower: &EncryptedVector, lambda: f64, penalised: bool) -> SpdBounds {
        let floor = lambda / self.rows as f64;
        // (`lambda`: the least entry of the diagonal added, see `curvature`.)
        let bounds = solver::bounds_of(lower, self.config.dimension, floor);
        if penalised {
            bounds
        } else {
            bounds.with_min_pivot(2.0 * floor)
        }
    }

    /// Hands `Enc((B/N)^-1)` to every Node (PrivLogit-Local) and keeps it.
    fn send_inverse(&mut self, inverse: EncryptedMatrix) -> Result<(), SecureError> {
        let session = self.config.session;
        let payload = Writer::new().bytes(&inverse.to_bytes(&self.key)).finish();
        for (i, node) in self.nodes.iter_mut().enumerate() {
            wire::send(node, session, Step::Inverse, &payload).map_err(|e| {
                SecureError::io(Role::Aggregator, "sending the inverse to", e).with_node(i + 1)
            })?;
        }
        self.inverse = Some(inverse);
        Ok(())
    }

    /// One round: the Nodes' gradients and objectives (and Hessians for Newton) at `beta`,
    /// summed, with the Center's penalty terms.
    #[allow(clippy::type_complexity)]
    fn gather(
        &mut self,
        beta: &Array1<f64>,
        penalty: Penalty<'_>,
        newton: bool,
    ) -> Result<(SecureGradient, EncryptedVector, Option<EncryptedVector>), SecureError> {
        let now = self.reading();
        self.trips.round_begins(now);
        if self.vertical.is_some() {
            let (gradient, objective, information) = self.vertical_round(beta, newton)?;
            return self.with_center_terms(beta, penalty, gradient, objective, None, information);
        }
        let payload = Writer::new()
            .f64s(beta.as_slice().expect("contiguous"))
            .finish();
        let request = if newton { Step::Newton } else { Step::Gradient };
        let replies = self.ask_nodes(request, &payload, Step::GradientReply)?;
        let mut shapes = vec![
            self.config.gradient_shape(&self.key)?,
            self.config.objective_shape(&self.key),
        ];
        if let Some(inverse) = &self.inverse {
            shapes.push(self.config.local_step_shape(inverse)?);
        }
        if newton {
            shapes.push(self.config.bound_shape(&self.key)?);
        }
        let count = shapes.len();
        let shapes: Vec<&Shape> = shapes.iter().collect();
        let parts = replies
            .iter()
            .enumerate()
            .map(|(i, r)| self.read_vectors(r, &shapes, i + 1, "gradient reply"))
            .collect::<Result<Vec<_>, _>>()?;
        let sum_of = |k: usize| {
            EncryptedVector::sum(&self.key, &parts.iter().map(|p| &p[k]).collect::<Vec<_>>())
        };
        let nodes_step = match &self.inverse {
            Some(_) => Some(sum_of(2)?),
            None => None,
        };
        let information = if newton {
            Some(sum_of(count - 1)?)
        } else {
            None
        };
        self.with_center_terms(
            beta,
            penalty,
            sum_of(0)?,
            sum_of(1)?,
            nodes_step,
            information,
        )
    }

    /// The Center's terms added to the summed gradient and objective (and the local step).
    #[allow(clippy::type_complexity)]
    fn with_center_terms(
        &self,
        beta: &Array1<f64>,
        penalty: Penalty<'_>,
        gradient_sum: EncryptedVector,
        objective_sum: EncryptedVector,
        nodes_step: Option<EncryptedVector>,
        information: Option<EncryptedVector>,
    ) -> Result<(SecureGradient, EncryptedVector, Option<EncryptedVector>), SecureError> {
        let n = self.rows as f64;
        let frac = self.config.frac;
        // The Center's penalty terms (eq. 2.10, 2.12; public, centred when the penalty has a
        // centre), divided by N like everything else.
        let penalty_objective = penalty.objective(beta);
        let penalty: Vec<Fixed> = penalty
            .gradient(beta)
            .iter()
            .map(|g| Self::fixed(g / n, frac))
            .collect::<Result<_, _>>()?;
        let gradient = gradient_sum.add_plain(
            &self.key,
            &penalty.iter().map(|f| f.value.clone()).collect::<Vec<_>>(),
        )?;
        let objective = objective_sum.add_plain(
            &self.key,
            &[Self::fixed(penalty_objective / n, 2 * frac)?.value],
        )?;
        // Secure PLR: the noise's terms, `-b/N` in the gradient and `-beta^T b/N` in the
        // objective (at twice the fractional bits, like the objective).
        let (gradient, objective) = match &self.perturbation {
            Some(noise) => {
                let beta_fixed: Vec<Fixed> = beta
                    .iter()
                    .map(|b| Self::fixed(*b, frac))
                    .collect::<Result<_, _>>()?;
                let term =
                    EncryptedVector::from_number(&self.key, &noise.dot(&self.key, &beta_fixed)?);
                (
                    EncryptedVector::sum(&self.key, &[&gradient, noise])?,
                    EncryptedVector::sum(&self.key, &[&objective, &term])?,
                )
            }
            None => (gradient, objective),
        };
        let step = match (&self.inverse, nodes_step) {
            (Some(m), Some(nodes)) => {
                let own = m.mul_vector(&self.key, &penalty)?;
                let mut terms = vec![&nodes, &own];
                terms.extend(&self.noise_step);
                Some(EncryptedVector::sum(&self.key, &terms)?)
            }
            _ => None,
        };
        if gradient.len() != self.config.dimension {
            return Err(SecureError::violation(
                Role::Node,
                Breach::wrong_length("a gradient", gradient.len(), self.config.dimension),
            ));
        }
        let serial = self.next_gradient.get();
        self.next_gradient.set(serial + 1);
        let gradient = SecureGradient {
            gradient,
            serial,
            step,
            plain_step: OnceCell::new(),
        };
        Ok((gradient, objective, information))
    }

    /// The diagonal a secret curvature matrix gets, per coefficient and not yet divided by N:
    /// the penalty's `lambda w_j`, raised to `floor` per row where it is smaller (every
    /// coefficient of an unpenalised study, see [`UNPENALISED_STEP_FLOOR`]; a coefficient
    /// whose weight is tiny). Only the step's matrix gets the raise, never the gradient or the
    /// objective, so the fixed point is the penalised optimum itself.
    fn curvature(&self, penalty: Penalty<'_>, floor: f64) -> Result<Curvature, SecureError> {
        let lambda = full_penalty(penalty)?;
        let least = floor * self.rows as f64;
        let own = |j: usize| match (lambda > 0.0, penalty.weights) {
            (false, _) => least,
            (true, None) => lambda,
            // A weight may be tiny (a feature scaled down by 2^30): its entry gets the floor.
            (true, Some(_)) => (lambda * penalty.weight(j)).max(least),
        };
        let diagonal: Vec<f64> = (0..self.config.dimension).map(own).collect();
        let penalised =
            lambda > 0.0 && (0..diagonal.len()).all(|j| diagonal[j] == lambda * penalty.weight(j));
        Ok(Curvature {
            least: diagonal.iter().copied().fold(f64::INFINITY, f64::min),
            diagonal,
            penalised,
        })
    }

    /// `lower + diag(curvature) / N` for a lower triangle packed by rows.
    fn add_penalty_diagonal(
        &self,
        lower: &EncryptedVector,
        curvature: &Curvature,
    ) -> Result<EncryptedVector, SecureError> {
        let d = self.config.dimension;
        if lower.len() != d * (d + 1) / 2 || curvature.diagonal.len() != d {
            return Err(SecureError::inconsistent(Inconsistency::Triangle {
                entries: lower.len(),
                dimension: d,
            }));
        }
        let mut penalty = Vec::with_capacity(lower.len());
        for i in 0..d {
            for j in 0..=i {
                penalty.push(if i == j {
                    Self::fixed(curvature.diagonal[i] / self.rows as f64, self.config.frac)?.value
                } else {
                    BigInt::from(0)
                });
            }
        }
        Ok(lower.add_plain(&self.key, &penalty)?)
    }

    /// One comparison circuit on two encrypted single values of the same scale.
    fn compare(
        &mut self,
        kind: Comparison,
        a: &EncryptedVector,
        b: &EncryptedVector,
    ) -> Result<bool, SecureError> {
        let bits = a.slot_bound().bits().max(b.slot_bound().bits());
        let (ma, mut masks, masked) = gc::mask(&self.key, a, bits, &self.gc.noise)?;
        let (mb, mb_masks, _) = gc::mask(&self.key, b, bits, &self.gc.noise)?;
        masks.extend(mb_masks);
        let width = bits as usize + 2;
        let payload = Writer::new()
            .u64(kind.code())
            .u64(masked as u64)
            .u64(width as u64)
            .bytes(&ma.to_bytes(&self.key))
            .bytes(&mb.to_bytes(&self.key))
            .finish();
        let session = self.config.session;
        let at = |e| SecureError::io(Role::Aggregator, "a comparison circuit", e);
        wire::send(self.keyholder()?, session, Step::Compare, &payload).map_err(at)?;
        let start = std::time::Instant::now();
        let bit = gc::compare_circuit(&mut self.gc, kind, None, Some(&masks), masked, width)
            .map_err(at)?;
        self.gc_seconds += start.elapsed().as_secs_f64();
        self.read_early_step()?;
        bit.expect("the aggregator learns the bit")
            .map_err(|gc::OutOfRange| SecureError::Range(Overflow::Comparison { kind, width }))
    }

    /// `x` at `scale` fractional bits.
    fn fixed(x: f64, scale: u32) -> Result<Fixed, SecureError> {
        Ok(Fixed::from_f64(x, scale)?)
    }

    /// `v` (one value at `from` fractional bits) at `to >= from` bits, same real value.
    fn rescale(
        &self,
        v: &EncryptedVector,
        from: u32,
        to: u32,
    ) -> Result<EncryptedVector, SecureError> {
        let k = Fixed {
            value: BigInt::from(1u8) << (to - from),
            scale: to - from,
        };
        // Multiplying by 2^k at scale k keeps the real value and adds k fractional bits.
        Ok(v.mul_scalar(&self.key, &k)?)
    }

    /// `a - b` for single values of one scale.
    fn difference(
        &self,
        a: &EncryptedVector,
        b: &EncryptedVector,
    ) -> Result<EncryptedVector, SecureError> {
        let minus_b = b.mul_scalar(&self.key, &Fixed::integer(-1))?;
        Ok(EncryptedVector::sum(&self.key, &[a, &minus_b])?)
    }
}

/// A feature of an unstandardised study whose root mean square is above `2^RAW_RMS_BITS` (or
/// below [`RAW_RMS_FLOOR`]) is scaled by a power of two to within `(2^(RAW_RMS_BITS - 1),
/// 2^RAW_RMS_BITS]` ([`SecureAggregation::scale_raw`]): the Nodes' sums of products of two
/// features divided by N then stay below `2^(2 RAW_RMS_BITS)`, far inside the study's value
/// bound.
pub const RAW_RMS_BITS: u32 = 2;

/// Features of an unstandardised study whose root mean square is below this are scaled up by a
/// power of two ([`SecureAggregation::scale_raw`]); those between it and `2^RAW_RMS_BITS` are
/// near unit scale and left as they are.
pub const RAW_RMS_FLOOR: f64 = 0.5;

/// The diagonal added to a secret curvature matrix (see `SecureAggregation::curvature`).
#[derive(Debug, Clone)]
struct Curvature {
    /// Per coefficient, not divided by N.
    diagonal: Vec<f64>,
    /// Its least entry: `B >= least I` (per N rows), the inverse's public bound.
    least: f64,
    /// Every entry is the penalty's own (none raised to the floor).
    penalised: bool,
}

/// The lambda of a penalty that covers every coefficient: the secure bound's and inverse's
/// public widths follow from `N / lambda` on the whole diagonal, so a free intercept is refused
/// until they are derived for it.
fn full_penalty(penalty: Penalty<'_>) -> Result<f64, SecureError> {
    if penalty.free > 0 && penalty.lambda > 0.0 {
        return Err(SecureError::invalid_plan(
            "penalty",
            "an unpenalised intercept is not built for secure studies yet: their widths follow \
             from N / lambda on every coefficient; penalise the intercept (the default, eq. \
             2.10), or fit in plaintext",
        ));
    }
    Ok(penalty.lambda)
}

/// An unpenalised study's curvature floor, per row: the secret matrices a step solves with
/// are `M / N + 2^-20 I` (a Levenberg-Marquardt damping of the Newton Hessian; for PrivLogit a
/// bound `X^T X / 4 + delta I` that still majorises the Hessian). The objective and gradient
/// are not penalised, so the fixed point is the maximum-likelihood estimate itself; the floor
/// only gives the inverse a public bound (`N / delta`), from which every width follows, and
/// slows the last iterations by a factor `1 + delta / lambda_min`.
pub const UNPENALISED_STEP_FLOOR: f64 = 1.0 / (1u64 << 20) as f64;

/// The Newton systems' floor in a study whose features were scaled but not centred
/// (`scale_raw`): `2^-40` per row, so that the damping stays below a raw design's least
/// eigenvalue (winequality: about 5e-8 per row after scaling) and Newton keeps its rate.
pub const SCALED_STEP_FLOOR: f64 = 1.0 / (1u64 << 40) as f64;

/// The floor of the information inverted for standard errors in an unpenalised study, per row:
/// `2^-40`, so the standard errors are off by about `2^-41 / lambda_min(X^T A X / N)`
/// relative (below 1e-7 for a smallest eigenvalue above 1e-5).
pub const UNPENALISED_INFERENCE_FLOOR: f64 = 1.0 / (1u64 << 40) as f64;

/// The same floor for a study whose features were scaled into the bounds but not centred
/// (`scale_raw`): `2^-60`, since a raw design may hold a nearly constant column beside the
/// intercept (winequality's density: `lambda_min(X^T A X / N)` about 5e-8 after scaling), where
/// `2^-40` would move the intercept's standard error by 1e-5 relative.
pub const SCALED_INFERENCE_FLOOR: f64 = 1.0 / (1u64 << 60) as f64;

impl<C: Channel> Aggregation for SecureAggregation<C> {
    /// `Enc(l/N)` at twice the fractional bits.
    type Scalar = EncryptedVector;
    type Vector = SecureGradient;
    /// The index of a factor held in the circuit session.
    type Factor = usize;
    type Error = SecureError;

    fn dimension(&self) -> usize {
        self.config.dimension
    }

    fn sample_count(&self) -> usize {
        self.rows
    }

    /// Always `Some`: positive definiteness cannot be checked without revealing more, and
    /// `1/4 X^T X + lambda I` is positive definite whenever `lambda > 0`.
    fn bound_factor(&mut self, penalty: Penalty<'_>) -> Result<Option<usize>, SecureError> {
        let curvature = self.curvature(penalty, UNPENALISED_STEP_FLOOR)?;
        if self.protocol == Protocol::Local {
            self.bound_lambda = Some(curvature.least);
        }
        if let Some(index) = self.restored_bound.take() {
            self.bound_index = Some(index);
            return Ok(Some(index));
        }
        let start = std::time::Instant::now();
        let sum = if self.vertical.is_some() {
            self.vertical_bound()?
        } else {
            let replies = self.ask_nodes(Step::Bound, &[], Step::BoundReply)?;
            let shape = self.config.bound_shape(&self.key)?;
            let parts = self.read_each(&replies, &[&shape], "Hessian bound")?;
            EncryptedVector::sum(&self.key, &parts.iter().collect::<Vec<_>>())?
        };
        let lower = self.add_penalty_diagonal(&sum, &curvature)?;
        let local = self.protocol == Protocol::Local;
        let save = self.saved_bound.is_some();
        let (factor, saved) = self.factor(
            &lower,
            (curvature.least, curvature.penalised),
            local,
            b"bound",
            save,
        )?;
        if let (Some(handle), Some(saved)) = (&self.saved_bound, saved) {
            *handle.lock().expect("the saved bound") = Some(saved);
        }
        if local && self.perturbation.is_some() {
            self.noise_step = Some(self.local_noise_step(factor)?);
        }
        self.bound_index = Some(factor);
        self.bound_seconds += start.elapsed().as_secs_f64();
        Ok(Some(factor))
    }

    fn gradient_and_objective(
        &mut self,
        beta: &Array1<f64>,
        penalty: Penalty<'_>,
    ) -> Result<(SecureGradient, EncryptedVector), SecureError> {
        let (gradient, objective, _) = self.gather(beta, penalty, false)?;
        if let Some(step) = &gradient.step {
            self.early.evaluated(gradient.serial, step);
        }
        Ok((gradient, objective))
    }

    /// The factor is always `Some`: `X^T A X + lambda I` is positive definite for `lambda > 0`,
    /// and a circuit could only check it by revealing more.
    fn newton_system(
        &mut self,
        beta: &Array1<f64>,
        penalty: Penalty<'_>,
    ) -> Result<NewtonSystem<Self>, SecureError> {
        // Scaled, uncentred features keep a raw design's conditioning: a damping of 2^-20 per
        // row would be far above its least eigenvalue and make Newton crawl.
        let floor = if penalty.weights.is_some() {
            SCALED_STEP_FLOOR
        } else {
            UNPENALISED_STEP_FLOOR
        };
        let curvature = self.curvature(penalty, floor)?;
        let (gradient, objective, information) = self.gather(beta, penalty, true)?;
        let information = information.expect("asked for the Hessian");
        let lower = self.add_penalty_diagonal(&information, &curvature)?;
        // A seeded run's masks follow the coefficients, so a resumed run repeats them.
        let label: Vec<u8> = beta.iter().flat_map(|b| b.to_le_bytes()).collect();
        let (factor, _) = self.factor(
            &lower,
            (curvature.least, curvature.penalised),
            false,
            &label,
            false,
        )?;
        Ok(NewtonSystem {
            gradient,
            objective,
            factor: Some(factor),
        })
    }

    fn solve_step(
        &mut self,
        factor: &usize,
        gradient: &SecureGradient,
    ) -> Result<Array1<f64>, SecureError> {
        // PrivLogit-Local's step is the Nodes' `B^-1 g_i`, summed: for the bound only (a
        // Newton system of accelerated PrivLogit's finish is solved by the Center).
        if self.bound_index == Some(*factor)
            && let Some(step) = self.local_step(gradient)?
        {
            return Ok(Array1::from(step));
        }
        // Masked: the gradient's share serves the round's other tests too.
        let step = if self.solver.engine().is_some() {
            let at = self.shared_gradient(gradient)?;
            let g = &mut self.shared_gradients[at].1;
            self.solver.solve_shared(&mut self.gc, *factor, g)?
        } else {
            self.solver.solve(
                &mut self.gc,
                &self.key,
                &self.config,
                *factor,
                &gradient.gradient,
            )?
        };
        Ok(Array1::from(step))
    }

    /// The objective's relative change first; only when that says "go on" and a gradient
    /// tolerance is set, the gradient-norm test (so the run reveals which rule stopped it).
    fn converged(
        &mut self,
        previous: &EncryptedVector,
        current: &EncryptedVector,
        gradient: &SecureGradient,
        rule: &StoppingRule,
    ) -> Result<bool, SecureError> {
        // |current - previous| < tol |previous|, both sides at three times the fractional bits;
        // no circuit when the rule is off (tol 0: no change is below 0).
        if rule.relative_tolerance > 0.0 {
            let frac = self.config.frac;
            let change = self.rescale(&self.difference(current, previous)?, 2 * frac, 3 * frac)?;
            let threshold =
                previous.mul_scalar(&self.key, &Self::fixed(rule.relative_tolerance, frac)?)?;
            if self.compare(Comparison::AbsLess, &change, &threshold)? {
                return Ok(true);
            }
        }
        match rule.gradient_tolerance {
            Some(tolerance) => {
                if self.step_rules_out_convergence(gradient, tolerance)? {
                    return Ok(false);
                }
                self.gradient_below(gradient, tolerance)
            }
            None => Ok(false),
        }
    }

    fn increased(
        &mut self,
        candidate: &EncryptedVector,
        base: &EncryptedVector,
        slack: f64,
    ) -> Result<bool, SecureError> {
        let frac = self.config.frac;
        if self.vertical.is_some() {
            // A vertical study's objectives carry the logistic circuit's error (within
            // OBJECTIVE_SLACK / 2 a row for the difference of two): a relative slack of
            // round-off would let the error call a step near the optimum a fall.
            let change = self.difference(candidate, base)?.add_plain(
                &self.key,
                &[Self::fixed(vertical_state::OBJECTIVE_SLACK, 2 * frac)?.value],
            )?;
            let zero = change.mul_scalar(&self.key, &Fixed::integer(0))?;
            return self.compare(Comparison::NonNegative, &change, &zero);
        }
        let change = self.rescale(&self.difference(candidate, base)?, 2 * frac, 3 * frac)?;
        let allowance = base.mul_scalar(&self.key, &Self::fixed(slack, frac)?)?;
        self.compare(Comparison::NonNegativeWithSlack, &change, &allowance)
    }

    fn sufficient_increase(
        &mut self,
        candidate: &EncryptedVector,
        base: &EncryptedVector,
        base_gradient: &SecureGradient,
        step: &Array1<f64>,
        slack: f64,
    ) -> Result<bool, SecureError> {
        // (candidate - base - 1/2 step^T g_base) / N + slack >= 0 (everything is divided by N
        // here), at twice the fractional bits.
        let frac = self.config.frac;
        // A vertical study's objectives carry the circuit's interpolation error (each row's
        // loss within ERROR_BOUND, so each objective / N too): a slack below twice that would
        // let the error decide, and reject good candidates near the optimum.
        let slack = if self.vertical.is_some() {
            slack.max(vertical_state::OBJECTIVE_SLACK)
        } else {
            slack
        };
        let half_step: Vec<Fixed> = step
            .iter()
            .map(|s| Self::fixed(0.5 * s, frac))
            .collect::<Result<_, _>>()?;
        let gain = self.gradient_dot(base_gradient, &half_step)?;
        let change = self.difference(candidate, base)?;
        let excess = self
            .difference(&change, &gain)?
            .add_plain(&self.key, &[Self::fixed(slack, 2 * frac)?.value])?;
        // The comparison's second operand is unused: an encrypted 0, not `excess` again (two
        // masked views of one value would double the key holder's statistical advantage).
        let zero = excess.mul_scalar(&self.key, &Fixed::integer(0))?;
        // The candidate's step goes with its test: one round trip for both.
        self.ask_step_early()?;
        self.compare(Comparison::NonNegative, &excess, &zero)
    }

    fn peek(&self, _value: &EncryptedVector) -> Option<f64> {
        None
    }

    /// Not in a vertical study: its Nodes dealt the products of PrivLogit's rounds only.
    fn newton_finish(&self) -> bool {
        self.vertical.is_none()
    }

    fn separates(&mut self, beta: &Array1<f64>) -> Result<Option<bool>, SecureError> {
        if self.vertical.is_some() {
            return Ok(None);
        }
        self.classes_separated(beta).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paillier::{DjnNoise, KeyPair, SecretKey};
    use crate::secure::DEFAULT_FORMAT;
    use num_bigint::BigUint;
    use privlogit_circuits::channel::MemoryChannel;
    use privlogit_circuits::session::GarblerSession;

    /// A key holder that decrypts what it is asked to and records the plaintexts it saw.
    fn recording_keyholder(
        channel: MemoryChannel,
        secret: &SecretKey,
        session: u64,
    ) -> Vec<num_bigint::BigInt> {
        let mut party = GarblerSession::new(channel, &mut rand::rng()).expect("base OT");
        let mut seen = Vec::new();
        loop {
            let ch = party.channel().expect("channel");
            let Ok((_, payload)) = wire::recv(ch, session, &[Step::DecryptPublic]) else {
                return seen;
            };
            let mut r = Reader::new(&payload);
            let v = EncryptedVector::from_bytes(secret.public_key(), r.bytes().expect("bytes"))
                .expect("vector");
            let values: Vec<_> = v
                .decrypt(secret)
                .expect("decrypts")
                .into_iter()
                .map(|f| f.value)
                .collect();
            seen.extend(values.iter().cloned());
            let reply = IntMatrix::from_vec(1, values.len(), values);
            let ch = party.channel().expect("channel");
            wire::send(
                ch,
                session,
                Step::DecryptPublicReply,
                &reply.write(Writer::new()).finish(),
            )
            .expect("reply");
        }
    }

    /// A value public by design (N, a moment, a Local step) reaches the aggregator exactly,
    /// and the key holder decrypts it only masked: what it sees is the value plus a mask
    /// in `[0, 2^(bound + 40))`, never the value (it used to see N, the moments and every
    /// Local step, hence every coefficient).
    #[test]
    fn public_values_are_decrypted_masked() {
        let pair = KeyPair::generate_insecure_for_tests(1024, &mut rand::rng());
        let key = pair.secret.public_key().clone();
        let config = SecureConfig::new(9, 2, 3, DEFAULT_FORMAT);
        let (a, k) = MemoryChannel::pair();
        let seen = std::thread::scope(|scope| {
            let keyholder = scope.spawn(|| recording_keyholder(k, &pair.secret, 9));
            let mut me = SecureAggregation::base(AggregatorSetup {
                nodes: Vec::<MemoryChannel>::new(),
                keyholder: a,
                key: key.clone(),
                config,
                protocol: Protocol::Local,
                linear_algebra: LinearAlgebra::Masked,
            })
            .expect("connects");
            let values: Vec<Fixed> = [569i64, -3, 0].into_iter().map(Fixed::integer).collect();
            let bound = BigUint::from(1u32 << 12);
            let noise = DjnNoise::new(&key, &mut rand::rng());
            let v = EncryptedVector::encrypt(
                &key,
                &values,
                &bound,
                crate::paillier::Packing::unpacked(&key),
                &noise,
            )
            .expect("encrypts");
            for _ in 0..20 {
                assert_eq!(
                    me.decrypt_masked(&v).expect("decrypts"),
                    vec![569.0, -3.0, 0.0]
                );
            }
            drop(me);
            keyholder.join().expect("key holder")
        });
        assert_eq!(seen.len(), 60);
        let limit = num_bigint::BigInt::from(1u64 << (13 + gc::SIGMA));
        for (k, got) in seen.iter().enumerate() {
            let secret = [569i64, -3, 0][k % 3];
            let mask = got - secret;
            assert!(
                mask >= num_bigint::BigInt::from(0) && mask < limit,
                "{k}: {got}"
            );
        }
        // Twenty views of 569 all differ: the masks are fresh, the value is not shown.
        let views: std::collections::HashSet<_> = seen.iter().step_by(3).collect();
        assert_eq!(views.len(), 20);
        assert!(!seen.contains(&num_bigint::BigInt::from(569)));
    }
}
