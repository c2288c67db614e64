//! `privlogit dp fit` and `privlogit dp experiment`: differentially private models on CSV data,
//! and the papers' MNIST experiments.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use privlogit::data::{self, Dataset, LoadOptions};
use privlogit::dp::experiment::{self, ExperimentSettings, Results, Selection, epsilon_label};
use privlogit::dp::ledger::{self, Charge, Ledger};
use privlogit::dp::mnist::Digits;
use privlogit::dp::noise::Randomness;
use privlogit::dp::plr::Privacy;
use privlogit::dp::release::{self, MethodSettings, SplitChoice};
use privlogit::dp::scaling::RowScaling;
use privlogit::dp::stacking::Combiner;
use privlogit::dp::transfer::Labelled;
use privlogit::figures::{Chart, Corner, Mark, Series};
use privlogit::{metrics, output};
use serde_json::{Value, json};

use crate::Outcome;

/// `privlogit dp ...`.
#[derive(Debug, Args)]
pub struct DpArgs {
    #[command(subcommand)]
    command: DpCommand,
}

#[derive(Debug, Subcommand)]
enum DpCommand {
    /// Fit a differentially private model on a CSV file.
    Fit(Box<FitArgs>),
    /// Reproduce the papers' MNIST experiments (CSV of test AUCs and an SVG and PNG figure).
    Experiment(ExperimentArgs),
    /// Redraw an experiment's figure from its summary CSV (`results/dp/<experiment>.csv`).
    Replot(ReplotArgs),
    /// Privacy accounting: composition, amplification by sampling, RDP and zCDP, Table 3.1.
    Account(crate::dp_account::AccountArgs),
}

/// Arguments of `privlogit dp replot`.
#[derive(Debug, Args)]
struct ReplotArgs {
    /// The summary CSV an experiment wrote; the figure goes beside it (same name, .svg and .png).
    #[arg(long, value_name = "FILE")]
    summary: PathBuf,
}

/// The private methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Method {
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
    /// Stacking with hypothesis transfer (stacking Algorithm 4); needs --source.
    PstH,
    /// Transfer with feature splitting and stacking (transfer Algorithm 4); needs --source.
    PptlFs,
    /// DP hypothesis transfer from several sources with importance weights (dissertation
    /// Algorithm 4); needs --source FILE... and --public.
    Dphtl,
    /// PLR on the source, then PLR on the target near it (transfer Algorithm 2); needs --source.
    Simcomb,
}

impl Method {
    /// The library's method (DPHTL has its own path: several sources and a public set).
    fn release(self) -> Option<release::Method> {
        Some(match self {
            Method::Plr => release::Method::Plr,
            Method::Output => release::Method::Output,
            Method::PstS => release::Method::PstS,
            Method::PstF => release::Method::PstF,
            Method::PlrFs => release::Method::PlrFs,
            Method::PstH => release::Method::PstH,
            Method::PptlFs => release::Method::PptlFs,
            Method::Simcomb => release::Method::Simcomb,
            Method::Dphtl => return None,
        })
    }

    fn splits_features(self) -> bool {
        self.release().is_some_and(release::Method::splits_features)
    }

    fn is_transfer(self) -> bool {
        self.release().is_some_and(release::Method::is_transfer)
    }
}

/// How the low-level predictions are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CombinerArg {
    /// A PLR on the held-out rows' meta features (spends the budget on those rows).
    Stacking,
    /// Share of low-level models predicting 1.
    MajorityVote,
    /// Importance-weighted share of low-level models predicting 1.
    WeightedVote,
}

