//! `privlogit bench circuits`: garbling throughput, OT extension throughput and a secure
//! Cholesky factorisation (both parties, the evaluator's matrix input by OT), on this machine.

use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use privlogit_circuits::FixedFormat;
use privlogit_circuits::backend::{Builder, Word};
use privlogit_circuits::bristol;
use privlogit_circuits::channel::{Channel, Discard, MemoryChannel};
use privlogit_circuits::circuit::Schedule;
use privlogit_circuits::fixed_gadgets::mul;
use privlogit_circuits::garble::{Evaluator, Garbler};
use privlogit_circuits::matrix_circuits::MatrixCircuit;
use privlogit_circuits::ot::{CotReceiver, CotSender};
use privlogit_circuits::session::{EvaluatorSession, GarblerSession};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::Serialize;

use crate::bench::machine::{machine, median, median_seconds};

/// Arguments of `privlogit bench circuits`.
#[derive(Debug, Args)]
pub struct CircuitBenchArgs {
    /// Sizes of the secure Cholesky factorisations to time (0 skips them).
    #[arg(long = "cholesky", value_name = "D", default_values_t = [50usize])]
    cholesky: Vec<usize>,
    /// Timed runs per throughput figure (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = super::at_least_one)]
    runs: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// A Bristol Fashion 64 x 64 multiplier to time (e.g. mult2_64.txt of the Bristol
    /// collection) [default: the builder's own multiplier as a gate list].
    #[arg(long, value_name = "FILE")]
    circuit: Option<std::path::PathBuf>,
}

#[derive(Serialize)]
struct Report {
    machine: String,
    garble_gate_list_and_per_second: f64,
    garble_builder_and_per_second: f64,
    /// Median over alternating pairs of builder rate / gate-list rate.
    builder_to_gate_list: f64,
    garble_and_evaluate_two_threads_and_per_second: f64,
    ot_extension_per_second: f64,
    cholesky: Vec<CholeskyRun>,
}

#[derive(Serialize)]
struct CholeskyRun {
    dimension: usize,
    and_gates: u64,
    seconds: f64,
    and_per_second: f64,
    bytes_garbler_to_evaluator: u64,
}

/// The largest side `--cholesky` builds: at 128 the circuit holds about 350,000 fixed-point
/// multiplications, some GB of gates; past that the machine runs out long before it times.
const MAX_CHOLESKY: usize = 128;

