//! Exact products of integer matrices: the key holder's product of two views and the
//! aggregator's product of two masks, both `O(m k n)` on values of about 100 bits.
//!
//! When every entry fits in 126 bits (the usual case: bounds of 60-90 bits plus sigma = 40 of
//! mask) the products run on `i128` with a 320-bit accumulator, about 20 times faster than
//! `BigInt`; wider entries (very ill-conditioned studies) fall back to `BigInt`.

use num_bigint::{BigInt, Sign};
use num_traits::ToPrimitive;
use rayon::prelude::*;

use super::matrix::IntMatrix;

/// Widest entry (in bits of magnitude) the `i128` path takes.
const FAST_BITS: u64 = 126;

/// `x y`, exactly.
pub fn product(x: &IntMatrix, y: &IntMatrix) -> IntMatrix {
    assert_eq!(x.cols(), y.rows(), "inner dimensions agree");
    let (m, k, n) = (x.rows(), x.cols(), y.cols());
    if x.max_bits() <= FAST_BITS && y.max_bits() <= FAST_BITS {
        let xs: Vec<i128> = x.data().iter().map(to_i128).collect();
        // y by columns, so that each output entry reads two contiguous slices.
        let yt: Vec<i128> = (0..n)
            .flat_map(|j| (0..k).map(move |l| (l, j)))
            .map(|(l, j)| to_i128(y.get(l, j)))
            .collect();
        let data: Vec<BigInt> = (0..m * n)
            .into_par_iter()
            .map(|at| {
                let (i, j) = (at / n, at % n);
                dot_i128(&xs[i * k..(i + 1) * k], &yt[j * k..(j + 1) * k])
            })
            .collect();
        return IntMatrix::from_vec(m, n, data);
    }
    let yt = y.transpose();
    let data: Vec<BigInt> = (0..m * n)
        .into_par_iter()
        .map(|at| {
            let (i, j) = (at / n, at % n);
            (0..k).map(|l| x.get(i, l) * yt.get(j, l)).sum()
        })
        .collect();
    IntMatrix::from_vec(m, n, data)
}

fn to_i128(v: &BigInt) -> i128 {
    v.to_i128().expect("checked to fit in 126 bits")
}

/// `sum a_i b_i` for values below `2^126` in magnitude and at most `2^60` terms: each product
/// is below `2^252`, the sum below `2^312`, held in five 64-bit limbs (two's complement).
fn dot_i128(a: &[i128], b: &[i128]) -> BigInt {
    let mut acc = [0u64; 5];
    for (&x, &y) in a.iter().zip(b) {
        let (hi, lo) = mul_u128(x.unsigned_abs(), y.unsigned_abs());
        if (x < 0) != (y < 0) {
            apply_256(&mut acc, hi, lo, u64::overflowing_sub);
        } else {
            apply_256(&mut acc, hi, lo, u64::overflowing_add);
        }
    }
    let negative = acc[4] >> 63 == 1;
    if negative {
        // Two's complement back to a magnitude.
        let mut carry = true;
        for limb in &mut acc {
            let (v, c) = (!*limb).overflowing_add(u64::from(carry));
            *limb = v;
            carry = c;
        }
    }
    let digits: Vec<u32> = acc
        .iter()
        .flat_map(|l| [*l as u32, (*l >> 32) as u32])
        .collect();
    BigInt::from_slice(if negative { Sign::Minus } else { Sign::Plus }, &digits)
}

/// The 256-bit product of two `u128`s as `(high, low)`.
fn mul_u128(a: u128, b: u128) -> (u128, u128) {
    let (a1, a0) = (a >> 64, a & u128::from(u64::MAX));
    let (b1, b0) = (b >> 64, b & u128::from(u64::MAX));
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mask = u128::from(u64::MAX);
    let mid = (p00 >> 64) + (p01 & mask) + (p10 & mask);
    let lo = (p00 & mask) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    (hi, lo)
}

/// Adds `hi:lo` to the accumulator (`op`: `u64::overflowing_add`) or subtracts it
/// (`u64::overflowing_sub`), carrying or borrowing across the limbs.
#[inline(always)]
fn apply_256(acc: &mut [u64; 5], hi: u128, lo: u128, op: fn(u64, u64) -> (u64, bool)) {
    let parts = [
        lo as u64,
        (lo >> 64) as u64,
        hi as u64,
        (hi >> 64) as u64,
        0,
    ];
    let mut carry = false;
    for (limb, part) in acc.iter_mut().zip(parts) {
        let (v, c1) = op(*limb, part);
        let (v, c2) = op(v, u64::from(carry));
        *limb = v;
        carry = c1 || c2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(x: &IntMatrix, y: &IntMatrix) -> IntMatrix {
        IntMatrix::from_fn(x.rows(), y.cols(), |i, j| {
            (0..x.cols()).map(|l| x.get(i, l) * y.get(l, j)).sum()
        })
    }

    fn big(bits: u32, seed: u64, negative: bool) -> BigInt {
        // A deterministic value of about `bits` bits.
        let mut v = BigInt::from(seed | 1);
        while v.bits() < u64::from(bits) {
            v = &v * BigInt::from(0x9e37_79b9_7f4a_7c15u64) + BigInt::from(seed);
        }
        v >>= v.bits().saturating_sub(u64::from(bits));
        if negative { -v } else { v }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The i128 path equals BigInt arithmetic, at every width up to its limit and with
        /// mixed signs (the accumulator must carry and borrow across all five limbs).
        #[test]
        fn fast_path_is_exact(m in 1usize..5, k in 1usize..9, n in 1usize..5,
                              bits in 1u32..=126, seed in 1u64..u64::MAX) {
            let x = IntMatrix::from_fn(m, k, |i, j| big(bits, seed ^ (i * 31 + j) as u64, (i + j + seed as usize).is_multiple_of(3)));
            let y = IntMatrix::from_fn(k, n, |i, j| big(bits, seed.rotate_left(7) ^ (i * 17 + j) as u64, (i * j + seed as usize).is_multiple_of(2)));
            prop_assert_eq!(product(&x, &y), reference(&x, &y));
        }
    }

    #[test]
    fn wide_entries_take_the_bigint_path() {
        let x = IntMatrix::from_fn(2, 3, |i, j| big(200, (i + 3 * j + 1) as u64, i == 1));
        let y = IntMatrix::from_fn(3, 2, |i, j| big(150, (7 * i + j + 1) as u64, j == 0));
        assert_eq!(product(&x, &y), reference(&x, &y));
    }
}
