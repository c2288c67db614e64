//! Newton's finish of accelerated PrivLogit: where the constant bound makes PrivLogit crawl,
//! buy one Newton system and iterate with it.
//!
//! **Why.** PrivLogit's map contracts at the rate `1 - lambda_min(B^-1 H)` (Proposition 1),
//! which data close to separable push towards 1 (breast_cancer: 0.9956); Anderson acceleration
//! then needs about a hundred rounds for the last digits. A secure Newton system costs one
//! masked inverse, priced in rounds by [`price_in_rounds`], after which every step
//! `beta + F^-1 g` (the chord method with `F = X^T A X + lambda I` held fixed) costs one round
//! and contracts at the rate `||I - F^-1 H(beta*)||`, small once `F` is taken near the
//! optimum; the last step leaves the coefficients within round-off of it.
//!
//! **When** (a ski-rental rule: keep renting rounds until they have cost what buying would).
//! After [`price_in_rounds`] iterations of accelerated PrivLogit without convergence, and when
//! the plain step `B^-1 g` is between [`NEAR`] and [`FAR`] in norm (close enough for Newton's
//! quadratic region on standardised data, and not so close that a few more rounds finish
//! anyway). Everything it looks at is public (the iteration count, the step, `d`), so the
//! plaintext and the secure runs decide alike, and a continued run decides as an uninterrupted
//! one would.
//!
//! **Safeguards.** A chord step must not lower the objective (one revealed bit, Newton's
//! divergence test); a step that does, or a Hessian that is not definite, ends the finish and
//! accelerated PrivLogit goes on from the last accepted iterate (its monotone ascent keeps
//! Proposition 1's convergence). When a chord step shrinks by less than [`REFRESH_RATIO`], the
//! Newton system is formed again at the new iterate (at most [`MAX_SYSTEMS`] in all); with none
//! left, a step that shrinks by less than [`GIVE_UP_RATIO`] hands back too.

use ndarray::Array1;

use super::newton::NEWTON_ROUND_OFF_SLACK;
use super::options::{FitError, backend};
use super::report::StepKind;
use super::trace::Trace;
use crate::aggregation::{Aggregation, NewtonSystem};
use crate::penalty::Penalty;
use crate::stopping::StoppingRule;

/// The plain step's norm above which the iterate is taken to be too far for Newton.
pub const FAR: f64 = 2e-3;

/// The plain step's norm below which a few more accelerated rounds are cheaper.
pub const NEAR: f64 = 1e-6;

/// A chord step that shrinks by less than this (against the step before) asks for a fresh
/// Newton system.
pub const REFRESH_RATIO: f64 = 0.2;

/// The most Newton systems one finish forms.
pub const MAX_SYSTEMS: usize = 3;

/// With no system left, a chord step that shrinks by less than this hands the run back to
/// accelerated PrivLogit.
pub const GIVE_UP_RATIO: f64 = 0.5;

/// What a secure Newton system costs, in accelerated PrivLogit rounds, for `d` coefficients:
/// a masked `d x d` inverse against a Local round, measured on a 2-core AMD EPYC (`privlogit
/// bench linalg` and `study`): 10 rounds at d = 9 (0.14 s against 14 ms), 19 at d = 31 (0.70 s
/// against 36 ms), 38 at d = 101 (6.3 s against about 0.17 s). A public function of `d` only,
/// so every backend decides alike.
pub fn price_in_rounds(d: usize) -> usize {
    (7.0 + 0.4 * d as f64).round() as usize
}

/// Whether accelerated PrivLogit, after `iterations`, with plain step `step`, buys the finish.
pub fn due(iterations: usize, d: usize, step: &Array1<f64>) -> bool {
    let norm = step.dot(step).sqrt();
    iterations >= price_in_rounds(d) && (NEAR..=FAR).contains(&norm)
}

/// How a finish ended.
pub(super) enum Finish<A: Aggregation> {
    /// Converged by the stopping rule (or out of iterations) at the coefficients returned.
    Done {
        beta: Array1<f64>,
        max_iterations: bool,
    },
    /// A safeguard ended it: accelerated PrivLogit goes on from here.
    GaveUp {
        beta: Array1<f64>,
        gradient: A::Vector,
        objective: A::Scalar,
    },
}

