//! Cross-organization stacking (stacking paper Algorithm 2, PST-S, in the multi-party
//! setting): the paper's `K` disjoint row subsets of `D^l` are the organizations themselves.
//!
//! 1. Each organization splits its rows at random into `D^l` (`low_fraction`) and `D^h`
//!    (Algorithm 2 step 1, [`crate::dp::stacking::split_rows`]), fits its low level on its
//!    `D^l` and publishes it ([`Published`]): one PLR (Algorithm 1, rows scaled to norm 1), or
//!    PLR-FS over `G` random feature groups of equal importance (stacking paper Algorithm 3
//!    steps 2-13, PST-F(U)'s low level; the groups are drawn from the organization's seed and
//!    published with the model).
//! 2. Each organization computes the meta rows `[p_1, ..., p_M, 1]` of its own `D^h` from all
//!    `M` published group models (step 6 / 14; the constant is the high level's intercept), in
//!    the order the organizations are listed.
//! 3. The high-level model is fitted over every organization's meta rows by a secure PLR
//!    study (`privlogit_protocols::secure::perturbation`): no organization's `D^h` leaves it, and
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
use crate::dp::feature_split::{self, FeatureSplit};
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
    /// Feature names of the data the model reads.
    pub names: Vec<String>,
    /// The low level: one group of every feature (PLR), or `G` feature groups (PLR-FS).
    pub groups: Vec<GroupModel>,
    /// The budget the model was fitted under (on `D^l`).
    pub epsilon: f64,
    /// PLR's lambda.
    pub lambda: f64,
    /// Rows in `D^l`.
    pub rows: usize,
}

/// One group's model: its features' rows scaled to norm `importance`, then `w`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupModel {
    /// The group's feature indices (into `names`).
    pub features: Vec<usize>,
    /// `q_k` (1 for a single group).
    pub importance: f64,
    /// The coefficients, one per feature of the group.
    pub w: Vec<f64>,
}

/// The format tag of a published low-level model.
pub const PUBLISHED_FORMAT: &str = "privlogit published low-level model v2";

impl Published {
    /// `n x G`: column `k` is group `k`'s `P(y = 1 | x)` for every row of `x` (columns in
    /// `names`' order).
    pub fn probabilities(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        let mut out = Array2::zeros((x.nrows(), self.groups.len()));
        for (k, g) in self.groups.iter().enumerate() {
            let model = LinearModel {
                w: Array1::from(g.w.clone()),
                scaling: RowScaling::Normalize,
                target: g.importance,
            };
            out.column_mut(k)
                .assign(&model.probabilities(x.select(Axis(1), &g.features).view()));
        }
        out
    }

    /// The single group's coefficients over every feature (a plain PLR), if that is what this
    /// is: what transfer uses as its centre.
    pub fn single(&self) -> Option<&[f64]> {
        match &self.groups[..] {
            [g] if g.features.iter().copied().eq(0..self.names.len()) => Some(&g.w),
            _ => None,
        }
    }

