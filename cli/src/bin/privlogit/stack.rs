//! `privlogit stack`: cross-organization stacking (`privlogit::jobs::stacking_job`), as one command
//! (`stack run`) or stage by stage at each organization (`stack publish`, `stack meta`, then a
//! secure PLR study over the meta rows with `keyholder`, `aggregator` and `node --dp-epsilon`).
//! A stage's `--study FILE` reads the study file's `[stack]` table (and the top-level keys the
//! stage takes, such as `label`) as flags placed before the command line's.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use privlogit::jobs::stacking_job::{self as stages, LowLevel};
use privlogit::study::StudyFile;

use crate::log::line;
use crate::outcome::Outcome;

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
    #[arg(long, value_name = "L", default_value_t = privlogit::dp::release::DEFAULT_LAMBDA)]
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
    #[arg(long, value_name = "F", default_value_t = privlogit::dp::release::DEFAULT_LOW_FRACTION)]
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
    fn low_level(&self) -> LowLevel {
        LowLevel {
            epsilon: self.epsilon,
            lambda: self.lambda,
            groups: self.groups,
            feature_scores: self.feature_scores.clone(),
            low_fraction: self.low_fraction,
            ledger: self.ledger.clone().map(|l| (l, self.budget)),
        }
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
    #[arg(long, value_name = "L", default_value_t = privlogit::dp::release::DEFAULT_HIGH_LAMBDA)]
    high_lambda: f64,
    /// Reproducible runs only: organization i's split and noise from SEED + i, both servers'
    /// noise from SEED.
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
    let say = |m: &str| line(m);
    match args.command {
        StackCommand::Run(a) => {
            // Before the ledger is charged: a run that cannot write its result spends nothing.
            if let Some(out) = &a.out {
                privlogit::output::check_writable(out)
                    .map_err(|e| privlogit::error::Error::write(out, e))?;
            }
            let low = a.budget.low_level();
            let text = stages::run(
                &a.parties,
                &a.label,
                &low,
                a.high_lambda,
                a.seed,
                a.json,
                &say,
            )?;
            crate::study_commands::write_out(a.out.as_deref(), &text)?;
        }
        StackCommand::Publish(a) => stages::publish(
            &a.data,
            &a.label,
            a.organization.as_deref(),
            &a.budget.low_level(),
            a.seed,
            &stages::StageOneFiles {
                model: &a.out,
                high_rows: &a.high_out,
            },
            &say,
        )?,
        StackCommand::Meta(a) => stages::meta(&a.high, &a.label, &a.models, &a.out, &say)?,
    }
    Ok(Outcome::Success)
}

/// The stacking stages that read `--study FILE`.
const STAGES: [&str; 3] = ["publish", "meta", "run"];

/// `privlogit stack STAGE --study FILE ...` with the file's settings for the stage placed
/// before the command line's flags (which override them); other command lines unchanged.
/// `cli` builds the whole command line's definition, whose stages say which flags they take.
pub fn expand_study_file(args: Vec<OsString>, cli: fn() -> clap::Command) -> Result<Vec<OsString>> {
    let Some(stack) = args.iter().position(|a| a == "stack") else {
        return Ok(args);
    };
    let stage = stack + 1;
    let Some(name) = args
        .get(stage)
        .map(|a| a.to_string_lossy().into_owned())
        .filter(|a| STAGES.contains(&a.as_str()))
    else {
        return Ok(args);
    };
    let Some(at) = args.iter().position(|a| a == "--study") else {
        return Ok(args);
    };
    let Some(path) = args.get(at + 1) else {
        bail!("--study needs a file: --study FILE");
    };
    let file = StudyFile::read(std::path::Path::new(path))?;
    let command = cli();
    let stack_command = command
        .find_subcommand("stack")
        .expect("stack is a command");
    let accepts = |stage: &str, flag: &str| {
        stack_command
            .find_subcommand(stage)
            .is_some_and(|c| c.get_arguments().any(|a| a.get_long() == Some(flag)))
    };
    let shown = file.path.display().to_string();
    let mut flags = Vec::new();
    for (key, value) in file.settings() {
        if accepts(&name, &key.replace('_', "-")) {
            flags.extend(as_flags(&shown, key, value)?);
        }
    }
    if let Some(table) = file.stack()? {
        for (key, value) in table {
            let long = key.replace('_', "-");
            if accepts(&name, &long) {
                flags.extend(as_flags(&shown, key, value)?);
            } else if !STAGES.iter().any(|s| accepts(s, &long)) {
                bail!("{shown}: [stack] {key} is not a setting of any stacking stage");
            }
        }
    }
    let mut out: Vec<OsString> = args[..=stage].to_vec();
    out.extend(flags);
    out.extend(
        args.iter()
            .enumerate()
            .skip(stage + 1)
            .filter(|&(i, _)| i != at && i != at + 1)
            .map(|(_, a)| a.clone()),
    );
    Ok(out)
}

/// One key's value as command-line flags (`true`: the flag; arrays: the flag per item).
fn as_flags(file: &str, key: &str, value: &toml::Value) -> Result<Vec<OsString>> {
    let flag = format!("--{}", key.replace('_', "-"));
    let scalar = |v: &toml::Value| -> Result<String> {
        Ok(match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            other => bail!(
                "{file}: {key} is a {}, expected a string or a number",
                other.type_str()
            ),
        })
    };
    let mut flags: Vec<OsString> = Vec::new();
    match value {
        toml::Value::Boolean(true) => flags.push(flag.into()),
        toml::Value::Boolean(false) => {}
        toml::Value::Array(items) => {
            for item in items {
                flags.push(flag.clone().into());
                flags.push(scalar(item)?.into());
            }
        }
        v => {
            flags.push(flag.into());
            flags.push(scalar(v)?.into());
        }
    }
    Ok(flags)
}