/// Runs the finish from `beta` (whose gradient and objective the caller holds).
pub(super) fn run<A: Aggregation>(
    aggregation: &mut A,
    penalty: Penalty<'_>,
    rule: &StoppingRule,
    trace: &mut Trace<'_>,
    mut beta: Array1<f64>,
    mut gradient: A::Vector,
    mut objective: A::Scalar,
) -> Result<Finish<A>, FitError> {
    let mut systems = 0;
    'systems: while systems < MAX_SYSTEMS {
        // The system replaces the gradient and objective at `beta` with its own (the same
        // values, formed again in the Newton round).
        let NewtonSystem {
            gradient: g,
            objective: l,
            factor,
        } = aggregation.newton_system(&beta, penalty).map_err(backend)?;
        trace.round();
        systems += 1;
        (gradient, objective) = (g, l);
        let Some(factor) = factor else {
            break;
        };
        let mut last_norm = f64::INFINITY;
        loop {
            if trace.iterations() >= rule.max_iterations {
                return Ok(Finish::Done {
                    beta,
                    max_iterations: true,
                });
            }
            let step = aggregation
                .solve_step(&factor, &gradient)
                .map_err(backend)?;
            let next = &beta + &step;
            if next.iter().any(|v| !v.is_finite()) {
                break 'systems;
            }
            let (g, l) = aggregation
                .gradient_and_objective(&next, penalty)
                .map_err(backend)?;
            trace.round();
            if !aggregation
                .increased(&l, &objective, NEWTON_ROUND_OFF_SLACK)
                .map_err(backend)?
            {
                break 'systems;
            }
            let converged = aggregation
                .converged(&objective, &l, &g, rule)
                .map_err(backend)?;
            trace.record(&next, aggregation.peek(&l), StepKind::Newton);
            (beta, gradient, objective) = (next, g, l);
            if converged {
                return Ok(Finish::Done {
                    beta,
                    max_iterations: false,
                });
            }
            let norm = step.dot(&step).sqrt();
            let ratio = norm / last_norm;
            last_norm = norm;
            if ratio > REFRESH_RATIO && systems < MAX_SYSTEMS {
                continue 'systems;
            }
            if ratio > GIVE_UP_RATIO {
                // No system left and no faster than accelerated PrivLogit: hand back.
                break 'systems;
            }
        }
    }
    Ok(Finish::GaveUp {
        beta,
        gradient,
        objective,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::{FitOptions, Optimizer, Status};
    use crate::stopping::StoppingRule;
    use ndarray::Array2;
    use std::cell::Cell;

    /// A concave quadratic `l(beta) = -1/2 (beta - c)^T A (beta - c)` with a diagonal `A` whose
    /// spectrum spreads from 1 to 1e-3, the bound `I >= A`, and Newton systems that are `A`
    /// scaled by `newton_scale` (1: exact; 3: a chord contracting by 2/3 a step; 1/3: a step
    /// that overshoots and lowers the objective).
    struct Quadratic {
        a: Array1<f64>,
        c: Array1<f64>,
        newton_scale: f64,
        systems: Cell<usize>,
    }

    impl Quadratic {
        fn new(newton_scale: f64) -> Self {
            let d = 20;
            let a = Array1::from_shape_fn(d, |i| 10f64.powf(-3.0 * i as f64 / (d - 1) as f64));
            let c = Array1::from_shape_fn(d, |i| 1.0 - 0.1 * i as f64);
            let systems = Cell::new(0);
            Self {
                a,
                c,
                newton_scale,
                systems,
            }
        }

        fn gradient(&self, beta: &Array1<f64>) -> Array1<f64> {
            &self.a * &(&self.c - beta)
        }

        fn objective(&self, beta: &Array1<f64>) -> f64 {
            let r = beta - &self.c;
            -0.5 * (&self.a * &r).dot(&r)
        }
    }

    impl Aggregation for Quadratic {
        type Scalar = f64;
        type Vector = Array1<f64>;
        type Factor = Array2<f64>;
        type Error = std::fmt::Error;

        fn dimension(&self) -> usize {
            self.a.len()
        }

        fn sample_count(&self) -> usize {
            1
        }

        fn bound_factor(&mut self, _: Penalty<'_>) -> Result<Option<Array2<f64>>, Self::Error> {
            Ok(Some(Array2::eye(self.a.len())))
        }

        fn gradient_and_objective(
            &mut self,
            beta: &Array1<f64>,
            _: Penalty<'_>,
        ) -> Result<(Array1<f64>, f64), Self::Error> {
            Ok((self.gradient(beta), self.objective(beta)))
        }

        fn newton_system(
            &mut self,
            beta: &Array1<f64>,
            _: Penalty<'_>,
        ) -> Result<NewtonSystem<Self>, Self::Error> {
            self.systems.set(self.systems.get() + 1);
            let inverse = self.a.mapv(|v| 1.0 / (self.newton_scale * v));
            Ok(NewtonSystem {
                gradient: self.gradient(beta),
                objective: self.objective(beta),
                factor: Some(Array2::from_diag(&inverse)),
            })
        }

        fn solve_step(
            &mut self,
            factor: &Array2<f64>,
            gradient: &Array1<f64>,
        ) -> Result<Array1<f64>, Self::Error> {
            Ok(factor.dot(gradient))
        }

        fn converged(
            &mut self,
            _: &f64,
            _: &f64,
            gradient: &Array1<f64>,
            rule: &StoppingRule,
        ) -> Result<bool, Self::Error> {
            Ok(gradient.dot(gradient).sqrt() < rule.gradient_tolerance.unwrap_or(0.0))
        }

        crate::aggregation::plain_decisions!();
    }

    fn run(newton_scale: f64) -> (crate::optimizer::FitReport, Quadratic) {
        let mut q = Quadratic::new(newton_scale);
        let options = FitOptions::new()
            .relative_tolerance(0.0)
            .gradient_tolerance(Some(1e-12))
            .max_iterations(5_000);
        let report = Optimizer::AcceleratedPrivLogit { memory: 5 }
            .fit(&mut q, &options, &mut |_| {})
            .expect("fits");
        (report, q)
    }

    /// With exact Newton systems the finish lands on the optimum in one step after its first
    /// system; with a chord contracting by 2/3 a step it refreshes up to MAX_SYSTEMS systems,
    /// then hands back and accelerated PrivLogit converges; with systems whose step lowers the
    /// objective it hands back at once (no Newton step taken) and the run still converges.
    #[test]
    fn the_finish_hands_back_when_its_systems_do_not_help() {
        let (exact, q) = run(1.0);
        assert_eq!(exact.status, Status::Converged);
        assert!(
            exact.newton_steps >= 1 && q.systems.get() == 1,
            "{}",
            q.systems.get()
        );
        assert!((&exact.beta - &q.c).iter().all(|v| v.abs() < 1e-9));

        let (slow, q) = run(3.0);
        assert_eq!(slow.status, Status::Converged);
        let kinds: Vec<StepKind> = slow.history.iter().map(|h| h.step).collect();
        let first = kinds
            .iter()
            .position(|k| *k == StepKind::Newton)
            .expect("a Newton step");
        assert!(
            kinds[first..].iter().any(|k| *k != StepKind::Newton),
            "handed back to PrivLogit after its Newton steps"
        );
        assert!(q.systems.get() >= MAX_SYSTEMS);
        assert!((&slow.beta - &q.c).iter().all(|v| v.abs() < 1e-6));

        let (overshoot, q) = run(1.0 / 3.0);
        assert_eq!(overshoot.status, Status::Converged);
        assert_eq!(overshoot.newton_steps, 0);
        assert!(q.systems.get() >= 1);
        assert!((&overshoot.beta - &q.c).iter().all(|v| v.abs() < 1e-6));
    }

    /// The price follows the measured ratios it is fitted to (10, 19 and 38 rounds at d = 9,
    /// 31 and 101; see `price_in_rounds`), within a fifth at d = 101 where the fit is coarsest.
    #[test]
    fn the_price_follows_the_measured_ratios() {
        assert_eq!(price_in_rounds(9), 11);
        assert_eq!(price_in_rounds(31), 19);
        assert_eq!(price_in_rounds(101), 47);
    }

    /// Due only past the price and with the step between NEAR and FAR.
    #[test]
    fn due_needs_the_price_paid_and_a_step_in_range() {
        let step = |norm: f64| Array1::from(vec![norm, 0.0]);
        let d = 31;
        let price = price_in_rounds(d);
        assert!(!due(price - 1, d, &step(1e-3)));
        assert!(due(price, d, &step(1e-3)));
        assert!(due(price, d, &step(FAR)) && due(price, d, &step(NEAR)));
        assert!(!due(price, d, &step(2.0 * FAR)));
        assert!(!due(price, d, &step(0.5 * NEAR)));
        assert!(!due(price, d, &step(f64::NAN)));
    }
}
