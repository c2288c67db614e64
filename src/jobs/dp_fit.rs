//! A DP fit as a user asks for it: the method and its options as given (unset ones take the
//! defaults of [`crate::dp::release`]), checked once for every front end ([`Request::settings`]),
//! and `privlogit dp fit` on files as one call ([`FileJob`]): options checked and test rows
//! refused before any data is touched by a mechanism, the cost checked against the ledger
//! before any noise is drawn, the result written and then charged.

use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use serde_json::json;
use toml::Value;

use crate::charge::{self, Spends};
use crate::data::{self, Dataset, LoadOptions};
use crate::dp::noise::Randomness;
use crate::dp::plr::Privacy;
use crate::dp::release::{
    self, Cost, DEFAULT_ETA, DEFAULT_HIGH_LAMBDA, DEFAULT_K, DEFAULT_LAMBDA, DEFAULT_LAMBDA_IW,
    DEFAULT_LOW_FRACTION, DEFAULT_PRIOR_SD_FLOOR, Method, MethodSettings, NamedSource, SplitChoice,
};
use crate::dp::scaling::RowScaling;
use crate::dp::stacking::Combiner;
use crate::dp::transfer::Labelled;
use crate::dp::{DpError, ledger};
use crate::error::{Error, Origin, PlanError, SettingProblem};
use crate::metrics;
use crate::progress::Say;
use crate::settings;
use crate::settings::dp_keys::{self, DP_KEYS};

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

/// A DP fit's method, its target's epsilon and the options the user gave ([`DP_KEYS`], by
/// name; unset ones take the registry's default), so that an option the method would ignore
/// can be refused by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// Budget spent on the target data.
    pub epsilon: f64,
    /// The options given, each checked for its form (a list option's items in order).
    given: BTreeMap<&'static str, Value>,
}

impl Request {
    /// A request for `method` at `epsilon`, every option unset.
    pub fn new(method: Method, epsilon: f64) -> Self {
        Self {
            method,
            epsilon,
            given: BTreeMap::new(),
        }
    }

