//! Principal component analysis, for the differential-privacy experiments (the papers reduce
//! MNIST to 100 dimensions before any private learning).
//!
//! Privacy caveat (stacking paper section 4.1, transfer paper section 4.1): PCA here is not
//! differentially private. Fitting it on private rows leaks through the components and their
//! variances (which PST-F(W) also uses as feature importances); the papers accept this "for
//! simplicity of the ablation study" and note that importances should come from side
//! information. The experiments fit PCA on training rows only, never on test rows.
//!
//! Method: the sample covariance, then a symmetric eigendecomposition: Householder reduction to
//! tridiagonal form and the implicit QL algorithm with Wilkinson shifts (the EISPACK routines
//! `tred2` and `tql2`, Wilkinson and Reinsch's Handbook for Automatic Computation II, 1971),
//! written here so that no linear-algebra crate is built for the experiments' PCA alone. An
//! eigenvector's sign is arbitrary; each component is signed so that its entry of largest
//! magnitude is positive, so that the projections do not depend on the solver's choice.

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
#[non_exhaustive]
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
    // Symmetric from the lower triangle.
    let mut v = Array2::from_shape_fn((d, d), |(i, j)| if i >= j { a[[i, j]] } else { a[[j, i]] });
    if v.iter().any(|x| !x.is_finite()) {
        return Err(EigenError);
    }
    let (mut values, mut off) = (Array1::zeros(d), Array1::zeros(d));
    tridiagonalize(&mut v, &mut values, &mut off);
    diagonalize(&mut v, &mut values, &mut off)?;
    // Ascending order from `diagonalize`: take them from the end.
    let column = |j: usize| d - 1 - j;
    let out_values = Array1::from_shape_fn(k, |j| values[column(j)]);
    let mut out_vectors = Array2::from_shape_fn((d, k), |(i, j)| v[(i, column(j))]);
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

/// Householder reduction of the symmetric `v` to tridiagonal form (`tred2`): on return `d`
/// holds the diagonal, `e` the subdiagonal (`e[0] = 0`), and `v` the orthogonal transformation.
fn tridiagonalize(v: &mut Array2<f64>, d: &mut Array1<f64>, e: &mut Array1<f64>) {
    let n = v.nrows();
    for j in 0..n {
        d[j] = v[(n - 1, j)];
    }
    for i in (1..n).rev() {
        // Scale to avoid under/overflow.
        let scale: f64 = (0..i).map(|k| d[k].abs()).sum();
        let mut h = 0.0;
        if scale == 0.0 {
            e[i] = d[i - 1];
            for j in 0..i {
                d[j] = v[(i - 1, j)];
                v[(i, j)] = 0.0;
                v[(j, i)] = 0.0;
            }
        } else {
            // The Householder vector.
            for k in 0..i {
                d[k] /= scale;
                h += d[k] * d[k];
            }
            let f = d[i - 1];
            let g = if f > 0.0 { -h.sqrt() } else { h.sqrt() };
            e[i] = scale * g;
            h -= f * g;
            d[i - 1] = f - g;
            for j in 0..i {
                e[j] = 0.0;
            }
            // Apply the similarity transformation to the remaining columns.
            for j in 0..i {
                let f = d[j];
                v[(j, i)] = f;
                let mut g = e[j] + v[(j, j)] * f;
                for k in j + 1..i {
                    g += v[(k, j)] * d[k];
                    e[k] += v[(k, j)] * f;
                }
                e[j] = g;
            }
            let mut f = 0.0;
            for j in 0..i {
                e[j] /= h;
                f += e[j] * d[j];
            }
            let hh = f / (h + h);
            for j in 0..i {
                e[j] -= hh * d[j];
            }
            for j in 0..i {
                let (f, g) = (d[j], e[j]);
                for k in j..i {
                    v[(k, j)] -= f * e[k] + g * d[k];
                }
                d[j] = v[(i - 1, j)];
                v[(i, j)] = 0.0;
            }
        }
        d[i] = h;
    }
    // Accumulate the transformations.
    for i in 0..n.saturating_sub(1) {
        v[(n - 1, i)] = v[(i, i)];
        v[(i, i)] = 1.0;
        let h = d[i + 1];
        if h != 0.0 {
            for k in 0..=i {
                d[k] = v[(k, i + 1)] / h;
            }
            for j in 0..=i {
                let g: f64 = (0..=i).map(|k| v[(k, i + 1)] * v[(k, j)]).sum();
                for k in 0..=i {
                    v[(k, j)] -= g * d[k];
                }
            }
        }
        for k in 0..=i {
            v[(k, i + 1)] = 0.0;
        }
    }
    for j in 0..n {
        d[j] = v[(n - 1, j)];
        v[(n - 1, j)] = 0.0;
    }
    if n > 0 {
        v[(n - 1, n - 1)] = 1.0;
    }
    e[0] = 0.0;
}

