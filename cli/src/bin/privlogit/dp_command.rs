//! `privlogit dp`: a differentially private fit on files (the library's `jobs::dp_fit`), the
//! papers' experiments (`privlogit_cli::experiments`) and the privacy accountant
//! (`privlogit_cli::account`).

use std::path::PathBuf;

use anyhow::Result;
use clap::builder::PossibleValue;
use clap::{Args, Subcommand, ValueEnum};
use privlogit::dp::release::Method;
use privlogit::jobs::dp_fit::{CombinerChoice, FileJob, Request};

use crate::Outcome;
use crate::log::line;

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
    /// DPHTL: DPIW's penalty lambda_IW (Algorithm 5) [default: 0.001].
    #[arg(long)]
    lambda_iw: Option<f64>,
    /// DPHTL: the floor of the prior's standard deviations (eq. 4.2) [default: 0.1].
    #[arg(long)]
    prior_sd_floor: Option<f64>,
    /// Privacy budget epsilon spent on --data.
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    epsilon: f64,
    /// Budget spent on --source (default: --epsilon).
    #[arg(long, value_name = "E", allow_negative_numbers = true)]
    source_epsilon: Option<f64>,
    /// Penalty lambda of eq. (1) (low level, target).
    #[arg(long, default_value_t = privlogit::dp::release::DEFAULT_LAMBDA, allow_negative_numbers = true)]
    lambda: f64,
    /// Penalty of the source models (default: --lambda).
    #[arg(long, allow_negative_numbers = true)]
    source_lambda: Option<f64>,
    /// Penalty of the high-level (level-1) model [default: 0.01].
    #[arg(long, allow_negative_numbers = true)]
    high_lambda: Option<f64>,
    /// eta of the transfer regulariser eta/2 ||w||^2 + (1 - eta)/2 ||w - w_src||^2 (simcomb,
    /// pptl-fs; pst-h fixes it at 0) [default: 0.5].
    #[arg(long, allow_negative_numbers = true)]
    eta: Option<f64>,
    /// Number of groups K (feature groups or sample subsets) [default: 5].
    #[arg(long)]
    k: Option<usize>,
    /// Importance q_k of each group of consecutive columns (comma-separated, sums to 1).
    #[arg(
        long,
        value_name = "Q,...",
        value_delimiter = ',',
        conflicts_with = "feature_scores",
        allow_negative_numbers = true
    )]
    group_importance: Vec<f64>,
    /// A public importance score per feature (comma-separated): features sorted by score into
    /// K groups, q_k by eq. (6). Without this or --group-importance the split is random, q = 1/K.
    #[arg(
        long,
        value_name = "S,...",
        value_delimiter = ',',
        allow_negative_numbers = true
    )]
    feature_scores: Vec<f64>,
    /// How the low level is combined (pst-s, pst-f; pst-h and pptl-fs always stack)
    /// [default: stacking].
    #[arg(long, value_enum)]
    combiner: Option<CombinerArg>,
    /// Share of rows used by the low level (the rest trains the combiner) [default: 0.5].
    #[arg(long, allow_negative_numbers = true)]
    low_fraction: Option<f64>,
    /// Scale rows by this public norm bound (clipping longer rows) instead of normalising each.
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    row_bound: Option<f64>,
    /// PLR's eps' and Delta exactly as Algorithm 1 prints them (switch at eps' = 0, with the
    /// cliff the book's Limitations describe) instead of the least Delta that keeps
    /// eps' >= 0.9 eps.
    #[arg(long)]
    plr_as_printed: bool,
    /// Seeded noise, for reproducible experiments only (the output says so).
    #[arg(long, value_name = "SEED")]
    seed: Option<u64>,
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

/// A combiner as a command-line value.
#[derive(Debug, Clone, Copy)]
struct CombinerArg(CombinerChoice);

static COMBINERS: [CombinerArg; 3] = [
    CombinerArg(CombinerChoice::ALL[0]),
    CombinerArg(CombinerChoice::ALL[1]),
    CombinerArg(CombinerChoice::ALL[2]),
];

impl ValueEnum for CombinerArg {
    fn value_variants<'a>() -> &'a [Self] {
        &COMBINERS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()).help(self.0.summary()))
    }
}

impl FitArgs {
    fn job(self) -> FileJob {
        let request = Request {
            source_epsilon: self.source_epsilon,
            lambda: Some(self.lambda),
            source_lambda: self.source_lambda,
            high_lambda: self.high_lambda,
            eta: self.eta,
            k: self.k,
            group_importance: self.group_importance,
            feature_scores: self.feature_scores,
            combiner: self.combiner.map(|c| c.0),
            low_fraction: self.low_fraction,
            row_bound: self.row_bound,
            plr_as_printed: self.plr_as_printed,
            lambda_iw: self.lambda_iw,
            prior_sd_floor: self.prior_sd_floor,
            seed: self.seed,
            ..Request::new(self.method.0, self.epsilon)
        };
        FileJob {
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
        }
    }
}

/// Runs `privlogit dp`.
pub fn run(args: DpArgs) -> Result<Outcome> {
    match args.command {
        DpCommand::Fit(a) => a.job().run(&|m: &str| line(m))?,
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
