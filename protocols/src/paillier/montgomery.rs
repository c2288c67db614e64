//! Montgomery arithmetic modulo a fixed odd modulus, on little-endian `u64` limbs.
//!
//! Everything Paillier does is exponentiation modulo `n^2`, `p^2` or `q^2`, so this module is
//! the engine under all of it. Products use finely integrated product scanning (Koc, Acar and
//! Kaliski, "Analyzing and comparing Montgomery multiplication algorithms", IEEE Micro 1996):
//! each output column is summed into a 192-bit accumulator, interleaving the multiplication and
//! the reduction. Squaring forms each cross product once and doubles it. For the limb counts of
//! real keys (32, 48, 64, 96, 128) the kernels are instantiated with a constant length, which lets
//! the compiler unroll them; any other odd modulus (test-size keys) uses the same code with a
//! run-time length.
//!
//! Side channels: the multiplication, squaring and final subtraction have no branches or memory
//! accesses that depend on the operands. [`Montgomery::pow_secret`] uses a fixed window and
//! selects table entries by masking over the whole table, so its timing and memory access
//! pattern depend only on the exponent's length. [`Montgomery::pow_public`] and the
//! multi-exponentiation are variable-time in the exponent and are used only where the exponent
//! is public or belongs to the party computing.

use num_bigint::BigUint;
use zeroize::Zeroize;

/// Largest supported modulus, in limbs: `n^2` for a 4096-bit `n`.
pub const MAX_LIMBS: usize = 128;

/// A value in Montgomery form, `a R mod m` with `R = 2^(64 limbs)`, as limbs.
pub type Residue = Vec<u64>;

/// Montgomery context for one odd modulus `m`. The modulus may be secret (`p^2`), so the
/// context is zeroized on drop.
#[derive(Clone)]
pub struct Montgomery {
    modulus: Vec<u64>,
    /// `-m^{-1} mod 2^64`.
    minv: u64,
    /// `R^2 mod m`, to enter Montgomery form.
    r2: Residue,
    /// `R^3 mod m`, to enter Montgomery form from a double-width value.
    r3: Residue,
    /// `R mod m`, the Montgomery form of 1.
    one: Residue,
}

impl std::fmt::Debug for Montgomery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The modulus may be secret: show only its size.
        write!(f, "Montgomery {{ limbs: {} }}", self.limbs())
    }
}

impl Drop for Montgomery {
    fn drop(&mut self) {
        self.modulus.zeroize();
        self.minv.zeroize();
        self.r2.zeroize();
        self.r3.zeroize();
        self.one.zeroize();
    }
}

