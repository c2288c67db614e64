//! PrivLogit (dissertation eq. 5.3-5.6) and its accelerated variant.
//!
//! **PrivLogit.** One setup round factors the constant curvature bound `B = 1/4 X^T X + lambda I
//! = -H~`; every iteration then costs one round (gradient and objective at the public `beta`) and
//! one solve with the kept factor: `beta <- beta + B^{-1} g(beta)` (eq. 5.6). The objective rises
//! at every step by at least `1/2 g^T B^{-1} g` (eq. 5.7), so the method converges from any start
//! at a linear rate (Proposition 1).
//!
//! **Accelerated PrivLogit.** PrivLogit is a minorise-maximise iteration whose map `G(beta) =
//! beta + B^{-1} g(beta)` converges linearly, which is the textbook case for Anderson
//! acceleration. Each iteration forms the plain PrivLogit point `G(beta_k)` and an extrapolated
//! candidate from the last few public iterates ([`super::anderson`]). The candidate costs one
//! round to evaluate; it is accepted only if its objective reaches at least the increase the
//! plain step is guaranteed (`l(beta_k) + 1/2 s^T g_k`, eq. 5.7, less [`ACCEPTANCE_SLACK`] per
//! row), one revealed bit. Accepted, its gradient is reused by the next iteration, so the
//! iteration costs one round like plain PrivLogit; rejected, the plain point is taken and
//! evaluated (a second round) and the history restarts. Hence every accepted iterate increases
//! the objective at least as much as the guarantee of a plain step, up to the slack: ascent
//! stays monotone to within `ACCEPTANCE_SLACK N` per iteration and Proposition 1's linear rate
//! still holds, while the accepted extrapolations give the speed-up.
//!
//! **Robust to the steps' precision.** A secure run's steps carry the masks' rounding (about
//! 1e-11 relative), a plaintext run's the f64 rounding of its sums (which depends on how the
//! rows are split). Anderson's extrapolation weights amplify such a perturbation at every
//! iteration of a sliding window (measured on a 90-coefficient study: by about 10 every 10
//! iterations), and a test at the exact guaranteed increase is decided by the rounding once
//! that increase falls below it; so two runs of one study parted ways (1e-5 apart after 85
//! iterations, and 117 to 289 iterations to the same gradient norm). Two changes fix both, at
//! no cost in rounds (fewer iterations, measured in docs/src/results/performance.md): the window restarts every
//! `memory` iterations, so a perturbation reaches at most the extrapolations of its cycle; and
//! the acceptance test has a slack far above any rounding, so no decision turns on it.

use ndarray::Array1;

use super::anderson::Anderson;
use super::finish::{self, Finish};
use super::separation_probe;

/// How far below the guaranteed increase a candidate may fall and still be accepted, per row
/// (the objective is a sum over the N rows): far above the rounding of a secure objective
/// (fixed point, 2^-92 per row after the division by N) and of an f64 sum (about 1e-16 per
/// row), far below any increase that matters. Near the optimum the
/// guaranteed increase `1/2 s^T g` shrinks below every rounding, and a test without slack
/// decides by the rounding: two runs that differ in their last bits then accept and reject
/// different candidates, restart at different iterations and part ways. (A vertical study's
/// objectives carry its logistic circuit's error, about 1e-9 per row, so its aggregation
/// raises the slack above that.)
pub const ACCEPTANCE_SLACK: f64 = 1e-12;
use super::fit_state::{Checkpoints, Progress};
use super::options::{FitError, FitOptions, backend};
use super::report::{FitReport, Status, StepKind};
use super::trace::Trace;
use super::update_rule::Optimizer;
use crate::aggregation::Aggregation;
use crate::penalty::Penalty;

