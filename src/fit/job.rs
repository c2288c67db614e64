//! `privlogit fit` as one library call: the parties a [`Spec`] names (files, or one file split
//! or grouped), prepared, fitted in the clear, and the report as a text table or one JSON
//! object.

use std::fmt::Write as _;

use privlogit_protocols::{FitError, FitOptions, IterationRecord, Optimizer, Status, StepKind};
use serde::Serialize;

use super::{Fitted, Preparation, Prepared};
use crate::data::{self, Dataset, LoadOptions, partition};
use crate::error::{Error, PlanError, SettingProblem};
use crate::evaluation::Evaluation;
use crate::inference::estimability::DesignError;
use crate::inference::{Goodness, LikelihoodRatio, Wald};
use crate::model::{Model, Standardization};
use crate::settings::{Reader, Spec};

/// A fit, validated and its parties loaded, ready to run.
#[derive(Debug)]
pub struct FitJob {
    prepared: Prepared,
    /// Held-out rows to evaluate the final model on.
    held_out: Vec<privlogit_protocols::PartyData>,
    optimizer: Optimizer,
    options: FitOptions,
    asked: Asked,
    /// A vertical fit's files, joined into one table on their identifiers.
    joined: Option<usize>,
}

/// The inference a fit is asked for.
#[derive(Debug, Clone)]
struct Asked {
    label: Option<String>,
    level: f64,
    covariance: bool,
    drop: Vec<String>,
    columns: super::GlmColumns,
    /// Newton steps that tell separated classes after a fit runs out of iterations.
    separation_probe: usize,
}

/// A finished fit with what it was fitted on.
#[derive(Debug)]
pub struct FitResult {
    /// The parties as prepared (names, sources, standardisation).
    pub prepared: Prepared,
    /// The optimiser's report and the model's measures.
    pub fitted: Fitted,
    /// The options it ran with.
    pub options: FitOptions,
    /// Standard errors, z, p-values and intervals (`None` when the fit did not converge: they
    /// mean something at the optimum only).
    pub wald: Option<Wald>,
    /// Why a converged fit has no table (its information is not positive definite at working
    /// precision).
    pub inference_error: Option<String>,
    /// Log-likelihood, deviances, AIC and BIC.
    pub goodness: Goodness,
    /// The likelihood-ratio test against the nested model `--drop` names.
    pub likelihood_ratio: Option<LikelihoodRatio>,
    /// The label column's name, when known.
    pub label: Option<String>,
    /// The family and the offset and weight columns.
    pub columns: super::GlmColumns,
    /// The final model on the held-out rows (`--test-party`).
    pub evaluation: Option<Evaluation>,
}

impl FitJob {
    /// The fit `spec` (read with [`Reader::Fit`]) describes: settings checked, parties loaded
    /// and prepared.
    pub fn new(spec: &Spec) -> Result<Self, Error> {
        if spec.reader != Reader::Fit {
            return Err(PlanError::Reader {
                read: spec.reader.command(),
                run: Reader::Fit.command(),
            }
            .into());
        }
        let (optimizer, options, asked) = plan(spec)?;
        if spec.vertical && spec.site_intercepts {
            return Err(Error::bad(
                "site_intercepts",
                SettingProblem::Refused {
                    why: "is refused: a vertical study's parties hold different columns of the same \
                          people, not sites with baselines of their own",
                },
            ));
        }
        if !spec.vertical && spec.given("id") {
            return Err(Error::bad(
                "id",
                SettingProblem::Refused {
                    why: "needs setting `vertical` (it names the column that links a vertical \
                          study's rows)",
                },
            ));
        }
        let mut parties = if spec.vertical {
            // The parties' columns joined on their shared identifiers: the pooled reference of
            // a vertical study.
            vec![crate::fit::vertical_join::join(spec)?.dataset()]
        } else {
            load_parties(spec)?
        };
        if spec.site_intercepts {
            let views: Vec<_> = parties.iter().map(crate::data::Dataset::view).collect();
            parties = super::sites::tables(&views, spec.intercept())?;
        }
        let prepared = super::prepare_glm(parties, preparation(spec), &glm_columns(spec)?)?;
        let held_out = held_out(spec, &prepared)?;
        let mut job = Self::checked(prepared, held_out, optimizer, options, asked)?;
        job.joined = spec.vertical.then_some(spec.party.len());
        Ok(job)
    }