impl Montgomery {
    /// A context for the odd modulus `m > 1` of at most [`MAX_LIMBS`] limbs.
    ///
    /// # Panics
    /// If `m` is even, 1, or too large: callers pass moduli they built, so this is a bug.
    pub fn new(m: &BigUint) -> Self {
        assert!(
            m.bit(0) && m.bits() > 1,
            "Montgomery modulus must be odd and > 1"
        );
        let modulus = m.to_u64_digits();
        let n = modulus.len();
        assert!(n <= MAX_LIMBS, "modulus of {} bits is too large", m.bits());
        // Newton iteration for the inverse modulo 2^64: each step doubles the correct bits.
        let mut inv: u64 = 1;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(modulus[0].wrapping_mul(inv)));
        }
        let r_bits = 64 * n as u64;
        let to_limbs = |x: BigUint| pad(x.to_u64_digits(), n);
        let mut context = Self {
            minv: inv.wrapping_neg(),
            one: to_limbs((BigUint::from(1u8) << r_bits) % m),
            r2: to_limbs((BigUint::from(1u8) << (2 * r_bits)) % m),
            r3: to_limbs((BigUint::from(1u8) << (3 * r_bits)) % m),
            modulus,
        };
        context.modulus.shrink_to_fit();
        context
    }

    /// Number of limbs of the modulus.
    pub fn limbs(&self) -> usize {
        self.modulus.len()
    }

    /// The modulus.
    pub fn modulus(&self) -> BigUint {
        BigUint::from_slice(&u32_digits(&self.modulus))
    }

    /// The Montgomery form of 1.
    pub fn one(&self) -> Residue {
        self.one.clone()
    }

    /// The Montgomery form of `x mod m`. Values below `m R` (every value this crate passes:
    /// ciphertexts below `n^2` reduced modulo `p^2` or `q^2`, or anything below `m`) are reduced
    /// by Montgomery reduction without division; larger ones by long division (variable time,
    /// only ever on public values).
    pub fn to_residue(&self, x: &BigUint) -> Residue {
        let n = self.limbs();
        let digits = x.to_u64_digits();
        if digits.len() <= 2 * n && less_than(digits.get(n..).unwrap_or(&[]), &self.modulus) {
            // x = hi R + lo with hi < m, so x < m R: REDC(x) = x R^-1, then times R^3 R^-1.
            let mut wide = pad(digits, 2 * n);
            let mut reduced = vec![0u64; n];
            redc(&self.modulus, self.minv, &mut wide, &mut reduced);
            wide.zeroize();
            let out = self.mul(&reduced, &self.r3);
            reduced.zeroize();
            out
        } else {
            let reduced = pad((x % self.modulus()).to_u64_digits(), n);
            self.mul(&reduced, &self.r2)
        }
    }

    /// The ordinary value of a residue.
    pub fn to_biguint(&self, a: &Residue) -> BigUint {
        let mut unit = vec![0u64; self.limbs()];
        unit[0] = 1;
        BigUint::from_slice(&u32_digits(&self.mul(a, &unit)))
    }

    /// `a b R^-1 mod m`: the Montgomery product.
    pub fn mul(&self, a: &Residue, b: &Residue) -> Residue {
        let mut out = vec![0u64; self.limbs()];
        self.mul_into(a, b, &mut out);
        out
    }

    /// The Montgomery product into `out`.
    pub fn mul_into(&self, a: &[u64], b: &[u64], out: &mut [u64]) {
        let (m, k) = (&self.modulus[..], self.minv);
        match m.len() {
            32 => mul_fixed::<32>(m, k, a, b, out),
            48 => mul_fixed::<48>(m, k, a, b, out),
            64 => mul_fixed::<64>(m, k, a, b, out),
            96 => mul_fixed::<96>(m, k, a, b, out),
            128 => mul_fixed::<128>(m, k, a, b, out),
            _ => mul_kernel(m, k, a, b, out),
        }
    }

    /// `a^2 R^-1 mod m`.
    pub fn square(&self, a: &Residue) -> Residue {
        let mut out = vec![0u64; self.limbs()];
        self.square_into(a, &mut out);
        out
    }

    /// The Montgomery square into `out`.
    pub fn square_into(&self, a: &[u64], out: &mut [u64]) {
        let (m, k) = (&self.modulus[..], self.minv);
        match m.len() {
            32 => square_fixed::<32>(m, k, a, out),
            48 => square_fixed::<48>(m, k, a, out),
            64 => square_fixed::<64>(m, k, a, out),
            96 => square_fixed::<96>(m, k, a, out),
            128 => square_fixed::<128>(m, k, a, out),
            _ => square_kernel(m, k, a, out),
        }
    }

    /// `base^exp` for a secret exponent (little-endian limbs; its length is public): fixed
    /// 5-bit windows, every table entry touched at every selection.
    pub fn pow_secret(&self, base: &Residue, exp: &[u64]) -> Residue {
        const W: usize = 5;
        let n = self.limbs();
        let mut table = Vec::with_capacity(1 << W);
        table.push(self.one.clone());
        for i in 1..(1 << W) {
            let next = self.mul(&table[i - 1], base);
            table.push(next);
        }
        let bits = 64 * exp.len();
        let windows = bits.div_ceil(W);
        let mut acc = self.one.clone();
        let mut scratch = vec![0u64; n];
        let mut selected = vec![0u64; n];
        for w in (0..windows).rev() {
            for _ in 0..W {
                self.square_into(&acc, &mut scratch);
                std::mem::swap(&mut acc, &mut scratch);
            }
            let digit = window(exp, w * W, W);
            select_masked(&table, digit, &mut selected);
            self.mul_into(&acc, &selected, &mut scratch);
            std::mem::swap(&mut acc, &mut scratch);
        }
        table.iter_mut().for_each(|t| t.zeroize());
        selected.zeroize();
        scratch.zeroize();
        acc
    }

    /// `base^exp` for a public exponent: left-to-right sliding windows over odd powers.
    /// Variable time in the exponent.
    pub fn pow_public(&self, base: &Residue, exp: &[u64]) -> Residue {
        let bits = bit_length(exp);
        if bits == 0 {
            return self.one.clone();
        }
        let w = match bits {
            0..=24 => 2,
            25..=80 => 3,
            81..=240 => 4,
            241..=672 => 5,
            _ => 6,
        };
        // Odd powers base^1, base^3, ..., base^(2^w - 1).
        let base_sq = self.square(base);
        let mut odd = Vec::with_capacity(1 << (w - 1));
        odd.push(base.clone());
        for i in 1..(1 << (w - 1)) {
            let next = self.mul(&odd[i - 1], &base_sq);
            odd.push(next);
        }
        let mut acc: Option<Residue> = None;
        let mut i = bits as isize - 1;
        while i >= 0 {
            if !bit(exp, i as usize) {
                if let Some(a) = acc.as_mut() {
                    *a = self.square(a);
                }
                i -= 1;
                continue;
            }
            // The longest window ending in a set bit, at most w bits.
            let mut low = (i - w as isize + 1).max(0);
            while !bit(exp, low as usize) {
                low += 1;
            }
            let len = (i - low + 1) as usize;
            let value = window(exp, low as usize, len);
            acc = Some(match acc {
                None => odd[value >> 1].clone(),
                Some(mut a) => {
                    for _ in 0..len {
                        a = self.square(&a);
                    }
                    self.mul(&a, &odd[value >> 1])
                }
            });
            i = low - 1;
        }
        acc.unwrap_or_else(|| self.one.clone())
    }

    /// The modular inverse of a residue, or `None` if it shares a factor with the modulus.
    /// Variable time (binary GCD); used only on public values (ciphertexts).
    pub fn invert(&self, a: &Residue) -> Option<Residue> {
        // a = x R, so (x R)^-1 R^3 R^-1 = x^-1 R is the residue of x^-1.
        let inverse = super::inverse::invert_mod_odd(a, &self.modulus)?;
        Some(self.mul(&inverse, &self.r3))
    }

    /// Inverses of many residues with one modular inversion (Montgomery's trick): `3(k - 1)`
    /// products and one inversion instead of `k` inversions. `None` if any is not invertible.
    pub fn invert_all(&self, values: &[Residue]) -> Option<Vec<Residue>> {
        if values.is_empty() {
            return Some(Vec::new());
        }
        let mut prefix = Vec::with_capacity(values.len());
        prefix.push(values[0].clone());
        for v in &values[1..] {
            let next = self.mul(prefix.last().expect("non-empty"), v);
            prefix.push(next);
        }
        let mut running = self.invert(prefix.last().expect("non-empty"))?;
        let mut out = vec![Vec::new(); values.len()];
        for i in (1..values.len()).rev() {
            out[i] = self.mul(&running, &prefix[i - 1]);
            running = self.mul(&running, &values[i]);
        }
        out[0] = running;
        Some(out)
    }
}

