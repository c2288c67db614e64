//! A whole study over any channels: the handshake that fixes its parameters, then the roles.
//!
//! 1. Every Node sends `Join` with its feature names; the aggregator waits for all of them and
//!    refuses, before any cryptography, a Node whose columns differ from Node 1's.
//! 2. The aggregator sends `Setup` (session id, parties, dimension, fixed-point format, key size)
//!    to the key holder, which makes a key pair and answers with the public key.
//! 3. The aggregator sends `Welcome` (the same parameters and the public key) to every Node.
//! 4. Count round (N), secure standardisation when asked, then the optimiser.

use crate::secure::CheckpointFault;
use std::borrow::Borrow;
use std::ops::Range;
use std::time::Instant;

use privlogit_circuits::channel::Channel;
use privlogit_circuits::fixed_format::FixedFormat;
use sha2::{Digest, Sha256};

use super::aggregator::{
    AggregatorSetup, AggregatorStats, Protocol, Reveal, Revealed, SecureAggregation, SetupState,
};
use super::checkpoint::Checkpoint;
use super::endorsement::{Endorsement, Endorser, KeyTrust};
use super::keyholder::{self, DecryptionBudget, KeyStore, KeyholderStats};
use super::node::{self, NodeData};
use super::perturbation::{self, Consent, NoiseShare, Release};
use super::solver::LinearAlgebra;
use super::wire::{self, HANDSHAKE, Reader, Step, Writer};
use super::{
    Breach, MAX_ITERATIONS, PlanReason, Refusal, ResumeMismatch, SEPARATION_PROBE, SecureConfig,
    SecureError,
};
use crate::objective::Glm;
use crate::optimizer::{
    Checkpoints, FitError, FitOptions, FitReport, Initial, IterationRecord, Optimizer, Progress,
};
use crate::paillier::{PublicKey, SecretKey};
use crate::transport::Role;

/// What the aggregator runs, fixed before the study starts.
#[derive(Debug, Clone)]
pub struct StudyPlan {
    /// Which secure protocol.
    pub protocol: Protocol,
    /// Which optimiser (Newton goes with [`Protocol::Newton`], the PrivLogit ones with the others).
    pub optimizer: Optimizer,
    /// Penalty, stopping rule, start.
    pub options: FitOptions,
    /// Fixed-point format of the circuits.
    pub format: FixedFormat,
    /// Paillier modulus size the key holder is asked for; the aggregator refuses a shorter key.
    pub key_bits: u32,
    /// Number of Nodes to wait for.
    pub parties: usize,
    /// Standardise the features with pooled statistics computed under encryption.
    pub standardize: bool,
    /// Prepend an intercept column.
    pub intercept: bool,
    /// How the Center computes on secret matrices.
    pub linear_algebra: LinearAlgebra,
    /// Side of the blocks the masked inverse computes in one garbled circuit (1 to
    /// [`crate::secure::masked::block_leaf::MAX_BLOCK`]): larger blocks wait for fewer round
    /// trips between the servers and send more garbled tables (the aggregator's choice; the
    /// key holder serves any).
    pub circuit_block: usize,
    /// Reproducible runs only: the aggregator's masks in every factorisation drawn from this
    /// seed (and the coefficients the matrix belongs to), so that a run repeats another's
    /// rounding. As secret as the masks: never in a real study.
    pub mask_seed: Option<u64>,
    /// Secure PLR: the published model epsilon-DP by objective perturbation ([`perturbation`]).
    pub release: Option<Release>,
    /// What the study reveals beyond the coefficients, in one round after the fit (needs the
    /// masked linear algebra; a differentially private study reveals the coefficients only).
    pub reveal: Reveal,
    /// The model: logistic regression, or a Gaussian or Poisson one (Newton only), with or
    /// without an offset and weights (the Nodes' rows end with them).
    pub glm: Glm,
    /// After the fit, evaluate the model on the Nodes' held-out rows (a logistic model; the
    /// Nodes without any add zeros) and reveal the pooled sums to the aggregator.
    pub evaluate: bool,
}

impl StudyPlan {
    /// The number of coefficients over `features` (an intercept added when the plan has one).
    pub fn options_dimension(&self, features: &[String]) -> usize {
        features.len() + usize::from(self.intercept)
    }

    /// Fractional bits of the study's Paillier values: [`super::PAILLIER_FRAC`] under the masked
    /// method, the circuit format's under the circuit method.
    pub fn paillier_frac(&self) -> u32 {
        match self.linear_algebra {
            LinearAlgebra::Masked => super::PAILLIER_FRAC,
            LinearAlgebra::Circuit => self.format.frac(),
        }
    }

    /// Checks that the optimiser fits the protocol.
    pub fn validate(&self) -> Result<(), SecureError> {
        let newton = matches!(self.optimizer, Optimizer::Newton);
        if newton != (self.protocol == Protocol::Newton) {
            return Err(SecureError::invalid_plan(
                "optimizer",
                PlanReason::Optimizer {
                    optimizer: self.optimizer,
                    protocol: self.protocol.name(),
                },
            ));
        }
        // The secure protocols bound the inverse's entries by N / lambda, or without a penalty
        // by N / delta for a public curvature floor delta (`UNPENALISED_STEP_FLOOR`).
        if !(self.options.lambda.is_finite() && self.options.lambda >= 0.0) {
            return Err(SecureError::invalid_plan(
                "lambda",
                PlanReason::Value {
                    what: "lambda",
                    value: self.options.lambda,
                    rule: "in a secure study the penalty must be finite and at least 0",
                },
            ));
        }
        if self.options.lambda == 0.0 && self.linear_algebra != LinearAlgebra::Masked {
            return Err(SecureError::invalid_plan(
                "lambda",
                "an unpenalised study (lambda 0) needs setting `linear_algebra` masked: the circuit \
                 method's fixed-point words have no room for the floor's inverse, and only the \
                 masked method names a collinear column",
            ));
        }
        if !self.glm.family.has_constant_bound() && self.protocol != Protocol::Newton {
            return Err(SecureError::invalid_plan(
                "protocol",
                PlanReason::Family(self.glm.family),
            ));
        }
        if self.evaluate
            && (self.glm.family != crate::objective::Family::Binomial
                || self.linear_algebra != LinearAlgebra::Masked)
        {
            return Err(SecureError::invalid_plan(
                "test_party",
                "held-out evaluation (log-loss, accuracy, Brier score, calibration) is for a \
                 logistic model under setting `linear_algebra` masked",
            ));
        }
        if self.evaluate && self.release.is_some() {
            return Err(SecureError::invalid_plan(
                "test_party",
                "a differentially private study publishes its coefficients only: its held-out \
                 figures are not covered by epsilon",
            ));
        }
        if !self.glm.is_logistic() && self.release.is_some() {
            return Err(SecureError::invalid_plan(
                "family",
                "a differentially private study (secure PLR) is a logistic regression without \
                 offset or weights",
            ));
        }
        if self.options.stopping.max_iterations > MAX_ITERATIONS {
            return Err(SecureError::invalid_plan(
                "max_iterations",
                PlanReason::too_many(
                    "iterations",
                    self.options.stopping.max_iterations,
                    MAX_ITERATIONS,
                ),
            ));
        }
        if self.parties == 0 {
            return Err(SecureError::invalid_plan(
                "parties",
                "a study needs at least one Node",
            ));
        }
        if self.reveal != Reveal::Coefficients {
            let why = if self.release.is_some() {
                Some(
                    "a differentially private study publishes its coefficients only (standard \
                      errors are not covered by epsilon)",
                )
            } else if self.linear_algebra != LinearAlgebra::Masked {
                Some(
                    "standard errors are computed in masked arithmetic: use setting `linear_algebra` masked",
                )
            } else {
                None
            };
            if let Some(why) = why {
                return Err(SecureError::invalid_plan(
                    "reveal",
                    PlanReason::Reveal {
                        reveal: self.reveal.name(),
                        why,
                    },
                ));
            }
        }
        if let Some(release) = &self.release {
            release.validate()?;
            let refusal = if self.standardize || self.intercept {
                Some((
                    if self.standardize {
                        "standardize"
                    } else {
                        "intercept"
                    },
                    "a differentially private study cannot run with standardisation or an \
                     intercept: PLR's guarantee holds for rows of norm at most 1, which the Nodes \
                     make by scaling each row by its own norm (turn standardisation and the \
                     intercept off)",
                ))
            } else if self.linear_algebra != LinearAlgebra::Masked {
                Some((
                    "linear_algebra",
                    "a differentially private study cannot run with setting `linear_algebra` \
                     circuit: the study stops on the gradient norm, which needs masked",
                ))
            } else {
                None
            };
            if let Some((setting, why)) = refusal {
                return Err(SecureError::invalid_plan(setting, why));
            }
        }
        if self.options.stopping.gradient_tolerance.is_some()
            && self.linear_algebra != LinearAlgebra::Masked
        {
            return Err(SecureError::invalid_plan(
                "gradient_tolerance",
                "the gradient-norm stopping rule squares the gradient in masked arithmetic: it \
                 needs setting `linear_algebra` masked",
            ));
        }
        Ok(())
    }
}

