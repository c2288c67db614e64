//! Cholesky and inverse circuits on random SPD matrices against f64: max abs error at most 1e-6
//! relative to the largest entry, at the default 64 / 32 format.

use privlogit_circuits::backend::{Bit, Builder, Plain};
use privlogit_circuits::fixed_format::FixedFormat;
use privlogit_circuits::matrix_circuits::{Matrix, MatrixCircuit, dot_product};

const F: FixedFormat = FixedFormat::DEFAULT;

/// A = B B^T / d + I for B with entries uniform in [-1, 1] from a fixed linear generator:
/// entries O(1), well conditioned.
fn spd(d: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let b: Vec<Vec<f64>> = (0..d).map(|_| (0..d).map(|_| next()).collect()).collect();
    (0..d)
        .map(|i| {
            (0..d)
                .map(|j| {
                    let s: f64 = (0..d).map(|k| b[i][k] * b[j][k]).sum();
                    s / d as f64 + if i == j { 1.0 } else { 0.0 }
                })
                .collect()
        })
        .collect()
}

fn encode(b: &mut Builder<Plain>, m: &[Vec<f64>]) -> Matrix<bool> {
    m.iter()
        .map(|row| {
            row.iter()
                .map(|&x| {
                    let raw = F.encode(x).expect("in range");
                    b.input_u128(u128::from(F.to_word(raw)), 64)
                })
                .collect()
        })
        .collect()
}

fn decode(w: &[Bit<bool>]) -> f64 {
    F.decode(F.from_word(Builder::<Plain>::value(w) as u64))
}

fn cholesky_f64(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let d = a.len();
    let mut l = vec![vec![0.0; d]; d];
    for j in 0..d {
        let s: f64 = a[j][j] - (0..j).map(|k| l[j][k] * l[j][k]).sum::<f64>();
        l[j][j] = s.sqrt();
        for i in j + 1..d {
            let t: f64 = a[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            l[i][j] = t / l[j][j];
        }
    }
    l
}

fn inverse_f64(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    // Gauss-Jordan with partial pivoting.
    let d = a.len();
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut row = r.clone();
            row.extend((0..d).map(|j| if i == j { 1.0 } else { 0.0 }));
            row
        })
        .collect();
    for c in 0..d {
        let p = (c..d)
            .max_by(|&x, &y| m[x][c].abs().total_cmp(&m[y][c].abs()))
            .expect("rows");
        m.swap(c, p);
        let pivot = m[c][c];
        m[c].iter_mut().for_each(|v| *v /= pivot);
        for r in 0..d {
            if r != c {
                let factor = m[r][c];
                let pivot_row = m[c].clone();
                m[r].iter_mut()
                    .zip(&pivot_row)
                    .for_each(|(v, p)| *v -= factor * p);
            }
        }
    }
    m.into_iter().map(|r| r[d..].to_vec()).collect()
}

fn max_relative_error(got: &[Vec<f64>], want: &[Vec<f64>]) -> f64 {
    let largest = want.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    got.iter()
        .flatten()
        .zip(want.iter().flatten())
        .fold(0.0f64, |m, (g, w)| m.max((g - w).abs()))
        / largest
}

#[test]
fn cholesky_and_inverse_match_f64() {
    for d in [5usize, 20, 50] {
        let a = spd(d, d as u64);
        let mut b = Builder::plain();
        let wa = encode(&mut b, &a);
        let l = MatrixCircuit::new(&mut b, F, None).cholesky(&wa);
        let got: Vec<Vec<f64>> = l
            .iter()
            .map(|r| r.iter().map(|w| decode(w)).collect())
            .collect();
        let error = max_relative_error(&got, &cholesky_f64(&a));
        eprintln!("d = {d}: Cholesky max abs error / max entry = {error:.2e}");
        assert!(error <= 1e-6, "Cholesky d = {d}: {error:e}");

        let inv = MatrixCircuit::new(&mut b, F, None).spd_inverse_from_cholesky(&l);
        let got: Vec<Vec<f64>> = inv
            .iter()
            .map(|r| r.iter().map(|w| decode(w)).collect())
            .collect();
        let error = max_relative_error(&got, &inverse_f64(&a));
        eprintln!("d = {d}: inverse max abs error / max entry = {error:.2e}");
        assert!(error <= 1e-6, "inverse d = {d}: {error:e}");

        // Solving A x = v by substitution agrees with the inverse.
        let v: Vec<f64> = (0..d).map(|i| (i as f64 * 0.37).sin()).collect();
        let wv: Vec<_> = encode(&mut b, std::slice::from_ref(&v)).remove(0);
        let x = MatrixCircuit::new(&mut b, F, None).cholesky_solve(&l, &wv);
        let want: Vec<f64> = inverse_f64(&a)
            .iter()
            .map(|r| r.iter().zip(&v).map(|(p, q)| p * q).sum())
            .collect();
        let got: Vec<f64> = x.iter().map(|w| decode(w)).collect();
        let error = max_relative_error(&[got], &[want]);
        assert!(error <= 1e-6, "solve d = {d}: {error:e}");
        let dot = decode(&dot_product(&mut b, &wv, &wv, F));
        let want: f64 = v.iter().map(|x| x * x).sum();
        assert!((dot - want).abs() <= 1e-8, "dot: {dot} vs {want}");
    }
}

/// AND gates of the Cholesky circuit, counted by running it on the counting backend
/// (`cargo test --release -p privlogit-circuits --test suite matrix_circuits::gate_count -- --nocapture`).
fn cholesky_ands(d: usize) -> u64 {
    let mut c = Builder::counter();
    let a: Matrix<()> = (0..d)
        .map(|_| (0..d).map(|_| c.input(64)).collect())
        .collect();
    MatrixCircuit::new(&mut c, F, None).cholesky(&a);
    c.counts().and
}

#[test]
fn cholesky_gate_counts_small() {
    let d10 = cholesky_ands(10);
    let d50 = cholesky_ands(50);
    eprintln!("Cholesky AND gates: d = 10: {d10}, d = 50: {d50}");
    // About d^3/6 products of ~7,100 gates plus d^2/2 divisions and d square roots.
    assert!(d50 < 200_000_000, "{d50}");
}

#[test]
fn cholesky_gate_count_d100() {
    let d100 = cholesky_ands(100);
    eprintln!("Cholesky AND gates: d = 100: {d100}");
    assert!(d100 <= 2_000_000_000, "{d100}");
}
