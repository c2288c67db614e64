//! What a fit returns: the coefficients, how it ended and the path it took.

use ndarray::Array1;

use super::update_rule::Optimizer;

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
