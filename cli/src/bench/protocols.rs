//! `privlogit bench protocols`: the three secure protocols and the plaintext distributed run on
//! the same simulated data, every role in this process over loopback TCP, in one table.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, anyhow};
use clap::Args;
use privlogit::protocols::paillier::{KeyPair, KeySize};
use privlogit::protocols::rows::{DesignRows, RowSource};
use privlogit::protocols::secure::aggregator::{Protocol, Reveal};
use privlogit::protocols::secure::node::NodeData;
use privlogit::protocols::secure::solver::LinearAlgebra;

use super::linalg::LinearAlgebraChoice;
use privlogit::protocols::secure::study_protocol::StudyPlan;
use privlogit::protocols::secure::{DEFAULT_FORMAT, SecureError};
use privlogit::protocols::secure::{inprocess, vertical_roles};
use privlogit::protocols::{FitOptions, Optimizer, PartyData, PlaintextAggregation};
use privlogit::synthetic::Simulation;
use serde::Serialize;

/// Arguments of `privlogit bench protocols`.
#[derive(Debug, Args)]
pub struct ProtocolBenchArgs {
    /// Rows of the simulated data (SimuX-style, see `privlogit simulate`).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    rows: usize,
    /// Features (an intercept is added).
    #[arg(long, value_name = "P", default_value_t = 50)]
    features: usize,
    /// Nodes (contiguous equal parts).
    #[arg(long, value_name = "S", default_value_t = 5)]
    parties: usize,
    /// Seed of the simulation.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Use accelerated PrivLogit for Hessian and Local.
    #[arg(long)]
    accelerate: bool,
    /// Skip secure Newton (the slowest).
    #[arg(long)]
    no_newton: bool,
    #[command(flatten)]
    linear_algebra: LinearAlgebraChoice,
    /// How the in-process parties connect: plain (loopback TCP), tls (mutual TLS 1.3 with
    /// fresh identities), or both (`plain,tls`) side by side, alternating.
    #[arg(
        long,
        value_name = "KIND",
        value_delimiter = ',',
        default_value = "plain"
    )]
    transport: Vec<Transport>,
    /// What each secure run reveals after it converges: coefficients (no inference round, the
    /// default, so the figures stay the protocols'), standard-errors or covariance; the
    /// inference round's seconds get their own column beside secure Newton's per iteration.
    #[arg(long, value_name = "WHAT", default_value = "coefficients")]
    reveal: String,
    /// Run every secure configuration this many times (alternating), for medians.
    #[arg(long, value_name = "R", default_value_t = 1)]
    repeats: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// How the parties of a benchmark run connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// Loopback TCP.
    Plain,
    /// Mutual TLS 1.3 over loopback TCP.
    Tls,
}

#[derive(Debug, Serialize)]
struct Row {
    run: String,
    protocol: String,
    linear_algebra: Option<String>,
    transport: Option<Transport>,
    iterations: usize,
    rounds: usize,
    seconds: f64,
    setup_seconds: f64,
    seconds_per_iteration: f64,
    /// Seconds of the inference round (`--reveal` other than coefficients).
    inference_seconds: Option<f64>,
    bytes: u64,
    and_gates: u64,
    max_abs_diff_to_plaintext: f64,
}

