//! Garbled execution equals plaintext execution: the reference Bristol circuits with their
//! known answers, random circuits, and builder-made circuits, both roles on two threads over an
//! in-memory channel.

use privlogit_circuits::backend::{Bit, Builder, Word};
use privlogit_circuits::bristol;
use privlogit_circuits::channel::MemoryChannel;
use privlogit_circuits::circuit::{Circuit, Gate, bits_of};
use privlogit_circuits::garble::{Evaluator, Garbler};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Runs `circuit` garbled: the garbler supplies every input group, the evaluator learns every
/// output group. Returns the outputs and the AND gates garbled.
fn garbled(circuit: &Circuit, inputs: &[Vec<bool>], seed: u64) -> (Vec<Vec<bool>>, u64) {
    let (gc, ec) = MemoryChannel::pair();
    let c1 = circuit.clone();
    let inputs1 = inputs.to_vec();
    let garbler = std::thread::spawn(move || {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut b = Builder::new(Garbler::new(gc, &mut rng));
        let words: Vec<Word<u128>> = inputs1
            .iter()
            .map(|bits| b.garbler_input(bits, &mut rng).expect("send inputs"))
            .collect();
        let outputs = b.run_circuit(&c1, &words);
        for o in &outputs {
            b.reveal_to_evaluator(o).expect("reveal");
        }
        let ands = b.backend().and_gates();
        b.into_backend().finish().expect("no channel error");
        ands
    });
    let mut b = Builder::new(Evaluator::new(ec));
    let words: Vec<Word<u128>> = circuit
        .inputs()
        .iter()
        .map(|&w| b.garbler_input(w).expect("receive inputs"))
        .collect();
    let outputs = b.run_circuit(circuit, &words);
    let values: Vec<Vec<bool>> = outputs
        .iter()
        .map(|o| b.reveal_to_evaluator(o).expect("decode"))
        .collect();
    let ands = garbler.join().expect("garbler thread");
    assert_eq!(ands, b.backend().and_gates());
    (values, ands)
}

