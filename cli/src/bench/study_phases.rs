//! `privlogit bench study`: where a study's wall time goes, by phase and by party, beside a
//! floor written from what it had to do (round trips at the loopback latency, the Paillier
//! work spread over the cores). The study runs as `privlogit study --study FILE` runs it (every
//! party in this process over loopback TCP), the figures are the medians of the runs.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use serde_json::Value;

use crate::bench::machine::{machine, median, median_seconds};
use privlogit::protocols::paillier::{DjnNoise, KeyPair, KeySize};
use privlogit::settings::Reader;
use privlogit::study::InProcess;
use privlogit::study::file::{self, StudyFile};

/// `privlogit bench study`'s arguments.
#[derive(Debug, Args)]
pub struct StudyBenchArgs {
    /// The study file to run (its parties, label and settings, as `privlogit study --study`)
    #[arg(long, default_value = "data/demo/study.toml")]
    study: PathBuf,
    /// A setting over the study file's, as KEY=VALUE with the setting's name (`gradient_tol=1e-8`,
    /// `no_newton_finish=true`, `protocol="newton"`); repeat for several
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
    /// Timed runs (each figure is the median over them)
    #[arg(long, default_value_t = 3, value_parser = super::at_least_one)]
    runs: usize,
    /// Print one JSON object instead of a table
    #[arg(long)]
    json: bool,
}

/// One phase of the table: its name and median seconds.
#[derive(Debug, Serialize)]
struct Phase {
    phase: &'static str,
    seconds: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    study: String,
    machine: String,
    runs: usize,
    rows: u64,
    coefficients: usize,
    nodes: usize,
    iterations: u64,
    rounds: u64,
    newton_steps: u64,
    distance_note: &'static str,
    phases: Vec<Phase>,
    /// Loopback round trip, decryption and DJN encryption on this machine.
    round_trip_seconds: f64,
    decrypt_seconds: f64,
    encrypt_seconds: f64,
    keygen_seconds: f64,
    /// Server-to-server and Node round trips the study made.
    round_trips: u64,
    decryptions: u64,
    encryptions: u64,
    /// `round_trips * round trip + (decryptions * decrypt + encryptions * encrypt) / cores +
    /// key generation / cores`: what the study's own messages and Paillier operations cost at
    /// best, with every core busy and nothing else to do.
    floor_seconds: f64,
    /// All parties' Paillier seconds as measured, over the cores.
    paillier_floor_seconds: f64,
    wall_seconds: f64,
}

