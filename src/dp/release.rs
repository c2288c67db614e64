//! Every DP method behind one call, as `privlogit dp fit` and the Python package
//! (`privlogit.dp`) run them: the method, its options (unset ones take the defaults below),
//! the target rows (and the source rows of a transfer method) in; a fitted model with its JSON
//! form and scores out, and beside it what the release cost ([`Cost`]), known before any noise
//! is drawn so that the ledger can refuse first. Keeping the dispatch here means the command
//! line and Python draw the same noise for the same seed and charge the same epsilon.
//!
//! Adding a method: its own module, a variant of [`Method`] with its row in
//! [`Method::takes`] and its arm in [`fit`], and its page in the book (`docs/src/guide/dp.md`).

use ndarray::{Array1, ArrayView2, s};
use rand::CryptoRng;
use serde_json::{Value, json};

use super::DpError;
use super::dphtl;
use super::feature_split::{self, FeatureSplit, SplitModel};
use super::output_perturbation;
use super::plr::{self, LinearModel, Privacy};
use super::scaling::RowScaling;
use super::stacking::{self, Combiner, LowLevel, Stacked, StackingSettings};
use super::transfer::{self, Labelled, TransferSettings};

/// Default penalty lambda of the low-level (target) models.
pub const DEFAULT_LAMBDA: f64 = 0.01;
/// Default penalty of a high-level model.
pub const DEFAULT_HIGH_LAMBDA: f64 = 0.01;
/// Default eta of the transfer regulariser.
pub const DEFAULT_ETA: f64 = 0.5;
/// Default number of groups K.
pub const DEFAULT_K: usize = 5;
/// Default share of rows for the low level.
pub const DEFAULT_LOW_FRACTION: f64 = 0.5;
/// Default penalty lambda_IW of DPHTL's importance weights (Algorithm 5).
pub const DEFAULT_LAMBDA_IW: f64 = 0.001;
/// Default floor of DPHTL's prior standard deviations (eq. 4.2).
pub const DEFAULT_PRIOR_SD_FLOOR: f64 = 0.1;

/// The methods (the command line's `--method`, Python's `method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// PLR, objective perturbation (stacking paper Algorithm 1).
    Plr,
    /// Output perturbation (Chaudhuri et al. 2011, the sensitivity method).
    Output,
    /// Stacking with sample partitioning (stacking Algorithm 2).
    PstS,
    /// Stacking with feature partitioning (stacking Algorithm 3).
    PstF,
    /// PLR with feature splitting, one model per group (transfer Algorithm 3).
    PlrFs,
    /// Stacking with hypothesis transfer (stacking Algorithm 4); needs a source.
    PstH,
    /// Transfer with feature splitting and stacking (transfer Algorithm 4); needs a source.
    PptlFs,
    /// DP hypothesis transfer from several sources with importance weights (dissertation
    /// Algorithm 4); needs sources and public data.
    Dphtl,
    /// PLR on the source, then PLR on the target near it (transfer Algorithm 2); needs a source.
    Simcomb,
}

