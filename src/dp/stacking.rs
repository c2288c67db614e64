//! Privacy-preserving stacking (stacking paper section 3): PST-S (Algorithm 2, sample
//! partitioning), PST-F (Algorithm 3, feature partitioning with importance), and the high-level
//! combiners compared in its Figure 3 (PLR stacking, majority vote, weighted vote).
//!
//! Choices where the paper is silent, written down:
//! - `D^l` and `D^h` are a random split of the rows, `low_fraction` of them for `D^l` (the
//!   paper's experiments use 50 %). The two parts are disjoint, so each row is used once with
//!   budget `eps` and the whole is `eps`-private (parallel composition; Propositions 3, Theorem 4).
//! - The meta row of step 6 / 14 is `[sigma_1, ..., sigma_K, 1]`: the constant column is the
//!   high-level model's intercept (standard in stacking; without it the combiner cannot shift
//!   its threshold). Each meta row has norm at most `sqrt(K + 1)`, a public bound, so the rows
//!   are divided by it (Algorithm 1 step 7 without looking at the data).

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, concatenate};
use rand::Rng;
use rand::seq::SliceRandom;

use super::feature_split::{self, FeatureSplit, SplitModel};
use super::plr::{self, LinearModel, Privacy};
use super::scaling::RowScaling;
use super::{DpError, positive};

/// How the low-level predictions are combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Combiner {
    /// A PLR trained on `D^h`'s meta rows with this penalty (the papers' stacking, "C-hl").
    Stacking {
        /// The high-level penalty.
        lambda: f64,
    },
    /// The fraction of low-level models predicting 1 ("C-mv"); uses no `D^h`.
    MajorityVote,
    /// The `q_k`-weighted fraction of models predicting 1 ("C-wmv"); uses no `D^h`.
    WeightedVote,
}

/// The low level of a stacked model.
#[derive(Debug, Clone, PartialEq)]
pub enum LowLevel {
    /// PST-S: `K` models on disjoint row subsets, all features.
    Samples(Vec<LinearModel>),
    /// PST-F: one model per feature group.
    Features(SplitModel),
}

/// A stacked model: low-level models and how they are combined.
#[derive(Debug, Clone, PartialEq)]
pub struct Stacked {
    /// The low-level models.
    pub low: LowLevel,
    /// The high-level model (for [`Combiner::Stacking`]).
    pub high: Option<LinearModel>,
    /// How the low level is combined.
    pub combiner: Combiner,
}

impl Stacked {
    /// `n x K` low-level probabilities.
    pub fn low_probabilities(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        match &self.low {
            LowLevel::Samples(models) => {
                let mut out = Array2::zeros((x.nrows(), models.len()));
                for (k, m) in models.iter().enumerate() {
                    out.column_mut(k).assign(&m.probabilities(x));
                }
                out
            }
            LowLevel::Features(split) => split.group_probabilities(x),
        }
    }

    /// The combined score of every row (a probability for stacking, a vote share otherwise).
    pub fn scores(&self, x: ArrayView2<'_, f64>) -> Array1<f64> {
        let low = self.low_probabilities(x);
        match (self.combiner, &self.high) {
            (Combiner::Stacking { .. }, Some(high)) => high.probabilities(meta_rows(&low).view()),
            (Combiner::WeightedVote, _) => {
                let q: Vec<f64> = match &self.low {
                    LowLevel::Features(s) => s.split.importance().to_vec(),
                    LowLevel::Samples(m) => vec![1.0 / m.len() as f64; m.len()],
                };
                low.map_axis(Axis(1), |row| {
                    row.iter()
                        .zip(&q)
                        .filter(|(p, _)| **p >= 0.5)
                        .map(|(_, q)| q)
                        .sum()
                })
            }
            _ => {
                // Groups of importance zero saw no data and do not vote.
                let voters: Vec<bool> = match &self.low {
                    LowLevel::Features(s) => {
                        s.split.importance().iter().map(|&q| q > 0.0).collect()
                    }
                    LowLevel::Samples(m) => vec![true; m.len()],
                };
                let count = voters.iter().filter(|&&v| v).count().max(1) as f64;
                low.map_axis(Axis(1), |row| {
                    row.iter()
                        .zip(&voters)
                        .filter(|&(&p, &v)| v && p >= 0.5)
                        .count() as f64
                        / count
                })
            }
        }
    }
}

/// Step 6 / 14's meta rows with an intercept column: `[p_1, ..., p_K, 1]`.
pub fn meta_rows(low: &Array2<f64>) -> Array2<f64> {
    let ones = Array2::ones((low.nrows(), 1));
    concatenate(Axis(1), &[low.view(), ones.view()]).expect("same row count")
}

/// The public scaling of meta rows: entries lie in [0, 1], so norms are at most `sqrt(K + 1)`.
fn meta_scaling(k: usize) -> RowScaling {
    RowScaling::Clip {
        bound: ((k + 1) as f64).sqrt(),
    }
}

/// `low_fraction` if it is strictly between 0 and 1.
pub(crate) fn check_fraction(low_fraction: f64) -> Result<(), DpError> {
    let f = positive("low fraction", low_fraction)?;
    if f >= 1.0 {
        return Err(DpError {
            name: "low fraction",
            value: f,
            reason: "must be below 1 (D^h needs rows)",
        });
    }
    Ok(())
}