fn load(name: &str) -> Circuit {
    let path = format!(
        "{}/../../shared/circuits/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    bristol::parse(&std::fs::read_to_string(path).expect("readable")).expect("valid")
}

fn word(x: u64) -> Vec<bool> {
    bits_of(&x.to_le_bytes(), 64)
}

#[test]
fn reference_circuits_garbled() {
    let cases: &[(&str, &[u64])] = &[
        ("adder64.txt", &[0xffff_ffff_ffff_fff0, 0x25]),
        ("sub64.txt", &[5, 7]),
        ("neg64.txt", &[12345]),
        ("mult2_64.txt", &[0x0123456789abcdef, 0xfedcba9876543210]),
        ("divide64.txt", &[(-1000000007i64) as u64, 12345]),
        ("udivide64.txt", &[1_000_000_007, 12345]),
        ("zero_equal.txt", &[0]),
        ("zero_equal.txt", &[8]),
    ];
    for (name, values) in cases {
        let c = load(name);
        let inputs: Vec<Vec<bool>> = values
            .iter()
            .zip(c.inputs())
            .map(|(&v, &w)| word(v)[..w].to_vec())
            .collect();
        let expected = c.evaluate(&inputs).expect("plaintext");
        let (got, ands) = garbled(&c, &inputs, 7);
        assert_eq!(got, expected, "{name}");
        assert_eq!(ands, c.counts().and, "{name}");
    }
    // The known answers themselves, through garbling.
    let (got, _) = garbled(
        &load("mult2_64.txt"),
        &[word(0x0123456789abcdef), word(0xfedcba9876543210)],
        1,
    );
    assert_eq!(
        got,
        vec![word(0x0121fa00ad77d742), word(0x2236d88fe5618cf0)]
    );
    let (got, _) = garbled(
        &load("divide64.txt"),
        &[word((-1000000007i64) as u64), word(12345)],
        2,
    );
    assert_eq!(got, vec![word((-81004i64) as u64)]);
}

/// A random circuit of `gates` gates over `inputs` input wires, from `seed`.
fn random_circuit(inputs: usize, gates: usize, outputs: usize, seed: u64) -> Circuit {
    let mut state = seed | 1;
    let mut next = |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    let mut list = Vec::new();
    let mut wires = inputs as u32;
    for _ in 0..gates {
        let (a, b) = (next(wires as usize) as u32, next(wires as usize) as u32);
        let out = wires;
        wires += 1;
        list.push(match next(6) {
            0 | 1 => Gate::And { a, b, out },
            2 | 3 => Gate::Xor { a, b, out },
            4 => Gate::Not { a, out },
            _ => Gate::Const {
                value: next(2) == 1,
                out,
            },
        });
    }
    // Copy some wires to the outputs.
    for _ in 0..outputs {
        let a = next(wires as usize) as u32;
        list.push(Gate::Copy { a, out: wires });
        wires += 1;
    }
    Circuit::new(wires as usize, vec![inputs], vec![outputs], list).expect("valid")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_circuits_garble_correctly(seed in any::<u64>(), input in any::<u64>()) {
        let c = random_circuit(16, 300, 24, seed);
        let inputs = vec![word(input)[..16].to_vec()];
        let expected = c.evaluate(&inputs).expect("plaintext");
        let (got, _) = garbled(&c, &inputs, seed ^ 0x55);
        prop_assert_eq!(got, expected);
    }
}

/// A builder-made fixed-point multiply garbled equals the plaintext backend's.
#[test]
fn builder_circuits_garble_correctly() {
    let format = privlogit_circuits::FixedFormat::DEFAULT;
    let mut rec = Builder::recorder();
    let (x, y) = (rec.input(64), rec.input(64));
    let p = privlogit_circuits::fixed_gadgets::mul(&mut rec, &x, &y, format);
    let (q, _) = privlogit_circuits::fixed_gadgets::div(&mut rec, &x, &y, format, false);
    let circuit = rec.finish(&[p, q]).expect("valid");
    let (a, b) = (
        format.encode(-3.25).expect("in range"),
        format.encode(1.75).expect("in range"),
    );
    let inputs = vec![word(format.to_word(a)), word(format.to_word(b))];
    let (got, _) = garbled(&circuit, &inputs, 3);
    let value = |bits: &[bool]| {
        let raw = bits
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, &v)| acc | (u64::from(v) << i));
        format.decode(format.from_word(raw))
    };
    assert_eq!(value(&got[0]), -5.6875);
    assert!((value(&got[1]) - (-3.25 / 1.75)).abs() <= format.resolution() / 2.0);
    let _ = Bit::<u128>::Const(true);
}

/// The gate-list fast path (stage schedule, slot reuse) gives the same results.
#[test]
fn gate_list_fast_path_matches_plaintext() {
    use privlogit_circuits::circuit::Schedule;
    let mut circuits: Vec<(Circuit, Vec<Vec<bool>>)> = [
        "mult2_64.txt",
        "divide64.txt",
        "zero_equal.txt",
        "neg64.txt",
    ]
    .iter()
    .map(|name| {
        let c = load(name);
        let inputs = c
            .inputs()
            .iter()
            .enumerate()
            .map(|(k, &w)| word(0x9e37_79b9_7f4a_7c15u64.rotate_left(k as u32 * 7))[..w].to_vec())
            .collect();
        (c, inputs)
    })
    .collect();
    for seed in 0..8u64 {
        let c = random_circuit(16, 400, 24, seed + 100);
        circuits.push((c, vec![word(seed * 0x1234_5678_9abc)[..16].to_vec()]));
    }
    for (circuit, inputs) in circuits {
        let expected = circuit.evaluate(&inputs).expect("plaintext");
        let schedule = Schedule::new(&circuit);
        let (gc, ec) = MemoryChannel::pair();
        let (c2, s2) = (circuit.clone(), schedule.clone());
        let flat: Vec<bool> = inputs.concat();
        let flat2 = flat.clone();
        let garbler = std::thread::spawn(move || {
            let mut rng = ChaCha20Rng::seed_from_u64(9);
            let mut g = Garbler::new(gc, &mut rng);
            let zeros = g.fresh_labels(flat2.len(), &mut rng);
            let active: Vec<u128> = zeros
                .iter()
                .zip(&flat2)
                .map(|(z, &bit)| if bit { z ^ g.delta() } else { *z })
                .collect();
            let outputs = g.garble_circuit(&c2, &s2, &zeros);
            let permute: Vec<bool> = outputs.iter().map(|z| z & 1 == 1).collect();
            g.finish().expect("channel");
            (active, permute)
        });
        // The garbler's active input labels reach the evaluator out of band here; the session
        // sends them over the channel.
        let (active, permute) = {
            let mut e = Evaluator::new(ec);
            let handle = garbler;
            let (active, permute) = handle.join().expect("garbler");
            let outputs = e.evaluate_circuit(&circuit, &schedule, &active);
            let got: Vec<bool> = outputs
                .iter()
                .zip(&permute)
                .map(|(l, &p)| (l & 1 == 1) != p)
                .collect();
            assert_eq!(got, expected.concat());
            (active, permute)
        };
        let _ = (active, permute, flat);
    }
}

