//! `privlogit reproduce table-5.1`: the dissertation's Table 5.1 at the paper's sizes, every
//! party in this process, our figures beside the paper's.
//!
//! - [`paper`]: the table's data sets and published numbers.
//! - [`record`]: one finished run on disk (what `--resume` skips).
//! - [`table_5_1`]: the CSV and markdown tables.
//! - [`chapter5_figures`]: Figures 5.2-5.5.

mod chapter5_figures;
mod paper;
mod record;
mod table_5_1;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use privlogit::data::{self, LoadOptions, partition};
use privlogit::fit::{self, Preparation};
use privlogit::protocols::optimizer::DEFAULT_ANDERSON_MEMORY;
use privlogit::protocols::paillier::{KeyPair, KeySize};
use privlogit::protocols::rows::{DesignRows, RowSource};
use privlogit::protocols::secure::SecureError;
use privlogit::protocols::secure::aggregator::Protocol;
use privlogit::protocols::secure::inprocess;
use privlogit::protocols::secure::node::NodeData;
use privlogit::protocols::secure::study_protocol::StudyPlan;
use privlogit::protocols::{FitOptions, FitReport, Optimizer, PartyData, PlaintextAggregation};
use privlogit::synthetic::Simulation;

use self::paper::{Published, Row, Source, TABLE_5_1};
use self::record::{Breakdown, Record, Run};
use crate::bench::machine::machine;
use crate::bench::node_round::peak_resident_bytes;
use crate::bench::protocols::timed_plan;

/// Arguments of `privlogit reproduce`.
#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// What to reproduce.
    #[command(subcommand)]
    pub what: Target,
}

/// What to reproduce.
#[derive(Debug, Subcommand)]
pub enum Target {
    /// Table 5.1: iterations and seconds of secure Newton, PrivLogit-Hessian and
    /// PrivLogit-Local, and the plaintext runs, on every data set, beside the paper's.
    #[command(name = "table-5.1")]
    Table51(TableArgs),
    /// Figure 5.2: secure PrivLogit coefficients against plaintext Newton's (from table-5.1's runs).
    #[command(name = "fig-5.2")]
    Fig52(FigureArgs),
    /// Figure 5.3: iterations per data set, Newton, PrivLogit, accelerated (from the runs).
    #[command(name = "fig-5.3")]
    Fig53(FigureArgs),
    /// Figure 5.4: speed-up of Hessian and Local over secure Newton, ours and the paper's.
    #[command(name = "fig-5.4")]
    Fig54(FigureArgs),
    /// Figure 5.5: distance to the optimum by iteration on SimuX50 from starts 0.8 to 2.
    #[command(name = "fig-5.5")]
    Fig55(Fig55Args),
}

/// Arguments of the figures drawn from Table 5.1's runs.
#[derive(Debug, Args)]
pub struct FigureArgs {
    /// Directory of the Table 5.1 results; the figure is written there (.svg and .png).
    #[arg(long, value_name = "DIR", default_value = "results/paper")]
    out: PathBuf,
}

/// Arguments of `privlogit reproduce fig-5.5`.
#[derive(Debug, Args)]
pub struct Fig55Args {
    /// Multiply SimuX50's 1,000,000 rows by this.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    rows_scale: f64,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory.
    #[arg(long, value_name = "DIR", default_value = "results/paper")]
    out: PathBuf,
}

/// Arguments of `privlogit reproduce table-5.1`.
#[derive(Debug, Args)]
pub struct TableArgs {
    /// Multiply the simulated data sets' row counts by this (1 = the paper's sizes; 0.01 for a
    /// quick look). The real-data rows keep their size.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    rows_scale: f64,
    /// Run only these rows (names as in the table, e.g. SimuX50; repeatable).
    #[arg(long, value_name = "NAME")]
    only: Vec<String>,
    /// Skip runs whose results are already written (from an earlier, stopped run).
    #[arg(long)]
    resume: bool,
    /// Directory of the results (`table_5_1.csv`, `table_5_1.md`, `runs/`).
    #[arg(long, value_name = "DIR", default_value = "results/paper")]
    out: PathBuf,
    /// Directory of the real data sets (breast_cancer.csv, winequality_red.csv), which the
    /// rows Wine* and breast_cancer* read.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Nodes per study (the paper: 5).
    #[arg(long, value_name = "S", default_value_t = 5)]
    parties: usize,
    /// Seed of the simulations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Skip these runs (e.g. secure-newton; repeatable).
    #[arg(long, value_name = "RUN")]
    skip: Vec<String>,
}

/// The directory of the real data sets, which the real-data rows need.
fn data_dir(args: &TableArgs) -> Result<&Path> {
    args.data.as_deref().context(
        "--data DIR is needed for the real-data rows: the directory of breast_cancer.csv and \
         winequality_red.csv",
    )
}

