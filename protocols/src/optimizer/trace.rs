//! The bookkeeping every optimiser's loop shares: rounds counted, iterates recorded and shown
//! to the observer, and the report or checkpoint built from them.

use ndarray::Array1;

use super::fit_state::Progress;
use super::report::{FitReport, IterationRecord, Status, StepKind};
use super::update_rule::Optimizer;

/// Bookkeeping shared by the optimisers: counts rounds, records iterates, tells the observer.
pub(crate) struct Trace<'o> {
    history: Vec<IterationRecord>,
    rounds: usize,
    initial_objective: Option<f64>,
    last_objective: Option<f64>,
    observer: &'o mut dyn FnMut(&IterationRecord),
}

impl<'o> Trace<'o> {
    pub(crate) fn new(observer: &'o mut dyn FnMut(&IterationRecord)) -> Self {
        Self {
            history: Vec::new(),
            rounds: 0,
            initial_objective: None,
            last_objective: None,
            observer,
        }
    }

    /// A trace that goes on from `progress` (a checkpoint): its history, rounds and first
    /// objective.
    pub(crate) fn resume(
        observer: &'o mut dyn FnMut(&IterationRecord),
        progress: &Progress,
    ) -> Self {
        let last_objective = progress
            .history
            .last()
            .map_or(progress.initial_objective, |r| r.objective);
        Self {
            history: progress.history.clone(),
            rounds: progress.rounds,
            initial_objective: progress.initial_objective,
            last_objective,
            observer,
        }
    }

    /// Where the fit stands with coefficients `beta`, the accelerated optimiser's `window`
    /// and `rejected` candidates so far.
    pub(crate) fn progress(
        &self,
        beta: &Array1<f64>,
        window: Vec<(Array1<f64>, Array1<f64>)>,
        rejected: usize,
    ) -> Progress {
        Progress {
            beta: beta.clone(),
            history: self.history.clone(),
            rounds: self.rounds,
            initial_objective: self.initial_objective,
            window,
            rejected,
        }
    }

    /// Counts one aggregation round.
    pub(crate) fn round(&mut self) {
        self.rounds += 1;
    }

    /// Remembers the objective at the starting point, for the first relative change.
    pub(crate) fn start(&mut self, objective: Option<f64>) {
        self.initial_objective = objective;
        self.last_objective = objective;
    }

    /// Records the iterate produced by update number `history.len() + 1`.
    pub(crate) fn record(&mut self, beta: &Array1<f64>, objective: Option<f64>, step: StepKind) {
        let relative_change = match (self.last_objective, objective) {
            (Some(previous), Some(current)) => Some((current - previous).abs() / previous.abs()),
            _ => None,
        };
        let record = IterationRecord {
            iteration: self.history.len() + 1,
            beta: beta.clone(),
            objective,
            relative_change,
            step,
            rounds: self.rounds,
        };
        (self.observer)(&record);
        self.history.push(record);
        self.last_objective = objective;
    }

    pub(crate) fn iterations(&self) -> usize {
        self.history.len()
    }

    /// Closes the trace into a report.
    pub(crate) fn finish(
        self,
        optimizer: Optimizer,
        beta: Array1<f64>,
        status: Status,
    ) -> FitReport {
        let accelerated_steps = self
            .history
            .iter()
            .filter(|r| r.step == StepKind::Accelerated)
            .count();
        let newton_steps = self
            .history
            .iter()
            .filter(|r| r.step == StepKind::Newton)
            .count();
        FitReport {
            optimizer,
            beta,
            iterations: self.history.len(),
            rounds: self.rounds,
            status,
            objective: self.last_objective,
            initial_objective: self.initial_objective,
            accelerated_steps,
            rejected_candidates: 0,
            newton_steps,
            history: self.history,
        }
    }
}
