//! Integer gadgets on words (two's complement, least significant bit first), with their AND
//! counts for `n`-bit words: add, subtract and negate `n - 1`; compare `n`; equality `n - 1`;
//! select `n`; absolute value `n - 1`; shifts free; the full product about `2 n^2` (fewer when
//! only low columns are wanted). Adders use the one-AND full adder
//! `carry' = c ^ ((a ^ c) & (b ^ c))`.

use crate::backend::{Backend, Bit, Builder, Word};

/// The low `width` bits of `value` as constants.
pub fn constant<W>(value: u128, width: usize) -> Word<W> {
    (0..width)
        .map(|i| Bit::Const(i < 128 && (value >> i) & 1 == 1))
        .collect()
}

/// `x + y + carry_in` modulo `2^n`, and the carry out.
pub fn add_with_carry<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
    carry_in: Bit<B::Wire>,
) -> (Word<B::Wire>, Bit<B::Wire>) {
    assert_eq!(x.len(), y.len(), "operands of one width");
    let mut c = carry_in;
    let mut sum = Vec::with_capacity(x.len());
    for (xi, yi) in x.iter().zip(y) {
        let xc = b.xor(xi, &c);
        let yc = b.xor(yi, &c);
        sum.push(b.xor(&xc, yi));
        let t = b.and(&xc, &yc);
        c = b.xor(&t, &c);
    }
    (sum, c)
}

/// `x + y` modulo `2^n` (`n - 1` ANDs: the last carry is not formed).
pub fn add<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
) -> Word<B::Wire> {
    add_modular(b, x, y, Bit::Const(false))
}

/// `x - y` modulo `2^n`: `x + !y + 1`.
pub fn sub<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
) -> Word<B::Wire> {
    let not_y: Word<B::Wire> = y.iter().map(|v| b.not(v)).collect();
    add_modular(b, x, &not_y, Bit::Const(true))
}

/// `x + y + carry_in` modulo `2^n`, without forming the last carry (`n - 1` ANDs).
fn add_modular<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
    carry_in: Bit<B::Wire>,
) -> Word<B::Wire> {
    assert_eq!(x.len(), y.len(), "operands of one width");
    let n = x.len();
    if n == 0 {
        return Vec::new();
    }
    let (mut low, carry) = add_with_carry(b, &x[..n - 1], &y[..n - 1], carry_in);
    let top = b.xor(&x[n - 1], &y[n - 1]);
    low.push(b.xor(&top, &carry));
    low
}

/// `-x` modulo `2^n`.
pub fn neg<B: Backend>(b: &mut Builder<B>, x: &[Bit<B::Wire>]) -> Word<B::Wire> {
    sub(b, &constant(0, x.len()), x)
}

/// `x < y` as unsigned numbers: the carry out of `x + !y + 1` (1 exactly when `x >= y`),
/// negated (`n` ANDs).
pub fn lt_unsigned<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
) -> Bit<B::Wire> {
    assert_eq!(x.len(), y.len(), "operands of one width");
    let mut c = Bit::Const(true);
    for (xi, yi) in x.iter().zip(y) {
        let ny = b.not(yi);
        let xc = b.xor(xi, &c);
        let yc = b.xor(&ny, &c);
        let t = b.and(&xc, &yc);
        c = b.xor(&t, &c);
    }
    b.not(&c)
}

/// `x < y` as two's-complement numbers (flip both signs, compare unsigned).
pub fn lt_signed<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
) -> Bit<B::Wire> {
    let flip = |b: &mut Builder<B>, v: &[Bit<B::Wire>]| {
        let mut w = v.to_vec();
        if let Some(top) = w.last_mut() {
            *top = b.not(top);
        }
        w
    };
    let (fx, fy) = (flip(b, x), flip(b, y));
    lt_unsigned(b, &fx, &fy)
}

/// `x <= y` as two's-complement numbers.
pub fn le_signed<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
) -> Bit<B::Wire> {
    let gt = lt_signed(b, y, x);
    b.not(&gt)
}

/// `x == y` (`n - 1` ANDs in a balanced tree, each level one batch).
pub fn eq<B: Backend>(b: &mut Builder<B>, x: &[Bit<B::Wire>], y: &[Bit<B::Wire>]) -> Bit<B::Wire> {
    assert_eq!(x.len(), y.len(), "operands of one width");
    let mut level: Vec<Bit<B::Wire>> = x
        .iter()
        .zip(y)
        .map(|(a, c)| {
            let d = b.xor(a, c);
            b.not(&d)
        })
        .collect();
    while level.len() > 1 {
        let pairs: Vec<_> = level
            .chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect();
        let odd = (level.len() % 2 == 1).then(|| level[level.len() - 1].clone());
        level = b.and_many(&pairs);
        level.extend(odd);
    }
    level.pop().unwrap_or(Bit::Const(true))
}

