//! The plaintext reference backend: every Node's contribution is a set of compensated sums
//! ([`CompensatedSum`]) and the Center merges them in the clear, so the totals do not depend on
//! how the rows are partitioned. It is both the non-secure distributed
//! baseline and the oracle the secure backends are compared against step by step.

use ndarray::{Array1, Array2};

use super::center_access::{Aggregation, NewtonSystem, plain_decisions};
use crate::cholesky::Cholesky;
use crate::compensated::CompensatedSum;
use crate::objective::{PartyData, RowKernel, unpack_lower};
use crate::penalty::Penalty;
use crate::rows::RowsError;
use crate::stopping::StoppingRule;

/// Sums over parties held in memory, in the clear.
#[derive(Debug, Clone, Copy)]
pub struct PlaintextAggregation<'a> {
    parties: &'a [PartyData],
    dimension: usize,
}

impl<'a> PlaintextAggregation<'a> {
    /// Aggregates over `parties`, which must be non-empty and agree on the column count.
    pub fn new(parties: &'a [PartyData]) -> Self {
        assert!(!parties.is_empty(), "at least one party is needed");
        let dimension = parties[0].columns();
        assert!(
            parties.iter().all(|p| p.columns() == dimension),
            "parties disagree on the number of columns"
        );
        Self { parties, dimension }
    }

    /// Every party's accumulators merged in party order, rounded once.
    fn merged(
        &self,
        local: impl Fn(&PartyData) -> Result<CompensatedSum, RowsError>,
    ) -> Result<Vec<f64>, RowsError> {
        let mut parties = self.parties.iter();
        let mut total = local(parties.next().expect("at least one party"))?;
        for party in parties {
            total.merge(&local(party)?);
        }
        Ok(total.values())
    }

    /// The pooled log-likelihood (eq. 2.9), summed exactly as the optimisers sum it.
    pub fn log_likelihood(&self, beta: &Array1<f64>) -> Result<f64, RowsError> {
        Ok(self.merged(|party| party.gradient_sums(beta))?[self.dimension])
    }

    /// The pooled observed information `X^T A X` at `beta` (no penalty), for inference at the
    /// optimum.
    pub fn information(&self, beta: &Array1<f64>) -> Result<Array2<f64>, RowsError> {
        let sums = self.merged(|party| party.information_sums(beta))?;
        Ok(unpack_lower(&sums, self.dimension))
    }

    /// The pooled bound `X^T X / 4` (eq. 5.5, no penalty): a design's Gram matrix, scaled.
    pub fn bound(&self) -> Result<Array2<f64>, RowsError> {
        let sums = self.merged(PartyData::information_bound_sums)?;
        Ok(unpack_lower(&sums, self.dimension))
    }

    fn penalty_diagonal(&self, penalty: Penalty<'_>) -> Array2<f64> {
        Array2::from_diag(&penalty.diagonal(self.dimension))
    }
}

impl Aggregation for PlaintextAggregation<'_> {
    type Scalar = f64;
    type Vector = Array1<f64>;
    type Factor = Cholesky;
    type Error = RowsError;

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn sample_count(&self) -> usize {
        self.parties.iter().map(PartyData::rows).sum()
    }

    fn bound_factor(&mut self, penalty: Penalty<'_>) -> Result<Option<Cholesky>, RowsError> {
        // eq. 5.5: sum of the local bounds, then the penalty once.
        let bound = self.merged(PartyData::information_bound_sums)?;
        let b = unpack_lower(&bound, self.dimension) + self.penalty_diagonal(penalty);
        Ok(Cholesky::factor(&b))
    }

    fn gradient_and_objective(
        &mut self,
        beta: &Array1<f64>,
        penalty: Penalty<'_>,
    ) -> Result<(Array1<f64>, f64), RowsError> {
        let mut sums = self.merged(|party| party.gradient_sums(beta))?;
        let log_likelihood = sums.pop().expect("p + 1 sums");
        // The Center's penalty terms (eq. 2.10, 2.12; centred when the penalty has a centre).
        Ok((
            Array1::from(sums) + penalty.gradient(beta),
            log_likelihood + penalty.objective(beta),
        ))
    }

    fn newton_system(
        &mut self,
        beta: &Array1<f64>,
        penalty: Penalty<'_>,
    ) -> Result<NewtonSystem<Self>, RowsError> {
        let (gradient, objective) = self.gradient_and_objective(beta, penalty)?;
        let information = self.merged(|party| party.information_sums(beta))?;
        let information =
            unpack_lower(&information, self.dimension) + self.penalty_diagonal(penalty);
        Ok(NewtonSystem {
            gradient,
            objective,
            factor: Cholesky::factor(&information),
        })
    }

    fn solve_step(
        &mut self,
        factor: &Cholesky,
        gradient: &Array1<f64>,
    ) -> Result<Array1<f64>, RowsError> {
        Ok(factor.solve(gradient))
    }

    fn converged(
        &mut self,
        previous: &f64,
        current: &f64,
        gradient: &Array1<f64>,
        rule: &StoppingRule,
    ) -> Result<bool, RowsError> {
        let relative = (current - previous).abs() / previous.abs();
        let by_objective = relative < rule.relative_tolerance;
        let by_gradient = rule
            .gradient_tolerance
            .is_some_and(|tol| gradient.dot(gradient).sqrt() < tol);
        Ok(by_objective || by_gradient)
    }

    plain_decisions!();

    /// Every row strictly on its label's side, counted in the clear (the Nodes' count in a
    /// secure study).
    fn separates(&mut self, beta: &Array1<f64>) -> Result<Option<bool>, RowsError> {
        let wrong = self.merged(|party| party.sums(RowKernel::Misclassified(beta.to_vec())))?;
        Ok(Some(wrong[0] == 0.0))
    }
}