/// What a study produced, as the aggregator sees it.
#[derive(Debug)]
pub struct StudyOutcome {
    /// The optimiser's report.
    pub fit: FitReport,
    /// Coefficient names (intercept first when there is one).
    pub names: Vec<String>,
    /// Pooled means and standard deviations, when standardised (public by design).
    pub standardization: Option<(Vec<f64>, Vec<f64>)>,
    /// N.
    pub rows: usize,
    /// The aggregator's counters.
    pub aggregator: AggregatorStats,
    /// Seconds of setup: handshake, key pair, count, standardisation, and the bound's factor
    /// circuit (PrivLogit).
    pub setup_seconds: f64,
    /// Seconds in total.
    pub seconds: f64,
    /// The iterations a checkpoint had done when this run took the study up.
    pub resumed_from: Option<usize>,
    /// What the inference round revealed (`None`: coefficients only, or no convergence).
    pub inference: Option<Revealed>,
    /// Why the inference round gave no table, when it failed on the numbers (the model stands).
    pub inference_failed: Option<String>,
    /// The pooled [`crate::evaluation_sums::sums`] over the Nodes' held-out rows and their exact
    /// AUC, when the plan evaluates and the study produced a model.
    pub evaluation: Option<crate::secure::aggregator::HeldOut>,
    /// A vertical study's join and stopping tolerance.
    pub vertical: Option<VerticalSummary>,
}

/// What the aggregator reports of a vertical study beyond a horizontal study's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct VerticalSummary {
    /// Per party in coefficient order (the labelling party first): the Node's place in the
    /// order of joining (from 0), the rows it held, its coefficients' range.
    pub parties: Vec<(usize, usize, Range<usize>)>,
    /// Seconds from the first message to the intersection's answers.
    pub psi_seconds: f64,
    /// The gradient-norm tolerance the study stopped by: the one asked for, raised to
    /// the vertical circuit's floor (`gradient_floor`) when below it.
    pub gradient_tolerance: Option<f64>,
}