impl Method {
    /// The name the command line and Python use (`pst-s`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Method::Plr => "plr",
            Method::Output => "output",
            Method::PstS => "pst-s",
            Method::PstF => "pst-f",
            Method::PlrFs => "plr-fs",
            Method::PstH => "pst-h",
            Method::PptlFs => "pptl-fs",
            Method::Dphtl => "dphtl",
            Method::Simcomb => "simcomb",
        }
    }

    /// Every method, in the command line's order.
    pub const ALL: [Method; 9] = [
        Method::Plr,
        Method::Output,
        Method::PstS,
        Method::PstF,
        Method::PlrFs,
        Method::PstH,
        Method::PptlFs,
        Method::Dphtl,
        Method::Simcomb,
    ];

    /// One line on what the method is and which paper's algorithm it follows (a front end's
    /// help).
    pub fn summary(self) -> &'static str {
        match self {
            Method::Plr => "PLR, objective perturbation (stacking paper Algorithm 1)",
            Method::Output => "Output perturbation (Chaudhuri et al. 2011, the sensitivity method)",
            Method::PstS => "Stacking with sample partitioning (stacking Algorithm 2)",
            Method::PstF => "Stacking with feature partitioning (stacking Algorithm 3)",
            Method::PlrFs => {
                "PLR with feature splitting, one model per group (transfer Algorithm 3)"
            }
            Method::PstH => {
                "Stacking with hypothesis transfer (stacking Algorithm 4); needs a source"
            }
            Method::PptlFs => {
                "Transfer with feature splitting and stacking (transfer Algorithm 4); needs a source"
            }
            Method::Dphtl => {
                "DP hypothesis transfer from several sources with importance weights \
                 (dissertation Algorithm 4); needs sources and public data"
            }
            Method::Simcomb => {
                "PLR on the source, then PLR on the target near it (transfer Algorithm 2); needs a source"
            }
        }
    }

    /// The method named `name` (`pst-s`), or a message listing them.
    pub fn parse(name: &str) -> Result<Method, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
                format!("`{name}` is not one of {}", names.join(", "))
            })
    }

    /// Whether the method also learns from a source data set (DPHTL from several).
    pub fn is_transfer(self) -> bool {
        matches!(
            self,
            Method::PstH | Method::PptlFs | Method::Simcomb | Method::Dphtl
        )
    }

    /// Whether the method splits the features into groups.
    pub fn splits_features(self) -> bool {
        matches!(
            self,
            Method::PstF | Method::PlrFs | Method::PstH | Method::PptlFs
        )
    }

    /// Whether the method takes the option named `option` (a DP fit's option,
    /// [`crate::settings::dp_keys::DP_KEYS`], or its `public` and `target_unlabelled` data;
    /// with `stacking`: the combiner is stacking), and if not, why: a method refuses, by name,
    /// an option it would ignore (a silently ignored option makes the user believe in a model
    /// they did not get). An option no arm names is every method's.
    pub fn takes(self, option: &str, stacking: bool) -> Result<(), &'static str> {
        use Method::*;
        let stacks = matches!(self, PstS | PstF | PstH | PptlFs);
        let grouped = matches!(self, PstS | PstF | PlrFs | PstH | PptlFs);
        let (takes, why) = match option {
            "eta" => (
                matches!(self, Simcomb | PptlFs),
                "only simcomb and pptl-fs take it (pst-h is pptl-fs with eta = 0, stacking paper Algorithm 4)",
            ),
            "k" => (grouped, "the method has no groups"),
            "group_importance" | "feature_scores" => {
                (self.splits_features(), "the method does not split features")
            }
            "combiner" => (
                matches!(self, PstS | PstF),
                "only pst-s and pst-f choose a combiner (pst-h and pptl-fs stack)",
            ),
            "low_fraction" => (stacks, "the method has no high level"),
            "high_lambda" => (
                matches!(self, PstH | PptlFs) || (matches!(self, PstS | PstF) && stacking),
                "no PLR high level is fitted (no stacking combiner)",
            ),
            "plr_as_printed" => (
                !matches!(self, Output | Dphtl),
                "the method has no eps' or Delta (output perturbation) or its own (dphtl)",
            ),
            "noise_share" => (
                !matches!(self, Output | PlrFs | Dphtl),
                "the method fits no PLR on whole rows (output perturbation has no eps', plr-fs \
                 splits its budget by group, dphtl has its own)",
            ),
            "public" => (self == Dphtl, "only dphtl takes a public set"),
            "target_unlabelled" => (
                self == Dphtl,
                "only dphtl takes the target's unlabelled rows",
            ),
            "source_epsilon" | "source_lambda" => (
                self.is_transfer() && self != Dphtl,
                "there is no setting `source`",
            ),
            "lambda_iw" | "prior_sd_floor" => (self == Dphtl, "only dphtl takes it"),
            "row_bound" => (self != Dphtl, "dphtl scales every row to norm 1"),
            _ => (true, ""),
        };
        if takes { Ok(()) } else { Err(why) }
    }
}

/// What a release spends, per data set, known before any noise is drawn (the ledger checks it
/// first) and returned with the model (the ledger records it).
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    /// Epsilon spent on the target rows (0 when the method does not touch them privately:
    /// DPHTL's target fit uses only the published hypotheses).
    pub target: f64,
    /// Epsilon spent on each source data set, in order.
    pub sources: Vec<f64>,
}

