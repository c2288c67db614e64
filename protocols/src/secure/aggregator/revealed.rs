//! What the aggregator's closing rounds reveal ([`Revealed`], [`HeldOut`]) and how much a study
//! asks for ([`Reveal`]): plain results, kept apart from the rounds that compute them so that
//! the aggregator's module hands them on without importing those rounds.

use ndarray::Array2;

use crate::objective::CONSTANT_SUMS;

/// How much of the inverse information a study reveals (to the aggregator, which publishes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reveal {
    /// Coefficients only: no inference round.
    Coefficients,
    /// The inverse's diagonal: standard errors, z, p-values and intervals.
    #[default]
    StandardErrors,
    /// The whole inverse: the covariance matrix.
    Covariance,
}

impl Reveal {
    /// The names on the command line.
    pub const NAMES: &'static [&'static str] = &["coefficients", "standard-errors", "covariance"];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Reveal::Coefficients => "coefficients",
            Reveal::StandardErrors => "standard-errors",
            Reveal::Covariance => "covariance",
        }
    }
}

impl std::str::FromStr for Reveal {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::NAMES
            .iter()
            .position(|n| *n == s)
            .map(|k| {
                [
                    Reveal::Coefficients,
                    Reveal::StandardErrors,
                    Reveal::Covariance,
                ][k]
            })
            .ok_or_else(|| {
                format!(
                    "unknown reveal {s:?} (expected coefficients, standard-errors or covariance)"
                )
            })
    }
}

/// What the held-out evaluation revealed.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldOut {
    /// The pooled [`crate::evaluation_sums::sums`].
    pub sums: Vec<f64>,
    /// The exact AUC (`None` when the held-out rows have one class only).
    pub auc: Option<f64>,
    /// Seconds the ranking took (sharing, the circuit).
    pub ranking_seconds: f64,
}

/// What the inference round revealed.
#[derive(Debug, Clone, PartialEq)]
pub struct Revealed {
    /// The diagonal of `(X^T A X + lambda I)^-1`.
    pub variances: Vec<f64>,
    /// The whole matrix, with [`Reveal::Covariance`].
    pub covariance: Option<Array2<f64>>,
    /// The unpenalised log-likelihood at the final coefficients (eq. 2.9).
    pub log_likelihood: f64,
    /// Rows labelled 1, when the model is a logistic regression with an intercept.
    pub positives: Option<f64>,
    /// A standardised study's intercept in raw units, `b_0 = c_0 - sum_j c_j m_j / s_j`: its
    /// variance `u^T (X^T A X + lambda I)^-1 u` for the public `u = (1, -m_1/s_1, ...)`, one
    /// more revealed number (the raw table's), when asked for.
    pub raw_intercept_variance: Option<f64>,
    /// A Gaussian, Poisson or weighted model's [`crate::objective::PartyData::constant_sums`]
    /// over every Node: the null model's sufficient sums, the saturated log-likelihood and
    /// `sum log w`.
    pub constants: Option<[f64; CONSTANT_SUMS]>,
    /// Seconds the round took.
    pub seconds: f64,
}

impl Revealed {
    /// The same inference for coefficients `b_j = c_j / s_j` of features that were divided by
    /// `s_j` for the fit: variances over `s_j^2`, the covariance `D^-1 C D^-1` (`D = diag(s)`),
    /// exactly; the likelihood and sums do not depend on the scaling.
    pub fn in_raw_units(mut self, s: &ndarray::Array1<f64>) -> Self {
        if let Some(v) = self.raw_intercept_variance.as_mut() {
            *v /= s[0] * s[0];
        }
        for (v, k) in self.variances.iter_mut().zip(s) {
            *v /= k * k;
        }
        if let Some(c) = self.covariance.as_mut() {
            for ((i, j), v) in c.indexed_iter_mut() {
                *v /= s[i] * s[j];
            }
        }
        self
    }
}