/// Runs `privlogit bench protocols`.
pub fn run(args: ProtocolBenchArgs) -> Result<()> {
    if args.parties == 0 || args.rows < args.parties {
        return Err(anyhow!("need at least one row per party"));
    }
    eprintln!(
        "simulating {} x {} in {} parties ...",
        args.rows, args.features, args.parties
    );
    // Every Node regenerates its range of the simulation on each pass (nothing is held).
    let sources: Vec<Arc<dyn RowSource>> = Simulation::new(args.rows, args.features, args.seed)
        .and_then(|sim| sim.parts(args.parties))
        .map_err(|e| anyhow!(e))?
        .into_iter()
        .map(|part| Arc::new(part) as Arc<dyn RowSource>)
        .collect();
    let parties: Vec<PartyData> = sources
        .iter()
        .map(|raw| PartyData::from_source(Arc::new(DesignRows::new(raw.clone(), true))))
        .collect();
    let options = FitOptions::new().lambda(1.0);
    let reveal: Reveal = args.reveal.parse().map_err(|e: String| anyhow!(e))?;
    let privlogit = if args.accelerate {
        Optimizer::AcceleratedPrivLogit {
            memory: privlogit::protocols::optimizer::DEFAULT_ANDERSON_MEMORY,
        }
    } else {
        Optimizer::PrivLogit
    };

    eprintln!("plaintext distributed {privlogit} ...");
    let start = Instant::now();
    let plain = privlogit
        .fit(
            &mut PlaintextAggregation::new(&parties),
            &options,
            &mut |_| {},
        )
        .map_err(|e| anyhow!(e))?;
    let plain_seconds = start.elapsed().as_secs_f64();
    let mut rows = vec![Row {
        run: format!("plaintext {privlogit}"),
        protocol: "plaintext".into(),
        linear_algebra: None,
        transport: None,
        iterations: plain.iterations,
        rounds: plain.rounds,
        seconds: plain_seconds,
        setup_seconds: 0.0,
        seconds_per_iteration: plain_seconds / plain.iterations.max(1) as f64,
        inference_seconds: None,
        bytes: 0,
        and_gates: 0,
        max_abs_diff_to_plaintext: 0.0,
    }];
    let plain_newton = Optimizer::Newton
        .fit(
            &mut PlaintextAggregation::new(&parties),
            &options,
            &mut |_| {},
        )
        .map_err(|e| anyhow!(e))?;

    let names: Vec<String> = sources[0].names();
    let mut runs = vec![(Protocol::Hessian, privlogit), (Protocol::Local, privlogit)];
    if !args.no_newton {
        runs.push((Protocol::Newton, Optimizer::Newton));
    }
    if args.repeats == 0 {
        return Err(anyhow!("--repeats must be at least 1"));
    }
    let mut variants: Vec<(LinearAlgebra, Transport)> = Vec::new();
    for &m in &args.linear_algebra.methods {
        for &t in &args.transport {
            variants.push((m, t));
        }
    }
    let runs: Vec<(Protocol, Optimizer, LinearAlgebra, Transport)> = (0..args.repeats)
        .flat_map(|_| runs.clone())
        .enumerate()
        .flat_map(|(k, (p, o))| {
            // Alternate which variant goes first, so drift on a shared machine hits both.
            let mut variants = variants.clone();
            if k % 2 == 1 {
                variants.reverse();
            }
            variants.into_iter().map(move |(m, t)| (p, o, m, t))
        })
        .collect();
    for (protocol, optimizer, method, transport) in runs {
        eprintln!(
            "secure {protocol:?} with {optimizer}, {method} linear algebra, {transport:?} ..."
        );
        let plan = StudyPlan {
            linear_algebra: method,
            circuit_block: privlogit_protocols::secure::masked::engine::DEFAULT_BLOCK,
            reveal,
            ..timed_plan(protocol, optimizer, options.clone(), args.parties)
        };
        let nodes = sources
            .iter()
            .map(|raw| (names.clone(), NodeData::from_source(raw.clone(), true)))
            .collect();
        let inprocess::StudyRun {
            outcome, keyholder, ..
        } = inprocess::run_study(
            match transport {
                Transport::Plain => inprocess::loopback_pair,
                Transport::Tls => inprocess::tls_loopback_pair,
            },
            nodes,
            &plan,
            |_| -> Result<_, SecureError> {
                Ok(KeyPair::generate(KeySize::Bits2048, &mut rand::rng()).secret)
            },
            &mut |r| {
                if r.iteration % 10 == 0 {
                    eprintln!("  iteration {}", r.iteration);
                }
            },
            None,
            inprocess::Products::Paillier,
        )?;
        let reference = if protocol == Protocol::Newton {
            &plain_newton.beta
        } else {
            &plain.beta
        };
        let diff = outcome
            .fit
            .beta
            .iter()
            .zip(reference.iter())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        let a = &outcome.aggregator;
        rows.push(Row {
            run: format!(
                "secure {} ({optimizer}, {method}, {})",
                format!("{protocol:?}").to_lowercase(),
                format!("{transport:?}").to_lowercase()
            ),
            protocol: format!("{protocol:?}").to_lowercase(),
            linear_algebra: Some(method.to_string()),
            transport: Some(transport),
            iterations: outcome.fit.iterations,
            rounds: outcome.fit.rounds,
            seconds: outcome.seconds,
            setup_seconds: outcome.setup_seconds,
            seconds_per_iteration: (outcome.seconds
                - outcome.setup_seconds
                - outcome.inference.as_ref().map_or(0.0, |i| i.seconds))
                / outcome.fit.iterations.max(1) as f64,
            inference_seconds: outcome.inference.as_ref().map(|i| i.seconds),
            bytes: a.bytes_from_nodes
                + a.bytes_to_nodes
                + a.bytes_to_keyholder
                + keyholder.bytes_sent,
            and_gates: a.and_gates,
            max_abs_diff_to_plaintext: diff,
        });
    }

    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} rows x {} features (+ intercept), {} parties, 2048-bit Paillier, values at {} \
         fractional bits (masked method), circuits {}/{}",
        args.rows,
        args.features,
        args.parties,
        privlogit::protocols::secure::PAILLIER_FRAC,
        DEFAULT_FORMAT.width(),
        DEFAULT_FORMAT.frac()
    );
    let _ = writeln!(
        s,
        "{:<46} {:>5} {:>6} {:>9} {:>8} {:>9} {:>11} {:>10} {:>10} {:>9} {:>9} {:>10} {:>9}",
        "run",
        "iter",
        "rounds",
        "wall s",
        "setup s",
        "s / iter",
        "inference s",
        "bytes",
        "AND gates",
        "vs Newton",
        "overhead",
        "vs circuit",
        "diff"
    );
    for r in &rows {
        // Against secure Newton with the same linear algebra (the plaintext row: the first).
        let newton = rows
            .iter()
            .find(|n| {
                n.protocol == "newton"
                    && (n.linear_algebra == r.linear_algebra || r.linear_algebra.is_none())
            })
            .map(|n| n.seconds);
        let speedup = newton.map_or("-".to_string(), |n| format!("{:.2}x", n / r.seconds));
        let overhead = format!("{:.0}x", r.seconds / plain_seconds);
        let circuit = rows
            .iter()
            .find(|c| c.protocol == r.protocol && c.linear_algebra.as_deref() == Some("circuit"))
            .filter(|_| r.linear_algebra.as_deref() == Some("masked"))
            .map_or("-".to_string(), |c| {
                format!("{:.1}x", c.seconds / r.seconds)
            });
        let _ = writeln!(
            s,
            "{:<46} {:>5} {:>6} {:>9.2} {:>8.2} {:>9.3} {:>11} {:>10} {:>10.3e} {:>9} {:>9} {:>10} {:>9.1e}",
            r.run,
            r.iterations,
            r.rounds,
            r.seconds,
            r.setup_seconds,
            r.seconds_per_iteration,
            r.inference_seconds
                .map_or("-".to_string(), |t| format!("{t:.2}")),
            r.bytes,
            r.and_gates as f64,
            speedup,
            overhead,
            circuit,
            r.max_abs_diff_to_plaintext
        );
    }
    if args.transport.contains(&Transport::Plain) && args.transport.contains(&Transport::Tls) {
        let _ = writeln!(
            s,
            "\nTLS against plain TCP (medians of {} runs each):",
            args.repeats
        );
        let mut seen: Vec<(String, Option<String>)> = Vec::new();
        for r in rows.iter().filter(|r| r.transport.is_some()) {
            let key = (r.protocol.clone(), r.linear_algebra.clone());
            if seen.contains(&key) {
                continue;
            }
            let median = |t: Transport| {
                let mut v: Vec<f64> = rows
                    .iter()
                    .filter(|x| (x.protocol.clone(), x.linear_algebra.clone()) == key)
                    .filter(|x| x.transport == Some(t))
                    .map(|x| x.seconds)
                    .collect();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let (plain, tls) = (median(Transport::Plain), median(Transport::Tls));
            let _ = writeln!(
                s,
                "  {:<8} {:<8} plain {:>8.2} s  tls {:>8.2} s  overhead {:+.1} %",
                key.0,
                key.1.as_deref().unwrap_or("-"),
                plain,
                tls,
                (tls / plain - 1.0) * 100.0
            );
            seen.push(key);
        }
    }
    print!("{s}");
    Ok(())
}

/// A secure study as the timings run it (here and in `reproduce`): 2048-bit keys and otherwise
/// the defaults of a vertical study's plan (default format, an intercept, masked linear algebra,
/// the coefficients only, nothing released).
pub(crate) fn timed_plan(
    protocol: Protocol,
    optimizer: Optimizer,
    options: FitOptions,
    parties: usize,
) -> StudyPlan {
    StudyPlan {
        protocol,
        ..vertical_roles::plan(optimizer, options, 2048, parties)
    }
}
