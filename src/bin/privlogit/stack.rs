//! `privlogit stack`: cross-organization stacking (`privlogit::hybrid::stacking`), as one
//! command (`stack run`: every organization and both servers in this process, over loopback
//! TCP) or stage by stage at each organization (`stack publish`, `stack meta`, then a secure
//! PLR study over the meta rows with `keyholder`, `aggregator` and `node --dp-epsilon`).
//!
//! Seeds (reproducible runs only): `stack run --seed S` gives organization i (from 0, in
//! `--party` order) the seed `S + i` for its split and low-level noise, and both servers the
//! noise seed `S`; the same seeds given stage by stage give the same model.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ndarray::{Array1, Array2};
use privlogit::data::{self, LoadOptions};
use privlogit::dp::noise::Randomness;
use privlogit::hybrid::secure_plr;
use privlogit::hybrid::stacking::{self, Published};
use privlogit::output;
use privlogit::protocols::paillier::{KeyPair, KeySize};
use privlogit::protocols::secure::release::Release;
use serde_json::json;

use crate::Outcome;
use crate::log::say;

/// Arguments of `privlogit stack`.
#[derive(Debug, Args)]
pub struct StackArgs {
    #[command(subcommand)]
    command: StackCommand,
}

#[derive(Debug, Subcommand)]
enum StackCommand {
    /// Every organization and both servers in this process: low-level models, meta rows, and
    /// the high level by a secure PLR study over loopback TCP.
    Run(RunArgs),
    /// Stage 1 at one organization: split its rows, fit its DP low-level model on D^l and
    /// write it (to publish) and its D^h rows (to keep).
    Publish(PublishArgs),
    /// Stage 2 at one organization: the meta rows of its D^h from every published model, a
    /// data file for `node --dp-epsilon` (stage 3).
    Meta(MetaArgs),
}

/// The budget and penalties shared by `run` and `publish`.
#[derive(Debug, Args)]
struct Budget {
    /// Epsilon per organization's data set (spent once: D^l and D^h are disjoint).
    #[arg(long, value_name = "E")]
    epsilon: f64,
    /// PLR's lambda of the low-level models.
    #[arg(long, value_name = "L", default_value_t = 0.01)]
    lambda: f64,
    /// The low level: 1, a PLR over every feature; G > 1, PLR-FS over G random feature groups
    /// of equal importance (PST-F(U)'s low level), drawn from the organization's seed.
    #[arg(long, value_name = "G", default_value_t = 1)]
    groups: usize,
    /// With --groups G > 1: a public importance score per feature (comma-separated, as `dp fit
    /// --feature-scores`): features sorted by score into G groups, q_k by the stacking paper's
    /// eq. (6) (PST-F(W)'s low level). Without it the groups are random with q_k = 1/G.
    #[arg(
        long,
        value_name = "S,...",
        value_delimiter = ',',
        allow_negative_numbers = true
    )]
    feature_scores: Vec<f64>,
    /// The share of each organization's rows in D^l.
    #[arg(long, value_name = "F", default_value_t = crate::dp::DEFAULT_LOW_FRACTION)]
    low_fraction: f64,
    /// A privacy ledger: each organization's data file is charged epsilon once, before any
    /// noise is drawn (refused past the ledger's total).
    #[arg(long, value_name = "FILE")]
    ledger: Option<PathBuf>,
    /// Total epsilon each data set may spend (needed to create the ledger).
    #[arg(long, value_name = "TOTAL", requires = "ledger")]
    budget: Option<f64>,
}

impl Budget {
    /// The low level's grouping for `d` features, refused when the scores do not fit.
    fn grouping(&self, d: usize) -> Result<stacking::Grouping> {
        Ok(match (self.groups, self.feature_scores.as_slice()) {
            (0, _) => bail!("--groups must be at least 1"),
            (1, []) => stacking::Grouping::Single,
            (1, _) => bail!("--feature-scores needs --groups G > 1"),
            (g, []) => stacking::Grouping::Random(g),
            (g, scores) if scores.len() == d => stacking::Grouping::ByScore(g, scores.to_vec()),
            (_, scores) => bail!(
                "--feature-scores has {} values for {d} features",
                scores.len()
            ),
        })
    }

