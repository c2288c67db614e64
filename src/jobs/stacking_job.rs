//! Cross-organization stacking as the command line and Python run it: every organization and
//! both servers in this process ([`run`]), or stage by stage at each organization ([`publish`],
//! [`meta`], then a secure PLR study over the meta rows).
//!
//! Seeds (reproducible runs only): [`run`] with seed `S` gives organization i (from 0, in the
//! files' order) the seed `S + i` for its split and low-level noise, and both servers the noise
//! seed `S`; the same seeds given stage by stage give the same model.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2};
use privlogit_protocols::paillier::{KeyPair, KeySize};
use privlogit_protocols::secure::perturbation::Release;
use serde_json::json;

use crate::charge;
use crate::data::{self, LoadOptions};
use crate::dp::ledger::Guarantee;
use crate::dp::noise::Randomness;
use crate::error::{Error, PlanError, SettingProblem};
use crate::hybrid::secure_plr;
use crate::hybrid::stacking_pipeline::{self, Published};
use crate::output;
use crate::progress::Say;

/// The budget and low-level settings every organization shares.
#[derive(Debug, Clone, PartialEq)]
pub struct LowLevel {
    /// Epsilon per organization's data set (spent once: D^l and D^h are disjoint).
    pub epsilon: f64,
    /// PLR's lambda of the low-level models.
    pub lambda: f64,
    /// 1: a PLR over every feature; G > 1: PLR-FS over G feature groups.
    pub groups: usize,
    /// With G > 1: a public importance score per feature (else random groups, q_k = 1/G).
    pub feature_scores: Vec<f64>,
    /// The share of each organization's rows in D^l.
    pub low_fraction: f64,
    /// A privacy ledger and its total: each organization's data file is charged epsilon once,
    /// before any noise is drawn.
    pub ledger: Option<(PathBuf, Option<f64>)>,
}

impl LowLevel {
    /// The low level's grouping for `d` features, refused when the scores do not fit.
    fn grouping(&self, d: usize) -> Result<stacking_pipeline::Grouping, Error> {
        Ok(match (self.groups, self.feature_scores.as_slice()) {
            (0, _) => {
                return Err(Error::bad(
                    "groups",
                    SettingProblem::BelowLeast {
                        value: 0.0,
                        least: 1.0,
                        note: "",
                    },
                ));
            }
            (1, []) => stacking_pipeline::Grouping::Single,
            (1, _) => {
                return Err(Error::refused(
                    "setting `feature_scores` needs setting `groups` G > 1",
                ));
            }
            (g, []) => stacking_pipeline::Grouping::Random(g),
            (g, scores) if scores.len() == d => {
                stacking_pipeline::Grouping::ByScore(g, scores.to_vec())
            }
            (_, scores) => {
                return Err(PlanError::Values {
                    setting: "feature_scores",
                    given: scores.len(),
                    expected: d,
                    of: "features",
                }
                .into());
            }
        })
    }

    fn charge(&self, files: &[PathBuf], label: &str, say: Say<'_>) -> Result<(), Error> {
        match &self.ledger {
            Some((path, budget)) => charge::files(
                path,
                *budget,
                files,
                label,
                Guarantee::pure(self.epsilon),
                say,
            ),
            None => Ok(()),
        }
    }
}

/// Refuses one file named for two organizations (compared by canonical path, so `./a.csv` is
/// `a.csv`): its rows would be counted twice and its column named twice in the meta rows.
fn distinct(files: &[PathBuf]) -> Result<(), Error> {
    match data::repeated_file(files) {
        Some(path) => Err(Error::bad(
            "party",
            SettingProblem::Twice {
                value: path.display().to_string(),
                why: " (each file is one organization's rows: twice would count them twice)",
            },
        )),
        None => Ok(()),
    }
}

/// Where writing `path` lands, for comparing two outputs before either exists: its directory's
/// canonical path and its name (the path itself when the directory cannot be resolved).
fn where_written(path: &Path) -> PathBuf {
    let directory = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(directory), path.file_name()) {
        (Ok(d), Some(name)) => d.join(name),
        _ => path.to_path_buf(),
    }
}

fn load(path: &Path, label: &str) -> Result<data::Dataset, Error> {
    Ok(data::load(path, &LoadOptions::new(label))?.data)
}

