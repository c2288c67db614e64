//! Fixed-point gadgets on words of a [`FixedFormat`] (two's complement, `frac` fractional bits;
//! default 64 / 32), each with its error bound against real arithmetic. "ulp" is `2^-frac`; all
//! bounds assume the true result is representable (results out of range wrap, as in the
//! reference Bristol circuits).
//!
//! | gadget | rounding | bound | AND gates at 64 / 32 |
//! |---|---|---|---|
//! | [`mul`] | to nearest, ties up | 1/2 ulp | 7,104 |
//! | [`dot`] (k terms, optional addend) | once, at the end | 1/2 ulp | about 7,100 per term |
//! | [`div`] | to nearest, ties up | 1/2 ulp | 6,788 |
//! | [`sqrt`] (negative inputs give 0) | to nearest, ties up | 1/2 ulp | 7,315 |
//!
//! Products are formed exactly below the columns that matter: all partial products of weight
//! below `2^(frac + width)` go into one column compression together with the rounding constant
//! `2^(frac - 1)`, and the result is read from columns `frac .. frac + width`.

use crate::backend::{Backend, Bit, Builder, Recorder, Word};
use crate::fixed_format::FixedFormat;

/// The two factors of a product term.
pub type WordPair<W> = (Word<W>, Word<W>);
use crate::word::{
    ColumnSum, add, add_with_carry, conditional_negate, constant, lt_unsigned, mul_columns, select,
    sign_extend, sub, sum_columns, zero_extend,
};

/// The rounding constant `2^(frac - 1)` as an extra column bit (none when `frac` is 0).
fn rounding<W>(format: FixedFormat) -> Vec<(usize, Bit<W>)> {
    if format.frac() > 0 {
        vec![(format.frac() as usize - 1, Bit::Const(true))]
    } else {
        Vec::new()
    }
}

/// A gadget's word and flag from its compiled outputs (the word, then the flag as a word).
fn with_flag<W>(mut out: Vec<Word<W>>) -> (Word<W>, Bit<W>) {
    let flag = out.pop().expect("two outputs").remove(0);
    (out.remove(0), flag)
}

// Every gadget below first tries the builder's compiled gate lists ([`Builder::compiled`]),
// recording itself on the recorder (which has none, so the gadget builds its gates there), and
// otherwise builds its gates directly.

/// `round(x y)`.
pub fn mul<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
    format: FixedFormat,
) -> Word<B::Wire> {
    let key = || format!("mul {} {} {}", format.width(), format.frac(), x.len());
    if let Some(mut out) = b.compiled(key, &[x, y], |r, i| vec![mul(r, &i[0], &i[1], format)]) {
        return out.remove(0);
    }
    let (w, f) = (format.width() as usize, format.frac() as usize);
    let wide = mul_columns(b, x, y, true, w + f, rounding(format));
    wide[f..f + w].to_vec()
}

/// `round(addend + sum_k x_k y_k)` with a single rounding: every partial product of every term,
/// the addend (at weight `2^frac`) and the rounding constant go into one column compression.
pub fn dot<B: Backend>(
    b: &mut Builder<B>,
    addend: Option<&[Bit<B::Wire>]>,
    terms: &[WordPair<B::Wire>],
    format: FixedFormat,
) -> Word<B::Wire> {
    let key = format!("dot {} {}", format.width(), format.frac());
    if let Some(mut out) =
        dot_through_cache(b, &key, addend, terms, |r, a, t| vec![dot(r, a, t, format)])
    {
        return out.remove(0);
    }
    let (w, f) = (format.width() as usize, format.frac() as usize);
    let columns = w + f;
    let mut sum = ColumnSum::new(columns);
    if let Some(a) = addend {
        assert_eq!(a.len(), w, "addend of the format's width");
        for (i, bit) in a.iter().enumerate() {
            sum.push(f + i, bit.clone());
        }
    }
    if f > 0 {
        sum.push_one(f - 1);
    }
    // Term by term: its partial products (one batch of ANDs) join the columns, which are then
    // reduced back to two bits each, so the columns stay small whatever the number of terms.
    for (x, y) in terms {
        let n = x.len();
        assert!(n == w && y.len() == w, "operands of the format's width");
        sum.add_product(b, x, y, |i, j| (i == n - 1) != (j == n - 1));
        // Baugh-Wooley constant 2^n per term (2^(2n-1) is beyond the columns).
        sum.push_one(w);
        sum.reduce(b);
    }
    let wide = sum.finish(b);
    wide[f..f + w].to_vec()
}