/// Arguments of `privlogit dp fit`.
#[derive(Debug, Args)]
pub struct FitArgs {
    /// The method.
    #[arg(long)]
    method: Method,
    /// The (target) data: a CSV with a 0/1 label column.
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
    /// DPHTL: DPIW's penalty lambda_IW (Algorithm 5).
    #[arg(long, default_value_t = 0.001)]
    lambda_iw: f64,
    /// DPHTL: the floor of the prior's standard deviations (eq. 4.2).
    #[arg(long, default_value_t = 0.1)]
    prior_sd_floor: f64,
    /// Privacy budget epsilon spent on --data.
    #[arg(long, value_name = "E")]
    epsilon: f64,
    /// Budget spent on --source (default: --epsilon).
    #[arg(long, value_name = "E")]
    source_epsilon: Option<f64>,
    /// Penalty lambda of eq. (1) (low level, target).
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
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
    /// cliff README Limitations describes) instead of the least Delta that keeps eps' >= 0.9
    /// eps.
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
    /// Report the AUC and accuracy on this labelled CSV (same columns; not a training file).
    /// These figures are exact, not private, and not charged: they are for the analyst, not
    /// for release with the model.
    #[arg(long, value_name = "FILE")]
    test: Option<PathBuf>,
    /// Write the JSON result here (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Which experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Which {
    /// Stacking paper, Figure 1: PLR, PST-S, PST-F(U), PST-F(W) on digits 0 vs 8.
    Stacking,
    /// Transfer paper, Table 1: PPTL-FS(W/R), SimComb, SourceD, Direct; 0 vs 8 to 0 vs 9.
    Transfer,
    /// Issue 15's hybrid pipelines (secure PLR, cross-organization stacking and transfer)
    /// against the secure exact fit and each organization alone, on breast_cancer as three
    /// hospitals and MNIST 0 vs 8 as three organizations (results/hybrid/).
    Hybrid,
    /// Dissertation Figures 3.3-3.6: DPSTGD's test AUC against epsilon (5 and 30
    /// participants), the minibatch ratio and the upload ratio, on MNIST 8 vs the rest
    /// (results/dpstgd/).
    Dpstgd,
    /// Dissertation Figures 4.2 and 4.4 and Table 4.3 in structure: DPHTL's hypothesis weights
    /// and test accuracy against the baselines, on MNIST digit pairs as five sources
    /// (results/dphtl/).
    Dphtl,
}

/// Arguments of `privlogit dp experiment`.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// The experiment.
    which: Which,
    /// The MNIST digits CSV (`label,px0,...,px783`).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "../shared/data/mnist_digits.csv"
    )]
    data: PathBuf,
    /// Directory for `<experiment>.csv` (mean and sd), `<experiment>_repeats.csv` (every
    /// repeat) and `<experiment>.svg` (the figure) [default: results/dp, results/hybrid for
    /// hybrid].
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Hybrid only: also run repeat 0's secure PLR points as real secure studies (2048-bit key,
    /// in this process) and print how far each is from the plaintext equivalent the
    /// experiment reports.
    #[arg(long)]
    check_secure: bool,
    /// Dphtl only: run on this table instead of the MNIST substitute: rows of 5 domains (20NG's
    /// mixtures) or 4 (Amazon's), each row's domain in `--domain-column`, its 0/1 label in
    /// `--domain-label` (e.g. 20NG or Amazon as tf-idf feature files).
    #[arg(long, value_name = "FILE")]
    domains: Option<PathBuf>,
    /// Dphtl only: the domain column of `--domains`.
    #[arg(long, value_name = "COLUMN", default_value = "domain")]
    domain_column: String,
    /// Dphtl only: the label column of `--domains`.
    #[arg(long, value_name = "COLUMN", default_value = "label")]
    domain_label: String,
    /// Hybrid only: the three hospitals' data (split per repeat).
    #[arg(
        long,
        value_name = "FILE",
        default_value = "../shared/data/breast_cancer.csv"
    )]
    hospitals: PathBuf,
    /// Repeats.
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Budgets (comma-separated; `inf` for the non-private reference).
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2,4,8,inf")]
    epsilons: Vec<String>,
    /// Seed of the first repeat.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Stacking only: `refit` tests a fresh fit of the setting with the best mean validation
    /// AUC (three noisy fits each); `winner` tests the single best noisy fit on validation (12
    /// fits per method).
    #[arg(long, value_enum, default_value = "refit")]
    selection: SelectionArg,
    /// Output file names get this suffix (e.g. `-winner`).
    #[arg(long, default_value = "")]
    suffix: String,
}

/// `--selection`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SelectionArg {
    /// Mean of three noisy validation fits picks the setting; a fresh fit is tested.
    Refit,
    /// The best single noisy fit on validation is tested.
    Winner,
}

pub fn run(args: DpArgs) -> Result<Outcome> {
    match args.command {
        DpCommand::Fit(a) => fit(*a),
        DpCommand::Experiment(a) => run_experiment(a),
        DpCommand::Replot(a) => replot(a),
        DpCommand::Account(a) => crate::dp_account::run(a),
    }
}

fn load(path: &Path, args: &FitArgs) -> Result<Dataset> {
    let options = LoadOptions {
        exclude: args.exclude.clone(),
        ..LoadOptions::new(args.label.clone())
    };
    Ok(data::load(path, &options)?.data)
}