    /// The fit `spec` describes over parties given as views (Python's arrays): the same
    /// settings and checks as [`FitJob::new`], the rows checked as a file's would be.
    pub fn from_views(
        spec: &Spec,
        parties: &[crate::data::DatasetView<'_>],
    ) -> Result<Self, Error> {
        let (optimizer, options, asked) = plan(spec)?;
        let prepared = if spec.site_intercepts {
            let tables = super::sites::tables(parties, spec.intercept())?;
            super::prepare_glm(tables, preparation(spec), &glm_columns(spec)?)?
        } else {
            super::prepare_views_glm(parties, preparation(spec), &glm_columns(spec)?)?
        };
        let held_out = held_out(spec, &prepared)?;
        Self::checked(prepared, held_out, optimizer, options, asked)
    }

    /// The job, once its design is checked: an unpenalised fit needs independent columns, and
    /// `--drop` names columns of the model.
    fn checked(
        prepared: Prepared,
        held_out: Vec<privlogit_protocols::PartyData>,
        optimizer: Optimizer,
        options: FitOptions,
        asked: Asked,
    ) -> Result<Self, Error> {
        if let Some(twice) = asked
            .drop
            .iter()
            .enumerate()
            .find(|(k, c)| asked.drop[..*k].contains(c))
            .map(|(_, c)| c)
        {
            return Err(Error::bad(
                "drop",
                SettingProblem::Twice {
                    value: twice.clone(),
                    why: " (each column counts once in the test's degrees of freedom)",
                },
            ));
        }
        for column in &asked.drop {
            if !prepared.names.iter().any(|n| n == column) || column == crate::model::INTERCEPT {
                return Err(Error::bad(
                    "drop",
                    SettingProblem::NotAFeature {
                        column: column.clone(),
                        features: prepared.names
                            [usize::from(prepared.names[0] == crate::model::INTERCEPT)..]
                            .to_vec(),
                    },
                ));
            }
        }
        if options.lambda == 0.0 {
            super::check_design(&prepared)?;
        }
        Ok(Self {
            prepared,
            held_out,
            optimizer,
            options,
            asked,
            joined: None,
        })
    }

    /// A line on what it fits, for the start.
    pub fn describe(&self) -> String {
        let parties = match (self.joined, self.prepared.parties.len()) {
            (Some(files), _) => format!("joined from {files} parties' columns"),
            (None, 1) => "in 1 party".to_string(),
            (None, k) => format!("in {k} parties"),
        };
        format!(
            "fitting {} coefficients on {} rows {parties} with {}",
            self.prepared.names.len(),
            self.prepared.rows(),
            self.optimizer
        )
    }

    /// Runs the fit, each iteration reported to `progress`.
    pub fn run(self, progress: &mut dyn FnMut(&IterationRecord)) -> Result<FitResult, Error> {
        let fitted = self.fitted(&self.prepared, progress)?;
        // Standard errors mean something at the optimum only; a table that cannot be made
        // costs the table, not the model.
        let (wald, inference_error) = match fitted.report.status {
            Status::Diverged(_) | Status::MaxIterations => (None, None),
            Status::Converged => match super::wald(
                &self.prepared,
                &fitted,
                &self.options,
                self.asked.level,
                self.asked.covariance,
            )? {
                Ok(w) => (Some(w), None),
                Err(e) => (None, Some(e.to_string())),
            },
        };
        let goodness = super::goodness(&self.prepared, &fitted, &self.options)?;
        // The model as reported, on the held-out rows (a diverged fit has none).
        let evaluation =
            if self.held_out.is_empty() || matches!(fitted.report.status, Status::Diverged(_)) {
                None
            } else {
                Evaluation::of_parties(&self.held_out, &fitted.report.beta)
                    .map_err(|e| FitError::Aggregation(Box::new(e)))?
            };
        let likelihood_ratio = if self.asked.drop.is_empty() {
            None
        } else {
            let reduced = self.reduced()?;
            let nested = self.fitted(&reduced, &mut |_| {})?;
            if !nested.report.converged() {
                return Err(PlanError::NotConverged {
                    model: "nested",
                    status: nested.report.status.name(),
                }
                .into());
            }
            // The models' log-likelihoods as reported (the Gaussian's maximised over its
            // dispersion too), not the fit's scale-free objective.
            let nested = super::goodness(&reduced, &nested, &self.options)?;
            Some(LikelihoodRatio::new(
                self.asked.drop.clone(),
                goodness.log_likelihood,
                nested.log_likelihood,
            ))
        };
        Ok(FitResult {
            prepared: self.prepared,
            fitted,
            options: self.options,
            wald,
            inference_error,
            goodness,
            likelihood_ratio,
            label: self.asked.label.clone(),
            columns: self.asked.columns.clone(),
            evaluation,
        })
    }

    /// A fit of `prepared` with the job's optimiser and options; an unpenalised one that
    /// separates the classes is refused.
    fn fitted(
        &self,
        prepared: &Prepared,
        progress: &mut dyn FnMut(&IterationRecord),
    ) -> Result<Fitted, Error> {
        let fitted = super::fit(prepared, self.optimizer, &self.options, progress)?;
        let fitted = self.probe_separation(prepared, fitted)?;
        if self.options.lambda == 0.0 && fitted.separated {
            let beta = &fitted.report.beta;
            let (at, largest) = beta
                .iter()
                .enumerate()
                .fold((0, 0.0_f64), |(k, m), (j, b)| {
                    if b.abs() > m { (j, b.abs()) } else { (k, m) }
                });
            return Err(DesignError::Separated {
                rows: prepared.rows(),
                largest,
                column: prepared.names[at].clone(),
            }
            .into());
        }
        Ok(fitted)
    }

    /// An unpenalised logistic fit that ran out of iterations may be crawling after a maximum
    /// that does not exist: PrivLogit's bound takes thousands of iterations to point its
    /// coefficients along a separating direction that Newton finds in a dozen. Newton steps
    /// from where it stopped (at most setting `separation_probe`) tell: when they separate the
    /// classes, the fit is returned as theirs (and refused as separated); otherwise the fit
    /// stands as it was.
    fn probe_separation(&self, prepared: &Prepared, fitted: Fitted) -> Result<Fitted, Error> {
        let logistic = prepared.glm().family == privlogit_protocols::Family::Binomial;
        if self.options.lambda != 0.0
            || self.asked.separation_probe == 0
            || !logistic
            || fitted.separated
            || fitted.report.status != Status::MaxIterations
        {
            return Ok(fitted);
        }
        let mut probe =
            self.options
                .clone()
                .initial(privlogit_protocols::optimizer::Initial::Vector(
                    fitted.report.beta.clone(),
                ));
        probe.stopping.max_iterations = self.asked.separation_probe;
        match super::fit(prepared, Optimizer::Newton, &probe, &mut |_| {}) {
            Ok(newton) if newton.separated => Ok(newton),
            _ => Ok(fitted),
        }
    }

    /// The nested model without the `--drop` columns (its rows copied).
    fn reduced(&self) -> Result<Prepared, Error> {
        let keep: Vec<usize> = (0..self.prepared.names.len())
            .filter(|&j| !self.asked.drop.contains(&self.prepared.names[j]))
            .collect();
        if keep.is_empty() {
            // An empty model has no fit to take its log-likelihood from (it read 0, and the
            // test came out negative).
            return Err(Error::bad(
                "drop",
                SettingProblem::Refused {
                    why: "leaves the nested model without a coefficient (setting `no_intercept` \
                          and every feature dropped): keep the intercept, and the test compares \
                          against the intercept-only model",
                },
            ));
        }
        let reduced = self
            .prepared
            .with_columns(&keep)
            .map_err(|e| FitError::Aggregation(Box::new(e)))?;
        super::check_design(&reduced)?;
        Ok(reduced)
    }
}

/// The optimiser, the options and the inference `spec` asks for, checked.
fn plan(spec: &Spec) -> Result<(Optimizer, FitOptions, Asked), Error> {
    let (_, optimizer) = spec.resolved_optimizer(false)?;
    optimizer.validate()?;
    let options = spec.fit_options(false)?;
    spec.checked_ci_level()?;
    if !spec.drop.is_empty() && (options.lambda != 0.0 || options.centre.is_some()) {
        return Err(Error::bad("drop", SettingProblem::PenalisedLikelihoodRatio));
    }
    let asked = Asked {
        label: spec.label.clone(),
        level: spec.ci_level,
        covariance: spec.covariance,
        drop: spec.drop.clone(),
        columns: glm_columns(spec)?,
        separation_probe: spec.separation_probe,
    };
    Ok((optimizer, options, asked))
}

fn glm_columns(spec: &Spec) -> Result<super::GlmColumns, Error> {
    super::GlmColumns::of(spec)
}

fn preparation(spec: &Spec) -> Preparation {
    Preparation {
        standardize: spec.standardize,
        intercept: spec.intercept(),
    }
}

/// The `--test-party` files, loaded as the training files are and made into the design the
/// model was fitted on; refused for a model that is not a logistic regression.
fn held_out(
    spec: &Spec,
    prepared: &Prepared,
) -> Result<Vec<privlogit_protocols::PartyData>, Error> {
    if spec.test_party.is_empty() {
        return Ok(Vec::new());
    }
    if spec.family != privlogit_protocols::Family::Binomial {
        return Err(Error::bad(
            "test_party",
            SettingProblem::Family {
                given: None,
                family: spec.family,
                why: ": held-out evaluation (AUC, log-loss, accuracy, Brier score, calibration) \
                      is for a logistic model",
            },
        ));
    }
    let options = load_options(spec)?;
    let mut parties = spec
        .test_party
        .iter()
        .map(|p| Ok(data::load(p, &options)?.data))
        .collect::<Result<Vec<_>, Error>>()?;
    if spec.site_intercepts {
        // Party k's held-out rows carry party k's indicators.
        let k = prepared.parties.len();
        if parties.len() != k {
            return Err(Error::bad(
                "test_party",
                SettingProblem::PerParty {
                    given: parties.len(),
                    parties: k,
                    of: "parties",
                },
            ));
        }
        parties = parties
            .iter()
            .enumerate()
            .map(|(j, p)| super::sites::table(p.view(), j, k))
            .collect();
    }
    Ok(super::prepare_held_out(
        &parties,
        prepared,
        preparation(spec),
        &glm_columns(spec)?,
    )?)
}

/// How the spec's files are read.
fn load_options(spec: &Spec) -> Result<LoadOptions, Error> {
    let label = spec.label.clone().ok_or_else(|| PlanError::Missing {
        setting: "label",
        value: "COLUMN",
        why: "the name of the label column",
    })?;
    Ok(LoadOptions {
        label,
        family: spec.family,
        exclude: spec.exclude.clone(),
        group: spec.group_by.clone(),
    })
}

/// Reads the parties as the spec names them.
fn load_parties(spec: &Spec) -> Result<Vec<Dataset>, Error> {
    let options = load_options(spec)?;
    if let Some(path) = &spec.data {
        if !spec.party.is_empty() {
            return Err(PlanError::Conflict {
                first: "data",
                second: "party",
                why: ": give one file, or each party's files",
            }
            .into());
        }
        let table = data::load(path, &options)?;
        return Ok(match (spec.split, &table.groups) {
            (Some(_), Some(_)) => {
                return Err(PlanError::Conflict {
                    first: "split",
                    second: "group_by",
                    why: "",
                }
                .into());
            }
            (Some(k), _) => match spec.shuffle_seed {
                Some(seed) => partition::split_shuffled(&table.data, k, seed)?,
                None => partition::split_contiguous(&table.data, k)?,
            },
            (None, Some(groups)) => partition::split_by_group(&table.data, groups)?,
            (None, None) => vec![table.data],
        });
    }
    if spec.split.is_some() || spec.group_by.is_some() || spec.shuffle_seed.is_some() {
        return Err(Error::refused(
            "setting `split`, setting `shuffle_seed` and setting `group_by` apply to setting `data` FILE",
        ));
    }
    if spec.party.is_empty() {
        return Err(PlanError::Missing {
            setting: "party",
            value: "FILE",
            why: "give the parties' files with setting `party` FILE (repeated) or one file with \
                  setting `data` FILE",
        }
        .into());
    }
    spec.check_distinct_parties()?;
    spec.party
        .iter()
        .map(|p| Ok(data::load(p, &options)?.data))
        .collect()
}

/// One progress line per iteration.
pub fn progress_line(r: &IterationRecord) -> String {
    let mut line = format!("iteration {:>4}", r.iteration);
    if let Some(o) = r.objective {
        let _ = write!(line, "  objective {o:>16.8}");
    }
    if let Some(c) = r.relative_change {
        let _ = write!(line, "  relative change {c:.3e}");
    }
    if r.step == StepKind::Accelerated {
        line.push_str("  (accelerated)");
    }
    line
}

impl FitResult {
    /// How the fit ended, as a line to print when it did not converge.
    pub fn ending_note(&self) -> Option<String> {
        self.fitted.report.ending_note()
    }

