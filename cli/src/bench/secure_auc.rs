//! `privlogit bench ranking`: the exact secure AUC of a study's held-out rows
//! (`privlogit_protocols::secure::ranking`), end to end on this machine: the Nodes' sorting,
//! sharing and seed encryption, the key holder's seed decryption and expansion, and the garbled
//! merge-and-scan circuit with the key holder garbling and the aggregator evaluating on two
//! threads over an in-memory channel. Each run checks the AUC against the pooled computation.

use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use ndarray::ArrayView1;
use privlogit_circuits::channel::{Channel, MemoryChannel};
use privlogit_circuits::session::{EvaluatorSession, GarblerSession};
use privlogit_protocols::paillier::{DjnNoise, EncryptedVector, KeyPair, KeySize};
use privlogit_protocols::secure::gc::{AggregatorGc, KeyholderGc};
use privlogit_protocols::secure::ranking::{self, NodeShares};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::Serialize;

use crate::bench::machine::{Timing, machine, median};

/// Arguments of `privlogit bench ranking`.
#[derive(Debug, Args)]
pub struct RankingBenchArgs {
    /// Held-out rows in all.
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    /// Nodes holding them (about equal shares).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Distinct score values (0: continuous scores, few ties); a small count makes many ties.
    #[arg(long, default_value_t = 0)]
    levels: u32,
    #[command(flatten)]
    timing: Timing,
}

#[derive(Serialize)]
struct Report {
    machine: String,
    rows: usize,
    nodes: usize,
    and_gates: u64,
    bytes_keyholder_to_aggregator: u64,
    /// Median seconds: the slowest Node's sharing, the key holder's seed expansion, the circuit.
    node_seconds: f64,
    keyholder_seconds: f64,
    circuit_seconds: f64,
    total_seconds: f64,
    auc: f64,
}

struct Run {
    node: f64,
    keyholder: f64,
    circuit: f64,
    and_gates: u64,
    bytes: u64,
    auc: Option<f64>,
}

/// Runs `privlogit bench ranking`.
pub fn run(args: RankingBenchArgs) -> Result<()> {
    if args.nodes == 0 || args.rows == 0 || args.rows > ranking::MAX_RANKED_ROWS {
        bail!(
            "--rows must be 1 to {} and --nodes at least 1",
            ranking::MAX_RANKED_ROWS
        );
    }
    eprintln!("generating a 2048-bit key pair ...");
    let pair = KeyPair::generate(KeySize::Bits2048, &mut rand::rng());
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let nodes: Vec<Vec<(f64, bool)>> = (0..args.nodes)
        .map(|k| {
            let m = args.rows / args.nodes + usize::from(k < args.rows % args.nodes);
            (0..m)
                .map(|_| {
                    let z: f64 = rng.random_range(-4.0..4.0);
                    let mut p = 1.0 / (1.0 + (-z).exp());
                    if args.levels > 0 {
                        p = (p * f64::from(args.levels)).floor() / f64::from(args.levels);
                    }
                    (p, rng.random_bool(p))
                })
                .collect()
        })
        .collect();
    let (scores, labels): (Vec<f64>, Vec<f64>) = nodes
        .concat()
        .into_iter()
        .map(|(p, l)| (p, f64::from(u8::from(l))))
        .unzip();
    let pooled = privlogit::metrics::auc(ArrayView1::from(&scores), ArrayView1::from(&labels));
    let mut runs = Vec::new();
    for k in 0..args.timing.runs() {
        eprintln!("run {} of {} ...", k + 1, args.timing.runs());
        let r = once(&pair, &nodes)?;
        if r.auc != pooled {
            bail!(
                "the secure AUC {:?} differs from the pooled one {pooled:?}",
                r.auc
            );
        }
        runs.push(r);
    }
    let med = |f: fn(&Run) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    let report = Report {
        machine: machine(),
        rows: args.rows,
        nodes: args.nodes,
        and_gates: runs[0].and_gates,
        bytes_keyholder_to_aggregator: runs[0].bytes,
        node_seconds: med(|r| r.node),
        keyholder_seconds: med(|r| r.keyholder),
        circuit_seconds: med(|r| r.circuit),
        total_seconds: med(|r| r.node + r.keyholder + r.circuit),
        auc: pooled.unwrap_or(f64::NAN),
    };
    args.timing.print(&report, |report| {
        println!("Secure AUC (exact), {}", report.machine);
        println!(
            "{} held-out rows at {} Nodes: {:.1} s in all (median of {}): Nodes {:.3} s, key \
             holder {:.3} s, circuit {:.1} s",
            report.rows,
            report.nodes,
            report.total_seconds,
            runs.len(),
            report.node_seconds,
            report.keyholder_seconds,
            report.circuit_seconds
        );
        println!(
            "{:.3e} AND gates, {:.2} GB key holder -> aggregator; AUC {:.6} equals the pooled \
             computation",
            report.and_gates as f64,
            report.bytes_keyholder_to_aggregator as f64 / 1e9,
            report.auc
        );
    })
}

/// One ranking, timed by phase.
fn once(pair: &KeyPair, nodes: &[Vec<(f64, bool)>]) -> Result<Run> {
    let key = pair.secret.public_key().clone();
    let noise = DjnNoise::new(&key, &mut rand::rng());
    // The Nodes work in parallel: the slowest one counts.
    let mut node = 0.0f64;
    let mut shares = Vec::new();
    for rows in nodes {
        let start = Instant::now();
        shares.push(NodeShares::new(&key, rows.clone(), &noise)?);
        node = node.max(start.elapsed().as_secs_f64());
    }
    let counts: Vec<usize> = shares.iter().map(NodeShares::rows).collect();
    let seeds: Vec<Option<EncryptedVector>> = shares.iter().map(|s| s.seed.clone()).collect();
    let start = Instant::now();
    let theirs = ranking::expand_seeds(&seeds, &counts, &pair.secret)?;
    let keyholder = start.elapsed().as_secs_f64();
    let own: Vec<Vec<u64>> = shares.into_iter().map(|s| s.shares).collect();
    let start = Instant::now();
    let (k, e) = MemoryChannel::pair();
    let garbler_counts = counts.clone();
    let garbler = std::thread::spawn(move || -> std::io::Result<(u64, u64)> {
        let session = GarblerSession::new(k, &mut rand::rng())?;
        let mut party = KeyholderGc {
            session,
            rng: rand::rng(),
        };
        ranking::rank_circuit(&mut party, &garbler_counts, Some(&theirs), None)?;
        let ands = party.session.and_gates();
        let bytes = party.session.channel()?.bytes_sent();
        Ok((ands, bytes))
    });
    let session = EvaluatorSession::new(e, &mut rand::rng())?;
    let mut party = AggregatorGc::new(session, &key);
    let revealed = ranking::rank_circuit(&mut party, &counts, None, Some(&own))?;
    let (and_gates, bytes) = garbler
        .join()
        .map_err(|_| anyhow::anyhow!("the garbler thread panicked"))??;
    let circuit = start.elapsed().as_secs_f64();
    let (d, p) = revealed.expect("the aggregator learns D and P");
    Ok(Run {
        node,
        keyholder,
        circuit,
        and_gates,
        bytes,
        auc: ranking::auc(d, p, counts.iter().sum::<usize>() as u64),
    })
}
