//! Differential privacy (stacking paper `../shared/papers/002_*.txt`, transfer paper `000_*.txt`).
//!
//! Built so far: the privacy constants of PLR (stacking paper Algorithm 1), the noise vector it
//! perturbs the objective with, and the minimiser of the perturbed objective. Still to come (issue "Differentially private logistic
//! regression, privacy-preserving stacking and transfer"): the PLR fit end to end (row
//! scaling, budget, noise, solve), output perturbation,
//! stacking, transfer, the accountant, PCA and the experiments.

pub mod accountant;
pub mod experiment;
pub mod feature_split;
pub mod mnist;
pub mod noise;
pub mod plr;
pub mod scaling;
pub mod stacking;
pub mod transfer;

/// A parameter that cannot be used, named, refused before any work starts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid {name} = {value}: {reason}")]
pub struct DpError {
    /// The parameter.
    pub name: &'static str,
    /// Its value.
    pub value: f64,
    /// Why it is refused.
    pub reason: &'static str,
}

impl DpError {
    /// `value` if it is finite and positive, else an error naming `name`.
    pub fn check_positive(name: &'static str, value: f64) -> Result<f64, DpError> {
        positive(name, value)
    }
}

/// `value` if it is finite and positive, else a named error.
pub(crate) fn positive(name: &'static str, value: f64) -> Result<f64, DpError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(DpError {
            name,
            value,
            reason: "must be positive and finite",
        })
    }
}