/// The implicit QL algorithm (`tql2`) on the tridiagonal `d`, `e` (from [`tridiagonalize`]),
/// accumulating into `v`: on return `d` holds the eigenvalues in ascending order and `v`'s
/// columns the eigenvectors.
fn diagonalize(
    v: &mut Array2<f64>,
    d: &mut Array1<f64>,
    e: &mut Array1<f64>,
) -> Result<(), EigenError> {
    let n = v.nrows();
    for i in 1..n {
        e[i - 1] = e[i];
    }
    if n > 0 {
        e[n - 1] = 0.0;
    }
    let mut f = 0.0;
    let mut tst1: f64 = 0.0;
    let eps = f64::EPSILON;
    for l in 0..n {
        // Find a small subdiagonal element.
        tst1 = tst1.max(d[l].abs() + e[l].abs());
        let mut m = l;
        while m < n {
            if e[m].abs() <= eps * tst1 {
                break;
            }
            m += 1;
        }
        // If m == l, d[l] is an eigenvalue; otherwise iterate.
        if m > l {
            let mut iterations = 0;
            loop {
                iterations += 1;
                if iterations > 60 {
                    return Err(EigenError);
                }
                // The implicit shift.
                let mut g = d[l];
                let mut p = (d[l + 1] - g) / (2.0 * e[l]);
                let mut r = p.hypot(1.0);
                if p < 0.0 {
                    r = -r;
                }
                d[l] = e[l] / (p + r);
                d[l + 1] = e[l] * (p + r);
                let dl1 = d[l + 1];
                let mut h = g - d[l];
                for i in l + 2..n {
                    d[i] -= h;
                }
                f += h;
                // The implicit QL transformation.
                p = d[m];
                let mut c = 1.0;
                let mut c2 = c;
                let mut c3 = c;
                let el1 = e[l + 1];
                let mut s = 0.0;
                let mut s2 = 0.0;
                for i in (l..m).rev() {
                    c3 = c2;
                    c2 = c;
                    s2 = s;
                    g = c * e[i];
                    h = c * p;
                    r = p.hypot(e[i]);
                    e[i + 1] = s * r;
                    s = e[i] / r;
                    c = p / r;
                    p = c * d[i] - s * g;
                    d[i + 1] = h + s * (c * g + s * d[i]);
                    // Accumulate the transformation.
                    for k in 0..n {
                        let h = v[(k, i + 1)];
                        v[(k, i + 1)] = s * v[(k, i)] + c * h;
                        v[(k, i)] = c * v[(k, i)] - s * h;
                    }
                }
                p = -s * s2 * c3 * el1 * e[l] / dl1;
                e[l] = s * p;
                d[l] = c * p;
                if e[l].abs() <= eps * tst1 {
                    break;
                }
            }
        }
        d[l] += f;
        e[l] = 0.0;
    }
    // Sort eigenvalues (and vectors) ascending.
    for i in 0..n.saturating_sub(1) {
        let mut k = i;
        for j in i + 1..n {
            if d[j] < d[k] {
                k = j;
            }
        }
        if k != i {
            d.swap(i, k);
            for r in 0..n {
                let t = v[(r, i)];
                v[(r, i)] = v[(r, k)];
                v[(r, k)] = t;
            }
        }
    }
    Ok(())
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