/// Rows split into `D^l` (`low_fraction` of them, at random) and `D^h` (step 1).
pub fn split_rows<R: Rng + ?Sized>(
    n: usize,
    low_fraction: f64,
    rng: &mut R,
) -> Result<(Vec<usize>, Vec<usize>), DpError> {
    check_fraction(low_fraction)?;
    let f = low_fraction;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(rng);
    let cut = (n as f64 * f).round() as usize;
    if cut == 0 || cut == n {
        return Err(DpError {
            name: "rows",
            value: n as f64,
            reason: "too few to split into D^l and D^h",
        });
    }
    let high = order.split_off(cut);
    Ok((order, high))
}

/// Trains the combiner on `D^h` (Algorithm 2 step 7, Algorithm 3 step 15).
fn combine<R: Rng + ?Sized>(
    low: LowLevel,
    combiner: Combiner,
    x_high: ArrayView2<'_, f64>,
    y_high: ArrayView1<'_, f64>,
    privacy: Privacy,
    rng: &mut R,
) -> Result<Stacked, DpError> {
    let mut stacked = Stacked {
        low,
        high: None,
        combiner,
    };
    if let Combiner::Stacking { lambda } = combiner {
        let meta = meta_rows(&stacked.low_probabilities(x_high));
        let scaling = meta_scaling(meta.ncols() - 1);
        stacked.high = Some(plr::fit(
            meta.view(),
            y_high,
            privacy,
            lambda,
            scaling,
            None,
            rng,
        )?);
    }
    Ok(stacked)
}

/// Settings shared by the stacking methods.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StackingSettings {
    /// The budget (spent once on every row).
    pub privacy: Privacy,
    /// The low-level penalty (every group / subset).
    pub lambda: f64,
    /// The combiner.
    pub combiner: Combiner,
    /// The share of rows in `D^l`.
    pub low_fraction: f64,
    /// Row scaling of the low-level data.
    pub scaling: RowScaling,
}

impl StackingSettings {
    /// Every parameter checked before any work starts.
    pub fn validate(&self) -> Result<(), DpError> {
        self.privacy.epsilon()?;
        positive("lambda", self.lambda)?;
        if let Combiner::Stacking { lambda } = self.combiner {
            positive("high-level lambda", lambda)?;
        }
        check_fraction(self.low_fraction)?;
        self.scaling.validate()?;
        Ok(())
    }
}

/// PST-S (stacking paper Algorithm 2): `k` PLRs on disjoint row subsets of `D^l`, combined on
/// `D^h`. Labels `y` are 0/1.
pub fn pst_s<R: Rng + ?Sized>(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    k: usize,
    settings: &StackingSettings,
    rng: &mut R,
) -> Result<Stacked, DpError> {
    settings.validate()?;
    let (low_rows, high_rows) = split_rows(x.nrows(), settings.low_fraction, rng)?;
    if k == 0 || k > low_rows.len() {
        return Err(DpError {
            name: "K",
            value: k as f64,
            reason: "must be between 1 and the number of rows in D^l",
        });
    }
    let mut models = Vec::with_capacity(k);
    // Step 2: D^l (already shuffled) cut into K consecutive, disjoint subsets of near-equal size.
    for subset in feature_split::chunks(&low_rows, k) {
        let xs = x.select(Axis(0), &subset);
        let ys = y.select(Axis(0), &subset);
        models.push(plr::fit(
            xs.view(),
            ys.view(),
            settings.privacy,
            settings.lambda,
            settings.scaling,
            None,
            rng,
        )?);
    }
    let xh = x.select(Axis(0), &high_rows);
    let yh = y.select(Axis(0), &high_rows);
    combine(
        LowLevel::Samples(models),
        settings.combiner,
        xh.view(),
        yh.view(),
        settings.privacy,
        rng,
    )
}

/// PST-F (stacking paper Algorithm 3): PLR-FS on `D^l` with the split's importances, combined on
/// `D^h`. `centres` (one per group) turn it into PST-H's / PPTL-FS's target step. Labels 0/1.
pub fn pst_f<R: Rng + ?Sized>(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    split: &FeatureSplit,
    centres: Option<&[Array1<f64>]>,
    settings: &StackingSettings,
    rng: &mut R,
) -> Result<Stacked, DpError> {
    settings.validate()?;
    let (low_rows, high_rows) = split_rows(x.nrows(), settings.low_fraction, rng)?;
    let xl = x.select(Axis(0), &low_rows);
    let yl = y.select(Axis(0), &low_rows);
    let low = feature_split::plr_fs(
        xl.view(),
        yl.view(),
        split,
        settings.privacy,
        &vec![settings.lambda; split.k()],
        centres,
        settings.scaling,
        rng,
    )?;
    let xh = x.select(Axis(0), &high_rows);
    let yh = y.select(Axis(0), &high_rows);
    combine(
        LowLevel::Features(low),
        settings.combiner,
        xh.view(),
        yh.view(),
        settings.privacy,
        rng,
    )
}
