//! `privlogit dp`: a differentially private fit on files (the library's `jobs::dp_fit`), the
//! papers' experiments (`privlogit_cli::experiments`) and the privacy accountant
//! (`privlogit_cli::account`).

use std::path::PathBuf;

use anyhow::Result;
use clap::builder::PossibleValue;
use clap::{Args, Subcommand, ValueEnum};
use privlogit::dp::release::Method;
use privlogit::jobs::dp_fit::{FileJob, Request};

use crate::log::line;
use crate::outcome::Outcome;

/// `privlogit dp ...`.
#[derive(Debug, Args)]
pub struct DpArgs {
    #[command(subcommand)]
    command: DpCommand,
}

#[derive(Debug, Subcommand)]
enum DpCommand {
    /// Fit a differentially private model on a data file.
    Fit(Box<FitArgs>),
    /// Reproduce the papers' MNIST experiments (CSV of test AUCs and an SVG and PNG figure).
    Experiment(privlogit_cli::experiments::ExperimentArgs),
    /// Redraw an experiment's figure from its summary CSV (`results/dp/<experiment>.csv`).
    Replot(privlogit_cli::experiments::ReplotArgs),
    /// Privacy accounting: composition, amplification by sampling, RDP and zCDP, Table 3.1.
    Account(privlogit_cli::account::AccountArgs),
}

/// Arguments of `privlogit dp fit` (defaults: the library's, `privlogit::dp::release`).
#[derive(Debug, Args)]
pub struct FitArgs {
    /// The method.
    #[arg(long, value_enum)]
    method: MethodArg,
    /// The (target) data: a file with a 0/1 label column.
    #[arg(long, value_name = "FILE")]
    data: PathBuf,
    /// Name of the 0/1 label column (in --data and --source).
    #[arg(long, value_name = "COLUMN")]
    label: String,
    /// Leave this column out; repeat for several.
    #[arg(long = "exclude", value_name = "COLUMN")]
    exclude: Vec<String>,
    /// The source data of a transfer method (same columns as --data); DPHTL takes several.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    source: Vec<PathBuf>,
    /// DPHTL: the public data set (same columns; its labels are not used).
    #[arg(long, value_name = "FILE")]
    public: Option<PathBuf>,
    /// DPHTL: the target's unlabelled rows (same columns; labels not used) [default: --data's].
    #[arg(long, value_name = "FILE")]
    target_unlabelled: Option<PathBuf>,
    /// Privacy budget epsilon spent on --data.
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    epsilon: f64,
    /// The method's options (the library's registry of DP options).
    #[command(flatten)]
    options: crate::settings_args::DpOptions,
    /// A privacy ledger (JSON): the fit is refused if it would take a data set past the
    /// ledger's total, and is charged to it once the result is written.
    #[arg(long, value_name = "FILE")]
    ledger: Option<PathBuf>,
    /// Total epsilon each data set may spend, across every fit recorded in --ledger. Needed
    /// to create a ledger; stored in it, and a different total is refused afterwards.
    #[arg(long, value_name = "TOTAL", requires = "ledger")]
    budget: Option<f64>,
    /// Report the AUC and accuracy on this labelled file (same columns; not a training file).
    /// These figures are exact, not private, and not charged: they are for the analyst, not
    /// for release with the model.
    #[arg(long, value_name = "FILE")]
    test: Option<PathBuf>,
    /// Write the JSON result here (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// A DP method as a command-line value: the library's names and summaries.
#[derive(Debug, Clone, Copy)]
struct MethodArg(Method);

static METHODS: [MethodArg; Method::ALL.len()] = {
    let mut all = [MethodArg(Method::Plr); Method::ALL.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = MethodArg(Method::ALL[i]);
        i += 1;
    }
    all
};

impl ValueEnum for MethodArg {
    fn value_variants<'a>() -> &'a [Self] {
        &METHODS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()).help(self.0.summary()))
    }
}

impl FitArgs {
    fn job(self) -> Result<FileJob, privlogit::error::Error> {
        let mut request = Request::new(self.method.0, self.epsilon);
        for (name, value) in &self.options.0.settings {
            request.set(name, value)?;
        }
        Ok(FileJob {
            request,
            data: self.data,
            label: self.label,
            exclude: self.exclude,
            source: self.source,
            public: self.public,
            target_unlabelled: self.target_unlabelled,
            test: self.test,
            ledger: self.ledger.map(|l| (l, self.budget)),
            out: self.out,
        })
    }
}

/// Runs `privlogit dp`.
pub fn run(args: DpArgs) -> Result<Outcome> {
    match args.command {
        DpCommand::Fit(a) => a
            .job()?
            .run(&|m: &str| line(m), &mut std::io::stdout().lock())?,
        DpCommand::Experiment(a) => privlogit_cli::experiments::run(a)?,
        DpCommand::Replot(a) => privlogit_cli::experiments::replot(a)?,
        DpCommand::Account(a) => {
            let text = privlogit_cli::account::run(&a)?;
            // A closed pipe (`| head`) is not an error.
            match std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
                _ => {}
            }
        }
    }
    Ok(Outcome::Success)
}
