//! Distributed differentially private deep learning: DPSTGD (dissertation chapter 3,
//! Y. Wang, Multi-Party Privacy-Preserving Machine Learning and Its Applications, University of
//! Virginia, 2018; Algorithms 1-3).
//!
//! Participants train one network through a parameter server; each uploads, per step, only the
//! `n` gradient coordinates that Report-Noisy-Top-N picks, ternarized to `{-B, 0, B}`.
//!
//! - [`network`]: the model of section 3.4.2 (two hidden layers of 50 and 20 units, a
//!   two-class softmax output) with per-example gradients;
//! - [`rntn`]: Report-Noisy-Top-N (Algorithm 3) and the ternarization of eq. (3.6);
//! - [`participant`]: Algorithm 2 on one participant's rows (sampling, clipping, selection);
//! - [`upload`]: what a participant sends, and its length-checked encoding;
//! - [`download`]: what the server sends back: the parameters, or the uploads since a visit;
//! - [`server`]: Algorithm 1 (round-robin updates) over any [`server::Participant`];
//! - [`sparse`]: the sparse Gaussian mechanism, a sound variant with small uploads;
//! - [`budget`]: the privacy spent per iteration and in total (Theorem 3.3.2 and a sound bound);
//! - [`remote`]: participants as separate processes over the project's transport;
//! - [`experiment`]: Figures 3.3-3.6 on a public substitute for the paper's card data.

pub mod budget;
pub mod download;
pub mod network;
pub mod participant;
pub mod remote;
pub mod rntn;
pub mod server;
pub mod sparse;
pub mod upload;

/// The defaults of DPSTGD's settings, for the command line (`privlogit dl`) and Python
/// (`privlogit.dp.dpstgd`) alike.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Defaults {
    /// Minibatch sampling ratio q.
    pub q: f64,
    /// Share of the gradient coordinates uploaded per step.
    pub upload_ratio: f64,
    /// Iterations T.
    pub iterations: u64,
    /// Clipping bound B.
    pub bound: f64,
    /// Learning rate r of eq. (3.1).
    pub learning_rate: f64,
    /// Hidden layer widths.
    pub hidden: [usize; 2],
    /// The delta allowed (0: pure differential privacy).
    pub delta: f64,
    /// How the spend is composed (`sound`, or `dissertation` for Theorem 3.3.2 as printed).
    pub accounting: &'static str,
}

/// DPSTGD's defaults (the dissertation's experiment's settings, chapter 3.4).
pub const DEFAULTS: Defaults = Defaults {
    q: 0.01,
    upload_ratio: 0.1,
    iterations: 100,
    bound: 0.01,
    learning_rate: 0.1,
    hidden: [50, 20],
    delta: 0.0,
    accounting: "sound",
};

/// The sparse Gaussian mechanism's defaults where they differ from DPSTGD's (chosen on the
/// tuning split of the Opacus side by side, `benches/opacus_dl.py`; the book's performance
/// chapter has the figures).
pub const SPARSE_DEFAULTS: SparseDefaults = SparseDefaults {
    q: 0.2,
    bound: 1.0,
    learning_rate: 0.5,
    delta: 1e-5,
    iterations_per_epsilon: 40.0,
    iterations_range: (100, 600),
};

/// The sparse Gaussian mechanism's own defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SparseDefaults {
    /// Minibatch sampling ratio q.
    pub q: f64,
    /// Clipping norm `C` of an example's uploaded part.
    pub bound: f64,
    /// Learning rate.
    pub learning_rate: f64,
    /// delta of each participant's budget (Opacus' and dp-accounting's usual figure; below one
    /// over the rows of any participant of up to 100,000).
    pub delta: f64,
    /// Iterations per unit of epsilon, when not given: a larger budget buys more steps at a
    /// noise the steps survive (the tuning's best at q 0.2: 100 at epsilon 1 and 3, 300 at 8).
    pub iterations_per_epsilon: f64,
    /// The least and most iterations that rule gives.
    pub iterations_range: (u64, u64),
}