/// `c ? x : y`, bit by bit (`n` independent ANDs).
pub fn select<B: Backend>(
    b: &mut Builder<B>,
    c: &Bit<B::Wire>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
) -> Word<B::Wire> {
    assert_eq!(x.len(), y.len(), "operands of one width");
    let pairs: Vec<_> = x
        .iter()
        .zip(y)
        .map(|(a, d)| (c.clone(), b.xor(a, d)))
        .collect();
    let picked = b.and_many(&pairs);
    picked.iter().zip(y).map(|(t, d)| b.xor(t, d)).collect()
}

/// `|x|` for a two's-complement `x` (the most negative value maps to itself): `(x ^ s) + s`.
pub fn abs<B: Backend>(b: &mut Builder<B>, x: &[Bit<B::Wire>]) -> Word<B::Wire> {
    let Some(sign) = x.last().cloned() else {
        return Vec::new();
    };
    conditional_negate(b, &sign, x)
}

/// `s ? -x : x`.
pub fn conditional_negate<B: Backend>(
    b: &mut Builder<B>,
    s: &Bit<B::Wire>,
    x: &[Bit<B::Wire>],
) -> Word<B::Wire> {
    let flipped: Word<B::Wire> = x.iter().map(|v| b.xor(v, s)).collect();
    add_with_carry(b, &flipped, &constant(0, x.len()), s.clone()).0
}

/// `x << k`, same width.
pub fn shl<W: Clone>(x: &[Bit<W>], k: usize) -> Word<W> {
    let n = x.len();
    (0..n)
        .map(|i| {
            if i >= k {
                x[i - k].clone()
            } else {
                Bit::Const(false)
            }
        })
        .collect()
}

/// `x >> k` with the sign bit replicated, same width.
pub fn shr_arithmetic<W: Clone>(x: &[Bit<W>], k: usize) -> Word<W> {
    let n = x.len();
    (0..n).map(|i| x[(i + k).min(n - 1)].clone()).collect()
}

/// `x >> k` with zeros shifted in, same width.
pub fn shr_logical<W: Clone>(x: &[Bit<W>], k: usize) -> Word<W> {
    let n = x.len();
    (0..n)
        .map(|i| {
            if i + k < n {
                x[i + k].clone()
            } else {
                Bit::Const(false)
            }
        })
        .collect()
}

/// `x` sign-extended (or truncated) to `width` bits.
pub fn sign_extend<W: Clone>(x: &[Bit<W>], width: usize) -> Word<W> {
    (0..width).map(|i| x[i.min(x.len() - 1)].clone()).collect()
}

/// `x` zero-extended (or truncated) to `width` bits.
pub fn zero_extend<W: Clone>(x: &[Bit<W>], width: usize) -> Word<W> {
    (0..width)
        .map(|i| x.get(i).cloned().unwrap_or(Bit::Const(false)))
        .collect()
}

/// The sum, modulo `2^columns.len()`, of bits arranged by weight (`columns[k]` holds bits worth
/// `2^k`): full adders reduce every column to two bits, all the adders of a pass batched, then
/// one ripple addition. About one AND per input bit.
pub fn sum_columns<B: Backend>(
    b: &mut Builder<B>,
    mut columns: Vec<Vec<Bit<B::Wire>>>,
) -> Word<B::Wire> {
    let mut constant_value: u128 = 0;
    take_constants(&mut columns, &mut constant_value);
    finish_columns(b, columns, constant_value)
}

/// Removes the constant bits from the columns, adding their value to `constant` (mod 2^128).
pub fn take_constants<W>(columns: &mut [Vec<Bit<W>>], constant: &mut u128) {
    for (k, column) in columns.iter_mut().enumerate() {
        let ones = column.iter().filter(|x| x.as_const() == Some(true)).count() as u128;
        column.retain(|x| x.as_const().is_none());
        if k < 128 {
            *constant = constant.wrapping_add(ones.wrapping_shl(k as u32));
        }
    }
}

