//! `privlogit bench vertical`: a vertical study's two parts on this machine. The private set
//! intersection of `--ids` identifiers per party (a `--shared` fraction common to all), every
//! role in one process, checked against the plain intersection; then, unless `--rows 0`, a
//! secure vertical fit of simulated rows (`--rows x --features`, split evenly over the parties,
//! the first with the labels) for at most `--iterations` accelerated PrivLogit iterations
//! (stopping by `--gradient-tol`), with where the time goes (the circuit, the rest of the
//! rounds and the solver).

use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use ndarray::{Array1, Array2};
use privlogit_protocols::paillier::{KeyPair, KeySize};
use privlogit_protocols::secure::vertical_roles::{
    VerticalTable, plan as vertical_plan, run_in_process,
};
use privlogit_protocols::vertical::psi;
use privlogit_protocols::{FitOptions, Optimizer, PartyData, PlaintextAggregation};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::Serialize;

use crate::bench::machine::{Timing, machine, median};

/// Arguments of `privlogit bench vertical`.
#[derive(Debug, Args)]
pub struct VerticalBenchArgs {
    /// Identifiers per party for the intersection.
    #[arg(long, default_value_t = 1_000_000)]
    ids: usize,
    /// Parties.
    #[arg(long, default_value_t = 2)]
    parties: usize,
    /// Fraction of each party's identifiers that every party holds.
    #[arg(long, default_value_t = 0.5)]
    shared: f64,
    /// Rows of the secure fit (0: the intersection only).
    #[arg(long, default_value_t = 0)]
    rows: usize,
    /// Features of the secure fit (split over the parties; the first also has the intercept).
    #[arg(long, default_value_t = 6)]
    features: usize,
    /// Most iterations of the secure fit.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Stop the secure fit when the penalised gradient's norm falls below this (as a study's
    /// `--gradient-tol`, raised to the circuit's floor); 0 runs all `--iterations`.
    #[arg(long, default_value_t = 1e-6)]
    gradient_tol: f64,
    /// The intersection's runs (the secure fit runs once) and the output.
    #[command(flatten)]
    timing: Timing,
}

#[derive(Serialize)]
struct Report {
    machine: String,
    ids_per_party: usize,
    parties: usize,
    intersection: usize,
    psi_seconds: f64,
    bytes_to_aggregator: usize,
    fit: Option<FitReport>,
}

#[derive(Serialize)]
struct FitReport {
    rows: usize,
    features: usize,
    iterations: usize,
    /// The same rows pooled in the clear, the same options.
    plaintext_iterations: usize,
    max_abs_diff_to_plaintext: f64,
    status: String,
    gradient_tolerance: Option<f64>,
    /// Rounds (logistic circuits) the fit ran, beside the bound's.
    rounds: usize,
    seconds: f64,
    /// From the first message to the first iteration: the intersection, the key pair, the
    /// deal, the bound and its factor.
    setup_seconds: f64,
    seconds_per_iteration: f64,
    and_gates: u64,
    circuit_seconds: f64,
    solver_seconds: f64,
    bytes_to_keyholder: u64,
    bytes_from_keyholder: u64,
}

/// Runs `privlogit bench vertical`.
pub fn run(args: VerticalBenchArgs) -> Result<()> {
    if args.parties < 2 || args.ids == 0 || !(0.0..=1.0).contains(&args.shared) {
        bail!("--parties must be at least 2, --ids at least 1, --shared in [0, 1]");
    }
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let common = (args.ids as f64 * args.shared) as usize;
    let lists: Vec<Vec<String>> = (0..args.parties)
        .map(|k| {
            let mut ids: Vec<String> = (0..common).map(|i| format!("C{i:09}")).collect();
            ids.extend((common..args.ids).map(|i| format!("P{k}-{i:09}")));
            ids.shuffle(&mut rng);
            ids
        })
        .collect();
    let mut times = Vec::new();
    let mut found = 0;
    let mut bytes = 0;
    for k in 0..args.timing.runs() {
        eprintln!("intersection, run {} of {} ...", k + 1, args.timing.runs());
        let start = Instant::now();
        let out = psi::intersect_in_process(&lists, &mut rand::rng())?;
        times.push(start.elapsed().as_secs_f64());
        found = out.rows[0].len();
        bytes = out
            .aggregator_view
            .tags
            .iter()
            .map(|t| t.len() * psi::TAG_BYTES)
            .sum();
        let names: Vec<&String> = out.rows[0].iter().map(|&r| &lists[0][r]).collect();
        if found != common || names.iter().any(|n| !n.starts_with('C')) {
            bail!("the intersection found {found} rows, expected the {common} shared");
        }
    }
    let fit = (args.rows > 0).then(|| fit(&args)).transpose()?;
    let report = Report {
        machine: machine(),
        ids_per_party: args.ids,
        parties: args.parties,
        intersection: found,
        psi_seconds: median(&times),
        bytes_to_aggregator: bytes,
        fit,
    };
    args.timing.print(&report, |report| {
        println!("Vertical study, {}", report.machine);
        println!(
            "  intersection: {} parties x {} identifiers, {} shared: {:.2} s (median of {}), \
             {} bytes of tags to the aggregator",
            report.parties,
            report.ids_per_party,
            report.intersection,
            report.psi_seconds,
            args.timing.runs(),
            report.bytes_to_aggregator
        );
        if let Some(f) = &report.fit {
            println!(
                "  secure fit: {} rows x {} features, {} iterations and {} rounds ({}; in the \
                 clear {}, max |difference| {:.1e}) in {:.1} s (setup {:.1} s, then {:.2} s an \
                 iteration): circuit {:.1} s ({} AND gates), solver {:.1} s, {} + {} bytes \
                 between the servers",
                f.rows,
                f.features,
                f.iterations,
                f.rounds,
                f.status,
                f.plaintext_iterations,
                f.max_abs_diff_to_plaintext,
                f.seconds,
                f.setup_seconds,
                f.seconds_per_iteration,
                f.circuit_seconds,
                f.and_gates,
                f.solver_seconds,
                f.bytes_to_keyholder,
                f.bytes_from_keyholder
            );
        }
    })
}