/// A dot product through the builder's compiled gadgets ([`Builder::compiled`]), keyed by
/// `key`, the addend's presence and the number of terms; `None` when it must be built directly.
fn dot_through_cache<B: Backend>(
    b: &mut Builder<B>,
    key: &str,
    addend: Option<&[Bit<B::Wire>]>,
    terms: &[WordPair<B::Wire>],
    build: impl FnOnce(&mut Builder<Recorder>, Option<&[Bit<u32>]>, &[WordPair<u32>]) -> Vec<Word<u32>>,
) -> Option<Vec<Word<B::Wire>>> {
    let key = || format!("{key} {} {}", addend.is_some(), terms.len());
    let inputs = dot_inputs(addend, terms);
    b.compiled(key, &inputs, |r, i| {
        let (a, t) = dot_operands(addend.is_some(), i);
        build(r, a, &t)
    })
}

/// A dot product's words as one input list for [`Builder::compiled`]: the addend (if any),
/// then each term's two factors.
fn dot_inputs<'a, W>(addend: Option<&'a [Bit<W>]>, terms: &'a [WordPair<W>]) -> Vec<&'a [Bit<W>]> {
    addend
        .into_iter()
        .chain(terms.iter().flat_map(|(x, y)| [&x[..], &y[..]]))
        .collect()
}

/// The addend and terms back from [`dot_inputs`]' order.
fn dot_operands(addend: bool, words: &[Word<u32>]) -> (Option<&[Bit<u32>]>, Vec<WordPair<u32>>) {
    let (a, rest) = if addend {
        (Some(&words[0][..]), &words[1..])
    } else {
        (None, words)
    };
    let terms = rest
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    (a, terms)
}

/// `round(x / y)` for `y != 0` (a zero divisor gives an unspecified value): signs split off,
/// non-restoring division of `|x| 2^frac` by `|y|`, rounding by comparing twice the remainder
/// with the divisor, sign restored. With `checked`, also an overflow bit, set when the rounded
/// quotient does not fit the format's word (or `y` is zero, whose quotient is all ones), for
/// about `frac` more AND gates; otherwise the bit is the constant 0.
pub fn div<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    y: &[Bit<B::Wire>],
    format: FixedFormat,
    checked: bool,
) -> (Word<B::Wire>, Bit<B::Wire>) {
    let key = || {
        format!(
            "div {} {} {checked} {}",
            format.width(),
            format.frac(),
            x.len()
        )
    };
    let build = |r: &mut Builder<Recorder>, i: &[Word<u32>]| {
        let (q, flag) = div(r, &i[0], &i[1], format, checked);
        vec![q, vec![flag]]
    };
    if let Some(out) = b.compiled(key, &[x, y], build) {
        return with_flag(out);
    }
    let (w, f) = (format.width() as usize, format.frac() as usize);
    let sign = b.xor(&x[w - 1], &y[w - 1]);
    let ax = crate::word::abs(b, x);
    let ay = crate::word::abs(b, y);
    // Dividend |x| 2^f (w + f bits), divisor |y| (w bits; |min| = 2^(w-1) is read unsigned).
    let mut dividend: Word<B::Wire> = vec![Bit::Const(false); f];
    dividend.extend(ax);
    let (quotient, remainder) = divide_unsigned(b, &dividend, &ay);
    // Round up when 2r >= |y|.
    let reg = w + 2;
    let twice_r = crate::word::shl(&zero_extend(&remainder, reg), 1);
    let below = lt_unsigned(b, &twice_r, &zero_extend(&ay, reg));
    let round_up = b.not(&below);
    let (rounded, carry) = add_with_carry(b, &quotient[..w], &constant(0, w), round_up);
    // The magnitude must stay below 2^(w - 1): no quotient bit from w - 1 up, no carry.
    let overflow = if checked {
        let mut high: Vec<Bit<B::Wire>> = quotient[w..].to_vec();
        high.push(rounded[w - 1].clone());
        high.push(carry);
        any(b, &high)
    } else {
        Bit::Const(false)
    };
    (conditional_negate(b, &sign, &rounded), overflow)
}

/// The OR of some bits (one AND each).
pub fn any<B: Backend>(b: &mut Builder<B>, bits: &[Bit<B::Wire>]) -> Bit<B::Wire> {
    bits.iter().fold(Bit::Const(false), |acc, x| b.or(&acc, x))
}