/// Pads little-endian limbs with zeros to `len`.
pub(crate) fn pad(mut limbs: Vec<u64>, len: usize) -> Vec<u64> {
    limbs.resize(len.max(limbs.len()), 0);
    limbs
}

/// Splits u64 limbs into u32 digits for `BigUint::from_slice`.
pub(crate) fn u32_digits(limbs: &[u64]) -> Vec<u32> {
    limbs
        .iter()
        .flat_map(|&d| [d as u32, (d >> 32) as u32])
        .collect()
}

/// `a < b` for little-endian numbers (`a` may be shorter).
fn less_than(a: &[u64], b: &[u64]) -> bool {
    if a.iter().skip(b.len()).any(|&d| d != 0) {
        return false;
    }
    for i in (0..b.len()).rev() {
        let ai = a.get(i).copied().unwrap_or(0);
        if ai != b[i] {
            return ai < b[i];
        }
    }
    false
}

/// Number of significant bits.
pub(crate) fn bit_length(x: &[u64]) -> usize {
    x.iter()
        .rposition(|&d| d != 0)
        .map_or(0, |i| 64 * i + 64 - x[i].leading_zeros() as usize)
}

fn bit(x: &[u64], i: usize) -> bool {
    x.get(i / 64).is_some_and(|d| (d >> (i % 64)) & 1 == 1)
}

