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

pub(crate) use super::limbs::{bit_length, pad, u32_digits};

/// Largest supported modulus, in limbs: `n^2` for a 4096-bit `n`.
pub const MAX_LIMBS: usize = 128;

/// Widest modulus (in the engine's limbs) whose products [`Montgomery::mul_pair`] interleaves:
/// 40 radix-2^52 limbs, the `p^2` and `q^2` of a 2048-bit key.
const PAIRED_LIMBS: usize = 40;

/// A value in Montgomery form, `a R mod m` with `R = 2^(64 limbs)`, as limbs.
pub type Residue = Vec<u64>;

/// Which arithmetic engine a context uses. Residues of different engines differ in layout
/// (64-bit or 52-bit limbs) and in `R`, so they never mix: everything goes through the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// Portable Rust on 64-bit limbs.
    Portable,
    /// AVX-512 IFMA on 52-bit limbs ([`super::ifma`]), four to six times faster where present.
    Ifma,
}

impl Engine {
    /// The fastest engine this CPU supports.
    pub fn best() -> Self {
        if super::ifma::available() {
            Engine::Ifma
        } else {
            Engine::Portable
        }
    }
}

/// Montgomery context for one odd modulus `m`. The modulus may be secret (`p^2`), so the
/// context is zeroized on drop.
#[derive(Clone)]
pub struct Montgomery {
    engine: Engine,
    /// The modulus in the engine's radix.
    modulus: Vec<u64>,
    /// The modulus as 64-bit limbs (for conversions and inversion).
    modulus_words: Vec<u64>,
    /// `-m^{-1}` modulo the limb base.
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
        // The modulus may be secret: show only its size and engine.
        write!(
            f,
            "Montgomery {{ limbs: {}, engine: {:?} }}",
            self.limbs(),
            self.engine
        )
    }
}

impl Drop for Montgomery {
    fn drop(&mut self) {
        self.modulus.zeroize();
        self.modulus_words.zeroize();
        self.minv.zeroize();
        self.r2.zeroize();
        self.r3.zeroize();
        self.one.zeroize();
    }
}

impl Montgomery {
    /// A context for the odd modulus `m > 1` of at most [`MAX_LIMBS`] 64-bit limbs, on the
    /// fastest engine available.
    ///
    /// # Panics
    /// If `m` is even, 1, or too large: callers pass moduli they built, so this is a bug.
    pub fn new(m: &BigUint) -> Self {
        Self::with_engine(m, Engine::best())
    }