/// Runs `privlogit reproduce`.
pub fn run(args: ReproduceArgs) -> Result<()> {
    match args.what {
        Target::Table51(args) => table_5_1(args),
        Target::Fig52(a) => wrote(chapter5_figures::fig_5_2(&a.out)?),
        Target::Fig53(a) => wrote(chapter5_figures::fig_5_3(&a.out)?),
        Target::Fig54(a) => wrote(chapter5_figures::fig_5_4(&a.out)?),
        Target::Fig55(a) => {
            if !(a.rows_scale > 0.0 && a.rows_scale <= 1.0) {
                bail!("--rows-scale must be in (0, 1] (got {})", a.rows_scale);
            }
            wrote(chapter5_figures::fig_5_5(&a.out, a.rows_scale, a.seed)?)
        }
    }
}

fn wrote(paths: [PathBuf; 2]) -> Result<()> {
    eprintln!("wrote {} and {}", paths[0].display(), paths[1].display());
    Ok(())
}

/// The data of one row, dealt to the Nodes: raw features (the study adds the intercept and,
/// for real data, standardises with pooled statistics).
struct RowData {
    sources: Vec<Arc<dyn RowSource>>,
    standardize: bool,
    rows: usize,
    features: usize,
}

fn row_data(row: &Row, args: &TableArgs) -> Result<Option<RowData>> {
    match row.source {
        Source::Unavailable => Ok(None),
        Source::Simulated { rows, features } => {
            let rows = ((rows as f64) * args.rows_scale).round().max(1.0) as usize;
            let sim = Simulation::new(rows, features, args.seed).map_err(|e| anyhow!(e))?;
            let sources = sim
                .parts(args.parties)
                .map_err(|e| anyhow!(e))?
                .into_iter()
                .map(|part| Arc::new(part) as Arc<dyn RowSource>)
                .collect();
            Ok(Some(RowData {
                sources,
                standardize: false,
                rows,
                features,
            }))
        }
        Source::Shared { file, label } => {
            let path = data_dir(args)?.join(file);
            if !path.exists() {
                eprintln!("{}: {} not found, row skipped", row.name, path.display());
                return Ok(None);
            }
            let whole = data::load(&path, &LoadOptions::new(label))?.data;
            let (rows, features) = (whole.rows(), whole.names.len());
            let sources = partition::split_contiguous(&whole, args.parties)?
                .into_iter()
                .map(|d| {
                    let rows =
                        privlogit::protocols::rows::MemoryRows::new(d.x, d.y).with_names(d.names);
                    Arc::new(rows) as Arc<dyn RowSource>
                })
                .collect();
            Ok(Some(RowData {
                sources,
                standardize: true,
                rows,
                features,
            }))
        }
    }
}

/// The plaintext parties of a row: the same design the secure study forms (intercept first;
/// pooled z-scores for real data, computed here in the clear).
fn plaintext_parties(data: &RowData, args: &TableArgs, row: &Row) -> Result<Vec<PartyData>> {
    if !data.standardize {
        return Ok(data
            .sources
            .iter()
            .map(|raw| PartyData::from_source(Arc::new(DesignRows::new(raw.clone(), true))))
            .collect());
    }
    let Source::Shared { file, label } = row.source else {
        bail!("only real data is standardised");
    };
    let whole = data::load(&data_dir(args)?.join(file), &LoadOptions::new(label))?.data;
    let parts = partition::split_contiguous(&whole, args.parties)?;
    let prepared = fit::prepare(
        parts,
        Preparation {
            standardize: true,
            intercept: true,
        },
    )?;
    Ok(prepared.parties)
}

/// What is left, from the paper's seconds scaled by how fast our finished secure runs were
/// against theirs (the median ratio); cells the paper has no time for are not counted.
struct Estimate {
    ratios: Vec<f64>,
}

impl Estimate {
    fn left(&self, cells: &[f64]) -> Option<f64> {
        if self.ratios.is_empty() || cells.is_empty() {
            return None;
        }
        let mut r = self.ratios.clone();
        r.sort_by(f64::total_cmp);
        Some(r[r.len() / 2] * cells.iter().sum::<f64>())
    }
}

fn paper_seconds(p: Option<Published>, run: Run) -> Option<f64> {
    let p = p?;
    match run {
        Run::SecureNewton => p.newton_seconds,
        Run::SecureHessian => p.hessian_seconds,
        Run::SecureLocal => p.local_seconds,
        _ => None,
    }
}