    /// Whether the fit diverged.
    pub fn diverged(&self) -> bool {
        matches!(self.fitted.report.status, Status::Diverged(_))
    }

    /// The model applicable to raw rows.
    pub fn model(&self) -> Result<Model, Error> {
        let s = self
            .prepared
            .standardizer
            .as_ref()
            .map(|s| Standardization {
                names: s.names.clone(),
                means: s.means.to_vec(),
                scales: s.scales.to_vec(),
            });
        Ok(Model::from_fit(
            &self.prepared.names,
            &self.fitted.report.beta.to_vec(),
            s.as_ref(),
        )?)
    }

    /// The report as one JSON value.
    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(JsonReport::new(self)).unwrap_or_default()
    }

    /// The report as text or JSON.
    pub fn render(&self, json: bool) -> String {
        if json {
            let mut s = serde_json::to_string_pretty(&JsonReport::new(self)).unwrap_or_default();
            s.push('\n');
            return s;
        }
        let (prepared, fitted, options) = (&self.prepared, &self.fitted, &self.options);
        let r = &fitted.report;
        let mut s = String::new();
        let sizes: Vec<String> = prepared
            .parties
            .iter()
            .map(|p| p.rows().to_string())
            .collect();
        let _ = writeln!(s, "optimizer       {} ({})", r.optimizer, r.status.name());
        let _ = writeln!(
            s,
            "parties         {} ({} rows; N = {})",
            prepared.parties.len(),
            sizes.join(" + "),
            prepared.rows()
        );
        let _ = writeln!(
            s,
            "lambda          {}{}",
            options.lambda,
            if options.free_intercept {
                " (intercept not penalised)"
            } else {
                ""
            }
        );
        if let Some(c) = &options.centre {
            let _ = writeln!(s, "penalty centre  {c}");
        }
        let _ = writeln!(
            s,
            "standardized    {}",
            if prepared.standardizer.is_some() {
                "yes"
            } else {
                "no"
            }
        );
        let _ = writeln!(s, "iterations      {}", r.iterations);
        let _ = writeln!(s, "rounds          {}", r.rounds);
        if matches!(r.optimizer, Optimizer::AcceleratedPrivLogit { .. }) {
            let _ = writeln!(
                s,
                "accelerated     {} accepted, {} rejected, {} Newton finish steps",
                r.accelerated_steps, r.rejected_candidates, r.newton_steps
            );
        }
        let _ = writeln!(s, "log-likelihood  {:.10}", fitted.log_likelihood);
        let _ = writeln!(s, "objective       {:.10}", fitted.objective);
        if let Some(auc) = fitted.auc {
            let _ = writeln!(s, "AUC             {auc:.6}");
        }
        if let Some(accuracy) = fitted.accuracy {
            let _ = writeln!(s, "accuracy        {accuracy:.6}");
        }
        s.push('\n');
        match crate::inference::summary::render(&self.json()) {
            Ok(table) => s.push_str(&table),
            Err(e) => {
                let _ = writeln!(s, "(no summary: {e})");
            }
        }
        s
    }
}