/// `round(addend + sum_k x_k y_k)` and an overflow bit. Every operand is sign-extended by
/// `extend` bits and the sum formed exactly over `2 (width + extend)` columns, so the bit (set
/// when the rounded result does not fit the format's word) is exact whenever the true sum is
/// below `2^(2 (width + extend) - 1 - 2 frac)`: for operands that are themselves in range, up
/// to `2^(2 extend + 1)` terms. About `(width + extend)^2` AND gates per term (4% more than
/// [`dot`] at `extend` 0).
pub fn dot_checked<B: Backend>(
    b: &mut Builder<B>,
    addend: Option<&[Bit<B::Wire>]>,
    terms: &[WordPair<B::Wire>],
    format: FixedFormat,
    extend: usize,
) -> (Word<B::Wire>, Bit<B::Wire>) {
    let key = format!("dot_checked {} {} {extend}", format.width(), format.frac());
    if let Some(out) = dot_through_cache(b, &key, addend, terms, |r, a, t| {
        let (v, flag) = dot_checked(r, a, t, format, extend);
        vec![v, vec![flag]]
    }) {
        return with_flag(out);
    }
    let (w, f) = (format.width() as usize, format.frac() as usize);
    let n = w + extend;
    let columns = 2 * n;
    let mut sum = ColumnSum::new(columns);
    if let Some(a) = addend {
        assert_eq!(a.len(), w, "addend of the format's width");
        for (i, bit) in sign_extend(a, columns - f).into_iter().enumerate() {
            sum.push(f + i, bit);
        }
    }
    if f > 0 {
        sum.push_one(f - 1);
    }
    for (x, y) in terms {
        assert!(
            x.len() == w && y.len() == w,
            "operands of the format's width"
        );
        let (x, y) = (sign_extend(x, n), sign_extend(y, n));
        sum.add_product(b, &x, &y, |i, j| (i == n - 1) != (j == n - 1));
        // Baugh-Wooley constants 2^n and 2^(2n - 1) per term (modulo 2^(2n)).
        sum.push_one(n);
        sum.push_one(2 * n - 1);
        sum.reduce(b);
    }
    let wide = sum.finish(b);
    let sign = wide[f + w - 1].clone();
    let differences: Vec<Bit<B::Wire>> =
        wide[f + w..].iter().map(|bit| b.xor(bit, &sign)).collect();
    let overflow = any(b, &differences);
    (wide[f..f + w].to_vec(), overflow)
}

/// Non-restoring division of unsigned `n` by unsigned `d > 0`: quotient (as many bits as `n`)
/// and remainder (`d`'s width). Each step adds or subtracts `d` by the sign of the partial
/// remainder (`width(d) + 1` ANDs), with one correction at the end.
pub fn divide_unsigned<B: Backend>(
    b: &mut Builder<B>,
    n: &[Bit<B::Wire>],
    d: &[Bit<B::Wire>],
) -> (Word<B::Wire>, Word<B::Wire>) {
    let reg = d.len() + 2;
    let divisor = zero_extend(d, reg);
    let mut r: Word<B::Wire> = constant(0, reg);
    let mut quotient = vec![Bit::Const(false); n.len()];
    for i in (0..n.len()).rev() {
        let negative = r[reg - 1].clone();
        // r = 2r + n_i, then r -= d when r was non-negative, r += d when it was negative.
        let mut shifted = vec![n[i].clone()];
        shifted.extend_from_slice(&r[..reg - 1]);
        let subtract = b.not(&negative);
        let operand: Word<B::Wire> = divisor.iter().map(|v| b.xor(v, &subtract)).collect();
        let (next, _) = add_with_carry(b, &shifted, &operand, subtract.clone());
        quotient[i] = b.not(&next[reg - 1]);
        r = next;
    }
    // A negative final remainder gets d added back.
    let corrected = add(b, &r, &divisor);
    let r = select(b, &r[reg - 1].clone(), &corrected, &r);
    (quotient, r[..d.len()].to_vec())
}