/// The sparse Gaussian mechanism's iterations when none are given: 40 per unit of epsilon,
/// within 100..=600 (without noise, 600).
pub fn sparse_iterations(epsilon: Option<f64>) -> u64 {
    let d = SPARSE_DEFAULTS;
    let (lo, hi) = d.iterations_range;
    match epsilon {
        Some(e) if e.is_finite() && e > 0.0 => {
            ((d.iterations_per_epsilon * e).round() as u64).clamp(lo, hi)
        }
        _ => hi,
    }
}

/// Why training cannot start or could not finish. Each reason is typed (numbers, names, the
/// error underneath) so that a caller can match on it rather than read a sentence.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DlError {
    /// A setting is out of range.
    #[error("invalid {name} = {value}: {reason}")]
    Setting {
        /// The setting.
        name: &'static str,
        /// Its value, as given.
        value: SettingValue,
        /// Why it is refused.
        reason: SettingReason,
    },
    /// The configured iterations would spend more than the budget.
    #[error("{0}")]
    Budget(BudgetProblem),
    /// A participant failed, or its message was refused.
    #[error("participant {participant}: {reason}")]
    Participant {
        /// The participant's name.
        participant: String,
        /// What happened, with the protocol step.
        reason: ParticipantProblem,
    },
    /// The server failed, or its message was refused (a participant's view).
    #[error("server: {0}")]
    Server(ServerProblem),
}

impl DlError {
    /// True when a party or the network failed (a link lost, aborted or timed out, a peer
    /// refused at the transport): what the command line exits 5 for, as a study does.
    pub fn is_network(&self) -> bool {
        use privlogit_protocols::transport::TransportError;
        let lost = |e: &std::io::Error| TransportError::of(e).is_some();
        match self {
            DlError::Participant { reason, .. } => match reason {
                ParticipantProblem::Joining(e)
                | ParticipantProblem::Welcoming(e)
                | ParticipantProblem::Finishing(e)
                | ParticipantProblem::Link { source: e, .. } => lost(e),
                ParticipantProblem::Training(inner) => inner.is_network(),
                _ => false,
            },
            DlError::Server(
                ServerProblem::Link { source, .. } | ServerProblem::Reply { source, .. },
            ) => lost(source),
            _ => false,
        }
    }

    pub(crate) fn setting(
        name: &'static str,
        value: impl Into<SettingValue>,
        reason: impl Into<SettingReason>,
    ) -> Self {
        DlError::Setting {
            name,
            value: value.into(),
            reason: reason.into(),
        }
    }
}

/// A refused setting's value, kept as data of its own kind.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SettingValue {
    /// A real number.
    Number(f64),
    /// A count or a size.
    Count(usize),
    /// A named choice.
    Word(&'static str),
    /// Layer widths.
    Sizes(Vec<usize>),
}

impl std::fmt::Display for SettingValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingValue::Number(v) => write!(f, "{v}"),
            SettingValue::Count(n) => write!(f, "{n}"),
            SettingValue::Word(w) => f.write_str(w),
            SettingValue::Sizes(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<f64> for SettingValue {
    fn from(v: f64) -> Self {
        SettingValue::Number(v)
    }
}

impl From<usize> for SettingValue {
    fn from(n: usize) -> Self {
        SettingValue::Count(n)
    }
}

impl From<&'static str> for SettingValue {
    fn from(w: &'static str) -> Self {
        SettingValue::Word(w)
    }
}

impl From<Vec<usize>> for SettingValue {
    fn from(s: Vec<usize>) -> Self {
        SettingValue::Sizes(s)
    }
}

/// Why a setting is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingReason {
    /// A fixed rule ("must be positive and finite").
    #[error("{0}")]
    Rule(&'static str),
    /// A network past the size allowed.
    #[error("more than {most} parameters")]
    TooManyParameters {
        /// The most parameters allowed.
        most: usize,
    },
    /// Parameters of another count than the network's.
    #[error("the network {sizes:?} has {count} parameters")]
    ParameterCount {
        /// The network's layer sizes.
        sizes: Vec<usize>,
        /// Its parameter count.
        count: usize,
    },
    /// Rows of another width than the network's input.
    #[error("the network reads {inputs}")]
    Inputs {
        /// The network's inputs.
        inputs: usize,
    },
    /// More coordinates asked than there are.
    #[error("cannot select more than the {coordinates} coordinates")]
    Selection {
        /// The coordinates there are.
        coordinates: usize,
    },
    /// The noise could not be drawn at this setting.
    #[error("{0}")]
    Noise(#[source] crate::dp::DpError),
}

impl From<&'static str> for SettingReason {
    fn from(rule: &'static str) -> Self {
        SettingReason::Rule(rule)
    }
}

