//! Arithmetic on additive shares modulo 2^128 between the two servers, the scales a vertical
//! study keeps its values at, and the pseudo-random streams shares are drawn from.
//!
//! A value `v` is shared as `a + b = v (mod 2^128)`; linear maps are applied share by share.
//! Reals are fixed point: features at [`X_FRAC`] fractional bits, coefficients at
//! [`BETA_FRAC`], so a linear predictor is at `X_FRAC + BETA_FRAC` and a gradient (features
//! times residuals at [`R_FRAC`]) at `X_FRAC + R_FRAC`. Shares leave the ring in two ways:
//! [`truncate`] (each server drops low bits and keeps a narrow word, exact to one unit in the
//! last place, as in SecureML's local truncation) and [`to_integer`] (integer shares whose sum is
//! the value exactly, with probability `1 - 2^-40`, for encryption under Paillier).

use num_bigint::BigInt;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

/// Fractional bits of features.
pub const X_FRAC: u32 = 28;
/// Fractional bits of coefficients. The gradient is evaluated at `beta` rounded to this
/// resolution, so its error grows with N: about `N h 2^-(BETA_FRAC + 1) sqrt(p)` for a
/// per-row curvature `h`. At 32 bits that was 1.2e-5 at 100,000 x 61 (above the circuit's
/// floor of 9.2e-6: such a study never met its gradient test, its iterates hovering 3e-10
/// from the optimum); at 48 it is below 1e-9 for any N a study takes. `z = X beta` is then at
/// `X_FRAC + BETA_FRAC = 76` fractional bits, below 2^92 in magnitude: far inside the ring.
pub const BETA_FRAC: u32 = 48;
/// Fractional bits of residuals (the logistic circuit's output scale).
pub const R_FRAC: u32 = 32;
/// Values converted by [`to_integer`] must be below `2^INTEGER_OFFSET` in magnitude: the shares'
/// sum then wraps exactly once unless the key holder's share falls below `2^(OFFSET + 1)`,
/// probability `2^(OFFSET + 1 - 128) = 2^-40`.
pub const INTEGER_OFFSET: u32 = 87;

/// Which server holds a share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The key holder (garbler).
    KeyHolder,
    /// The aggregator (evaluator).
    Aggregator,
}

/// `x` at `frac` fractional bits, two's complement modulo 2^128 (`None` when it does not fit
/// in 100 bits, or is not finite).
pub fn encode(x: f64, frac: u32) -> Option<u128> {
    let scaled = (x * f64::from(frac).exp2()).round();
    (scaled.is_finite() && scaled.abs() < 2f64.powi(100)).then_some(scaled as i128 as u128)
}

/// A ring element read as a signed number at `frac` fractional bits.
pub fn decode(v: u128, frac: u32) -> f64 {
    v as i128 as f64 / f64::from(frac).exp2()
}

/// A 256-bit seed.
pub type Seed = [u8; 32];

/// A stream of ring elements from `seed` for one purpose (`label`) and index (round, party).
pub fn stream(seed: &Seed, label: &str, index: u64, len: usize) -> Vec<u128> {
    let mut rng = generator(seed, label, index);
    (0..len).map(|_| rng.random::<u128>()).collect()
}

/// A stream of bits, packed 64 to a word.
pub fn bit_stream(seed: &Seed, label: &str, index: u64, len: usize) -> Vec<u64> {
    let mut rng = generator(seed, label, index);
    (0..len.div_ceil(64)).map(|_| rng.random::<u64>()).collect()
}

fn generator(seed: &Seed, label: &str, index: u64) -> ChaCha20Rng {
    let mut h = Sha256::new();
    h.update(b"privlogit vertical stream v1\0");
    h.update(seed);
    h.update(label.as_bytes());
    h.update([0]);
    h.update(index.to_le_bytes());
    ChaCha20Rng::from_seed(h.finalize().into())
}

/// `M^T v` for `M` of `rows x cols` stored by rows, modulo 2^128.
pub fn transpose_times(m: &[u128], cols: usize, v: &[u128]) -> Vec<u128> {
    let mut out = vec![0u128; cols];
    for (row, &x) in m.chunks_exact(cols).zip(v) {
        for (o, &a) in out.iter_mut().zip(row) {
            *o = o.wrapping_add(a.wrapping_mul(x));
        }
    }
    out
}

/// `M^T N` for `M` (`rows x p`) and `N` (`rows x q`), both by rows: `p x q` by rows.
pub fn transpose_product(m: &[u128], p: usize, n: &[u128], q: usize) -> Vec<u128> {
    let mut out = vec![0u128; p * q];
    for (mr, nr) in m.chunks_exact(p).zip(n.chunks_exact(q)) {
        for (i, &a) in mr.iter().enumerate() {
            let row = &mut out[i * q..(i + 1) * q];
            for (o, &b) in row.iter_mut().zip(nr) {
                *o = o.wrapping_add(a.wrapping_mul(b));
            }
        }
    }
    out
}

