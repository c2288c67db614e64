//! The only non-linear steps of masked linear algebra, one scalar at a time in a small garbled
//! circuit: the reciprocal of a pivot (SPD inverse) and a pivot's square root with its
//! reciprocal (Cholesky).
//!
//! The key holder inputs its view `v = x + r`, the aggregator the mask `r` (by oblivious
//! transfer) and fresh masks `s` for the outputs. The circuit recovers `x = v - r` exactly
//! (`mask + 2` bits), checks `threshold <= x < 2^bound` (the admission bit, revealed to the
//! aggregator: a pivot below the public threshold means the matrix is not positive definite at
//! working precision, a value past its bound means a bound was wrong; both stop the study with
//! a named error), computes the outputs exactly rounded on integers of the widths the bounds
//! give, and reveals `y + s` to the key holder, which keeps it as its view of `y`. About
//! 7,000 AND gates for a reciprocal at 46 fractional bits.

use std::io;

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::One;
use privlogit_circuits::backend::{Backend, Bit, Builder, Word};
use privlogit_circuits::fixed_gadgets::divide_unsigned;
use privlogit_circuits::word::{
    add, add_with_carry, lt_signed, lt_unsigned, select, sub, zero_extend,
};

use super::msgs::{LeafKind, Widths};
use crate::secure::gc::{GcParty, from_bits_signed, to_bits};

/// Shape of one leaf: widths of the input and of the outputs, the admission threshold, and the
/// fractional bits.
#[derive(Debug, Clone)]
pub struct LeafShape {
    /// Which step.
    pub kind: LeafKind,
    /// The input's bound and mask.
    pub input: Widths,
    /// Each output's bound and mask.
    pub outputs: Vec<Widths>,
    /// Smallest admissible input, integer units (positive).
    pub threshold: BigInt,
    /// Fractional bits.
    pub frac: u32,
}

/// What each side learns from a leaf: the aggregator the admission bit, the key holder its
/// views of the outputs.
#[derive(Debug, Clone, Default)]
pub struct LeafResult {
    /// The aggregator: whether the input was admissible.
    pub admitted: Option<bool>,
    /// The key holder: `y_k + s_k` for every output.
    pub views: Option<Vec<BigInt>>,
}

/// Runs one leaf. The key holder passes `view` (and `None` masks), the aggregator `None` and
/// its `mask` and `output_masks`.
pub fn run<P: GcParty>(
    party: &mut P,
    shape: &LeafShape,
    view: Option<&BigInt>,
    mask: Option<&BigInt>,
    output_masks: Option<&[BigInt]>,
) -> io::Result<LeafResult> {
    let wide = shape.input.mask as usize + 2;
    // The aggregator's inputs (oblivious transfers it starts) first: it sends them with the
    // request, and the key holder answers with its own input and the tables, so a pivot costs
    // one round trip (its input first, the aggregator would wait for it, then for the tables).
    let r = party.aggregator_input(mask.map(|r| to_bits(r, wide)).as_deref(), wide)?;
    let s_words: Vec<Word<u128>> = shape
        .outputs
        .iter()
        .enumerate()
        .map(|(k, o)| {
            let bits = output_masks.map(|m| to_bits(&m[k], o.mask as usize));
            party.aggregator_input(bits.as_deref(), o.mask as usize)
        })
        .collect::<io::Result<_>>()?;
    let v = party.keyholder_input(view.map(|v| to_bits(v, wide)).as_deref(), wide)?;
    let b = party.builder();
    // One compiled gate list per leaf shape: the d pivots of a factorisation share it.
    let key = || {
        format!(
            "leaf {:?} {:?} {:?} {} {}",
            shape.kind, shape.input, shape.outputs, shape.threshold, shape.frac
        )
    };
    let mut inputs: Vec<&[Bit<u128>]> = vec![&v, &r];
    inputs.extend(s_words.iter().map(|w| &w[..]));
    let (revealed, admitted) = match b.compiled(key, &inputs, |rec, i| {
        let (revealed, admitted) = circuit(rec, shape, &i[0], &i[1], &i[2..]);
        vec![revealed, vec![admitted]]
    }) {
        Some(mut out) => {
            let admitted = out.pop().expect("two outputs").remove(0);
            (out.remove(0), admitted)
        }
        None => circuit(b, shape, &v, &r, &s_words),
    };
    let admitted = party.reveal_to_aggregator(&[admitted])?.map(|bits| bits[0]);
    let views = party.reveal_to_keyholder(&revealed)?.map(|bits| {
        let mut at = 0;
        shape
            .outputs
            .iter()
            .map(|o| {
                let width = o.mask as usize + 1;
                let word = &bits[at..at + width];
                at += width;
                // y + s is non-negative and below 2^width.
                from_bits_signed(&[word, &[false][..]].concat())
            })
            .collect()
    });
    Ok(LeafResult { admitted, views })
}

