//! `privlogit bench linalg`: the secure Cholesky factorisation and SPD inverse of a PrivLogit-like
//! bound matrix, by masked arithmetic or in garbled circuits, both servers in this process (the
//! real key-holder role on its own thread, the aggregator's solver on this one).
//!
//! The matrix is `X^T X / (4 n) + (lambda / N) I` for `n = 20 d` simulated rows with entries
//! uniform in `[-1, 1]`, encrypted the way Nodes send the bound; the public bounds are the
//! study's (entries from the Nodes' value bound, smallest eigenvalue `lambda / N`). The time
//! runs from the aggregator holding the encrypted matrix to it holding the result: for the
//! inverse, `Enc(A^-1)` ready for the Nodes (PrivLogit-Local's setup); for Cholesky, the factor
//! kept secret (PrivLogit-Hessian's setup in the circuit method, the shared factor in the masked
//! one). Errors are against the f64 result, relative to its largest entry.

use std::fmt::Write as _;
use std::thread;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use clap::{Args, ValueEnum};
use ndarray::{Array1, Array2};
use num_bigint::BigUint;
use num_traits::ToPrimitive;
use privlogit::protocols::cholesky::Cholesky;
use privlogit::protocols::paillier::{
    DjnNoise, EncryptedVector, Fixed, KeyPair, KeySize, Packing, SecretKey,
};
use privlogit::protocols::secure::gc::AggregatorGc;
use privlogit::protocols::secure::keyholder::{self, KeyholderStats};
use privlogit::protocols::secure::masked::block_spd as masked_linalg;
use privlogit::protocols::secure::solver::{self, LinearAlgebra, Solver};
use privlogit::protocols::secure::wire::{self, Step};
use privlogit::protocols::secure::{DEFAULT_FORMAT, PAILLIER_FRAC, SecureConfig, SecureError};
use privlogit_circuits::backend::{Bit, Builder, Plain, Word};
use privlogit_circuits::channel::{Channel, MemoryChannel};
use privlogit_circuits::session::EvaluatorSession;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::Serialize;

use crate::bench::machine::{machine, median};

/// Which computation to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Operation {
    /// The Cholesky factor.
    Cholesky,
    /// The SPD inverse.
    Inverse,
}

/// The Center's linear algebra a benchmark times: `--linear-algebra masked,circuit` (or
/// `--method`, its older name) runs both side by side on the same data, alternating.
#[derive(Debug, Args)]
pub struct LinearAlgebraChoice {
    /// masked, circuit, or both (`masked,circuit`), alternated run by run.
    #[arg(
        long = "linear-algebra",
        visible_alias = "method",
        value_name = "METHOD",
        value_delimiter = ',',
        default_value = "masked"
    )]
    pub methods: Vec<LinearAlgebra>,
}

/// Arguments of `privlogit bench linalg`.
#[derive(Debug, Args)]
pub struct LinalgBenchArgs {
    /// Matrix sides (repeat the flag for several).
    #[arg(long = "dim", value_name = "D", default_values_t = [100usize])]
    dims: Vec<usize>,
    #[command(flatten)]
    method: LinearAlgebraChoice,
    /// cholesky, inverse, or both.
    #[arg(
        long = "op",
        value_enum,
        value_delimiter = ',',
        default_value = "cholesky,inverse"
    )]
    ops: Vec<Operation>,
    /// Timed runs per figure (the median is reported).
    #[arg(long, default_value_t = 3, value_parser = super::at_least_one)]
    runs: usize,
    /// The study size N the public bounds assume (smallest eigenvalue lambda / N).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    rows: u64,
    /// The penalty lambda.
    #[arg(long, default_value_t = 1.0)]
    lambda: f64,
    /// Nodes whose bounds were summed (sets the entries' public bound).
    #[arg(long, default_value_t = 5)]
    parties: usize,
    /// Paillier modulus bits (below 2048 only for quick, insecure runs).
    #[arg(long, default_value_t = 2048, value_parser = super::modulus_bits)]
    key_bits: u32,
    /// Seed of the simulated matrix.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Masked method: compute the products' cross terms from dealt correlations (the dealer
    /// simulated in this process) instead of on Paillier ciphertexts.
    #[arg(long)]
    dealt: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Row {
    dimension: usize,
    operation: String,
    method: String,
    runs: usize,
    median_seconds: f64,
    min_seconds: f64,
    max_seconds: f64,
    bytes: u64,
    and_gates: u64,
    masked_products: u64,
    pivots: u64,
    relative_error: f64,
}

