//! `privlogit dp experiment dphtl`: dissertation Figures 4.2-4.5 and Tables 4.2-4.3 in
//! structure, on the MNIST substitute of `crate::experiments::dphtl_experiment`, into
//! `results/dphtl/`.

use std::path::Path;
use std::time::Instant;

macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!($($arg)*)
    };
}

use crate::experiments::dphtl_experiment::{self as ex, METHODS};
use crate::figures::{Chart, Corner, Mark, Series};
use anyhow::{Context, Result};
use privlogit::dp::mnist::Digits;
use privlogit::output;

/// Epsilons of Figures 4.2-4.3 and Tables 4.2-4.3 (`None`: infinity).
const EPSILONS: [Option<f64>; 7] = [
    Some(0.1),
    Some(0.5),
    Some(1.0),
    Some(3.0),
    Some(5.0),
    Some(10.0),
    None,
];
/// Shares of labelled target rows (Figures 4.4-4.5).
const LABELLED: [f64; 5] = [0.01, 0.02, 0.05, 0.1, 0.2];

fn eps_label(e: Option<f64>) -> String {
    e.map_or("inf".into(), |e| e.to_string())
}

/// Where the domains come from: the MNIST digits file (the substitute), or a table whose
/// `domain_column` names each row's domain and `label` its 0/1 label.
pub struct Input<'a> {
    /// The MNIST digits CSV (needed without `domains`).
    pub digits: Option<&'a Path>,
    /// A domain-labelled table instead: its path, label column and domain column.
    pub domains: Option<(&'a Path, &'a str, &'a str)>,
}

fn load(input: &Input<'_>) -> Result<ex::Domains> {
    match input.domains {
        None => {
            let digits = input
                .digits
                .context("--data FILE is needed: the MNIST digits CSV (label,px0,...,px783)")?;
            Ok(ex::Domains::digit_pairs(&Digits::load(digits)?))
        }
        Some((path, label, column)) => {
            let options = privlogit::data::LoadOptions {
                group: Some(column.to_string()),
                ..privlogit::data::LoadOptions::new(label)
            };
            let table = privlogit::data::load(path, &options)?;
            let groups = table.groups.context("the domain column was not read")?;
            Ok(ex::Domains::from_groups(
                table.data.x,
                table.data.y,
                &groups,
            ))
        }
    }
}

