//! Output perturbation, the sensitivity method of Chaudhuri, Monteleoni and Sarwate (2011,
//! Algorithm 1 there): the non-private minimiser of the regularised logistic loss, plus noise
//! scaled to its sensitivity. The baseline beside PLR's objective perturbation
//! ([`super::plr`]).

use ndarray::{ArrayView1, ArrayView2};
use rand::CryptoRng;

use super::noise::objective_noise;
use super::plr::{LinearModel, Privacy, minimise, signed};
use super::scaling::RowScaling;
use super::{DpError, positive};

/// Output perturbation, the sensitivity method of Chaudhuri, Monteleoni and Sarwate (2011,
/// Algorithm 1 there): the non-private minimiser of eq. (1) with `g = 1/2 ||w||^2` has l2
/// sensitivity `2/(n lambda)` on rows of norm at most 1 (the logistic loss is 1-Lipschitz), so
/// `w* + b` with density of `b` proportional to `exp(-(n lambda eps / 2) ||b||)` is
/// eps-differentially private. `b` is drawn as for PLR with `eps' = n lambda eps`, from a
/// cryptographic generator (the type refuses any other).
pub fn fit(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    privacy: Privacy,
    lambda: f64,
    scaling: RowScaling,
    rng: &mut dyn CryptoRng,
) -> Result<LinearModel, DpError> {
    let lambda = positive("lambda", lambda)?;
    let scaled = scaling.validate()?.apply_checked(x, 1.0)?;
    let mut w = minimise(scaled.view(), signed(y).view(), lambda, 0.0, None, None)?;
    if let Some(eps) = privacy.epsilon()? {
        w += &objective_noise(x.ncols(), x.nrows() as f64 * lambda * eps, rng).map_err(|_| {
            DpError {
                name: "epsilon",
                value: eps,
                reason: "too small: the noise's scale 2/(n lambda eps) leaves f64",
            }
        })?;
        if w.iter().any(|v| !v.is_finite()) {
            return Err(DpError {
                name: "epsilon",
                value: eps,
                reason: "is so small that the output noise is not finite in f64",
            });
        }
    }
    Ok(LinearModel {
        w,
        scaling,
        target: 1.0,
    })
}