/// Reduces every column to at most two bits with full adders (one AND each), a pass at a time,
/// each pass's adders batched; carries out of the top column are dropped (mod `2^width`). The
/// number of adders depends only on the number of bits, so bits can be added and reduced in
/// several rounds (keeping the columns small) at no extra cost.
pub fn reduce_columns<B: Backend>(b: &mut Builder<B>, columns: &mut [Vec<Bit<B::Wire>>]) {
    let width = columns.len();
    let mut adders: Vec<(usize, Bit<B::Wire>)> = Vec::new();
    let mut pairs = Vec::new();
    let mut products = Vec::new();
    while columns.iter().any(|c| c.len() > 2) {
        adders.clear();
        pairs.clear();
        for (k, column) in columns.iter_mut().enumerate() {
            let full = column.len() / 3;
            if full == 0 {
                continue;
            }
            // In place: the sum of triple t goes to slot t (read before written), then the
            // triples' other slots are dropped and the rest slides down.
            for t in 0..full {
                let (x, y, c) = (&column[3 * t], &column[3 * t + 1], &column[3 * t + 2]);
                let xc = b.xor(x, c);
                let yc = b.xor(y, c);
                let sum = b.xor(&xc, y);
                if k + 1 < width {
                    adders.push((k, c.clone()));
                    pairs.push((xc, yc));
                }
                column[t] = sum;
            }
            column.drain(full..3 * full);
        }
        products.clear();
        b.and_many_into(&pairs, &mut products);
        for ((k, c), t) in adders.iter().zip(&products) {
            let carry = b.xor(t, c);
            columns[k + 1].push(carry);
        }
    }
}

/// A sum of bits arranged by weight, for products and dot products: wires in per-column lists
/// and public constants as per-column counts, so that the full adders (one AND each, a pass at
/// a time, each pass one batch) work on raw wires without per-bit tags; the sum is taken modulo
/// `2^width`.
#[derive(Debug)]
pub struct ColumnSum<W> {
    wires: Vec<Vec<W>>,
    constant: Vec<u32>,
    pairs: Vec<(W, W)>,
    carries: Vec<(usize, W)>,
    places: Vec<(usize, bool)>,
    products: Vec<W>,
}

impl<W: Clone> ColumnSum<W> {
    /// An empty sum of `width` columns.
    pub fn new(width: usize) -> Self {
        Self {
            wires: (0..width).map(|_| Vec::new()).collect(),
            constant: vec![0; width],
            pairs: Vec::new(),
            carries: Vec::new(),
            places: Vec::new(),
            products: Vec::new(),
        }
    }

    /// Columns.
    pub fn width(&self) -> usize {
        self.wires.len()
    }

    /// Adds `bit` at weight `2^k` (dropped beyond the width).
    pub fn push(&mut self, k: usize, bit: Bit<W>) {
        if k >= self.wires.len() {
            return;
        }
        match bit {
            Bit::Const(true) => self.constant[k] += 1,
            Bit::Const(false) => {}
            Bit::Wire(w) => self.wires[k].push(w),
        }
    }

    /// Adds the public `2^k` (dropped beyond the width).
    pub fn push_one(&mut self, k: usize) {
        if k < self.constant.len() {
            self.constant[k] += 1;
        }
    }

    /// Reduces every column to at most two wires.
    pub fn reduce<B: Backend<Wire = W>>(&mut self, b: &mut Builder<B>) {
        let width = self.wires.len();
        let backend = b.backend_mut();
        while self.wires.iter().any(|c| c.len() > 2) {
            self.pairs.clear();
            self.carries.clear();
            for (k, column) in self.wires.iter_mut().enumerate() {
                let full = column.len() / 3;
                for t in 0..full {
                    let (x, y, c) = (&column[3 * t], &column[3 * t + 1], &column[3 * t + 2]);
                    let xc = backend.xor(x, c);
                    let yc = backend.xor(y, c);
                    let sum = backend.xor(&xc, y);
                    if k + 1 < width {
                        self.carries.push((k + 1, c.clone()));
                        self.pairs.push((xc, yc));
                    }
                    column[t] = sum;
                }
                column.drain(full..3 * full);
            }
            backend.and_many_into(&self.pairs, &mut self.products);
            for ((k, c), t) in self.carries.iter().zip(&self.products) {
                let carry = backend.xor(t, c);
                self.wires[*k].push(carry);
            }
        }
    }

