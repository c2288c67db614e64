//! Distributed Newton's method (dissertation eq. 2.11-2.13), the baseline PrivLogit replaces.
//!
//! Every iteration the Nodes send gradient, log-likelihood and Hessian at the current
//! coefficients (one round) and the Center solves with the factored negative Hessian. Pure
//! Newton has no line search, so from a poor start it can overshoot and run away (section
//! 5.4.4, Figure 5.5). The run is declared diverged, rather than looped on, as soon as the step
//! is non-finite, the Hessian is not definite, or the objective falls by more than round-off.

use ndarray::Array1;

use super::fit_state::Checkpoints;
use super::options::{FitError, FitOptions, MAX_HALVINGS, backend};
use super::recession;
use super::report::{DivergenceReason, FitReport, Status, StepKind};
use super::trace::Trace;
use super::update_rule::Optimizer;
use crate::aggregation::{Aggregation, NewtonSystem};

/// Relative fall of the objective tolerated as round-off before Newton is called divergent.
/// The objective is a sum of N terms, so its rounding error is at most about N * 1.1e-16
/// relative; 1e-9 covers N up to ~10^7, and a genuinely diverging run falls by far more.
pub const NEWTON_ROUND_OFF_SLACK: f64 = 1e-9;

pub(super) fn fit<A: Aggregation>(
    aggregation: &mut A,
    options: &FitOptions,
    mut beta: Array1<f64>,
    mut trace: Trace<'_>,
    resumed: bool,
    mut checkpoints: Checkpoints<'_>,
) -> Result<FitReport, FitError> {
    let penalty = options.penalty();
    let rule = &options.stopping;

    let NewtonSystem {
        mut gradient,
        mut objective,
        mut factor,
    } = aggregation.newton_system(&beta, penalty).map_err(backend)?;
    trace.round();
    if !resumed {
        trace.start(aggregation.peek(&objective));
    }
    checkpoints.keep(|| trace.progress(&beta, Vec::new(), 0))?;

    // The last step's length: Newton's steps shrink fast towards a maximum, and a step that
    // does not halve is when an unpenalised logistic run asks whether its classes separate.
    let mut last_step = f64::INFINITY;
    let status = loop {
        if trace.iterations() >= rule.max_iterations {
            break Status::MaxIterations;
        }
        let Some(f) = factor.as_ref() else {
            break Status::Diverged(DivergenceReason::HessianNotPositiveDefinite);
        };
        // eq. 2.11 with H = -(X^T A X + lambda I): beta + (X^T A X + lambda I)^{-1} g.
        let mut step = aggregation.solve_step(f, &gradient).map_err(backend)?;
        // A step that does not halve in an unpenalised logistic run may be running along a
        // separating direction: go as far as the objective keeps rising. Pushed past where
        // Newton's model holds, the next full step can overshoot: such a run halves it (in
        // rounds, before its system) as a damped Newton would.
        // Whether the classes separate is asked where the push rose, before that point's
        // system (one round against a masked inverse), or else after the system.
        let mut asked = false;
        if options.separation_watch && step.dot(&step).sqrt() > last_step / 2.0 {
            let (chosen, rose) = recession::furthest_rise(
                aggregation,
                penalty,
                &mut trace,
                (&beta, &step, &objective),
                MAX_HALVINGS,
            )?;
            // Asked where the step, pushed or damped, still did not halve (as below).
            let long = (&chosen - &beta).dot(&(&chosen - &beta)).sqrt() > last_step / 2.0;
            if let (Some(risen), true) = (rose, long) {
                asked = true;
                if aggregation.separates(&chosen).map_err(backend)? == Some(true) {
                    trace.record(&chosen, aggregation.peek(&risen), StepKind::Newton);
                    return Err(FitError::Separated {
                        iterations: trace.iterations(),
                    });
                }
            }
            step = chosen - &beta;
        }
        let may_halve = options.step_halving || options.separation_watch;
        let mut halvings = 0;
        let (next, next_system, rose) = loop {
            let next = &beta + &step;
            if next.iter().any(|v| !v.is_finite()) {
                break (next, None, false);
            }
            let system = aggregation.newton_system(&next, penalty).map_err(backend)?;
            trace.round();
            let rose = aggregation
                .increased(&system.objective, &objective, NEWTON_ROUND_OFF_SLACK)
                .map_err(backend)?;
            if rose || !may_halve || halvings == MAX_HALVINGS {
                break (next, Some(system), rose);
            }
            step *= 0.5;
            halvings += 1;
        };
        let Some(NewtonSystem {
            gradient: next_gradient,
            objective: next_objective,
            factor: next_factor,
        }) = next_system
        else {
            break Status::Diverged(DivergenceReason::NonFinite);
        };
        let converged = rose
            && aggregation
                .converged(&objective, &next_objective, &next_gradient, rule)
                .map_err(backend)?;
        trace.record(&next, aggregation.peek(&next_objective), StepKind::Newton);
        (beta, gradient, objective, factor) = (next, next_gradient, next_objective, next_factor);
        if !rose {
            break Status::Diverged(DivergenceReason::ObjectiveDecreased);
        }
        // Separation first: pushed along a separating direction, the gradient vanishes too, and
        // a "maximum" at infinity is no convergence.
        let length = step.dot(&step).sqrt();
        if options.separation_watch
            && !asked
            && length > last_step / 2.0
            && aggregation.separates(&beta).map_err(backend)? == Some(true)
        {
            return Err(FitError::Separated {
                iterations: trace.iterations(),
            });
        }
        if converged {
            break Status::Converged;
        }
        last_step = length;
        checkpoints.keep(|| trace.progress(&beta, Vec::new(), 0))?;
    };
    Ok(trace.finish(Optimizer::Newton, beta, status))
}
