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
//! - [`server`]: Algorithm 1 (round-robin updates) over any [`server::Participant`];
//! - [`budget`]: the privacy spent per iteration and in total (Theorem 3.3.2 and a sound bound);
//! - [`remote`]: participants as separate processes over the project's transport;
//! - [`experiment`]: Figures 3.3-3.6 on a public substitute for the paper's card data.

pub mod budget;
pub mod network;
pub mod participant;
pub mod remote;
pub mod rntn;
pub mod server;
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
