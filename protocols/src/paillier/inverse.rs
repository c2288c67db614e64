//! Modular inversion modulo an odd number by Pornin's optimised binary GCD ("Optimized binary
//! GCD for modular inversion", IACR ePrint 2020/972, Algorithm 2, with k = 32).
//!
//! Each outer step runs 31 binary-GCD iterations on 64-bit approximations of the operands
//! (their low 31 and top 33 bits), recording the transformation as a 2 x 2 matrix of small
//! signed integers, then applies it to the full-size values at once. About `2 bits / 31` outer
//! steps, each a few linear passes over the limbs: some ten times faster than num-bigint's
//! extended Euclid at 4096 bits. Variable time; used only on public values (ciphertexts).

/// Inner iterations per outer step (k - 1 in the paper).
const STEP: u32 = 31;

/// `x^-1 mod m` for odd `m > 1` and `x` below `m` (both little-endian, `x` padded to `m`'s
/// length), or `None` when `gcd(x, m) != 1`.
pub fn invert_mod_odd(x: &[u64], m: &[u64]) -> Option<Vec<u64>> {
    let n = m.len();
    assert!(
        x.len() == n && m[0] & 1 == 1,
        "odd modulus, operand of the same length"
    );
    // -m^-1 mod 2^64, by Newton iteration.
    let mut inv: u64 = 1;
    for _ in 0..6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(m[0].wrapping_mul(inv)));
    }
    let minv = inv.wrapping_neg();

    let mut a = x.to_vec();
    let mut b = m.to_vec();
    let mut u = vec![0u64; n];
    u[0] = 1;
    let mut v = vec![0u64; n];
    // Pornin's bound is ceil((2 len(m) - 1) / 31) steps; the cap only guards against a bug.
    let cap = (128 * n).div_ceil(STEP as usize) + 4;
    for _ in 0..cap {
        if a.iter().all(|&w| w == 0) {
            break;
        }
        let len = bit_length(&a).max(bit_length(&b)).max(64);
        let mut a_approx = approximate(&a, len);
        let mut b_approx = approximate(&b, len);
        let (mut f0, mut g0, mut f1, mut g1) = (1i64, 0i64, 0i64, 1i64);
        for _ in 0..STEP {
            if a_approx & 1 == 1 {
                if a_approx < b_approx {
                    std::mem::swap(&mut a_approx, &mut b_approx);
                    std::mem::swap(&mut f0, &mut f1);
                    std::mem::swap(&mut g0, &mut g1);
                }
                a_approx -= b_approx;
                f0 -= f1;
                g0 -= g1;
            }
            a_approx >>= 1;
            f1 <<= 1;
            g1 <<= 1;
        }
        let (new_a, a_negative) = combine_shift(&a, f0, &b, g0);
        let (new_b, b_negative) = combine_shift(&a, f1, &b, g1);
        if a_negative {
            f0 = -f0;
            g0 = -g0;
        }
        if b_negative {
            f1 = -f1;
            g1 = -g1;
        }
        (a, b) = (new_a, new_b);
        let new_u = combine_mod(&u, f0, &v, g0, m, minv);
        let new_v = combine_mod(&u, f1, &v, g1, m, minv);
        (u, v) = (new_u, new_v);
    }
    let one = b[0] == 1 && b[1..].iter().all(|&w| w == 0);
    (a.iter().all(|&w| w == 0) && one).then_some(v)
}

fn bit_length(x: &[u64]) -> usize {
    super::limbs::bit_length(x)
}

/// The low 31 bits of `x` below its top 33 bits (of a `len`-bit frame): line 4 of Algorithm 2.
fn approximate(x: &[u64], len: usize) -> u64 {
    let low = x[0] & ((1 << STEP) - 1);
    let shift = len - 33;
    let (word, bit) = (shift / 64, shift % 64);
    let mut top = x.get(word).copied().unwrap_or(0) >> bit;
    if bit > 0 {
        top |= x.get(word + 1).copied().unwrap_or(0) << (64 - bit);
    }
    low | ((top & ((1 << 33) - 1)) << STEP)
}

/// `|a f + b g| / 2^31` (exact) and whether `a f + b g` was negative. Before the shift the
/// value can exceed the limbs by 32 bits, so it is handled with one extra word.
fn combine_shift(a: &[u64], f: i64, b: &[u64], g: i64) -> (Vec<u64>, bool) {
    let (mut t, top) = linear(a, f, b, g);
    let negative = top < 0;
    t.push(top as u64);
    if negative {
        negate(&mut t);
    }
    shift_right(&mut t, STEP);
    debug_assert_eq!(t.last(), Some(&0), "the shifted value fits the limbs");
    t.pop();
    (t, negative)
}