/// What can stop a study.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StudyError {
    /// A party failed.
    #[error(transparent)]
    Secure(#[from] SecureError),
    /// The optimiser failed (its backend errors are the aggregator's).
    #[error(transparent)]
    Fit(#[from] FitError),
    /// A serving party failed (named).
    #[error("{0} failed: {1}")]
    Party(String, SecureError),
    /// A party's thread panicked.
    #[error("the {0} thread panicked")]
    Panicked(String),
}

impl StudyError {
    /// True for a verdict on the data (separated classes): the study cannot end otherwise, so
    /// it is not resumable and its checkpoint and the key holder's key go.
    pub fn is_verdict(&self) -> bool {
        matches!(self, StudyError::Secure(SecureError::Separated { .. }))
    }
}

/// `e` while `party` does `activity`.
pub(super) fn io_at(party: Role, activity: &'static str) -> impl Fn(std::io::Error) -> SecureError {
    move |e| SecureError::io(party, activity, e)
}

/// `e` while `party` does `activity` with Node `node` (1-based).
pub(super) fn io_at_node(
    party: Role,
    activity: &'static str,
    node: usize,
) -> impl Fn(std::io::Error) -> SecureError {
    move |e| SecureError::io(party, activity, e).with_node(node)
}

/// Reads a public key, `party` refusing one below `min_bits` (below 2048 bits only in tests).
pub(super) fn parse_key(
    bytes: &[u8],
    min_bits: u32,
    party: Role,
) -> Result<PublicKey, SecureError> {
    let key = if min_bits >= 2048 {
        PublicKey::from_bytes(bytes)?
    } else {
        PublicKey::from_bytes_insecure_for_tests(bytes)?
    };
    if key.bits() < u64::from(min_bits) {
        return Err(SecureError::Refused {
            party,
            reason: Refusal::ShortKey {
                bits: key.bits(),
                required: min_bits,
            },
        });
    }
    Ok(key)
}

/// The Node role from the first message: joins with its feature `names`, then serves. The
/// Node refuses a public key shorter than `min_key_bits` (its own policy, not the study's) and,
/// given `trust`, one that the named key holder did not sign for this study and session.
///
/// In a differentially private study the Node scales each of its rows to norm 1 (PLR's public
/// row rule) and first asks `consent` (its ledger), which may refuse before anything is sent.
pub fn run_node<C: Channel>(
    mut channel: C,
    names: &[String],
    mut data: NodeData,
    min_key_bits: u32,
    trust: Option<KeyTrust>,
    consent: Option<Consent<'_>>,
) -> Result<node::NodeStats, SecureError> {
    let mut w = Writer::new().u64(names.len() as u64);
    for n in names {
        w = w.string(n);
    }
    wire::send(&mut channel, HANDSHAKE, Step::Join, &w.finish())
        .map_err(io_at(Role::Node, "joining"))?;
    let (_, welcome) = wire::recv(&mut channel, HANDSHAKE, &[Step::Welcome])
        .map_err(io_at(Role::Node, "waiting for the study to start"))?;
    let mut r = Reader::new(&welcome);
    let (config, intercept, release) =
        read_parameters(&mut r).map_err(io_at(Role::Node, "reading the welcome"))?;
    let key_bytes = r.bytes().map_err(io_at(Role::Node, "reading the key"))?;
    let glm = r.u64().map_err(io_at(Role::Node, "reading the model"))?;
    let evaluate = r.u64().map_err(io_at(Role::Node, "reading the model"))? == 1;
    if glm != glm_code(data.glm()) {
        return Err(SecureError::PlanMismatch {
            with: Role::Aggregator,
            setting: "the model (family, offset, weights)",
            ours: describe_glm(data.glm()),
            theirs: glm_from_code(glm).map_or_else(|| format!("code {glm}"), describe_glm),
        });
    }
    let endorsement = read_endorsement(&mut r).map_err(io_at(Role::Node, "reading the welcome"))?;
    r.end().map_err(io_at(Role::Node, "reading the welcome"))?;
    if let Some(trust) = trust {
        trust.check(config.session, key_bytes, &endorsement)?;
    }
    let key = parse_key(key_bytes, min_key_bits, Role::Node)?;
    if config.dimension != names.len() + usize::from(intercept) {
        return Err(SecureError::PlanMismatch {
            with: Role::Aggregator,
            setting: "the dimension (this Node's columns and the intercept)",
            ours: (names.len() + usize::from(intercept)).to_string(),
            theirs: config.dimension.to_string(),
        });
    }
    data.set_intercept(intercept);
    data.allow_after_fit(evaluate);
    data.check_disclosure(config.dimension, config.parties, evaluate)?;
    if let Some(release) = &release {
        if let Some(consent) = consent {
            consent(release)?;
        }
        data.set_unit_norm();
    }
    node::serve(channel, &mut data, &key, &config)
}

/// The key-holder role from the first message: makes the key pair the study asks for (with
/// `make_key`, given the modulus size) and keeps it in `store`, or, when the aggregator resumes
/// a study, takes the key `store` kept for it (a study the aggregator cannot resume keeps its
/// key in memory only); signs the public key with `endorser` when
/// given, then serves. In a differentially private study it draws its share of the noise
/// from `noise` (refused without one).
pub fn run_keyholder<C: Channel, K: Borrow<SecretKey>>(
    mut channel: C,
    make_key: impl FnOnce(u32) -> Result<K, SecureError>,
    endorser: Option<&Endorser>,
    store: &mut dyn KeyStore,
    noise: Option<&mut dyn NoiseShare>,
) -> Result<KeyholderStats, SecureError> {
    let (_, setup) = wire::recv(&mut channel, HANDSHAKE, &[Step::Setup])
        .map_err(io_at(Role::KeyHolder, "waiting for the aggregator"))?;
    let at = io_at(Role::KeyHolder, "reading the setup");
    let mut r = Reader::new(&setup);
    let (config, intercept, release) = read_parameters(&mut r).map_err(&at)?;
    let bits = r.u64().map_err(&at)?;
    let local = r.u64().map_err(&at)? == 1;
    let standardize = r.u64().map_err(&at)? == 1;
    let max_iterations = r.u64().map_err(&at)?;
    let resumed_key = r.bytes().map_err(&at)?.to_vec();
    // A study the aggregator keeps no checkpoint of (vertical, differentially private,
    // nested) can never be resumed: its key stays in memory, never in `store`.
    let resumable = r.u64().map_err(&at)? == 1;
    r.end().map_err(&at)?;
    let mut in_memory = keyholder::NoKeyStore;
    let store: &mut dyn KeyStore = if resumable { store } else { &mut in_memory };
    if !resumable && !resumed_key.is_empty() {
        return Err(SecureError::violation(
            Role::Aggregator,
            Breach::NotInPlan {
                what: "a resumed study that keeps no checkpoint",
            },
        ));
    }
    let bits = u32::try_from(bits).map_err(|_| {
        SecureError::violation(
            Role::Aggregator,
            Breach::OutOfRange {
                what: "key size (bits)",
                value: bits,
                min: 0,
                max: u64::from(u32::MAX),
            },
        )
    })?;
    let share = match (release, noise) {
        (None, _) => None,
        (Some(release), Some(noise)) => Some((release, noise)),
        (Some(_), None) => {
            return Err(SecureError::Refused {
                party: Role::KeyHolder,
                reason: Refusal::NoNoiseShare,
            });
        }
    };
    let max_iterations = usize::try_from(max_iterations)
        .ok()
        .filter(|m| (1..=MAX_ITERATIONS).contains(m))
        .ok_or_else(|| {
            SecureError::invalid_plan(
                "max_iterations",
                PlanReason::TooMany {
                    what: "iterations",
                    count: max_iterations,
                    limit: MAX_ITERATIONS as u64,
                },
            )
        })?;
    let (made, loaded, budget) = if resumed_key.is_empty() {
        let budget = DecryptionBudget::new(
            config.dimension - usize::from(intercept),
            config.dimension,
            standardize,
            local,
            max_iterations,
        );
        let made = make_key(bits)?;
        store.save(config.session, (made.borrow(), &budget))?;
        (Some(made), None, budget)
    } else {
        let (secret, budget) = store
            .load(config.session)?
            .ok_or(ResumeMismatch::NoKeptKey {
                session: config.session,
            })?;
        if key_digest(&secret.public_key().to_bytes())[..] != resumed_key[..] {
            return Err(ResumeMismatch::KeptKeyDiffers.into());
        }
        (None, Some(secret), budget.resumed(standardize))
    };
    let secret: &SecretKey = match (&made, &loaded) {
        (Some(k), _) => k.borrow(),
        (None, Some(k)) => k,
        (None, None) => unreachable!("a key was made or loaded"),
    };
    let key_bytes = secret.public_key().to_bytes();
    let endorsement = endorser
        .map(|e| e.endorse(config.session, &key_bytes))
        .transpose()?
        .unwrap_or_default();
    let payload = write_endorsement(Writer::new().bytes(&key_bytes), &endorsement).finish();
    wire::send(&mut channel, HANDSHAKE, Step::PublicKey, &payload)
        .map_err(io_at(Role::KeyHolder, "sending the public key"))?;
    let session = config.session;
    let mut spent = |b: &DecryptionBudget| store.save(session, (secret, b));
    keyholder::serve(channel, secret, &config, budget, &mut spent, share)
}

/// SHA-256 of a public key's bytes: how a resuming aggregator names the key it continues with.
pub fn key_digest(key: &[u8]) -> [u8; 32] {
    Sha256::digest(key).into()
}

/// How the aggregator keeps a study it can continue after a lost party: the study's id, the
/// checkpoint to continue from (if any), and where each new checkpoint goes.
pub struct Continuity<'a> {
    /// The study id (a checkpoint of another study is refused).
    pub study: [u8; 32],
    /// The checkpoint to continue from; `None` starts the study.
    pub from: Option<Checkpoint>,
    /// Keeps a checkpoint (atomically: the previous one stays until the new one is whole),
    /// after the setup and after every iteration that does not end the study.
    pub save: &'a mut dyn FnMut(&Checkpoint) -> std::io::Result<()>,
}