/// Runs the study `args.runs` times and prints the breakdown.
pub fn run(args: StudyBenchArgs) -> Result<()> {
    let file = StudyFile::read(&args.study)?;
    let mut given = Vec::new();
    for s in &args.settings {
        let (key, value) = s
            .split_once('=')
            .with_context(|| format!("--set {s:?}: expected KEY=VALUE"))?;
        let value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        given.push((key.trim().to_string(), value));
    }
    given.push(("quiet".to_string(), toml::Value::Boolean(true)));
    let runs = args.runs.max(1);
    let mut results: Vec<(f64, Value)> = Vec::new();
    for run in 1..=runs {
        eprintln!("{}: run {run} of {runs} ...", args.study.display());
        let spec = file::spec(Reader::Study, Some(&file), &given)?;
        let start = Instant::now();
        let result = InProcess::new(&spec, None)?.run(None)?;
        let wall = start.elapsed().as_secs_f64();
        results.push((wall, result.json()?));
    }
    eprintln!("timing key generation, decryption, encryption and a loopback round trip ...");
    let keygen = median(
        &(0..runs.max(5))
            .map(|_| {
                let start = Instant::now();
                let _ = KeyPair::generate_parallel(KeySize::Bits2048);
                start.elapsed().as_secs_f64()
            })
            .collect::<Vec<_>>(),
    );
    let (decrypt, encrypt) = paillier_costs();
    let round_trip = loopback_round_trip()?;

    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let med =
        |f: &dyn Fn(&Value) -> f64| median(&results.iter().map(|(_, v)| f(v)).collect::<Vec<_>>());
    let num = |key: &'static str| move |v: &Value| v[key].as_f64().unwrap_or(0.0);
    let mean_of = |key: &'static str| {
        move |v: &Value| {
            let xs: Vec<f64> = v[key]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            xs.iter().sum::<f64>() / xs.len().max(1) as f64
        }
    };
    let sum_of = |key: &'static str| {
        move |v: &Value| {
            v[key]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).sum())
                .unwrap_or(0.0)
        }
    };
    let wall = median(&results.iter().map(|(w, _)| *w).collect::<Vec<_>>());
    let first = &results[0].1;
    let int = |key: &str| first[key].as_u64().unwrap_or(0);
    let setup = med(&num("setup_seconds"));
    let total = med(&num("seconds"));
    let inference = med(&num("inference_seconds"));
    let phases = vec![
        Phase {
            phase: "key generation (measured apart)",
            seconds: keygen,
        },
        Phase {
            phase: "setup: key, count, standardisation, bound and its inverse",
            seconds: setup,
        },
        Phase {
            phase: "iterations",
            seconds: (total - setup - inference).max(0.0),
        },
        Phase {
            phase: "  aggregator waiting for the Nodes",
            seconds: med(&num("waiting_for_nodes_seconds")),
        },
        Phase {
            phase: "  a Node's local sums (mean over Nodes)",
            seconds: med(&mean_of("node_local_seconds")),
        },
        Phase {
            phase: "  a Node's Paillier work (mean over Nodes)",
            seconds: med(&mean_of("node_paillier_seconds")),
        },
        Phase {
            phase: "masked arithmetic of the fit (its inverses and solves)",
            seconds: med(&num("masked_seconds")),
        },
        Phase {
            phase: "  aggregator: cross terms (fit and inference)",
            seconds: med(&num("masked_cross_term_seconds")),
        },
        Phase {
            phase: "  aggregator: waiting for the key holder (both)",
            seconds: med(&num("masked_waiting_for_keyholder_seconds")),
        },
        Phase {
            phase: "  aggregator: pivot circuits (both)",
            seconds: med(&num("masked_pivot_circuit_seconds")),
        },
        Phase {
            phase: "  key holder: masked decryptions, encryptions (both)",
            seconds: med(&num("keyholder_masked_paillier_seconds")),
        },
        Phase {
            phase: "key holder: other Paillier (steps, moments, N)",
            seconds: med(&num("keyholder_paillier_seconds")),
        },
        Phase {
            phase: "garbled circuits (stopping tests, acceptance bits)",
            seconds: med(&num("gc_seconds")),
        },
        Phase {
            phase: "inference (the information's inverse at the optimum)",
            seconds: inference,
        },
        Phase {
            phase: "study (setup to result)",
            seconds: total,
        },
        Phase {
            phase: "wall (files opened to result, one process)",
            seconds: wall,
        },
    ];
    let round_trips =
        int("rounds") + int("masked_products") + int("masked_pivots") + int("iterations");
    let decryptions = int("keyholder_masked_decryptions");
    let encryptions = int("keyholder_masked_encryptions");
    let floor = round_trips as f64 * round_trip
        + (decryptions as f64 * decrypt + encryptions as f64 * encrypt) / cores;
    let paillier = med(&|v: &Value| {
        sum_of("node_paillier_seconds")(v)
            + num("keyholder_paillier_seconds")(v)
            + num("keyholder_masked_paillier_seconds")(v)
            + num("masked_cross_term_seconds")(v)
    }) / cores;
    let report = Report {
        study: args.study.display().to_string(),
        machine: machine(),
        runs,
        rows: int("rows"),
        coefficients: first["coefficients"].as_array().map_or(0, Vec::len),
        nodes: first["bytes_from_each_node"].as_array().map_or(0, Vec::len),
        iterations: int("iterations"),
        rounds: int("rounds"),
        newton_steps: int("newton_steps"),
        distance_note: "compare the coefficients with `privlogit fit --optimizer newton --gradient-tol 1e-12`",
        phases,
        round_trip_seconds: round_trip,
        decrypt_seconds: decrypt,
        encrypt_seconds: encrypt,
        keygen_seconds: keygen,
        round_trips,
        decryptions,
        encryptions,
        floor_seconds: floor + keygen / cores,
        paillier_floor_seconds: paillier + keygen / cores,
        wall_seconds: wall,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "Where the time goes: {} ({} rows, {} coefficients, {} Nodes; {} iterations, {} rounds, \
         {} Newton steps); medians of {} runs; {}",
        report.study,
        report.rows,
        report.coefficients,
        report.nodes,
        report.iterations,
        report.rounds,
        report.newton_steps,
        runs,
        report.machine
    );
    println!("{:<58} {:>9}", "phase", "seconds");
    for p in &report.phases {
        println!("{:<58} {:>9.3}", p.phase, p.seconds);
    }
    println!(
        "floor: {} round trips x {:.0} us + ({} decryptions x {:.0} us + {} encryptions x {:.0} us \
         + key generation {:.3} s) / {} cores = {:.3} s; all parties' Paillier seconds / cores = \
         {:.3} s; wall {:.3} s",
        report.round_trips,
        round_trip * 1e6,
        decryptions,
        decrypt * 1e6,
        encryptions,
        encrypt * 1e6,
        keygen,
        cores,
        report.floor_seconds,
        report.paillier_floor_seconds,
        wall
    );
    Ok(())
}

/// Median seconds of one decryption (CRT) and one DJN encryption, 2048-bit, one thread.
fn paillier_costs() -> (f64, f64) {
    let pair = KeyPair::generate_parallel(KeySize::Bits2048);
    let key = pair.public_key();
    let noise = DjnNoise::new(key, &mut rand::rng());
    let m = num_bigint::BigUint::from(123_456_789u64);
    let c = key.encrypt(&m, &noise, &mut rand::rng());
    let encrypt = median_seconds(5, &mut || {
        std::hint::black_box(key.encrypt(&m, &noise, &mut rand::rng()));
    });
    let decrypt = median_seconds(5, &mut || {
        std::hint::black_box(pair.secret.decrypt(&c).expect("decrypts"));
    });
    (decrypt, encrypt)
}

/// Median seconds of a 64-byte message there and back over loopback TCP (no delay).
fn loopback_round_trip() -> Result<f64> {
    let listener = TcpListener::bind("127.0.0.1:0").context("loopback listener")?;
    let address = listener.local_addr()?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut buf = [0u8; 64];
        loop {
            if s.read_exact(&mut buf).is_err() {
                return Ok(());
            }
            s.write_all(&buf)?;
        }
    });
    let mut s = TcpStream::connect(address).context("loopback connection")?;
    s.set_nodelay(true)?;
    let mut buf = [0u8; 64];
    let mut samples = Vec::new();
    for _ in 0..9 {
        let start = Instant::now();
        for _ in 0..200 {
            s.write_all(&buf)?;
            s.read_exact(&mut buf)?;
        }
        samples.push(start.elapsed().as_secs_f64() / 200.0);
    }
    drop(s);
    let _ = echo.join();
    Ok(median(&samples))
}
