//! The Center's l2 penalty, `lambda/2 ||beta - centre||^2`: eq. 2.10's `lambda/2 ||beta||^2`
//! when the centre is 0, and hypothesis transfer's penalty towards a public source model when it
//! is not (transfer paper eq. (4): `eta/2 ||w||^2 + (1 - eta)/2 ||w - w_src||^2` equals
//! `1/2 ||w - (1 - eta) w_src||^2` plus a constant, so a centre of `(1 - eta) w_src` gives it).
//!
//! The centre is public (every party may see it), so it enters the secure protocols as public
//! additions to the encrypted gradient and objective; the curvature (`lambda I`) is unchanged.

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
}

impl<'a> Penalty<'a> {
    /// `lambda/2 ||beta||^2`.
    pub fn around_zero(lambda: f64) -> Self {
        Self {
            lambda,
            centre: None,
            free: 0,
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

    /// The penalty's term in the gradient of the objective: `-lambda (beta - centre)`.
    pub fn gradient(&self, beta: &Array1<f64>) -> Array1<f64> {
        self.offset(beta) * -self.lambda
    }

    /// The penalty's term in the objective: `-lambda/2 ||beta - centre||^2`.
    pub fn objective(&self, beta: &Array1<f64>) -> f64 {
        let offset = self.offset(beta);
        -0.5 * self.lambda * offset.dot(&offset)
    }

    /// The penalty's curvature, the diagonal added to `X^T A X` or `1/4 X^T X`: lambda on
    /// the penalised coefficients, 0 on the free ones.
    pub fn diagonal(&self, dimension: usize) -> Array1<f64> {
        Array1::from_shape_fn(dimension, |i| if i < self.free { 0.0 } else { self.lambda })
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
    }
}