    /// Sets the option `name` to `value` (a list option takes each item of a list, or one
    /// more item): its form is checked here, its range and whether the method takes it by
    /// [`Request::settings`]. A switch set to false is as if not given.
    pub fn set(&mut self, name: &str, value: &Value) -> Result<(), Error> {
        let Some(key) = dp_keys::find(name) else {
            return Err(Error::UnknownSetting {
                name: name.to_string(),
                origin: Origin::Given,
                what: "an option of a DP fit",
                suggestion: settings::closest_name(name, DP_KEYS.iter().map(|k| k.name)),
            });
        };
        // The value's reader words its refusal.
        let at = |why: String| Error::bad(key.name, SettingProblem::Invalid { why });
        if let Value::Array(items) = value {
            if !key.many {
                return Err(Error::bad(
                    key.name,
                    SettingProblem::Refused {
                        why: "takes one value, not a list",
                    },
                ));
            }
            return items.iter().try_for_each(|item| self.set(key.name, item));
        }
        let value = settings::read_as(key, value).map_err(at)?;
        if key.many {
            match self
                .given
                .entry(key.name)
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(items) => items.push(value),
                other => *other = Value::Array(vec![value]),
            }
        } else if value == Value::Boolean(false) {
            self.given.remove(key.name);
        } else {
            self.given.insert(key.name, value);
        }
        Ok(())
    }

    /// The options given, by name.
    pub fn given(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.given.keys().copied()
    }

    fn value(&self, name: &str) -> Option<Value> {
        self.given
            .get(name)
            .cloned()
            .or_else(|| dp_keys::find(name).and_then(|k| k.preset.value()))
    }

    fn number(&self, name: &str) -> Option<f64> {
        self.value(name).and_then(|v| v.as_float())
    }

    fn numbers(&self, name: &str) -> Vec<f64> {
        match self.value(name) {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_float).collect(),
            _ => Vec::new(),
        }
    }

    fn count(&self, name: &str) -> Option<u64> {
        self.value(name)
            .and_then(|v| v.as_integer())
            .and_then(|n| u64::try_from(n).ok())
    }

    fn text(&self, name: &str) -> Option<String> {
        self.value(name)
            .and_then(|v| v.as_str().map(str::to_string))
    }

    fn switch(&self, name: &str) -> bool {
        self.value(name).and_then(|v| v.as_bool()).unwrap_or(false)
    }

    /// The method's settings, every default applied; refuses an option the method would
    /// ignore (by name), `public`/`unlabelled` data it does not take, and out-of-range values.
    pub fn settings(&self, public: bool, unlabelled: bool) -> Result<MethodSettings, Error> {
        let m = self.method;
        let combiner = match self.text("combiner") {
            Some(name) => CombinerChoice::parse(&name).map_err(|_| {
                Error::bad(
                    "combiner",
                    SettingProblem::NotAChoice {
                        given: name.clone(),
                        choices: &["stacking", "majority-vote", "weighted-vote"],
                    },
                )
            })?,
            None => CombinerChoice::Stacking,
        };
        let stacking = combiner == CombinerChoice::Stacking;
        let data = [("public", public), ("target_unlabelled", unlabelled)];
        let given = self
            .given()
            .chain(data.iter().filter(|(_, set)| *set).map(|(name, _)| *name));
        for option in given {
            if let Err(why) = m.takes(option, stacking) {
                return Err(PlanError::MethodOption {
                    option,
                    method: m,
                    why,
                }
                .into());
            }
        }
        let k = self.count("k").unwrap_or(DEFAULT_K as u64);
        if k == 0 {
            return Err(Error::bad(
                "k",
                SettingProblem::BelowLeast {
                    value: 0.0,
                    least: 1.0,
                    note: " (K, the number of groups)",
                },
            ));
        }
        let k = usize::try_from(k)
            .map_err(|_| Error::bad("k", SettingProblem::TooLarge { value: k }))?;
        if self.switch("plr_as_printed") && self.given.contains_key("noise_share") {
            return Err(PlanError::Conflict {
                first: "plr_as_printed",
                second: "noise_share",
                why: ": give one of them (the printed constants fix the share at the switch)",
            }
            .into());
        }
        let share = self.number("noise_share");
        let private = |epsilon| match share {
            _ if self.switch("plr_as_printed") => Privacy::EpsilonAsPrinted(epsilon),
            Some(share) if self.given.contains_key("noise_share") => {
                Privacy::EpsilonWithNoiseShare(epsilon, share)
            }
            _ => Privacy::Epsilon(epsilon),
        };
        if let Some(share) = share.filter(|s| !(*s > 0.0 && *s < 1.0)) {
            return Err(Error::bad(
                "noise_share",
                SettingProblem::OutOfRange {
                    value: share,
                    low: 0.0,
                    high: 1.0,
                    closed: false,
                },
            ));
        }
        let privacy = private(self.epsilon);
        privacy
            .epsilon()
            .map_err(|e| Error::bad("epsilon", e.into()))?;
        let source_privacy = private(self.number("source_epsilon").unwrap_or(self.epsilon));
        source_privacy
            .epsilon()
            .map_err(|e| Error::bad("source_epsilon", e.into()))?;
        let feature_scores = self.numbers("feature_scores");
        let group_importance = self.numbers("group_importance");
        let split = if !feature_scores.is_empty() {
            if !group_importance.is_empty() {
                return Err(PlanError::Conflict {
                    first: "feature_scores",
                    second: "group_importance",
                    why: ": give one of them",
                }
                .into());
            }
            SplitChoice::Scores(feature_scores)
        } else if !group_importance.is_empty() {
            let groups = group_importance.len();
            if self.given.contains_key("k") && groups != k {
                return Err(PlanError::Values {
                    setting: "group_importance",
                    given: groups,
                    expected: k,
                    of: "groups (setting `k`)",
                }
                .into());
            }
            SplitChoice::GroupImportance(group_importance)
        } else {
            SplitChoice::Random
        };
        let scaling = match self.number("row_bound") {
            Some(bound) => RowScaling::Clip {
                bound: DpError::check_positive("setting `row_bound`", bound)?,
            },
            None => RowScaling::Normalize,
        };
        let lambda = self.number("lambda").unwrap_or(DEFAULT_LAMBDA);
        let high_lambda = self.number("high_lambda").unwrap_or(DEFAULT_HIGH_LAMBDA);
        Ok(MethodSettings {
            privacy,
            source_privacy,
            lambda,
            source_lambda: self.number("source_lambda").unwrap_or(lambda),
            high_lambda,
            eta: self.number("eta").unwrap_or(DEFAULT_ETA),
            k,
            split,
            combiner: match combiner {
                CombinerChoice::Stacking => Combiner::Stacking {
                    lambda: high_lambda,
                },
                CombinerChoice::MajorityVote => Combiner::MajorityVote,
                CombinerChoice::WeightedVote => Combiner::WeightedVote,
            },
            low_fraction: self.number("low_fraction").unwrap_or(DEFAULT_LOW_FRACTION),
            scaling,
            lambda_iw: self.number("lambda_iw").unwrap_or(DEFAULT_LAMBDA_IW),
            prior_sd_floor: self
                .number("prior_sd_floor")
                .unwrap_or(DEFAULT_PRIOR_SD_FLOOR),
        })
    }

    /// Where the noise comes from: seeded (`seed`, reproducible, not for release) or the
    /// operating system's CSPRNG.
    pub fn randomness(&self) -> Randomness {
        self.count("seed")
            .map_or(Randomness::Os, Randomness::Seeded)
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
            return Err(PlanError::ColumnsDiffer {
                path: path.to_path_buf(),
                reference: self.data.clone(),
            }
            .into());
        }
        Ok(d)
    }

    /// Checks, fits, writes and charges: the result written in full (to a temporary file),
    /// the ledger charged, and only then the result put in place.
    pub fn run(&self, say: Say<'_>, elsewhere: &mut dyn std::io::Write) -> Result<(), Error> {
        // Everything is validated before any data is touched by a mechanism.
        let r = &self.request;
        let settings = r.settings(self.public.is_some(), self.target_unlabelled.is_some())?;
        if r.method == Method::Dphtl {
            if self.source.len() < 2 {
                return Err(PlanError::TooFew {
                    what: "setting `method` dphtl",
                    least: 2,
                    of: "setting `source` files (eq. 4.2 weighs hypotheses against each other)",
                }
                .into());
            }
            if self.public.is_none() {
                return Err(PlanError::Missing {
                    setting: "public",
                    value: "FILE",
                    why: "setting `method` dphtl reads its public rows there",
                }
                .into());
            }
        } else if self.source.len() > 1 || r.method.is_transfer() == self.source.is_empty() {
            return Err(PlanError::Sources {
                method: r.method,
                given: self.source.len(),
            }
            .into());
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
            elsewhere,
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
    fn single(
        &self,
        settings: &MethodSettings,
        spends: &Spends,
    ) -> Result<serde_json::Value, Error> {
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
            "method": self.request.method.name(),
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
    fn dphtl(
        &self,
        settings: &MethodSettings,
        spends: &Spends,
    ) -> Result<serde_json::Value, Error> {
        let epsilon = settings
            .privacy
            .epsilon()
            .map_err(|e| Error::bad("epsilon", e.into()))?;
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
                return Err(PlanError::TestOnTraining {
                    test: test.clone(),
                    training: training.clone(),
                    share,
                }
                .into());
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
