//! What a secure study reports: the model (in standardised and raw units), its status and the
//! cost report, as a text table or one JSON object. A differentially private study releases
//! only what epsilon covers (the model and public settings); the cost report goes apart,
//! labelled as outside the guarantee.

use std::fmt::Write as _;

use privlogit_protocols::Status;
use privlogit_protocols::secure::keyholder::KeyholderStats;
use privlogit_protocols::secure::node::NodeStats;
use privlogit_protocols::secure::round_trips::{RoundTrips, Trips};
use privlogit_protocols::secure::study_protocol::{StudyOutcome, StudyPlan};
use serde::Serialize;

use crate::error::{Error, PlanError, SettingProblem};
use crate::inference::{GlmSums, Goodness, InferenceError, Reveal, Wald};
use crate::model::{INTERCEPT, Model, Standardization};
use crate::settings::Spec;

/// A finished study, as the aggregator sees it (with the key holder's and the Nodes' counters
/// when every party ran in this process).
#[derive(Debug)]
pub struct StudyResult {
    /// The aggregator's outcome.
    pub outcome: StudyOutcome,
    /// The plan it ran.
    pub plan: StudyPlan,
    /// The key holder's counters (in-process studies).
    pub keyholder: Option<KeyholderStats>,
    /// Each Node's counters (in-process studies).
    pub nodes: Option<Vec<NodeStats>>,
    /// How the inference is shown.
    pub shown: Shown,
    /// The likelihood-ratio test against the nested model `--drop` names (in-process studies).
    pub likelihood_ratio: Option<crate::inference::LikelihoodRatio>,
}

/// How a study's inference is shown (the aggregator's own settings, not the plan's).
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    /// Level of the intervals.
    pub ci_level: f64,
    /// Print the covariance matrix.
    pub covariance: bool,
    /// The label column's name, where this party knows it (not the aggregator of a study
    /// between organizations).
    pub label: Option<String>,
    /// The disclosure controls the published figures follow.
    pub disclosure: privlogit_protocols::disclosure::Disclosure,
}

impl Shown {
    /// The settings of `spec`, checked.
    pub fn of(spec: &Spec) -> Result<Self, Error> {
        spec.checked_ci_level()?;
        if spec.covariance && spec.reveal != Reveal::Covariance {
            return Err(Error::bad(
                "covariance",
                SettingProblem::NotRevealed {
                    reveal: spec.reveal.name(),
                },
            ));
        }
        Ok(Self {
            ci_level: spec.ci_level,
            covariance: spec.covariance,
            label: spec.label.clone(),
            disclosure: spec.disclosure(),
        })
    }
}

/// A result rendered for its readers.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// What the study publishes (standard output or the output file).
    pub release: String,
    /// A differentially private study's cost report (iterations, rounds, timings, traffic),
    /// which epsilon does not cover: for the operators, not for release.
    pub cost: Option<String>,
}

/// How a study ended, for exit statuses and exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The stopping rule was met.
    Converged,
    /// The iteration limit came first (a warning, not a failure).
    MaxIterations,
    /// The optimiser diverged (Newton).
    Diverged,
}

impl StudyResult {
    /// The result of a study the aggregator of a deployment ran (no other party's counters,
    /// no nested model yet).
    pub fn of_aggregator(outcome: StudyOutcome, plan: StudyPlan, shown: Shown) -> Self {
        Self {
            outcome,
            plan,
            keyholder: None,
            nodes: None,
            shown,
            likelihood_ratio: None,
        }
    }

    /// How the study ended.
    pub fn ending(&self) -> Ending {
        match self.outcome.fit.status {
            Status::Converged => Ending::Converged,
            Status::MaxIterations => Ending::MaxIterations,
            Status::Diverged(_) => Ending::Diverged,
        }
    }

    /// The line to print about an ending other than convergence.
    pub fn ending_note(&self) -> Option<String> {
        self.outcome.fit.ending_note()
    }