/// Why a run's privacy spend is refused or cannot be worked out.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetProblem {
    /// The accountant refused its inputs.
    #[error("cannot account for this run: {0}")]
    Accounting(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A run without noise: no budget covers it.
    #[error("a run without noise is not differentially private: no budget covers it")]
    NotPrivate,
    /// The dissertation's accounting asked for without acknowledging it is unsound.
    #[error(
        "the dissertation's accounting (Theorem 3.3.2) is not a privacy bound: this run \
         spends epsilon {dissertation:.4} by it but {sound:.4} soundly (delta {delta:.1e}); \
         decide by the sound figure, or acknowledge the unsound one explicitly (setting \
         `accept_unsound_accounting`; Python: accept_unsound_accounting=True)"
    )]
    Unsound {
        /// Epsilon by Theorem 3.3.2.
        dissertation: f64,
        /// Epsilon by the sound bound.
        sound: f64,
        /// Its delta.
        delta: f64,
    },
    /// More iterations than the budget affords.
    #[error(
        "{iterations} iterations would spend epsilon {epsilon:.4} (delta {delta:.1e}, \
         {accounting} accounting; {per:.4} per iteration), past the budget {budget}: at most \
         {affordable} iterations fit"
    )]
    OverBudget {
        /// Iterations configured.
        iterations: u64,
        /// Epsilon they spend.
        epsilon: f64,
        /// Its delta.
        delta: f64,
        /// The accounting (`sound` or `dissertation`).
        accounting: &'static str,
        /// Epsilon per iteration.
        per: f64,
        /// The budget.
        budget: f64,
        /// The iterations that fit.
        affordable: u64,
    },
    /// The sparse mechanism's iterations spend more than the budget.
    #[error(
        "{iterations} iterations would spend epsilon {epsilon:.4} (delta {delta:.1e}), past \
         the budget {budget}"
    )]
    Exceeded {
        /// Iterations configured.
        iterations: u64,
        /// Epsilon they spend.
        epsilon: f64,
        /// Its delta.
        delta: f64,
        /// The budget.
        budget: f64,
    },
    /// No noise multiplier keeps the run within epsilon.
    #[error(
        "no noise multiplier up to 1e6 keeps {iterations} iterations at q {q} within epsilon \
         {epsilon} (delta {delta:e})"
    )]
    NoMultiplier {
        /// Iterations configured.
        iterations: u64,
        /// Sampling ratio.
        q: f64,
        /// The budget's epsilon.
        epsilon: f64,
        /// Its delta.
        delta: f64,
    },
    /// A participant refuses a run planned without noise; `remedy` is the front end's way to
    /// take part anyway (the library names no command-line flag).
    #[error(
        "this participant refuses the run: the server plans it without noise (not private); \
         {remedy}"
    )]
    RefusedNonPrivate {
        /// How to take part anyway, in the front end's words.
        remedy: &'static str,
    },
    /// A participant refuses the run: its own budget or ledger says no.
    #[error("this participant refuses the run: {0}")]
    Refused(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What went wrong with one participant, with the protocol step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParticipantProblem {
    /// Its join could not be read.
    #[error("joining: {0}")]
    Joining(#[source] std::io::Error),
    /// It joined with another number of features than the network reads.
    #[error("joining: it has {features} features, the network reads {network}")]
    Features {
        /// Its features.
        features: usize,
        /// The network's inputs.
        network: usize,
    },
    /// The welcome could not be sent.
    #[error("welcoming: {0}")]
    Welcoming(#[source] std::io::Error),
    /// The link failed during an iteration.
    #[error("iteration {iteration}, {step}: {source}")]
    Link {
        /// The iteration.
        iteration: u64,
        /// The protocol step.
        step: &'static str,
        /// The transport's error.
        #[source]
        source: std::io::Error,
    },
    /// Its upload does not decode (the decoder's reason).
    #[error("iteration {iteration}, reading its upload: {reason}")]
    Upload {
        /// The iteration.
        iteration: u64,
        /// Why it does not decode.
        reason: String,
    },
    /// The final parameters could not be sent.
    #[error("sending the final parameters: {0}")]
    Finishing(#[source] std::io::Error),
    /// An upload for a network of another size.
    #[error("iteration {iteration}: an upload for {got} parameters, the network has {dim}")]
    UploadSize {
        /// The iteration.
        iteration: u64,
        /// The upload's parameters.
        got: usize,
        /// The network's.
        dim: usize,
    },
    /// An upload of another kind or length than the plan allows.
    #[error(
        "iteration {iteration}: an upload of {len} {kind} coordinates, the plan allows at most \
         {limit} {expected}"
    )]
    UploadKind {
        /// The iteration.
        iteration: u64,
        /// Coordinates uploaded.
        len: usize,
        /// Their kind.
        kind: &'static str,
        /// The most allowed.
        limit: usize,
        /// The kind the plan asks for.
        expected: &'static str,
    },
    /// Its training could not start or failed.
    #[error("{0}")]
    Training(#[source] Box<DlError>),
}

/// What went wrong with the server, as a participant sees it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerProblem {
    /// The link failed at a protocol step.
    #[error("{step}: {source}")]
    Link {
        /// The protocol step.
        step: &'static str,
        /// The transport's error.
        #[source]
        source: std::io::Error,
    },
    /// The upload of an iteration could not be sent.
    #[error("iteration {iteration}, sending the upload: {source}")]
    Reply {
        /// The iteration.
        iteration: u64,
        /// The transport's error.
        #[source]
        source: std::io::Error,
    },
    /// The welcome does not decode (the decoder's reason).
    #[error("reading the welcome: {0}")]
    Welcome(String),
    /// Final parameters of another count than the network's.
    #[error("the final parameters: {got} values for {dim} parameters")]
    FinalParameters {
        /// Values sent.
        got: usize,
        /// The network's parameters.
        dim: usize,
    },
    /// Uploads to replay before any parameters, or in a run without grid uploads.
    #[error(
        "iteration {iteration}: uploads to replay before any parameters (or in a run without \
         grid uploads)"
    )]
    ReplayFirst {
        /// The iteration.
        iteration: u64,
    },
    /// A message of a kind the protocol does not have.
    #[error("iteration {iteration}: a message of unknown kind {kind}")]
    UnknownKind {
        /// The iteration.
        iteration: u64,
        /// The kind read.
        kind: u64,
    },
    /// An upload asked out of turn or past the agreed iterations.
    #[error(
        "iteration {iteration}: asked for an upload out of turn (expected iteration {expected} \
         of the {agreed} agreed): refused, the budget covers no more"
    )]
    OutOfTurn {
        /// The iteration asked.
        iteration: u64,
        /// The iteration due.
        expected: u64,
        /// The iterations agreed.
        agreed: u64,
    },
    /// Parameters of another count than the network's, or not finite.
    #[error("iteration {iteration}: {got} parameters (not all finite?) for a network of {dim}")]
    Parameters {
        /// The iteration.
        iteration: u64,
        /// Values sent.
        got: usize,
        /// The network's parameters.
        dim: usize,
    },
    /// An upload to replay does not decode (the decoder's reason).
    #[error("replaying the uploads: {0}")]
    ReplayUpload(String),
    /// An upload to replay of another kind or length than the plan's.
    #[error(
        "replaying the uploads: an upload of {len} {kind} coordinates, the plan's are {n} grid \
         counts"
    )]
    ReplayKind {
        /// Coordinates of the upload.
        len: usize,
        /// Their kind.
        kind: &'static str,
        /// The plan's grid counts.
        n: usize,
    },
    /// The replayed parameters differ from the server's.
    #[error(
        "replaying the uploads: the parameters differ from the server's (checksum {got:016x}, \
         the server's {expected:016x})"
    )]
    Checksum {
        /// The checksum here.
        got: u64,
        /// The server's.
        expected: u64,
    },
}
