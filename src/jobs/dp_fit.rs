//! A DP fit as a user asks for it: the method and its options as given (unset ones take the
//! defaults of [`crate::dp::release`]), checked once for every front end ([`Request::settings`]),
//! and `privlogit dp fit` on files as one call ([`FileJob`]): options checked and test rows
//! refused before any data is touched by a mechanism, the cost checked against the ledger
//! before any noise is drawn, the result written and then charged.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::charge::{self, Spends};
use crate::data::{self, Dataset, LoadOptions};
use crate::dp::noise::Randomness;
use crate::dp::plr::Privacy;
use crate::dp::release::{
    self, Cost, DEFAULT_ETA, DEFAULT_HIGH_LAMBDA, DEFAULT_K, DEFAULT_LAMBDA, DEFAULT_LAMBDA_IW,
    DEFAULT_LOW_FRACTION, DEFAULT_PRIOR_SD_FLOOR, Method, MethodSettings, NamedSource, Opt,
    SplitChoice,
};
use crate::dp::scaling::RowScaling;
use crate::dp::stacking::Combiner;
use crate::dp::transfer::Labelled;
use crate::dp::{DpError, ledger};
use crate::error::Error;
use crate::metrics;
use crate::progress::Say;

/// How the low-level predictions of PST-S and PST-F are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CombinerChoice {
    /// A PLR on the held-out rows' meta features (spends the budget on those rows).
    Stacking,
    /// Share of low-level models predicting 1.
    MajorityVote,
    /// Importance-weighted share of low-level models predicting 1.
    WeightedVote,
}

impl CombinerChoice {
    /// Every choice, in the order a front end lists them.
    pub const ALL: [CombinerChoice; 3] = [
        CombinerChoice::Stacking,
        CombinerChoice::MajorityVote,
        CombinerChoice::WeightedVote,
    ];

    /// The name the command line and Python use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Stacking => "stacking",
            Self::MajorityVote => "majority-vote",
            Self::WeightedVote => "weighted-vote",
        }
    }

    /// One line on what the choice does (a front end's help).
    pub fn summary(self) -> &'static str {
        match self {
            Self::Stacking => {
                "A PLR on the held-out rows' meta features (spends the budget on those rows)"
            }
            Self::MajorityVote => "Share of low-level models predicting 1",
            Self::WeightedVote => "Importance-weighted share of low-level models predicting 1",
        }
    }

    /// The choice named `name` (`majority-vote`).
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "stacking" => Ok(Self::Stacking),
            "majority-vote" => Ok(Self::MajorityVote),
            "weighted-vote" => Ok(Self::WeightedVote),
            other => Err(format!(
                "`{other}` is not stacking, majority-vote or weighted-vote"
            )),
        }
    }
}

/// A DP fit's method and options as the user gave them (`None`: not given, so that an option
/// the method would ignore can be refused).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// Budget spent on the target data.
    pub epsilon: f64,
    /// Budget spent on each source [default: epsilon].
    pub source_epsilon: Option<f64>,
    /// Penalty lambda of the low-level (target) models [default: 0.01].
    pub lambda: Option<f64>,
    /// Penalty of the source models [default: lambda].
    pub source_lambda: Option<f64>,
    /// Penalty of the high-level model [default: 0.01].
    pub high_lambda: Option<f64>,
    /// eta of the transfer regulariser [default: 0.5].
    pub eta: Option<f64>,
    /// K groups [default: 5].
    pub k: Option<usize>,
    /// The importance of each group of consecutive columns.
    pub group_importance: Vec<f64>,
    /// A public importance score per feature.
    pub feature_scores: Vec<f64>,
    /// PST-S and PST-F's combiner [default: stacking].
    pub combiner: Option<CombinerChoice>,
    /// Share of rows of the low level [default: 0.5].
    pub low_fraction: Option<f64>,
    /// Scale rows by this public bound instead of normalising each.
    pub row_bound: Option<f64>,
    /// PLR's eps' and Delta exactly as Algorithm 1 prints them.
    pub plr_as_printed: bool,
    /// DPHTL: lambda_IW [default: 0.001].
    pub lambda_iw: Option<f64>,
    /// DPHTL: the prior's standard deviation floor [default: 0.1].
    pub prior_sd_floor: Option<f64>,
    /// Seeded noise (reproducible, not for release).
    pub seed: Option<u64>,
}