/// The `--json` output. Field names are a stable interface; add, do not rename.
#[derive(Serialize)]
struct JsonReport<'a> {
    optimizer: &'static str,
    status: &'static str,
    converged: bool,
    divergence: Option<&'static str>,
    iterations: usize,
    rounds: usize,
    accelerated_steps: usize,
    rejected_candidates: usize,
    newton_steps: usize,
    lambda: f64,
    free_intercept: bool,
    /// The estimator in words ("maximum likelihood", "penalised (lambda 1, intercept
    /// penalised)").
    estimator: String,
    penalty_centre: Option<Vec<f64>>,
    tolerance: f64,
    gradient_tolerance: Option<f64>,
    max_iterations: usize,
    n: usize,
    parties: Vec<JsonParty<'a>>,
    standardized: bool,
    intercept: bool,
    family: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    weights: Option<&'a str>,
    names: &'a [String],
    coefficients: Vec<f64>,
    label: Option<&'a str>,
    #[serde(flatten)]
    wald: Option<&'a Wald>,
    #[serde(flatten)]
    goodness: Goodness,
    #[serde(skip_serializing_if = "Option::is_none")]
    inference_error: Option<&'a str>,
    likelihood_ratio: Option<&'a LikelihoodRatio>,
    #[serde(flatten)]
    evaluation: Option<&'a Evaluation>,
    objective: f64,
    auc: Option<f64>,
    accuracy: Option<f64>,
    standardization: Option<JsonStandardization<'a>>,
}