/// Charges each of `files` (read with the label column `label`) `epsilon` on the ledger at
/// `path` (created with the total `budget`), or refuses, naming the file that would pass the
/// total: what every DP command that charges before it draws noise calls.
pub(crate) fn charge_files(
    path: &Path,
    budget: Option<f64>,
    files: &[PathBuf],
    label: &str,
    epsilon: f64,
) -> Result<()> {
    let spends: Vec<(PathBuf, f64)> = files.iter().map(|f| (f.clone(), epsilon)).collect();
    let charges = ledger_charges(path, budget, &spends, label)?;
    for note in Ledger::record(path, budget, &charges)? {
        crate::log::say!("ledger {}: {note}", path.display());
    }
    crate::log::say!(
        "ledger {}: charged epsilon {epsilon} to each of {} data set(s)",
        path.display(),
        files.len()
    );
    Ok(())
}

/// The ledger's charges for `spends` (each file and what it spends), each data set known by
/// its rows (every column but `label` a feature, whatever a fit leaves out), checked against
/// the ledger at `path`: refused, before any noise is drawn, past its total.
pub(crate) fn ledger_charges(
    path: &Path,
    budget: Option<f64>,
    spends: &[(PathBuf, f64)],
    label: &str,
) -> Result<Vec<Charge>> {
    let ledger = Ledger::load(path, budget)?;
    let options = LoadOptions::new(label);
    let charges = spends
        .iter()
        .map(|(file, epsilon)| {
            Ok(Charge {
                data: ledger.key().print_file(file, &options)?,
                file: file.display().to_string(),
                epsilon: *epsilon,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    for note in ledger.check(&charges)? {
        crate::log::say!("ledger {}: {note}", path.display());
    }
    Ok(charges)
}

/// What a published result says it spent: each file and its epsilon (the data sets' ledger
/// prints stay in the ledger: a digest of the rows would tell neighbouring data sets apart).
pub(crate) fn spent_report(spends: &[(PathBuf, f64)]) -> Value {
    Value::Array(
        spends
            .iter()
            .map(
                |(file, epsilon)| json!({ "file": file.display().to_string(), "epsilon": epsilon }),
            )
            .collect(),
    )
}

fn labelled(d: &Dataset) -> Labelled<'_> {
    Labelled {
        x: d.x.view(),
        y: d.y.view(),
    }
}

/// How the features are grouped, from `--feature-scores` or `--group-importance`.
fn split_choice(args: &FitArgs) -> Result<SplitChoice> {
    Ok(if !args.feature_scores.is_empty() {
        SplitChoice::Scores(args.feature_scores.clone())
    } else if !args.group_importance.is_empty() {
        let k = args.group_importance.len();
        if args.k.is_some_and(|given| given != k) {
            bail!(
                "--group-importance has {k} values but --k is {}",
                args.groups()
            );
        }
        SplitChoice::GroupImportance(args.group_importance.clone())
    } else {
        SplitChoice::Random
    })
}

/// Defaults of the options that only some methods take (`None` means "not given", so that an
/// option a method would ignore can be refused).
pub(crate) use privlogit::dp::release::{
    DEFAULT_ETA, DEFAULT_HIGH_LAMBDA, DEFAULT_K, DEFAULT_LOW_FRACTION,
};

impl FitArgs {
    /// K, the number of groups.
    fn groups(&self) -> usize {
        self.k.unwrap_or(DEFAULT_K)
    }

    /// Refuses, by name, an option the method would ignore (a silently ignored option makes
    /// the user believe in a model they did not get), and K = 0.
    /// What `dp fit --method dphtl` reads.
    fn dphtl(&self) -> crate::dphtl_fit::DphtlArgs {
        crate::dphtl_fit::DphtlArgs {
            sources: self.source.clone(),
            public: self.public.clone(),
            data: self.data.clone(),
            target_unlabelled: self.target_unlabelled.clone(),
            options: LoadOptions {
                exclude: self.exclude.clone(),
                ..LoadOptions::new(self.label.clone())
            },
            lambda: self.lambda,
            lambda_iw: self.lambda_iw,
            prior_sd_floor: self.prior_sd_floor,
            seed: self.seed,
            test: self.test.clone(),
        }
    }

    fn refuse_ignored_options(&self) -> Result<()> {
        use Method::*;
        let m = self.method;
        let stacks = matches!(m, PstS | PstF | PstH | PptlFs);
        let grouped = matches!(m, PstS | PstF | PlrFs | PstH | PptlFs);
        let stacking_combiner = matches!(m, PstH | PptlFs)
            || (matches!(m, PstS | PstF)
                && matches!(self.combiner, None | Some(CombinerArg::Stacking)));
        let ignored = [
            (
                "--eta",
                self.eta.is_some() && !matches!(m, Simcomb | PptlFs),
                "only simcomb and pptl-fs take it (pst-h is pptl-fs with eta = 0, stacking paper Algorithm 4)",
            ),
            (
                "--k",
                self.k.is_some() && !grouped,
                "the method has no groups",
            ),
            (
                "--group-importance",
                !self.group_importance.is_empty() && !m.splits_features(),
                "the method does not split features",
            ),
            (
                "--feature-scores",
                !self.feature_scores.is_empty() && !m.splits_features(),
                "the method does not split features",
            ),
            (
                "--combiner",
                self.combiner.is_some() && !matches!(m, PstS | PstF),
                "only pst-s and pst-f choose a combiner (pst-h and pptl-fs stack)",
            ),
            (
                "--low-fraction",
                self.low_fraction.is_some() && !stacks,
                "the method has no high level",
            ),
            (
                "--high-lambda",
                self.high_lambda.is_some() && !stacking_combiner,
                "no PLR high level is fitted (no stacking combiner)",
            ),
            (
                "--plr-as-printed",
                self.plr_as_printed && m == Output,
                "output perturbation has no eps' or Delta",
            ),
            (
                "--public",
                self.public.is_some() && m != Dphtl,
                "only dphtl takes a public set",
            ),
            (
                "--target-unlabelled",
                self.target_unlabelled.is_some() && m != Dphtl,
                "only dphtl takes the target's unlabelled rows",
            ),
            (
                "--source-epsilon",
                self.source_epsilon.is_some() && (self.source.is_empty() || m == Dphtl),
                "there is no --source",
            ),
            (
                "--source-lambda",
                self.source_lambda.is_some() && (self.source.is_empty() || m == Dphtl),
                "there is no --source",
            ),
        ];
        if let Some((flag, _, why)) = ignored.iter().find(|(_, ignored, _)| *ignored) {
            bail!(
                "{flag} does not apply to --method {}: {why}",
                format!("{:?}", m).to_lowercase()
            );
        }
        if self.k == Some(0) {
            bail!("--k 0: K, the number of groups, must be at least 1");
        }
        Ok(())
    }
}

/// Refuses `--test` rows that are mostly training rows (the training file, a copy of it in
/// another order or format, or most of its rows): exact metrics on them are not private.
fn refuse_training_rows_as_test(args: &FitArgs) -> Result<()> {
    let Some(test) = &args.test else {
        return Ok(());
    };
    let mut secret = zeroize::Zeroizing::new([0u8; 32]);
    rand::RngExt::fill(&mut rand::rng(), &mut secret[..]);
    let key = ledger::LedgerKey::from_secret(&secret);
    let options = LoadOptions::new(args.label.clone());
    let tested = key.print_file(test, &options)?;
    for training in std::iter::once(&args.data).chain(args.source.iter()) {
        let trained = key.print_file(training, &options)?;
        let share = tested.share_of_rows_in(&trained);
        if tested == trained || share >= ledger::print::SAME_PEOPLE {
            bail!(
                "--test {}: about {:.0} % of its rows are rows of the training file {}: exact \
                 metrics on training rows are not private; test on rows the model was not \
                 fitted on",
                test.display(),
                100.0 * share,
                training.display()
            );
        }
    }
    Ok(())
}

fn fit(args: FitArgs) -> Result<Outcome> {
    // Everything is validated before any data is touched by a mechanism.
    args.refuse_ignored_options()?;
    refuse_training_rows_as_test(&args)?;
    let private = if args.plr_as_printed {
        Privacy::EpsilonAsPrinted
    } else {
        Privacy::Epsilon
    };
    let target_privacy = private(args.epsilon);
    target_privacy.epsilon().context("--epsilon")?;
    let source_privacy = private(args.source_epsilon.unwrap_or(args.epsilon));
    source_privacy.epsilon().context("--source-epsilon")?;
    if args.method == Method::Dphtl {
        // Each source is charged epsilon once (Theorem 4.3.1); refused before any noise.
        let spends: Vec<(PathBuf, f64)> = args
            .source
            .iter()
            .map(|p| (p.clone(), args.epsilon))
            .collect();
        let charges = match &args.ledger {
            Some(path) => ledger_charges(path, args.budget, &spends, &args.label)?,
            None => Vec::new(),
        };
        let report = crate::dphtl_fit::run(&args.dphtl(), target_privacy, &spends)?;
        publish_charged(
            &report,
            args.out.as_deref(),
            args.ledger.as_deref(),
            args.budget,
            &charges,
        )?;
        return Ok(Outcome::Success);
    }
    if args.source.len() > 1 {
        bail!("--method {:?} takes one --source", args.method);
    }
    if args.method.is_transfer() == args.source.is_empty() {
        bail!(
            "--method {:?} {} --source",
            args.method,
            if args.method.is_transfer() {
                "needs"
            } else {
                "does not take"
            }
        );
    }
    let scaling = match args.row_bound {
        Some(bound) => RowScaling::Clip {
            bound: privlogit::dp::DpError::check_positive("--row-bound", bound)?,
        },
        None => RowScaling::Normalize,
    };
    let target = load(&args.data, &args)?;
    let source = match args.source.first() {
        Some(path) => {
            let s = load(path, &args)?;
            if s.names != target.names {
                bail!(
                    "{}: columns differ from {}",
                    path.display(),
                    args.data.display()
                );
            }
            Some(s)
        }
        None => None,
    };
    let mut spends = vec![(args.data.clone(), args.epsilon)];
    if let Some(path) = args.source.first() {
        spends.push((path.clone(), source_privacy.spent()));
    }
    // Refuse early, before any noise is drawn; the charge itself is made under the ledger's
    // lock after the fit (and refused then if a concurrent fit used the room).
    let charges = match &args.ledger {
        Some(path) => ledger_charges(path, args.budget, &spends, &args.label)?,
        None => Vec::new(),
    };
    let randomness = args.seed.map_or(Randomness::Os, Randomness::Seeded);
    let mut rng = randomness.rng();
    let high_lambda = args.high_lambda.unwrap_or(DEFAULT_HIGH_LAMBDA);
    let settings = MethodSettings {
        privacy: target_privacy,
        source_privacy,
        lambda: args.lambda,
        source_lambda: args.source_lambda.unwrap_or(args.lambda),
        high_lambda,
        eta: args.eta.unwrap_or(DEFAULT_ETA),
        k: args.groups(),
        split: split_choice(&args)?,
        combiner: match args.combiner.unwrap_or(CombinerArg::Stacking) {
            CombinerArg::Stacking => Combiner::Stacking {
                lambda: high_lambda,
            },
            CombinerArg::MajorityVote => Combiner::MajorityVote,
            CombinerArg::WeightedVote => Combiner::WeightedVote,
        },
        low_fraction: args.low_fraction.unwrap_or(DEFAULT_LOW_FRACTION),
        scaling,
    };
    let fitted = release::fit(
        args.method.release().expect("dphtl ran above"),
        &settings,
        labelled(&target),
        source.as_ref().map(|s| labelled(s)),
        &mut rng,
    )?;
    let mut report = json!({
        "method": format!("{:?}", args.method).to_lowercase(),
        "features": target.names,
        "epsilon_spent": spent_report(&spends),
        "noise": match randomness {
            Randomness::Os => "OS CSPRNG".to_string(),
            Randomness::Seeded(s) => format!("seeded ChaCha20 (seed {s}): reproducible, NOT for private release"),
        },
        "model": fitted.json(),
    });
    if let Some(path) = &args.test {
        let test = load(path, &args)?;
        if test.names != target.names {
            bail!(
                "{}: columns differ from {}",
                path.display(),
                args.data.display()
            );
        }
        let scores = fitted.scores(test.x.view());
        report["test"] = json!({
            "file": path.display().to_string(),
            "auc": metrics::auc(scores.view(), test.y.view()),
            "accuracy": metrics::accuracy(scores.view(), test.y.view()),
            "privacy": "NOT private: exact metrics on the test rows, not charged to any budget; \
                        for the analyst, not for release with the model",
        });
    }
    if let Randomness::Seeded(_) = randomness {
        eprintln!("note: seeded noise (--seed): reproducible, not for private release");
    }
    publish_charged(
        &report,
        args.out.as_deref(),
        args.ledger.as_deref(),
        args.budget,
        &charges,
    )?;
    Ok(Outcome::Success)
}

/// Writes `report` (to `out`, or standard output) and charges `charges` on the ledger: the
/// result is written in full first (to a temporary file), the fit is charged, and only then is
/// the result put in place, so a result that cannot be written is not charged and no result
/// appears uncharged.
pub(crate) fn publish_charged(
    report: &Value,
    out: Option<&Path>,
    ledger: Option<&Path>,
    budget: Option<f64>,
    charges: &[Charge],
) -> Result<()> {
    let rendered = serde_json::to_string_pretty(report)? + "\n";
    let staged = match out {
        Some(path) => Some(
            output::Staged::write(path, |o| o.write_all(rendered.as_bytes()))
                .with_context(|| format!("writing {}", path.display()))?,
        ),
        None => None,
    };
    if let Some(path) = ledger {
        Ledger::record(path, budget, charges)?;
    }
    match (staged, out) {
        (Some(staged), Some(path)) => staged
            .commit()
            .with_context(|| format!("writing {}", path.display()))?,
        _ => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(rendered.as_bytes())
                .and_then(|()| stdout.flush())?;
        }
    }
    Ok(())
}

fn parse_epsilon(s: &str) -> Result<Privacy> {
    if s.trim().eq_ignore_ascii_case("inf") {
        return Ok(Privacy::Off);
    }
    let e: f64 = s
        .trim()
        .parse()
        .with_context(|| format!("--epsilons: `{s}` is not a number or `inf`"))?;
    let p = Privacy::Epsilon(e);
    p.epsilon().context("--epsilons")?;
    Ok(p)
}

fn run_experiment(args: ExperimentArgs) -> Result<Outcome> {
    if args.suffix.contains(['/', '\\']) {
        bail!(
            "--suffix {:?} must not contain a path separator",
            args.suffix
        );
    }
    if args.which == Which::Dphtl {
        let out_dir = args
            .out_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("results/dphtl"));
        let input = crate::dphtl_experiment::Input {
            digits: &args.data,
            domains: args
                .domains
                .as_deref()
                .map(|p| (p, args.domain_label.as_str(), args.domain_column.as_str())),
        };
        return crate::dphtl_experiment::run(&input, &out_dir, args.repeats, args.seed);
    }
    if args.which == Which::Dpstgd {
        let out_dir = args
            .out_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("results/dpstgd"));
        return crate::dl_experiment::run(&args.data, &out_dir, args.repeats, args.seed);
    }
    let settings = ExperimentSettings {
        repeats: args.repeats,
        epsilons: args
            .epsilons
            .iter()
            .map(|s| parse_epsilon(s))
            .collect::<Result<_>>()?,
        selection: match args.selection {
            SelectionArg::Refit => Selection::Refit,
            SelectionArg::Winner => Selection::Winner,
        },
        ..ExperimentSettings::papers(args.seed)
    };
    settings.validate()?;
    let digits = Digits::load(&args.data)?;
    let out_dir = args.out_dir.clone().unwrap_or_else(|| {
        PathBuf::from(if args.which == Which::Hybrid {
            "results/hybrid"
        } else {
            "results/dp"
        })
    });
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let name = match args.which {
        Which::Stacking => "stacking",
        Which::Transfer => "transfer",
        Which::Hybrid => return run_hybrid(&args, &settings, &digits, &out_dir),
        Which::Dpstgd => unreachable!("run by dl_experiment above"),
        Which::Dphtl => unreachable!("run by dphtl_experiment above"),
    };
    let file = format!("{name}{}", args.suffix);
    eprintln!(
        "{name} experiment: {} repeats x {} budgets, seeds {}..{} (seeded noise: reproducible, not for release)",
        settings.repeats,
        settings.epsilons.len(),
        settings.seed,
        settings.seed + settings.repeats as u64 - 1
    );
    let bar = ProgressBar::new(settings.repeats as u64).with_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} repeats, eta {eta}")
            .expect("template")
            .progress_chars("=> "),
    );
    let started = std::time::Instant::now();
    let results = match args.which {
        Which::Stacking => experiment::stacking(&digits, &settings, &|| bar.inc(1))?,
        Which::Transfer => experiment::transfer(&digits, &settings, &|| bar.inc(1))?,
        Which::Hybrid => unreachable!("run by run_hybrid above"),
        Which::Dpstgd => unreachable!("run by dl_experiment above"),
        Which::Dphtl => unreachable!("run by dphtl_experiment above"),
    };
    bar.finish_and_clear();
    write_results(&results, &out_dir, &file, started)
}

