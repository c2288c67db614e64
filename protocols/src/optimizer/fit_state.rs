//! Where a fit stands between iterations, so that it can be saved (a checkpoint) and continued
//! after a restart. Everything here is public in the secure protocols too: the coefficients,
//! the convergence history, the accelerated optimiser's window of past iterates and steps.
//! The encrypted gradient and objective are not kept: a continued fit evaluates them again at
//! the saved coefficients (one round), which gives the same sums.

use ndarray::Array1;

use super::options::FitError;
use super::report::IterationRecord;

/// A fit at the end of an iteration (or of its setup: no history yet; the default is a fit
/// not started).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Progress {
    /// The current coefficients.
    pub beta: Array1<f64>,
    /// Every iterate so far.
    pub history: Vec<IterationRecord>,
    /// Aggregation rounds so far.
    pub rounds: usize,
    /// The objective at the start, when the backend shows it.
    pub initial_objective: Option<f64>,
    /// Accelerated PrivLogit's window, `(x, step)` pairs oldest first (empty otherwise).
    pub window: Vec<(Array1<f64>, Array1<f64>)>,
    /// Extrapolated candidates rejected so far.
    pub rejected: usize,
}

impl Progress {
    /// Iterations done.
    pub fn iterations(&self) -> usize {
        self.history.len()
    }
}

/// Saves a fit's progress; an error stops the fit.
pub type SaveProgress<'a> =
    &'a mut dyn FnMut(&Progress) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// How a fit deals with checkpoints: where it starts from (`None`: the beginning) and what it
/// does with its progress after its setup and after every iteration that does not end it.
#[derive(Default)]
pub struct Checkpoints<'a> {
    /// Progress to continue from.
    pub from: Option<Progress>,
    /// Called with the progress to keep (`None`: nothing is kept).
    pub save: Option<SaveProgress<'a>>,
}

impl Checkpoints<'_> {
    /// Hands `progress` to the saver, if there is one.
    pub(crate) fn keep(&mut self, progress: impl FnOnce() -> Progress) -> Result<(), FitError> {
        match self.save.as_mut() {
            Some(save) => save(&progress()).map_err(FitError::Checkpoint),
            None => Ok(()),
        }
    }
}