    /// With two Nodes whose study file allows more than the coefficients
    /// (`two_node_disclosure`): what each Node learns of the other from what is published and
    /// its own rows (by subtracting its own sums from the pooled ones).
    fn two_nodes_learn(&self) -> Option<String> {
        let plan = &self.plan;
        if plan.parties != 2 || self.outcome.vertical.is_some() || !self.shown.disclosure.two_nodes
        {
            return None;
        }
        let mut learnt = vec!["its row count (N less its own)"];
        if plan.standardize {
            learnt.push("its means and standard deviations");
        }
        if plan.reveal != crate::inference::Reveal::Coefficients {
            learnt.push("its log-likelihood at the optimum and its count of positive labels");
        }
        if plan.evaluate {
            learnt.push("its held-out sums (rows, positives, log-loss, per-bin counts)");
        }
        learnt.push("its gradient at the optimum (the pooled one is 0 up to the penalty)");
        Some(format!(
            "two Nodes (two_node_disclosure): each learns of the other {}",
            learnt.join(", ")
        ))
    }

    /// The pooled statistics of a standardised study, named as its features.
    pub fn standardization(&self) -> Option<Standardization> {
        let o = &self.outcome;
        let (means, scales) = o.standardization.clone()?;
        let names = o
            .names
            .iter()
            .filter(|n| n.as_str() != INTERCEPT)
            .cloned()
            .collect();
        Some(Standardization {
            names,
            means,
            scales,
        })
    }

    /// The model in the data's own units (standardised studies).
    pub fn raw_model(&self) -> Result<Option<Model>, Error> {
        let beta = self.outcome.fit.beta.to_vec();
        Ok(self
            .standardization()
            .map(|s| Model::from_fit(&self.outcome.names, &beta, Some(&s)))
            .transpose()?)
    }

    /// The model applicable to raw rows, standardised or not.
    pub fn model(&self) -> Result<Model, Error> {
        let beta = self.outcome.fit.beta.to_vec();
        Ok(Model::from_fit(
            &self.outcome.names,
            &beta,
            self.standardization().as_ref(),
        )?)
    }

    /// The secure PLR budget, as published with the model.
    fn release(&self) -> Result<Option<JsonRelease>, Error> {
        let Some(release) = &self.plan.release else {
            return Ok(None);
        };
        let rows = self.outcome.rows;
        let budget = crate::hybrid::secure_plr::budget(release, rows)?;
        Ok(Some(JsonRelease {
            epsilon: release.epsilon,
            lambda: release.lambda,
            epsilon_prime: budget.epsilon_prime,
            delta: budget.delta,
            penalty: crate::hybrid::secure_plr::penalty(release, &budget, rows),
            noise: "b = b1 + b2, one PLR noise vector drawn by each server",
        }))
    }

    /// The whole report as one JSON value (`study --json`; Python's result).
    pub fn json(&self) -> Result<serde_json::Value, Error> {
        serde_json::to_value(self.report()?).map_err(|source| {
            PlanError::Render {
                what: "result",
                source,
            }
            .into()
        })
    }

    /// The fit measures and the Wald table from what the inference round revealed (`None`
    /// when the study revealed the coefficients only, or did not converge); a table that cannot
    /// be made from the revealed variances is an error in the inner result (the model stands).
    pub fn inference(&self) -> Option<(Goodness, Result<Wald, InferenceError>)> {
        let o = &self.outcome;
        let revealed = o.inference.as_ref()?;
        let beta = o.fit.beta.as_slice().expect("contiguous");
        let (level, keep) = (self.shown.ci_level, self.shown.covariance);
        let glm = self.plan.glm;
        let (k, n) = (o.names.len(), o.rows);
        // The Gaussian's information is X^T W X / sigma^2: its covariance scales by the
        // estimate RSS / (N - k), RSS = -2 x the revealed scale-free log-likelihood.
        let scale = if glm.family.estimates_scale() {
            -2.0 * revealed.log_likelihood / (n as f64 - k as f64)
        } else {
            1.0
        };
        let wald = match &revealed.covariance {
            Some(c) => Wald::from_covariance(&o.names, beta, &(c * scale), level, keep),
            None => {
                let variances: Vec<f64> = revealed.variances.iter().map(|v| v * scale).collect();
                Wald::new(&o.names, beta, &variances, level)
            }
        };
        let wald = wald.map(|w| w.for_family(glm.family, n, k));
        // A standardised study's table in raw units too (the covariance transforms exactly).
        let wald = match (&o.standardization, self.plan.standardize) {
            (Some((means, scales)), true) => wald.and_then(|w| {
                let covariance = revealed.covariance.as_ref().map(|c| c * scale);
                let variances: Vec<f64> = match &covariance {
                    Some(c) => c.diag().to_vec(),
                    None => revealed.variances.iter().map(|v| v * scale).collect(),
                };
                let raw = crate::inference::RawInputs {
                    means,
                    scales,
                    covariance: covariance.as_ref(),
                    intercept_variance: revealed.raw_intercept_variance.map(|v| v * scale),
                };
                w.with_raw_units(&o.names, beta, &variances, raw, (glm.family, n))
            }),
            _ => wald,
        };
        let intercept = o.names.first().map(String::as_str) == Some(INTERCEPT);
        let goodness = match &revealed.constants {
            Some(c) => Goodness::glm(
                GlmSums {
                    family: glm.family,
                    fitted: revealed.log_likelihood,
                    null: glm
                        .family
                        .null_log_likelihood([c[0], c[1], c[2]], intercept, glm.offset)
                        .unwrap_or(f64::NAN),
                    saturated: c[3],
                    log_weights: c[4],
                },
                k,
                n,
            ),
            None => Goodness::binomial(
                revealed.log_likelihood,
                k,
                n,
                revealed.positives.unwrap_or(0.0),
                intercept,
            ),
        };
        Some((goodness, wald))
    }