    /// The sum modulo `2^width`.
    pub fn finish<B: Backend<Wire = W>>(mut self, b: &mut Builder<B>) -> Word<W> {
        self.reduce(b);
        // The constant's bits (carries propagated), then one pass over at most three bits a
        // column, then the two rows added.
        let mut columns: Vec<Vec<Bit<W>>> = self
            .wires
            .into_iter()
            .map(|c| c.into_iter().map(Bit::Wire).collect())
            .collect();
        let mut carry = 0u64;
        for (k, column) in columns.iter_mut().enumerate() {
            let total = u64::from(self.constant[k]) + carry;
            if total & 1 == 1 {
                column.push(Bit::Const(true));
            }
            carry = total >> 1;
        }
        add_reduced(b, columns)
    }

    /// Adds the product `x y`: partial product `x_i y_j` at column `i + j`, entering negated
    /// where `negate(i, j)` (Baugh-Wooley), its ANDs as one batch; columns beyond the width are
    /// never formed.
    pub fn add_product<B: Backend<Wire = W>>(
        &mut self,
        b: &mut Builder<B>,
        x: &[Bit<W>],
        y: &[Bit<W>],
        negate: impl Fn(usize, usize) -> bool,
    ) {
        let width = self.wires.len();
        self.pairs.clear();
        self.places.clear();
        for (i, xi) in x.iter().enumerate() {
            for (j, yj) in y.iter().enumerate().take(width.saturating_sub(i)) {
                let (k, negated) = (i + j, negate(i, j));
                match (xi, yj) {
                    (Bit::Wire(a), Bit::Wire(c)) => {
                        self.pairs.push((a.clone(), c.clone()));
                        self.places.push((k, negated));
                    }
                    _ => {
                        let p = b.and(xi, yj);
                        let p = if negated { b.not(&p) } else { p };
                        self.push(k, p);
                    }
                }
            }
        }
        // Size every column once (pushing one by one would reallocate each several times).
        let mut counts = vec![0usize; width];
        for &(k, _) in &self.places {
            counts[k] += 1;
        }
        for (column, count) in self.wires.iter_mut().zip(counts) {
            column.reserve(count);
        }
        let backend = b.backend_mut();
        backend.and_many_into(&self.pairs, &mut self.products);
        for (&(k, negated), p) in self.places.iter().zip(self.products.drain(..)) {
            let p = if negated { backend.not(&p) } else { p };
            self.wires[k].push(p);
        }
    }
}

/// Adds the constant `constant` (as at most one bit per column), reduces, and adds the last two
/// rows: the sum modulo `2^columns.len()`.
pub fn finish_columns<B: Backend>(
    b: &mut Builder<B>,
    mut columns: Vec<Vec<Bit<B::Wire>>>,
    constant: u128,
) -> Word<B::Wire> {
    for (k, column) in columns.iter_mut().enumerate() {
        if k < 128 && (constant >> k) & 1 == 1 {
            column.push(Bit::Const(true));
        }
    }
    add_reduced(b, columns)
}

/// Reduces the columns to two bits each and adds the two rows.
fn add_reduced<B: Backend>(
    b: &mut Builder<B>,
    mut columns: Vec<Vec<Bit<B::Wire>>>,
) -> Word<B::Wire> {
    reduce_columns(b, &mut columns);
    let row = |i: usize| -> Word<B::Wire> {
        columns
            .iter()
            .map(|c| c.get(i).cloned().unwrap_or(Bit::Const(false)))
            .collect()
    };
    let (first, second) = (row(0), row(1));
    add(b, &first, &second)
}

