//! `privlogit bench`: timings on this machine, as tables or JSON, each beside what it is compared
//! with. This module times the Paillier layer (`bench paillier`, the figures
//! `benches/compare_phe.py` sets against phe); the others live in its submodules:
//! [`circuits`], [`protocols`], [`linalg`], [`node_round`], [`dl_vs_sgd`], [`secure_auc`]; [`machine`] names the
//! machine and takes medians.

pub mod circuits;
pub mod dl_vs_sgd;
pub mod linalg;
pub mod machine;
pub mod node_round;
pub mod protocols;
pub mod secure_auc;
pub mod study_phases;
pub mod vertical_parts;

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ndarray::Array2;
use num_bigint::{BigInt, BigUint};
use privlogit::protocols::paillier::{
    CrtNoise, DjnNoise, EncryptedMatrix, Fixed, KeyPair, KeySize, NoisePool, Packing, StandardNoise,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::Serialize;

use crate::bench::machine::{machine, median_seconds};

/// Arguments of `privlogit bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to time.
    #[command(subcommand)]
    pub what: BenchTarget,
}

/// What to time.
#[derive(Debug, Subcommand)]
pub enum BenchTarget {
    /// Paillier primitives and the encrypted matrix-vector product.
    Paillier(PaillierArgs),
    /// Garbling throughput, OT extension, and a secure Cholesky factorisation.
    Circuits(crate::bench::circuits::CircuitBenchArgs),
    /// The secure protocols and the plaintext run on the same simulated data, in one table.
    Protocols(crate::bench::protocols::ProtocolBenchArgs),
    /// Secure Cholesky and SPD inverse by masked arithmetic or garbled circuits.
    Linalg(crate::bench::linalg::LinalgBenchArgs),
    /// One Node's per-round sums on streamed rows, with its peak memory.
    Node(crate::bench::node_round::NodeBenchArgs),
    /// DPSTGD against plain distributed SGD: time and bytes per iteration.
    Dl(crate::bench::dl_vs_sgd::DlBenchArgs),
    /// The exact secure AUC of held-out rows at several Nodes (sharing, merge circuit).
    Ranking(crate::bench::secure_auc::RankingBenchArgs),
    /// A vertical study: the private set intersection, and the secure fit's rounds.
    Vertical(crate::bench::vertical_parts::VerticalBenchArgs),
    /// A whole study (a study file, every party in this process): where its wall time goes,
    /// by phase and party, beside a floor.
    Study(crate::bench::study_phases::StudyBenchArgs),
}

/// A count that must be at least 1 (runs, threads): 0 used to be taken as 1 in silence.
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{s:?} is not a count ({e})")),
    }
}

/// A Paillier modulus size a bench can make a key of: even, from 128 bits (insecure below
/// 2048) to the largest the protocols take.
pub fn modulus_bits(s: &str) -> Result<u32, String> {
    let most = privlogit_protocols::paillier::keys::MAX_MODULUS_BITS;
    let bits: u32 = s
        .parse()
        .map_err(|e| format!("{s:?} is not a number of bits ({e})"))?;
    if bits < 128 || !bits.is_multiple_of(2) || u64::from(bits) > most {
        return Err(format!(
            "{bits} is not an even number of bits from 128 to {most} (2048 and above are secure)"
        ));
    }
    Ok(bits)
}