impl Request {
    /// A request for `method` at `epsilon`, every option unset.
    pub fn new(method: Method, epsilon: f64) -> Self {
        Self {
            method,
            epsilon,
            source_epsilon: None,
            lambda: None,
            source_lambda: None,
            high_lambda: None,
            eta: None,
            k: None,
            group_importance: Vec::new(),
            feature_scores: Vec::new(),
            combiner: None,
            low_fraction: None,
            row_bound: None,
            plr_as_printed: false,
            lambda_iw: None,
            prior_sd_floor: None,
            seed: None,
        }
    }

    /// The method's settings, every default applied; refuses an option the method would
    /// ignore (by name), `public`/`unlabelled` data it does not take, and out-of-range values.
    pub fn settings(&self, public: bool, unlabelled: bool) -> Result<MethodSettings, Error> {
        let m = self.method;
        let stacking = matches!(self.combiner, None | Some(CombinerChoice::Stacking));
        let given = [
            (Opt::Eta, self.eta.is_some()),
            (Opt::K, self.k.is_some()),
            (Opt::GroupImportance, !self.group_importance.is_empty()),
            (Opt::FeatureScores, !self.feature_scores.is_empty()),
            (Opt::Combiner, self.combiner.is_some()),
            (Opt::LowFraction, self.low_fraction.is_some()),
            (Opt::HighLambda, self.high_lambda.is_some()),
            (Opt::PlrAsPrinted, self.plr_as_printed),
            (Opt::Public, public),
            (Opt::TargetUnlabelled, unlabelled),
            (
                Opt::SourceSettings,
                self.source_epsilon.is_some() || self.source_lambda.is_some(),
            ),
            (
                Opt::Dphtl,
                self.lambda_iw.is_some() || self.prior_sd_floor.is_some(),
            ),
            (Opt::RowBound, self.row_bound.is_some()),
        ];
        for (option, set) in given {
            if let (true, Err(why)) = (set, m.takes(option, stacking)) {
                let flag = match option {
                    Opt::SourceSettings if self.source_epsilon.is_none() => {
                        "setting `source_lambda`"
                    }
                    Opt::Dphtl if self.lambda_iw.is_none() => "setting `prior_sd_floor`",
                    o => o.flag(),
                };
                // The method as earlier releases named it in this message (`psth`).
                let name = format!("{m:?}").to_lowercase();
                return Err(Error::plan(format!(
                    "{flag} does not apply to setting `method` {name}: {why}"
                )));
            }
        }
        if self.k == Some(0) {
            return Err(Error::setting(
                "setting `k` 0:",
                "K, the number of groups, must be at least 1",
            ));
        }
        let private = if self.plr_as_printed {
            Privacy::EpsilonAsPrinted
        } else {
            Privacy::Epsilon
        };
        let privacy = private(self.epsilon);
        privacy
            .epsilon()
            .map_err(|e| Error::setting("setting `epsilon`", e.to_string()))?;
        let source_privacy = private(self.source_epsilon.unwrap_or(self.epsilon));
        source_privacy
            .epsilon()
            .map_err(|e| Error::setting("setting `source_epsilon`", e.to_string()))?;
        let split = if !self.feature_scores.is_empty() {
            if !self.group_importance.is_empty() {
                return Err(Error::plan(
                    "setting `feature_scores` and setting `group_importance`: give one of them",
                ));
            }
            SplitChoice::Scores(self.feature_scores.clone())
        } else if !self.group_importance.is_empty() {
            let k = self.group_importance.len();
            if let Some(given) = self.k.filter(|&given| given != k) {
                return Err(Error::plan(format!(
                    "setting `group_importance` has {k} values but setting `k` is {given}"
                )));
            }
            SplitChoice::GroupImportance(self.group_importance.clone())
        } else {
            SplitChoice::Random
        };
        let scaling = match self.row_bound {
            Some(bound) => RowScaling::Clip {
                bound: DpError::check_positive("setting `row_bound`", bound)?,
            },
            None => RowScaling::Normalize,
        };
        let lambda = self.lambda.unwrap_or(DEFAULT_LAMBDA);
        let high_lambda = self.high_lambda.unwrap_or(DEFAULT_HIGH_LAMBDA);
        Ok(MethodSettings {
            privacy,
            source_privacy,
            lambda,
            source_lambda: self.source_lambda.unwrap_or(lambda),
            high_lambda,
            eta: self.eta.unwrap_or(DEFAULT_ETA),
            k: self.k.unwrap_or(DEFAULT_K),
            split,
            combiner: match self.combiner.unwrap_or(CombinerChoice::Stacking) {
                CombinerChoice::Stacking => Combiner::Stacking {
                    lambda: high_lambda,
                },
                CombinerChoice::MajorityVote => Combiner::MajorityVote,
                CombinerChoice::WeightedVote => Combiner::WeightedVote,
            },
            low_fraction: self.low_fraction.unwrap_or(DEFAULT_LOW_FRACTION),
            scaling,
            lambda_iw: self.lambda_iw.unwrap_or(DEFAULT_LAMBDA_IW),
            prior_sd_floor: self.prior_sd_floor.unwrap_or(DEFAULT_PRIOR_SD_FLOOR),
        })
    }

