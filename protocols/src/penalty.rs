//! The Center's l2 penalty, `lambda/2 ||beta - centre||^2`: eq. 2.10's `lambda/2 ||beta||^2`
//! when the centre is 0, and hypothesis transfer's penalty towards a public source model when it
//! is not (transfer paper eq. (4): `eta/2 ||w||^2 + (1 - eta)/2 ||w - w_src||^2` equals
//! `1/2 ||w - (1 - eta) w_src||^2` plus a constant, so a centre of `(1 - eta) w_src` gives it).
//!
//! The centre is public (every party may see it), so it enters the secure protocols as public
//! additions to the encrypted gradient and objective; the curvature (`lambda I`) is unchanged.
//!
//! Per-coefficient weights `w` make it `lambda/2 sum_j w_j (beta_j - centre_j)^2`: a study that
//! scales a feature by a public `1/s_j` before fitting (so that raw values of any magnitude fit
//! the protocols' bounds) fits `c_j = s_j b_j`, and `w_j = 1/s_j^2` keeps the penalty on the
//! raw coefficients `b`, so the estimator is the one the user asked for, in their units.

use ndarray::Array1;

/// `lambda/2 ||beta - centre||^2` over the penalised coefficients, subtracted from the
/// log-likelihood. The first `free` coefficients are left out: 1 for an unpenalised intercept
/// in column 0 (as scikit-learn and R fit it), 0 for eq. 2.10, which penalises every
/// coefficient.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Penalty<'a> {
    /// lambda.
    pub lambda: f64,
    /// The centre (0 when `None`), in the coefficients' own coordinates.
    pub centre: Option<&'a Array1<f64>>,
    /// How many leading coefficients are not penalised.
    pub free: usize,
    /// Per-coefficient multipliers of lambda (1 when `None`).
    pub weights: Option<&'a Array1<f64>>,
}

impl<'a> Penalty<'a> {
    /// `lambda/2 ||beta||^2`.
    pub fn around_zero(lambda: f64) -> Self {
        Self {
            lambda,
            centre: None,
            free: 0,
            weights: None,
        }
    }

    /// The multiplier of lambda on coefficient `j` (0 on the free ones).
    pub fn weight(&self, j: usize) -> f64 {
        if j < self.free {
            0.0
        } else {
            self.weights.map_or(1.0, |w| w[j])
        }
    }

    /// `beta - centre` on the penalised coefficients, 0 on the free ones.
    pub fn offset(&self, beta: &Array1<f64>) -> Array1<f64> {
        let mut offset = match self.centre {
            Some(c) => beta - c,
            None => beta.clone(),
        };
        offset.iter_mut().take(self.free).for_each(|v| *v = 0.0);
        offset
    }

    /// The penalty's term in the gradient of the objective: `-lambda w (beta - centre)`.
    pub fn gradient(&self, beta: &Array1<f64>) -> Array1<f64> {
        let mut g = self.offset(beta) * -self.lambda;
        if let Some(w) = self.weights {
            g *= w;
        }
        g
    }

    /// The penalty's term in the objective: `-lambda/2 sum w (beta - centre)^2`.
    pub fn objective(&self, beta: &Array1<f64>) -> f64 {
        let offset = self.offset(beta);
        let weighted = match self.weights {
            Some(w) => (&offset * w).dot(&offset),
            None => offset.dot(&offset),
        };
        -0.5 * self.lambda * weighted
    }

    /// The penalty's curvature, the diagonal added to `X^T A X` or `1/4 X^T X`: lambda (times
    /// its weight) on the penalised coefficients, 0 on the free ones.
    pub fn diagonal(&self, dimension: usize) -> Array1<f64> {
        Array1::from_shape_fn(dimension, |i| self.lambda * self.weight(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centred_terms() {
        let beta = ndarray::array![1.0, -2.0];
        let centre = ndarray::array![0.5, 1.0];
        let p = Penalty {
            lambda: 2.0,
            centre: Some(&centre),
            free: 0,
            weights: None,
        };
        assert_eq!(p.gradient(&beta), ndarray::array![-1.0, 6.0]);
        assert_eq!(p.objective(&beta), -(0.25 + 9.0));
        let zero = Penalty::around_zero(2.0);
        assert_eq!(zero.objective(&beta), -5.0);
        assert_eq!(zero.gradient(&beta), ndarray::array![-2.0, 4.0]);
        // A free intercept: the first coefficient is not penalised.
        let free = Penalty { free: 1, ..p };
        assert_eq!(free.gradient(&beta), ndarray::array![0.0, 6.0]);
        assert_eq!(free.objective(&beta), -9.0);
        assert_eq!(free.diagonal(3), ndarray::array![0.0, 2.0, 2.0]);
        // Weights: the raw penalty of a coefficient fitted on a feature scaled by 1/2 (w = 4).
        let w = ndarray::array![1.0, 4.0];
        let weighted = Penalty {
            weights: Some(&w),
            ..p
        };
        assert_eq!(weighted.gradient(&beta), ndarray::array![-1.0, 24.0]);
        assert_eq!(weighted.objective(&beta), -(0.25 + 36.0));
        assert_eq!(weighted.diagonal(2), ndarray::array![2.0, 8.0]);
    }
}
