//! Differential privacy (the stacking paper: Yao et al., Privacy-preserving Stacking with Application to
//! Cross-organizational Diabetes Prediction, IJCAI 2019; the transfer paper: Guo et al.,
//! Privacy-preserving Transfer Learning for Knowledge Sharing, arXiv 1811.09491).
//!
//! - [`plr`]: PLR (stacking Algorithm 1, objective perturbation) and output perturbation;
//! - [`scaling`]: Algorithm 1 step 7, rows to norm at most 1 (or `q_k`) without data-dependent
//!   constants;
//! - [`noise`]: the PLR noise vector, Laplace and Gaussian samplers, seeded or OS randomness;
//! - [`discrete`]: exact discrete Laplace and Gaussian samplers (Canonne-Kamath-Steinke 2020);
//! - [`lattice_gaussian`]: the same discrete Gaussian for integer variances, in machine words;
//! - [`feature_split`]: feature groups with importances and PLR-FS (transfer Algorithm 3);
//! - [`stacking`]: PST-S and PST-F (stacking Algorithms 2-3) with their combiners;
//! - [`transfer`]: SimComb, PPTL-FS and PST-H (transfer Algorithms 2 and 4, stacking Algorithm 4);
//! - [`dphtl`]: DP hypothesis transfer from several sources with DPIW (dissertation ch. 4);
//! - [`release`]: every single-target method behind one call (`dp fit` and `privlogit.dp`);
//! - [`penalised`]: logistic regression with row weights and a diagonal Gaussian prior;
//! - [`accounting`]: (epsilon, delta) composition, amplification by sampling, RDP and zCDP;
//! - [`ledger`]: epsilon spent per data set, and refusals past a total stored in the ledger;
//! - [`mnist`]: the digits table the papers' MNIST experiments read (`privlogit dp experiment`).

pub mod accounting;
pub mod discrete;
pub mod dphtl;
pub mod feature_split;
pub mod lattice_gaussian;
pub mod ledger;
pub mod mnist;
pub mod noise;
pub mod output_perturbation;
pub mod penalised;
pub mod plr;
pub mod release;
pub mod release_file;
pub mod scaling;
pub mod stacking;
pub mod transfer;

/// A parameter that cannot be used, named, refused before any work starts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid {name} = {value}: {reason}")]
#[non_exhaustive]
pub struct DpError {
    /// The parameter.
    pub name: &'static str,
    /// Its value.
    pub value: f64,
    /// Why it is refused.
    pub reason: &'static str,
}

impl DpError {
    /// A refused parameter: its `name`, its `value` and why.
    pub fn new(name: &'static str, value: f64, reason: &'static str) -> Self {
        Self {
            name,
            value,
            reason,
        }
    }

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
