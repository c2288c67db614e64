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

/// Why training cannot start or could not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DlError {
    /// A setting is out of range.
    #[error("invalid {name} = {value}: {reason}")]
    Setting {
        /// The setting.
        name: &'static str,
        /// Its value, as given.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// The configured iterations would spend more than the budget.
    #[error("{0}")]
    Budget(String),
    /// A participant failed, or its message was refused.
    #[error("participant {participant}: {reason}")]
    Participant {
        /// The participant's name.
        participant: String,
        /// What happened, with the protocol step.
        reason: String,
    },
    /// The server failed, or its message was refused (a participant's view).
    #[error("server: {0}")]
    Server(String),
}

impl DlError {
    pub(crate) fn setting(name: &'static str, value: impl ToString, reason: &str) -> Self {
        DlError::Setting {
            name,
            value: value.to_string(),
            reason: reason.to_string(),
        }
    }
}
