//! Figures 5.2 to 5.5 of the dissertation, drawn from our Table 5.1 run records (5.2-5.4) or
//! from fresh plaintext fits (5.5), as SVG and PNG under `results/paper/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::figures::{Bars, Chart, Corner, Mark, Series};
use anyhow::{Result, anyhow};
use privlogit::protocols::rows::{DesignRows, RowSource};
use privlogit::protocols::{FitOptions, Initial, Optimizer, PartyData, PlaintextAggregation};
use privlogit::synthetic::Simulation;

use super::paper::{Row, Source, TABLE_5_1};
use super::record::{self, Record, Run};

/// Every row's records, rows without any left out.
fn rows_with_records(out: &Path) -> Result<Vec<(&'static Row, Vec<Record>)>> {
    let mut rows = Vec::new();
    for row in &TABLE_5_1 {
        let mut records = Vec::new();
        for run in Run::ALL {
            if let Some(r) = record::load(&record::path(out, row.name, run))? {
                records.push(r);
            }
        }
        if !records.is_empty() {
            rows.push((row, records));
        }
    }
    if rows.is_empty() {
        return Err(anyhow!(
            "no Table 5.1 runs under {} (run `privlogit reproduce table-5.1` first)",
            out.display()
        ));
    }
    Ok(rows)
}

fn find(records: &[Record], run: Run) -> Option<&Record> {
    records.iter().find(|r| r.run == run)
}

/// Figure 5.2: every secure PrivLogit coefficient (Hessian and Local) against plaintext
/// Newton's, one colour per data set, with the line y = x.
pub fn fig_5_2(out: &Path) -> Result<[PathBuf; 2]> {
    let mut series = Vec::new();
    for (row, records) in rows_with_records(out)? {
        let Some(newton) = find(&records, Run::PlaintextNewton) else {
            continue;
        };
        let mut points = Vec::new();
        for run in [Run::SecureHessian, Run::SecureLocal] {
            if let Some(r) = find(&records, run) {
                points.extend(
                    newton
                        .coefficients
                        .iter()
                        .copied()
                        .zip(r.coefficients.iter().copied()),
                );
            }
        }
        if !points.is_empty() {
            series.push(Series {
                name: row.name.to_string(),
                points,
                errors: None,
                mark: Mark::Points,
            });
        }
    }
    let chart = Chart {
        title: "Fig. 5.2: secure PrivLogit (Hessian, Local) vs plaintext Newton coefficients"
            .into(),
        x_title: "plaintext Newton coefficient".into(),
        y_title: "secure PrivLogit coefficient".into(),
        x_labels: None,
        log_y: false,
        y_limits: None,
        identity_line: true,
        legend: Corner::UpperLeft,
        series,
    };
    Ok(chart.save(&out.join("fig_5_2"))?)
}