impl Cost {
    /// The cost of `method` with `settings` over `sources` source data sets.
    pub fn of(method: Method, settings: &MethodSettings, sources: usize) -> Cost {
        match method {
            // Each source spends epsilon once (Theorem 4.3.1: its two halves are disjoint).
            Method::Dphtl => Cost {
                target: 0.0,
                sources: vec![settings.privacy.spent(); sources],
            },
            m if m.is_transfer() => Cost {
                target: settings.privacy.spent(),
                sources: vec![settings.source_privacy.spent(); sources],
            },
            _ => Cost {
                target: settings.privacy.spent(),
                sources: Vec::new(),
            },
        }
    }
}

/// A fitted model and what it cost.
#[derive(Debug, Clone)]
pub struct Release {
    /// The model.
    pub fitted: Fitted,
    /// Its privacy cost.
    pub cost: Cost,
}

/// How a feature-splitting method groups the features.
#[derive(Debug, Clone, PartialEq)]
pub enum SplitChoice {
    /// K random groups of equal importance 1/K.
    Random,
    /// A public importance score per feature: sorted by score into K groups, q_k by the
    /// transfer paper's eq. (6).
    Scores(Vec<f64>),
    /// The importance of each group of consecutive columns (its length is K).
    GroupImportance(Vec<f64>),
}

/// A method's settings, every default applied (`privlogit dp fit` documents the defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct MethodSettings {
    /// Privacy of the target rows.
    pub privacy: Privacy,
    /// Privacy of the source rows (transfer methods).
    pub source_privacy: Privacy,
    /// Penalty lambda of the low-level (target) models.
    pub lambda: f64,
    /// Penalty of the source models.
    pub source_lambda: f64,
    /// Penalty of the high-level model of the transfer methods (mu).
    pub high_lambda: f64,
    /// eta of the transfer regulariser (PST-H fixes it at 0).
    pub eta: f64,
    /// K, the number of groups (feature groups or sample subsets).
    pub k: usize,
    /// How the features are grouped.
    pub split: SplitChoice,
    /// How PST-S and PST-F combine the low level.
    pub combiner: Combiner,
    /// Share of rows the low level uses (the rest trains the high level).
    pub low_fraction: f64,
    /// How rows are brought to norm at most 1.
    pub scaling: RowScaling,
    /// DPHTL: the penalty of the importance weights (Algorithm 5).
    pub lambda_iw: f64,
    /// DPHTL: the floor of the prior's standard deviations (eq. 4.2).
    pub prior_sd_floor: f64,
}

/// A method that cannot run on what it was given, with the reason in words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReleaseError {
    /// A parameter out of range.
    #[error(transparent)]
    Parameter(#[from] DpError),
    /// A method called through the wrong entry point, for a reason fixed in the code.
    #[error("{0}")]
    Refused(&'static str),
    /// A method given a source data set it does not take, or none where it needs one.
    #[error("method {} {} a source data set", method.name(), if *needs { "needs" } else { "does not take" })]
    Source {
        /// The method.
        method: Method,
        /// Whether it needs one (else it takes none).
        needs: bool,
    },
    /// Data of a number of features other than the target's.
    #[error("{what} has {features} features, the target {target}")]
    Features {
        /// "the source", "the public set", or a source's name.
        what: std::borrow::Cow<'static, str>,
        /// Its features.
        features: usize,
        /// The target's.
        target: usize,
    },
    /// Fewer sources than DPHTL weighs against each other.
    #[error(
        "dphtl needs at least two sources (eq. 4.2 weighs hypotheses against each other), not \
         {given}"
    )]
    Sources {
        /// How many were given.
        given: usize,
    },
    /// A source too small to halve into labelled and unlabelled rows.
    #[error("{name}: a source needs at least 4 rows (half labelled, half unlabelled), not {rows}")]
    SmallSource {
        /// The source's name.
        name: String,
        /// Its rows.
        rows: usize,
    },
    /// A source's published hypothesis that could not be made.
    #[error("source {name}: {source}")]
    Publish {
        /// The source's name.
        name: String,
        /// The cause.
        source: DpError,
    },
    /// Feature scores of a number other than the features'.
    #[error("{scores} feature scores for {features} features")]
    Scores {
        /// How many scores.
        scores: usize,
        /// How many features.
        features: usize,
    },
    /// Group importances of a number no split can have.
    #[error("invalid K = {groups}: must be between 1 and the number of features ({features})")]
    Groups {
        /// How many groups.
        groups: usize,
        /// How many features.
        features: usize,
    },
}