    fn report(&self) -> Result<JsonStudy<'_>, Error> {
        let o = &self.outcome;
        let r = &o.fit;
        let masked = &o.aggregator.solver;
        let keyholder = self.keyholder.as_ref();
        let nodes = self.nodes.as_deref();
        let inference = self.inference();
        let table_error = inference
            .as_ref()
            .and_then(|(_, w)| w.as_ref().err().map(ToString::to_string));
        let options = &self.plan.options;
        let report = JsonStudy {
            lambda: options.lambda,
            estimator: crate::inference::estimator(
                options.lambda,
                options.free_intercept,
                o.names.first().map(String::as_str) == Some(INTERCEPT),
                options.centre.is_some(),
            ),
            family: self.plan.glm.family.name(),
            label: self.shown.label.as_deref(),
            reveal: self.plan.reveal.name(),
            two_nodes_learn: self.two_nodes_learn(),
            wald: inference
                .as_ref()
                .and_then(|(_, w)| w.as_ref().ok().cloned()),
            goodness: inference.map(|(g, _)| g),
            inference_seconds: o.inference.as_ref().map(|r| r.seconds),
            inference_error: o.inference_failed.clone().or(table_error),
            likelihood_ratio: self.likelihood_ratio.as_ref(),
            evaluation: o
                .evaluation
                .as_ref()
                .and_then(|h| crate::evaluation::Evaluation::from_sums(&h.sums, h.auc))
                .map(|e| e.disclosed(self.shown.disclosure.min_cell)),
            differential_privacy: self.release()?,
            vertical: o.vertical.as_ref().map(|v| JsonVertical {
                parties: v
                    .parties
                    .iter()
                    .map(|(party, held, range)| JsonVerticalParty {
                        party: party + 1,
                        rows_held: *held,
                        columns: &o.names[range.clone()],
                    })
                    .collect(),
                psi_seconds: v.psi_seconds,
                gradient_tolerance: v.gradient_tolerance,
            }),
            protocol: Spec::protocol_name(self.plan.protocol).to_string(),
            optimizer: r.optimizer.to_string(),
            status: r.status.name(),
            converged: r.status == Status::Converged,
            iterations: r.iterations,
            rounds: r.rounds,
            newton_steps: r.newton_steps,
            rows: o.rows,
            names: &o.names,
            coefficients: r.beta.to_vec(),
            standardization: self.standardization(),
            raw_model: self.raw_model()?,
            setup_seconds: o.setup_seconds,
            seconds: o.seconds,
            seconds_per_iteration: self.seconds_per_iteration(),
            and_gates: o.aggregator.and_gates,
            bytes_from_each_node: &o.aggregator.bytes_from_each_node,
            bytes_to_nodes: o.aggregator.bytes_to_nodes,
            bytes_aggregator_to_keyholder: o.aggregator.bytes_to_keyholder,
            bytes_keyholder_to_aggregator: keyholder.map(|k| k.bytes_sent),
            gc_seconds: o.aggregator.gc_seconds,
            waiting_for_nodes_seconds: o.aggregator.node_wait_seconds,
            node_local_seconds: nodes.map(|n| n.iter().map(|s| s.local_seconds).collect()),
            node_paillier_seconds: nodes.map(|n| n.iter().map(|s| s.paillier_seconds).collect()),
            keyholder_paillier_seconds: keyholder.map(|k| k.paillier_seconds),
            linear_algebra: o.aggregator.linear_algebra.to_string(),
            masked_seconds: masked.masked_seconds,
            masked_cross_term_seconds: masked.masked.cross_seconds,
            masked_waiting_for_keyholder_seconds: masked.masked.wait_seconds,
            masked_pivot_circuit_seconds: masked.masked.leaf_seconds,
            masked_products: masked.masked.products,
            masked_pivots: masked.masked.leaves,
            keyholder_masked_paillier_seconds: keyholder.map(|k| k.masked.paillier_seconds),
            keyholder_masked_product_seconds: keyholder.map(|k| k.masked.product_seconds),
            keyholder_masked_decryptions: keyholder.map(|k| k.masked.decryptions),
            keyholder_masked_encryptions: keyholder.map(|k| k.masked.encryptions),
            round_trips: JsonRoundTrips::of(&o.aggregator.round_trips),
        };
        Ok(report)
    }

    fn seconds_per_iteration(&self) -> f64 {
        let o = &self.outcome;
        (o.seconds - o.setup_seconds) / o.fit.iterations.max(1) as f64
    }

    /// The report as text or JSON, and (a differentially private study) what is released
    /// apart from the cost report.
    pub fn render(&self, json: bool) -> Result<Rendered, Error> {
        let full = if json {
            let mut s = serde_json::to_string_pretty(&self.report()?).map_err(|source| {
                PlanError::Render {
                    what: "result",
                    source,
                }
            })?;
            s.push('\n');
            s
        } else {
            self.text()?
        };
        if self.plan.release.is_none() {
            return Ok(Rendered {
                release: full,
                cost: None,
            });
        }
        // The release carries what epsilon covers: the model and public settings. How the
        // study got there depends on the data and the noise: the operators' cost report.
        const NOTE: &str = "NOT covered by epsilon: iterations, rounds, timings and traffic \
                            depend on the data and the noise; for the study's operators, not for \
                            release";
        let cost = if json {
            let mut v = self.json()?;
            v["cost_report"] = serde_json::Value::String(NOTE.into());
            pretty(&v)
        } else {
            format!("cost report ({NOTE})\n{full}")
        };
        Ok(Rendered {
            release: self.released_model(json)?,
            cost: Some(cost),
        })
    }

    /// What a differentially private study releases: the model, its names, N and the public
    /// settings (protocol, the budget and its split), nothing that depends on the data or the
    /// noise beyond the coefficients.
    fn released_model(&self, json: bool) -> Result<String, Error> {
        let o = &self.outcome;
        let release = self.release()?;
        let protocol = Spec::protocol_name(self.plan.protocol);
        if json {
            let v = serde_json::json!({
                "differential_privacy": release,
                "protocol": protocol,
                "optimizer": o.fit.optimizer.to_string(),
                "rows": o.rows,
                "names": o.names,
                "coefficients": o.fit.beta.to_vec(),
            });
            return Ok(pretty(&v));
        }
        let mut s = String::new();
        if let Some(r) = &release {
            s.push_str(&privacy_line(r));
        }
        let _ = writeln!(s, "protocol        {protocol}");
        let _ = writeln!(s, "N               {}", o.rows);
        s.push_str(&coefficient_table(&o.names, &o.fit.beta.to_vec(), None));
        Ok(s)
    }

    fn text(&self) -> Result<String, Error> {
        let o = &self.outcome;
        let r = &o.fit;
        let masked = &o.aggregator.solver;
        let keyholder = self.keyholder.as_ref();
        let mut s = String::new();
        if let Some(rel) = self.release()? {
            s.push_str(&privacy_line(&rel));
        }
        let _ = writeln!(
            s,
            "protocol        {:?} ({})",
            self.plan.protocol, r.optimizer
        );
        let _ = writeln!(s, "status          {}", r.status.name());
        let _ = writeln!(
            s,
            "Nodes           {} (N = {})",
            o.aggregator.bytes_from_each_node.len(),
            o.rows
        );
        if let Some(v) = &o.vertical {
            let held: Vec<String> = v
                .parties
                .iter()
                .map(|(party, held, range)| {
                    format!(
                        "party {} {held} rows, {} coefficients",
                        party + 1,
                        range.len()
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "vertical        N = {} rows shared ({}); intersection {:.2} s{}",
                o.rows,
                held.join(", "),
                v.psi_seconds,
                v.gradient_tolerance
                    .map_or(String::new(), |g| format!("; gradient tolerance {g:.2e}"))
            );
        }
        let _ = writeln!(s, "iterations      {}", r.iterations);
        let _ = writeln!(s, "rounds          {}", r.rounds);
        let _ = writeln!(
            s,
            "setup           {:.2} s (key pair, handshake, counts, the bound and its inverse or factor)",
            o.setup_seconds
        );
        let _ = writeln!(s, "per iteration   {:.3} s", self.seconds_per_iteration());
        let _ = writeln!(s, "total           {:.2} s", o.seconds);
        let _ = writeln!(
            s,
            "round trips     {}",
            round_trips_line(&o.aggregator.round_trips)
        );
        let _ = writeln!(
            s,
            "linear algebra  {}{}",
            o.aggregator.linear_algebra,
            if masked.masked.products > 0 {
                format!(
                    " ({} masked products, {} pivot circuits)",
                    masked.masked.products, masked.masked.leaves
                )
            } else {
                String::new()
            }
        );
        if masked.masked_seconds > 0.0 {
            let _ = writeln!(
                s,
                "masked          {:.2} s: cross terms {:.2} s, waiting for the key holder {:.2} s, \
                 pivot circuits {:.2} s{}",
                masked.masked_seconds,
                masked.masked.cross_seconds,
                masked.masked.wait_seconds,
                masked.masked.leaf_seconds,
                keyholder.map_or(String::new(), |k| format!(
                    "; key holder: Paillier {:.2} s ({} decryptions, {} encryptions), \
                     products {:.2} s",
                    k.masked.paillier_seconds,
                    k.masked.decryptions,
                    k.masked.encryptions,
                    k.masked.product_seconds
                ))
            );
        }
        let _ = writeln!(
            s,
            "garbled         {} AND gates, {:.2} s in circuits",
            o.aggregator.and_gates, o.aggregator.gc_seconds
        );
        let _ = writeln!(
            s,
            "waiting         {:.2} s for the Nodes (their local compute and encryption)",
            o.aggregator.node_wait_seconds
        );
        if let (Some(k), Some(n)) = (keyholder, self.nodes.as_deref()) {
            let local: Vec<String> = n
                .iter()
                .map(|s| format!("{:.2}", s.local_seconds))
                .collect();
            let paillier: Vec<String> = n
                .iter()
                .map(|s| format!("{:.2}", s.paillier_seconds))
                .collect();
            let _ = writeln!(s, "local compute   Nodes {} s", local.join(" / "));
            let _ = writeln!(
                s,
                "Paillier        Nodes {} s; key holder {:.2} s (besides masked arithmetic)",
                paillier.join(" / "),
                k.paillier_seconds
            );
        }
        let sent: Vec<String> = o
            .aggregator
            .bytes_from_each_node
            .iter()
            .map(|&b| human_bytes(b))
            .collect();
        let _ = writeln!(
            s,
            "bytes sent      Nodes {}; aggregator to Nodes {}, to key holder {}{}",
            sent.join(" / "),
            human_bytes(o.aggregator.bytes_to_nodes),
            human_bytes(o.aggregator.bytes_to_keyholder),
            keyholder.map_or(String::new(), |k| format!(
                "; key holder {}",
                human_bytes(k.bytes_sent)
            ))
        );
        if let Some(seconds) = o.inference.as_ref().map(|r| r.seconds) {
            let _ = writeln!(
                s,
                "inference       {seconds:.2} s (the information at the optimum, inverted in \
                 masked arithmetic; revealed: {})",
                self.plan.reveal.name()
            );
        }
        if let Some(why) = &o.inference_failed {
            let _ = writeln!(s, "inference       none: {why}");
        } else if self.plan.parties == 2
            && o.vertical.is_none()
            && !self.shown.disclosure.two_nodes
            && self.plan.reveal == Reveal::Coefficients
        {
            // The plan dropped the inference round without being asked: say so and how.
            let _ = writeln!(
                s,
                "inference       none: with two Nodes, standard errors and likelihoods would tell \
                 each Node the other's sums (setting `two_node_disclosure` publishes them)"
            );
        }
        let raw = self.raw_model()?;
        s.push_str(&coefficient_table(&o.names, &r.beta.to_vec(), raw.as_ref()));
        if self.plan.reveal != Reveal::Coefficients {
            s.push('\n');
            s.push_str(
                &crate::inference::summary::render(&self.json()?)
                    .map_err(|why| PlanError::Output { why })?,
            );
        }
        Ok(s)
    }
}

/// A secure PLR study's budget, as published with its model.
#[derive(Serialize, Clone)]
struct JsonRelease {
    /// Per Node data set.
    epsilon: f64,
    lambda: f64,
    /// Algorithm 1's eps' and Delta for this N (each server's noise drawn with eps').
    epsilon_prime: f64,
    delta: f64,
    /// The study's penalty, N (lambda + Delta).
    penalty: f64,
    noise: &'static str,
}

/// What a vertical study adds to the report.
#[derive(Serialize)]
struct JsonVertical<'a> {
    /// Per party in coefficient order (the labelling party first).
    parties: Vec<JsonVerticalParty<'a>>,
    /// Seconds until every party knew its shared rows.
    psi_seconds: f64,
    /// The gradient-norm tolerance the study stopped by (raised to the circuit's floor).
    gradient_tolerance: Option<f64>,
}

