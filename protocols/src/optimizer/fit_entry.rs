//! Where every fit starts: the shared checks, the starting point (or a saved one) and the
//! hand-off to the chosen optimiser's loop.

use super::fit_state::Checkpoints;
use super::options::{FitError, FitOptions};
use super::report::{FitReport, IterationRecord};
use super::trace::Trace;
use super::update_rule::Optimizer;
use super::{newton, privlogit};
use crate::aggregation::Aggregation;

impl Optimizer {
    /// Runs the optimiser over `aggregation`, calling `observer` after every iteration.
    pub fn fit<A: Aggregation>(
        &self,
        aggregation: &mut A,
        options: &FitOptions,
        observer: &mut dyn FnMut(&IterationRecord),
    ) -> Result<FitReport, FitError> {
        self.fit_with_checkpoints(aggregation, options, observer, Checkpoints::default())
    }

    /// [`Self::fit`] that continues from `checkpoints.from` (when given) and hands its
    /// progress to `checkpoints.save` after the setup and after every iteration that does not
    /// end the fit. A continued fit takes the same steps as an uninterrupted one.
    pub fn fit_with_checkpoints<A: Aggregation>(
        &self,
        aggregation: &mut A,
        options: &FitOptions,
        observer: &mut dyn FnMut(&IterationRecord),
        mut checkpoints: Checkpoints<'_>,
    ) -> Result<FitReport, FitError> {
        self.validate()?;
        options.validate()?;
        options.check_centre(aggregation.dimension())?;
        let beta = match &checkpoints.from {
            Some(p) => {
                if p.beta.len() != aggregation.dimension() {
                    return Err(FitError::Resume(format!(
                        "the saved coefficients have {} entries, the model {}",
                        p.beta.len(),
                        aggregation.dimension()
                    )));
                }
                if !p.window.is_empty() && !matches!(self, Optimizer::AcceleratedPrivLogit { .. }) {
                    return Err(FitError::Resume(format!(
                        "the saved progress belongs to accelerated PrivLogit, not {self}"
                    )));
                }
                p.beta.clone()
            }
            None => options.initial_beta(aggregation.dimension())?,
        };
        // Where the fit starts from, and its trace so far.
        let from = checkpoints.from.take();
        let trace = match &from {
            Some(p) => Trace::resume(observer, p),
            None => Trace::new(observer),
        };
        match *self {
            Optimizer::Newton => newton::fit(
                aggregation,
                options,
                beta,
                trace,
                from.is_some(),
                checkpoints,
            ),
            Optimizer::PrivLogit => privlogit::fit(
                aggregation,
                options,
                beta,
                None,
                trace,
                from.as_ref(),
                checkpoints,
            ),
            Optimizer::AcceleratedPrivLogit { memory } => privlogit::fit(
                aggregation,
                options,
                beta,
                Some(memory),
                trace,
                from.as_ref(),
                checkpoints,
            ),
        }
    }
}