/// Runs the experiment.
pub fn run(input: &Input<'_>, out_dir: &Path, repeats: usize, seed: u64) -> Result<()> {
    let data = load(input)?;
    let mixtures = ex::Mixtures::for_sources(data.names.len())?;
    let started = Instant::now();
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    say!(
        "DPHTL experiment: {} sources ({}), {repeats} repeats (seeded: reproducible, not for release)",
        data.names.len(),
        data.names.join(", ")
    );

    // Figure 4.2: MSE of the hypothesis weights against the mixture, per epsilon.
    let cells: Vec<(usize, Option<f64>)> = (0..mixtures.weights.len())
        .flat_map(|m| EPSILONS.iter().map(move |&e| (m, e)))
        .collect();
    let mse = ex::over_repeats(&cells, repeats, |&(m, e), r| {
        let s = ex::setting(&data, mixtures.weights[m], seed + r as u64)?;
        let p = ex::publish(&s, e, seed + r as u64)?;
        ex::weight_mse(&s, &p, mixtures.weights[m])
    })?;
    let mut csv = String::from("mixture,epsilon,mean_mse,sd_mse,repeats\n");
    let mut series = Vec::new();
    for (m, mix) in mixtures.weights.iter().enumerate() {
        let mut stats = Vec::new();
        for &e in &EPSILONS {
            let k = cells.iter().position(|c| *c == (m, e)).expect("cell");
            let (mean, sd) = ex::mean_sd(&mse[k]);
            csv += &format!(
                "\"{mix:?}\",{},{mean:.3e},{sd:.3e},{repeats}\n",
                eps_label(e)
            );
            stats.push((mean, sd));
        }
        series.push(line_series(format!("{mix:?}"), &stats, repeats));
    }
    output::write_text(&out_dir.join("fig4_2.csv"), &csv)?;
    Chart {
        title: format!("Figure 4.2: MSE of the hypothesis weights against the true mixture ({repeats} repeats, +-1 se)"),
        x_title: "epsilon".into(),
        y_title: "MSE".into(),
        x_labels: Some(EPSILONS.iter().map(|e| eps_label(*e)).collect()),
        log_y: true,
        y_limits: None,
        identity_line: false,
        legend: Corner::UpperRight,
        series,
    }
    .save(&out_dir.join("fig4_2"))?;
    print!("{csv}");

    // Figure 4.4: accuracy against the share of labelled target rows, at epsilon 1 and 10.
    let fig_eps = [Some(1.0), Some(10.0)];
    let cells: Vec<(Option<f64>, f64)> = fig_eps
        .iter()
        .flat_map(|&e| LABELLED.iter().map(move |&l| (e, l)))
        .collect();
    let accs = ex::over_repeats(&cells, repeats, |&(e, l), r| {
        let s = ex::setting(&data, mixtures.accuracy, seed + r as u64)?;
        let p = ex::publish(&s, e, seed + r as u64)?;
        ex::accuracies(&s, &p, e, l)
    })?;
    let mut csv = String::from("epsilon,labelled,method,mean_accuracy,sd_accuracy,repeats\n");
    for &e in &fig_eps {
        let mut series = Vec::new();
        for (mi, method) in METHODS.iter().enumerate() {
            let mut stats = Vec::new();
            for &l in &LABELLED {
                let k = cells.iter().position(|c| *c == (e, l)).expect("cell");
                let v: Vec<f64> = accs[k].iter().map(|a| a[mi]).collect();
                let (mean, sd) = ex::mean_sd(&v);
                csv += &format!(
                    "{},{l},{method},{mean:.4},{sd:.4},{repeats}\n",
                    eps_label(e)
                );
                stats.push((mean, sd));
            }
            series.push(line_series(method.to_string(), &stats, repeats));
        }
        Chart {
            title: format!(
                "Figure 4.4: test accuracy, target {:?}, epsilon = {} ({repeats} repeats, +-1 se)",
                mixtures.accuracy,
                eps_label(e)
            ),
            x_title: "share of labelled target rows".into(),
            y_title: "test accuracy".into(),
            x_labels: Some(LABELLED.iter().map(|l| format!("{}", l)).collect()),
            log_y: false,
            y_limits: Some((0.4, 1.0)),
            identity_line: false,
            legend: Corner::LowerRight,
            series,
        }
        .save(&out_dir.join(format!("fig4_4_eps{}", eps_label(e))))?;
    }
    output::write_text(&out_dir.join("fig4_4.csv"), &csv)?;

    // Table 4.3: 5 % labelled, three mixtures, each epsilon.
    let cells: Vec<(usize, Option<f64>)> = (0..mixtures.table.len())
        .flat_map(|m| EPSILONS.iter().map(move |&e| (m, e)))
        .collect();
    let accs = ex::over_repeats(&cells, repeats, |&(m, e), r| {
        let s = ex::setting(&data, mixtures.table[m], seed + r as u64)?;
        let p = ex::publish(&s, e, seed + r as u64)?;
        ex::accuracies(&s, &p, e, 0.05)
    })?;
    let mut csv = String::from("mixture,epsilon");
    for m in METHODS {
        csv += &format!(",{m},{m}_sd");
    }
    csv += "\n";
    let mut md = format!(
        "| epsilon | {} |\n|---|{}\n",
        METHODS.join(" | "),
        "---|".repeat(METHODS.len())
    );
    for (m, mix) in mixtures.table.iter().enumerate() {
        md += &format!(
            "| **Target mixture {}: {mix:?}** |{}\n",
            m + 1,
            " |".repeat(METHODS.len())
        );
        for &e in &EPSILONS {
            let k = cells.iter().position(|c| *c == (m, e)).expect("cell");
            csv += &format!("\"{mix:?}\",{}", eps_label(e));
            md += &format!("| {} |", eps_label(e));
            for mi in 0..METHODS.len() {
                let v: Vec<f64> = accs[k].iter().map(|a| a[mi]).collect();
                let (mean, sd) = ex::mean_sd(&v);
                csv += &format!(",{mean:.4},{sd:.4}");
                md += &format!(" {mean:.3} ({sd:.2}) |");
            }
            csv += "\n";
            md += "\n";
        }
    }
    output::write_text(&out_dir.join("table4_3.csv"), &csv)?;
    output::write_text(&out_dir.join("table4_3.md"), &md)?;
    print!("{md}");
    say!(
        "wrote {}/fig4_2.*, fig4_4*, table4_3.* in {:.0} s",
        out_dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A figure's line through `(mean, sd)` at positions 0, 1, ..., with error bars of one
/// standard error over `repeats`.
fn line_series(name: String, stats: &[(f64, f64)], repeats: usize) -> Series {
    Series {
        name,
        points: stats
            .iter()
            .enumerate()
            .map(|(i, &(mean, _))| (i as f64, mean))
            .collect(),
        errors: Some(
            stats
                .iter()
                .map(|&(_, sd)| sd / (repeats as f64).sqrt())
                .collect(),
        ),
        mark: Mark::Line,
    }
}
