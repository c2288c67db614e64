//! Validated parameters of a fit: penalty, stopping rule and starting point.

use ndarray::Array1;
use thiserror::Error;

use crate::penalty::Penalty;
use crate::stopping::StoppingRule;

/// Errors that stop a fit before or while it runs (divergence is not an error: it is a
/// [`crate::optimizer::Status`] of the report).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FitError {
    /// A parameter is out of range or not finite.
    #[error("invalid {name} = {value}: {reason}")]
    InvalidParameter {
        /// Parameter name as the user knows it.
        name: &'static str,
        /// The offending value.
        value: f64,
        /// What the value must satisfy.
        reason: &'static str,
    },
    /// The starting vector has the wrong length.
    #[error("initial coefficient vector has {found} entries, the model has {expected}")]
    InitialLength {
        /// Number of coefficients of the model.
        expected: usize,
        /// Length supplied.
        found: usize,
    },
    /// The penalty's centre has the wrong length.
    #[error("the penalty centre has {found} entries, the model has {expected}")]
    CentreLength {
        /// Number of coefficients of the model.
        expected: usize,
        /// Length supplied.
        found: usize,
    },
    /// `1/4 X^T X + lambda I` is singular to working precision (eq. 5.3 needs it definite).
    #[error(
        "the PrivLogit curvature bound 1/4 X^T X + lambda I is not positive definite; \
         use lambda > 0 or remove constant or collinear columns"
    )]
    BoundNotPositiveDefinite,
    /// The aggregation backend failed (for example a Node disconnected). Its message is part
    /// of this one (not chained as a source, so it is printed once).
    #[error("aggregation failed: {0}")]
    Aggregation(Box<dyn std::error::Error + Send + Sync>),
    /// Saving the progress after an iteration failed (the fit stops rather than go on without
    /// a way back).
    #[error("cannot save the checkpoint: {0}")]
    Checkpoint(Box<dyn std::error::Error + Send + Sync>),
    /// A fit was asked to continue from progress that does not fit it.
    #[error("cannot resume: {0}")]
    Resume(String),
    /// An unpenalised logistic run found its classes separated: every row strictly on its
    /// label's side after `iterations` (the backend's test, [`FitOptions::separation_watch`]),
    /// so the likelihood has no maximum. The caller says so in its own words, with N.
    #[error(
        "the classes are completely separated: after {iterations} iterations every row is on \
         its label's side, so the likelihood has no maximum"
    )]
    Separated {
        /// Iterations run (the Newton steps of the probe included).
        iterations: usize,
    },
}

/// Wraps a backend error so the optimisers can use `?` on aggregation calls.
pub(super) fn backend<E: std::error::Error + Send + Sync + 'static>(e: E) -> FitError {
    FitError::Aggregation(Box::new(e))
}

/// Where the coefficients start.
#[derive(Debug, Clone, PartialEq)]
pub enum Initial {
    /// All zeros (the usual start).
    Zeros,
    /// Every coefficient equal to this value (dissertation Figure 5.5 uses 0.8, 1, 1.5, 2).
    Constant(f64),
    /// An explicit vector.
    Vector(Array1<f64>),
}

/// Parameters of one fit, built fluently and validated before any work starts.
#[derive(Debug, Clone, PartialEq)]
pub struct FitOptions {
    /// The l2 penalty `lambda` of eq. 2.10 (every coefficient, intercept included, is penalised,
    /// unless `free_intercept`).
    pub lambda: f64,
    /// Whether the first coefficient (the intercept column) is left out of the penalty, as
    /// scikit-learn and R fit it; eq. 2.10 penalises it (the default).
    pub free_intercept: bool,
    /// When to stop.
    pub stopping: StoppingRule,
    /// Starting point.
    pub initial: Initial,
    /// The penalty's centre: `lambda/2 ||beta - centre||^2` (0 when `None`; public, in the
    /// coefficients' own coordinates: after standardisation, intercept included).
    pub centre: Option<Array1<f64>>,
    /// Per-coefficient multipliers of lambda (1 when `None`; see [`Penalty::weights`]).
    pub weights: Option<Array1<f64>>,
    /// Newton halves a step that lowers the objective (up to [`MAX_HALVINGS`] times, as R's
    /// `glm.fit` does) instead of declaring divergence. Off for the dissertation's logistic
    /// baseline, whose runaway from a poor start is part of what it reports (section 5.4.4);
    /// on for Poisson, whose Newton step from zero overshoots on most data.
    pub step_halving: bool,
    /// Accelerated PrivLogit may finish with Newton systems where the bound makes it crawl
    /// ([`crate::optimizer::finish`]); off, it is the bound's iteration throughout.
    pub newton_finish: bool,
    /// An unpenalised logistic run watches for separated classes: PrivLogit probes with Newton
    /// steps when it crawls ([`crate::optimizer::separation_probe`]) and Newton asks the
    /// backend's separation test when its step stops shrinking, so a likelihood without a
    /// maximum is found in tens of iterations, not at the iteration limit. Off by default; a
    /// secure study sets it when its penalty is 0.
    pub separation_watch: bool,
}

/// The most times Newton halves one step before it is declared divergent.
pub const MAX_HALVINGS: usize = 40;