fn hours(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

fn table_5_1(args: TableArgs) -> Result<()> {
    if !(args.rows_scale > 0.0 && args.rows_scale <= 1.0) {
        bail!("--rows-scale must be in (0, 1] (got {})", args.rows_scale);
    }
    if args.parties == 0 {
        bail!("--parties must be at least 1 (the paper's studies have 5 Nodes)");
    }
    // The results directory is made (and so checked) before the first run, which at the
    // paper's sizes takes minutes: an --out that cannot take them fails now, not after it.
    let runs = args.out.join("runs");
    std::fs::create_dir_all(&runs).with_context(|| {
        format!(
            "--out {}: cannot create {}",
            args.out.display(),
            runs.display()
        )
    })?;
    privlogit::output::check_writable(&args.out.join("table_5_1.md"))
        .with_context(|| format!("--out {}: cannot write there", args.out.display()))?;
    let skip: Vec<Run> = args
        .skip
        .iter()
        .map(|name| {
            Run::ALL
                .into_iter()
                .find(|r| r.name() == name)
                .ok_or_else(|| {
                    let names: Vec<_> = Run::ALL.iter().map(|r| r.name()).collect();
                    anyhow!("--skip {name}: no such run (runs: {})", names.join(", "))
                })
        })
        .collect::<Result<_>>()?;
    for name in &args.only {
        if !TABLE_5_1.iter().any(|r| r.name.eq_ignore_ascii_case(name)) {
            let names: Vec<_> = TABLE_5_1.iter().map(|r| r.name).collect();
            bail!("--only {name}: no such row (rows: {})", names.join(", "));
        }
    }
    let selected: Vec<&Row> = TABLE_5_1
        .iter()
        .filter(|r| {
            args.only.is_empty() || args.only.iter().any(|n| r.name.eq_ignore_ascii_case(n))
        })
        .collect();
    let machine = machine();
    let start = Instant::now();
    let mut estimate = Estimate { ratios: Vec::new() };
    for (k, row) in selected.iter().enumerate() {
        let Some(data) = row_data(row, &args)? else {
            eprintln!(
                "[{}/{}] {}: no data, nothing to run",
                k + 1,
                selected.len(),
                row.name
            );
            continue;
        };
        let mut plaintext: Option<Vec<PartyData>> = None;
        for run in Run::ALL {
            if skip.contains(&run) {
                continue;
            }
            let path = record::path(&args.out, row.name, run);
            let earlier = if args.resume {
                record::load(&path)?
            } else {
                None
            };
            if let Some(done) = earlier {
                if done.rows == data.rows && done.parties == args.parties {
                    if let Some(p) = paper_seconds(row.paper.map(|(_, p)| p), run) {
                        estimate.ratios.push(done.seconds / p);
                    }
                    eprintln!(
                        "[{}/{}] {} {}: done earlier, skipped",
                        k + 1,
                        selected.len(),
                        row.name,
                        run.name()
                    );
                    continue;
                }
                eprintln!(
                    "{}: written for {} rows in {} parties, rerunning",
                    path.display(),
                    done.rows,
                    done.parties
                );
            }
            let left = remaining_paper_seconds(&selected[k..], run, &skip);
            eprintln!(
                "[{}/{}] {} ({} x {}, {} Nodes) {} ... elapsed {}{}",
                k + 1,
                selected.len(),
                row.name,
                data.rows,
                data.features,
                args.parties,
                run.name(),
                hours(start.elapsed().as_secs_f64()),
                estimate
                    .left(&left)
                    .map_or(String::new(), |s| format!(", about {} left", hours(s)))
            );
            if plaintext.is_none() {
                plaintext = Some(plaintext_parties(&data, &args, row)?);
            }
            let parties = plaintext.as_ref().expect("formed above");
            let rec = run_one(row, run, &data, parties, &args, &machine)?;
            if let Some(p) = paper_seconds(row.paper.map(|(_, p)| p), run) {
                estimate.ratios.push(rec.seconds / p);
            }
            eprintln!(
                "    {} iterations, {:.2} s{}",
                rec.iterations,
                rec.seconds,
                rec.max_abs_diff_to_plaintext
                    .map_or(String::new(), |d| format!(
                        ", max diff to plaintext {d:.1e}"
                    ))
            );
            record::save(&path, &rec)?;
        }
    }
    write_tables(&args.out, &machine)?;
    Ok(())
}

fn run_is_secure(run: Run) -> bool {
    matches!(
        run,
        Run::SecureNewton | Run::SecureHessian | Run::SecureLocal
    )
}

/// The paper's seconds of the secure runs still to do, from `run` of the first row on.
fn remaining_paper_seconds(rows: &[&Row], from: Run, skip: &[Run]) -> Vec<f64> {
    let mut cells = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        for run in Run::ALL {
            let pending = i > 0
                || Run::ALL.iter().position(|r| *r == run)
                    >= Run::ALL.iter().position(|r| *r == from);
            if pending && !skip.contains(&run) && row.source != Source::Unavailable {
                cells.extend(paper_seconds(row.paper.map(|(_, p)| p), run));
            }
        }
    }
    cells
}