#[derive(Serialize)]
struct JsonVerticalParty<'a> {
    /// Its place among the parties as they joined (1-based: the `--party` order in one process).
    party: usize,
    /// Rows its file held.
    rows_held: usize,
    /// Its coefficients (the intercept with the labelling party's).
    columns: &'a [String],
}

/// The `--json` report. Field names are a stable interface; add, do not rename.
#[derive(Serialize)]
struct JsonStudy<'a> {
    /// The penalty (0: maximum likelihood).
    lambda: f64,
    /// The estimator in words ("maximum likelihood", "penalised (lambda 1, intercept
    /// penalised)").
    estimator: String,
    family: &'static str,
    /// The label column, where known.
    label: Option<&'a str>,
    /// What the study revealed beyond the coefficients.
    reveal: &'static str,
    /// With two Nodes and `two_node_disclosure`: what each Node learns of the other.
    #[serde(skip_serializing_if = "Option::is_none")]
    two_nodes_learn: Option<String>,
    /// Standard errors, z, p-values, intervals (and the covariance when revealed and asked for).
    #[serde(flatten)]
    wald: Option<Wald>,
    /// Log-likelihood, deviances, AIC and BIC at the final coefficients.
    #[serde(flatten)]
    goodness: Option<Goodness>,
    /// Seconds of the inference round.
    inference_seconds: Option<f64>,
    /// Why the inference round gave no table (the model stands).
    #[serde(skip_serializing_if = "Option::is_none")]
    inference_error: Option<String>,
    /// The test against the nested model.
    #[serde(skip_serializing_if = "Option::is_none")]
    likelihood_ratio: Option<&'a crate::inference::LikelihoodRatio>,
    /// The final model on the Nodes' held-out rows.
    #[serde(flatten)]
    evaluation: Option<crate::evaluation::Evaluation>,
    /// Secure PLR: what the published model is private under.
    #[serde(skip_serializing_if = "Option::is_none")]
    differential_privacy: Option<JsonRelease>,
    /// A vertical study: who brought which columns, how many rows each held (N, `rows`, is
    /// the intersection's size), and the stopping tolerance used.
    #[serde(skip_serializing_if = "Option::is_none")]
    vertical: Option<JsonVertical<'a>>,
    protocol: String,
    optimizer: String,
    status: &'a str,
    converged: bool,
    iterations: usize,
    rounds: usize,
    /// Steps with a Newton system (Newton's method, or accelerated PrivLogit's finish).
    newton_steps: usize,
    rows: usize,
    names: &'a [String],
    coefficients: Vec<f64>,
    /// Pooled means and scales when standardised: with them the model applies to raw rows.
    standardization: Option<Standardization>,
    /// The same model in the data's own units (intercept and one weight per feature).
    raw_model: Option<Model>,
    setup_seconds: f64,
    seconds: f64,
    seconds_per_iteration: f64,
    and_gates: u64,
    bytes_from_each_node: &'a [u64],
    bytes_to_nodes: u64,
    bytes_aggregator_to_keyholder: u64,
    bytes_keyholder_to_aggregator: Option<u64>,
    gc_seconds: f64,
    waiting_for_nodes_seconds: f64,
    node_local_seconds: Option<Vec<f64>>,
    node_paillier_seconds: Option<Vec<f64>>,
    keyholder_paillier_seconds: Option<f64>,
    linear_algebra: String,
    masked_seconds: f64,
    masked_cross_term_seconds: f64,
    masked_waiting_for_keyholder_seconds: f64,
    masked_pivot_circuit_seconds: f64,
    masked_products: u64,
    masked_pivots: u64,
    keyholder_masked_paillier_seconds: Option<f64>,
    keyholder_masked_product_seconds: Option<f64>,
    keyholder_masked_decryptions: Option<u64>,
    keyholder_masked_encryptions: Option<u64>,
    /// Sequential round trips the aggregator waited for, by phase and link.
    round_trips: JsonRoundTrips,
}