    /// Where the noise comes from.
    pub fn randomness(&self) -> Randomness {
        self.seed.map_or(Randomness::Os, Randomness::Seeded)
    }
}

/// `privlogit dp fit` on files.
#[derive(Debug, Clone)]
pub struct FileJob {
    /// The method and options.
    pub request: Request,
    /// The (target) data.
    pub data: PathBuf,
    /// The 0/1 label column (in every file).
    pub label: String,
    /// Columns left out.
    pub exclude: Vec<String>,
    /// Source data (a transfer method: one; DPHTL: several).
    pub source: Vec<PathBuf>,
    /// DPHTL's public set.
    pub public: Option<PathBuf>,
    /// DPHTL's target's unlabelled rows [default: data's].
    pub target_unlabelled: Option<PathBuf>,
    /// Exact AUC and accuracy on these rows (not private, not charged).
    pub test: Option<PathBuf>,
    /// The privacy ledger and its total.
    pub ledger: Option<(PathBuf, Option<f64>)>,
    /// Where the result goes (standard output without).
    pub out: Option<PathBuf>,
}

impl FileJob {
    fn load(&self, path: &Path) -> Result<Dataset, Error> {
        let options = LoadOptions {
            exclude: self.exclude.clone(),
            ..LoadOptions::new(self.label.clone())
        };
        Ok(data::load(path, &options)?.data)
    }

    /// Another file of the fit, whose columns must be the target's.
    fn load_like(&self, path: &Path, target: &Dataset) -> Result<Dataset, Error> {
        let d = self.load(path)?;
        if d.names != target.names {
            return Err(Error::plan(format!(
                "{}: columns differ from {}",
                path.display(),
                self.data.display()
            )));
        }
        Ok(d)
    }