fn optimizer_of(run: Run) -> Optimizer {
    match run {
        Run::PlaintextNewton | Run::SecureNewton => Optimizer::Newton,
        Run::PlaintextAccelerated => Optimizer::AcceleratedPrivLogit {
            memory: DEFAULT_ANDERSON_MEMORY,
        },
        _ => Optimizer::PrivLogit,
    }
}

fn run_one(
    row: &Row,
    run: Run,
    data: &RowData,
    parties: &[PartyData],
    args: &TableArgs,
    machine: &str,
) -> Result<Record> {
    let options = FitOptions::new().lambda(1.0);
    let optimizer = optimizer_of(run);
    let progress_start = Instant::now();
    let mut observer = |r: &privlogit::protocols::IterationRecord| {
        if r.iteration.is_multiple_of(10) {
            eprintln!(
                "    iteration {} ({:.0} s)",
                r.iteration,
                progress_start.elapsed().as_secs_f64()
            );
        }
    };
    let base = |report: &FitReport, seconds: f64, setup: f64| Record {
        row: row.name.to_string(),
        run,
        rows: data.rows,
        features: data.features,
        parties: args.parties,
        rows_scale: args.rows_scale,
        key_bits: 2048,
        linear_algebra: None,
        status: report.status.name().to_string(),
        iterations: report.iterations,
        rounds: report.rounds,
        seconds,
        setup_seconds: setup,
        max_abs_diff_to_plaintext: None,
        coefficients: report.beta.to_vec(),
        breakdown: None,
        peak_resident_bytes: peak_resident_bytes(),
        machine: machine.to_string(),
    };
    if !run_is_secure(run) {
        let start = Instant::now();
        let report = optimizer
            .fit(
                &mut PlaintextAggregation::new(parties),
                &options,
                &mut observer,
            )
            .map_err(|e| anyhow!("{} {}: {e}", row.name, run.name()))?;
        return Ok(base(&report, start.elapsed().as_secs_f64(), 0.0));
    }
    let protocol = match run {
        Run::SecureNewton => Protocol::Newton,
        Run::SecureHessian => Protocol::Hessian,
        _ => Protocol::Local,
    };
    let plan = StudyPlan {
        standardize: data.standardize,
        ..timed_plan(protocol, optimizer, options.clone(), args.parties)
    };
    let nodes = data
        .sources
        .iter()
        .map(|raw| (raw.names(), NodeData::from_source(raw.clone(), true)))
        .collect();
    let inprocess::StudyRun {
        outcome,
        keyholder,
        nodes,
    } = inprocess::run_study(
        inprocess::loopback_pair,
        nodes,
        &plan,
        |_| -> Result<_, SecureError> {
            Ok(KeyPair::generate(KeySize::Bits2048, &mut rand::rng()).secret)
        },
        &mut observer,
        None,
        inprocess::Products::Paillier,
    )
    .map_err(|e| anyhow!("{} {}: {e}", row.name, run.name()))?;
    let mut rec = base(&outcome.fit, outcome.seconds, outcome.setup_seconds);
    rec.linear_algebra = Some(outcome.aggregator.linear_algebra.to_string());
    let plain_run = if protocol == Protocol::Newton {
        Run::PlaintextNewton
    } else {
        Run::PlaintextPrivlogit
    };
    if let Some(plain) = record::load(&record::path(&args.out, row.name, plain_run))? {
        rec.max_abs_diff_to_plaintext = Some(
            plain
                .coefficients
                .iter()
                .zip(outcome.fit.beta.iter())
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max),
        );
    }
    let a = &outcome.aggregator;
    rec.breakdown = Some(Breakdown {
        node_plaintext_seconds: nodes.iter().map(|n| n.local_seconds).sum(),
        node_paillier_seconds: nodes.iter().map(|n| n.paillier_seconds).sum(),
        keyholder_paillier_seconds: keyholder.paillier_seconds + keyholder.masked.paillier_seconds,
        masked_seconds: a.solver.masked_seconds,
        circuit_seconds: a.gc_seconds,
        waiting_for_nodes_seconds: a.node_wait_seconds,
    });
    Ok(rec)
}

/// Rebuilds `table_5_1.csv` and `table_5_1.md` from every run record under `out`.
fn write_tables(out: &Path, machine: &str) -> Result<()> {
    let mut results = Vec::new();
    for row in &TABLE_5_1 {
        let mut records = Vec::new();
        for run in Run::ALL {
            if let Some(r) = record::load(&record::path(out, row.name, run))? {
                records.push(r);
            }
        }
        results.push(table_5_1::RowResults { row, records });
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for (name, text) in [
        ("table_5_1.csv", table_5_1::csv(&results)),
        ("table_5_1.md", table_5_1::markdown(&results, machine)),
    ] {
        let path = out.join(name);
        privlogit::output::write_text(&path, &text)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
