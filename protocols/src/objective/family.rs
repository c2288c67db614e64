//! Generalised linear models with canonical links: binomial (logit, the dissertation's model),
//! Poisson (log) and Gaussian (identity). With a canonical link the score is `X^T W (y - mu)` and
//! the observed information `X^T W V(mu) X` for every family (McCullagh and Nelder 1989, sec.
//! 2.5), so one Newton step serves all three; only the mean, the variance and the likelihood's
//! terms differ.
//!
//! A row may carry an offset (added to the linear predictor, as R's `offset()`) and a prior weight
//! (R's `glm(weights =)`, statsmodels' `var_weights`): they travel as trailing columns of the
//! rows, after the design columns, so every [`crate::rows::RowSource`] carries them unchanged.

use std::fmt;

use super::row_terms::{log_likelihood_term, sigmoid};

/// The distribution of the label given the linear predictor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    /// 0/1 labels, logit link: logistic regression.
    #[default]
    Binomial,
    /// Counts (any value >= 0), log link.
    Poisson,
    /// Real labels, identity link; the dispersion (residual variance) is estimated after the
    /// fit from the residual sum of squares.
    Gaussian,
}

impl Family {
    /// Every family, in the order the documentation lists them.
    pub const ALL: [Family; 3] = [Family::Binomial, Family::Gaussian, Family::Poisson];

