//! `privlogit bench node`: one Node's per-round work on streamed rows (the simulation regenerated
//! chunk by chunk, or a data file read chunk by chunk), pass by pass, with the process's peak
//! resident memory: the figures behind "a Node's memory is bounded by the chunk size and p^2".

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, anyhow};
use clap::Args;
use ndarray::Array1;
use privlogit::protocols::PartyData;
use privlogit::protocols::rows::blocks::for_each_block;
use privlogit::protocols::rows::{DesignRows, RowSource};
use privlogit::synthetic::Simulation;
use serde::Serialize;

use crate::bench::machine::{machine, median};

/// Arguments of `privlogit bench node`.
#[derive(Debug, Args)]
pub struct NodeBenchArgs {
    /// Rows of the Node's simulated data (SimuX400 in 5 Nodes: 10,000,000 x 400 each).
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    rows: usize,
    /// Features (an intercept is added).
    #[arg(long, value_name = "P", default_value_t = 50)]
    features: usize,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Timed runs of each pass (the median is reported).
    #[arg(long, default_value_t = 3, value_parser = super::at_least_one)]
    runs: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Pass {
    name: &'static str,
    seconds: f64,
    min_seconds: f64,
    max_seconds: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    machine: String,
    rows: usize,
    columns: usize,
    passes: Vec<Pass>,
    peak_resident_bytes: Option<u64>,
    data_bytes_as_f64: u64,
}

/// Runs `privlogit bench node`.
pub fn run(args: NodeBenchArgs) -> Result<()> {
    // One Node's sums hold a p x p information matrix per thread: a study's largest p.
    let most = privlogit::protocols::secure::MAX_DIMENSION;
    if args.features > most {
        anyhow::bail!(
            "--features {}: at most {most} (the most coefficients a study takes)",
            args.features
        );
    }
    let sim = Simulation::new(args.rows, args.features, args.seed).map_err(|e| anyhow!(e))?;
    let raw: Arc<dyn RowSource> = Arc::new(sim.source());
    let party = PartyData::from_source(Arc::new(DesignRows::new(raw.clone(), true)));
    let p = party.columns();
    let beta = Array1::from_shape_fn(p, |j| 0.01 * ((j % 7) as f64 - 3.0));
    let runs = args.runs.max(1);
    let mut passes = Vec::new();
    let mut time = |name: &'static str, work: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        eprintln!("{name} ...");
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            let start = Instant::now();
            work()?;
            samples.push(start.elapsed().as_secs_f64());
        }
        passes.push(Pass {
            name,
            seconds: median(&samples),
            min_seconds: samples.iter().copied().fold(f64::INFINITY, f64::min),
            max_seconds: samples.iter().copied().fold(0.0, f64::max),
        });
        Ok(())
    };
    time("rows only (regenerated)", &mut || {
        let mut count = 0usize;
        for_each_block(party.source().as_ref(), |_, y| y.len(), |n| count += n)?;
        anyhow::ensure!(count == args.rows, "read {count} rows");
        Ok(())
    })?;
    time("gradient and log-likelihood", &mut || {
        party.gradient_sums(&beta)?;
        Ok(())
    })?;
    time("bound X^T X / 4", &mut || {
        party.information_bound_sums()?;
        Ok(())
    })?;
    time("information X^T A X", &mut || {
        party.information_sums(&beta)?;
        Ok(())
    })?;
    let report = Report {
        machine: machine(),
        rows: args.rows,
        columns: p,
        passes,
        peak_resident_bytes: peak_resident_bytes(),
        data_bytes_as_f64: (args.rows * (p + 1) * 8) as u64,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "one Node, {} rows x {} columns (intercept included), simulated and regenerated per pass; {}",
        report.rows, report.columns, report.machine
    );
    println!(
        "{:<30} {:>10} {:>21} {:>12}",
        "pass", "median s", "range s", "rows / s"
    );
    for pass in &report.passes {
        println!(
            "{:<30} {:>10.2} {:>10.2} - {:<8.2} {:>12.3e}",
            pass.name,
            pass.seconds,
            pass.min_seconds,
            pass.max_seconds,
            report.rows as f64 / pass.seconds
        );
    }
    if let Some(peak) = report.peak_resident_bytes {
        println!(
            "peak resident memory {:.1} MB (the rows as f64 would take {:.1} GB)",
            peak as f64 / 1e6,
            report.data_bytes_as_f64 as f64 / 1e9
        );
    }
    Ok(())
}

/// The process's peak resident set (`VmHWM` in `/proc/self/status`), where Linux reports it.
pub(crate) fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
