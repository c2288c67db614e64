//! Principal component analysis, for the differential-privacy experiments (the papers reduce
//! MNIST to 100 dimensions before any private learning).
//!
//! Privacy caveat (stacking paper section 4.1, transfer paper section 4.1): PCA here is not
//! differentially private. Fitting it on private rows leaks through the components and their
//! variances (which PST-F(W) also uses as feature importances); the papers accept this "for
//! simplicity of the ablation study" and note that importances should come from side
//! information. The experiments fit PCA on training rows only, never on test rows.
//!
//! Method: the sample covariance, then faer's symmetric eigendecomposition (tridiagonal
//! reduction and divide and conquer, LAPACK's `dsyevd` method). An eigenvector's sign is
//! arbitrary; each component is signed so that its entry of largest magnitude is positive, so
//! that the projections do not depend on the solver's choice.

use faer::{Mat, Side};
use ndarray::{Array1, Array2, ArrayView2, Axis};

/// A fitted PCA: centre, leading directions and the variance along each.
#[derive(Debug, Clone, PartialEq)]
pub struct Pca {
    /// Column means of the fitted rows.
    pub mean: Array1<f64>,
    /// `d x k`, orthonormal columns, by decreasing variance.
    pub components: Array2<f64>,
    /// The variance along each component (eigenvalues of the sample covariance, divisor n-1).
    pub variances: Array1<f64>,
    /// The largest eigenpair residual `||C v - l v||` relative to the largest eigenvalue (a
    /// check on the solver: about 1e-15 times the dimension).
    pub residual: f64,
}

/// Why an eigendecomposition failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the symmetric eigendecomposition did not converge (a non-finite covariance entry?)")]
pub struct EigenError;

impl Pca {
    /// The `k` leading components of `x`'s rows. Panics if `k` is 0 or exceeds the columns, or
    /// if there are fewer than 2 rows (callers validate first); fails if the covariance is not
    /// finite.
    pub fn fit(x: ArrayView2<'_, f64>, k: usize) -> Result<Self, EigenError> {
        let (n, d) = x.dim();
        assert!(
            k >= 1 && k <= d && n >= 2,
            "PCA needs 1 <= k <= d and 2 rows"
        );
        let mean = x.mean_axis(Axis(0)).expect("rows");
        let centred = &x - &mean;
        let covariance = centred.t().dot(&centred) / (n as f64 - 1.0);
        let (variances, components) = leading_eigen(&covariance, k)?;
        let residual = relative_residual(&covariance, &variances, &components);
        Ok(Self {
            mean,
            components,
            variances,
            residual,
        })
    }

    /// `x`'s rows in the component basis (`n x k`).
    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        (&x - &self.mean).dot(&self.components)
    }
}

/// The `k` largest eigenpairs of symmetric `a` (only its lower triangle is read), by
/// decreasing eigenvalue, each eigenvector signed so that its largest-magnitude entry is
/// positive.
pub fn leading_eigen(a: &Array2<f64>, k: usize) -> Result<(Array1<f64>, Array2<f64>), EigenError> {
    let d = a.nrows();
    assert!(a.ncols() == d && k <= d, "square matrix and k <= d");
    let m = Mat::<f64>::from_fn(d, d, |i, j| a[[i, j]]);
    let eigen = m.self_adjoint_eigen(Side::Lower).map_err(|_| EigenError)?;
    let (values, vectors) = (eigen.S(), eigen.U());
    // faer returns eigenvalues in ascending order: take them from the end.
    let column = |j: usize| d - 1 - j;
    let out_values = Array1::from_shape_fn(k, |j| values[column(j)]);
    let mut out_vectors = Array2::from_shape_fn((d, k), |(i, j)| vectors[(i, column(j))]);
    for mut v in out_vectors.columns_mut() {
        let largest = v
            .iter()
            .copied()
            .max_by(|x, y| x.abs().total_cmp(&y.abs()))
            .unwrap_or(0.0);
        if largest < 0.0 {
            v.mapv_inplace(|x| -x);
        }
    }
    Ok((out_values, out_vectors))
}

/// `max_j ||C v_j - l_j v_j|| / max(l_1, tiny)`.
fn relative_residual(c: &Array2<f64>, values: &Array1<f64>, vectors: &Array2<f64>) -> f64 {
    let r = (c.dot(vectors) - vectors * values)
        .map_axis(Axis(0), |col| col.dot(&col).sqrt())
        .fold(0.0f64, |a, &b| a.max(b));
    r / values
        .first()
        .copied()
        .unwrap_or(0.0)
        .max(f64::MIN_POSITIVE)
}
