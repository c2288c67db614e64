//! Principal component analysis, for the differential-privacy experiments (the papers reduce
//! MNIST to 100 dimensions before any private learning).
//!
//! Privacy caveat (stacking paper section 4.1, transfer paper section 4.1): PCA here is not
//! differentially private. Fitting it on private rows leaks through the components and their
//! variances (which PST-F(W) also uses as feature importances); the papers accept this "for
//! simplicity of the ablation study" and note that importances should come from side
//! information. The experiments fit PCA on training rows only, never on test rows.
//!
//! Method: the covariance matrix, then its leading eigenpairs, by cyclic Jacobi rotations when
//! it is small and by subspace iteration with Rayleigh-Ritz (Jacobi on the projected matrix)
//! otherwise; iteration stops when every wanted eigenpair's residual `||C v - l v||` is below
//! 1e-10 times the largest eigenvalue.

use ndarray::{Array1, Array2, ArrayView2, Axis, s};
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

/// A fitted PCA: centre, leading directions and the variance along each.
#[derive(Debug, Clone, PartialEq)]
pub struct Pca {
    /// Column means of the fitted rows.
    pub mean: Array1<f64>,
    /// `d x k`, orthonormal columns, by decreasing variance.
    pub components: Array2<f64>,
    /// The variance along each component (eigenvalues of the sample covariance, divisor n-1).
    pub variances: Array1<f64>,
    /// The largest eigenpair residual `||C v - l v||` relative to the largest eigenvalue (below
    /// 1e-10 unless subspace iteration ran out of steps).
    pub residual: f64,
}

/// Above this dimension the eigenpairs come from subspace iteration.
const JACOBI_LIMIT: usize = 200;

impl Pca {
    /// The `k` leading components of `x`'s rows. Panics if `k` is 0 or exceeds the columns, or
    /// if there are fewer than 2 rows (callers validate first).
    pub fn fit(x: ArrayView2<'_, f64>, k: usize) -> Self {
        let (n, d) = x.dim();
        assert!(
            k >= 1 && k <= d && n >= 2,
            "PCA needs 1 <= k <= d and 2 rows"
        );
        let mean = x.mean_axis(Axis(0)).expect("rows");
        let centred = &x - &mean;
        let covariance = centred.t().dot(&centred) / (n as f64 - 1.0);
        let (variances, components) = if d <= JACOBI_LIMIT {
            let (values, vectors) = jacobi_eigen(&covariance);
            (
                values.slice(s![..k]).to_owned(),
                vectors.slice(s![.., ..k]).to_owned(),
            )
        } else {
            subspace_eigen(&covariance, k)
        };
        let residual = relative_residual(&covariance, &variances, &components);
        Self {
            mean,
            components,
            variances,
            residual,
        }
    }

    /// `x`'s rows in the component basis (`n x k`).
    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        (&x - &self.mean).dot(&self.components)
    }
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

/// All eigenpairs of symmetric `a` by cyclic Jacobi rotations, sorted by decreasing value.
pub fn jacobi_eigen(a: &Array2<f64>) -> (Array1<f64>, Array2<f64>) {
    let d = a.nrows();
    let mut a = a.clone();
    let mut v = Array2::<f64>::eye(d);
    let scale = a
        .iter()
        .map(|x| x * x)
        .sum::<f64>()
        .sqrt()
        .max(f64::MIN_POSITIVE);
    for _sweep in 0..100 {
        let off: f64 = (0..d)
            .flat_map(|p| (p + 1..d).map(move |q| (p, q)))
            .map(|(p, q)| a[[p, q]] * a[[p, q]])
            .sum::<f64>()
            .sqrt();
        if off <= 1e-14 * scale {
            break;
        }
        for p in 0..d {
            for q in p + 1..d {
                let apq = a[[p, q]];
                if apq.abs() <= 1e-300 {
                    continue;
                }
                // The rotation that zeroes a[p][q]: t = tan(theta), the smaller root.
                let theta = (a[[q, q]] - a[[p, p]]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let sn = t * c;
                for r in 0..d {
                    let (arp, arq) = (a[[r, p]], a[[r, q]]);
                    a[[r, p]] = c * arp - sn * arq;
                    a[[r, q]] = sn * arp + c * arq;
                }
                for r in 0..d {
                    let (apr, aqr) = (a[[p, r]], a[[q, r]]);
                    a[[p, r]] = c * apr - sn * aqr;
                    a[[q, r]] = sn * apr + c * aqr;
                }
                // Exactly zero by construction; rounding would leave ~1e-16 |a_pp| behind.
                a[[p, q]] = 0.0;
                a[[q, p]] = 0.0;
                for r in 0..d {
                    let (vrp, vrq) = (v[[r, p]], v[[r, q]]);
                    v[[r, p]] = c * vrp - sn * vrq;
                    v[[r, q]] = sn * vrp + c * vrq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..d).collect();
    order.sort_by(|&i, &j| a[[j, j]].total_cmp(&a[[i, i]]));
    let values = order.iter().map(|&i| a[[i, i]]).collect();
    (values, v.select(Axis(1), &order))
}

/// The `k` leading eigenpairs of symmetric positive semi-definite `c` by subspace iteration on
/// a block of `k + 30` vectors, orthonormalised every step, with Rayleigh-Ritz every 5 steps.
pub fn subspace_eigen(c: &Array2<f64>, k: usize) -> (Array1<f64>, Array2<f64>) {
    let d = c.nrows();
    let m = (k + 30).min(d);
    // A fixed start: PCA is not a privacy mechanism, and fixed makes runs reproducible.
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5ca1ab1e);
    let mut q = Array2::from_shape_fn((d, m), |_| StandardNormal.sample(&mut rng));
    orthonormalise(&mut q);
    let largest = c
        .diag()
        .iter()
        .cloned()
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let mut best = (Array1::zeros(k), Array2::zeros((d, k)));
    for step in 1..=2000 {
        q = c.dot(&q);
        orthonormalise(&mut q);
        if step % 5 != 0 {
            continue;
        }
        let projected = q.t().dot(&c.dot(&q));
        let (values, vectors) = jacobi_eigen(&projected);
        q = q.dot(&vectors);
        let leading = q.slice(s![.., ..k]).to_owned();
        let residual = (c.dot(&leading) - &leading * &values.slice(s![..k]))
            .map_axis(Axis(0), |col| col.dot(&col).sqrt())
            .fold(0.0f64, |a, &b| a.max(b));
        best = (values.slice(s![..k]).to_owned(), leading);
        if residual <= 1e-10 * largest.max(best.0[0]) {
            break;
        }
    }
    best
}

/// Modified Gram-Schmidt on the columns of `q`, twice (for orthogonality to rounding).
fn orthonormalise(q: &mut Array2<f64>) {
    for _ in 0..2 {
        for j in 0..q.ncols() {
            for i in 0..j {
                let proj = q.column(i).dot(&q.column(j));
                let qi = q.column(i).to_owned();
                q.column_mut(j).scaled_add(-proj, &qi);
            }
            let norm = q.column(j).dot(&q.column(j)).sqrt();
            if norm > 0.0 {
                q.column_mut(j).mapv_inplace(|x| x / norm);
            }
        }
    }
}