/// The secure fit on simulated standardised rows.
fn fit(args: &VerticalBenchArgs) -> Result<FitReport> {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let (n, p) = (args.rows, args.features.max(args.parties));
    let truth: Vec<f64> = (0..p).map(|j| 0.5 - (j % 5) as f64 * 0.2).collect();
    let x: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..p).map(|_| rng.random_range(-2.0..2.0)).collect())
        .collect();
    let y: Vec<bool> = x
        .iter()
        .map(|row| {
            let z: f64 = row.iter().zip(&truth).map(|(a, b)| a * b).sum();
            rng.random::<f64>() < 1.0 / (1.0 + (-z).exp())
        })
        .collect();
    // Every party holds every row, under the same identifiers (the intersection is timed
    // above); the first party also holds the labels.
    let ids: Vec<String> = (0..n).map(|i| format!("R{i:09}")).collect();
    let mut tables = Vec::new();
    let mut start = 0;
    for k in 0..args.parties {
        let w = p / args.parties + usize::from(k < p % args.parties);
        tables.push(VerticalTable {
            source: format!("simulated party {}", k + 1),
            ids: ids.clone(),
            names: (start..start + w).map(|j| format!("x{}", j + 1)).collect(),
            x: x.iter()
                .flat_map(|row| row[start..start + w].to_vec())
                .collect(),
            labels: (k == 0).then(|| y.clone()),
            disclosure: privlogit_protocols::disclosure::Disclosure::DATASHIELD,
        });
        start += w;
    }
    let options = FitOptions::default()
        .lambda(1.0)
        .relative_tolerance(0.0)
        .gradient_tolerance((args.gradient_tol > 0.0).then_some(args.gradient_tol))
        .max_iterations(args.iterations.max(1));
    let optimizer = Optimizer::AcceleratedPrivLogit { memory: 3 };
    // The same rows pooled in the clear, with the intercept (the study's order is the rows'
    // column order: the labelling party is the first): the iterations the plaintext run needs
    // and the optimum the secure one should land on.
    let pooled = Array2::from_shape_fn((n, p + 1), |(i, j)| if j == 0 { 1.0 } else { x[i][j - 1] });
    let labels = Array1::from_iter(y.iter().map(|&v| f64::from(u8::from(v))));
    let mut path = Vec::new();
    let plain = optimizer
        .fit(
            &mut PlaintextAggregation::new(&[PartyData::new(pooled, labels)]),
            &options,
            &mut |r| path.push(r.beta.clone()),
        )
        .map_err(|e| anyhow::anyhow!(e))?;
    let plan = vertical_plan(optimizer, options, 2048, args.parties);
    eprintln!(
        "in the clear: {} iterations ({}); the secure fit: generating a 2048-bit key pair ...",
        plain.iterations,
        plain.status.name()
    );
    let make_key = |_| Ok(KeyPair::generate(KeySize::Bits2048, &mut rand::rng()).secret);
    // Each secure iterate beside the plaintext run's at the same iteration and its optimum.
    let gap = |a: &ndarray::Array1<f64>, b: &ndarray::Array1<f64>| {
        (a - b).iter().fold(0.0f64, |m, d| m.max(d.abs()))
    };
    let run = run_in_process(&tables, &plan, make_key, &mut |r| {
        let same = path
            .get(r.iteration.saturating_sub(1))
            .map_or(f64::NAN, |b| gap(&r.beta, b));
        eprintln!(
            "{}  from the plaintext iterate {same:.1e}, from its optimum {:.1e}",
            privlogit::study::roles::progress_line(r),
            gap(&r.beta, &plain.beta)
        )
    })?;
    let report = run.outcome;
    let max_abs_diff_to_plaintext = (&report.fit.beta - &plain.beta)
        .iter()
        .fold(0.0f64, |m, d| m.max(d.abs()));
    Ok(FitReport {
        rows: n,
        features: p + 1,
        iterations: report.fit.iterations,
        plaintext_iterations: plain.iterations,
        max_abs_diff_to_plaintext,
        status: report.fit.status.name().to_string(),
        gradient_tolerance: report.vertical.as_ref().and_then(|v| v.gradient_tolerance),
        rounds: report.fit.rounds,
        seconds: report.seconds,
        setup_seconds: report.setup_seconds,
        seconds_per_iteration: (report.seconds - report.setup_seconds)
            / report.fit.iterations.max(1) as f64,
        and_gates: report.aggregator.and_gates,
        circuit_seconds: report.aggregator.gc_seconds,
        solver_seconds: report.aggregator.solver.masked_seconds,
        bytes_to_keyholder: report.aggregator.bytes_to_keyholder,
        bytes_from_keyholder: run.keyholder.bytes_sent,
    })
}
