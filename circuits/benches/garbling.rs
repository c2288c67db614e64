//! Garbling throughput in AND gates per second, one thread: the gate-list path on the 64-bit
//! multiplier from `../shared/circuits` (the same kind of test as EMP-toolkit's AES Bristol
//! benchmark), and the builder path on fixed-point multiplications; plus garbler and evaluator
//! on two threads through an in-memory channel; and IKNP OT extension.
//!
//! Run with: cargo bench -p privlogit-circuits --bench garbling

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use privlogit_circuits::FixedFormat;
use privlogit_circuits::backend::Builder;
use privlogit_circuits::bristol;
use privlogit_circuits::channel::{Discard, MemoryChannel};
use privlogit_circuits::circuit::{Circuit, Schedule};
use privlogit_circuits::fixed_gadgets::mul;
use privlogit_circuits::garble::{Evaluator, Garbler};
use privlogit_circuits::ot::{CotReceiver, CotSender};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn multiplier() -> Circuit {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/circuits/mult2_64.txt"
    );
    bristol::parse(&std::fs::read_to_string(path).expect("shared circuits")).expect("valid")
}

fn garbling(c: &mut Criterion) {
    let circuit = multiplier();
    let schedule = Schedule::new(&circuit);
    let ands = circuit.counts().and;
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut garbler = Garbler::new(Discard::default(), &mut rng);
    let inputs = garbler.fresh_labels(128, &mut rng);

    let mut group = c.benchmark_group("garbling");
    group.throughput(Throughput::Elements(ands));
    group.bench_function("garble_gate_list_mult2_64", |b| {
        b.iter(|| garbler.garble_circuit(&circuit, &schedule, &inputs))
    });

    // Builder path: 16 fixed-point multiplications per iteration, built and garbled at once.
    let format = FixedFormat::DEFAULT;
    let mut builder = Builder::new(Garbler::new(Discard::default(), &mut rng));
    let words: Vec<_> = (0..32)
        .map(|_| {
            builder
                .garbler_input(&[false; 64], &mut rng)
                .expect("discarded")
        })
        .collect();
    let per_mul = {
        let mut count = Builder::counter();
        let (x, y) = (count.input(64), count.input(64));
        mul(&mut count, &x, &y, format);
        count.counts().and
    };
    group.throughput(Throughput::Elements(16 * per_mul));
    group.bench_function("garble_builder_16_fixed_point_muls", |b| {
        b.iter(|| {
            for k in 0..16 {
                mul(&mut builder, &words[2 * k], &words[2 * k + 1], format);
            }
        })
    });

    // Both roles on two threads, 64 multipliers per iteration.
    group.throughput(Throughput::Elements(64 * ands));
    group.sample_size(10);
    group.bench_function("garble_and_evaluate_two_threads_mult2_64_x64", |b| {
        b.iter(|| {
            let (gc, ec) = MemoryChannel::pair();
            let (c2, s2) = (circuit.clone(), schedule.clone());
            let garbler = std::thread::spawn(move || {
                let mut rng = ChaCha20Rng::seed_from_u64(2);
                let mut g = Garbler::new(gc, &mut rng);
                let inputs = g.fresh_labels(128, &mut rng);
                for _ in 0..64 {
                    g.garble_circuit(&c2, &s2, &inputs);
                }
                g.finish().expect("channel");
            });
            let mut e = Evaluator::new(ec);
            for _ in 0..64 {
                e.evaluate_circuit(&circuit, &schedule, &[0u128; 128]);
            }
            garbler.join().expect("garbler thread");
        })
    });
    group.finish();
}

/// IKNP extension of 2^18 correlated OTs per iteration, sender and receiver on two threads
/// (the base OTs are done once, outside the timing).
fn ot_extension(c: &mut Criterion) {
    let m = 1 << 18;
    let (mut a, mut b) = MemoryChannel::pair();
    let (mut sender, mut receiver) = std::thread::scope(|scope| {
        let sender = scope.spawn(|| {
            let mut rng = ChaCha20Rng::seed_from_u64(3);
            CotSender::setup(&mut a, 0x1234_5678_9abc_def1, &mut rng).expect("base OT")
        });
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let receiver = CotReceiver::setup(&mut b, &mut rng).expect("base OT");
        (sender.join().expect("sender thread"), receiver)
    });
    let choices: Vec<bool> = (0..m).map(|j| j % 3 == 0).collect();
    let mut group = c.benchmark_group("ot");
    group.throughput(Throughput::Elements(m as u64));
    group.sample_size(20);
    group.bench_function("iknp_extend_2pow18_two_threads", |bench| {
        bench.iter(|| {
            std::thread::scope(|scope| {
                scope.spawn(|| sender.extend(&mut a, m).expect("extend"));
                receiver.extend(&mut b, &choices).expect("extend")
            })
        })
    });
    group.finish();
}

criterion_group!(benches, garbling, ot_extension);
criterion_main!(benches);