/// `round(sqrt(x))` for `x >= 0`; negative inputs give 0. Digit-by-digit square root of the
/// integer `x 2^frac`, rounding up when the remainder exceeds the root.
pub fn sqrt<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    format: FixedFormat,
) -> Word<B::Wire> {
    let key = || format!("sqrt {} {} {}", format.width(), format.frac(), x.len());
    if let Some(mut out) = b.compiled(key, &[x], |r, i| vec![sqrt(r, &i[0], format)]) {
        return out.remove(0);
    }
    let (w, f) = (format.width() as usize, format.frac() as usize);
    let negative = x[w - 1].clone();
    let x = select(b, &negative, &constant(0, w), x);
    // X = x 2^f, padded to an even number of bits.
    let mut big: Word<B::Wire> = vec![Bit::Const(false); f];
    big.extend(x);
    if big.len() % 2 == 1 {
        big.push(Bit::Const(false));
    }
    let half = big.len() / 2;
    let reg = half + 3;
    let mut root: Word<B::Wire> = constant(0, half);
    let mut r: Word<B::Wire> = constant(0, reg);
    for i in (0..half).rev() {
        // r = 4r + next two bits; trial t = 4 root + 1.
        let mut shifted = vec![big[2 * i].clone(), big[2 * i + 1].clone()];
        shifted.extend_from_slice(&r[..reg - 2]);
        let mut trial = vec![Bit::Const(true), Bit::Const(false)];
        trial.extend(zero_extend(&root, reg - 2));
        let below = lt_unsigned(b, &shifted, &trial);
        let fits = b.not(&below);
        let reduced = sub(b, &shifted, &trial);
        r = select(b, &fits, &reduced, &shifted);
        let mut next_root = vec![fits];
        next_root.extend_from_slice(&root[..half - 1]);
        root = next_root;
    }
    // Round up when X - root^2 (the remainder) exceeds root.
    let above = lt_unsigned(b, &zero_extend(&root, reg), &r);
    let (rounded, _) = add_with_carry(b, &zero_extend(&root, w), &constant(0, w), above);
    rounded
}

/// `x` as a fixed-point word of constants.
pub fn constant_fixed<W>(x: f64, format: FixedFormat) -> Word<W> {
    let raw = format.encode(x).expect("constant in range");
    constant(u128::from(format.to_word(raw)), format.width() as usize)
}