    /// Checks, fits, writes and charges: the result written in full (to a temporary file),
    /// the ledger charged, and only then the result put in place.
    pub fn run(&self, say: Say<'_>) -> Result<(), Error> {
        // Everything is validated before any data is touched by a mechanism.
        let r = &self.request;
        let settings = r.settings(self.public.is_some(), self.target_unlabelled.is_some())?;
        if r.method == Method::Dphtl {
            if self.source.len() < 2 {
                return Err(Error::plan(
                    "setting `method` dphtl needs at least two setting `source` files (eq. 4.2 weighs hypotheses \
                     against each other)",
                ));
            }
            if self.public.is_none() {
                return Err(Error::plan(
                    "setting `method` dphtl needs setting `public` FILE",
                ));
            }
        } else if self.source.len() > 1 {
            return Err(Error::plan(format!(
                "setting `method` {:?} takes one setting `source`",
                r.method
            )));
        } else if r.method.is_transfer() == self.source.is_empty() {
            return Err(Error::plan(format!(
                "setting `method` {:?} {} setting `source`",
                r.method,
                if r.method.is_transfer() {
                    "needs"
                } else {
                    "does not take"
                }
            )));
        }
        self.refuse_training_rows_as_test()?;
        if let Some(out) = &self.out {
            // Before the ledger is asked and any noise drawn.
            crate::output::check_writable(out).map_err(|e| Error::write(out, e))?;
        }
        let cost = Cost::of(r.method, &settings, self.source.len());
        let spends = self.spends(&cost);
        // Refuse early, before any noise is drawn; the charge itself is made under the
        // ledger's lock after the fit (and refused then if a concurrent fit used the room).
        let charges = match &self.ledger {
            Some((path, budget)) => charge::check(path, *budget, &spends, &self.label, say)?,
            None => Vec::new(),
        };
        let report = if r.method == Method::Dphtl {
            self.dphtl(&settings, &spends)?
        } else {
            self.single(&settings, &spends)?
        };
        if let Randomness::Seeded(_) = r.randomness() {
            say("note: seeded noise (setting `seed`): reproducible, not for private release");
        }
        charge::publish_charged(
            &report,
            self.out.as_deref(),
            self.ledger.as_ref().map(|(p, b)| (p.as_path(), *b)),
            &charges,
            say,
        )
    }

    /// Each file and what the release spends on it.
    fn spends(&self, cost: &Cost) -> Spends {
        let mut spends = Vec::new();
        if self.request.method != Method::Dphtl {
            spends.push((self.data.clone(), cost.target));
        }
        spends.extend(
            self.source
                .iter()
                .cloned()
                .zip(cost.sources.iter().copied()),
        );
        spends
    }

    fn noise_text(&self) -> String {
        match self.request.randomness() {
            Randomness::Os => "OS CSPRNG".to_string(),
            Randomness::Seeded(s) => {
                format!("seeded ChaCha20 (seed {s}): reproducible, NOT for private release")
            }
        }
    }

    /// A single-target method.
    fn single(&self, settings: &MethodSettings, spends: &Spends) -> Result<Value, Error> {
        let target = self.load(&self.data)?;
        let source = self
            .source
            .first()
            .map(|p| self.load_like(p, &target).map(Some))
            .unwrap_or(Ok(None))?;
        let mut rng = self.request.randomness().rng();
        let released = release::fit(
            self.request.method,
            settings,
            labelled(&target),
            source.as_ref().map(labelled),
            &mut rng,
        )?;
        let mut report = json!({
            "method": format!("{:?}", self.request.method).to_lowercase(),
            "features": target.names,
            "epsilon_spent": charge::spent_report(spends),
            "noise": self.noise_text(),
            "model": released.fitted.json(),
        });
        if let Some(path) = &self.test {
            let test = self.load_like(path, &target)?;
            let scores = released.fitted.scores(test.x.view());
            report["test"] = json!({
                "file": path.display().to_string(),
                "auc": metrics::auc(scores.view(), test.y.view()),
                "accuracy": metrics::accuracy(scores.view(), test.y.view()),
                "privacy": "NOT private: exact metrics on the test rows, not charged to any budget; \
                            for the analyst, not for release with the model",
            });
        }
        Ok(report)
    }

