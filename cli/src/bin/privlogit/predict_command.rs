//! `privlogit predict`: a model file applied to rows, one probability (or mean) per row.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use privlogit::jobs::prediction;

use crate::outcome::Outcome;

/// Arguments of `privlogit predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The model: the JSON of `fit --json`, `study --json`, an aggregator's `--out` (a
    /// standardised model is applied in raw units, with its pooled statistics) or a DP release
    /// (`dp fit --out`).
    #[arg(long, value_name = "FILE")]
    model: PathBuf,
    /// The rows to score (CSV, binary table or Parquet), with the model's features as columns
    /// (by name; other columns are left out).
    #[arg(long, value_name = "FILE")]
    data: PathBuf,
    /// The file's 0/1 label column, if it has one (the AUC and accuracy are then reported on
    /// standard error). A CSV file without one is read unlabelled.
    #[arg(long, value_name = "COLUMN")]
    label: Option<String>,
    /// Write the predictions (CSV: a `probability` column, `mean` for a Gaussian or Poisson
    /// model, and `label` when known) here, atomically, instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Runs `privlogit predict`.
pub fn run(args: PredictArgs) -> Result<Outcome> {
    let model = prediction::read_model(&args.model)?;
    if let Some(why) = model.caution() {
        eprintln!("warning: {}: {why}", args.model.display());
    }
    // The rows are read whole before the output is written, but an output over its own input
    // would replace the data with the scores.
    if let Some(out) = &args.out
        && same_file(out, &args.data)
    {
        anyhow::bail!(
            "--out {} is the --data file: the scores would replace the rows",
            out.display()
        );
    }
    let scores = prediction::score_file(&model, &args.data, args.label.as_deref())?;
    let mut text = String::from(scores.kind);
    text.push_str(if scores.labels.is_some() {
        ",label\n"
    } else {
        "\n"
    });
    for (i, p) in scores.probabilities.iter().enumerate() {
        match &scores.labels {
            Some(y) => writeln!(text, "{p},{}", y[i])?,
            None => writeln!(text, "{p}")?,
        }
    }
    crate::study_commands::write_out(args.out.as_deref(), &text)?;
    if let (Some(y), "probability") = (&scores.labels, scores.kind) {
        let p = ndarray::Array1::from(scores.probabilities.clone());
        let y = ndarray::Array1::from(y.clone());
        let auc = privlogit::metrics::auc(p.view(), y.view());
        eprintln!(
            "{} rows: AUC {}, accuracy {:.6}",
            p.len(),
            auc.map_or("n/a (one class)".to_string(), |a| format!("{a:.6}")),
            privlogit::metrics::accuracy(p.view(), y.view())
        );
    }
    Ok(Outcome::Success)
}

/// True when `a` and `b` name one existing file (links and relative paths resolved).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