pub(super) fn fit<A: Aggregation>(
    aggregation: &mut A,
    options: &FitOptions,
    mut beta: Array1<f64>,
    acceleration_memory: Option<usize>,
    mut trace: Trace<'_>,
    from: Option<&Progress>,
    mut checkpoints: Checkpoints<'_>,
) -> Result<FitReport, FitError> {
    let penalty = options.penalty();
    let rule = &options.stopping;
    let resumed = from.is_some();
    let (mut anderson, mut rejected) = match from {
        Some(p) => (
            acceleration_memory.map(|m| Anderson::with_window(m, p.window.clone())),
            p.rejected,
        ),
        None => (acceleration_memory.map(Anderson::new), 0),
    };

    // Setup (eq. 5.5): one round, one factorisation, reused by every iteration (a resumed
    // backend holds the factor it kept, and asks no one).
    let bound = aggregation
        .bound_factor(penalty)
        .map_err(backend)?
        .ok_or(FitError::BoundNotPositiveDefinite)?;
    if !resumed {
        trace.round();
    }

    let (mut gradient, mut objective) = aggregation
        .gradient_and_objective(&beta, penalty)
        .map_err(backend)?;
    trace.round();
    if !resumed {
        trace.start(aggregation.peek(&objective));
    }
    let window = |a: &Option<Anderson>| a.as_ref().map(Anderson::window).unwrap_or_default();
    checkpoints.keep(|| trace.progress(&beta, window(&anderson), rejected))?;

    // Newton's finish ([`finish`]): accelerated runs whose backend can form Newton systems.
    let finish_allowed =
        acceleration_memory.is_some() && options.newton_finish && aggregation.newton_finish();
    let mut next_finish = 0;
    // An unpenalised logistic run probes for separated classes once, when it crawls.
    let mut probe_due = options.separation_watch && aggregation.newton_finish();
    let status = loop {
        if trace.iterations() >= rule.max_iterations {
            break Status::MaxIterations;
        }
        // eq. 5.6: beta - H~^{-1} g = beta + B^{-1} g.
        let step = aggregation.solve_step(&bound, &gradient).map_err(backend)?;
        // Newton steps inside the run: the separation probe (once, when an unpenalised
        // logistic run crawls) or the finish (when the bound crawls near the maximum).
        let probe =
            probe_due && separation_probe::due(trace.iterations(), aggregation.dimension(), &step);
        let finish = !probe
            && finish_allowed
            && trace.iterations() >= next_finish
            && finish::due(trace.iterations(), aggregation.dimension(), &step);
        if probe || finish {
            probe_due &= !probe;
            let outcome = if probe {
                separation_probe::run(aggregation, penalty, rule, &mut trace, beta)?
            } else {
                finish::run(
                    aggregation,
                    penalty,
                    rule,
                    &mut trace,
                    beta,
                    gradient,
                    objective,
                )?
            };
            match outcome {
                Finish::Done {
                    beta: last,
                    max_iterations,
                } => {
                    beta = last;
                    break if max_iterations {
                        Status::MaxIterations
                    } else {
                        Status::Converged
                    };
                }
                Finish::GaveUp {
                    beta: last,
                    gradient: g,
                    objective: l,
                } => {
                    (beta, gradient, objective) = (last, g, l);
                    next_finish = trace.iterations() + finish::price_in_rounds(beta.len());
                    if let Some(history) = anderson.as_mut() {
                        history.restart();
                    }
                    checkpoints.keep(|| trace.progress(&beta, window(&anderson), rejected))?;
                    continue;
                }
            }
        }
        let plain = &beta + &step;

        let accepted = match (anderson.as_mut(), acceleration_memory) {
            (Some(history), Some(memory)) => {
                let base = Base {
                    beta: &beta,
                    step: &step,
                    gradient: &gradient,
                    objective: &objective,
                };
                accelerated(
                    aggregation,
                    penalty,
                    &mut trace,
                    history,
                    memory,
                    base,
                    &mut rejected,
                )?
            }
            _ => None,
        };

        let (next, next_gradient, next_objective, kind) = match accepted {
            Some((candidate, g, l)) => (candidate, g, l, StepKind::Accelerated),
            None => {
                let (g, l) = aggregation
                    .gradient_and_objective(&plain, penalty)
                    .map_err(backend)?;
                trace.round();
                (plain, g, l, StepKind::Bound)
            }
        };
        let converged = aggregation
            .converged(&objective, &next_objective, &next_gradient, rule)
            .map_err(backend)?;
        trace.record(&next, aggregation.peek(&next_objective), kind);
        (beta, gradient, objective) = (next, next_gradient, next_objective);
        if converged {
            break Status::Converged;
        }
        checkpoints.keep(|| trace.progress(&beta, window(&anderson), rejected))?;
    };

    let optimizer = match acceleration_memory {
        Some(memory) => Optimizer::AcceleratedPrivLogit { memory },
        None => Optimizer::PrivLogit,
    };
    let mut report = trace.finish(optimizer, beta, status);
    report.rejected_candidates = rejected;
    Ok(report)
}

/// Where an iteration starts: the iterate, its bound step, gradient and objective.
struct Base<'a, A: Aggregation> {
    beta: &'a Array1<f64>,
    step: &'a Array1<f64>,
    gradient: &'a A::Vector,
    objective: &'a A::Scalar,
}

/// Accelerated PrivLogit's candidate for the next iterate: Anderson's extrapolation of the
/// recent steps (restarted every `memory` iterations: a perturbation of one step, the masks'
/// rounding in a secure run, reaches at most the extrapolations of its cycle, where a sliding
/// window carries it on and the extrapolation weights amplify it at every iteration; see the
/// module), evaluated in one round and kept with its gradient and objective if it increases
/// the objective enough; a rejection restarts the history and is counted.
#[allow(clippy::type_complexity)]
fn accelerated<A: Aggregation>(
    aggregation: &mut A,
    penalty: Penalty<'_>,
    trace: &mut Trace<'_>,
    history: &mut Anderson,
    memory: usize,
    base: Base<'_, A>,
    rejected: &mut usize,
) -> Result<Option<(Array1<f64>, A::Vector, A::Scalar)>, FitError> {
    if trace.iterations().is_multiple_of(memory) {
        history.restart();
    }
    history.push(base.beta.clone(), base.step.clone());
    let Some(candidate) = history.extrapolate() else {
        return Ok(None);
    };
    let (g, l) = aggregation
        .gradient_and_objective(&candidate, penalty)
        .map_err(backend)?;
    trace.round();
    let sufficient = aggregation
        .sufficient_increase(
            &l,
            base.objective,
            base.gradient,
            base.step,
            ACCEPTANCE_SLACK,
        )
        .map_err(backend)?;
    if sufficient {
        return Ok(Some((candidate, g, l)));
    }
    *rejected += 1;
    history.restart();
    Ok(None)
}