/// `M v` for `M` of `rows x cols` by rows.
pub fn times(m: &[u128], cols: usize, v: &[u128]) -> Vec<u128> {
    m.chunks_exact(cols)
        .map(|row| {
            row.iter()
                .zip(v)
                .fold(0u128, |acc, (&a, &b)| acc.wrapping_add(a.wrapping_mul(b)))
        })
        .collect()
}

/// Element-wise `a + b` (into `a`).
pub fn add_into(a: &mut [u128], b: &[u128]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.wrapping_add(*y);
    }
}

/// Element-wise `a - b`.
pub fn sub(a: &[u128], b: &[u128]) -> Vec<u128> {
    a.iter().zip(b).map(|(x, y)| x.wrapping_sub(*y)).collect()
}

/// A share's low `width` bits after dropping `shift` bits: the two servers' truncated shares
/// add up (mod `2^width`) to `floor(v / 2^shift)` or one less, for any shared `v`, as long as
/// `width <= 128 - shift` (the wrap of the full sum is a multiple of `2^(128 - shift)`).
pub fn truncate(share: u128, shift: u32, width: u32) -> u64 {
    debug_assert!(width <= 64 && width + shift <= 128);
    ((share >> shift) & ((1u128 << width) - 1)) as u64
}

/// A share with `shift` low bits dropped, still a ring element (SecureML's local truncation,
/// Mohassel and Zhang 2017, Theorem 1): the two servers' results add up to `floor(v / 2^shift)`
/// or one more, unless the key holder's share lies within `|v|` of the wrap (probability
/// `|v| / 2^128`).
pub fn truncate_share(share: u128, shift: u32, side: Side) -> u128 {
    match side {
        Side::KeyHolder => share >> shift,
        Side::Aggregator => (share.wrapping_neg() >> shift).wrapping_neg(),
    }
}

/// A share as an integer share: the key holder's is its ring element read as `[0, 2^128)`, the
/// aggregator's is its element plus `2^OFFSET`, minus `2^128 + 2^OFFSET`. For a shared value
/// `|v| < 2^INTEGER_OFFSET` the two integers add up to `v` exactly unless the key holder's
/// share is below `2^(OFFSET + 1)` (probability `2^-40` for a uniform share).
pub fn to_integer(share: u128, side: Side) -> BigInt {
    let offset = 1u128 << INTEGER_OFFSET;
    match side {
        Side::KeyHolder => BigInt::from(share),
        Side::Aggregator => {
            BigInt::from(share.wrapping_add(offset)) - (BigInt::from(1u8) << 128) - offset
        }
    }
}

/// `floor(x / d)` for integers (towards minus infinity): the two servers' quotients of their
/// integer shares add up to the value's quotient or one less.
pub fn floor_div(x: &BigInt, d: u64) -> BigInt {
    use num_integer::Integer;
    x.div_floor(&BigInt::from(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn local_truncation_and_integer_shares_recover_the_value() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        for _ in 0..2000 {
            let v = (rng.random::<i64>() as i128) << (rng.next_u32() % 20);
            let b: u128 = rng.random();
            let a = (v as u128).wrapping_sub(b);
            // Truncation: floor(v / 2^36) or one less, modulo 2^44.
            let (shift, width) = (36, 44);
            let t = (truncate(a, shift, width) + truncate(b, shift, width)) & ((1 << width) - 1);
            let expected = ((v >> shift) as u64) & ((1 << width) - 1);
            let below = expected.wrapping_sub(1) & ((1 << width) - 1);
            assert!(t == expected || t == below, "{v}: {t} vs {expected}");
            // Truncation in the ring: floor(v / 2^36) or one more.
            let t = truncate_share(a, shift, Side::Aggregator).wrapping_add(truncate_share(
                b,
                shift,
                Side::KeyHolder,
            )) as i128;
            let floor = v >> shift;
            assert!(t == floor || t == floor + 1, "{v}: {t} vs {floor}");
            // Integer shares: exact, and their quotients by d within one.
            let (ia, ib) = (
                to_integer(a, Side::Aggregator),
                to_integer(b, Side::KeyHolder),
            );
            assert_eq!(&ia + &ib, BigInt::from(v));
            let d = 569;
            let q = floor_div(&ia, d) + floor_div(&ib, d);
            let exact = floor_div(&BigInt::from(v), d);
            assert!(q == exact || q == &exact - 1);
        }
    }

    #[test]
    fn fixed_point_round_trips() {
        for x in [0.0, 1.5, -2.25, 1e-9, -12345.678] {
            let e = encode(x, X_FRAC).expect("fits");
            assert!((decode(e, X_FRAC) - x).abs() <= 0.5 / f64::from(X_FRAC).exp2());
        }
        assert_eq!(encode(f64::NAN, 10), None);
        assert_eq!(encode(1e30, 28), None);
    }
}
