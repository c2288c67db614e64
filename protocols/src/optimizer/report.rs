//! What a fit returns: the coefficients, how it ended and the path it took.

use ndarray::Array1;

use super::Optimizer;

/// How a fit ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// A stopping criterion was met.
    Converged,
    /// The iteration cap was reached first.
    MaxIterations,
    /// The iteration was abandoned because it diverged (Newton only).
    Diverged(DivergenceReason),
}

/// Why a Newton run was declared divergent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DivergenceReason {
    /// The step or the new coefficients were not finite.
    NonFinite,
    /// The penalised objective fell: Newton without a line search lost its footing.
    ObjectiveDecreased,
    /// `X^T A X + lambda I` was not positive definite to working precision.
    HessianNotPositiveDefinite,
}

impl Status {
    /// Short machine-friendly name: `converged`, `max_iterations` or `diverged`.
    pub fn name(&self) -> &'static str {
        match self {
            Status::Converged => "converged",
            Status::MaxIterations => "max_iterations",
            Status::Diverged(_) => "diverged",
        }
    }
}

impl DivergenceReason {
    /// A sentence for users.
    pub fn describe(&self) -> &'static str {
        match self {
            DivergenceReason::NonFinite => "the coefficients became non-finite",
            DivergenceReason::ObjectiveDecreased => "the penalised log-likelihood decreased",
            DivergenceReason::HessianNotPositiveDefinite => {
                "the Hessian was not positive definite to working precision"
            }
        }
    }
}

/// Which update produced an iterate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// A Newton step (eq. 2.11).
    Newton,
    /// A plain PrivLogit step with the constant bound (eq. 5.6).
    Bound,
    /// An accepted Anderson-extrapolated step.
    Accelerated,
}

/// One update as seen after it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct IterationRecord {
    /// 1-based iteration number.
    pub iteration: usize,
    /// Coefficients after the update (public in the secure protocols too).
    pub beta: Array1<f64>,
    /// Penalised objective at `beta`, when the backend may show it.
    pub objective: Option<f64>,
    /// `|l_k - l_{k-1}| / |l_{k-1}|`, when the backend may show the objective.
    pub relative_change: Option<f64>,
    /// Which update produced `beta`.
    pub step: StepKind,
    /// Aggregation rounds used so far, setup included.
    pub rounds: usize,
}

/// The outcome of a fit.
#[derive(Debug, Clone, PartialEq)]
pub struct FitReport {
    /// The optimiser that ran.
    pub optimizer: Optimizer,
    /// Final coefficients (the last iterate; for a diverged run, the last one computed).
    pub beta: Array1<f64>,
    /// Number of updates performed.
    pub iterations: usize,
    /// Aggregation rounds: every time the Nodes were asked for data, setup included.
    pub rounds: usize,
    /// How the fit ended.
    pub status: Status,
    /// Penalised objective at `beta`, when the backend may show it.
    pub objective: Option<f64>,
    /// Penalised objective at the starting point, when the backend may show it.
    pub initial_objective: Option<f64>,
    /// Accepted extrapolated steps (accelerated PrivLogit only).
    pub accelerated_steps: usize,
    /// Extrapolated candidates evaluated and rejected by the safeguard; each cost one round.
    pub rejected_candidates: usize,
    /// Steps taken with a Newton system: every step of Newton's method, and those of
    /// accelerated PrivLogit's finish ([`crate::optimizer::finish`]).
    pub newton_steps: usize,
    /// Every iterate, in order.
    pub history: Vec<IterationRecord>,
}

impl FitReport {
    /// True when a stopping criterion was met.
    pub fn converged(&self) -> bool {
        self.status == Status::Converged
    }

    /// How the fit ended, as a line a front end prints when it did not converge (the same
    /// words for a plaintext fit and a secure study).
    pub fn ending_note(&self) -> Option<String> {
        match self.status {
            Status::Diverged(reason) => {
                let hint = match reason {
                    DivergenceReason::HessianNotPositiveDefinite => "",
                    _ => "; PrivLogit converges from any start",
                };
                Some(format!(
                    "error: {} diverged at iteration {}: {}{hint}",
                    self.optimizer,
                    self.iterations,
                    reason.describe()
                ))
            }
            Status::MaxIterations => Some(format!(
                "warning: stopped after {} iterations without meeting the stopping rule (raise \
                 setting `max_iter`)",
                self.iterations
            )),
            Status::Converged => None,
        }
    }
}

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
        progress: &super::Progress,
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
    ) -> super::Progress {
        super::Progress {
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