/// The digest of everything in `plan` a resumed study must share with the first run.
pub fn plan_digest(plan: &StudyPlan) -> [u8; 32] {
    let o = &plan.options;
    let text = format!(
        "privlogit plan v2|{:?}|{:?}|{}|{}|{:?}|{}|{:?}|{}/{}|{}|{}|{}|{}|{}",
        plan.protocol,
        plan.optimizer,
        o.lambda.to_bits(),
        o.stopping.relative_tolerance.to_bits(),
        o.stopping.gradient_tolerance.map(f64::to_bits),
        o.stopping.max_iterations,
        o.initial,
        plan.format.width(),
        plan.format.frac(),
        plan.key_bits,
        plan.parties,
        plan.standardize,
        plan.intercept,
        plan.linear_algebra
    );
    // A release is part of the plan (absent, the digest is what it always was).
    let text = match &plan.release {
        Some(r) => format!(
            "{text}|release {:x} {:x}",
            r.epsilon.to_bits(),
            r.lambda.to_bits()
        ),
        None => text,
    };
    // The model is part of the plan (logistic: the digest it always was).
    let text = if plan.glm.is_logistic() {
        text
    } else {
        format!("{text}|glm {}", glm_code(plan.glm))
    };
    // So is an evaluation on held-out rows (none: the digest it always was).
    let text = if plan.evaluate {
        format!("{text}|evaluate")
    } else {
        text
    };
    // What is revealed is part of the plan (coefficients only: the digest it always was).
    let text = match plan.reveal {
        Reveal::Coefficients => text,
        other => format!("{text}|reveal {}", other.name()),
    };
    // A centred penalty is part of the plan (absent, the digest is what it always was).
    let text = match &o.centre {
        Some(c) => {
            let bits: Vec<String> = c.iter().map(|v| format!("{:x}", v.to_bits())).collect();
            format!("{text}|centre {}", bits.join(","))
        }
        None => text,
    };
    Sha256::digest(text.as_bytes()).into()
}

/// The aggregator role: waits for every Node, checks their columns, sets the study up (or,
/// with `continuity.from`, takes it up where its checkpoint left it), runs the optimiser,
/// and ends the study. A differentially private plan draws the aggregator's noise share from
/// `noise` (refused without one).
pub fn run_aggregator<C: Channel>(
    nodes: Vec<C>,
    keyholder: C,
    plan: &StudyPlan,
    observer: &mut dyn FnMut(&IterationRecord),
    continuity: Option<Continuity<'_>>,
    noise: Option<&mut dyn NoiseShare>,
) -> Result<StudyOutcome, StudyError> {
    run_aggregator_with(
        nodes,
        keyholder,
        plan,
        observer,
        continuity,
        noise,
        None::<privlogit_circuits::channel::MemoryChannel>,
    )
}

/// [`run_aggregator`] with a dealer of masked products on `dealer` (a `privlogit dealer`
/// process or an in-process study's dealer thread, both running
/// [`crate::secure::masked::dealt::serve`]): the masked linear algebra's cross terms come from
/// its correlations instead of Paillier ciphertexts, and the Nodes pack their gradients.
pub fn run_aggregator_with<C: Channel, D: Channel + Send + 'static>(
    mut nodes: Vec<C>,
    mut keyholder: C,
    plan: &StudyPlan,
    observer: &mut dyn FnMut(&IterationRecord),
    mut continuity: Option<Continuity<'_>>,
    noise: Option<&mut dyn NoiseShare>,
    dealer: Option<D>,
) -> Result<StudyOutcome, StudyError> {
    check_plan(plan, noise.is_some())?;
    let start = Instant::now();
    let digest = plan_digest(plan);
    let from = checkpoint_to_resume(plan, &mut continuity, digest)?;
    let features = features_of(&mut nodes, from.as_ref())?;
    let dimension = features.len() + usize::from(plan.intercept);
    let (config, key) = handshake(
        &mut nodes,
        &mut keyholder,
        plan,
        from.as_ref(),
        dimension,
        dealer.is_some(),
        continuity.is_some(),
    )?;
    let session = config.session;
    let (aggregation, standardization) = connect_or_resume(
        nodes,
        keyholder,
        &key,
        config,
        plan,
        from.as_ref(),
        &features,
    )?;
    // Held outside the run, so that a failure reaches every peer with its reason: the links
    // are aborted with it before they are dropped (dropping them alone would end each
    // connection cleanly, and the peers would see only a hang-up).
    let mut held = Some(aggregation);
    let outcome: Result<StudyOutcome, StudyError> = (|| {
        let aggregation = held.as_mut().expect("held until the end");
        if let Some(dealer) = dealer {
            aggregation.use_dealer(dealer)?;
        }
        if let Some(seed) = plan.mask_seed {
            aggregation.seed_masks(Sha256::digest(seed.to_le_bytes()).into());
        }
        // An unstandardised study fits `c_j = s_j b_j` on features scaled by `1/s_j`; the result
        // is turned back into raw units below.
        let raw_scales = match (&standardization, plan.standardize) {
            (Some((_, scales)), false) => Some(scales.clone()),
            _ => None,
        };
        let options = study_options(
            &mut *aggregation,
            plan,
            noise,
            from.is_none(),
            &features,
            raw_scales.as_deref(),
        )?;
        let mut names = features.clone();
        if plan.intercept {
            names.insert(0, "intercept".to_string());
        }
        let setup_seconds = start.elapsed().as_secs_f64();
        let rows = crate::Aggregation::sample_count(&*aggregation);
        let resumed_from = from.as_ref().map(|f| f.progress.iterations());
        let named = |e: FitError| name_singular(e, &names);
        // The last coefficients, for the separation check of an unpenalised study that fails.
        let mut last: Option<(usize, ndarray::Array1<f64>)> = None;
        let mut watch = |r: &IterationRecord| {
            last = Some((r.iteration, r.beta.clone()));
            observer(r);
        };
        let observer = &mut watch;
        let fitted = match continuity {
            None => plan
                .optimizer
                .fit(&mut *aggregation, &options, observer)
                .map_err(named),
            Some(c) => {
                let template = Checkpoint {
                    study: c.study,
                    plan: digest,
                    session,
                    key: key.to_bytes(),
                    names: features,
                    rows: rows as u64,
                    standardization: standardization.clone(),
                    bound: None,
                    progress: Progress::default(),
                };
                fit_checkpointed(
                    &mut *aggregation,
                    plan,
                    &options,
                    observer,
                    c.save,
                    from,
                    template,
                )
                .map_err(named)
            }
        };
        aggregation.enter(crate::secure::round_trips::Phase::Closing);
        let fit = refuse_separation(&mut *aggregation, plan, &options, fitted, last, rows)?;
        let (inference, inference_failed) = infer(
            &mut *aggregation,
            plan,
            &options,
            &fit,
            standardization.as_ref(),
            &names,
        )?;
        let evaluation = evaluate(&mut *aggregation, plan, &fit)?;
        let aggregator = held.take().expect("held until here").finish()?;
        let setup_seconds = setup_seconds + aggregator.bound_seconds;
        // An unstandardised study's coefficients and table back in raw units (its scales are no
        // standardisation to report).
        let (fit, inference, standardization) = match raw_scales {
            Some(scales) => raw_units(&scales, plan.intercept, fit, inference),
            None => (fit, inference, standardization),
        };
        Ok(StudyOutcome {
            fit,
            names,
            standardization,
            rows,
            aggregator,
            setup_seconds,
            seconds: start.elapsed().as_secs_f64(),
            resumed_from,
            inference,
            inference_failed,
            evaluation,
            vertical: None,
        })
    })();
    if let (Err(e), Some(aggregation)) = (&outcome, held.as_mut()) {
        if e.is_verdict() {
            aggregation.end_with_verdict(&e.to_string());
        } else {
            aggregation.abort(&e.to_string());
        }
    }
    outcome
}

