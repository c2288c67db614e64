//! `privlogit fit`: load parties, prepare them, run an optimiser in the clear, report.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use privlogit::data::{self, Dataset, LoadOptions, partition};
use privlogit::fit::{self, Fitted, Preparation, Prepared};
use privlogit::output;
use privlogit::protocols::{
    DivergenceReason, FitOptions, Initial, IterationRecord, Optimizer, Status, StepKind,
};
use serde::Serialize;

use crate::Outcome;

/// Arguments of `privlogit fit`.
#[derive(Debug, Args)]
pub struct FitArgs {
    /// The parties' data files (CSV, privlogit binary or Parquet), one per party: `--party a.csv b.csv`
    /// or `--party a.csv --party b.csv`.
    #[arg(long = "party", value_name = "FILE", num_args = 1.., required_unless_present = "data")]
    parties: Vec<std::path::PathBuf>,
    /// One file holding every party's rows (see --split and --group-by).
    #[arg(long, value_name = "FILE", conflicts_with = "parties")]
    data: Option<PathBuf>,
    /// Split --data into K parties of contiguous rows.
    #[arg(long, value_name = "K", requires = "data")]
    split: Option<usize>,
    /// Shuffle the rows with this seed before --split.
    #[arg(long, value_name = "SEED", requires = "split")]
    shuffle_seed: Option<u64>,
    /// Make one party per value of this column of --data.
    #[arg(
        long,
        value_name = "COLUMN",
        requires = "data",
        conflicts_with = "split"
    )]
    group_by: Option<String>,
    /// Name of the 0/1 label column.
    #[arg(long, value_name = "COLUMN")]
    label: String,
    /// Leave this column out; repeat for several.
    #[arg(long = "exclude", value_name = "COLUMN")]
    exclude: Vec<String>,
    /// Z-score the features with the pooled mean and standard deviation (ddof = 0).
    #[arg(long)]
    standardize: bool,
    /// Do not add the intercept column.
    #[arg(long)]
    no_intercept: bool,
    /// l2 penalty lambda (dissertation eq. 2.10); every coefficient is penalised, the
    /// intercept too unless --free-intercept.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    lambda: f64,
    /// Leave the intercept out of the penalty, as scikit-learn's LogisticRegression and R's
    /// glm fit it (the dissertation's eq. 2.10 penalises it).
    #[arg(long, conflicts_with = "no_intercept")]
    free_intercept: bool,
    /// Centre the penalty at this public vector, lambda/2 ||beta - c||^2 (hypothesis transfer):
    /// a file with one coefficient per line, in the model's order (intercept first).
    #[arg(long, value_name = "FILE")]
    penalty_centre: Option<PathBuf>,
    /// newton, privlogit or privlogit-accel.
    #[arg(long, default_value = "privlogit")]
    optimizer: Optimizer,
    /// Anderson memory of privlogit-accel.
    #[arg(long, value_name = "M", default_value_t = privlogit::protocols::optimizer::DEFAULT_ANDERSON_MEMORY)]
    memory: usize,
    /// Stop when the relative change of the penalised log-likelihood is below T (0: never).
    #[arg(
        long,
        value_name = "T",
        default_value_t = 1e-6,
        allow_negative_numbers = true
    )]
    tol: f64,
    /// Also stop when the gradient's Euclidean norm is below G.
    #[arg(long, value_name = "G", allow_negative_numbers = true)]
    gradient_tol: Option<f64>,
    /// Give up after N iterations.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    max_iter: usize,
    /// Start with every coefficient equal to V (default: all zero).
    #[arg(long, value_name = "V", allow_negative_numbers = true)]
    init: Option<f64>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the result to FILE (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// No per-iteration progress on standard error.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: FitArgs) -> Result<Outcome> {
    let optimizer = match args.optimizer {
        Optimizer::AcceleratedPrivLogit { .. } => Optimizer::AcceleratedPrivLogit {
            memory: args.memory,
        },
        other => other,
    };
    let options = FitOptions::new()
        .lambda(args.lambda)
        .free_intercept(args.free_intercept)
        .relative_tolerance(args.tol)
        .gradient_tolerance(args.gradient_tol)
        .max_iterations(args.max_iter)
        .initial(args.init.map_or(Initial::Zeros, Initial::Constant))
        .penalty_centre(
            args.penalty_centre
                .as_deref()
                .map(crate::centre::read)
                .transpose()?,
        );
    optimizer.validate()?;
    options.validate()?;

    let parties = load_parties(&args)?;
    let prepared = fit::prepare(
        parties,
        Preparation {
            standardize: args.standardize,
            intercept: !args.no_intercept,
        },
    )?;
    if !args.quiet {
        eprintln!(
            "fitting {} coefficients on {} rows in {} parties with {}",
            prepared.names.len(),
            prepared.rows(),
            prepared.parties.len(),
            optimizer
        );
    }
    let quiet = args.quiet;
    let mut progress = |r: &IterationRecord| {
        if !quiet {
            eprintln!("{}", progress_line(r));
        }
    };
    let fitted = fit::fit(&prepared, optimizer, &options, &mut progress)?;

    let rendered = if args.json {
        let mut s =
            serde_json::to_string_pretty(&JsonReport::new(&prepared, &fitted, &options, &args))?;
        s.push('\n');
        s
    } else {
        table(&prepared, &fitted, &options)
    };
    match &args.out {
        Some(path) => output::write_text(path, &rendered)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(rendered.as_bytes())
                .and_then(|()| stdout.flush())
                .context("cannot write to standard output")?;
        }
    }

    match fitted.report.status {
        Status::Diverged(reason) => {
            let hint = match reason {
                DivergenceReason::HessianNotPositiveDefinite => "",
                _ => "; PrivLogit converges from any start",
            };
            eprintln!(
                "error: {optimizer} diverged at iteration {}: {}{hint}",
                fitted.report.iterations,
                reason.describe()
            );
            Ok(Outcome::Diverged)
        }
        Status::MaxIterations => {
            eprintln!(
                "warning: stopped after {} iterations without meeting the stopping rule (raise --max-iter)",
                fitted.report.iterations
            );
            Ok(Outcome::Success)
        }
        Status::Converged => Ok(Outcome::Success),
    }
}