    /// The name used on the command line, in files and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Family::Binomial => "binomial",
            Family::Poisson => "poisson",
            Family::Gaussian => "gaussian",
        }
    }

    /// The family named `name`.
    pub fn parse(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The code used in the study plan's bytes (binomial 0, so old plans read the same).
    pub fn code(self) -> u64 {
        match self {
            Family::Binomial => 0,
            Family::Gaussian => 1,
            Family::Poisson => 2,
        }
    }

    /// The family with plan code `code`.
    pub fn from_code(code: u64) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.code() == code)
    }

    /// The mean `mu` at linear predictor `eta` (the inverse link).
    #[inline]
    pub fn mean(self, eta: f64) -> f64 {
        match self {
            Family::Binomial => sigmoid(eta),
            Family::Poisson => eta.exp(),
            Family::Gaussian => eta,
        }
    }

    /// The variance function `V(mu)`: the information's row weight with a canonical link.
    #[inline]
    pub fn variance(self, mu: f64) -> f64 {
        match self {
            Family::Binomial => mu * (1.0 - mu),
            Family::Poisson => mu,
            Family::Gaussian => 1.0,
        }
    }

    /// One row's log-likelihood at `eta` with unit weight: binomial `y eta - log(1 + e^eta)`
    /// (eq. 2.9), Poisson `y eta - e^eta - log(y!)`; for the Gaussian the scale-free part
    /// `-(y - eta)^2 / 2` (the likelihood itself needs the dispersion, known only after the fit).
    #[inline]
    pub fn log_likelihood_term(self, eta: f64, y: f64) -> f64 {
        match self {
            Family::Binomial => log_likelihood_term(eta, y),
            Family::Poisson => y * eta - eta.exp() - ln_factorial(y),
            Family::Gaussian => -0.5 * (y - eta) * (y - eta),
        }
    }

    /// The same term at the saturated model (`mu = y`), so that the deviance is
    /// `2 sum w (saturated - term)`: 0 for 0/1 labels, `y log y - y - log(y!)` for counts, 0 for
    /// the Gaussian's scale-free part.
    pub fn saturated_term(self, y: f64) -> f64 {
        match self {
            Family::Binomial | Family::Gaussian => 0.0,
            Family::Poisson if y > 0.0 => y * y.ln() - y - ln_factorial(y),
            Family::Poisson => 0.0,
        }
    }

    /// Why `y` cannot be this family's label, if it cannot.
    pub fn label_problem(self, y: f64) -> Option<&'static str> {
        match self {
            Family::Binomial if y != 0.0 && y != 1.0 => Some("is not 0 or 1"),
            Family::Poisson if !(y.is_finite() && y >= 0.0) => {
                Some("is not a count (a finite number >= 0)")
            }
            Family::Gaussian if !y.is_finite() => Some("is not a finite number"),
            _ => None,
        }
    }

    /// Whether PrivLogit's constant bound on the information exists (`X^T W X / 4` for the
    /// binomial, since `mu (1 - mu) <= 1/4`): Poisson's variance `e^eta` has no bound, and the
    /// Gaussian's information is constant, so Newton's first step is already the solution.
    pub fn has_constant_bound(self) -> bool {
        self == Family::Binomial
    }

    /// The three sums over rows (with `r = y - offset`, `w` the weight) from which the null
    /// model's log-likelihood follows in closed form ([`Family::null_log_likelihood`]):
    /// Gaussian `w`, `w r`, `-w r^2 / 2`; Poisson `w e^o`, `w y`, `w (y o - log y!)`; binomial
    /// `w`, `w y`, 0.
    #[inline]
    pub fn null_terms(self, y: f64, offset: f64, weight: f64) -> [f64; 3] {
        match self {
            Family::Gaussian => {
                let r = y - offset;
                [weight, weight * r, -0.5 * weight * r * r]
            }
            Family::Poisson => [
                weight * offset.exp(),
                weight * y,
                weight * (y * offset - ln_factorial(y)),
            ],
            Family::Binomial => [weight, weight * y, 0.0],
        }
    }

    /// The null model's maximised log-likelihood (scale-free for the Gaussian, as
    /// [`Family::log_likelihood_term`]) from the sums of [`Family::null_terms`]: the intercept
    /// alone at its maximum when `intercept`, else the offset alone. `None` for a binomial model
    /// with an offset (its intercept has no closed form).
    pub fn null_log_likelihood(self, sums: [f64; 3], intercept: bool, offset: bool) -> Option<f64> {
        let [a, b, c] = sums;
        let xlogy = |x: f64, y: f64| if x == 0.0 { 0.0 } else { x * y.ln() };
        match (self, intercept) {
            (Family::Gaussian, true) => Some(c + b * b / (2.0 * a)),
            (Family::Gaussian, false) => Some(c),
            // alpha = ln(sum w y / sum w e^o); then sum w (y (alpha + o) - e^(alpha + o) - log y!).
            (Family::Poisson, true) => Some(xlogy(b, b / a) + c - b),
            (Family::Poisson, false) => Some(c - a),
            (Family::Binomial, _) if offset => None,
            (Family::Binomial, true) => Some(xlogy(b, b / a) + xlogy(a - b, 1.0 - b / a)),
            (Family::Binomial, false) => Some(-a * std::f64::consts::LN_2),
        }
    }

    /// Whether the fit estimates a dispersion (the Gaussian's residual variance).
    pub fn estimates_scale(self) -> bool {
        self == Family::Gaussian
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `log(y!)` for a count `y >= 0` (`ln Gamma(y + 1)`, so non-integer counts work as in
/// statsmodels).
fn ln_factorial(y: f64) -> f64 {
    if y == 0.0 || y == 1.0 {
        0.0
    } else {
        statrs::function::gamma::ln_gamma(y + 1.0)
    }
}

/// A model's family and the trailing columns its rows carry after the design columns: the
/// offset first when there is one, then the prior weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Glm {
    /// The label's distribution.
    pub family: Family,
    /// Rows end with an offset column.
    pub offset: bool,
    /// Rows end with a prior-weight column.
    pub weights: bool,
}

impl Glm {
    /// The dissertation's model: binomial, no offset, no weights.
    pub fn logistic() -> Self {
        Self::default()
    }

    /// Columns after the design columns.
    pub fn trailing(self) -> usize {
        usize::from(self.offset) + usize::from(self.weights)
    }

    /// Whether this is plain logistic regression (the fast kernels serve it).
    pub fn is_logistic(self) -> bool {
        self == Self::logistic()
    }

    /// A row's offset and weight, read from the values after its `p` design columns.
    #[inline]
    pub fn offset_and_weight(self, row: &[f64], p: usize) -> (f64, f64) {
        let offset = if self.offset { row[p] } else { 0.0 };
        let weight = if self.weights {
            row[p + usize::from(self.offset)]
        } else {
            1.0
        };
        (offset, weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The score of each family is `y - mu` and its derivative `-V(mu)`: central differences of
    /// the log-likelihood term.
    #[test]
    fn canonical_derivatives() {
        let h = 1e-6;
        for family in Family::ALL {
            for (eta, y) in [(0.3, 1.0), (-1.2, 0.0), (0.7, 3.0), (1.1, 2.5)] {
                if family.label_problem(y).is_some() {
                    continue;
                }
                let d = (family.log_likelihood_term(eta + h, y)
                    - family.log_likelihood_term(eta - h, y))
                    / (2.0 * h);
                assert!(
                    (d - (y - family.mean(eta))).abs() < 1e-8,
                    "{family} {eta} {y}"
                );
                let dd = ((y - family.mean(eta + h)) - (y - family.mean(eta - h))) / (2.0 * h);
                assert!((dd + family.variance(family.mean(eta))).abs() < 1e-7);
            }
        }
    }

    /// The saturated term is the largest the row's term can be (deviance >= 0), reached at
    /// `mu = y`.
    #[test]
    fn saturated_is_the_maximum() {
        for y in [0.0_f64, 1.0, 2.0, 7.5] {
            let at_y = Family::Poisson.log_likelihood_term(y.max(1e-300).ln(), y);
            assert!((Family::Poisson.saturated_term(y) - at_y).abs() < 1e-12);
            for eta in [-2.0, 0.0, 1.5] {
                assert!(Family::Poisson.log_likelihood_term(eta, y) <= at_y + 1e-12);
            }
        }
        // log(3!) = log 6.
        assert!((ln_factorial(3.0) - 6f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn names_and_codes_round_trip() {
        for family in Family::ALL {
            assert_eq!(Family::parse(family.name()), Some(family));
            assert_eq!(Family::from_code(family.code()), Some(family));
        }
        assert_eq!(Family::parse("logit"), None);
    }
}