/// Refuses a plan that is not runnable, or a differentially private one without the
/// aggregator's noise share.
fn check_plan(plan: &StudyPlan, noise: bool) -> Result<(), StudyError> {
    plan.validate()?;
    if plan.release.is_some() && !noise {
        return Err(SecureError::Refused {
            party: Role::Aggregator,
            reason: Refusal::NoNoiseShare,
        }
        .into());
    }
    Ok(())
}

/// The model as published, on the Nodes' held-out rows: evaluated when asked and there is a
/// model (a diverged study has none).
fn evaluate<C: Channel>(
    aggregation: &mut SecureAggregation<C>,
    plan: &StudyPlan,
    fit: &FitReport,
) -> Result<Option<crate::secure::aggregator::HeldOut>, StudyError> {
    if plan.evaluate && !matches!(fit.status, crate::optimizer::Status::Diverged(_)) {
        Ok(Some(aggregation.evaluate(&fit.beta)?))
    } else {
        Ok(None)
    }
}

/// The study's public parameters and key: a session id (the checkpoint's when resuming), the
/// key holder's key for this plan (`dealt`: products from a dealer, so packed gradients), and
/// every Node welcomed with them.
#[allow(clippy::too_many_arguments)]
fn handshake<C: Channel>(
    nodes: &mut [C],
    keyholder: &mut C,
    plan: &StudyPlan,
    from: Option<&Checkpoint>,
    dimension: usize,
    dealt: bool,
    keeps_checkpoints: bool,
) -> Result<(SecureConfig, PublicKey), StudyError> {
    let session = match from {
        Some(f) => f.session,
        None => loop {
            let s: u64 = rand::random();
            if s != HANDSHAKE {
                break s;
            }
        },
    };
    let mut config = SecureConfig::new(session, plan.parties, dimension, plan.format);
    config.parties = nodes.len();
    config.circuit_block = plan.circuit_block;
    config = config.with_frac(plan.paillier_frac());
    // The key holder learns the plan's public shape, from which it fixes what it will
    // decrypt outside circuits ([`DecryptionBudget`]); a resumed study names its key.
    let resumed_key = from.map(|f| key_digest(&f.key).to_vec());
    if plan.release.is_some() {
        config = config.with_noise_term();
    }
    // With a dealer the masked products are cheap, so the Nodes pack their gradients and the
    // Center takes its dot products in masked arithmetic (a secure PLR study's noise term is
    // unpacked: it keeps the unpacked form).
    config = config.with_packed_gradient(
        dealt && plan.linear_algebra == LinearAlgebra::Masked && plan.release.is_none(),
    );
    let (key, endorsement) = setup_keyholder(
        keyholder,
        &config,
        plan,
        plan.standardize,
        resumed_key.as_deref(),
        keeps_checkpoints,
    )?;
    if from.is_some_and(|f| f.key != key.to_bytes()) {
        return Err(SecureError::from(ResumeMismatch::AnsweredWithAnotherKey).into());
    }
    let welcome = write_endorsement(
        write_parameters(&config, plan.intercept, plan.release)
            .bytes(&key.to_bytes())
            .u64(glm_code(plan.glm))
            .u64(u64::from(plan.evaluate)),
        &endorsement,
    )
    .finish();
    for (i, node) in nodes.iter_mut().enumerate() {
        wire::send(node, HANDSHAKE, Step::Welcome, &welcome).map_err(io_at_node(
            Role::Aggregator,
            "welcoming",
            i + 1,
        ))?;
    }
    Ok((config, key))
}

/// The aggregation over the joined Nodes: set up afresh (the counts, the bound, the
/// standardisation or the raw scales) or resumed from the checkpoint `from`; with the
/// standardisation (or raw scales, means 0) the study uses.
#[allow(clippy::type_complexity)]
fn connect_or_resume<C: Channel>(
    nodes: Vec<C>,
    keyholder: C,
    key: &PublicKey,
    config: SecureConfig,
    plan: &StudyPlan,
    from: Option<&Checkpoint>,
    features: &[String],
) -> Result<(SecureAggregation<C>, Option<(Vec<f64>, Vec<f64>)>), StudyError> {
    let start = AggregatorSetup {
        nodes,
        keyholder,
        key: key.clone(),
        config,
        protocol: plan.protocol,
        linear_algebra: plan.linear_algebra,
    };
    Ok(match from {
        Some(f) => {
            let setup = SetupState {
                rows: usize::try_from(f.rows)
                    .map_err(|_| SecureError::checkpoint(CheckpointFault::Rows { rows: f.rows }))?,
                standardization: f.standardization.clone(),
                bound: f.bound.clone(),
            };
            let aggregation = SecureAggregation::resume(start, &setup, features)?;
            (aggregation, f.standardization.clone())
        }
        None => {
            let mut aggregation = SecureAggregation::connect(start)?;
            let standardization = if plan.standardize {
                Some(aggregation.standardize(features)?)
            } else if plan.release.is_some() {
                // Secure PLR scales every row to norm 1 (its public row rule): bounded already.
                None
            } else {
                // Raw units: features too large for the bounds are scaled by public powers
                // of two, kept beside the standardisation's (means 0) in checkpoints.
                aggregation
                    .scale_raw(features)?
                    .map(|scales| (vec![0.0; scales.len()], scales))
            };
            (aggregation, standardization)
        }
    })
}

/// The Nodes' common columns (a resumed study's must be the checkpoint's); on a mismatch every
/// Node, still connected, is told why before the study stops.
fn features_of<C: Channel>(
    nodes: &mut [C],
    from: Option<&Checkpoint>,
) -> Result<Vec<String>, StudyError> {
    join_names(nodes, from.map(|f| f.names.as_slice())).map_err(|e| {
        abort_all(nodes, &e);
        e.into()
    })
}