/// A fitted model of any method.
#[derive(Debug, Clone)]
pub enum Fitted {
    /// PLR or output perturbation.
    Linear(LinearModel),
    /// PLR-FS: one model per feature group.
    Split(SplitModel),
    /// PST-S, PST-F.
    Stacked(Stacked),
    /// A transfer method: the source's release (JSON) and the target model.
    Transfer {
        /// What was released about the source.
        source: Value,
        /// The target model.
        target: Box<Fitted>,
    },
}

impl Fitted {
    /// The model as `privlogit dp fit` writes it.
    pub fn json(&self) -> Value {
        match self {
            Fitted::Linear(m) => model_json(m, None),
            Fitted::Split(s) => json!({ "groups": split_json(s) }),
            Fitted::Stacked(s) => stacked_json(s),
            Fitted::Transfer { source, target } => {
                json!({ "source": source, "target": target.json() })
            }
        }
    }

    /// How many values each row it scores must have: the features it was fitted on (a
    /// front end checks a row's width against it, as [`Fitted::scores`] assumes it).
    pub fn features(&self) -> usize {
        let split =
            |s: &crate::dp::feature_split::SplitModel| s.split.groups().iter().map(Vec::len).sum();
        match self {
            Fitted::Linear(m) => m.w.len(),
            Fitted::Split(s) => split(s),
            Fitted::Stacked(s) => match &s.low {
                crate::dp::stacking::LowLevel::Samples(models) => {
                    models.first().map_or(0, |m| m.w.len())
                }
                crate::dp::stacking::LowLevel::Features(s) => split(s),
            },
            Fitted::Transfer { target, .. } => target.features(),
        }
    }

    /// P(y = 1) for the rows of `x` (unscaled: each part scales rows as it was fitted).
    pub fn scores(&self, x: ArrayView2<'_, f64>) -> Array1<f64> {
        match self {
            Fitted::Linear(m) => m.probabilities(x),
            // PLR-FS alone has no combiner: the importance-weighted mean probability.
            Fitted::Split(s) => s
                .group_probabilities(x)
                .dot(&Array1::from(s.split.importance().to_vec())),
            Fitted::Stacked(s) => s.scores(x),
            Fitted::Transfer { target, .. } => target.scores(x),
        }
    }
}

