//! `privlogit simulate`: write a SimuX-style data set, CSV or binary, in chunks.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use privlogit::data::binary;
use privlogit::output;
use privlogit::synthetic::{self, LABEL, Simulation};

use crate::outcome::Outcome;

/// Arguments of `privlogit simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Number of rows.
    #[arg(long, value_name = "N")]
    rows: usize,
    /// Number of features.
    #[arg(long, value_name = "P")]
    features: usize,
    /// Seed; the same seed gives the same data on every machine.
    #[arg(long, value_name = "S")]
    seed: u64,
    /// Standard deviation of the linear predictor x^T beta (signal strength).
    #[arg(long, value_name = "S", default_value_t = synthetic::DEFAULT_SIGNAL, allow_negative_numbers = true)]
    signal: f64,
    /// Output file (written atomically).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// csv or binary; default: binary for a .plb file, csv otherwise.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Also write the true coefficients as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    truth: Option<PathBuf>,
}

/// Output format of `simulate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Header row, then comma-separated values; label column `y`.
    Csv,
    /// The privlogit binary table (see `privlogit::data::binary`).
    Binary,
}

pub fn run(args: SimulateArgs) -> Result<Outcome> {
    let sim = Simulation::new(args.rows, args.features, args.seed)
        .and_then(|s| s.signal(args.signal))
        .map_err(anyhow::Error::msg)?;
    let format = args
        .format
        .unwrap_or(if args.out.extension().is_some_and(|e| e == "plb") {
            Format::Binary
        } else {
            Format::Csv
        });
    let bar = ProgressBar::new(sim.rows() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} rows ({eta} left)")
            .expect("valid template"),
    );
    let names = sim.feature_names();
    let data = output::Staged::write(&args.out, |out| match format {
        Format::Csv => {
            writeln!(out, "{},{LABEL}", names.join(","))?;
            sim.write(out, synthetic::encode_csv, |done| {
                bar.set_position(done as u64)
            })
        }
        Format::Binary => {
            binary::write_header(out, &names, LABEL, sim.rows() as u64)?;
            sim.write(
                out,
                |x, y| {
                    let mut buf = Vec::new();
                    binary::write_rows(&mut buf, x, y).expect("writing to memory cannot fail");
                    buf
                },
                |done| bar.set_position(done as u64),
            )
        }
    })
    .with_context(|| format!("cannot write {}", args.out.display()))?;
    bar.finish_and_clear();

    // Both files are staged before either is moved into place: a failure leaves neither.
    let truth = match &args.truth {
        Some(path) => {
            let truth = serde_json::json!({
                "rows": args.rows,
                "features": args.features,
                "seed": args.seed,
                "signal": args.signal,
                "names": names,
                "coefficients": sim.coefficients().to_vec(),
            });
            let text = format!("{truth:#}\n");
            let staged = output::Staged::write(path, |out| out.write_all(text.as_bytes()))
                .with_context(|| format!("cannot write {}", path.display()))?;
            Some((staged, path))
        }
        None => None,
    };
    data.commit()
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    if let Some((staged, path)) = truth {
        staged
            .commit()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!(
        "wrote {} rows x {} features to {}",
        args.rows,
        args.features,
        args.out.display()
    );
    Ok(Outcome::Success)
}
