//! The papers' experiments as `privlogit dp experiment` runs them: each writes its summary
//! and per-repeat CSVs and its figure (SVG and PNG) and prints its table.
//!
//! - [`dp_papers`]: the 4Paradigm stacking and transfer papers' MNIST experiments.
//! - [`hybrid_consortium`]: the hybrid pipelines (secure PLR, stacking and transfer across organizations).
//! - [`dpstgd`], [`dpstgd_report`]: dissertation Figures 3.3-3.6 (distributed DP deep learning).
//! - [`dphtl_experiment`], [`dphtl_report`]: dissertation Figures 4.2 and 4.4 and Table 4.3 (DPHTL).

pub mod dp_papers;
pub mod dphtl_experiment;
pub mod dphtl_report;
pub mod dpstgd;
pub mod dpstgd_report;
pub mod hybrid_consortium;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use self::dp_papers::{
    self as experiment, ExperimentSettings, Paper, Results, Selection, epsilon_label,
};
use crate::figures::{Chart, Corner, Mark, Series};
use privlogit::data;
use privlogit::dp::mnist::Digits;
use privlogit::dp::plr::Privacy;
use privlogit::output;

/// Arguments of `privlogit dp replot`.
#[derive(Debug, Args)]
pub struct ReplotArgs {
    /// The summary CSV an experiment wrote; the figure goes beside it (same name, .svg and .png).
    #[arg(long, value_name = "FILE")]
    pub summary: PathBuf,
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
    /// The MNIST digits CSV (`label,px0,...,px783`; every experiment but `dphtl --domains`
    /// reads it).
    #[arg(long, value_name = "FILE")]
    data: Option<PathBuf>,
    /// Directory for `<experiment>.csv` (mean and sd), `<experiment>_repeats.csv` (every
    /// repeat), `<experiment>_spend.csv` (the spend) and `<experiment>.svg` and `.png` (the
    /// figure) [default: results/dp, results/hybrid for hybrid].
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
    /// Hybrid only: the three hospitals' data, breast_cancer.csv with its `label` column (split
    /// per repeat).
    #[arg(long, value_name = "FILE")]
    hospitals: Option<PathBuf>,
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

/// The MNIST digits file of `args`, which every experiment but `dphtl --domains` needs.
fn digits_file(args: &ExperimentArgs) -> Result<&Path> {
    args.data
        .as_deref()
        .context("--data FILE is needed: the MNIST digits CSV (label,px0,...,px783)")
}

/// Refuses an option the chosen experiment would ignore (as `dp fit` refuses one its method
/// would), and a missing `--hospitals` before anything is created. An option left at its
/// default counts as not given.
fn check_options(args: &ExperimentArgs) -> Result<()> {
    use Which::*;
    let default_epsilons = ["0.5", "1", "2", "4", "8", "inf"];
    let options: [(&str, bool, &[Which]); 8] = [
        ("--check-secure", args.check_secure, &[Hybrid]),
        ("--hospitals", args.hospitals.is_some(), &[Hybrid]),
        ("--domains", args.domains.is_some(), &[Dphtl]),
        ("--domain-column", args.domain_column != "domain", &[Dphtl]),
        ("--domain-label", args.domain_label != "label", &[Dphtl]),
        (
            "--selection",
            args.selection != SelectionArg::Refit,
            &[Stacking],
        ),
        (
            "--epsilons",
            args.epsilons != default_epsilons,
            &[Stacking, Transfer, Hybrid],
        ),
        (
            "--suffix",
            !args.suffix.is_empty(),
            &[Stacking, Transfer, Hybrid],
        ),
    ];
    let name = |w: Which| {
        w.to_possible_value()
            .map_or(String::new(), |v| v.get_name().to_string())
    };
    for (flag, given, takes) in options {
        if given && !takes.contains(&args.which) {
            let takers: Vec<String> = takes.iter().map(|&w| name(w)).collect();
            bail!(
                "{flag} does not apply to `dp experiment {}` (only to {})",
                name(args.which),
                takers.join(", ")
            );
        }
    }
    if args.which == Hybrid && args.hospitals.is_none() {
        bail!("--hospitals FILE is needed: breast_cancer.csv, with its label column `label`");
    }
    Ok(())
}

/// Runs `dp experiment`.
pub fn run(args: ExperimentArgs) -> Result<()> {
    check_options(&args)?;
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
        let input = dphtl_report::Input {
            digits: args.data.as_deref(),
            domains: args
                .domains
                .as_deref()
                .map(|p| (p, args.domain_label.as_str(), args.domain_column.as_str())),
        };
        return dphtl_report::run(&input, &out_dir, args.repeats, args.seed);
    }
    if args.which == Which::Dpstgd {
        let out_dir = args
            .out_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("results/dpstgd"));
        return dpstgd_report::run(digits_file(&args)?, &out_dir, args.repeats, args.seed);
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
    let digits = Digits::load(digits_file(&args)?)?;
    let out_dir = args.out_dir.clone().unwrap_or_else(|| {
        PathBuf::from(if args.which == Which::Hybrid {
            "results/hybrid"
        } else {
            "results/dp"
        })
    });
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let paper = match args.which {
        Which::Stacking => Paper::Stacking,
        Which::Transfer => Paper::Transfer,
        Which::Hybrid => return run_hybrid(&args, &settings, &digits, &out_dir),
        Which::Dpstgd => unreachable!("run by dl_experiment above"),
        Which::Dphtl => unreachable!("run by dphtl_experiment above"),
    };
    let name = paper.name();
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
    let results = experiment::run(paper, &digits, &settings, &|| bar.inc(1))?;
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
) -> Result<()> {
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
    Ok(())
}

/// `dp experiment hybrid`: both tasks, the budgets of `settings` (the non-private reference is
/// the secure exact fit, so `inf` is left out), its repeats and seed.
fn run_hybrid(
    args: &ExperimentArgs,
    settings: &ExperimentSettings,
    digits: &Digits,
    out_dir: &Path,
) -> Result<()> {
    use self::hybrid_consortium::{Features, Task};
    let epsilons: Vec<f64> = settings
        .epsilons
        .iter()
        .filter_map(|p| p.epsilon().ok().flatten())
        .collect();
    let hospitals = args
        .hospitals
        .as_deref()
        .context("--hospitals FILE is needed: breast_cancer.csv, with its label column `label`")?;
    let hospitals = data::load(hospitals, &data::LoadOptions::new("label"))?.data;
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
        let results =
            hybrid_consortium::run(task, &epsilons, settings.repeats, settings.seed, &|| {})?;
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
            let diffs =
                hybrid_consortium::check_secure(task, &epsilons, settings.seed, &key.secret)?;
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
    Ok(())
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
/// Runs `dp replot`: redraws an experiment's figure (SVG and PNG) from its summary CSV.
pub fn replot(args: ReplotArgs) -> Result<()> {
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
    Ok(())
}
