//! Cross-organization stacking (stacking paper Algorithm 2, PST-S, in the multi-party
//! setting): the paper's `K` disjoint row subsets of `D^l` are the organizations themselves.
//!
//! 1. Each organization splits its rows at random into `D^l` (`low_fraction`) and `D^h`
//!    (Algorithm 2 step 1, [`crate::dp::stacking::split_rows`]), fits one PLR on its `D^l`
//!    (Algorithm 1, rows scaled to norm 1) and publishes it ([`Published`]).
//! 2. Each organization computes the meta rows `[p_1, ..., p_K, 1]` of its own `D^h` from all
//!    `K` published models (step 6; the constant is the high level's intercept), in the order
//!    the organizations are listed.
//! 3. The high-level model is fitted over every organization's meta rows by a secure PLR
//!    study (`privlogit_protocols::secure::release`): no organization's `D^h` leaves it, and
//!    the published high level is epsilon-DP.
//!
//! Budget: every row is in `D^l` or in `D^h`, never both, and each part's release is
//! epsilon-DP (the low models on `D^l`; the high level on `D^h`, the published low models being
//! public by then), so each organization's data set spends epsilon once (parallel
//! composition, the paper's Theorem 4); the ledger charges it once, when its low model is fitted.

use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::dp::DpError;
use crate::dp::plr::{self, LinearModel, Privacy};
use crate::dp::scaling::RowScaling;
use crate::dp::stacking::{meta_rows, split_rows};

/// A low-level model as an organization publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Published {
    /// Always [`PUBLISHED_FORMAT`].
    pub format: String,
    /// The organization.
    pub organization: String,
    /// Feature names, in the order of `w` (rows are scaled to norm 1 before `w` applies).
    pub names: Vec<String>,
    /// The coefficients.
    pub w: Vec<f64>,
    /// The budget the model was fitted under (on `D^l`).
    pub epsilon: f64,
    /// PLR's lambda.
    pub lambda: f64,
    /// Rows in `D^l`.
    pub rows: usize,
}

/// The format tag of a published low-level model.
pub const PUBLISHED_FORMAT: &str = "privlogit published low-level model v1";

impl Published {
    /// `P(y = 1 | x)` for every row of `x` (columns in this model's order).
    pub fn probabilities(&self, x: ArrayView2<'_, f64>) -> Array1<f64> {
        LinearModel {
            w: Array1::from(self.w.clone()),
            scaling: RowScaling::Normalize,
            target: 1.0,
        }
        .probabilities(x)
    }

    /// Refuses a model of another format or whose features are not `names`.
    pub fn check(&self, names: &[String]) -> Result<(), String> {
        if self.format != PUBLISHED_FORMAT {
            return Err(format!(
                "{:?} is not a published low-level model ({PUBLISHED_FORMAT:?})",
                self.format
            ));
        }
        if self.names != names || self.w.len() != names.len() {
            let first = self
                .names
                .iter()
                .zip(names)
                .position(|(a, b)| a != b)
                .unwrap_or(self.names.len().min(names.len()));
            return Err(format!(
                "{}'s model has features {:?}, this data {:?} (first difference at column {})",
                self.organization,
                self.names.len(),
                names.len(),
                first + 1
            ));
        }
        Ok(())
    }
}

/// One organization's rows split into `D^l` and `D^h` (Algorithm 2 step 1).
#[derive(Debug, Clone)]
pub struct Halves {
    /// `D^l`'s rows and labels.
    pub low: (Array2<f64>, Array1<f64>),
    /// `D^h`'s rows and labels.
    pub high: (Array2<f64>, Array1<f64>),
}

/// Splits `x`, `y` at random, `low_fraction` of the rows into `D^l`.
pub fn halves<R: Rng + ?Sized>(
    x: ArrayView2<'_, f64>,
    y: ndarray::ArrayView1<'_, f64>,
    low_fraction: f64,
    rng: &mut R,
) -> Result<Halves, DpError> {
    let (low, high) = split_rows(x.nrows(), low_fraction, rng)?;
    Ok(Halves {
        low: (x.select(Axis(0), &low), y.select(Axis(0), &low)),
        high: (x.select(Axis(0), &high), y.select(Axis(0), &high)),
    })
}

/// Step 1 of the pipeline for one organization: PLR on its `D^l` with rows scaled to norm 1.
pub fn publish<R: Rng + ?Sized>(
    organization: &str,
    names: &[String],
    halves: &Halves,
    epsilon: f64,
    lambda: f64,
    rng: &mut R,
) -> Result<Published, DpError> {
    let (x, y) = &halves.low;
    let model = plr::fit(
        x.view(),
        y.view(),
        Privacy::Epsilon(epsilon),
        lambda,
        RowScaling::Normalize,
        None,
        rng,
    )?;
    Ok(Published {
        format: PUBLISHED_FORMAT.to_string(),
        organization: organization.to_string(),
        names: names.to_vec(),
        w: model.w.to_vec(),
        epsilon,
        lambda,
        rows: x.nrows(),
    })
}

/// Step 2 for one organization: the meta rows `[p_1, ..., p_K, 1]` of its `D^h`.
pub fn meta_features(models: &[Published], x_high: ArrayView2<'_, f64>) -> Array2<f64> {
    let mut low = Array2::zeros((x_high.nrows(), models.len()));
    for (k, m) in models.iter().enumerate() {
        low.column_mut(k).assign(&m.probabilities(x_high));
    }
    meta_rows(&low)
}

/// Names of the meta columns: one per organization, then the constant.
pub fn meta_names(models: &[Published]) -> Vec<String> {
    models
        .iter()
        .map(|m| format!("p_{}", m.organization))
        .chain(std::iter::once("one".to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn meta_rows_hold_each_models_probability_and_a_constant() {
        let names = vec!["a".to_string(), "b".to_string()];
        let model = |org: &str, w: [f64; 2]| Published {
            format: PUBLISHED_FORMAT.into(),
            organization: org.into(),
            names: names.clone(),
            w: w.to_vec(),
            epsilon: 1.0,
            lambda: 0.01,
            rows: 10,
        };
        let models = [model("x", [1.0, 0.0]), model("y", [0.0, -2.0])];
        let x = ndarray::array![[3.0, 4.0]];
        let meta = meta_features(&models, x.view());
        // Row scaled to (0.6, 0.8): sigmoid(0.6) and sigmoid(-1.6).
        let s = |z: f64| 1.0 / (1.0 + (-z).exp());
        assert!((meta[[0, 0]] - s(0.6)).abs() < 1e-15);
        assert!((meta[[0, 1]] - s(-1.6)).abs() < 1e-15);
        assert_eq!(meta[[0, 2]], 1.0);
        assert_eq!(meta_names(&models), ["p_x", "p_y", "one"]);
        assert!(models[0].check(&names).is_ok());
        assert!(models[0].check(&["a".to_string()]).is_err());
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let xs = Array2::from_shape_fn((10, 2), |(i, j)| (i + j) as f64);
        let ys = Array1::from_shape_fn(10, |i| (i % 2) as f64);
        let h = halves(xs.view(), ys.view(), 0.5, &mut rng).expect("splits");
        assert_eq!((h.low.0.nrows(), h.high.0.nrows()), (5, 5));
    }
}