fn categories(rows: &[(&'static Row, Vec<Record>)]) -> Vec<String> {
    rows.iter().map(|(r, _)| r.name.to_string()).collect()
}

/// Figure 5.3: iterations per data set, Newton vs PrivLogit vs accelerated PrivLogit (ours),
/// with the paper's Newton and PrivLogit counts beside.
pub fn fig_5_3(out: &Path) -> Result<[PathBuf; 2]> {
    let rows = rows_with_records(out)?;
    let ours = |run| -> Vec<Option<f64>> {
        rows.iter()
            .map(|(_, rec)| find(rec, run).map(|r| r.iterations as f64))
            .collect()
    };
    let paper = |f: fn(&super::paper::Published) -> usize| -> Vec<Option<f64>> {
        rows.iter()
            .map(|(row, _)| row.paper.map(|(_, p)| f(&p) as f64))
            .collect()
    };
    let bars = Bars {
        title: "Fig. 5.3: iterations to converge (relative change of the likelihood < 1e-6)".into(),
        y_title: "iterations (log scale)".into(),
        categories: categories(&rows),
        series: vec![
            ("Newton".into(), ours(Run::PlaintextNewton)),
            ("PrivLogit".into(), ours(Run::PlaintextPrivlogit)),
            (
                "accelerated PrivLogit".into(),
                ours(Run::PlaintextAccelerated),
            ),
            ("paper: Newton".into(), paper(|p| p.newton_iterations)),
            ("paper: PrivLogit".into(), paper(|p| p.privlogit_iterations)),
        ],
        reference: None,
        log_y: true,
    };
    Ok(bars.save(&out.join("fig_5_3"))?)
}

/// Figure 5.4: speed-up of secure PrivLogit-Hessian and -Local over secure Newton per data set
/// (ours and the paper's), with the line y = 1.
pub fn fig_5_4(out: &Path) -> Result<[PathBuf; 2]> {
    let rows = rows_with_records(out)?;
    let ours = |run| -> Vec<Option<f64>> {
        rows.iter()
            .map(|(_, rec)| {
                let newton = find(rec, Run::SecureNewton)?.seconds;
                Some(newton / find(rec, run)?.seconds)
            })
            .collect()
    };
    let paper = |f: fn(&super::paper::Published) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter()
            .map(|(row, _)| {
                let p = row.paper?.1;
                Some(p.newton_seconds? / f(&p)?)
            })
            .collect()
    };
    let bars = Bars {
        title: "Fig. 5.4: speed-up over secure Newton (the y = 1 line)".into(),
        y_title: "secure Newton seconds / protocol seconds (log scale)".into(),
        categories: categories(&rows),
        series: vec![
            ("PrivLogit-Hessian".into(), ours(Run::SecureHessian)),
            ("PrivLogit-Local".into(), ours(Run::SecureLocal)),
            ("paper: Hessian".into(), paper(|p| p.hessian_seconds)),
            ("paper: Local".into(), paper(|p| p.local_seconds)),
        ],
        reference: Some(1.0),
        log_y: true,
    };
    Ok(bars.save(&out.join("fig_5_4"))?)
}

/// Figure 5.5: Euclidean distance of each iterate to the optimum (Newton from zero, run to a
/// gradient norm of 1e-10) on SimuX50 in 5 Nodes, from every coefficient = 0.8, 1, 1.5 and 2;
/// Newton stops at the first iteration whose objective falls (divergence detected).
pub fn fig_5_5(out: &Path, rows_scale: f64, seed: u64) -> Result<[PathBuf; 2]> {
    let Some(Source::Simulated { rows, features }) = TABLE_5_1
        .iter()
        .find(|r| r.name == "SimuX50")
        .map(|r| r.source)
    else {
        return Err(anyhow!("Table 5.1 has no SimuX50 row"));
    };
    let rows = ((rows as f64) * rows_scale).round().max(5.0) as usize;
    let parties: Vec<PartyData> = Simulation::new(rows, features, seed)
        .and_then(|sim| sim.parts(5))
        .map_err(|e| anyhow!(e))?
        .into_iter()
        .map(|part| {
            let raw: Arc<dyn RowSource> = Arc::new(part);
            PartyData::from_source(Arc::new(DesignRows::new(raw, true)))
        })
        .collect();
    let fit = |optimizer: Optimizer, options: &FitOptions| -> Result<Vec<ndarray::Array1<f64>>> {
        let mut iterates = vec![options.initial_beta(features + 1)?];
        optimizer
            .fit(
                &mut PlaintextAggregation::new(&parties),
                options,
                &mut |r| iterates.push(r.beta.clone()),
            )
            .map_err(|e| anyhow!("{optimizer}: {e}"))?;
        Ok(iterates)
    };
    eprintln!("fig-5.5: SimuX50 ({rows} x {features}), the optimum ...");
    let optimum = fit(
        Optimizer::Newton,
        &FitOptions::new()
            .lambda(1.0)
            .relative_tolerance(0.0)
            .gradient_tolerance(Some(1e-10)),
    )?
    .pop()
    .expect("at least the start");
    let mut series = Vec::new();
    for optimizer in [Optimizer::Newton, Optimizer::PrivLogit] {
        for start in [0.8, 1.0, 1.5, 2.0] {
            eprintln!("fig-5.5: {optimizer} from {start} ...");
            let options = FitOptions::new()
                .lambda(1.0)
                .initial(Initial::Constant(start));
            let points = fit(optimizer, &options)?
                .iter()
                .enumerate()
                .map(|(k, b)| (k as f64, (b - &optimum).mapv(|v| v * v).sum().sqrt()))
                .collect();
            series.push(Series {
                name: format!("{optimizer}, start {start}"),
                points,
                errors: None,
                mark: Mark::Line,
            });
        }
    }
    let chart = Chart {
        title: format!(
            "Fig. 5.5: distance to the optimum by iteration, SimuX50 ({rows} x {features}), 5 Nodes"
        ),
        x_title: "iteration".into(),
        y_title: "Euclidean distance to the optimum (log scale)".into(),
        x_labels: None,
        log_y: true,
        y_limits: None,
        identity_line: false,
        legend: Corner::UpperRight,
        series,
    };
    Ok(chart.save(&out.join("fig_5_5"))?)
}