/// Fits `method` on `target` (and `source` for a transfer method), noise from `rng`.
pub fn fit(
    method: Method,
    settings: &MethodSettings,
    target: Labelled<'_>,
    source: Option<Labelled<'_>>,
    rng: &mut dyn CryptoRng,
) -> Result<Release, ReleaseError> {
    if method == Method::Dphtl {
        return Err(ReleaseError::Refused(
            "dphtl learns from several sources and a public set: call release::dphtl",
        ));
    }
    let cost = Cost::of(method, settings, usize::from(source.is_some()));
    if method.is_transfer() != source.is_some() {
        return Err(ReleaseError::Source {
            method,
            needs: method.is_transfer(),
        });
    }
    if let Some(s) = &source
        && s.x.ncols() != target.x.ncols()
    {
        return Err(ReleaseError::Features {
            what: "the source".into(),
            features: s.x.ncols(),
            target: target.x.ncols(),
        });
    }
    let d = target.x.ncols();
    let split = if method.splits_features() {
        Some(feature_split_of(&settings.split, d, settings.k, rng)?)
    } else {
        None
    };
    let stacking_settings = StackingSettings {
        privacy: settings.privacy,
        lambda: settings.lambda,
        combiner: settings.combiner,
        low_fraction: settings.low_fraction,
        scaling: settings.scaling,
    };
    let transfer_settings = TransferSettings {
        source: settings.source_privacy,
        target: settings.privacy,
        lambda_source: settings.source_lambda,
        lambda_target: settings.lambda,
        eta: if method == Method::PstH {
            0.0
        } else {
            settings.eta
        },
        mu: settings.high_lambda,
        low_fraction: settings.low_fraction,
        scaling: settings.scaling,
    };
    let (x, y) = (target.x, target.y);
    let split = || {
        split
            .as_ref()
            .expect("a feature-splitting method has a split")
    };
    let fitted = match method {
        Method::Plr => Fitted::Linear(plr::fit(
            x,
            y,
            settings.privacy,
            settings.lambda,
            settings.scaling,
            None,
            rng,
        )?),
        Method::Output => Fitted::Linear(output_perturbation::fit(
            x,
            y,
            settings.privacy,
            settings.lambda,
            settings.scaling,
            rng,
        )?),
        Method::PstS => {
            Fitted::Stacked(stacking::pst_s(x, y, settings.k, &stacking_settings, rng)?)
        }
        Method::PstF => Fitted::Stacked(stacking::pst_f(
            x,
            y,
            split(),
            None,
            &stacking_settings,
            rng,
        )?),
        Method::PlrFs => Fitted::Split(feature_split::plr_fs(
            x,
            y,
            split(),
            settings.privacy,
            &vec![settings.lambda; split().k()],
            None,
            settings.scaling,
            rng,
        )?),
        Method::Simcomb => {
            let source = source.expect("checked above");
            let fit = transfer::simcomb(source, target, &transfer_settings, rng)?;
            Fitted::Transfer {
                source: model_json(&fit.source, None),
                target: Box::new(Fitted::Linear(fit.target)),
            }
        }
        Method::PstH | Method::PptlFs => {
            let source = source.expect("checked above");
            let fit = transfer::pptl_fs(source, target, split(), &transfer_settings, rng)?;
            Fitted::Transfer {
                source: json!({ "groups": split_json(&fit.source) }),
                target: Box::new(Fitted::Stacked(fit.target)),
            }
        }
        Method::Dphtl => unreachable!("refused above"),
    };
    Ok(Release { fitted, cost })
}

/// A named source organization's rows for [`dphtl`] (the name is for messages).
#[derive(Debug, Clone, Copy)]
pub struct NamedSource<'a> {
    /// Where the rows came from (a file, or "source k").
    pub name: &'a str,
    /// Its labelled table: the first half of the rows trains the hypothesis, the second half
    /// (labels unused) the importance weights.
    pub rows: Labelled<'a>,
}

