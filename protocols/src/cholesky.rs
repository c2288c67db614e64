//! Dense Cholesky factorisation and triangular solves for the p x p systems of the optimisers.
//!
//! p is the number of coefficients (tens to a few hundred), so a straightforward O(p^3)
//! factorisation in f64 is all that is needed; the cost that matters is the O(n p^2) local
//! products, not this.

use ndarray::{Array1, Array2};

/// The lower-triangular factor `L` of a symmetric positive-definite matrix `A = L L^T`.
#[derive(Debug, Clone, PartialEq)]
pub struct Cholesky {
    lower: Array2<f64>,
}

impl Cholesky {
    /// Factors `a` (only its lower triangle is read). Returns `None` when `a` is not positive
    /// definite to working precision (a pivot is not strictly positive or not finite).
    pub fn factor(a: &Array2<f64>) -> Option<Self> {
        let n = a.nrows();
        assert_eq!(n, a.ncols(), "Cholesky needs a square matrix");
        let mut l = Array2::<f64>::zeros((n, n));
        for j in 0..n {
            let mut diag = a[(j, j)];
            for k in 0..j {
                diag -= l[(j, k)] * l[(j, k)];
            }
            if !(diag > 0.0 && diag.is_finite()) {
                return None;
            }
            let ljj = diag.sqrt();
            l[(j, j)] = ljj;
            for i in (j + 1)..n {
                let mut v = a[(i, j)];
                for k in 0..j {
                    v -= l[(i, k)] * l[(j, k)];
                }
                l[(i, j)] = v / ljj;
            }
        }
        Some(Self { lower: l })
    }

    /// The lower-triangular factor.
    pub fn lower(&self) -> &Array2<f64> {
        &self.lower
    }

    /// Solves `A x = b` by forward substitution with `L` and back substitution with `L^T`.
    pub fn solve(&self, b: &Array1<f64>) -> Array1<f64> {
        let l = &self.lower;
        let n = l.nrows();
        assert_eq!(b.len(), n, "right-hand side has the wrong length");
        let mut y = b.clone();
        for i in 0..n {
            let mut v = y[i];
            for k in 0..i {
                v -= l[(i, k)] * y[k];
            }
            y[i] = v / l[(i, i)];
        }
        for i in (0..n).rev() {
            let mut v = y[i];
            for k in (i + 1)..n {
                v -= l[(k, i)] * y[k];
            }
            y[i] = v / l[(i, i)];
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn factors_and_solves_a_known_system() {
        // A = L L^T with L = [[2,0,0],[1,3,0],[-1,2,4]] (chosen by hand).
        let a = array![[4.0, 2.0, -2.0], [2.0, 10.0, 5.0], [-2.0, 5.0, 21.0]];
        let c = Cholesky::factor(&a).expect("positive definite");
        let expected = array![[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [-1.0, 2.0, 4.0]];
        assert!((c.lower() - &expected).iter().all(|d| d.abs() < 1e-14));
        let x = array![1.0, -2.0, 0.5];
        let b = a.dot(&x);
        let solved = c.solve(&b);
        assert!((solved - x).iter().all(|d| d.abs() < 1e-13));
    }

    #[test]
    fn refuses_indefinite_and_singular() {
        assert!(Cholesky::factor(&array![[1.0, 2.0], [2.0, 1.0]]).is_none());
        assert!(Cholesky::factor(&array![[1.0, 1.0], [1.0, 1.0]]).is_none());
        assert!(Cholesky::factor(&array![[f64::NAN]]).is_none());
    }
}