/// Bits `start .. start + len` of `x` as a number (`len <= 16`).
fn window(x: &[u64], start: usize, len: usize) -> usize {
    let mut v = 0usize;
    for k in 0..len {
        v |= usize::from(bit(x, start + k)) << k;
    }
    v
}

/// Copies `table[index]` into `out` reading every entry, so that the memory access pattern does
/// not depend on `index`.
fn select_masked(table: &[Residue], index: usize, out: &mut [u64]) {
    out.iter_mut().for_each(|o| *o = 0);
    for (i, entry) in table.iter().enumerate() {
        let diff = (i ^ index) as u64;
        // 1 when diff != 0, else 0; then all ones exactly when i == index. `black_box` keeps
        // the compiler from turning the mask back into a branch.
        let nonzero = (diff | diff.wrapping_neg()) >> 63;
        let mask = std::hint::black_box(nonzero.wrapping_sub(1));
        for (o, &e) in out.iter_mut().zip(entry) {
            *o |= e & mask;
        }
    }
}

#[inline(never)]
fn mul_fixed<const N: usize>(m: &[u64], minv: u64, a: &[u64], b: &[u64], out: &mut [u64]) {
    mul_kernel(&m[..N], minv, &a[..N], &b[..N], &mut out[..N]);
}

#[inline(never)]
fn square_fixed<const N: usize>(m: &[u64], minv: u64, a: &[u64], out: &mut [u64]) {
    square_kernel(&m[..N], minv, &a[..N], &mut out[..N]);
}

/// A 192-bit column accumulator: `lo` holds the low 128 bits, `hi` the carries above.
struct Accumulator {
    lo: u128,
    hi: u64,
}

impl Accumulator {
    #[inline(always)]
    fn add(&mut self, product: u128) {
        let (sum, carry) = self.lo.overflowing_add(product);
        self.lo = sum;
        self.hi += u64::from(carry);
    }

    /// Adds `2 * value`, where `value` is a 129-bit number `(top, low)`.
    #[inline(always)]
    fn add_doubled(&mut self, low: u128, top: u64) {
        let (sum, carry) = self.lo.overflowing_add(low << 1);
        self.lo = sum;
        self.hi += u64::from(carry) + (top << 1) + (low >> 127) as u64;
    }

    /// Returns the low word and shifts the accumulator down by one word.
    #[inline(always)]
    fn shift(&mut self) -> u64 {
        let word = self.lo as u64;
        self.lo = (self.lo >> 64) | (u128::from(self.hi) << 64);
        self.hi = 0;
        word
    }
}

#[inline(always)]
fn mul128(a: u64, b: u64) -> u128 {
    u128::from(a) * u128::from(b)
}

/// Montgomery product by finely integrated product scanning.
#[inline(always)]
fn mul_kernel(m: &[u64], minv: u64, a: &[u64], b: &[u64], out: &mut [u64]) {
    let n = m.len();
    let mut u = [0u64; MAX_LIMBS];
    let u = &mut u[..n];
    let mut acc = Accumulator { lo: 0, hi: 0 };
    for i in 0..n {
        for j in 0..i {
            acc.add(mul128(a[j], b[i - j]));
            acc.add(mul128(u[j], m[i - j]));
        }
        acc.add(mul128(a[i], b[0]));
        let ui = (acc.lo as u64).wrapping_mul(minv);
        u[i] = ui;
        acc.add(mul128(ui, m[0]));
        acc.shift();
    }
    for i in n..2 * n {
        for j in (i - n + 1)..n {
            acc.add(mul128(a[j], b[i - j]));
            acc.add(mul128(u[j], m[i - j]));
        }
        out[i - n] = acc.shift();
    }
    final_subtract(m, acc.lo as u64, out);
    u.zeroize();
}