/// DPHTL (dissertation Algorithm 4) over whole tables, as `dp fit --method dphtl` reads them:
/// every row is scaled to norm 1 here; each source's first half of rows (in order) trains its
/// DP hypothesis and its second half its DP importance weights (disjoint rows, so each source
/// spends epsilon once, Theorem 4.3.1); the target's weights come from `unlabelled`, its MAP
/// fit from `target`.
pub fn dphtl(
    sources: &[NamedSource<'_>],
    public: ArrayView2<'_, f64>,
    unlabelled: ArrayView2<'_, f64>,
    target: Labelled<'_>,
    settings: &dphtl::end_to_end::Settings,
    rng: &mut dyn CryptoRng,
) -> Result<DphtlRelease, ReleaseError> {
    if sources.len() < 2 {
        return Err(ReleaseError::Sources {
            given: sources.len(),
        });
    }
    let d = target.x.ncols();
    for (what, cols) in std::iter::once(("the public set", public.ncols()))
        .chain(std::iter::once((
            "the target's unlabelled rows",
            unlabelled.ncols(),
        )))
        .chain(sources.iter().map(|s| (s.name, s.rows.x.ncols())))
    {
        if cols != d {
            return Err(ReleaseError::Features {
                what: what.to_string().into(),
                features: cols,
                target: d,
            });
        }
    }
    let scaled = |x: ArrayView2<'_, f64>| RowScaling::Normalize.apply(x, 1.0);
    let public = scaled(public);
    let mut published = Vec::with_capacity(sources.len());
    for source in sources {
        let rows = source.rows.x.nrows();
        if rows < 4 {
            return Err(ReleaseError::SmallSource {
                name: source.name.to_string(),
                rows,
            });
        }
        let half = rows.div_ceil(2);
        let x = scaled(source.rows.x);
        let rows = dphtl::end_to_end::Source {
            x: x.slice(s![..half, ..]).to_owned(),
            y: source.rows.y.slice(s![..half]).to_owned(),
            unlabelled: x.slice(s![half.., ..]).to_owned(),
        };
        published.push(
            dphtl::end_to_end::publish(&rows, public.view(), settings, rng).map_err(|e| {
                ReleaseError::Publish {
                    name: source.name.to_string(),
                    source: e,
                }
            })?,
        );
    }
    let fitted = dphtl::end_to_end::fit_target(
        &published,
        public.view(),
        scaled(unlabelled).view(),
        scaled(target.x).view(),
        target.y,
        settings,
    )?;
    // Each source spends epsilon once (Theorem 4.3.1: its two halves are disjoint); the
    // target's fit reads only what the sources published.
    let cost = Cost {
        target: 0.0,
        sources: vec![settings.epsilon.unwrap_or(f64::INFINITY); sources.len()],
    };
    Ok(DphtlRelease { fitted, cost })
}

/// DPHTL's model and what it cost.
#[derive(Debug, Clone)]
pub struct DphtlRelease {
    /// The hypothesis weights, the prior and the target's model.
    pub fitted: dphtl::end_to_end::Fitted,
    /// Its privacy cost.
    pub cost: Cost,
}

/// The feature groups `choice` asks for, over `d` features in `k` groups.
fn feature_split_of(
    choice: &SplitChoice,
    d: usize,
    k: usize,
    rng: &mut dyn CryptoRng,
) -> Result<FeatureSplit, ReleaseError> {
    Ok(match choice {
        SplitChoice::Scores(scores) => {
            if scores.len() != d {
                return Err(ReleaseError::Scores {
                    scores: scores.len(),
                    features: d,
                });
            }
            FeatureSplit::by_importance(scores, k)?
        }
        SplitChoice::GroupImportance(importance) => {
            let k = importance.len();
            if k == 0 || k > d {
                return Err(ReleaseError::Groups {
                    groups: k,
                    features: d,
                });
            }
            let groups = (0..k)
                .map(|i| (i * d / k..(i + 1) * d / k).collect())
                .collect();
            FeatureSplit::new(groups, importance.clone(), d)?
        }
        SplitChoice::Random => FeatureSplit::random(d, k, rng)?,
    })
}

/// A linear model as JSON: `w`, how rows are scaled, and the features it reads (a group).
pub fn model_json(m: &LinearModel, features: Option<&[usize]>) -> Value {
    let scaling = match m.scaling {
        RowScaling::Normalize => json!("normalize"),
        RowScaling::Clip { bound } => json!({ "clip": bound }),
    };
    let mut v = json!({ "w": m.w.to_vec(), "row_scaling": scaling, "row_norm": m.target });
    if let Some(f) = features {
        v["features"] = json!(f);
    }
    v
}

fn split_json(s: &SplitModel) -> Value {
    Value::Array(
        s.models
            .iter()
            .zip(s.split.groups())
            .zip(s.split.importance())
            .map(|((m, g), q)| {
                let mut v = model_json(m, Some(g));
                v["importance"] = json!(q);
                v
            })
            .collect(),
    )
}

fn stacked_json(s: &Stacked) -> Value {
    let low = match &s.low {
        LowLevel::Samples(models) => {
            Value::Array(models.iter().map(|m| model_json(m, None)).collect())
        }
        LowLevel::Features(split) => split_json(split),
    };
    let combiner = match s.combiner {
        Combiner::Stacking { .. } => "stacking",
        Combiner::MajorityVote => "majority-vote",
        Combiner::WeightedVote => "weighted-vote",
    };
    json!({ "low_level": low, "combiner": combiner, "high_level": s.high.as_ref().map(|m| model_json(m, None)) })
}