    /// DPHTL (dissertation Algorithm 4) on files: each source file is one source organization
    /// (its first half of rows trains its DP hypothesis, the second half its DP importance
    /// weights), the target's labelled rows are `data`, its unlabelled rows
    /// `target_unlabelled` (default: `data`'s rows without their labels).
    fn dphtl(&self, settings: &MethodSettings, spends: &Spends) -> Result<Value, Error> {
        let epsilon = settings
            .privacy
            .epsilon()
            .map_err(|e| Error::setting("setting `epsilon`", e.to_string()))?;
        let dphtl_settings = crate::dp::dphtl::end_to_end::Settings {
            epsilon,
            lambda_iw: settings.lambda_iw,
            lambda_lr: settings.lambda,
            sd_floor: settings.prior_sd_floor,
        };
        let target = self.load(&self.data)?;
        let public_path = self.public.as_deref().unwrap_or(Path::new(""));
        let public = self.load_like(public_path, &target)?;
        let unlabelled = match &self.target_unlabelled {
            Some(p) => self.load_like(p, &target)?,
            None => target.clone(),
        };
        let tables = self
            .source
            .iter()
            .map(|path| Ok((path.display().to_string(), self.load_like(path, &target)?)))
            .collect::<Result<Vec<_>, Error>>()?;
        let sources: Vec<NamedSource<'_>> = tables
            .iter()
            .map(|(name, d)| NamedSource {
                name,
                rows: labelled(d),
            })
            .collect();
        let mut rng = self.request.randomness().rng();
        let released = release::dphtl(
            &sources,
            public.x.view(),
            unlabelled.x.view(),
            labelled(&target),
            &dphtl_settings,
            &mut rng,
        )?;
        let fitted = &released.fitted;
        let mut report = json!({
            "method": "dphtl",
            "features": target.names,
            "rows": "each scaled to norm 1 before the model applies",
            "epsilon_spent": charge::spent_report(spends),
            "hypothesis_weights": fitted.hypothesis_weights.weights.to_vec(),
            "kkt_residual": fitted.hypothesis_weights.kkt_residual,
            "prior": {"mean": fitted.prior.mean.to_vec(), "sd": fitted.prior.sd.to_vec()},
            "coefficients": fitted.theta.to_vec(),
            "noise": self.noise_text(),
        });
        if let Some(path) = &self.test {
            let test = self.load_like(path, &target)?;
            let scores = RowScaling::Normalize
                .apply(test.x.view(), 1.0)
                .dot(&fitted.theta)
                .mapv(privlogit_protocols::objective::sigmoid);
            report["test"] = json!({
                "file": path.display().to_string(),
                "auc": metrics::auc(scores.view(), test.y.view()),
                "accuracy": metrics::accuracy(scores.view(), test.y.view()),
                "privacy": "NOT private: exact metrics on the test rows, not charged",
            });
        }
        Ok(report)
    }

    /// Refuses `test` rows that are mostly training rows (the training file, a copy of it in
    /// another order or format, or most of its rows): exact metrics on them are not private.
    fn refuse_training_rows_as_test(&self) -> Result<(), Error> {
        let Some(test) = &self.test else {
            return Ok(());
        };
        let mut secret = zeroize::Zeroizing::new([0u8; 32]);
        rand::RngExt::fill(&mut rand::rng(), &mut secret[..]);
        let key = ledger::LedgerKey::from_secret(&secret);
        let options = LoadOptions::new(self.label.clone());
        let tested = key.print_file(test, &options)?;
        for training in std::iter::once(&self.data).chain(self.source.iter()) {
            let trained = key.print_file(training, &options)?;
            let share = tested.share_of_rows_in(&trained);
            if tested == trained || share >= ledger::print::SAME_PEOPLE {
                return Err(Error::plan(format!(
                    "setting `test` {}: about {:.0} % of its rows are rows of the training file {}: exact \
                     metrics on training rows are not private; test on rows the model was not \
                     fitted on",
                    test.display(),
                    100.0 * share,
                    training.display()
                )));
            }
        }
        Ok(())
    }
}

fn labelled(d: &Dataset) -> Labelled<'_> {
    Labelled {
        x: d.x.view(),
        y: d.y.view(),
    }
}
