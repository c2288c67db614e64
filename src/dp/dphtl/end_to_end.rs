//! Algorithm 4 (DPHTL) end to end, and the baselines of section 4.4.3.
//!
//! - WEAK: l2 logistic regression on the target's labelled rows;
//! - SOURCE: the DP source hypothesis that does best on the target's test rows (as the paper
//!   defines it: an optimistic choice, made with test labels);
//! - AVERAGE: the MAP fit under eq. (4.2) with equal hypothesis weights;
//! - SOFT: l2 logistic regression on the labelled rows and the unlabelled rows soft-labelled by
//!   the fraction of sources voting positive (eq. 4.4, Hamm et al.'s Algorithm 2);
//! - TARGET: l2 logistic regression on every target row with its true label (not available in
//!   practice: the ceiling).

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, concatenate};
use rand::CryptoRng;

use super::dpiw::{self, ImportanceWeights};
use super::mixture::{self, HypothesisWeights};
use super::prior::{self, GaussianPrior};
use crate::dp::DpError;
use crate::dp::penalised::{Problem, l2_logistic};
use crate::dp::plr::{self, Privacy};
use crate::dp::scaling::RowScaling;

/// A source organization's rows (scaled to norm at most 1): labelled for its hypothesis,
/// unlabelled (disjoint) for its importance weights.
#[derive(Debug, Clone)]
pub struct Source {
    /// Labelled rows.
    pub x: Array2<f64>,
    /// 0/1 labels.
    pub y: Array1<f64>,
    /// Unlabelled rows.
    pub unlabelled: Array2<f64>,
}

/// What a source publishes (Algorithm 4 steps 1-2).
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// `theta_priv^k` (output perturbation).
    pub hypothesis: Array1<f64>,
    /// `w^k` from DPIW.
    pub importance: ImportanceWeights,
}

/// The settings of Algorithm 4.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Each source's epsilon (`None`: not private).
    pub epsilon: Option<f64>,
    /// DPIW's penalty `lambda_IW`.
    pub lambda_iw: f64,
    /// The source hypotheses' and the baselines' penalty `lambda_LR`.
    pub lambda_lr: f64,
    /// The prior's standard deviation floor (see [`prior`]).
    pub sd_floor: f64,
}

/// Steps 1-2 at one source: eps-DP for its labelled rows and, separately, for its unlabelled
/// rows (Theorem 4.3.1: disjoint rows, no composition), so each source is charged epsilon once.
pub fn publish(
    source: &Source,
    public: ArrayView2<'_, f64>,
    settings: &Settings,
    rng: &mut dyn CryptoRng,
) -> Result<Published, DpError> {
    let privacy = settings.epsilon.map_or(Privacy::Off, Privacy::Epsilon);
    let model = crate::dp::output_perturbation::fit(
        source.x.view(),
        source.y.view(),
        privacy,
        settings.lambda_lr,
        RowScaling::Normalize,
        rng,
    )?;
    let importance = dpiw::dpiw(
        source.unlabelled.view(),
        public,
        settings.epsilon,
        settings.lambda_iw,
        rng,
    )?;
    Ok(Published {
        hypothesis: model.w,
        importance,
    })
}

/// The target's result (steps 3-6).
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// `w_H` of eq. (4.1) and its certificate.
    pub hypothesis_weights: HypothesisWeights,
    /// Eq. (4.2).
    pub prior: GaussianPrior,
    /// `theta^T`.
    pub theta: Array1<f64>,
}

/// Steps 3-6 at the target: its own (non-private) importance weights from its unlabelled rows,
/// eq. (4.1), eq. (4.2), and the MAP fit on its labelled rows.
pub fn fit_target(
    published: &[Published],
    public: ArrayView2<'_, f64>,
    unlabelled: ArrayView2<'_, f64>,
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    settings: &Settings,
) -> Result<Fitted, DpError> {
    let own = dpiw::dpiw(
        unlabelled,
        public,
        None,
        settings.lambda_iw,
        &mut rand::rng(),
    )?;
    let views: Vec<ArrayView1<'_, f64>> = published
        .iter()
        .map(|p| p.importance.weights.view())
        .collect();
    let hypothesis_weights = mixture::hypothesis_weights(own.weights.view(), &views)?;
    let hypotheses: Vec<Array1<f64>> = published.iter().map(|p| p.hypothesis.clone()).collect();
    let prior = prior::prior(
        &hypotheses,
        hypothesis_weights.weights.view(),
        settings.sd_floor,
    )?;
    let theta = prior::map_fit(x, y, &prior)?;
    Ok(Fitted {
        hypothesis_weights,
        prior,
        theta,
    })
}

/// AVERAGE: the MAP fit with equal weights.
pub fn average(
    published: &[Published],
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    settings: &Settings,
) -> Result<Array1<f64>, DpError> {
    let k = published.len();
    let hypotheses: Vec<Array1<f64>> = published.iter().map(|p| p.hypothesis.clone()).collect();
    let equal = Array1::from_elem(k, 1.0 / k as f64);
    prior::map_fit(
        x,
        y,
        &prior::prior(&hypotheses, equal.view(), settings.sd_floor)?,
    )
}

/// SOFT: labelled rows plus unlabelled rows soft-labelled by the sources' votes (eq. 4.4).
pub fn soft(
    published: &[Published],
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    unlabelled: ArrayView2<'_, f64>,
    lambda: f64,
) -> Result<Array1<f64>, DpError> {
    let k = published.len() as f64;
    let alpha: Array1<f64> = unlabelled
        .rows()
        .into_iter()
        .map(|r| {
            published
                .iter()
                .filter(|p| r.dot(&p.hypothesis) > 0.0)
                .count() as f64
                / k
        })
        .collect();
    let (nl, nu) = (x.nrows(), unlabelled.nrows());
    let n = (nl + nu) as f64;
    let rows = concatenate(Axis(0), &[x, unlabelled, unlabelled]).map_err(|_| DpError {
        name: "features",
        value: 0.0,
        reason: "labelled and unlabelled rows differ in width",
    })?;
    let signs: Array1<f64> = plr::signed(y)
        .iter()
        .cloned()
        .chain(std::iter::repeat_n(1.0, nu))
        .chain(std::iter::repeat_n(-1.0, nu))
        .collect();
    let weights: Array1<f64> = std::iter::repeat_n(1.0 / n, nl)
        .chain(alpha.iter().map(|a| a / n))
        .chain(alpha.iter().map(|a| (1.0 - a) / n))
        .collect();
    let d = x.ncols();
    let precision = Array1::from_elem(d, crate::dp::positive("lambda", lambda)?);
    let mean = Array1::zeros(d);
    Problem {
        x: rows.view(),
        y: signs.view(),
        weights: weights.view(),
        precision: precision.view(),
        mean: mean.view(),
    }
    .solve()
}

/// WEAK or TARGET: l2 logistic regression on `x`, `y`.
pub fn plain(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    lambda: f64,
) -> Result<Array1<f64>, DpError> {
    l2_logistic(x, y, lambda)
}

/// Accuracy of `theta` on `x`, `y` (threshold 0.5).
pub fn accuracy(theta: &Array1<f64>, x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>) -> f64 {
    let z = x.dot(theta);
    let right = z
        .iter()
        .zip(y)
        .filter(|(z, y)| (**z > 0.0) == (**y == 1.0))
        .count();
    right as f64 / y.len().max(1) as f64
}
