//! The separation probe of an unpenalised logistic study: where PrivLogit's bound crawls after
//! a maximum that may not exist, Newton steps tell.
//!
//! **Why.** With separated classes the likelihood has no maximum, and PrivLogit's iterates run
//! off along a separating direction at its bound's contraction rate, close to 1 there: on
//! breast_cancer unpenalised, rows are still on the wrong side after 2,000 iterations, where
//! Newton puts every row on its label's side within about ten steps from anywhere (9 from the
//! 50th PrivLogit iterate, 13 from zero: `numpy`, the same standardised columns). A study that
//! waited for its iteration limit before probing (1,000 by default) took a minute.
//!
//! **When.** Once per run, after twice [`price_in_rounds`] iterations, if the plain step is
//! still longer than [`FAR`]: a study converging towards a maximum is within Newton's reach by
//! then and the finish takes it ([`super::finish`]); one still taking long steps is either
//! separated or far from its maximum, and Newton helps both. Public values only (the iteration
//! count, `d`, the step), so every party decides alike.
//!
//! **How it tells.** Newton steps from the current iterate (each an iteration, as the finish's
//! are), each pushed further while the objective keeps rising, or halved when it falls
//! ([`recession`]); each point that rose goes through the backend's separation test before a
//! Newton system is formed there ([`Aggregation::separates`]: every row strictly on its label's
//! side; one round and one revealed bit in a secure study, against a masked inverse). Separated: the run ends with [`FitError::Separated`] (tested before
//! convergence: pushed along a separating direction, the gradient vanishes too). Converged: the
//! run ends there. A step that still lowers the objective after [`PROBE_HALVINGS`] halvings, a
//! Hessian that is not definite, or [`PROBE_STEPS`] steps without a verdict hand the run back
//! to PrivLogit at the last accepted iterate (a backend's error, such as a secure pivot lost
//! as the information loses rank, goes to the caller, which reads it as quasi-separation).

use ndarray::Array1;

use super::finish::{FAR, Finish, price_in_rounds};
use super::newton::NEWTON_ROUND_OFF_SLACK;
use super::options::{FitError, backend};
use super::recession;
use super::report::StepKind;
use super::trace::Trace;
use crate::aggregation::Aggregation;
use crate::penalty::Penalty;
use crate::stopping::StoppingRule;

/// The most Newton steps one probe takes (breast_cancer needs 9).
pub const PROBE_STEPS: usize = 30;

/// The most halvings of one probe step that lowers the objective (one round each) before the
/// probe hands the run back.
pub const PROBE_HALVINGS: usize = 10;

/// Whether PrivLogit, after `iterations` with plain step `step` on `d` coefficients, probes.
pub fn due(iterations: usize, d: usize, step: &Array1<f64>) -> bool {
    iterations >= 2 * price_in_rounds(d) && step.dot(step).sqrt() > FAR
}

/// Runs the probe from `beta`, forming its own Newton system there (whose gradient and
/// objective are the caller's values, formed again).
pub(super) fn run<A: Aggregation>(
    aggregation: &mut A,
    penalty: Penalty<'_>,
    rule: &StoppingRule,
    trace: &mut Trace<'_>,
    beta: Array1<f64>,
) -> Result<Finish<A>, FitError> {
    let mut at = aggregation.newton_system(&beta, penalty).map_err(backend)?;
    trace.round();
    let mut beta = beta;
    for _ in 0..PROBE_STEPS {
        if trace.iterations() >= rule.max_iterations {
            return Ok(Finish::Done {
                beta,
                max_iterations: true,
            });
        }
        let Some(f) = at.factor.as_ref() else { break };
        let step = aggregation.solve_step(f, &at.gradient).map_err(backend)?;
        if step.iter().any(|v| !v.is_finite()) {
            break;
        }
        let (next, rose) = recession::furthest_rise(
            aggregation,
            penalty,
            trace,
            (&beta, &step, &at.objective),
            PROBE_HALVINGS,
        )?;
        // Separation first, before this point's system: pushed along a separating direction,
        // the gradient vanishes too.
        if let Some(objective) = &rose
            && aggregation.separates(&next).map_err(backend)? == Some(true)
        {
            trace.record(&next, aggregation.peek(objective), StepKind::Newton);
            return Err(FitError::Separated {
                iterations: trace.iterations(),
            });
        }
        let system = aggregation.newton_system(&next, penalty).map_err(backend)?;
        trace.round();
        if !aggregation
            .increased(&system.objective, &at.objective, NEWTON_ROUND_OFF_SLACK)
            .map_err(backend)?
        {
            break;
        }
        let converged = aggregation
            .converged(&at.objective, &system.objective, &system.gradient, rule)
            .map_err(backend)?;
        trace.record(&next, aggregation.peek(&system.objective), StepKind::Newton);
        (beta, at) = (next, system);
        // A point the push did not see rise (a tie within round-off, as the objective
        // saturates at 0) was not asked above: ask now.
        if rose.is_none() && aggregation.separates(&beta).map_err(backend)? == Some(true) {
            return Err(FitError::Separated {
                iterations: trace.iterations(),
            });
        }
        if converged {
            return Ok(Finish::Done {
                beta,
                max_iterations: false,
            });
        }
    }
    Ok(Finish::GaveUp {
        beta,
        gradient: at.gradient,
        objective: at.objective,
    })
}