fn pretty(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// The text result's line on a secure PLR study's budget.
fn privacy_line(r: &JsonRelease) -> String {
    format!(
        "privacy         epsilon {} per Node data set (secure PLR: lambda {}, eps' {:.6}, Delta \
         {:.3e}, noise b1 + b2 from the two servers)\n",
        r.epsilon, r.lambda, r.epsilon_prime, r.delta
    )
}

/// The text result's coefficients, one per line under a header; with `raw`, the same model in
/// the data's own units beside them (a standardised study).
pub fn coefficient_table(names: &[String], beta: &[f64], raw: Option<&Model>) -> String {
    let width = names.iter().map(String::len).max().unwrap_or(0).max(11);
    let mut s = match raw {
        Some(_) => format!(
            "\n{:<width$}  {:>14}  {:>14}\n",
            "name", "standardised", "raw units"
        ),
        None => format!("\n{:<width$}  coefficient\n", "name"),
    };
    let mut weights = raw.map(|m| m.weights.iter());
    for (n, b) in names.iter().zip(beta.iter()) {
        match (raw, weights.as_mut()) {
            (Some(m), Some(w)) => {
                let r = if n == INTERCEPT {
                    m.intercept
                } else {
                    w.next().copied().unwrap_or(f64::NAN)
                };
                let _ = writeln!(s, "{n:<width$}  {b:>14.8}  {r:>14.8}");
            }
            _ => {
                let _ = writeln!(s, "{n:<width$}  {b:>14.8}");
            }
        }
    }
    // Without a fitted intercept the raw-unit model still has one (the means' offset).
    if let Some(m) = raw.filter(|_| names.first().map(String::as_str) != Some(INTERCEPT)) {
        let _ = writeln!(
            s,
            "{:<width$}  {:>14}  {:>14.8}",
            "(offset)", "", m.intercept
        );
    }
    s
}

/// Bytes as a person reads them.
pub fn human_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// The round trips of a study, by phase, as JSON: `[key holder, most of a Node]` pairs.
#[derive(Debug, Serialize)]
struct JsonRoundTrips {
    setup: [u64; 2],
    per_round: Vec<[u64; 2]>,
    factors: Vec<[u64; 2]>,
    inference: [u64; 2],
    evaluation: [u64; 2],
    total: [u64; 2],
}

impl JsonRoundTrips {
    fn of(t: &RoundTrips) -> Self {
        let pair = |t: Trips| [t.keyholder, t.nodes];
        Self {
            setup: pair(t.setup),
            per_round: t.rounds.iter().copied().map(pair).collect(),
            factors: t.factors.iter().copied().map(pair).collect(),
            inference: pair(t.inference),
            evaluation: pair(t.evaluation),
            total: pair(t.total),
        }
    }
}

/// One line: the round trips with the key holder and with the Nodes, by phase.
fn round_trips_line(t: &RoundTrips) -> String {
    let most = t.most_per_round();
    let factors = if t.factors.is_empty() {
        String::new()
    } else {
        let each: Vec<String> = t.factors.iter().map(|f| f.keyholder.to_string()).collect();
        format!(", factors {}", each.join("/"))
    };
    format!(
        "{} with the key holder, {} with each Node (setup {}/{}, rounds at most {}/{}{factors}, \
         inference {}/{})",
        t.total.keyholder,
        t.total.nodes,
        t.setup.keyholder,
        t.setup.nodes,
        most.keyholder,
        most.nodes,
        t.inference.keyholder,
        t.inference.nodes,
    )
}