/// Reads the parties as the flags describe them.
fn load_parties(args: &FitArgs) -> Result<Vec<Dataset>> {
    let options = LoadOptions {
        label: args.label.clone(),
        exclude: args.exclude.clone(),
        group: args.group_by.clone(),
    };
    if let Some(path) = &args.data {
        let table = data::load(path, &options)?;
        return Ok(match (args.split, &table.groups) {
            (Some(k), _) => match args.shuffle_seed {
                Some(seed) => partition::split_shuffled(&table.data, k, seed)?,
                None => partition::split_contiguous(&table.data, k)?,
            },
            (None, Some(groups)) => partition::split_by_group(&table.data, groups)?,
            (None, None) => vec![table.data],
        });
    }
    if args.parties.is_empty() {
        bail!("give the parties' files with --party FILE (repeated) or one file with --data FILE");
    }
    args.parties
        .iter()
        .map(|p| Ok(data::load(p, &options)?.data))
        .collect()
}

fn progress_line(r: &IterationRecord) -> String {
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

fn table(prepared: &Prepared, fitted: &Fitted, options: &FitOptions) -> String {
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
            "accelerated     {} accepted, {} rejected",
            r.accelerated_steps, r.rejected_candidates
        );
    }
    let _ = writeln!(s, "log-likelihood  {:.10}", fitted.log_likelihood);
    let _ = writeln!(s, "objective       {:.10}", fitted.objective);
    if let Some(auc) = fitted.auc {
        let _ = writeln!(s, "AUC             {auc:.6}");
    }
    let _ = writeln!(s, "accuracy        {:.6}", fitted.accuracy);
    let width = prepared
        .names
        .iter()
        .map(String::len)
        .max()
        .unwrap_or(0)
        .max(11);
    let _ = writeln!(s, "\n{:<width$}  {:>20}", "coefficient", "estimate");
    for (name, b) in prepared.names.iter().zip(r.beta.iter()) {
        let _ = writeln!(s, "{name:<width$}  {b:>20.12}");
    }
    s
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
    lambda: f64,
    free_intercept: bool,
    penalty_centre: Option<Vec<f64>>,
    tolerance: f64,
    gradient_tolerance: Option<f64>,
    max_iterations: usize,
    n: usize,
    parties: Vec<JsonParty<'a>>,
    standardized: bool,
    intercept: bool,
    names: &'a [String],
    coefficients: Vec<f64>,
    log_likelihood: f64,
    objective: f64,
    auc: Option<f64>,
    accuracy: f64,
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
    fn new(prepared: &'a Prepared, fitted: &Fitted, options: &FitOptions, args: &FitArgs) -> Self {
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
            lambda: options.lambda,
            free_intercept: options.free_intercept,
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
            intercept: !args.no_intercept,
            names: &prepared.names,
            coefficients: r.beta.to_vec(),
            log_likelihood: fitted.log_likelihood,
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
