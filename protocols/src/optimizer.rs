//! The optimisers of l2-regularised logistic regression (dissertation eq. 2.10), each written
//! once against [`Aggregation`] so the plaintext and the secure runs execute the same updates:
//!
//! - [`Optimizer::Newton`]: `beta <- beta - H(beta)^{-1} g(beta)` (eq. 2.11-2.13), the baseline;
//! - [`Optimizer::PrivLogit`]: `beta <- beta - H~^{-1} g(beta)` with the constant bound
//!   `H~ = -1/4 X^T X - lambda I` factored once (eq. 5.3-5.6, Proposition 1);
//! - [`Optimizer::AcceleratedPrivLogit`]: Anderson extrapolation of the PrivLogit map with a
//!   monotone safeguard ([`privlogit`] module docs), and Newton's finish where the bound makes
//!   it crawl ([`finish`]).

mod anderson;
pub mod finish;
mod fit_state;
mod newton;
mod options;
mod privlogit;
mod report;

pub use crate::stopping::StoppingRule;
pub use fit_state::{Checkpoints, Progress, SaveProgress};
use options::backend;
pub use options::{FitError, FitOptions, Initial};
pub use privlogit::ACCEPTANCE_SLACK;
use report::Trace;
pub use report::{DivergenceReason, FitReport, IterationRecord, Status, StepKind};

use std::fmt;
use std::str::FromStr;

use crate::aggregation::Aggregation;

/// Default Anderson memory (number of past iterate differences) of the accelerated optimiser.
pub const DEFAULT_ANDERSON_MEMORY: usize = 5;

/// Which update rule to iterate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimizer {
    /// Newton's method (eq. 2.11): fast locally, but may diverge from a poor start.
    Newton,
    /// PrivLogit (eq. 5.4-5.6): monotone and globally convergent at a linear rate.
    PrivLogit,
    /// PrivLogit with safeguarded Anderson acceleration over `memory` past iterates.
    AcceleratedPrivLogit {
        /// How many past iterate differences the extrapolation uses (at least 1).
        memory: usize,
    },
}

impl Optimizer {
    /// The name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Optimizer::Newton => "newton",
            Optimizer::PrivLogit => "privlogit",
            Optimizer::AcceleratedPrivLogit { .. } => "privlogit-accel",
        }
    }

    /// Checks the optimiser's own parameters (the Anderson memory).
    pub fn validate(&self) -> Result<(), FitError> {
        match self {
            Optimizer::AcceleratedPrivLogit { memory: 0 } => Err(FitError::InvalidParameter {
                name: "memory",
                value: 0.0,
                reason: "must be at least 1",
            }),
            _ => Ok(()),
        }
    }

    /// Runs the optimiser over `aggregation`, calling `observer` after every iteration.
    pub fn fit<A: Aggregation>(
        &self,
        aggregation: &mut A,
        options: &FitOptions,
        observer: &mut dyn FnMut(&IterationRecord),
    ) -> Result<FitReport, FitError> {
        self.fit_with_checkpoints(aggregation, options, observer, Checkpoints::default())
    }

    /// [`Self::fit`] that continues from `checkpoints.from` (when given) and hands its
    /// progress to `checkpoints.save` after the setup and after every iteration that does not
    /// end the fit. A continued fit takes the same steps as an uninterrupted one.
    pub fn fit_with_checkpoints<A: Aggregation>(
        &self,
        aggregation: &mut A,
        options: &FitOptions,
        observer: &mut dyn FnMut(&IterationRecord),
        mut checkpoints: Checkpoints<'_>,
    ) -> Result<FitReport, FitError> {
        self.validate()?;
        options.validate()?;
        options.check_centre(aggregation.dimension())?;
        let beta = match &checkpoints.from {
            Some(p) => {
                if p.beta.len() != aggregation.dimension() {
                    return Err(FitError::Resume(format!(
                        "the saved coefficients have {} entries, the model {}",
                        p.beta.len(),
                        aggregation.dimension()
                    )));
                }
                if !p.window.is_empty() && !matches!(self, Optimizer::AcceleratedPrivLogit { .. }) {
                    return Err(FitError::Resume(format!(
                        "the saved progress belongs to accelerated PrivLogit, not {self}"
                    )));
                }
                p.beta.clone()
            }
            None => options.initial_beta(aggregation.dimension())?,
        };
        // Where the fit starts from, and its trace so far.
        let from = checkpoints.from.take();
        let trace = match &from {
            Some(p) => Trace::resume(observer, p),
            None => Trace::new(observer),
        };
        match *self {
            Optimizer::Newton => newton::fit(
                aggregation,
                options,
                beta,
                trace,
                from.is_some(),
                checkpoints,
            ),
            Optimizer::PrivLogit => privlogit::fit(
                aggregation,
                options,
                beta,
                None,
                trace,
                from.as_ref(),
                checkpoints,
            ),
            Optimizer::AcceleratedPrivLogit { memory } => privlogit::fit(
                aggregation,
                options,
                beta,
                Some(memory),
                trace,
                from.as_ref(),
                checkpoints,
            ),
        }
    }
}

impl fmt::Display for Optimizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Optimizer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "newton" => Ok(Optimizer::Newton),
            "privlogit" => Ok(Optimizer::PrivLogit),
            "privlogit-accel" => Ok(Optimizer::AcceleratedPrivLogit {
                memory: DEFAULT_ANDERSON_MEMORY,
            }),
            other => Err(format!(
                "unknown optimizer {other:?} (expected newton, privlogit or privlogit-accel)"
            )),
        }
    }
}