    /// A context on a chosen engine (tests compare the two). Panics as [`Self::new`], and if
    /// IFMA is asked for on a CPU without it.
    pub fn with_engine(m: &BigUint, engine: Engine) -> Self {
        assert!(
            m.bit(0) && m.bits() > 1,
            "Montgomery modulus must be odd and > 1"
        );
        let modulus_words = m.to_u64_digits();
        assert!(
            modulus_words.len() <= MAX_LIMBS,
            "modulus of {} bits is too large",
            m.bits()
        );
        assert!(
            engine == Engine::Portable || super::ifma::available(),
            "IFMA engine requested on a CPU without AVX-512 IFMA"
        );
        // Newton iteration for the inverse modulo 2^64: each step doubles the correct bits.
        let mut inv: u64 = 1;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(modulus_words[0].wrapping_mul(inv)));
        }
        let (limbs, r_bits, minv) = match engine {
            Engine::Portable => {
                let n = modulus_words.len();
                (n, 64 * n as u64, inv.wrapping_neg())
            }
            Engine::Ifma => {
                let n = super::ifma::limbs_for(m.bits());
                let mask = (1u64 << super::ifma::LIMB_BITS) - 1;
                (
                    n,
                    u64::from(super::ifma::LIMB_BITS) * n as u64,
                    inv.wrapping_neg() & mask,
                )
            }
        };
        let convert = |x: &BigUint| match engine {
            Engine::Portable => pad(x.to_u64_digits(), limbs),
            Engine::Ifma => super::ifma::from_u64_limbs(&x.to_u64_digits(), limbs),
        };
        let power = |k: u64| convert(&((BigUint::from(1u8) << (k * r_bits)) % m));
        Self {
            engine,
            modulus: convert(m),
            one: power(1),
            r2: power(2),
            r3: power(3),
            minv,
            modulus_words,
        }
    }

    /// The engine in use.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Number of limbs of a residue.
    pub fn limbs(&self) -> usize {
        self.modulus.len()
    }

    /// The modulus.
    pub fn modulus(&self) -> BigUint {
        BigUint::from_slice(&u32_digits(&self.modulus_words))
    }

    /// The Montgomery form of 1.
    pub fn one(&self) -> Residue {
        self.one.clone()
    }

    /// The engine's limbs of a number below `2^(limb bits * limbs)`.
    fn limbs_of(&self, x: &BigUint) -> Vec<u64> {
        match self.engine {
            Engine::Portable => pad(x.to_u64_digits(), self.limbs()),
            Engine::Ifma => super::ifma::from_u64_limbs(&x.to_u64_digits(), self.limbs()),
        }
    }

    /// The Montgomery form of `x mod m`. Values below `m R` (every value this crate passes:
    /// ciphertexts below `n^2` reduced modulo `p^2` or `q^2`, or anything below `m`) are reduced
    /// by Montgomery products without division; larger ones by long division (variable time,
    /// only ever on public values).
    pub fn to_residue(&self, x: &BigUint) -> Residue {
        let r_bits = match self.engine {
            Engine::Portable => 64 * self.limbs() as u64,
            Engine::Ifma => u64::from(super::ifma::LIMB_BITS) * self.limbs() as u64,
        };
        let high = x >> r_bits;
        if high < self.modulus() {
            // x = hi R + lo with hi < m: lo R^2 R^-1 + hi R^3 R^-1 = x R (mod m). Each product
            // has one factor below m and one below R, so it lands below 2m and is reduced.
            let low = x - (&high << r_bits);
            let mut lo = self.limbs_of(&low);
            let mut hi = self.limbs_of(&high);
            let sum = self.add(&self.mul(&lo, &self.r2), &self.mul(&hi, &self.r3));
            lo.zeroize();
            hi.zeroize();
            sum
        } else {
            let reduced = self.limbs_of(&(x % self.modulus()));
            self.mul(&reduced, &self.r2)
        }
    }

    /// The ordinary value of a residue.
    pub fn to_biguint(&self, a: &Residue) -> BigUint {
        let mut unit = vec![0u64; self.limbs()];
        unit[0] = 1;
        let value = self.mul(a, &unit);
        let words = match self.engine {
            Engine::Portable => value,
            Engine::Ifma => super::ifma::to_u64_limbs(&value),
        };
        BigUint::from_slice(&u32_digits(&words))
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
        if self.engine == Engine::Ifma {
            return super::ifma::mul(m, k, a, b, out);
        }
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
        if self.engine == Engine::Ifma {
            return super::ifma::mul(m, k, a, a, out);
        }
        match m.len() {
            32 => square_fixed::<32>(m, k, a, out),
            48 => square_fixed::<48>(m, k, a, out),
            64 => square_fixed::<64>(m, k, a, out),
            96 => square_fixed::<96>(m, k, a, out),
            128 => square_fixed::<128>(m, k, a, out),
            _ => square_kernel(m, k, a, out),
        }
    }

    /// `a + b mod m` for residues.
    pub fn add(&self, a: &Residue, b: &Residue) -> Residue {
        let bits = self.limb_bits();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        // Sum with carries, then subtract m when the sum is at least m.
        let mut sum = vec![0u64; self.limbs() + 1];
        let mut carry = 0u64;
        for i in 0..self.limbs() {
            let (s, c) = limb_add(a[i], b[i], carry, bits, mask);
            sum[i] = s;
            carry = c;
        }
        sum[self.limbs()] = carry;
        let mut diff = vec![0u64; self.limbs()];
        let mut borrow = 0u64;
        for i in 0..self.limbs() {
            let (d, b) = limb_sub(sum[i], self.modulus[i], borrow, bits, mask);
            diff[i] = d;
            borrow = b;
        }
        // Take the difference when the carry out covers the borrow (sum >= m).
        let take = (carry | (borrow ^ 1)) & 1;
        let select = take.wrapping_neg();
        (0..self.limbs())
            .map(|i| (diff[i] & select) | (sum[i] & !select))
            .collect()
    }

    /// `a - b mod m` for residues.
    pub fn sub(&self, a: &Residue, b: &Residue) -> Residue {
        let bits = self.limb_bits();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        let mut out = vec![0u64; self.limbs()];
        let mut borrow = 0u64;
        for i in 0..self.limbs() {
            let (d, b) = limb_sub(a[i], b[i], borrow, bits, mask);
            out[i] = d;
            borrow = b;
        }
        // Add m back when the subtraction borrowed, without branching on it.
        let select = borrow.wrapping_neg();
        let mut carry = 0u64;
        for (o, &m) in out.iter_mut().zip(&self.modulus) {
            let (s, c) = limb_add(*o, m & select, carry, bits, mask);
            *o = s;
            carry = c;
        }
        out
    }

    fn limb_bits(&self) -> u32 {
        match self.engine {
            Engine::Portable => 64,
            Engine::Ifma => super::ifma::LIMB_BITS,
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

    /// `self`'s `a1 b1` and `other`'s `a2 b2` at once: interleaved on the IFMA engine for moduli
    /// of up to 2048 bits (where the kernel is latency-bound and two instruction streams nearly
    /// double its throughput); one after the other otherwise (a 4096-bit product already keeps
    /// the multiplier busy, and two would not fit the vector registers).
    pub(crate) fn mul_pair(
        &self,
        (a1, b1, o1): (&[u64], &[u64], &mut [u64]),
        other: &Montgomery,
        (a2, b2, o2): (&[u64], &[u64], &mut [u64]),
    ) {
        if self.engine == Engine::Ifma
            && other.engine == Engine::Ifma
            && self.limbs() == other.limbs()
            && self.limbs() <= PAIRED_LIMBS
        {
            super::ifma::mul2(
                (&self.modulus, self.minv, a1, b1),
                o1,
                (&other.modulus, other.minv, a2, b2),
                o2,
            );
        } else {
            self.mul_into(a1, b1, o1);
            other.mul_into(a2, b2, o2);
        }
    }

    /// [`Self::pow_secret`] of `base^exp` here and `other_base^other_exp` in `other` at once: the
    /// two halves of a CRT decryption, whose multiplications interleave ([`Self::mul_pair`]).
    /// Same fixed windows and table scans, so the same constant-time behaviour; exponents of
    /// different lengths are done one by one.
    pub fn pow_secret_pair(
        &self,
        base: &Residue,
        exp: &[u64],
        other: &Montgomery,
        other_base: &Residue,
        other_exp: &[u64],
    ) -> (Residue, Residue) {
        if exp.len() != other_exp.len() || self.limbs() != other.limbs() {
            return (
                self.pow_secret(base, exp),
                other.pow_secret(other_base, other_exp),
            );
        }
        const W: usize = 5;
        let n = self.limbs();
        let mut tables = (vec![self.one.clone()], vec![other.one.clone()]);
        for i in 1..(1 << W) {
            let (mut x, mut y) = (vec![0u64; n], vec![0u64; n]);
            self.mul_pair(
                (&tables.0[i - 1], base, &mut x),
                other,
                (&tables.1[i - 1], other_base, &mut y),
            );
            tables.0.push(x);
            tables.1.push(y);
        }
        let windows = (64 * exp.len()).div_ceil(W);
        let (mut acc, mut acc2) = (self.one.clone(), other.one.clone());
        let (mut scratch, mut scratch2) = (vec![0u64; n], vec![0u64; n]);
        let (mut selected, mut selected2) = (vec![0u64; n], vec![0u64; n]);
        for w in (0..windows).rev() {
            for _ in 0..W {
                self.mul_pair(
                    (&acc, &acc, &mut scratch),
                    other,
                    (&acc2, &acc2, &mut scratch2),
                );
                std::mem::swap(&mut acc, &mut scratch);
                std::mem::swap(&mut acc2, &mut scratch2);
            }
            select_masked(&tables.0, window(exp, w * W, W), &mut selected);
            select_masked(&tables.1, window(other_exp, w * W, W), &mut selected2);
            self.mul_pair(
                (&acc, &selected, &mut scratch),
                other,
                (&acc2, &selected2, &mut scratch2),
            );
            std::mem::swap(&mut acc, &mut scratch);
            std::mem::swap(&mut acc2, &mut scratch2);
        }
        for t in tables.0.iter_mut().chain(tables.1.iter_mut()) {
            t.zeroize();
        }
        for v in [&mut selected, &mut selected2, &mut scratch, &mut scratch2] {
            v.zeroize();
        }
        (acc, acc2)
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
        let words = self.modulus_words.len();
        let value = pad(self.to_biguint(a).to_u64_digits(), words);
        let inverse = super::inverse::invert_mod_odd(&value, &self.modulus_words)?;
        Some(self.to_residue(&BigUint::from_slice(&u32_digits(&inverse))))
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

/// One limb of an addition in base `2^bits`: `(sum, carry)`.
#[inline(always)]
fn limb_add(a: u64, b: u64, carry: u64, bits: u32, mask: u64) -> (u64, u64) {
    if bits == 64 {
        let (s1, c1) = a.overflowing_add(b);
        let (s2, c2) = s1.overflowing_add(carry);
        (s2, u64::from(c1 | c2))
    } else {
        let s = a + b + carry;
        (s & mask, s >> bits)
    }
}

/// One limb of a subtraction in base `2^bits`: `(difference, borrow)`.
#[inline(always)]
fn limb_sub(a: u64, b: u64, borrow: u64, bits: u32, mask: u64) -> (u64, u64) {
    if bits == 64 {
        let (d1, b1) = a.overflowing_sub(b);
        let (d2, b2) = d1.overflowing_sub(borrow);
        (d2, u64::from(b1 | b2))
    } else {
        let d = a.wrapping_sub(b).wrapping_sub(borrow);
        (d & mask, d >> 63)
    }
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

    /// The engines this CPU can run.
    fn engines() -> Vec<Engine> {
        let mut e = vec![Engine::Portable];
        if super::super::ifma::available() {
            e.push(Engine::Ifma);
        }
        e
    }

    /// Products, squares, sums, differences and powers agree with num-bigint for the
    /// specialised limb counts and a few odd ones, on every engine.
    #[test]
    fn agrees_with_num_bigint() {
        for (bits, engine) in [64u64, 130, 1024, 2048, 3072, 4096, 6144, 8192]
            .into_iter()
            .flat_map(|b| engines().into_iter().map(move |e| (b, e)))
        {
            let m = modulus(bits, bits);
            let ctx = Montgomery::with_engine(&m, engine);
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
        for (bits, engine) in [128u64, 2048]
            .into_iter()
            .flat_map(|b| engines().into_iter().map(move |e| (b, e)))
        {
            let m = modulus(bits, 9);
            let ctx = Montgomery::with_engine(&m, engine);
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
        for engine in engines() {
            let m = modulus(1000, 5);
            let ctx = Montgomery::with_engine(&m, engine);
            for x in [
                &m * &m - 1u32,
                (&m << 1200) + 17u32,
                BigUint::from(5u8),
                m.clone(),
            ] {
                assert_eq!(ctx.to_biguint(&ctx.to_residue(&x)), &x % &m);
            }
        }
    }

    /// Both engines give the same values for the same inputs.
    #[test]
    fn engines_agree() {
        let m = modulus(4096, 21);
        let contexts: Vec<Montgomery> = engines()
            .into_iter()
            .map(|e| Montgomery::with_engine(&m, e))
            .collect();
        let a = value(4096, 4, &m);
        let e = value(300, 8, &(BigUint::one() << 300)).to_u64_digits();
        let results: Vec<BigUint> = contexts
            .iter()
            .map(|c| c.to_biguint(&c.pow_secret(&c.to_residue(&a), &e)))
            .collect();
        assert!(results.windows(2).all(|w| w[0] == w[1]));
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
            prop_assert_eq!(ctx.engine(), Engine::best());
            let a = BigUint::from_slice(&u32_digits(&a)) % &m;
            let b = BigUint::from_slice(&u32_digits(&b)) % &m;
            let r = ctx.mul(&ctx.to_residue(&a), &ctx.to_residue(&b));
            prop_assert_eq!(ctx.to_biguint(&r), (&a * &b) % &m);
            prop_assert_eq!(ctx.to_biguint(&ctx.square(&ctx.to_residue(&a))), (&a * &a) % &m);
        }
    }
}
