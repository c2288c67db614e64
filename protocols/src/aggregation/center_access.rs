//! The [`Aggregation`] trait every backend implements and the optimisers call, with its round
//! result [`NewtonSystem`] and the plaintext decisions macro: kept apart from the module face so
//! backends import these definitions from a sibling instead of from their parent.

/// The revealed decisions of [`Aggregation`] (`increased`, `sufficient_increase`, `peek`) for a
/// backend that holds its sums in the clear (`Scalar = f64`, `Vector = Array1<f64>`): written
/// once, so that the plaintext backend and the optimisers' test aggregations decide alike.
macro_rules! plain_decisions {
    () => {
        fn increased(
            &mut self,
            candidate: &f64,
            base: &f64,
            slack: f64,
        ) -> Result<bool, Self::Error> {
            Ok(*candidate >= base - slack * base.abs())
        }

        fn sufficient_increase(
            &mut self,
            candidate: &f64,
            base: &f64,
            base_gradient: &::ndarray::Array1<f64>,
            step: &::ndarray::Array1<f64>,
            slack: f64,
        ) -> Result<bool, Self::Error> {
            let rows = self.sample_count() as f64;
            Ok(*candidate >= base + 0.5 * step.dot(base_gradient) - slack * rows)
        }

        fn peek(&self, value: &f64) -> Option<f64> {
            Some(*value)
        }
    };
}
pub(crate) use plain_decisions;

use ndarray::Array1;

use crate::penalty::Penalty;

use crate::stopping::StoppingRule;

/// The Center's access to the Nodes' pooled data, generic over how sums are formed.
///
/// Conventions: `beta` is public; `lambda >= 0` is the l2 penalty of eq. 2.10, added by the
/// Center to the sums; "gradient" means the penalised gradient `g(beta) = X^T (y - p) - lambda
/// beta` (eq. 2.12) and "objective" the penalised log-likelihood `l_2(beta)` (eq. 2.10).
pub trait Aggregation {
    /// An aggregated scalar (an objective value) as the Center holds it.
    type Scalar;
    /// An aggregated vector (a gradient) as the Center holds it.
    type Vector;
    /// A factored positive-definite curvature matrix as the Center holds it.
    type Factor;
    /// What can go wrong while talking to the Nodes.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Number of coefficients p (public).
    fn dimension(&self) -> usize;

    /// Total number of rows N over all Nodes (public by design).
    fn sample_count(&self) -> usize;

    /// One round. Factors the PrivLogit curvature bound `B = 1/4 sum_i X_i^T X_i + lambda I =
    /// -H~` (eq. 5.3, 5.5; with a free intercept, lambda on the penalised coefficients only).
    /// `None` when B is not positive definite to working precision.
    fn bound_factor(&mut self, penalty: Penalty<'_>) -> Result<Option<Self::Factor>, Self::Error>;

    /// One round. Gradient and objective at `beta`, with the Center's `penalty`.
    fn gradient_and_objective(
        &mut self,
        beta: &Array1<f64>,
        penalty: Penalty<'_>,
    ) -> Result<(Self::Vector, Self::Scalar), Self::Error>;

    /// One round. Gradient, objective and the factored negative Hessian `-H(beta) = X^T A X +
    /// lambda I` (eq. 2.13) at `beta`; the factor is `None` when that matrix is not positive
    /// definite to working precision.
    fn newton_system(
        &mut self,
        beta: &Array1<f64>,
        penalty: Penalty<'_>,
    ) -> Result<NewtonSystem<Self>, Self::Error>;

    /// The ascent step `F^{-1} g`, revealed: the optimiser adds it to the public `beta`.
    fn solve_step(
        &mut self,
        factor: &Self::Factor,
        gradient: &Self::Vector,
    ) -> Result<Array1<f64>, Self::Error>;

    /// One revealed bit: has the iteration converged by `rule`? True when the relative change
    /// `|current - previous| / |previous|` is below `rule.relative_tolerance` (dissertation
    /// section 5.4) or the gradient's Euclidean norm is below `rule.gradient_tolerance`.
    fn converged(
        &mut self,
        previous: &Self::Scalar,
        current: &Self::Scalar,
        gradient: &Self::Vector,
        rule: &StoppingRule,
    ) -> Result<bool, Self::Error>;

    /// One revealed bit: `candidate >= base - slack * |base|`. Newton's divergence test uses
    /// it with a small relative `slack` that absorbs round-off.
    fn increased(
        &mut self,
        candidate: &Self::Scalar,
        base: &Self::Scalar,
        slack: f64,
    ) -> Result<bool, Self::Error>;

    /// One revealed bit: `candidate >= base + 1/2 step^T g_base - slack N`, where `step = B^{-1}
    /// g_base` is the plain PrivLogit step from `base` and N the rows (the objective's size,
    /// public). `base + 1/2 step^T g_base` is the increase that step is guaranteed to achieve
    /// (dissertation eq. 5.7), so accepting only candidates that reach it (up to the small
    /// `slack` per row, which keeps the decision off the rounding) keeps PrivLogit's ascent and
    /// its linear rate (eq. 5.12).
    fn sufficient_increase(
        &mut self,
        candidate: &Self::Scalar,
        base: &Self::Scalar,
        base_gradient: &Self::Vector,
        step: &Array1<f64>,
        slack: f64,
    ) -> Result<bool, Self::Error>;

    /// The value of an aggregated scalar if this backend may show it (for progress and
    /// reports); a secure backend returns `None`.
    fn peek(&self, value: &Self::Scalar) -> Option<f64>;

    /// Whether accelerated PrivLogit may form Newton systems mid-run (its finish,
    /// [`crate::optimizer::finish`]); a backend that prepared only PrivLogit's rounds says no.
    fn newton_finish(&self) -> bool {
        true
    }

    /// Whether every row lies strictly on its label's side at `beta` (the classes completely
    /// separated), for a backend that can tell (a secure study: the Nodes' encrypted counts and
    /// one comparison, one revealed bit); `None` for one that cannot. Asked only in
    /// unpenalised logistic runs ([`crate::optimizer::FitOptions::separation_watch`]).
    fn separates(&mut self, _beta: &Array1<f64>) -> Result<Option<bool>, Self::Error> {
        Ok(None)
    }
}

/// What one Newton round yields: gradient, objective and the factored negative Hessian (`None`
/// when it is not positive definite to working precision).
pub struct NewtonSystem<A: Aggregation + ?Sized> {
    /// Penalised gradient at the round's `beta`.
    pub gradient: A::Vector,
    /// Penalised objective at the round's `beta`.
    pub objective: A::Scalar,
    /// Factor of `X^T A X + lambda I`.
    pub factor: Option<A::Factor>,
}
