//! Which update rule a fit iterates, by name: the [`Optimizer`] choice itself, parsed and
//! printed for the command line and checked before a fit (the fit itself is in
//! [`super::fit_entry`]).

use std::fmt;
use std::str::FromStr;

use super::options::FitError;

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