/// An organization's name from its file (the stem).
pub fn organization_name(path: &Path) -> String {
    path.file_stem().map_or_else(
        || "organization".into(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// Stage 1 for one organization's data: its halves and published model.
fn stage_one(
    name: &str,
    data: &data::Dataset,
    low: &LowLevel,
    seed: Option<u64>,
) -> Result<(stacking_pipeline::Halves, Published), Error> {
    let mut rng = seed.map_or(Randomness::Os, Randomness::Seeded).rng();
    let halves =
        stacking_pipeline::halves(data.x.view(), data.y.view(), low.low_fraction, &mut rng)
            .map_err(|source| PlanError::Step {
                step: "splitting",
                name: data.source.clone(),
                what: "",
                source,
            })?;
    let model = stacking_pipeline::publish(
        name,
        &data.names,
        &halves,
        low.epsilon,
        low.lambda,
        low.grouping(data.names.len())?,
        &mut rng,
    )
    .map_err(|source| PlanError::Step {
        step: "fitting",
        name: name.to_string(),
        what: "'s low-level model",
        source,
    })?;
    Ok((halves, model))
}

/// CSV text of `x` with `names` and a `label` column: values printed so that they read back
/// to the same bits.
fn csv_text(names: &[String], label: &str, x: &Array2<f64>, y: &Array1<f64>) -> String {
    let mut s = names.join(",");
    let _ = writeln!(s, ",{label}");
    for (row, t) in x.outer_iter().zip(y) {
        for v in row {
            let _ = write!(s, "{v},");
        }
        let _ = writeln!(s, "{t}");
    }
    s
}

/// Where stage 1 writes: the DP model to publish and the D^h rows the organization keeps.
pub struct StageOneFiles<'a> {
    /// The low-level DP model (JSON), to publish.
    pub model: &'a Path,
    /// The D^h rows (CSV), kept for the meta-level stage.
    pub high_rows: &'a Path,
}

/// Stage 1 at one organization: splits its rows, fits its DP low-level model on D^l and writes
/// it to `files.model` (to publish) and its D^h rows to `files.high_rows` (to keep).
pub fn publish(
    data_file: &Path,
    label: &str,
    organization: Option<&str>,
    low: &LowLevel,
    seed: Option<u64>,
    files: &StageOneFiles<'_>,
    say: Say<'_>,
) -> Result<(), Error> {
    let (out, high_out) = (files.model, files.high_rows);
    // Both outputs checked before the ledger is charged: a run that cannot write its result
    // spends nothing (as `dp fit`).
    if where_written(out) == where_written(high_out) {
        return Err(Error::bad(
            "high_out",
            SettingProblem::Twice {
                value: out.display().to_string(),
                why: " (the model to publish and the D^h rows to keep need two files)",
            },
        ));
    }
    for path in [out, high_out] {
        output::check_writable(path).map_err(|e| Error::write(path, e))?;
    }
    let data = load(data_file, label)?;
    let name = organization.map_or_else(|| organization_name(data_file), str::to_string);
    low.charge(&[data_file.to_path_buf()], label, say)?;
    let (halves, model) = stage_one(&name, &data, low, seed)?;
    let (xh, yh) = &halves.high;
    output::write_text(high_out, &csv_text(&data.names, label, xh, yh))
        .map_err(|e| Error::write(high_out, e))?;
    let text = serde_json::to_string_pretty(&model).map_err(|source| PlanError::Render {
        what: "model",
        source,
    })?;
    output::write_text(out, &(text + "\n")).map_err(|e| Error::write(out, e))?;
    say(&format!(
        "{name}: low-level PLR (epsilon {}) on {} rows written to {} (publish it); {} D^h rows \
         kept in {}",
        low.epsilon,
        model.rows,
        out.display(),
        xh.nrows(),
        high_out.display()
    ));
    Ok(())
}

/// A published low-level model.
pub fn read_model(path: &Path) -> Result<Published, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
    serde_json::from_str(&text).map_err(|source| {
        PlanError::NotJson {
            path: path.to_path_buf(),
            what: "a published model",
            source,
        }
        .into()
    })
}

/// Stage 2 at one organization: the meta rows of its D^h (`high`) from every published model,
/// written to `out`, a data file for a secure PLR study's Node (stage 3).
pub fn meta(
    high: &Path,
    label: &str,
    models: &[PathBuf],
    out: &Path,
    say: Say<'_>,
) -> Result<(), Error> {
    let high = load(high, label)?;
    let published = models
        .iter()
        .map(|p| read_model(p))
        .collect::<Result<Vec<_>, _>>()?;
    for (m, path) in published.iter().zip(models) {
        m.check(&high.names).map_err(|why| PlanError::Model {
            path: path.clone(),
            what: "",
            why,
        })?;
    }
    let rows = stacking_pipeline::meta_features(&published, high.x.view());
    let names = stacking_pipeline::meta_names(&published);
    output::write_text(out, &csv_text(&names, label, &rows, &high.y))
        .map_err(|e| Error::write(out, e))?;
    say(&format!(
        "meta rows of {} D^h rows from {} models written to {}",
        rows.nrows(),
        published.len(),
        out.display()
    ));
    Ok(())
}

/// Every organization and both servers in this process: the low-level models, the meta rows,
/// and the high level by a secure PLR study (lambda `high_lambda`). Returns the report as text
/// or JSON.
pub fn run(
    parties: &[PathBuf],
    label: &str,
    low: &LowLevel,
    high_lambda: f64,
    seed: Option<u64>,
    json: bool,
    say: Say<'_>,
) -> Result<String, Error> {
    if parties.len() < 2 {
        return Err(PlanError::TooFew {
            what: "stacking across organizations",
            least: 2,
            of: "setting `party` files",
        }
        .into());
    }
    distinct(parties)?;
    let datasets = parties
        .iter()
        .map(|p| load(p, label))
        .collect::<Result<Vec<_>, _>>()?;
    // Every organization's low model reads every other's D^h rows: their columns must agree.
    let named: Vec<(&str, &[String])> = datasets
        .iter()
        .map(|d| (d.source.as_str(), d.names.as_slice()))
        .collect();
    data::partition::check_names(&named)?;
    let release = Release {
        epsilon: low.epsilon,
        lambda: high_lambda,
    };
    release.validate()?;
    low.charge(parties, label, say)?;
    let mut lows = Vec::new();
    for (i, (path, data)) in parties.iter().zip(&datasets).enumerate() {
        let name = organization_name(path);
        let seed = seed.map(|s| s.wrapping_add(i as u64));
        lows.push((name.clone(), stage_one(&name, data, low, seed)?));
        say(&format!("{name}: low-level model published"));
    }
    let models: Vec<Published> = lows.iter().map(|(_, (_, m))| m.clone()).collect();
    let parts = lows
        .iter()
        .map(|(_, (h, _))| {
            (
                stacking_pipeline::meta_features(&models, h.high.0.view()),
                h.high.1.clone(),
            )
        })
        .collect();
    let names = stacking_pipeline::meta_names(&models);
    say(&format!(
        "high level: secure PLR study over {} organizations' meta rows ...",
        models.len()
    ));
    let key = KeyPair::generate(KeySize::Bits2048, &mut rand::rng());
    let outcome = secure_plr::study_in_process(&names, parts, release, &key.secret, seed, true)?;
    let budget = secure_plr::budget(&release, outcome.rows)?;
    if json {
        let v = json!({
            "epsilon_per_organization": low.epsilon,
            "low_models": models,
            "high": {
                "names": outcome.names,
                "coefficients": outcome.fit.beta.to_vec(),
                "iterations": outcome.fit.iterations,
                "status": outcome.fit.status.name(),
                "rows": outcome.rows,
                "lambda": high_lambda,
                "epsilon_prime": budget.epsilon_prime,
                "delta": budget.delta,
            },
        });
        return Ok(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n");
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "cross-organization stacking, epsilon {} per organization (spent once: D^l and D^h are \
         disjoint)",
        low.epsilon
    );
    for m in &models {
        let level = match m.groups.len() {
            1 => "PLR".to_string(),
            g => format!("PLR-FS over {g} feature groups"),
        };
        let _ = writeln!(s, "low  {:<24} {level} on {} rows", m.organization, m.rows);
    }
    let _ = writeln!(
        s,
        "high secure PLR over {} rows, {} iterations ({}):",
        outcome.rows,
        outcome.fit.iterations,
        outcome.fit.status.name()
    );
    for (n, b) in outcome.names.iter().zip(&outcome.fit.beta) {
        let _ = writeln!(s, "  {n:<24} {b:>12.6}");
    }
    Ok(s)
}
