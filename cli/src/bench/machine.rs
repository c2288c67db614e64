//! Timing helpers shared by the `privlogit bench` commands.

use std::time::{Duration, Instant};

/// Median over `runs` timed batches of one call each, after one warm-up call; fast operations
/// are repeated within a batch so that a batch lasts at least 20 ms.
pub(crate) fn median_seconds(runs: usize, f: &mut (dyn FnMut() + Send)) -> f64 {
    let start = Instant::now();
    f();
    let once = start.elapsed().max(Duration::from_nanos(1));
    let per_batch =
        (Duration::from_millis(20).as_nanos() / once.as_nanos()).clamp(1, 100_000) as u32;
    let mut samples: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_batch {
                f();
            }
            start.elapsed().as_secs_f64() / f64::from(per_batch)
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

pub(crate) fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    format!("{cpu}, {cores} cores")
}

/// The median of some samples (the middle one, the upper of the two middle ones for an even
/// count).
pub(crate) fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// The options of a bench timed over several runs that prints a table or JSON.
#[derive(Debug, clap::Args)]
pub struct Timing {
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 3, value_parser = super::at_least_one)]
    runs: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

impl Timing {
    /// The runs to time (at least one).
    pub(crate) fn runs(&self) -> usize {
        self.runs.max(1)
    }

    /// Prints `report` as JSON, or else as `table` renders it.
    pub(crate) fn print<R: serde::Serialize>(
        &self,
        report: &R,
        table: impl FnOnce(&R),
    ) -> anyhow::Result<()> {
        if self.json {
            println!("{}", serde_json::to_string_pretty(report)?);
        } else {
            table(report);
        }
        Ok(())
    }
}