/// Montgomery square: cross products once, doubled, then the diagonal.
#[inline(always)]
fn square_kernel(m: &[u64], minv: u64, a: &[u64], out: &mut [u64]) {
    let n = m.len();
    let mut u = [0u64; MAX_LIMBS];
    let u = &mut u[..n];
    let mut acc = Accumulator { lo: 0, hi: 0 };
    for i in 0..2 * n {
        // Column i of a^2: pairs j < i - j with both indices below n.
        let first = (i + 1).saturating_sub(n);
        let mut cross = Accumulator { lo: 0, hi: 0 };
        let mut j = first;
        while 2 * j < i {
            cross.add(mul128(a[j], a[i - j]));
            j += 1;
        }
        acc.add_doubled(cross.lo, cross.hi);
        if i % 2 == 0 && i / 2 < n {
            acc.add(mul128(a[i / 2], a[i / 2]));
        }
        if i < n {
            for j in 0..i {
                acc.add(mul128(u[j], m[i - j]));
            }
            let ui = (acc.lo as u64).wrapping_mul(minv);
            u[i] = ui;
            acc.add(mul128(ui, m[0]));
            acc.shift();
        } else {
            for j in (i - n + 1)..n {
                acc.add(mul128(u[j], m[i - j]));
            }
            out[i - n] = acc.shift();
        }
    }
    final_subtract(m, acc.lo as u64, out);
    u.zeroize();
}

/// Montgomery reduction of a double-width `t < m R` into `out = t R^-1 mod m`; `t` is
/// overwritten.
fn redc(m: &[u64], minv: u64, t: &mut [u64], out: &mut [u64]) {
    let n = m.len();
    let mut extra = 0u64;
    for i in 0..n {
        let ui = t[i].wrapping_mul(minv);
        let mut carry = 0u64;
        for j in 0..n {
            let s = mul128(ui, m[j]) + u128::from(t[i + j]) + u128::from(carry);
            t[i + j] = s as u64;
            carry = (s >> 64) as u64;
        }
        let s = u128::from(t[i + n]) + u128::from(carry) + u128::from(extra);
        t[i + n] = s as u64;
        extra = (s >> 64) as u64;
    }
    out.copy_from_slice(&t[n..2 * n]);
    final_subtract(m, extra, out);
}