/// The product `x y` modulo `2^columns` (at most `x.len() + y.len()` columns), as unsigned
/// numbers or, with `signed`, as two's-complement numbers of equal width (Baugh-Wooley:
/// the partial products with exactly one sign bit enter negated, plus the constants `2^n` and
/// `2^(2n-1)`). Partial products beyond `columns` are never formed; `extra` bits (such as a
/// rounding constant) are added in the same compression.
pub fn mul_columns<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
    signed: bool,
    columns: usize,
    extra: Vec<(usize, Bit<B::Wire>)>,
) -> Word<B::Wire> {
    let (n, m) = (x.len(), y.len());
    assert!(columns <= n + m, "at most n + m columns");
    assert!(!signed || n == m, "signed products need equal widths");
    let mut sum = ColumnSum::new(columns);
    sum.add_product(b, x, y, |i, j| signed && ((i == n - 1) != (j == m - 1)));
    if signed {
        sum.push_one(n);
        sum.push_one(2 * n - 1);
    }
    for (k, bit) in extra {
        sum.push(k, bit);
    }
    sum.finish(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn word(b: &mut Builder<crate::backend::Plain>, x: u64, n: usize) -> Word<bool> {
        b.input_u128(u128::from(x), n)
    }

    fn val(w: &[Bit<bool>]) -> u64 {
        Builder::<crate::backend::Plain>::value(w) as u64
    }

    fn signed(x: u64, n: usize) -> i64 {
        ((x << (64 - n)) as i64) >> (64 - n)
    }

    proptest! {
        #[test]
        fn arithmetic_matches_integers(x in any::<u64>(), y in any::<u64>(), n in 1usize..=64) {
            let mask = if n == 64 { u64::MAX } else { (1 << n) - 1 };
            let (x, y) = (x & mask, y & mask);
            let mut b = Builder::plain();
            let (wx, wy) = (word(&mut b, x, n), word(&mut b, y, n));
            let r = add(&mut b, &wx, &wy);
            prop_assert_eq!(val(&r), x.wrapping_add(y) & mask);
            let r = sub(&mut b, &wx, &wy);
            prop_assert_eq!(val(&r), x.wrapping_sub(y) & mask);
            let r = neg(&mut b, &wx);
            prop_assert_eq!(val(&r), x.wrapping_neg() & mask);
            let r = lt_unsigned(&mut b, &wx, &wy);
            prop_assert_eq!(Builder::<crate::backend::Plain>::value(&[r]) == 1, x < y);
            let r = lt_signed(&mut b, &wx, &wy);
            prop_assert_eq!(Builder::<crate::backend::Plain>::value(&[r]) == 1, signed(x, n) < signed(y, n));
            let r = le_signed(&mut b, &wx, &wy);
            prop_assert_eq!(Builder::<crate::backend::Plain>::value(&[r]) == 1, signed(x, n) <= signed(y, n));
            let r = eq(&mut b, &wx, &wx);
            prop_assert_eq!(Builder::<crate::backend::Plain>::value(&[r]), 1);
            let r = eq(&mut b, &wx, &wy);
            prop_assert_eq!(Builder::<crate::backend::Plain>::value(&[r]) == 1, x == y);
            let c = Bit::Wire(x & 1 == 1);
            let r = select(&mut b, &c, &wx, &wy);
            prop_assert_eq!(val(&r), if x & 1 == 1 { x } else { y });
            let r = abs(&mut b, &wx);
            prop_assert_eq!(val(&r), signed(x, n).unsigned_abs() & mask);
        }

        #[test]
        fn products_match_integers(x in any::<u64>(), y in any::<u64>(), n in 1usize..=64) {
            let mask = if n == 64 { u64::MAX } else { (1 << n) - 1 };
            let (x, y) = (x & mask, y & mask);
            let mut b = Builder::plain();
            let (wx, wy) = (word(&mut b, x, n), word(&mut b, y, n));
            let full = mul_columns(&mut b, &wx, &wy, false, 2 * n, Vec::new());
            let expected = u128::from(x) * u128::from(y);
            prop_assert_eq!(Builder::<crate::backend::Plain>::value(&full), expected);
            let signed_full = mul_columns(&mut b, &wx, &wy, true, 2 * n, Vec::new());
            let expected = (i128::from(signed(x, n)) * i128::from(signed(y, n))) as u128;
            let width_mask = if 2 * n == 128 { u128::MAX } else { (1u128 << (2 * n)) - 1 };
            prop_assert_eq!(Builder::<crate::backend::Plain>::value(&signed_full), expected & width_mask);
        }
    }

    /// The 64 x 64 -> 128 unsigned product costs no more ANDs than the reference Bristol
    /// multiplier (8128), and the truncated signed product far fewer.
    #[test]
    fn product_gate_counts() {
        let mut c = Builder::counter();
        let (x, y) = (c.input(64), c.input(64));
        mul_columns(&mut c, &x, &y, false, 128, Vec::new());
        let full = c.counts().and;
        assert!(full <= 8128, "{full}");
        let mut c = Builder::counter();
        let (x, y) = (c.input(64), c.input(64));
        mul_columns(&mut c, &x, &y, true, 96, Vec::new());
        let truncated = c.counts().and;
        assert!(truncated < full, "{truncated} vs {full}");
        eprintln!("64 x 64 -> 128 unsigned: {full} ANDs; signed, 96 columns: {truncated} ANDs");
    }
}