/// The checkpoint `continuity` holds, taken out of it: refused when it is another study's or
/// another plan's, or when the study is differentially private (its noise is not kept).
fn checkpoint_to_resume(
    plan: &StudyPlan,
    continuity: &mut Option<Continuity<'_>>,
    digest: [u8; 32],
) -> Result<Option<Checkpoint>, StudyError> {
    let from = continuity.as_mut().and_then(|c| c.from.take());
    if from.is_some() && plan.release.is_some() {
        return Err(SecureError::invalid_plan(
            "release",
            "a differentially private study cannot be resumed: its noise is not kept in the \
             checkpoint, and drawing it again would show the participants a second noisy \
             trajectory (start it again, charged again)",
        )
        .into());
    }
    if let (Some(c), Some(f)) = (continuity.as_ref(), &from) {
        if f.study != c.study {
            return Err(SecureError::from(ResumeMismatch::OtherStudy).into());
        }
        if f.plan != digest {
            return Err(SecureError::from(ResumeMismatch::OtherPlan).into());
        }
    }
    Ok(from)
}

/// The optimiser's options: the plan's, with secure PLR's noisy penalty, Poisson's start and
/// the penalty of raw units (`raw_scales`) where they apply.
fn study_options<C: Channel>(
    aggregation: &mut SecureAggregation<C>,
    plan: &StudyPlan,
    noise: Option<&mut dyn NoiseShare>,
    from_the_start: bool,
    features: &[String],
    raw_scales: Option<&[f64]>,
) -> Result<FitOptions, StudyError> {
    let options = match (&plan.release, noise) {
        (Some(release), Some(noise)) => {
            let penalty = aggregation.perturb(release, noise)?;
            let rows = crate::Aggregation::sample_count(aggregation);
            release_options(&plan.options, release, rows, penalty)
        }
        _ => plan.options.clone(),
    };
    // Newton for Poisson from zero overshoots on most data (the rates are far from 1, and a
    // Node refuses values beyond the public bound rather than let the step be halved): start
    // at the null model's intercept, ln(sum w y / sum w e^o), which the inference reveals too.
    let options = if from_the_start && poisson_from_zero(plan) {
        let c = aggregation.constants()?;
        FitOptions {
            initial: Initial::Vector(poisson_start(c, plan.options_dimension(features))),
            ..options
        }
    } else {
        options
    };
    // An unpenalised logistic study watches for separated classes as it runs (one revealed
    // bit a test; see the security model), rather than crawl to its iteration limit.
    let options = FitOptions {
        separation_watch: options.lambda == 0.0
            && plan.release.is_none()
            && plan.glm.family == crate::objective::Family::Binomial,
        ..options
    };
    // The penalty weighed by `1/s_j^2` (and a centre scaled alike) is the raw coefficients'
    // penalty, so the estimator is the one asked for.
    Ok(match raw_scales {
        Some(scales) => raw_penalty(options, scales, plan)?,
        None => options,
    })
}

/// The fit, keeping a checkpoint (`template` with the fit's progress and the bound) after the
/// setup and every iteration, from the checkpoint `from` when resuming.
fn fit_checkpointed<C: Channel>(
    aggregation: &mut SecureAggregation<C>,
    plan: &StudyPlan,
    options: &FitOptions,
    observer: &mut dyn FnMut(&IterationRecord),
    keep: &mut dyn FnMut(&Checkpoint) -> std::io::Result<()>,
    from: Option<Checkpoint>,
    mut template: Checkpoint,
) -> Result<FitReport, FitError> {
    let saved = aggregation.save_bound();
    *saved.lock().expect("the saved bound") = from.as_ref().and_then(|f| f.bound.clone());
    if let Some(f) = &from {
        template.progress = f.progress.clone();
    }
    let mut save = |progress: &Progress| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        template.bound = saved.lock().expect("the saved bound").clone();
        template.progress = progress.clone();
        keep(&template)?;
        Ok(())
    };
    plan.optimizer.fit_with_checkpoints(
        aggregation,
        options,
        observer,
        Checkpoints {
            from: from.map(|f| f.progress),
            save: Some(&mut save),
        },
    )
}

/// The fit, unless an unpenalised logistic study's classes are separated (its likelihood has
/// no maximum): refused then, before anything is published, with how it was found.
fn refuse_separation<C: Channel>(
    aggregation: &mut SecureAggregation<C>,
    plan: &StudyPlan,
    options: &FitOptions,
    fitted: Result<FitReport, FitError>,
    last: Option<(usize, ndarray::Array1<f64>)>,
    rows: usize,
) -> Result<FitReport, StudyError> {
    let unpenalised = options.lambda == 0.0 && plan.release.is_none();
    // Separation is a binomial model's failure (Poisson and Gaussian maxima exist whenever the
    // design has full rank).
    let binomial = plan.glm.family == crate::objective::Family::Binomial;
    let fit = match fitted {
        Ok(fit) => fit,
        // The optimiser's own watch (an unpenalised logistic run's separation probe, or
        // Newton's test when its step stops shrinking) found every row on its label's side.
        Err(FitError::Separated { iterations }) => {
            return Err(SecureError::Separated {
                rows,
                iterations,
                complete: true,
            }
            .into());
        }
        // Separated classes drive the information to 0 along the separating direction, so an
        // unpenalised Newton study stops at a pivot: say why when it is separation.
        Err(e) => {
            // The first information (at the start, or the bound) passed its pivots, so the
            // columns are independent: a later pivot lost means weights p (1 - p) numerically 0,
            // R's "fitted probabilities numerically 0 or 1".
            if let (true, Some((iterations, beta))) = (unpenalised && binomial, &last)
                && is_singular(&e)
            {
                let complete = aggregation.classes_separated(beta)?;
                return Err(SecureError::Separated {
                    rows,
                    iterations: *iterations,
                    complete,
                }
                .into());
            }
            return Err(e.into());
        }
    };
    // An unpenalised logistic study that ran out of iterations may be crawling after a maximum
    // that does not exist (PrivLogit's bound needs thousands of iterations to point along a
    // separating direction Newton finds in a dozen): Newton from where it stopped tells.
    let fit = if unpenalised && binomial && fit.status == crate::optimizer::Status::MaxIterations {
        let mut probe = options.clone().initial(Initial::Vector(fit.beta.clone()));
        probe.stopping.max_iterations = SEPARATION_PROBE;
        let mut at: Option<ndarray::Array1<f64>> = None;
        let newton = crate::optimizer::Optimizer::Newton.fit(aggregation, &probe, &mut |r| {
            at = Some(r.beta.clone());
        });
        // Complete separation at Newton's coefficients, or its information losing rank on the
        // way (quasi-separation, as a secure Newton study reports it).
        let verdict = match (&newton, &at) {
            (Ok(n), _) => aggregation.classes_separated(&n.beta)?.then_some(true),
            (Err(e), Some(beta)) if is_singular(e) => Some(aggregation.classes_separated(beta)?),
            _ => None,
        };
        if let Some(complete) = verdict {
            return Err(SecureError::Separated {
                rows,
                iterations: fit.iterations + newton.as_ref().map_or(0, |n| n.iterations),
                complete,
            }
            .into());
        }
        fit
    } else {
        fit
    };
    // Without a penalty the likelihood has no maximum when the classes are separated: one
    // revealed bit, before anything is published.
    if unpenalised && binomial && aggregation.classes_separated(&fit.beta)? {
        return Err(SecureError::Separated {
            rows,
            iterations: fit.iterations,
            complete: true,
        }
        .into());
    }
    Ok(fit)
}