    /// Refuses a model of another format, whose groups do not fit its features, or whose
    /// features are not `names`.
    pub fn check(&self, names: &[String]) -> Result<(), String> {
        if self.format != PUBLISHED_FORMAT {
            return Err(format!(
                "{:?} is not a published low-level model ({PUBLISHED_FORMAT:?})",
                self.format
            ));
        }
        let d = self.names.len();
        if self.groups.is_empty()
            || self.groups.iter().any(|g| {
                g.features.is_empty()
                    || g.features.len() != g.w.len()
                    || g.features.iter().any(|&f| f >= d)
                    || !(g.importance.is_finite() && (0.0..=1.0).contains(&g.importance))
                    || g.w.iter().any(|w| !w.is_finite())
            })
        {
            return Err(format!(
                "{}'s model has groups that do not fit its {d} features",
                self.organization
            ));
        }
        if self.names != names {
            let first = self
                .names
                .iter()
                .zip(names)
                .position(|(a, b)| a != b)
                .unwrap_or(self.names.len().min(names.len()));
            let at = |list: &[String]| {
                list.get(first)
                    .map_or("none".to_string(), |n| format!("{n:?}"))
            };
            return Err(format!(
                "{}'s model has {} features, this data {} (first difference at column {}: {} in \
                 the model, {} here)",
                self.organization,
                self.names.len(),
                names.len(),
                first + 1,
                at(&self.names),
                at(names)
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

/// An organization's low level: one PLR, or PLR-FS over feature groups.
#[derive(Debug, Clone, PartialEq)]
pub enum Grouping {
    /// One PLR over every feature.
    Single,
    /// PLR-FS over this many random groups, `q_k = 1/G` (PST-F(U)).
    Random(usize),
    /// PLR-FS over this many groups of features sorted by these public scores, `q_k` by the
    /// stacking paper's eq. (6) (PST-F(W)); the scores must not come from the private data.
    ByScore(usize, Vec<f64>),
}

/// Step 1 of the pipeline for one organization: on its `D^l`, PLR with rows scaled to norm 1,
/// or PLR-FS over feature groups (random ones drawn from `rng`): the whole low level is
/// epsilon-DP either way (stacking paper Theorem 4).
pub fn publish<R: Rng + ?Sized>(
    organization: &str,
    names: &[String],
    halves: &Halves,
    epsilon: f64,
    lambda: f64,
    grouping: Grouping,
    rng: &mut R,
) -> Result<Published, DpError> {
    let (x, y) = (halves.low.0.view(), halves.low.1.view());
    let d = x.ncols();
    let (privacy, scaling) = (Privacy::Epsilon(epsilon), RowScaling::Normalize);
    let split = match grouping {
        Grouping::Single => None,
        Grouping::Random(g) => Some(FeatureSplit::random(d, g, rng)?),
        Grouping::ByScore(g, scores) => Some(FeatureSplit::by_importance(&scores, g)?),
    };
    let fitted = if let Some(split) = split {
        let models = feature_split::plr_fs(
            x,
            y,
            &split,
            privacy,
            &vec![lambda; split.k()],
            None,
            scaling,
            rng,
        )?;
        split
            .groups()
            .iter()
            .zip(split.importance())
            .zip(&models.models)
            .map(|((features, &importance), m)| GroupModel {
                features: features.clone(),
                importance,
                w: m.w.to_vec(),
            })
            .collect()
    } else {
        let model = plr::fit(x, y, privacy, lambda, scaling, None, rng)?;
        vec![GroupModel {
            features: (0..d).collect(),
            importance: 1.0,
            w: model.w.to_vec(),
        }]
    };
    Ok(Published {
        format: PUBLISHED_FORMAT.to_string(),
        organization: organization.to_string(),
        names: names.to_vec(),
        groups: fitted,
        epsilon,
        lambda,
        rows: x.nrows(),
    })
}

/// Step 2 for one organization: the meta rows `[p_1, ..., p_M, 1]` of its `D^h`, every
/// published group model in order.
pub fn meta_features(models: &[Published], x_high: ArrayView2<'_, f64>) -> Array2<f64> {
    let parts: Vec<Array2<f64>> = models.iter().map(|m| m.probabilities(x_high)).collect();
    let views: Vec<ArrayView2<'_, f64>> = parts.iter().map(|p| p.view()).collect();
    meta_rows(&ndarray::concatenate(Axis(1), &views).expect("one row per D^h row"))
}

/// Names of the meta columns: one per organization (and group, when there are several), then
/// the constant.
pub fn meta_names(models: &[Published]) -> Vec<String> {
    models
        .iter()
        .flat_map(|m| match m.groups.len() {
            1 => vec![format!("p_{}", m.organization)],
            g => (1..=g)
                .map(|k| format!("p_{}_{k}", m.organization))
                .collect(),
        })
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
            groups: vec![GroupModel {
                features: vec![0, 1],
                importance: 1.0,
                w: w.to_vec(),
            }],
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
        // Two feature groups of one feature each, importance 1/2: a row (3, 4) becomes
        // (0.5, 0.5) in each group, and PLR-FS models read them.
        let split =
            publish("z", &names, &h, 1.0, 0.01, Grouping::Random(2), &mut rng).expect("PLR-FS");
        let weighted = publish(
            "w",
            &names,
            &h,
            1.0,
            0.01,
            Grouping::ByScore(2, vec![3.0, 1.0]),
            &mut rng,
        )
        .expect("PLR-FS(W)");
        let q: Vec<(Vec<usize>, f64)> = weighted
            .groups
            .iter()
            .map(|g| (g.features.clone(), g.importance))
            .collect();
        assert_eq!(q, [(vec![0], 0.75), (vec![1], 0.25)]);
        assert_eq!(split.groups.len(), 2);
        assert!(split.single().is_none() && models[0].single().is_some());
        assert!(
            split
                .groups
                .iter()
                .all(|g| g.importance == 0.5 && g.w.len() == 1)
        );
        let p = split.probabilities(x.view());
        for (k, g) in split.groups.iter().enumerate() {
            let sign = x[[0, g.features[0]]].signum();
            assert!((p[[0, k]] - s(0.5 * sign * g.w[0])).abs() < 1e-15);
        }
        let meta = meta_features(&[models[0].clone(), split], x.view());
        assert_eq!(meta.ncols(), 4);
    }
}
