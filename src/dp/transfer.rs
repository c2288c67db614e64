//! Privacy-preserving hypothesis transfer (transfer paper section 3; stacking paper section
//! 3.3): SimComb (transfer Algorithm 2), PPTL-FS (transfer Algorithm 4) and PST-H (stacking
//! Algorithm 4), with the baselines Direct (PLR on the target only) and SourceD (the private
//! source model applied to the target).
//!
//! The target regulariser is `g(w) = eta/2 ||w||^2 + (1 - eta)/2 ||w - w_src||^2`, solved as
//! `1/2 ||w - (1 - eta) w_src||^2` (see [`plr::minimise`]); PST-H is the case `eta = 0`.
//! Source and target are different data sets, each charged its own budget: the source model is
//! `eps_src`-private and, being a function of the source alone, enters the target fit as a
//! public constant, so the target models are `eps_tgt`-private (transfer Theorem 5, stacking
//! Corollary 6).
//!
//! PST-H's source step ("train PLR with budget eps_src on F_k" for every k) is run as PLR-FS:
//! K separate PLRs on the same rows would spend K eps_src; PLR-FS's joint budget is what makes
//! Corollary 6 hold.

use ndarray::{Array1, ArrayView1, ArrayView2};
use rand::Rng;

use super::DpError;
use super::feature_split::{self, FeatureSplit, SplitModel};
use super::plr::{self, LinearModel, Privacy};
use super::scaling::RowScaling;
use super::stacking::{self, Combiner, Stacked, StackingSettings};

/// A labelled data set borrowed for a fit (labels 0/1).
#[derive(Debug, Clone, Copy)]
pub struct Labelled<'a> {
    /// Rows.
    pub x: ArrayView2<'a, f64>,
    /// Labels, 0 or 1.
    pub y: ArrayView1<'a, f64>,
}

/// Budgets and penalties of a transfer fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransferSettings {
    /// Budget on the source data.
    pub source: Privacy,
    /// Budget on the target data.
    pub target: Privacy,
    /// Source penalty `lambda_s`.
    pub lambda_source: f64,
    /// Target penalty `lambda_t`.
    pub lambda_target: f64,
    /// `eta` in [0, 1]: the weight of plain l2 against closeness to the source model.
    pub eta: f64,
    /// The level-1 (high-level) penalty `mu_t` of PPTL-FS / PST-H.
    pub mu: f64,
    /// Share of the target rows in `D_t0` (level 0); the transfer paper uses 50 %.
    pub low_fraction: f64,
    /// Row scaling, the same on both sides.
    pub scaling: RowScaling,
}

impl TransferSettings {
    /// Every parameter checked before any work starts.
    pub fn validate(&self) -> Result<(), DpError> {
        self.source.epsilon()?;
        self.target.epsilon()?;
        super::positive("lambda_source", self.lambda_source)?;
        super::positive("lambda_target", self.lambda_target)?;
        super::positive("mu", self.mu)?;
        if !(0.0..=1.0).contains(&self.eta) {
            return Err(DpError {
                name: "eta",
                value: self.eta,
                reason: "must be between 0 and 1",
            });
        }
        self.scaling.validate()?;
        stacking::check_fraction(self.low_fraction)
    }
}

/// A transfer's output: the source's model and the target's, transferred from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Transferred<S, T> {
    /// The source's model (eps_src-private).
    pub source: S,
    /// The target's model (eps_tgt-private).
    pub target: T,
}

/// SimComb's output: `w_s` and `w_t`.
pub type SimComb = Transferred<LinearModel, LinearModel>;

/// SimComb (transfer Algorithm 2): PLR on the source, then PLR on the target regularised
/// towards the source model.
pub fn simcomb<R: Rng + ?Sized>(
    source: Labelled<'_>,
    target: Labelled<'_>,
    settings: &TransferSettings,
    rng: &mut R,
) -> Result<SimComb, DpError> {
    settings.validate()?;
    let s = &settings;
    let w_s = plr::fit(
        source.x,
        source.y,
        s.source,
        s.lambda_source,
        s.scaling,
        None,
        rng,
    )?;
    let centre = &w_s.w * (1.0 - s.eta);
    let w_t = plr::fit(
        target.x,
        target.y,
        s.target,
        s.lambda_target,
        s.scaling,
        Some(&centre),
        rng,
    )?;
    Ok(SimComb {
        source: w_s,
        target: w_t,
    })
}

/// PPTL-FS's output: the source's per-group models, the target's level-0 models and level-1
/// combiner.
pub type TransferStacked = Transferred<SplitModel, Stacked>;

/// PPTL-FS (transfer Algorithm 4): PLR-FS on the source (step 1), then on half the target
/// PLR-FS regularised towards the source group models (steps 2-3), and a level-1 PLR on the
/// other half combining the level-0 probabilities (step 4; the paper says "predicted labels";
/// we stack the probabilities, as the stacking paper's step 14 does, which keeps the ranking
/// information AUC needs). With `eta = 0` this is PST-H (stacking Algorithm 4).
pub fn pptl_fs<R: Rng + ?Sized>(
    source: Labelled<'_>,
    target: Labelled<'_>,
    split: &FeatureSplit,
    settings: &TransferSettings,
    rng: &mut R,
) -> Result<TransferStacked, DpError> {
    settings.validate()?;
    let s = &settings;
    let lambdas = vec![s.lambda_source; split.k()];
    let w_s = feature_split::plr_fs(
        source.x, source.y, split, s.source, &lambdas, None, s.scaling, rng,
    )?;
    let centres: Vec<Array1<f64>> = w_s.models.iter().map(|m| &m.w * (1.0 - s.eta)).collect();
    let stacking = StackingSettings {
        privacy: s.target,
        lambda: s.lambda_target,
        combiner: Combiner::Stacking { lambda: s.mu },
        low_fraction: s.low_fraction,
        scaling: s.scaling,
    };
    let target = stacking::pst_f(target.x, target.y, split, Some(&centres), &stacking, rng)?;
    Ok(TransferStacked {
        source: w_s,
        target,
    })
}