#[derive(Serialize)]
struct Report {
    machine: String,
    key_bits: u32,
    /// Fractional bits of the circuit method's words.
    circuit_fractional_bits: u32,
    /// Fractional bits of the masked method's integers.
    masked_fractional_bits: u32,
    rows: u64,
    lambda: f64,
    results: Vec<Row>,
}

/// One timed run's figures.
struct Sample {
    seconds: f64,
    bytes: u64,
    and_gates: u64,
    products: u64,
    pivots: u64,
    error: f64,
}

/// Runs `privlogit bench linalg`.
pub fn run(args: LinalgBenchArgs) -> Result<()> {
    if args.dims.iter().any(|&d| d == 0 || d > 1024) {
        return Err(anyhow!("--dim must be between 1 and 1024"));
    }
    if !(args.lambda > 0.0 && args.lambda.is_finite()) || args.rows == 0 || args.parties == 0 {
        return Err(anyhow!("--lambda, --rows and --parties must be positive"));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    eprintln!("generating a {}-bit key ...", args.key_bits);
    let pair = match args.key_bits {
        2048 => KeyPair::generate(KeySize::Bits2048, &mut rng),
        bits => KeyPair::generate_insecure_for_tests(bits, &mut rng),
    };
    let runs = args.runs.max(1);
    let mut results = Vec::new();
    for &d in &args.dims {
        let a = matrix(d, args.lambda / args.rows as f64, &mut rng);
        for &op in &args.ops {
            let mut samples: Vec<Vec<Sample>> =
                args.method.methods.iter().map(|_| Vec::new()).collect();
            for r in 0..runs {
                // Alternate the order of the methods, so drift on a shared machine hits both.
                let mut order: Vec<usize> = (0..args.method.methods.len()).collect();
                if r % 2 == 1 {
                    order.reverse();
                }
                for k in order {
                    let method = args.method.methods[k];
                    eprintln!("d = {d}, {op:?}, {method}, run {} of {runs} ...", r + 1);
                    let s = time_one(&pair.secret, &a, &args, op, method)?;
                    eprintln!("  {:.2} s, relative error {:.1e}", s.seconds, s.error);
                    samples[k].push(s);
                }
            }
            for (method, s) in args.method.methods.iter().zip(samples) {
                let seconds: Vec<f64> = s.iter().map(|x| x.seconds).collect();
                let last = s.last().expect("at least one run");
                results.push(Row {
                    dimension: d,
                    operation: format!("{op:?}").to_lowercase(),
                    method: method.to_string(),
                    runs,
                    median_seconds: median(&seconds),
                    min_seconds: seconds.iter().copied().fold(f64::INFINITY, f64::min),
                    max_seconds: seconds.iter().copied().fold(0.0, f64::max),
                    bytes: last.bytes,
                    and_gates: last.and_gates,
                    masked_products: last.products,
                    pivots: last.pivots,
                    relative_error: s.iter().map(|x| x.error).fold(0.0, f64::max),
                });
            }
        }
    }
    let report = Report {
        machine: machine(),
        key_bits: args.key_bits,
        circuit_fractional_bits: DEFAULT_FORMAT.frac(),
        masked_fractional_bits: PAILLIER_FRAC,
        rows: args.rows,
        lambda: args.lambda,
        results,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(())
}

fn table(report: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Secure linear algebra, {}-bit Paillier, {} fractional bits (circuit) and {} (masked), \
         bounds of a study of N = {} rows with lambda = {}; {}",
        report.key_bits,
        report.circuit_fractional_bits,
        report.masked_fractional_bits,
        report.rows,
        report.lambda,
        report.machine
    );
    let _ = writeln!(
        s,
        "{:>5} {:<9} {:<8} {:>4} {:>10} {:>17} {:>10} {:>11} {:>9} {:>7} {:>9}",
        "d",
        "op",
        "method",
        "runs",
        "median s",
        "min - max s",
        "MB",
        "AND gates",
        "products",
        "pivots",
        "rel. err"
    );
    for r in &report.results {
        let _ = writeln!(
            s,
            "{:>5} {:<9} {:<8} {:>4} {:>10.2} {:>8.2} - {:<7.2} {:>10.1} {:>11.3e} {:>9} {:>7} {:>9.1e}",
            r.dimension,
            r.operation,
            r.method,
            r.runs,
            r.median_seconds,
            r.min_seconds,
            r.max_seconds,
            r.bytes as f64 / 1e6,
            r.and_gates as f64,
            r.masked_products,
            r.pivots,
            r.relative_error
        );
    }
    s
}

/// `X^T X / (4 n) + mu I` for `n = 20 d` rows uniform in `[-1, 1]`.
fn matrix(d: usize, mu: f64, rng: &mut ChaCha20Rng) -> Array2<f64> {
    let n = 20 * d;
    let x = Array2::from_shape_fn((n, d), |_| rng.random_range(-1.0..1.0));
    let mut a = x.t().dot(&x) / (4.0 * n as f64);
    for i in 0..d {
        a[(i, i)] += mu;
    }
    a
}

/// The lower triangle of `a` at the study's fractional bits.
fn lower_fixed(a: &Array2<f64>, frac: u32) -> Result<Vec<Fixed>> {
    let d = a.nrows();
    let mut out = Vec::with_capacity(d * (d + 1) / 2);
    for i in 0..d {
        for j in 0..=i {
            out.push(Fixed::from_f64(a[(i, j)], frac)?);
        }
    }
    Ok(out)
}

fn time_one(
    secret: &SecretKey,
    a: &Array2<f64>,
    args: &LinalgBenchArgs,
    op: Operation,
    method: LinearAlgebra,
) -> Result<Sample> {
    let d = a.nrows();
    let key = secret.public_key();
    let config = SecureConfig::new(0x6c69_6e61, args.parties, d, DEFAULT_FORMAT);
    let config = match method {
        LinearAlgebra::Masked => config.with_frac(PAILLIER_FRAC),
        LinearAlgebra::Circuit => config,
    };
    let frac = config.frac;
    // The bound as the aggregator holds it after summing the Nodes' (penalty included).
    let values = lower_fixed(a, frac)?;
    let bound = (BigUint::from(args.parties + 1)) << (config.value_bits + frac);
    let noise = DjnNoise::new(key, &mut rand::rng());
    let lower = EncryptedVector::encrypt(key, &values, &bound, config.bound_packing(key)?, &noise)?;
    let bounds = solver::bounds_of(&lower, d, args.lambda / args.rows as f64);

    let (a_end, k_end) = MemoryChannel::pair();
    thread::scope(|scope| -> Result<Sample> {
        let config_k = config.clone();
        // No public decryptions in this bench: masked arithmetic only.
        let budget = keyholder::DecryptionBudget::new(d, d, false, false, 1);
        let keyholder = scope.spawn(move || {
            keyholder::serve(k_end, secret, &config_k, budget, &mut |_| Ok(()), None)
        });
        let session =
            EvaluatorSession::new(a_end, &mut rand::rng()).map_err(|e| anyhow!("base OT: {e}"))?;
        let mut solver = Solver::new(method, &noise, &config);
        let mut gc = AggregatorGc::with_noise(session, noise.clone());
        let start = Instant::now();
        if args.dealt && method == LinearAlgebra::Masked {
            let engine = solver.engine().expect("the masked method has an engine");
            engine.use_local_dealer(&mut gc)?;
        }
        let outcome: Result<(f64, f64), SecureError> = (|| match (op, method) {
            (Operation::Inverse, _) => {
                let factored = solver.factor(
                    &mut gc, key, &config, &lower, &bounds, true, false, b"bench",
                )?;
                let seconds = start.elapsed().as_secs_f64();
                let inverse = factored.inverse.expect("asked for the inverse");
                let got = inverse.decrypt_f64(secret)?;
                Ok((seconds, inverse_error(a, &got)))
            }
            (Operation::Cholesky, LinearAlgebra::Circuit) => {
                solver.factor(
                    &mut gc, key, &config, &lower, &bounds, false, false, b"bench",
                )?;
                let seconds = start.elapsed().as_secs_f64();
                Ok((seconds, circuit_cholesky_error(a, &values, &config)))
            }
            (Operation::Cholesky, LinearAlgebra::Masked) => {
                let engine = solver.engine().expect("the masked method has an engine");
                let shared = engine.share_lower(&mut gc, &lower, d, bound.bits() as u32)?;
                let (l, _) = masked_linalg::cholesky(engine, &mut gc, &shared, &bounds, false)?;
                let seconds = start.elapsed().as_secs_f64();
                let packing = Packing::new(key, l.mask_bits() + 3)?;
                let enc = engine.encrypted(&mut gc, &l, packing)?;
                let got = enc.decrypt(secret)?;
                let got = Array2::from_shape_fn((d, d), |(i, j)| {
                    got.get(i, j).to_f64().unwrap_or(f64::NAN) / f64::from(frac).exp2()
                });
                Ok((seconds, cholesky_error(a, &got)))
            }
        })();
        let ch = gc.session.channel().map_err(|e| anyhow!("ending: {e}"))?;
        let bytes_a = ch.bytes_sent();
        wire::send(ch, config.session, Step::Done, &[]).map_err(|e| anyhow!("ending: {e}"))?;
        let stats: KeyholderStats = keyholder
            .join()
            .map_err(|_| anyhow!("the key holder's thread panicked"))?
            .context("key holder")?;
        let (seconds, error) = outcome.context("aggregator")?;
        let solver_stats = solver.stats();
        let (m, h) = (&solver_stats.masked, &stats.masked);
        if method == LinearAlgebra::Masked {
            eprintln!(
                "  aggregator: cross terms {:.2} s, waiting {:.2} s, pivots {:.2} s; key holder: \
                 Paillier {:.2} s ({} decryptions, {} encryptions), products {:.2} s, pivots {:.2} s",
                m.cross_seconds,
                m.wait_seconds,
                m.leaf_seconds,
                h.paillier_seconds,
                h.decryptions,
                h.encryptions,
                h.product_seconds,
                h.leaf_seconds
            );
        }
        Ok(Sample {
            seconds,
            bytes: bytes_a + stats.bytes_sent,
            and_gates: stats.and_gates,
            products: solver_stats.masked.products,
            pivots: solver_stats.masked.leaves,
            error,
        })
    })
}

fn largest(m: &Array2<f64>) -> f64 {
    m.iter().fold(0.0f64, |a, v| a.max(v.abs()))
}

fn inverse_error(a: &Array2<f64>, got: &[Vec<f64>]) -> f64 {
    let d = a.nrows();
    let chol = Cholesky::factor(a).expect("the benchmark matrix is SPD");
    let mut reference = Array2::zeros((d, d));
    for j in 0..d {
        let mut e = Array1::zeros(d);
        e[j] = 1.0;
        reference.column_mut(j).assign(&chol.solve(&e));
    }
    let worst = (0..d)
        .flat_map(|i| (0..d).map(move |j| (i, j)))
        .map(|(i, j)| (got[i][j] - reference[(i, j)]).abs())
        .fold(0.0f64, f64::max);
    worst / largest(&reference)
}

fn cholesky_error(a: &Array2<f64>, got: &Array2<f64>) -> f64 {
    let reference = Cholesky::factor(a).expect("the benchmark matrix is SPD");
    let diff = got - reference.lower();
    largest(&diff) / largest(reference.lower())
}

/// The circuit method keeps its factor inside the garbled session; the same circuit on the
/// plaintext backend gives the very bits the garbled one computed (garbling is exact), so the
/// error is read there.
fn circuit_cholesky_error(a: &Array2<f64>, lower: &[Fixed], config: &SecureConfig) -> f64 {
    let format = config.format;
    let d = a.nrows();
    let width = format.width() as usize;
    let mut b = Builder::plain();
    let word = |b: &mut Builder<Plain>, v: &Fixed| -> Word<bool> {
        let raw = v.value.to_i64().expect("a 64-bit word");
        b.input_u128(u128::from(format.to_word(raw)), width)
    };
    let words: Vec<Word<bool>> = lower.iter().map(|v| word(&mut b, v)).collect();
    let at = |i: usize, j: usize| words[i.max(j) * (i.max(j) + 1) / 2 + i.min(j)].clone();
    let m: Vec<Vec<Word<bool>>> = (0..d).map(|i| (0..d).map(|j| at(i, j)).collect()).collect();
    let l =
        privlogit_circuits::matrix_circuits::MatrixCircuit::new(&mut b, format, None).cholesky(&m);
    let value =
        |w: &[Bit<bool>]| format.decode(format.from_word(Builder::<Plain>::value(w) as u64));
    let got = Array2::from_shape_fn((d, d), |(i, j)| if j <= i { value(&l[i][j]) } else { 0.0 });
    cholesky_error(a, &got)
}