/// Replaces `value` (with an overflow word `extra`) by `value - m` when it is at least `m`,
/// without branching on the values.
#[inline(always)]
fn final_subtract(m: &[u64], extra: u64, value: &mut [u64]) {
    let n = m.len();
    let mut diff = [0u64; MAX_LIMBS];
    let mut borrow = 0u64;
    for j in 0..n {
        let (d1, b1) = value[j].overflowing_sub(m[j]);
        let (d2, b2) = d1.overflowing_sub(borrow);
        diff[j] = d2;
        borrow = u64::from(b1 | b2);
    }
    // Subtract when there was an overflow word or no borrow.
    let take = u64::from(extra != 0) | (borrow ^ 1);
    let mask = take.wrapping_neg();
    for j in 0..n {
        value[j] = (diff[j] & mask) | (value[j] & !mask);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigUint;
    use num_traits::One;
    use proptest::prelude::*;

    fn modulus(bits: u64, seed: u64) -> BigUint {
        // An odd number with its top bit set, from a simple deterministic generator.
        let mut x = BigUint::from(seed | 1);
        let mul = BigUint::from(6364136223846793005u64);
        while x.bits() < bits + 64 {
            x = &x * &mul + BigUint::from(1442695040888963407u64);
        }
        let mut m = x % (BigUint::one() << bits);
        m |= BigUint::one() << (bits - 1);
        m |= BigUint::one();
        m
    }

    fn value(bits: u64, seed: u64, below: &BigUint) -> BigUint {
        modulus(bits, seed.wrapping_mul(31).wrapping_add(7)) % below
    }

    /// Products, squares and powers agree with num-bigint for the specialised limb counts and a
    /// few odd ones.
    #[test]
    fn agrees_with_num_bigint() {
        for bits in [64u64, 130, 1024, 2048, 3072, 4096, 6144, 8192] {
            let m = modulus(bits, bits);
            let ctx = Montgomery::new(&m);
            let a = value(bits, 1, &m);
            let b = value(bits, 2, &m);
            let (ra, rb) = (ctx.to_residue(&a), ctx.to_residue(&b));
            assert_eq!(
                ctx.to_biguint(&ctx.mul(&ra, &rb)),
                (&a * &b) % &m,
                "{bits} mul"
            );
            assert_eq!(
                ctx.to_biguint(&ctx.square(&ra)),
                (&a * &a) % &m,
                "{bits} square"
            );
            let e = value(200, 3, &(BigUint::one() << 200));
            let expected = a.modpow(&e, &m);
            let limbs = e.to_u64_digits();
            assert_eq!(
                ctx.to_biguint(&ctx.pow_secret(&ra, &limbs)),
                expected,
                "{bits} secret"
            );
            assert_eq!(
                ctx.to_biguint(&ctx.pow_public(&ra, &limbs)),
                expected,
                "{bits} public"
            );
        }
    }

    /// Extreme operands: 0, 1, m - 1, and inputs whose product needs the final subtraction.
    #[test]
    fn edge_operands() {
        for bits in [128u64, 2048] {
            let m = modulus(bits, 9);
            let ctx = Montgomery::new(&m);
            let max = &m - 1u32;
            for x in [BigUint::ZERO, BigUint::one(), max.clone()] {
                for y in [BigUint::one(), max.clone()] {
                    let r = ctx.mul(&ctx.to_residue(&x), &ctx.to_residue(&y));
                    assert_eq!(ctx.to_biguint(&r), (&x * &y) % &m);
                }
            }
            assert_eq!(
                ctx.to_biguint(&ctx.pow_public(&ctx.to_residue(&max), &[])),
                BigUint::one()
            );
            assert_eq!(
                ctx.to_biguint(&ctx.pow_secret(&ctx.to_residue(&max), &[0])),
                BigUint::one()
            );
        }
    }

    /// Wide values below `m R` reduce without division; larger ones by division.
    #[test]
    fn reduces_wide_values() {
        let m = modulus(1000, 5);
        let ctx = Montgomery::new(&m);
        for x in [&m * &m - 1u32, (&m << 1200) + 17u32, BigUint::from(5u8)] {
            assert_eq!(ctx.to_biguint(&ctx.to_residue(&x)), &x % &m);
        }
    }

    #[test]
    fn inverts_one_and_many() {
        let m = modulus(2048, 3);
        let ctx = Montgomery::new(&m);
        let values: Vec<Residue> = (1..6u64)
            .map(|i| ctx.to_residue(&value(2048, i, &m)))
            .collect();
        let inverses = ctx.invert_all(&values).expect("invertible");
        for (v, inv) in values.iter().zip(&inverses) {
            assert_eq!(ctx.to_biguint(&ctx.mul(v, inv)), BigUint::one());
            assert_eq!(Some(inv.clone()), ctx.invert(v));
        }
    }

    proptest! {
        #[test]
        fn random_products(a in any::<[u64; 4]>(), b in any::<[u64; 4]>(), seed in any::<u64>()) {
            let m = modulus(256, seed);
            let ctx = Montgomery::new(&m);
            let a = BigUint::from_slice(&u32_digits(&a)) % &m;
            let b = BigUint::from_slice(&u32_digits(&b)) % &m;
            let r = ctx.mul(&ctx.to_residue(&a), &ctx.to_residue(&b));
            prop_assert_eq!(ctx.to_biguint(&r), (&a * &b) % &m);
            prop_assert_eq!(ctx.to_biguint(&ctx.square(&ctx.to_residue(&a))), (&a * &a) % &m);
        }
    }
}