/// `(u f + v g) / 2^31 mod m`, for `u, v < m`: add the multiple of `m` that clears the low 31
/// bits, shift, then bring the result from `(-2m, 2m)` into `[0, m)`.
fn combine_mod(u: &[u64], f: i64, v: &[u64], g: i64, m: &[u64], minv: u64) -> Vec<u64> {
    let (mut t, mut top) = linear(u, f, v, g);
    let q = t[0].wrapping_mul(minv) & ((1 << STEP) - 1);
    let mut carry: i128 = 0;
    for (ti, &mi) in t.iter_mut().zip(m) {
        let s = i128::from(*ti) + i128::from(mi) * i128::from(q) + carry;
        *ti = s as u64;
        carry = s >> 64;
    }
    top += carry;
    // Shift the (n + 1)-word signed value right by 31.
    let n = t.len();
    for i in 0..n {
        let next = if i + 1 < n { t[i + 1] } else { top as u64 };
        t[i] = (t[i] >> STEP) | (next << (64 - STEP));
    }
    top >>= STEP;
    while top < 0 {
        top += i128::from(add_in_place(&mut t, m));
    }
    while top > 0 || !less(&t, m) {
        top -= i128::from(sub_in_place(&mut t, m));
    }
    t
}

/// `a f + b g` as `n` low words and a signed top (arithmetic carry).
fn linear(a: &[u64], f: i64, b: &[u64], g: i64) -> (Vec<u64>, i128) {
    let mut out = vec![0u64; a.len()];
    let mut carry: i128 = 0;
    for i in 0..a.len() {
        let s = i128::from(a[i]) * i128::from(f) + i128::from(b[i]) * i128::from(g) + carry;
        out[i] = s as u64;
        carry = s >> 64;
    }
    (out, carry)
}

/// Two's-complement negation.
fn negate(x: &mut [u64]) {
    let mut carry = 1u64;
    for w in x.iter_mut() {
        let (s, c) = (!*w).overflowing_add(carry);
        *w = s;
        carry = u64::from(c);
    }
}

fn shift_right(x: &mut [u64], bits: u32) {
    let n = x.len();
    for i in 0..n {
        let next = if i + 1 < n { x[i + 1] } else { 0 };
        x[i] = (x[i] >> bits) | (next << (64 - bits));
    }
}

/// `x += m`, returning the carry out.
fn add_in_place(x: &mut [u64], m: &[u64]) -> u64 {
    let mut carry = 0u64;
    for (w, &mi) in x.iter_mut().zip(m) {
        let (s1, c1) = w.overflowing_add(mi);
        let (s2, c2) = s1.overflowing_add(carry);
        *w = s2;
        carry = u64::from(c1 | c2);
    }
    carry
}

/// `x -= m`, returning the borrow out.
fn sub_in_place(x: &mut [u64], m: &[u64]) -> u64 {
    let mut borrow = 0u64;
    for (w, &mi) in x.iter_mut().zip(m) {
        let (d1, b1) = w.overflowing_sub(mi);
        let (d2, b2) = d1.overflowing_sub(borrow);
        *w = d2;
        borrow = u64::from(b1 | b2);
    }
    borrow
}

fn less(a: &[u64], b: &[u64]) -> bool {
    for i in (0..a.len()).rev() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigUint;
    use proptest::prelude::*;

    fn limbs(x: &BigUint, n: usize) -> Vec<u64> {
        let mut v = x.to_u64_digits();
        v.resize(n, 0);
        v
    }

    fn check(x: &BigUint, m: &BigUint) {
        let n = m.to_u64_digits().len();
        let got = invert_mod_odd(&limbs(x, n), &limbs(m, n));
        let expected = x.modinv(m).map(|i| limbs(&i, n));
        assert_eq!(got, expected, "x = {x}, m = {m}");
    }

    #[test]
    fn small_and_edge_cases() {
        for (x, m) in [
            (1u64, 3u64),
            (2, 3),
            (3, 7),
            (6, 9),
            (0, 9),
            (5, 1_000_000_007),
        ] {
            check(&BigUint::from(x), &BigUint::from(m));
        }
        let m = (BigUint::from(1u8) << 4095) + 12345u32;
        check(&(&m - 1u32), &m);
        check(&BigUint::from(2u8), &m);
    }

    proptest! {
        #[test]
        fn agrees_with_num_bigint(words in proptest::collection::vec(any::<u64>(), 1..70), xs in proptest::collection::vec(any::<u64>(), 70)) {
            let mut m = BigUint::from_slice(&crate::paillier::montgomery::u32_digits(&words));
            m |= BigUint::from(1u8);
            prop_assume!(m > BigUint::from(1u8));
            let x = BigUint::from_slice(&crate::paillier::montgomery::u32_digits(&xs)) % &m;
            check(&x, &m);
        }
    }
}
