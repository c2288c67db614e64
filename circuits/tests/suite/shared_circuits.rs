//! The Bristol Fashion reference circuits of `../shared/circuits` give their known answers, and
//! export then import reproduces each one.

use privlogit_circuits::bristol;
use privlogit_circuits::circuit::{Circuit, bits_of, bytes_of};

fn load(name: &str) -> Circuit {
    let path = format!(
        "{}/../../shared/circuits/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bristol::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn word(x: u64) -> Vec<bool> {
    bits_of(&x.to_le_bytes(), 64)
}

fn value(bits: &[bool]) -> u64 {
    let mut bytes = bytes_of(bits);
    bytes.resize(8, 0);
    u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
}

fn run(c: &Circuit, inputs: &[u64]) -> Vec<u64> {
    let groups: Vec<Vec<bool>> = inputs
        .iter()
        .zip(c.inputs())
        .map(|(&x, &size)| word(x)[..size].to_vec())
        .collect();
    c.evaluate(&groups)
        .expect("evaluates")
        .iter()
        .map(|b| value(b))
        .collect()
}

/// Gate counts as listed in ../shared/circuits/README.md.
#[test]
fn gate_counts_match_the_catalogue() {
    for (name, and, xor, inv) in [
        ("adder64.txt", 63, 313, 0),
        ("sub64.txt", 63, 313, 63),
        ("neg64.txt", 62, 63, 64),
        ("mult2_64.txt", 8128, 19904, 0),
        ("divide64.txt", 4664, 24817, 445),
        ("udivide64.txt", 4285, 12603, 64),
        ("zero_equal.txt", 63, 0, 64),
    ] {
        let c = load(name);
        let counts = c.counts();
        assert_eq!(
            (counts.and, counts.xor, counts.not),
            (and, xor, inv),
            "{name}"
        );
        assert_eq!(
            bristol::parse(&bristol::write(&c)).expect("round trip"),
            c,
            "{name}"
        );
    }
}

#[test]
fn known_answers_in_plaintext() {
    let pairs = [
        (0u64, 0u64),
        (1, u64::MAX),
        (0x0123456789abcdef, 0xfedcba9876543210),
        (u64::MAX, u64::MAX),
        (1 << 63, 12345),
    ];
    let adder = load("adder64.txt");
    let sub = load("sub64.txt");
    let neg = load("neg64.txt");
    let udiv = load("udivide64.txt");
    let zero = load("zero_equal.txt");
    for (a, b) in pairs {
        assert_eq!(run(&adder, &[a, b]), vec![a.wrapping_add(b)]);
        assert_eq!(run(&sub, &[a, b]), vec![a.wrapping_sub(b)]);
        assert_eq!(run(&neg, &[a]), vec![a.wrapping_neg()]);
        if b != 0 {
            assert_eq!(run(&udiv, &[a, b]), vec![a / b], "{a} / {b}");
        }
        assert_eq!(run(&zero, &[a]), vec![u64::from(a == 0)]);
    }
    let mult = load("mult2_64.txt");
    assert_eq!(
        run(&mult, &[0x0123456789abcdef, 0xfedcba9876543210]),
        vec![0x0121fa00ad77d742, 0x2236d88fe5618cf0]
    );
    for (a, b) in pairs {
        let full = u128::from(a) * u128::from(b);
        assert_eq!(run(&mult, &[a, b]), vec![(full >> 64) as u64, full as u64]);
    }
    let div = load("divide64.txt");
    assert_eq!(
        run(&div, &[(-1000000007i64) as u64, 12345]),
        vec![(-81004i64) as u64]
    );
    for (a, b) in [
        (100i64, 7i64),
        (-100, 7),
        (100, -7),
        (-100, -7),
        (i64::MAX, 3),
    ] {
        assert_eq!(
            run(&div, &[a as u64, b as u64]),
            vec![(a / b) as u64],
            "{a} / {b}"
        );
    }
}