/// The leaf's arithmetic from the key holder's view `v`, the mask `r` and the output masks `s`:
/// the masked outputs (each `mask + 1` bits, back to back) and the admission bit.
fn circuit<B: Backend>(
    b: &mut Builder<B>,
    shape: &LeafShape,
    v: &[Bit<B::Wire>],
    r: &[Bit<B::Wire>],
    s_words: &[Word<B::Wire>],
) -> (Word<B::Wire>, Bit<B::Wire>) {
    let wide = shape.input.mask as usize + 2;
    let x = sub(b, v, r);
    let threshold = constant_big(&shape.threshold, wide);
    let limit = constant_big(&(BigInt::one() << shape.input.bound), wide);
    let below = lt_signed(b, &x, &threshold);
    let inside = lt_signed(b, &x, &limit);
    let not_below = b.not(&below);
    let admitted = b.and(&not_below, &inside);
    // Admitted, x is positive and below 2^bound: its low `bound` bits are the value.
    let x = x[..shape.input.bound as usize].to_vec();
    let values = match shape.kind {
        LeafKind::Reciprocal => vec![reciprocal_rounded(b, &x, shape.frac)],
        LeafKind::SqrtPair => {
            let root = sqrt_scaled(b, &x, shape.frac);
            let inverse = reciprocal_rounded(b, &root, shape.frac);
            vec![root, inverse]
        }
        LeafKind::Check => Vec::new(),
    };
    let mut revealed = Vec::new();
    for ((y, s), o) in values.iter().zip(s_words).zip(&shape.outputs) {
        let width = o.mask as usize + 1;
        let y = fit(y, width);
        revealed.extend(add(b, &y, &zero_extend(s, width)));
    }
    (revealed, admitted)
}

/// `round(2^(2 frac) / x)` for unsigned `x > 0` (also the pivots of [`super::block_leaf`]).
pub(super) fn reciprocal_rounded<B: Backend>(
    b: &mut Builder<B>,
    x: &[Bit<B::Wire>],
    frac: u32,
) -> Word<B::Wire> {
    let top = 2 * frac as usize;
    let mut dividend: Word<B::Wire> = vec![Bit::Const(false); top + 1];
    dividend[top] = Bit::Const(true);
    let (quotient, remainder) = divide_unsigned(b, &dividend, x);
    round_up_if_half(b, &quotient, &remainder, x)
}

/// `round(sqrt(x 2^frac))` for unsigned `x`: the square root at the same scale, digit by digit,
/// rounded up when the remainder exceeds the root.
fn sqrt_scaled<B: Backend>(b: &mut Builder<B>, x: &[Bit<B::Wire>], frac: u32) -> Word<B::Wire> {
    let mut big: Word<B::Wire> = vec![Bit::Const(false); frac as usize];
    big.extend_from_slice(x);
    if big.len() % 2 == 1 {
        big.push(Bit::Const(false));
    }
    let half = big.len() / 2;
    let reg = half + 3;
    let mut root: Word<B::Wire> = vec![Bit::Const(false); half];
    let mut r: Word<B::Wire> = vec![Bit::Const(false); reg];
    for i in (0..half).rev() {
        let mut shifted = vec![big[2 * i].clone(), big[2 * i + 1].clone()];
        shifted.extend_from_slice(&r[..reg - 2]);
        let mut trial = vec![Bit::Const(true), Bit::Const(false)];
        trial.extend(zero_extend(&root, reg - 2));
        let short = lt_unsigned(b, &shifted, &trial);
        let fits = b.not(&short);
        let reduced = sub(b, &shifted, &trial);
        r = select(b, &fits, &reduced, &shifted);
        let mut next = vec![fits];
        next.extend_from_slice(&root[..half - 1]);
        root = next;
    }
    let above = lt_unsigned(b, &zero_extend(&root, reg), &r);
    let (rounded, carry) = add_with_carry(b, &root, &vec![Bit::Const(false); half], above);
    let mut out = rounded;
    out.push(carry);
    out
}

/// `q + 1` when `2 rem >= d`, else `q` (one extra bit for the carry).
fn round_up_if_half<B: Backend>(
    b: &mut Builder<B>,
    quotient: &[Bit<B::Wire>],
    remainder: &[Bit<B::Wire>],
    divisor: &[Bit<B::Wire>],
) -> Word<B::Wire> {
    let reg = divisor.len() + 2;
    let mut twice = vec![Bit::Const(false)];
    twice.extend(zero_extend(remainder, reg - 1));
    let short = lt_unsigned(b, &twice, &zero_extend(divisor, reg));
    let up = b.not(&short);
    let zeros = vec![Bit::Const(false); quotient.len()];
    let (sum, carry) = add_with_carry(b, quotient, &zeros, up);
    let mut out = sum;
    out.push(carry);
    out
}