/// Runs `privlogit bench circuits`.
pub fn run(args: CircuitBenchArgs) -> Result<()> {
    let runs = args.runs.max(1);
    if let Some(d) = args.cholesky.iter().find(|&&d| d > MAX_CHOLESKY) {
        anyhow::bail!(
            "--cholesky {d}: at most {MAX_CHOLESKY} (the whole factorisation is one circuit, \
             held in memory: about d^3 / 6 fixed-point multiplications)"
        );
    }
    let circuit = match &args.circuit {
        Some(path) => bristol::parse(
            &std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?,
        )
        .with_context(|| format!("--circuit {}", path.display()))?,
        None => {
            // The builder's own 64 x 64 multiplier as a gate list.
            let mut rec = Builder::recorder();
            let (x, y) = (rec.input(64), rec.input(64));
            let p = privlogit_circuits::word::mul_columns(&mut rec, &x, &y, false, 128, Vec::new());
            rec.finish(&[p])?
        }
    };
    let schedule = Schedule::new(&circuit);
    let ands = circuit.counts().and;
    let mut rng = ChaCha20Rng::seed_from_u64(1);

    // Gate list and builder alternate, batch by batch, so that drift on a shared machine hits
    // both: the ratio is the median of the paired ratios.
    eprintln!("timing gate-list and builder garbling, alternating ...");
    let mut g = Garbler::new(Discard::default(), &mut rng);
    let inputs = g.fresh_labels(circuit.inputs().iter().sum(), &mut rng);
    let format = FixedFormat::DEFAULT;
    let mut b = Builder::new(Garbler::new(Discard::default(), &mut rng));
    let words: Vec<Word<u128>> = (0..32)
        .map(|_| {
            b.garbler_input(&[false; 64], &mut rng)
                .expect("discarding channel")
        })
        .collect();
    let per_call = {
        let mut count = Builder::counter();
        let (x, y) = (count.input(64), count.input(64));
        mul(&mut count, &x, &y, format);
        16 * count.counts().and
    };
    let reps = 200;
    let (mut list_rates, mut builder_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..(5 * runs).max(9) {
        let list = ands as f64 * reps as f64
            / median_seconds(1, &mut || {
                for _ in 0..reps {
                    g.garble_circuit(&circuit, &schedule, &inputs);
                }
            });
        let built = per_call as f64
            / median_seconds(1, &mut || {
                for k in 0..16 {
                    mul(&mut b, &words[2 * k], &words[2 * k + 1], format);
                }
            });
        list_rates.push(list);
        builder_rates.push(built);
        ratios.push(built / list);
    }
    let gate_list = median(&list_rates);
    let builder = median(&builder_rates);
    let builder_ratio = median(&ratios);

    eprintln!("timing garbler and evaluator on two threads ...");
    let copies = 256;
    let start = Instant::now();
    let (gc, ec) = MemoryChannel::pair();
    let (c2, s2) = (circuit.clone(), schedule.clone());
    let garbler = std::thread::spawn(move || {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let mut g = Garbler::new(gc, &mut rng);
        let inputs = g.fresh_labels(c2.inputs().iter().sum(), &mut rng);
        for _ in 0..copies {
            g.garble_circuit(&c2, &s2, &inputs);
        }
        g.finish().expect("channel");
    });
    let mut e = Evaluator::new(ec);
    let zeros = vec![0u128; circuit.inputs().iter().sum()];
    for _ in 0..copies {
        e.evaluate_circuit(&circuit, &schedule, &zeros);
    }
    garbler
        .join()
        .map_err(|_| anyhow::anyhow!("garbler thread panicked"))?;
    let two_threads = (ands * copies) as f64 / start.elapsed().as_secs_f64();

    eprintln!("timing OT extension ...");
    let m = 1 << 20;
    let (mut a, mut bch) = MemoryChannel::pair();
    let sender = std::thread::spawn(move || {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let mut s = CotSender::setup(&mut a, 0x1234_5678_9abc_def1, &mut rng).expect("base OT");
        let start = Instant::now();
        s.extend(&mut a, m).expect("extend");
        start.elapsed().as_secs_f64()
    });
    let mut r = CotReceiver::setup(&mut bch, &mut rng)?;
    let choices: Vec<bool> = (0..m).map(|j| j % 3 == 0).collect();
    let start = Instant::now();
    r.extend(&mut bch, &choices)?;
    let receiver_seconds = start.elapsed().as_secs_f64();
    let sender_seconds = sender
        .join()
        .map_err(|_| anyhow::anyhow!("OT thread panicked"))?;
    let ot = m as f64 / receiver_seconds.max(sender_seconds);

    let mut cholesky_runs = Vec::new();
    for &d in args.cholesky.iter().filter(|&&d| d > 0) {
        eprintln!("secure Cholesky, d = {d} (garbler and evaluator on two threads) ...");
        cholesky_runs.push(secure_cholesky(d)?);
    }
    let report = Report {
        machine: machine(),
        garble_gate_list_and_per_second: gate_list,
        garble_builder_and_per_second: builder,
        builder_to_gate_list: builder_ratio,
        garble_and_evaluate_two_threads_and_per_second: two_threads,
        ot_extension_per_second: ot,
        cholesky: cholesky_runs,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("Garbled circuits, {}", report.machine);
        println!(
            "garbling alone, gate list (64-bit multiplier), one thread: {:.1} M AND/s",
            gate_list / 1e6
        );
        println!(
            "garbling alone, builder (fixed-point multiplies), one thread: {:.1} M AND/s \
             ({:.0}% of the gate-list rate, median of alternating pairs)",
            builder / 1e6,
            100.0 * builder_ratio
        );
        println!(
            "garbler and evaluator on two threads, in-memory channel: {:.1} M AND/s",
            two_threads / 1e6
        );
        println!(
            "OT extension (IKNP, 2^20 correlated OTs): {:.2} M OT/s",
            ot / 1e6
        );
        for c in &report.cholesky {
            println!(
                "secure Cholesky d = {}: {:.1} s, {:.3e} AND gates, {:.1} M AND/s, {:.2} GB garbler -> evaluator",
                c.dimension,
                c.seconds,
                c.and_gates as f64,
                c.and_per_second / 1e6,
                c.bytes_garbler_to_evaluator as f64 / 1e9
            );
        }
    }
    Ok(())
}

/// Cholesky of a d x d SPD matrix whose entries the evaluator inputs by OT, garbled end to end
/// on two threads; the factor is revealed to the evaluator.
fn secure_cholesky(d: usize) -> Result<CholeskyRun> {
    let format = FixedFormat::DEFAULT;
    let a: Vec<Vec<f64>> = (0..d)
        .map(|i| {
            (0..d)
                .map(|j| {
                    if i == j {
                        2.0
                    } else {
                        1.0 / (1.0 + (i as f64 - j as f64).abs())
                    }
                })
                .collect()
        })
        .collect();
    let bits: Vec<bool> = a
        .iter()
        .flatten()
        .flat_map(|&x| {
            let w = format.to_word(format.encode(x).expect("in range"));
            (0..64).map(move |i| (w >> i) & 1 == 1)
        })
        .collect();
    let start = Instant::now();
    let (gc, ec) = MemoryChannel::pair();
    let garbler = std::thread::spawn(move || -> std::io::Result<(u64, u64)> {
        let mut rng = rand::rng();
        let mut s = GarblerSession::new(gc, &mut rng)?;
        let flat = s.evaluator_input(d * d * 64)?;
        let m: Vec<Vec<Word<u128>>> = flat
            .chunks(64 * d)
            .map(|row| row.chunks(64).map(<[_]>::to_vec).collect())
            .collect();
        let l = MatrixCircuit::new(s.builder(), format, None).cholesky(&m);
        for row in &l {
            for w in row {
                s.reveal_to_evaluator(w)?;
            }
        }
        let ands = s.and_gates();
        let bytes = s.finish()?.bytes_sent();
        Ok((ands, bytes))
    });
    let mut rng = rand::rng();
    let mut s = EvaluatorSession::new(ec, &mut rng)?;
    let flat = s.evaluator_input(&bits)?;
    let m: Vec<Vec<Word<u128>>> = flat
        .chunks(64 * d)
        .map(|row| row.chunks(64).map(<[_]>::to_vec).collect())
        .collect();
    let l = MatrixCircuit::new(s.builder(), format, None).cholesky(&m);
    let mut first = 0.0;
    for (i, row) in l.iter().enumerate() {
        for (j, w) in row.iter().enumerate() {
            let v = s.reveal_to_evaluator(w)?;
            if i == 0 && j == 0 {
                let raw = v
                    .iter()
                    .enumerate()
                    .fold(0u64, |acc, (k, &b)| acc | (u64::from(b) << k));
                first = format.decode(format.from_word(raw));
            }
        }
    }
    s.finish()?;
    let (ands, bytes) = garbler
        .join()
        .map_err(|_| anyhow::anyhow!("garbler thread panicked"))??;
    let seconds = start.elapsed().as_secs_f64();
    anyhow::ensure!(
        (first - 2f64.sqrt()).abs() < 1e-6,
        "wrong factor: L_00 = {first}"
    );
    Ok(CholeskyRun {
        dimension: d,
        and_gates: ands,
        seconds,
        and_per_second: ands as f64 / seconds,
        bytes_garbler_to_evaluator: bytes,
    })
}
