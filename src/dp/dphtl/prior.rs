//! The Gaussian prior of eq. (4.2) and the MAP logistic regression under it (Algorithm 4 steps
//! 5-6, after Marx et al.): minimise `sum_i log(1 + exp(-y_i x_i^T t)) + sum_j (t_j -
//! mu_j)^2 / (2 sigma_j^2)` on the target's labelled rows.
//!
//! Eq. (4.2)'s `sigma(j)` is zero where the weighted hypotheses agree (always, when one source
//! takes all the weight), which would pin `t(j)` to `mu(j)` whatever the target's labels say.
//! A public floor `sigma_min` keeps the prior a prior; it is a setting, chosen on validation
//! data like the penalties.

use ndarray::{Array1, ArrayView1, ArrayView2};

use crate::dp::DpError;
use crate::dp::penalised::Problem;
use crate::dp::plr::signed;

/// A diagonal Gaussian prior.
#[derive(Debug, Clone, PartialEq)]
pub struct GaussianPrior {
    /// Means.
    pub mean: Array1<f64>,
    /// Standard deviations (positive).
    pub sd: Array1<f64>,
}

/// Eq. (4.2): `mu = sum_k w_H(k) theta^k`, `sigma(j) = sqrt(K/(K-1) sum_k w_H(k) (theta^k(j) -
/// mu(j))^2)`, floored at `sd_floor`.
pub fn prior(
    hypotheses: &[Array1<f64>],
    weights: ArrayView1<'_, f64>,
    sd_floor: f64,
) -> Result<GaussianPrior, DpError> {
    let k = hypotheses.len();
    if k < 2 || weights.len() != k {
        return Err(DpError {
            name: "sources",
            value: k as f64,
            reason: "eq. (4.2) needs at least two hypotheses and one weight each",
        });
    }
    let sd_floor = crate::dp::positive("prior sd floor", sd_floor)?;
    let d = hypotheses[0].len();
    let mut mean = Array1::<f64>::zeros(d);
    for (h, w) in hypotheses.iter().zip(weights) {
        mean.scaled_add(*w, h);
    }
    let mut var = Array1::<f64>::zeros(d);
    for (h, w) in hypotheses.iter().zip(weights) {
        let off = h - &mean;
        var.scaled_add(*w, &(&off * &off));
    }
    let sd = (var * (k as f64 / (k as f64 - 1.0))).mapv(|v| v.sqrt().max(sd_floor));
    Ok(GaussianPrior { mean, sd })
}

/// The MAP coefficients on rows `x` with 0/1 labels `y` under `prior`.
pub fn map_fit(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    prior: &GaussianPrior,
) -> Result<Array1<f64>, DpError> {
    let signs = signed(y);
    let ones = Array1::from_elem(x.nrows(), 1.0);
    let precision = prior.sd.mapv(|s| 1.0 / (s * s));
    Problem {
        x,
        y: signs.view(),
        weights: ones.view(),
        precision: precision.view(),
        mean: prior.mean.view(),
    }
    .solve()
}