/// The table's numbers at the optimum, or why the round failed on the numbers (a pivot or a
/// value out of its public range costs the table, not the model); none when the study did not
/// converge.
fn infer<C: Channel>(
    aggregation: &mut SecureAggregation<C>,
    plan: &StudyPlan,
    options: &FitOptions,
    fit: &FitReport,
    standardization: Option<&(Vec<f64>, Vec<f64>)>,
    names: &[String],
) -> Result<(Option<Revealed>, Option<String>), StudyError> {
    if !fit.converged() {
        return Ok((None, None));
    }
    // A standardised study's raw intercept, `(1, -m_1/s_1, ...) . c`: its variance too.
    let raw_row: Option<Vec<f64>> = match (standardization, plan.standardize) {
        (Some((means, scales)), true) if plan.intercept => Some(
            std::iter::once(1.0)
                .chain(means.iter().zip(scales).map(|(m, s)| -m / s))
                .collect(),
        ),
        _ => None,
    };
    match aggregation.inference(
        &fit.beta,
        options.penalty(),
        plan.intercept,
        plan.reveal,
        plan.glm,
        raw_row.as_deref(),
    ) {
        Ok(revealed) => Ok((revealed, None)),
        Err(SecureError::Singular { column, .. }) => {
            let named = SecureError::Singular {
                column,
                name: names.get(column).cloned(),
            };
            Ok((None, Some(named.to_string())))
        }
        Err(e @ SecureError::Range(_)) => Ok((None, Some(e.to_string()))),
        Err(e) => Err(e.into()),
    }
}

/// A fit of `c_j = s_j b_j` on features divided by `scales`, and its table, in raw units.
#[allow(clippy::type_complexity)]
fn raw_units(
    scales: &[f64],
    intercept: bool,
    fit: FitReport,
    inference: Option<Revealed>,
) -> (FitReport, Option<Revealed>, Option<(Vec<f64>, Vec<f64>)>) {
    let per_coefficient = coefficient_scales(scales, intercept);
    (
        in_raw_units(fit, &per_coefficient),
        inference.map(|r| r.in_raw_units(&per_coefficient)),
        None,
    )
}

/// Each coefficient's scale `s_j` (1 for the intercept) of a study whose features were divided
/// by `scales`.
pub(super) fn coefficient_scales(scales: &[f64], intercept: bool) -> ndarray::Array1<f64> {
    let mut out = Vec::with_capacity(scales.len() + 1);
    if intercept {
        out.push(1.0);
    }
    out.extend_from_slice(scales);
    ndarray::Array1::from(out)
}

/// The options of a study fitted on features divided by `scales`: the penalty weighed by
/// `1/s_j^2` and its centre multiplied by `s_j` (the raw penalty `lambda/2 sum (b_j -
/// centre_j)^2` in the fitted coefficients `c_j = s_j b_j`). A DP release scales its rows to
/// norm 1 instead and never gets here.
pub(super) fn raw_penalty(
    options: FitOptions,
    scales: &[f64],
    plan: &StudyPlan,
) -> Result<FitOptions, SecureError> {
    if plan.release.is_some() {
        // Its rows are scaled to norm 1 instead (see the setup): never both.
        return Err(SecureError::inconsistent(
            "a differentially private study's features scaled by powers of two",
        ));
    }
    let s = coefficient_scales(scales, plan.intercept);
    let weights = s.mapv(|v| 1.0 / (v * v));
    let centre = options.centre.as_ref().map(|c| c * &s);
    Ok(options
        .penalty_weights(Some(weights))
        .penalty_centre(centre))
}

/// A fit on scaled features, its coefficients turned back into raw units (`b_j = c_j / s_j`).
pub(super) fn in_raw_units(mut fit: FitReport, s: &ndarray::Array1<f64>) -> FitReport {
    fit.beta = &fit.beta / s;
    fit
}

/// Reads every Node's `Join` (its feature names) and checks the columns agree with Node 1's (or
/// with `expected`, a resumed study's): the features.
fn join_names<C: Channel>(
    nodes: &mut [C],
    expected: Option<&[String]>,
) -> Result<Vec<String>, SecureError> {
    let mut names: Option<Vec<String>> = None;
    for (i, node) in nodes.iter_mut().enumerate() {
        let context = io_at_node(Role::Aggregator, "waiting for the join of", i + 1);
        let (step, join) =
            wire::recv(node, HANDSHAKE, &[Step::Join, Step::VerticalJoin]).map_err(&context)?;
        if step != Step::Join {
            return Err(SecureError::node_violation(
                i + 1,
                Breach::WrongMode {
                    vertical_study: false,
                },
            ));
        }
        let mut r = Reader::new(&join);
        let count = r.u64().map_err(&context)?;
        if count as usize > super::MAX_DIMENSION {
            return Err(SecureError::node_violation(
                i + 1,
                Breach::TooMany {
                    what: "columns declared",
                    count,
                    limit: super::MAX_DIMENSION as u64,
                },
            ));
        }
        let these = (0..count)
            .map(|_| r.string())
            .collect::<Result<Vec<_>, _>>()
            .map_err(&context)?;
        r.end().map_err(&context)?;
        match (&names, expected) {
            (None, Some(f)) => check_columns(f, &these, i + 1)?,
            (Some(first), _) => check_columns(first, &these, i + 1)?,
            (None, None) => {}
        }
        if names.is_none() {
            names = Some(these);
        }
    }
    Ok(names.unwrap_or_default())
}

/// Stops the study on every connection of this party, telling the peers `error` (one channel
/// suffices: a network party's connections stop together; memory channels ignore it).
pub(super) fn abort_all<C: Channel>(channels: &[C], error: &dyn std::fmt::Display) {
    if let Some(first) = channels.first() {
        first.abort(&error.to_string());
    }
}

/// Sends the key holder the study's `Setup` (the parameters, the key size, what it will be asked
/// to decrypt, the resumed key's digest) and reads its answer: the public key, refused below
/// the plan's size, and the key holder's endorsement of it.
pub(super) fn setup_keyholder<C: Channel>(
    keyholder: &mut C,
    config: &SecureConfig,
    plan: &StudyPlan,
    standardize: bool,
    resumed_key: Option<&[u8]>,
    resumable: bool,
) -> Result<(PublicKey, Endorsement), SecureError> {
    let setup = write_parameters(config, plan.intercept, plan.release)
        .u64(u64::from(plan.key_bits))
        .u64(u64::from(plan.protocol == Protocol::Local))
        .u64(u64::from(standardize))
        .u64(plan.options.stopping.max_iterations as u64)
        .bytes(resumed_key.unwrap_or_default())
        .u64(u64::from(resumable))
        .finish();
    wire::send(keyholder, HANDSHAKE, Step::Setup, &setup)
        .map_err(io_at(Role::Aggregator, "setting up the key holder"))?;
    let (_, reply) = wire::recv(keyholder, HANDSHAKE, &[Step::PublicKey])
        .map_err(io_at(Role::Aggregator, "waiting for the public key"))?;
    let mut r = Reader::new(&reply);
    let key_bytes = r
        .bytes()
        .map_err(io_at(Role::Aggregator, "reading the key"))?;
    let endorsement =
        read_endorsement(&mut r).map_err(io_at(Role::Aggregator, "reading the key"))?;
    r.end()
        .map_err(io_at(Role::Aggregator, "reading the key"))?;
    let key = parse_key(key_bytes, plan.key_bits, Role::Aggregator)?;
    Ok((key, endorsement))
}