#[derive(Serialize)]
struct JsonParty<'a> {
    source: &'a str,
    rows: usize,
}

#[derive(Serialize)]
struct JsonStandardization<'a> {
    names: &'a [String],
    means: Vec<f64>,
    scales: Vec<f64>,
}

impl<'a> JsonReport<'a> {
    fn new(result: &'a FitResult) -> Self {
        let (prepared, fitted, options) = (&result.prepared, &result.fitted, &result.options);
        let r = &fitted.report;
        Self {
            optimizer: r.optimizer.name(),
            status: r.status.name(),
            converged: r.converged(),
            divergence: match r.status {
                Status::Diverged(reason) => Some(reason.describe()),
                _ => None,
            },
            iterations: r.iterations,
            rounds: r.rounds,
            accelerated_steps: r.accelerated_steps,
            rejected_candidates: r.rejected_candidates,
            newton_steps: r.newton_steps,
            lambda: options.lambda,
            free_intercept: options.free_intercept,
            estimator: crate::inference::estimator(
                options.lambda,
                options.free_intercept,
                prepared.names.first().map(String::as_str) == Some(crate::model::INTERCEPT),
                options.centre.is_some(),
            ),
            penalty_centre: options.centre.as_ref().map(|c| c.to_vec()),
            tolerance: options.stopping.relative_tolerance,
            gradient_tolerance: options.stopping.gradient_tolerance,
            max_iterations: options.stopping.max_iterations,
            n: prepared.rows(),
            parties: prepared
                .sources
                .iter()
                .zip(&prepared.parties)
                .map(|(s, p)| JsonParty {
                    source: s,
                    rows: p.rows(),
                })
                .collect(),
            standardized: prepared.standardizer.is_some(),
            intercept: prepared.names.first().map(String::as_str) == Some(crate::model::INTERCEPT),
            family: prepared.glm().family.name(),
            offset: result.columns.offset.as_deref(),
            weights: result.columns.weights.as_deref(),
            names: &prepared.names,
            coefficients: r.beta.to_vec(),
            label: result.label.as_deref(),
            wald: result.wald.as_ref(),
            goodness: result.goodness,
            inference_error: result.inference_error.as_deref(),
            likelihood_ratio: result.likelihood_ratio.as_ref(),
            evaluation: result.evaluation.as_ref(),
            objective: fitted.objective,
            auc: fitted.auc,
            accuracy: fitted.accuracy,
            standardization: prepared.standardizer.as_ref().map(|s| JsonStandardization {
                names: &s.names,
                means: s.means.to_vec(),
                scales: s.scales.to_vec(),
            }),
        }
    }
}