/// A session with inputs from both parties (the evaluator's through OT), outputs revealed to
/// each party and a masked output, and a word reused across two circuits.
#[test]
fn two_party_session_with_ot() {
    use privlogit_circuits::fixed_gadgets::{mul, sqrt};
    use privlogit_circuits::session::{EvaluatorSession, GarblerSession};
    use privlogit_circuits::word::add;
    let format = privlogit_circuits::FixedFormat::DEFAULT;
    let enc = move |x: f64| word(format.to_word(format.encode(x).expect("in range")));
    let dec = move |bits: &[bool]| {
        let raw = bits
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, &v)| acc | (u64::from(v) << i));
        format.decode(format.from_word(raw))
    };
    let (gc, ec) = MemoryChannel::pair();
    let mask_value = 0x0bad_c0de_1234_5678u64;
    let garbler = std::thread::spawn(move || {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let mut s = GarblerSession::new(gc, &mut rng).expect("session");
        let x = s.garbler_input(&enc(6.25), &mut rng).expect("input");
        let y = s.evaluator_input(64).expect("ot input");
        // First circuit: p = x * y, kept.
        let p = mul(s.builder(), &x, &y, format);
        // Second circuit reuses p: sqrt(p) to the evaluator, p to the garbler.
        let r = sqrt(s.builder(), &p, format);
        s.reveal_to_evaluator(&r).expect("reveal");
        let p_clear = s.reveal_to_garbler(&p).expect("reveal");
        // p + mask (the evaluator's random input) revealed to the garbler: it learns only the
        // masked value.
        let m = s.evaluator_input(64).expect("ot input");
        let masked = add(s.builder(), &p, &m);
        let masked_clear = s.reveal_to_garbler(&masked).expect("reveal");
        s.finish().expect("finish");
        (dec(&p_clear), masked_clear)
    });
    let mut rng = ChaCha20Rng::seed_from_u64(12);
    let mut s = EvaluatorSession::new(ec, &mut rng).expect("session");
    let x = s.garbler_input(64).expect("input");
    let y = s.evaluator_input(&enc(4.0)).expect("ot input");
    let p = mul(s.builder(), &x, &y, format);
    let r = sqrt(s.builder(), &p, format);
    let root = dec(&s.reveal_to_evaluator(&r).expect("reveal"));
    s.reveal_to_garbler(&p).expect("reveal");
    let m = s.evaluator_input(&word(mask_value)).expect("ot input");
    let masked = add(s.builder(), &p, &m);
    s.reveal_to_garbler(&masked).expect("reveal");
    let (p_clear, masked_clear) = garbler.join().expect("garbler");
    assert_eq!(root, 5.0);
    assert_eq!(p_clear, 25.0);
    let raw = masked_clear
        .iter()
        .enumerate()
        .fold(0u64, |acc, (i, &v)| acc | (u64::from(v) << i));
    assert_eq!(
        raw,
        format
            .to_word(format.encode(25.0).expect("in range"))
            .wrapping_add(mask_value)
    );
}