impl Default for FitOptions {
    fn default() -> Self {
        Self {
            lambda: 1.0,
            free_intercept: false,
            stopping: StoppingRule::default(),
            initial: Initial::Zeros,
            centre: None,
            weights: None,
            step_halving: false,
            newton_finish: true,
            separation_watch: false,
        }
    }
}

impl FitOptions {
    /// Defaults: lambda 1, relative tolerance 1e-6, no gradient rule, 1000 iterations, zeros.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the l2 penalty.
    pub fn lambda(mut self, lambda: f64) -> Self {
        self.lambda = lambda;
        self
    }

    /// Sets the relative objective-change tolerance (0 disables it).
    pub fn relative_tolerance(mut self, tol: f64) -> Self {
        self.stopping.relative_tolerance = tol;
        self
    }

    /// Sets (or clears) the gradient-norm tolerance.
    pub fn gradient_tolerance(mut self, tol: Option<f64>) -> Self {
        self.stopping.gradient_tolerance = tol;
        self
    }

    /// Sets the iteration cap.
    pub fn max_iterations(mut self, n: usize) -> Self {
        self.stopping.max_iterations = n;
        self
    }

    /// Sets [`FitOptions::newton_finish`].
    pub fn newton_finish(mut self, on: bool) -> Self {
        self.newton_finish = on;
        self
    }

    /// Watches an unpenalised logistic run for separated classes
    /// ([`FitOptions::separation_watch`]).
    pub fn separation_watch(mut self, on: bool) -> Self {
        self.separation_watch = on;
        self
    }

    /// Lets Newton halve a step that lowers the objective ([`FitOptions::step_halving`]).
    pub fn step_halving(mut self, on: bool) -> Self {
        self.step_halving = on;
        self
    }

    /// Sets the starting point.
    pub fn initial(mut self, initial: Initial) -> Self {
        self.initial = initial;
        self
    }

    /// Centres the penalty at a public vector (hypothesis transfer), or at 0 with `None`.
    pub fn penalty_centre(mut self, centre: Option<Array1<f64>>) -> Self {
        self.centre = centre;
        self
    }

    /// Leaves the intercept (the first coefficient) out of the penalty, or not (eq. 2.10).
    pub fn free_intercept(mut self, free: bool) -> Self {
        self.free_intercept = free;
        self
    }

    /// Weighs the penalty per coefficient (`lambda/2 sum_j w_j (beta_j - centre_j)^2`), or
    /// not with `None` (see [`Penalty::weights`]).
    pub fn penalty_weights(mut self, weights: Option<Array1<f64>>) -> Self {
        self.weights = weights;
        self
    }

    /// The Center's penalty, `lambda/2 ||beta - centre||^2` (weighted when set).
    pub fn penalty(&self) -> Penalty<'_> {
        Penalty {
            lambda: self.lambda,
            centre: self.centre.as_ref(),
            free: usize::from(self.free_intercept),
            weights: self.weights.as_ref(),
        }
    }

    /// Checks the centre's length against the model's `dimension`.
    pub fn check_centre(&self, dimension: usize) -> Result<(), FitError> {
        match &self.centre {
            Some(c) if c.len() != dimension => Err(FitError::CentreLength {
                expected: dimension,
                found: c.len(),
            }),
            _ => Ok(()),
        }
    }

    /// Checks every parameter, naming the first bad one.
    pub fn validate(&self) -> Result<(), FitError> {
        let invalid = |name, value, reason| {
            Err(FitError::InvalidParameter {
                name,
                value,
                reason,
            })
        };
        if !(self.lambda.is_finite() && self.lambda >= 0.0) {
            return invalid("lambda", self.lambda, "must be finite and >= 0");
        }
        let tol = self.stopping.relative_tolerance;
        if !(tol.is_finite() && tol >= 0.0) {
            return invalid("tolerance", tol, "must be finite and >= 0");
        }
        if let Some(g) = self.stopping.gradient_tolerance
            && !(g.is_finite() && g > 0.0)
        {
            return invalid("gradient tolerance", g, "must be finite and > 0");
        }
        if self.stopping.max_iterations == 0 {
            return invalid("max iterations", 0.0, "must be at least 1");
        }
        if self
            .centre
            .as_ref()
            .is_some_and(|c| c.iter().any(|x| !x.is_finite()))
        {
            return invalid("penalty centre", f64::NAN, "every entry must be finite");
        }
        match &self.initial {
            Initial::Constant(c) if !c.is_finite() => {
                invalid("initial value", *c, "must be finite")
            }
            Initial::Vector(v) if v.iter().any(|x| !x.is_finite()) => {
                invalid("initial vector", f64::NAN, "every entry must be finite")
            }
            _ => Ok(()),
        }
    }

    /// The starting vector for a model with `dimension` coefficients.
    pub fn initial_beta(&self, dimension: usize) -> Result<Array1<f64>, FitError> {
        match &self.initial {
            Initial::Zeros => Ok(Array1::zeros(dimension)),
            Initial::Constant(c) => Ok(Array1::from_elem(dimension, *c)),
            Initial::Vector(v) if v.len() == dimension => Ok(v.clone()),
            Initial::Vector(v) => Err(FitError::InitialLength {
                expected: dimension,
                found: v.len(),
            }),
        }
    }
}