    fn charge(&self, files: &[PathBuf], label: &str) -> Result<()> {
        let Some(path) = &self.ledger else {
            return Ok(());
        };
        crate::dp::charge_files(path, self.budget, files, label, self.epsilon)
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The organizations' data files, one per organization (named by the file's stem).
    #[arg(long = "party", value_name = "FILE", num_args = 1.., required = true)]
    parties: Vec<PathBuf>,
    /// Name of the 0/1 label column.
    #[arg(long, value_name = "COLUMN")]
    label: String,
    #[command(flatten)]
    budget: Budget,
    /// PLR's lambda of the high-level model.
    #[arg(long, value_name = "L", default_value_t = crate::dp::DEFAULT_HIGH_LAMBDA)]
    high_lambda: f64,
    /// Reproducible runs only (see the module's seeds).
    #[arg(long, value_name = "SEED")]
    seed: Option<u64>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the result to FILE (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct PublishArgs {
    /// This organization's data file.
    #[arg(long, value_name = "FILE")]
    data: PathBuf,
    /// Name of the 0/1 label column.
    #[arg(long, value_name = "COLUMN")]
    label: String,
    /// This organization's name (default: the file's stem).
    #[arg(long, value_name = "NAME")]
    organization: Option<String>,
    #[command(flatten)]
    budget: Budget,
    /// Reproducible runs only: the split and the noise from SEED.
    #[arg(long, value_name = "SEED")]
    seed: Option<u64>,
    /// Where the low-level model goes (JSON, to publish).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Where this organization's D^h rows go (CSV, kept here for `stack meta`).
    #[arg(long, value_name = "FILE")]
    high_out: PathBuf,
}

#[derive(Debug, Args)]
struct MetaArgs {
    /// This organization's D^h rows, from `stack publish --high-out`.
    #[arg(long, value_name = "FILE")]
    high: PathBuf,
    /// Name of the 0/1 label column.
    #[arg(long, value_name = "COLUMN")]
    label: String,
    /// Every organization's published model, in the consortium's agreed order.
    #[arg(long = "model", value_name = "FILE", num_args = 1.., required = true)]
    models: Vec<PathBuf>,
    /// Where the meta rows go (CSV: one column per model, `one`, and the label).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// `privlogit stack`.
pub fn run(args: StackArgs) -> Result<Outcome> {
    match args.command {
        StackCommand::Run(a) => run_all(a),
        StackCommand::Publish(a) => publish(a),
        StackCommand::Meta(a) => meta(a),
    }
}

fn load(path: &Path, label: &str) -> Result<data::Dataset> {
    Ok(data::load(path, &LoadOptions::new(label))?.data)
}

fn organization_name(path: &Path) -> String {
    path.file_stem().map_or_else(
        || "organization".into(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// Stage 1 for one organization's data: its halves and published model.
fn stage_one(
    name: &str,
    data: &data::Dataset,
    budget: &Budget,
    seed: Option<u64>,
) -> Result<(stacking::Halves, Published)> {
    let mut rng = seed.map_or(Randomness::Os, Randomness::Seeded).rng();
    let halves = stacking::halves(data.x.view(), data.y.view(), budget.low_fraction, &mut rng)
        .with_context(|| format!("splitting {}", data.source))?;
    let model = stacking::publish(
        name,
        &data.names,
        &halves,
        budget.epsilon,
        budget.lambda,
        budget.grouping(data.names.len())?,
        &mut rng,
    )
    .with_context(|| format!("fitting {name}'s low-level model"))?;
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

fn publish(args: PublishArgs) -> Result<Outcome> {
    let data = load(&args.data, &args.label)?;
    let name = args
        .organization
        .clone()
        .unwrap_or_else(|| organization_name(&args.data));
    args.budget
        .charge(std::slice::from_ref(&args.data), &args.label)?;
    let (halves, model) = stage_one(&name, &data, &args.budget, args.seed)?;
    let (xh, yh) = &halves.high;
    output::write_text(&args.high_out, &csv_text(&data.names, &args.label, xh, yh))
        .with_context(|| format!("writing {}", args.high_out.display()))?;
    output::write_text(&args.out, &(serde_json::to_string_pretty(&model)? + "\n"))
        .with_context(|| format!("writing {}", args.out.display()))?;
    say!(
        "{name}: low-level PLR (epsilon {}) on {} rows written to {} (publish it); {} D^h rows \
         kept in {}",
        args.budget.epsilon,
        model.rows,
        args.out.display(),
        xh.nrows(),
        args.high_out.display()
    );
    Ok(Outcome::Success)
}

fn read_model(path: &Path) -> Result<Published> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a published model", path.display()))
}

fn meta(args: MetaArgs) -> Result<Outcome> {
    let high = load(&args.high, &args.label)?;
    let models = args
        .models
        .iter()
        .map(|p| read_model(p))
        .collect::<Result<Vec<_>>>()?;
    for (m, path) in models.iter().zip(&args.models) {
        m.check(&high.names)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    let rows = stacking::meta_features(&models, high.x.view());
    let names = stacking::meta_names(&models);
    output::write_text(&args.out, &csv_text(&names, &args.label, &rows, &high.y))
        .with_context(|| format!("writing {}", args.out.display()))?;
    say!(
        "meta rows of {} D^h rows from {} models written to {}",
        rows.nrows(),
        models.len(),
        args.out.display()
    );
    Ok(Outcome::Success)
}

fn run_all(args: RunArgs) -> Result<Outcome> {
    if args.parties.len() < 2 {
        bail!("stacking across organizations needs at least two --party files");
    }
    let datasets = args
        .parties
        .iter()
        .map(|p| load(p, &args.label))
        .collect::<Result<Vec<_>>>()?;
    let release = Release {
        epsilon: args.budget.epsilon,
        lambda: args.high_lambda,
    };
    release.validate()?;
    args.budget.charge(&args.parties, &args.label)?;
    let mut low = Vec::new();
    for (i, (path, data)) in args.parties.iter().zip(&datasets).enumerate() {
        let name = organization_name(path);
        let seed = args.seed.map(|s| s.wrapping_add(i as u64));
        low.push((name.clone(), stage_one(&name, data, &args.budget, seed)?));
        say!("{name}: low-level model published");
    }
    let models: Vec<Published> = low.iter().map(|(_, (_, m))| m.clone()).collect();
    let parts = low
        .iter()
        .map(|(_, (h, _))| {
            (
                stacking::meta_features(&models, h.high.0.view()),
                h.high.1.clone(),
            )
        })
        .collect();
    let names = stacking::meta_names(&models);
    say!(
        "high level: secure PLR study over {} organizations' meta rows ...",
        models.len()
    );
    let key = KeyPair::generate(KeySize::Bits2048, &mut rand::rng());
    let outcome =
        secure_plr::study_in_process(&names, parts, release, &key.secret, args.seed, true)?;
    let budget = secure_plr::budget(&release, outcome.rows)?;
    let rendered = if args.json {
        serde_json::to_string_pretty(&json!({
            "epsilon_per_organization": args.budget.epsilon,
            "low_models": models,
            "high": {
                "names": outcome.names,
                "coefficients": outcome.fit.beta.to_vec(),
                "iterations": outcome.fit.iterations,
                "status": outcome.fit.status.name(),
                "rows": outcome.rows,
                "lambda": args.high_lambda,
                "epsilon_prime": budget.epsilon_prime,
                "delta": budget.delta,
            },
        }))? + "\n"
    } else {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "cross-organization stacking, epsilon {} per organization (spent once: D^l and D^h \
             are disjoint)",
            args.budget.epsilon
        );
        for m in &models {
            let low = match m.groups.len() {
                1 => "PLR".to_string(),
                g => format!("PLR-FS over {g} feature groups"),
            };
            let _ = writeln!(s, "low  {:<24} {low} on {} rows", m.organization, m.rows);
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
        s
    };
    match &args.out {
        Some(path) => output::write_text(path, &rendered)
            .with_context(|| format!("writing {}", path.display()))?,
        None => print!("{rendered}"),
    }
    Ok(Outcome::Success)
}