/// Writes an experiment's summary, repeats and spend CSVs and its figure, and prints its
/// tables.
fn write_results(
    results: &Results,
    out_dir: &Path,
    file: &str,
    started: std::time::Instant,
) -> Result<Outcome> {
    let csv_path = out_dir.join(format!("{file}.csv"));
    let figure_stem = out_dir.join(file);
    let repeats_path = out_dir.join(format!("{file}_repeats.csv"));
    let spend_path = out_dir.join(format!("{file}_spend.csv"));
    output::write_text(&csv_path, &results.csv())
        .with_context(|| format!("writing {}", csv_path.display()))?;
    output::write_text(&repeats_path, &results.repeats_csv())
        .with_context(|| format!("writing {}", repeats_path.display()))?;
    output::write_text(&spend_path, &results.spend_csv())
        .with_context(|| format!("writing {}", spend_path.display()))?;
    let [svg_path, _] = figure(results).save(&figure_stem)?;
    print!("{}", table(results));
    print!("{}", spend_table(results));
    eprintln!(
        "wrote {} and {} (and .png) in {:.1} s",
        csv_path.display(),
        svg_path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(Outcome::Success)
}

/// `dp experiment hybrid`: both tasks, the budgets of `settings` (the non-private reference is
/// the secure exact fit, so `inf` is left out), its repeats and seed.
fn run_hybrid(
    args: &ExperimentArgs,
    settings: &ExperimentSettings,
    digits: &Digits,
    out_dir: &Path,
) -> Result<Outcome> {
    use privlogit::hybrid::experiment::{self as hybrid, Features, Task};
    let epsilons: Vec<f64> = settings
        .epsilons
        .iter()
        .filter_map(|p| p.epsilon().ok().flatten())
        .collect();
    let hospitals = data::load(&args.hospitals, &data::LoadOptions::new("label"))?.data;
    let mnist_rows: Vec<usize> = digits
        .rows_of(0)
        .into_iter()
        .chain(digits.rows_of(8))
        .collect();
    let tasks = [
        Task {
            name: "hybrid_breast_cancer",
            x: hospitals.x,
            y: hospitals.y,
            features: Features::Standardize,
        },
        Task {
            name: "hybrid_mnist",
            x: digits.pixels.select(ndarray::Axis(0), &mnist_rows),
            y: mnist_rows
                .iter()
                .map(|&i| f64::from(u8::from(digits.labels[i] == 8)))
                .collect(),
            features: Features::Pca(50),
        },
    ];
    for task in &tasks {
        eprintln!(
            "{}: {} repeats x {} budgets, seeds {}..{} (seeded noise: reproducible, not for release)",
            task.name,
            settings.repeats,
            epsilons.len(),
            settings.seed,
            settings.seed + settings.repeats as u64 - 1
        );
        let started = std::time::Instant::now();
        let results = hybrid::run(task, &epsilons, settings.repeats, settings.seed, &|| {})?;
        write_results(
            &results,
            out_dir,
            &format!("{}{}", task.name, args.suffix),
            started,
        )?;
        if args.check_secure {
            let key = privlogit::protocols::paillier::KeyPair::generate(
                privlogit::protocols::paillier::KeySize::Bits2048,
                &mut rand::rng(),
            );
            let started = std::time::Instant::now();
            let diffs = hybrid::check_secure(task, &epsilons, settings.seed, &key.secret)?;
            for (e, d) in epsilons.iter().zip(&diffs) {
                println!(
                    "{}: secure PLR at epsilon {e}, repeat 0: the secure study's coefficients \
                     differ from the reported plaintext equivalent by at most {d:.2e}",
                    task.name
                );
            }
            eprintln!(
                "secure check of {} points in {:.1} s",
                diffs.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(Outcome::Success)
}

/// What the experiment spent (from `Results::spend_csv`), for under the table.
fn spend_table(results: &Results) -> String {
    let mut out = String::from(
        "\nprivacy spent (basic composition over the finite budgets; PCA, exact validation AUCs \
         and the inf column are not private and not counted):\n",
    );
    out += &format!(
        "{:<12} {:<15} {:>15} {:>12} {:>12}\n",
        "method", "data set", "fits per budget", "eps 1 repeat", "eps all"
    );
    for line in results.spend_csv().lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        out += &format!(
            "{:<12} {:<15} {:>15} {:>12} {:>12}\n",
            f[1], f[2], f[3], f[4], f[5]
        );
    }
    out
}

/// Mean +- sd per method (rows) and budget (columns), like the transfer paper's Table 1.
fn table(results: &Results) -> String {
    let eps = results.epsilons();
    let mut out = format!("{:<12}", "method");
    for e in &eps {
        out += &format!(" {:>15}", format!("eps={}", epsilon_label(*e)));
    }
    out.push('\n');
    for m in results.methods() {
        out += &format!("{m:<12}");
        for &e in &eps {
            let o = results.get(m, e).expect("every cell");
            out += &format!(" {:>15}", format!("{:.4}+-{:.4}", o.mean(), o.sd()));
        }
        out.push('\n');
    }
    out
}

fn figure(results: &Results) -> Chart {
    let cells: Vec<(String, f64, f64, f64)> = results
        .methods()
        .into_iter()
        .flat_map(|m| {
            results.epsilons().into_iter().map(move |e| {
                let o = results.get(m, e).expect("every cell");
                (m.to_string(), e, o.mean(), o.sd())
            })
        })
        .collect();
    let winners =
        results.experiment == "stacking" && results.settings.selection == Selection::Winner;
    dp_chart(
        results.experiment,
        winners,
        results.settings.repeats,
        &cells,
    )
}

/// The figure of an experiment from its summary cells `(method, epsilon, mean AUC, sd)`:
/// test AUC against epsilon, one line per method with +-1 sd bars, the axis capped at 1.
fn dp_chart(
    experiment: &str,
    winners: bool,
    repeats: usize,
    cells: &[(String, f64, f64, f64)],
) -> Chart {
    let mut eps: Vec<f64> = cells.iter().map(|c| c.1).collect();
    eps.sort_by(f64::total_cmp);
    eps.dedup();
    let mut methods: Vec<&str> = Vec::new();
    for (m, ..) in cells {
        if !methods.contains(&m.as_str()) {
            methods.push(m);
        }
    }
    let series = methods
        .iter()
        .map(|&m| {
            let mine: Vec<&(String, f64, f64, f64)> = cells.iter().filter(|c| c.0 == m).collect();
            let at = |e: f64| mine.iter().find(|c| c.1 == e);
            Series {
                name: m.to_string(),
                points: eps
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &e)| at(e).map(|c| (i as f64, c.2)))
                    .collect(),
                errors: Some(eps.iter().filter_map(|&e| at(e).map(|c| c.3)).collect()),
                mark: Mark::Line,
            }
        })
        .collect();
    let title = match experiment {
        "stacking" => "MNIST 0 vs 8: test AUC vs epsilon (stacking paper Fig. 1)",
        "hybrid_breast_cancer" => {
            "breast_cancer as 3 hospitals: hybrid pipelines, test AUC vs epsilon"
        }
        "hybrid_mnist" => "MNIST 0 vs 8 as 3 organizations: hybrid pipelines, test AUC vs epsilon",
        _ => "MNIST transfer, 0 vs 8 to 0 vs 9: test AUC vs epsilon (transfer paper Table 1)",
    };
    Chart {
        title: format!(
            "{title}, {repeats} repeats{}",
            if winners { ", validation winners" } else { "" }
        ),
        x_title: "epsilon".into(),
        y_title: "test AUC (mean +- sd)".into(),
        x_labels: Some(eps.iter().map(|e| epsilon_label(*e)).collect()),
        log_y: false,
        y_limits: Some((f64::NEG_INFINITY, 1.0)),
        identity_line: false,
        legend: Corner::LowerRight,
        series,
    }
}

/// `privlogit dp replot`: redraws an experiment's figure (SVG and PNG) from its summary CSV.
fn replot(args: ReplotArgs) -> Result<Outcome> {
    let text = std::fs::read_to_string(&args.summary)
        .with_context(|| format!("reading {}", args.summary.display()))?;
    let mut cells = Vec::new();
    let (mut experiment, mut repeats) = (String::new(), 0usize);
    for (i, line) in text.lines().enumerate().skip(1) {
        let bad = |what: &str| {
            anyhow!(
                "{}:{}:1: {what} (expected experiment,method,epsilon,mean_auc,sd_auc,repeats)",
                args.summary.display(),
                i + 1
            )
        };
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 6 {
            return Err(bad(&format!("{} fields", f.len())));
        }
        let num = |s: &str| {
            s.parse::<f64>()
                .map_err(|_| bad(&format!("{s:?} is not a number")))
        };
        experiment = f[0].to_string();
        repeats = f[5].parse().map_err(|_| bad("repeats is not a count"))?;
        cells.push((f[1].to_string(), num(f[2])?, num(f[3])?, num(f[4])?));
    }
    if cells.is_empty() {
        bail!("{}: no rows after the header", args.summary.display());
    }
    let winners = args
        .summary
        .file_stem()
        .is_some_and(|s| s.to_string_lossy().ends_with("_winner"));
    let stem = args.summary.with_extension("");
    let [svg, png] = dp_chart(&experiment, winners, repeats, &cells).save(&stem)?;
    eprintln!("wrote {} and {}", svg.display(), png.display());
    Ok(Outcome::Success)
}