/// Whether a fit stopped at a pivot below its threshold.
fn is_singular(e: &FitError) -> bool {
    matches!(e, FitError::Aggregation(inner)
        if matches!(inner.downcast_ref::<SecureError>(), Some(SecureError::Singular { .. })))
}

/// A singular pivot's column named (the aggregation knows positions only).
fn name_singular(e: FitError, names: &[String]) -> FitError {
    match e {
        FitError::Aggregation(inner) => match inner.downcast::<SecureError>() {
            Ok(secure) => match *secure {
                SecureError::Singular { column, .. } => {
                    FitError::Aggregation(Box::new(SecureError::Singular {
                        column,
                        name: names.get(column).cloned(),
                    }))
                }
                other => FitError::Aggregation(Box::new(other)),
            },
            Err(inner) => FitError::Aggregation(inner),
        },
        other => other,
    }
}

/// The optimiser's options in a secure PLR study: the penalty `N (lambda + Delta)` (a plan's
/// centre `c`, weighted `N lambda`, becomes `N lambda c / penalty` of the merged penalty: the
/// two quadratics differ by a constant), and the gradient-norm rule alone (the objective's
/// change can stop short of the minimiser the guarantee needs).
fn release_options(
    options: &FitOptions,
    release: &Release,
    rows: usize,
    penalty: f64,
) -> FitOptions {
    let mut out = options.clone();
    out.lambda = penalty;
    out.centre = options
        .centre
        .as_ref()
        .map(|c| c * (rows as f64 * release.lambda / penalty));
    out.stopping.relative_tolerance = 0.0;
    out.stopping.gradient_tolerance = Some(
        options
            .stopping
            .gradient_tolerance
            .unwrap_or_else(|| perturbation::default_gradient_tolerance(penalty)),
    );
    out
}

/// Refuses a Node whose feature names differ from Node 1's, naming the first difference.
fn check_columns(first: &[String], these: &[String], node: usize) -> Result<(), SecureError> {
    let differs = |k: usize| SecureError::ColumnsDiffer {
        node,
        column: k + 1,
        node1: first.get(k).cloned(),
        theirs: these.get(k).cloned(),
        counts: (first.len(), these.len()),
    };
    for (k, (a, b)) in first.iter().zip(these).enumerate() {
        if a != b {
            return Err(differs(k));
        }
    }
    if first.len() != these.len() {
        return Err(differs(first.len().min(these.len())));
    }
    Ok(())
}

pub(super) fn write_endorsement(w: Writer, e: &Endorsement) -> Writer {
    w.bytes(&e.certificate).bytes(&e.signature)
}

pub(super) fn read_endorsement(r: &mut Reader<'_>) -> std::io::Result<Endorsement> {
    Ok(Endorsement {
        certificate: r.bytes()?.to_vec(),
        signature: r.bytes()?.to_vec(),
    })
}

/// Whether a plan fits a Poisson model with an intercept from the zero vector.
fn poisson_from_zero(plan: &StudyPlan) -> bool {
    // Its sums are what the inference reveals; a study that reveals the coefficients only
    // starts at zero instead.
    plan.glm.family == crate::objective::Family::Poisson
        && plan.intercept
        && plan.options.initial == Initial::Zeros
        && plan.reveal != Reveal::Coefficients
}

/// The start of a Poisson fit of `d` coefficients (intercept first): the null model's intercept
/// from the sums of [`crate::objective::Family::null_terms`], every other coefficient 0.
pub fn poisson_start(
    constants: [f64; crate::objective::CONSTANT_SUMS],
    d: usize,
) -> ndarray::Array1<f64> {
    let mut start = ndarray::Array1::zeros(d);
    let (exposure, counts) = (constants[0], constants[1]);
    if exposure > 0.0 && counts > 0.0 {
        start[0] = (counts / exposure).ln();
    }
    start
}

/// A model as one number on the wire and in the plan digest: the family's code, then a bit each
/// for an offset and weights.
fn glm_code(glm: Glm) -> u64 {
    glm.family.code() | u64::from(glm.offset) << 8 | u64::from(glm.weights) << 9
}

fn glm_from_code(code: u64) -> Option<Glm> {
    Some(Glm {
        family: crate::objective::Family::from_code(code & 0xff)?,
        offset: code & (1 << 8) != 0,
        weights: code & (1 << 9) != 0,
    })
    .filter(|_| code >> 10 == 0)
}

fn describe_glm(glm: Glm) -> String {
    format!(
        "{}{}{}",
        glm.family,
        if glm.offset { ", an offset" } else { "" },
        if glm.weights { ", weights" } else { "" }
    )
}

pub(super) fn write_parameters(
    config: &SecureConfig,
    intercept: bool,
    release: Option<Release>,
) -> Writer {
    let w = Writer::new()
        .u64(config.session)
        .u64(config.parties as u64)
        .u64(config.dimension as u64)
        .u64(u64::from(config.format.width()))
        .u64(u64::from(config.format.frac()))
        .u64(u64::from(config.frac))
        .u64(u64::from(intercept))
        .u64(u64::from(config.packed_gradient));
    Release::write(w, release)
}

#[allow(clippy::type_complexity)]
pub(super) fn read_parameters(
    r: &mut Reader<'_>,
) -> std::io::Result<(SecureConfig, bool, Option<Release>)> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let session = r.u64()?;
    let parties = r.u64()? as usize;
    let dimension = r.u64()? as usize;
    let width = u32::try_from(r.u64()?).map_err(|_| bad("format width"))?;
    let frac = u32::try_from(r.u64()?).map_err(|_| bad("format fraction"))?;
    let paillier_frac = u32::try_from(r.u64()?).map_err(|_| bad("Paillier fraction"))?;
    let intercept = r.u64()? == 1;
    let packed_gradient = r.u64()? == 1;
    let release = Release::read(r)?;
    let format = FixedFormat::new(width, frac).map_err(|_| bad("fixed-point format"))?;
    if parties == 0 || parties > 10_000 || dimension == 0 || dimension > super::MAX_DIMENSION {
        return Err(bad("study parameters out of range"));
    }
    if paillier_frac != frac && paillier_frac != super::PAILLIER_FRAC {
        return Err(bad(
            "Paillier fractional bits neither the format's nor the masked method's",
        ));
    }
    let config = SecureConfig::new(session, parties, dimension, format)
        .with_frac(paillier_frac)
        .with_packed_gradient(packed_gradient);
    let config = match release {
        Some(_) => config.with_noise_term(),
        None => config,
    };
    Ok((config, intercept, release))
}
