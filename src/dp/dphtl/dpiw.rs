//! DPIW, dissertation Algorithm 5 (after Ji and Elkan 2013): importance weights over a public
//! set `P` that make it look like a private set `X`, differentially private for `X`.
//!
//! Step 2 fits the discrimination of eq. (4.3), `X` labelled 1 and `P` labelled 0, each class's
//! loss averaged over its size, with penalty `lambda/2 ||beta||^2`; step 3 adds noise of density
//! proportional to `exp(-eps ||delta|| N_X lambda / sqrt(d))`; step 4 weighs each public row by
//! `exp(beta^T x)`, normalised to sum to `N_P`.
//!
//! The noise. With rows of norm at most 1 and a 1-Lipschitz loss, replacing one of `X`'s rows
//! moves the minimiser of eq. (4.3) by at most `2 / (N_X lambda)` (Chaudhuri, Monteleoni and
//! Sarwate 2011, Corollary 7, the public rows' term being a fixed convex function), so density
//! `exp(-eps N_X lambda ||delta|| / 2)` makes `beta_priv` eps-DP. Algorithm 5's `sqrt(d)` in
//! place of our 2 is the sensitivity for rows in `[0,1]^d` without the factor 2; we scale rows to
//! norm 1 and use the sound constant (for `d > 4` it is less noise than printed).

use ndarray::{Array1, ArrayView2, Axis, concatenate};
use rand::Rng;

use crate::dp::noise::objective_noise;
use crate::dp::penalised::Problem;
use crate::dp::{DpError, positive};

/// DPIW's output and what produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportanceWeights {
    /// The (noisy) discriminator `beta_priv`.
    pub beta: Array1<f64>,
    /// One weight per public row, summing to `N_P`.
    pub weights: Array1<f64>,
}

/// Step 2: the minimiser of eq. (4.3).
pub fn discriminator(
    x: ArrayView2<'_, f64>,
    public: ArrayView2<'_, f64>,
    lambda: f64,
) -> Result<Array1<f64>, DpError> {
    let lambda = positive("lambda_IW", lambda)?;
    let (nx, np) = (x.nrows(), public.nrows());
    if nx == 0 || np == 0 {
        return Err(DpError {
            name: "rows",
            value: 0.0,
            reason: "DPIW needs private and public rows",
        });
    }
    let rows = concatenate(Axis(0), &[x, public]).map_err(|_| DpError {
        name: "features",
        value: public.ncols() as f64,
        reason: "the private and public rows must have the same features",
    })?;
    let y: Array1<f64> = (0..nx + np)
        .map(|i| if i < nx { 1.0 } else { -1.0 })
        .collect();
    let c: Array1<f64> = (0..nx + np)
        .map(|i| {
            if i < nx {
                1.0 / nx as f64
            } else {
                1.0 / np as f64
            }
        })
        .collect();
    let d = x.ncols();
    let precision = Array1::from_elem(d, lambda);
    let mean = Array1::zeros(d);
    Problem {
        x: rows.view(),
        y: y.view(),
        weights: c.view(),
        precision: precision.view(),
        mean: mean.view(),
    }
    .solve()
}

/// The noise's scale: `||delta||` is Gamma(d, `2 / (eps N_X lambda)`) (see the module).
pub fn noise_scale(epsilon: f64, nx: usize, lambda: f64) -> f64 {
    2.0 / (epsilon * nx as f64 * lambda)
}

/// Step 4: `exp(beta^T x) N_P / Z` over the public rows (by log-sum-exp).
pub fn weights_of(beta: &Array1<f64>, public: ArrayView2<'_, f64>) -> Array1<f64> {
    let z = public.dot(beta);
    let top = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e = z.mapv(|v| (v - top).exp());
    let total = e.sum();
    e * (public.nrows() as f64 / total)
}

/// Algorithm 5 on private rows `x` and public rows `public` (both scaled to norm at most 1);
/// `epsilon = None` is the non-private estimate (the target's step 3).
pub fn dpiw<R: Rng + ?Sized>(
    x: ArrayView2<'_, f64>,
    public: ArrayView2<'_, f64>,
    epsilon: Option<f64>,
    lambda: f64,
    rng: &mut R,
) -> Result<ImportanceWeights, DpError> {
    let mut beta = discriminator(x, public, lambda)?;
    if let Some(eps) = epsilon {
        let eps = positive("epsilon", eps)?;
        beta += &objective_noise(x.ncols(), 2.0 / noise_scale(eps, x.nrows(), lambda), rng)?;
    }
    let weights = weights_of(&beta, public);
    if weights.iter().any(|w| !w.is_finite()) {
        return Err(DpError {
            name: "epsilon",
            value: epsilon.unwrap_or(f64::INFINITY),
            reason: "leaves the importance weights non-finite",
        });
    }
    Ok(ImportanceWeights { beta, weights })
}