/// Arguments of `privlogit bench paillier`.
#[derive(Debug, Args)]
pub struct PaillierArgs {
    /// Modulus size: 2048, 3072 or 4096 (smaller sizes are for quick, insecure runs).
    #[arg(long, default_value_t = 2048, value_parser = modulus_bits)]
    bits: u32,
    /// Side of the square matrix for the Enc(M) v comparison (0 skips it).
    #[arg(long, default_value_t = 200)]
    matrix: usize,
    /// Timed runs per figure (the median is reported).
    #[arg(long, default_value_t = 7, value_parser = at_least_one)]
    runs: usize,
    /// Worker threads for the timed operations (setup uses all cores).
    #[arg(long, default_value_t = 1, value_parser = at_least_one)]
    threads: usize,
    /// Seed for keys and inputs (timings do not depend on it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// One measured figure.
#[derive(Serialize)]
struct Figure {
    name: &'static str,
    /// Median seconds per operation.
    seconds: f64,
    runs: usize,
}

#[derive(Serialize)]
struct Report {
    bits: u32,
    threads: usize,
    machine: String,
    figures: Vec<Figure>,
    matvec: Option<MatVec>,
}

#[derive(Serialize)]
struct MatVec {
    size: usize,
    packed_ciphertexts: usize,
    slots_per_ciphertext: usize,
    unpacked_ciphertexts: usize,
    packed_multiexp_seconds: f64,
    entrywise_seconds: f64,
    speedup: f64,
}

/// Runs `privlogit bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    let args = match args.what {
        BenchTarget::Paillier(args) => args,
        BenchTarget::Circuits(args) => return crate::bench::circuits::run(args),
        BenchTarget::Protocols(args) => return crate::bench::protocols::run(args),
        BenchTarget::Linalg(args) => return crate::bench::linalg::run(args),
        BenchTarget::Node(args) => return crate::bench::node_round::run(args),
        BenchTarget::Dl(args) => return crate::bench::dl_vs_sgd::run(args),
        BenchTarget::Ranking(args) => return crate::bench::secure_auc::run(args),
        BenchTarget::Vertical(args) => return crate::bench::vertical_parts::run(args),
        BenchTarget::Study(args) => return crate::bench::study_phases::run(args),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.max(1))
        .build()
        .context("cannot start worker threads")?;
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    eprintln!("generating a {}-bit key ...", args.bits);
    let pair = match args.bits {
        2048 => KeyPair::generate(KeySize::Bits2048, &mut rng),
        3072 => KeyPair::generate(KeySize::Bits3072, &mut rng),
        4096 => KeyPair::generate(KeySize::Bits4096, &mut rng),
        bits => KeyPair::generate_insecure_for_tests(bits, &mut rng),
    };
    let key = pair.public_key();
    let secret = &pair.secret;
    let standard = StandardNoise::new(key);
    let djn = DjnNoise::new(key, &mut rng);
    let crt = CrtNoise::new(secret);
    let pool_noise =
        NoisePool::new(DjnNoise::from_base(key, djn.base().clone()).expect("valid base"));
    let m = BigUint::from(rng.random::<u64>());
    let c = key.encrypt(&m, &djn, &mut rng);
    let scalar = BigInt::from(-(rng.random::<i64>().unsigned_abs() as i128 >> 1));
    let positive = BigInt::from(rng.random::<u64>() >> 1);

    let runs = args.runs.max(1);
    let mut figures = Vec::new();
    let mut measure = |name: &'static str, f: &mut (dyn FnMut() + Send)| {
        eprintln!("timing {name} ...");
        let seconds = pool.install(|| median_seconds(runs, f));
        figures.push(Figure {
            name,
            seconds,
            runs,
        });
    };
    measure("encrypt_standard", &mut || {
        black_box(key.encrypt(&m, &standard, &mut rng));
    });
    let mut rng2 = ChaCha20Rng::seed_from_u64(args.seed + 1);
    measure("encrypt_djn", &mut || {
        black_box(key.encrypt(&m, &djn, &mut rng2));
    });
    measure("encrypt_crt_keyholder", &mut || {
        black_box(key.encrypt(&m, &crt, &mut rng2));
    });
    measure("encrypt_pooled_online", &mut || {
        // The pool refills itself when empty; time only the online step.
        if pool_noise.available() == 0 {
            pool_noise.fill(64);
        }
        black_box(key.encrypt(&m, &pool_noise, &mut rng2));
    });
    measure("decrypt", &mut || {
        black_box(secret.decrypt(&c).expect("decrypts"));
    });
    measure("decrypt_without_crt", &mut || {
        black_box(secret.decrypt_without_crt(&c).expect("decrypts"));
    });
    measure("mul_scalar_negative_63bit", &mut || {
        black_box(key.mul_scalar(&c, &scalar));
    });
    measure("mul_scalar_positive_63bit", &mut || {
        black_box(key.mul_scalar(&c, &positive));
    });
    measure("add", &mut || {
        black_box(key.add(&c, &c));
    });

    let matvec = (args.matrix > 0)
        .then(|| matvec(&pool, key, &djn, args.matrix, runs, &mut rng))
        .transpose()?;
    let report = Report {
        bits: args.bits,
        threads: args.threads.max(1),
        machine: machine(),
        figures,
        matvec,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

/// Enc(M) v for an n x n matrix: packed columns with multi-exponentiation against one scalar
/// multiplication per entry of an unpacked matrix. Entries uniform in [-1, 1], vector entries
/// uniform in [-4, 4], both at 32 fractional bits.
fn matvec(
    pool: &rayon::ThreadPool,
    key: &privlogit::protocols::paillier::PublicKey,
    noise: &DjnNoise,
    n: usize,
    runs: usize,
    rng: &mut ChaCha20Rng,
) -> Result<MatVec> {
    const SCALE: u32 = 32;
    let matrix = Array2::from_shape_fn((n, n), |_| rng.random::<f64>() * 2.0 - 1.0);
    let v: Vec<Fixed> = (0..n)
        .map(|_| Fixed::from_f64(rng.random::<f64>() * 8.0 - 4.0, SCALE))
        .collect::<Result<_, _>>()?;
    let entry_bound = Fixed::bound_for(1.0, SCALE)?;
    let packing = Packing::for_sums(key, &(&entry_bound * Fixed::bound_for(4.0, SCALE)?), n)?;
    eprintln!("encrypting the {n} x {n} matrix packed and unpacked (setup, all cores) ...");
    let packed = EncryptedMatrix::encrypt_f64(key, matrix.view(), SCALE, 1.0, packing, noise)?;
    let unpacked = EncryptedMatrix::encrypt_f64(
        key,
        matrix.view(),
        SCALE,
        1.0,
        Packing::unpacked(key),
        noise,
    )?;
    eprintln!("timing Enc(M) v, packed with multi-exponentiation ...");
    let packed_seconds = pool.install(|| {
        median_seconds(runs, &mut || {
            black_box(packed.mul_vector(key, &v).expect("fits"));
        })
    });
    eprintln!("timing Enc(M) v, one scalar multiplication per entry (one run) ...");
    let start = Instant::now();
    pool.install(|| black_box(unpacked.mul_vector_entrywise(key, &v).expect("fits")));
    let entrywise_seconds = start.elapsed().as_secs_f64();
    Ok(MatVec {
        size: n,
        packed_ciphertexts: packed.ciphertext_count(),
        slots_per_ciphertext: packing.slots(),
        unpacked_ciphertexts: unpacked.ciphertext_count(),
        packed_multiexp_seconds: packed_seconds,
        entrywise_seconds,
        speedup: entrywise_seconds / packed_seconds,
    })
}

fn print_table(report: &Report) {
    println!(
        "Paillier, {}-bit n, {} thread(s), {}",
        report.bits, report.threads, report.machine
    );
    for f in &report.figures {
        println!("{:<28} {:>12}", f.name, human(f.seconds));
    }
    if let Some(m) = &report.matvec {
        println!(
            "Enc(M) v, {n} x {n}: packed + multi-exponentiation {} ({} ciphertexts, {} slots each); \
             one scalar multiplication per entry {} ({} ciphertexts); speed-up {:.1}x",
            human(m.packed_multiexp_seconds),
            m.packed_ciphertexts,
            m.slots_per_ciphertext,
            human(m.entrywise_seconds),
            m.unpacked_ciphertexts,
            m.speedup,
            n = m.size,
        );
    }
}

fn human(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.3} ms", seconds * 1e3)
    } else {
        format!("{:.1} us", seconds * 1e6)
    }
}