/// The low `width` bits of unsigned `y`, zero-extended when shorter.
fn fit<W: Clone>(y: &[Bit<W>], width: usize) -> Word<W> {
    if y.len() >= width {
        y[..width].to_vec()
    } else {
        zero_extend(y, width)
    }
}

/// The two's-complement constant `v` in `width` bits.
fn constant_big<W>(v: &BigInt, width: usize) -> Word<W> {
    to_bits(v, width).into_iter().map(Bit::Const).collect()
}

/// The exact integer results of a leaf, for tests and the plaintext reference: `None` when the
/// input is not admissible.
pub fn reference(shape: &LeafShape, x: &BigInt) -> Option<Vec<BigInt>> {
    if x < &shape.threshold || x.bits() > u64::from(shape.input.bound) || x.sign() != Sign::Plus {
        return None;
    }
    let one = BigUint::one();
    let x = x.magnitude().clone();
    let reciprocal = |d: &BigUint| -> BigUint {
        let numerator = &one << (2 * shape.frac);
        let (q, r) = (&numerator / d, &numerator % d);
        if &(r << 1u32) >= d { q + 1u32 } else { q }
    };
    let values = match shape.kind {
        LeafKind::Reciprocal => vec![reciprocal(&x)],
        LeafKind::Check => Vec::new(),
        LeafKind::SqrtPair => {
            let big = &x << shape.frac;
            let root = big.sqrt();
            let root = if &big - &root * &root > root {
                root + 1u32
            } else {
                root
            };
            let inverse = reciprocal(&root);
            vec![root, inverse]
        }
    };
    Some(values.into_iter().map(BigInt::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use privlogit_circuits::backend::Plain;
    use proptest::prelude::*;

    /// Evaluates a leaf's arithmetic on the plaintext backend.
    fn plain(shape: &LeafShape, x: &BigInt) -> (bool, Vec<BigInt>) {
        let mut b = Builder::<Plain>::plain();
        let wide = shape.input.mask as usize + 2;
        let word: Word<bool> = to_bits(x, wide).into_iter().map(Bit::Wire).collect();
        let threshold = constant_big(&shape.threshold, wide);
        let limit = constant_big(&(BigInt::one() << shape.input.bound), wide);
        let below = lt_signed(&mut b, &word, &threshold);
        let inside = lt_signed(&mut b, &word, &limit);
        let nb = b.not(&below);
        let ok = b.and(&nb, &inside);
        let x = word[..shape.input.bound as usize].to_vec();
        let outs = match shape.kind {
            LeafKind::Reciprocal => vec![reciprocal_rounded(&mut b, &x, shape.frac)],
            LeafKind::SqrtPair => {
                let root = sqrt_scaled(&mut b, &x, shape.frac);
                let inv = reciprocal_rounded(&mut b, &root, shape.frac);
                vec![root, inv]
            }
            LeafKind::Check => Vec::new(),
        };
        let value = |w: &[Bit<bool>]| {
            let bits: Vec<bool> = w
                .iter()
                .map(|b| match b {
                    Bit::Const(v) | Bit::Wire(v) => *v,
                })
                .chain([false])
                .collect();
            from_bits_signed(&bits)
        };
        let ok = matches!(ok, Bit::Const(true) | Bit::Wire(true));
        (ok, outs.iter().map(|w| value(w)).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The circuits compute exactly the rounded integer results, and admit exactly the
        /// inputs in `[threshold, 2^bound)`.
        #[test]
        fn leaves_are_exactly_rounded(x in -1_000_000_000i64..(1i64 << 40), sqrt in any::<bool>()) {
            let shape = LeafShape {
                kind: if sqrt { LeafKind::SqrtPair } else { LeafKind::Reciprocal },
                input: Widths { bound: 40, mask: 80 },
                outputs: vec![Widths { bound: 60, mask: 100 }; if sqrt { 2 } else { 1 }],
                threshold: BigInt::from(1000),
                frac: 20,
            };
            let x = BigInt::from(x);
            let (ok, outs) = plain(&shape, &x);
            match reference(&shape, &x) {
                Some(expected) => {
                    prop_assert!(ok);
                    prop_assert_eq!(outs, expected);
                }
                None => prop_assert!(!ok),
            }
        }
    }
}
