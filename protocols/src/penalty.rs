//! The Center's l2 penalty, `lambda/2 ||beta - centre||^2`: eq. 2.10's `lambda/2 ||beta||^2`
//! when the centre is 0, and hypothesis transfer's penalty towards a public source model when it
//! is not (transfer paper eq. (4): `eta/2 ||w||^2 + (1 - eta)/2 ||w - w_src||^2` equals
//! `1/2 ||w - (1 - eta) w_src||^2` plus a constant, so a centre of `(1 - eta) w_src` gives it).
//!
//! The centre is public (every party may see it), so it enters the secure protocols as public
//! additions to the encrypted gradient and objective; the curvature (`lambda I`) is unchanged.

use ndarray::Array1;

/// `lambda/2 ||beta - centre||^2`, subtracted from the log-likelihood.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Penalty<'a> {
    /// lambda.
    pub lambda: f64,
    /// The centre (0 when `None`), in the coefficients' own coordinates.
    pub centre: Option<&'a Array1<f64>>,
}

impl<'a> Penalty<'a> {
    /// `lambda/2 ||beta||^2`.
    pub fn around_zero(lambda: f64) -> Self {
        Self {
            lambda,
            centre: None,
        }
    }

    /// `beta - centre`.
    pub fn offset(&self, beta: &Array1<f64>) -> Array1<f64> {
        match self.centre {
            Some(c) => beta - c,
            None => beta.clone(),
        }
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
        };
        assert_eq!(p.gradient(&beta), ndarray::array![-1.0, 6.0]);
        assert_eq!(p.objective(&beta), -(0.25 + 9.0));
        let zero = Penalty::around_zero(2.0);
        assert_eq!(zero.objective(&beta), -5.0);
        assert_eq!(zero.gradient(&beta), ndarray::array![-2.0, 4.0]);
    }
}