/// `sum_k` of columns helper re-exported for the linear-algebra circuits.
pub fn sum_rows<B: Backend>(b: &mut Builder<B>, columns: Vec<Vec<Bit<B::Wire>>>) -> Word<B::Wire> {
    sum_columns(b, columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Plain;
    use proptest::prelude::*;

    const F: FixedFormat = FixedFormat::DEFAULT;

    fn input(b: &mut Builder<Plain>, x: f64) -> Word<bool> {
        let raw = F.encode(x).expect("in range");
        b.input_u128(u128::from(F.to_word(raw)), 64)
    }

    fn raw(w: &[Bit<bool>]) -> i64 {
        F.from_word(Builder::<Plain>::value(w) as u64)
    }

    fn out(w: &[Bit<bool>]) -> f64 {
        F.decode(raw(w))
    }

    /// round-half-up of `num / den` for integers (the exact reference), den > 0.
    fn round_div(num: i128, den: i128) -> i128 {
        (2 * num + den).div_euclid(2 * den)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Products and quotients are exactly rounded (checked against integer arithmetic),
        /// hence within 1/2 ulp of the real result.
        #[test]
        fn mul_and_div_are_exactly_rounded(x in -3.0e4f64..3.0e4, y in -3.0e4f64..3.0e4) {
            let mut b = Builder::plain();
            let (wx, wy) = (input(&mut b, x), input(&mut b, y));
            let (rx, ry) = (i128::from(raw(&wx)), i128::from(raw(&wy)));
            let p = mul(&mut b, &wx, &wy, F);
            let expected = round_div(rx * ry, 1 << 32);
            if expected.abs() < 1 << 62 {
                prop_assert_eq!(i128::from(raw(&p)), expected);
                // Hence the 1/2 ulp bound, exactly: |p 2^32 - x y| <= 2^31.
                prop_assert!((i128::from(raw(&p)) * (1 << 32) - rx * ry).abs() <= 1 << 31);
            }
            prop_assume!(ry != 0);
            let (q, _) = div(&mut b, &wx, &wy, F, false);
            let magnitude = round_div(rx.abs() << 32, ry.abs());
            let expected = if (rx < 0) != (ry < 0) { -magnitude } else { magnitude };
            if expected.abs() < 1 << 62 {
                prop_assert_eq!(i128::from(raw(&q)), expected, "{} / {}", x, y);
            }
        }

        /// The checked dot product equals the unchecked one and flags exactly the sums that do
        /// not fit the word; the checked quotient flags exactly the quotients that do not fit.
        #[test]
        fn checked_gadgets_flag_exactly_the_overflows(terms in proptest::collection::vec((-3.0e4f64..3.0e4, -3.0e4f64..3.0e4), 1..5), a in -3.0e4f64..3.0e4, y in -3.0e4f64..3.0e4) {
            let mut b = Builder::plain();
            let words: Vec<_> = terms.iter().map(|&(x, y)| (input(&mut b, x), input(&mut b, y))).collect();
            let wa = input(&mut b, a);
            let (d, overflow) = dot_checked(&mut b, Some(&wa), &words, F, 2);
            let exact: i128 = i128::from(raw(&wa)) * (1 << 32)
                + words.iter().map(|(x, y)| i128::from(raw(x)) * i128::from(raw(y))).sum::<i128>();
            let rounded = round_div(exact, 1 << 32);
            let fits = rounded >= i128::from(i64::MIN) && rounded <= i128::from(i64::MAX);
            prop_assert_eq!(Builder::<Plain>::value(&[overflow]) == 1, !fits);
            if fits {
                prop_assert_eq!(i128::from(raw(&d)), rounded);
            }
            let wy = input(&mut b, y);
            let (q, overflow) = div(&mut b, &wa, &wy, F, true);
            let (rx, ry) = (i128::from(raw(&wa)), i128::from(raw(&wy)));
            if ry == 0 {
                prop_assert_eq!(Builder::<Plain>::value(&[overflow]), 1);
            } else {
                let magnitude = round_div(rx.abs() << 32, ry.abs());
                let fits = magnitude < 1 << 63;
                prop_assert_eq!(Builder::<Plain>::value(&[overflow]) == 1, !fits, "{} / {}", a, y);
                if fits {
                    let expected = if (rx < 0) != (ry < 0) { -magnitude } else { magnitude };
                    prop_assert_eq!(i128::from(raw(&q)), expected);
                }
            }
        }

        #[test]
        fn sqrt_is_exactly_rounded(x in 0.0f64..1.0e9) {
            let mut b = Builder::plain();
            let wx = input(&mut b, x);
            let r = sqrt(&mut b, &wx, F);
            let big = (i128::from(raw(&wx)) << 32) as u128;
            let mut root = (big as f64).sqrt() as u128;
            while root * root > big { root -= 1; }
            while (root + 1) * (root + 1) <= big { root += 1; }
            let expected = if big - root * root > root { root + 1 } else { root };
            prop_assert_eq!(raw(&r) as u128, expected);
        }

        /// A dot product with an addend, rounded once, is exactly rounded.
        #[test]
        fn dot_is_exactly_rounded(terms in proptest::collection::vec((-40.0f64..40.0, -40.0f64..40.0), 1..6), a in -100.0f64..100.0) {
            let mut b = Builder::plain();
            let words: Vec<_> = terms.iter().map(|&(x, y)| (input(&mut b, x), input(&mut b, y))).collect();
            let wa = input(&mut b, a);
            let d = dot(&mut b, Some(&wa), &words, F);
            let exact: i128 = i128::from(raw(&wa)) * (1 << 32)
                + words.iter().map(|(x, y)| i128::from(raw(x)) * i128::from(raw(y))).sum::<i128>();
            prop_assert_eq!(i128::from(raw(&d)), round_div(exact, 1 << 32));
        }
    }

    #[test]
    fn edge_cases() {
        let mut b = Builder::plain();
        let (z, one, m) = (input(&mut b, 0.0), input(&mut b, 1.0), input(&mut b, -2.5));
        assert_eq!(out(&mul(&mut b, &z, &m, F)), 0.0);
        assert_eq!(out(&mul(&mut b, &m, &m, F)), 6.25);
        assert_eq!(
            out(&div(&mut b, &one, &m, F, false).0),
            F.decode(F.encode(-0.4).expect("in range"))
        );
        assert_eq!(out(&div(&mut b, &m, &one, F, false).0), -2.5);
        assert_eq!(out(&sqrt(&mut b, &z, F)), 0.0);
        assert_eq!(out(&sqrt(&mut b, &m, F)), 0.0, "negative inputs give 0");
        let four = input(&mut b, 4.0);
        assert_eq!(out(&sqrt(&mut b, &four, F)), 2.0);
        // Smallest positive value: sqrt(2^-32) = 2^-16.
        let tiny = b.input_u128(1, 64);
        assert_eq!(out(&sqrt(&mut b, &tiny, F)), (-16f64).exp2());
    }

    #[test]
    fn gate_counts_at_64_32() {
        type Gadget = dyn Fn(&mut Builder<crate::backend::Counter>, &Word<()>, &Word<()>);
        let count = |f: &Gadget| {
            let mut c = Builder::counter();
            let (x, y) = (c.input(64), c.input(64));
            f(&mut c, &x, &y);
            c.counts().and
        };
        let m = count(&|c, x, y| {
            mul(c, x, y, F);
        });
        let d = count(&|c, x, y| {
            div(c, x, y, F, false);
        });
        let s = count(&|c, x, _| {
            sqrt(c, x, F);
        });
        eprintln!("64/32 fixed point: mul {m}, div {d}, sqrt {s} AND gates");
        assert!(m <= 8200, "{m}");
    }
}
