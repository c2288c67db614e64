//! The inverse of a small symmetric positive-definite block in one garbled circuit: the
//! bottom of the masked SPD inverse ([`super::block_spd`]). The recursion on Schur complements
//! pays about four sequential round trips between the servers per split (one per masked
//! product) and one per 1 x 1 pivot, so a `d x d` inverse waits for about `5 d` of them; ending
//! it at blocks of side `k` computed here, in one round trip each, cuts that to about `5 d / k`
//! at the price of a larger circuit (about 36 products of words of `width` bits for `k = 4`).
//!
//! The circuit runs the same algorithm on the same integers as the masked recursion: values at
//! `frac` fractional bits, every product `floor(x y / 2^frac)` (a dot product summed exactly,
//! then floored once), every pivot's reciprocal `round(2^(2 frac) / p)`, split after row `k /
//! 2`, so its results are those of the masked steps up to their own rounding (a masked
//! product is the floor or one less). Inputs and outputs are masked as for a 1 x 1 pivot
//! ([`super::leaf`]): the key holder enters its views of the lower triangle, the aggregator the
//! masks (by oblivious transfer, first, so the whole block is one round trip) and fresh output
//! masks; the aggregator learns, per pivot, whether it and every pivot before it were
//! admissible (`threshold <= p < 2^entry`: what the 1 x 1 recursion, which stops at the first
//! failure, reveals) and whether every input lay within its public bound, the key
//! holder the masked lower triangle of the inverse, which it mirrors.

// Matrix indices (a block's (i, j) and its mirror (j, i)) read clearer than iterator chains.
#![allow(clippy::needless_range_loop)]

use std::io;

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{One, Zero};
use privlogit_circuits::backend::{Backend, Bit, Builder, Word};
use privlogit_circuits::word::{ColumnSum, add, lt_signed, neg, sign_extend, sub, zero_extend};

use super::leaf::reciprocal_rounded;
use super::matrix::IntMatrix;
use crate::secure::gc::{GcParty, from_bits_signed, to_bits};

pub use super::msgs::{BlockShape, MAX_BLOCK};

/// What each side learns from a block: the aggregator one bit per pivot (in column order) and
/// whether the inputs were in range, the key holder its view of the inverse's lower triangle.
#[derive(Debug, Clone, Default)]
pub struct BlockResult {
    /// The aggregator: per pivot in column order, it and every pivot before it admissible.
    pub pivots: Option<Vec<bool>>,
    /// The aggregator: every input within its public bound.
    pub in_range: Option<bool>,
    /// The key holder: `y_ij + s_ij` for the lower triangle, row by row.
    pub views: Option<Vec<BigInt>>,
}

/// Runs one block. The key holder passes its `view` of the lower triangle (row by row), the
/// aggregator the input masks and the output masks of the lower triangle.
pub fn run<P: GcParty>(
    party: &mut P,
    shape: &BlockShape,
    view: Option<&[BigInt]>,
    masks: Option<&[BigInt]>,
    output_masks: Option<&[BigInt]>,
) -> io::Result<BlockResult> {
    let count = shape.triangle();
    let wide = shape.input.mask as usize + 2;
    let out_mask = shape.output.mask as usize;
    let flatten = |values: &[BigInt], bits: usize| -> Vec<bool> {
        values.iter().flat_map(|v| to_bits(v, bits)).collect()
    };
    // The aggregator's inputs first: they go out with its request, so the key holder's labels
    // and tables come back in one round trip.
    let r = party.aggregator_input(masks.map(|m| flatten(m, wide)).as_deref(), count * wide)?;
    let s = party.aggregator_input(
        output_masks.map(|m| flatten(m, out_mask)).as_deref(),
        count * out_mask,
    )?;
    let v = party.keyholder_input(view.map(|v| flatten(v, wide)).as_deref(), count * wide)?;
    let b = party.builder();
    let (revealed, pivots, in_range) = circuit(b, shape, &v, &r, &s);
    let mut bits = pivots;
    bits.push(in_range);
    let learnt = party.reveal_to_aggregator(&bits)?;
    let (pivots, in_range) = match learnt {
        Some(mut bits) => {
            let in_range = bits.pop();
            (Some(bits), in_range)
        }
        None => (None, None),
    };
    let views = party.reveal_to_keyholder(&revealed)?.map(|bits| {
        bits.chunks(out_mask + 1)
            .map(|word| from_bits_signed(&[word, &[false][..]].concat()))
            .collect()
    });
    Ok(BlockResult {
        pivots,
        in_range,
        views,
    })
}

/// A symmetric matrix of circuit words, held in full.
type Grid<W> = Vec<Vec<Word<W>>>;

/// What the circuit yields: the masked lower triangle, the pivots' bits, the range bit.
type Yield<W> = (Word<W>, Vec<Bit<W>>, Bit<W>);

/// The circuit: unmask, invert, mask. Returns the masked lower triangle (each `mask + 1`
/// bits), the pivots' admission bits and the inputs' range bit.
fn circuit<B: Backend>(
    b: &mut Builder<B>,
    shape: &BlockShape,
    v: &[Bit<B::Wire>],
    r: &[Bit<B::Wire>],
    s: &[Bit<B::Wire>],
) -> Yield<B::Wire> {
    let (k, w) = (shape.size, shape.width as usize);
    let wide = shape.input.mask as usize + 2;
    let limit = constant_word(&(BigInt::one() << shape.input.bound), wide);
    let minus_limit = constant_word(&-(BigInt::one() << shape.input.bound), wide);
    let mut in_range = Bit::Const(true);
    let mut lower = Vec::with_capacity(shape.triangle());
    for (vi, ri) in v.chunks(wide).zip(r.chunks(wide)) {
        let x = sub(b, vi, ri);
        let below = lt_signed(b, &x, &limit);
        let above = lt_signed(b, &minus_limit, &x);
        let inside = b.and(&below, &above);
        in_range = b.and(&in_range, &inside);
        // The block's words may be wider than its inputs (a small floor makes the inverse's
        // bound, and so the words, larger than the entries'): sign-extend then.
        let mut x = x;
        let top = x.last().cloned().unwrap_or(Bit::Const(false));
        x.resize(w.max(x.len()), top);
        lower.push(x[..w].to_vec());
    }
    let mut a: Grid<B::Wire> = vec![vec![Vec::new(); k]; k];
    let mut at = 0;
    for i in 0..k {
        for j in 0..=i {
            a[i][j] = lower[at].clone();
            a[j][i] = lower[at].clone();
            at += 1;
        }
    }
    let mut each = Vec::with_capacity(k);
    let inverse = invert(b, shape, &a, &mut each);
    // Revealed as "every pivot up to this one admitted": after a failed pivot the later ones
    // are computed from garbage, and the 1 x 1 recursion stopped at the first failure, so
    // the aggregator learns its column and nothing of the rest.
    let mut admitted = Bit::Const(true);
    let pivots: Vec<Bit<B::Wire>> = each
        .iter()
        .map(|p| {
            admitted = b.and(&admitted, p);
            admitted.clone()
        })
        .collect();
    let out = shape.output.mask as usize + 1;
    let mut revealed = Vec::with_capacity(shape.triangle() * out);
    let mut masks = s.chunks(out - 1);
    for i in 0..k {
        for j in 0..=i {
            let mask = masks.next().expect("one mask per output");
            let y = sign_extend(&inverse[i][j], out);
            revealed.extend(add(b, &y, &zero_extend(mask, out)));
        }
    }
    (revealed, pivots, in_range)
}

/// The inverse of the symmetric `a` by Schur complements split after row `n / 2`, pushing
/// each pivot's admission bit in column order.
fn invert<B: Backend>(
    b: &mut Builder<B>,
    shape: &BlockShape,
    a: &Grid<B::Wire>,
    pivots: &mut Vec<Bit<B::Wire>>,
) -> Grid<B::Wire> {
    let n = a.len();
    let w = shape.width as usize;
    if n == 1 {
        let p = &a[0][0];
        let wide = w.max(shape.threshold.bits() as usize + 2);
        let p_wide = sign_extend(p, wide);
        let threshold = constant_word(&shape.threshold, wide);
        let limit = constant_word(&(BigInt::one() << shape.entry), wide);
        let below = lt_signed(b, &p_wide, &threshold);
        let inside = lt_signed(b, &p_wide, &limit);
        let not_below = b.not(&below);
        pivots.push(b.and(&not_below, &inside));
        // Admitted, p is positive and below 2^entry: its low `entry` bits are the value.
        let y = reciprocal_rounded(b, &p[..shape.entry as usize], shape.frac);
        return vec![vec![fit_signed(&y, w)]];
    }
    let n1 = n / 2;
    let block = |r0: usize, c0: usize, rows: usize, cols: usize| -> Grid<B::Wire> {
        (r0..r0 + rows)
            .map(|i| a[i][c0..c0 + cols].to_vec())
            .collect()
    };
    let n2 = n - n1;
    let a11 = block(0, 0, n1, n1);
    let a21 = block(n1, 0, n2, n1);
    let a22 = block(n1, n1, n2, n2);
    let x = invert(b, shape, &a11, pivots);
    let t = product(b, shape, &a21, &x, false);
    let p = product(b, shape, &t, &transpose(&a21), true);
    let s: Grid<B::Wire> = (0..n2)
        .map(|i| (0..n2).map(|j| sub(b, &a22[i][j], &p[i][j])).collect())
        .collect();
    let y = invert(b, shape, &s, pivots);
    let u = product(b, shape, &y, &t, false);
    let q0 = product(b, shape, &transpose(&t), &u, true);
    let mut out: Grid<B::Wire> = vec![vec![Vec::new(); n]; n];
    for i in 0..n1 {
        for j in 0..n1 {
            out[i][j] = add(b, &x[i][j], &q0[i][j]);
        }
    }
    for i in 0..n2 {
        for j in 0..n1 {
            let minus = neg(b, &u[i][j]);
            out[n1 + i][j] = minus.clone();
            out[j][n1 + i] = minus;
        }
        for j in 0..n2 {
            out[n1 + i][n1 + j] = y[i][j].clone();
        }
    }
    out
}

/// `floor(x y / 2^frac)` entry by entry, each dot product summed exactly and floored once;
/// with `symmetric`, the lower triangle mirrored.
fn product<B: Backend>(
    b: &mut Builder<B>,
    shape: &BlockShape,
    x: &Grid<B::Wire>,
    y: &Grid<B::Wire>,
    symmetric: bool,
) -> Grid<B::Wire> {
    let (rows, inner, cols) = (x.len(), y.len(), y[0].len());
    let (w, f) = (shape.width as usize, shape.frac as usize);
    let mut out: Grid<B::Wire> = vec![vec![Vec::new(); cols]; rows];
    for i in 0..rows {
        for j in 0..cols {
            if symmetric && j > i {
                continue;
            }
            let mut sum = ColumnSum::new(w + f);
            for t in 0..inner {
                // Baugh-Wooley: partial products with exactly one sign bit negated, plus 2^w
                // and 2^(2w - 1) (beyond the columns kept when 2w - 1 >= w + f).
                sum.add_product(b, &x[i][t], &y[t][j], |p, q| (p == w - 1) != (q == w - 1));
                sum.push_one(w);
                sum.push_one(2 * w - 1);
            }
            let exact = sum.finish(b);
            out[i][j] = exact[f..f + w].to_vec();
        }
    }
    if symmetric {
        for i in 0..rows {
            for j in i + 1..cols {
                out[i][j] = out[j][i].clone();
            }
        }
    }
    out
}

fn transpose<W: Clone>(x: &Grid<W>) -> Grid<W> {
    (0..x[0].len())
        .map(|j| x.iter().map(|row| row[j].clone()).collect())
        .collect()
}

/// Unsigned `y` as a non-negative signed word of `width` bits (its low bits).
fn fit_signed<W: Clone>(y: &[Bit<W>], width: usize) -> Word<W> {
    let mut out = zero_extend(&y[..y.len().min(width - 1)], width - 1);
    out.push(Bit::Const(false));
    out
}

fn constant_word<W>(v: &BigInt, width: usize) -> Word<W> {
    to_bits(v, width).into_iter().map(Bit::Const).collect()
}

/// The block's inverse on plain integers, as the circuit computes it (tests): `None` when a
/// pivot is not admissible.
pub fn reference(shape: &BlockShape, a: &IntMatrix) -> Option<IntMatrix> {
    let k = shape.size;
    let grid: Vec<Vec<BigInt>> = (0..k)
        .map(|i| (0..k).map(|j| a.get(i.max(j), i.min(j)).clone()).collect())
        .collect();
    let inverse = invert_plain(shape, &grid)?;
    Some(IntMatrix::from_fn(k, k, |i, j| inverse[i][j].clone()))
}

fn invert_plain(shape: &BlockShape, a: &[Vec<BigInt>]) -> Option<Vec<Vec<BigInt>>> {
    let n = a.len();
    if n == 1 {
        let p = &a[0][0];
        if p < &shape.threshold || p.bits() > u64::from(shape.entry) || p.sign() != Sign::Plus {
            return None;
        }
        let numerator = BigInt::one() << (2 * shape.frac);
        let (q, r) = numerator.div_rem(p);
        let y = if (r << 1u32) >= *p { q + 1 } else { q };
        return Some(vec![vec![y]]);
    }
    let n1 = n / 2;
    let n2 = n - n1;
    let block = |r0: usize, c0: usize, rows: usize, cols: usize| -> Vec<Vec<BigInt>> {
        (r0..r0 + rows)
            .map(|i| a[i][c0..c0 + cols].to_vec())
            .collect()
    };
    let frac = shape.frac;
    let mul = |x: &[Vec<BigInt>], y: &[Vec<BigInt>]| -> Vec<Vec<BigInt>> {
        (0..x.len())
            .map(|i| {
                (0..y[0].len())
                    .map(|j| {
                        let exact: BigInt = (0..y.len()).map(|t| &x[i][t] * &y[t][j]).sum();
                        exact.div_floor(&(BigInt::one() << frac))
                    })
                    .collect()
            })
            .collect()
    };
    let tr = |x: &[Vec<BigInt>]| -> Vec<Vec<BigInt>> {
        (0..x[0].len())
            .map(|j| x.iter().map(|row| row[j].clone()).collect())
            .collect()
    };
    let a11 = block(0, 0, n1, n1);
    let a21 = block(n1, 0, n2, n1);
    let a22 = block(n1, n1, n2, n2);
    let x = invert_plain(shape, &a11)?;
    let t = mul(&a21, &x);
    let p = mul(&t, &tr(&a21));
    let s: Vec<Vec<BigInt>> = (0..n2)
        .map(|i| {
            (0..n2)
                .map(|j| &a22[i][j] - &p[i.max(j)][i.min(j)])
                .collect()
        })
        .collect();
    let y = invert_plain(shape, &s)?;
    let u = mul(&y, &t);
    let q0 = mul(&tr(&t), &u);
    let mut out = vec![vec![BigInt::zero(); n]; n];
    for i in 0..n1 {
        for j in 0..n1 {
            out[i][j] = &x[i][j] + &q0[i.max(j)][i.min(j)];
        }
    }
    for i in 0..n2 {
        for j in 0..n1 {
            out[n1 + i][j] = -&u[i][j];
            out[j][n1 + i] = -&u[i][j];
        }
        for j in 0..n2 {
            out[n1 + i][n1 + j] = y[i][j].clone();
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::msgs::Widths;
    use super::*;
    use privlogit_circuits::backend::Plain;

    fn shape(size: usize) -> BlockShape {
        BlockShape {
            size,
            input: Widths {
                bound: 30,
                mask: 70,
            },
            entry: 30,
            width: 48,
            threshold: BigInt::from(1 << 10),
            frac: 20,
            output: Widths {
                bound: 40,
                mask: 80,
            },
        }
    }

    /// A symmetric, diagonally dominant integer matrix at 20 fractional bits.
    fn spd(size: usize, seed: u64) -> IntMatrix {
        let mut state = seed;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as i64 % (1 << 19) - (1 << 18)
        };
        let mut m = IntMatrix::zeros(size, size);
        for i in 0..size {
            for j in 0..i {
                let v = BigInt::from(next());
                m.set(i, j, v.clone());
                m.set(j, i, v);
            }
            m.set(
                i,
                i,
                BigInt::from((size as i64 + 1) << 20) + BigInt::from(next()),
            );
        }
        m
    }

    /// The circuit on plaintext bits, inputs unmasked (masks 0).
    fn plain(shape: &BlockShape, a: &IntMatrix) -> (Vec<bool>, Vec<BigInt>) {
        let mut b = Builder::<Plain>::plain();
        let wide = shape.input.mask as usize + 2;
        let lower: Vec<BigInt> = (0..shape.size)
            .flat_map(|i| (0..=i).map(move |j| (i, j)))
            .map(|(i, j)| a.get(i, j).clone())
            .collect();
        let bits = |values: &[BigInt], width: usize| -> Word<bool> {
            values
                .iter()
                .flat_map(|v| to_bits(v, width))
                .map(Bit::Wire)
                .collect()
        };
        let v = bits(&lower, wide);
        let r = bits(&vec![BigInt::zero(); lower.len()], wide);
        let s = bits(
            &vec![BigInt::zero(); lower.len()],
            shape.output.mask as usize,
        );
        let (revealed, pivots, in_range) = circuit(&mut b, shape, &v, &r, &s);
        let bit = |x: &Bit<bool>| matches!(x, Bit::Const(true) | Bit::Wire(true));
        assert!(bit(&in_range));
        let out = shape.output.mask as usize + 1;
        let values = revealed
            .chunks(out)
            .map(|w| from_bits_signed(&w.iter().map(bit).collect::<Vec<_>>()))
            .collect();
        (pivots.iter().map(bit).collect(), values)
    }

    #[test]
    fn the_circuit_computes_the_reference_inverse_exactly() {
        for size in 1..=5 {
            for seed in 0..3 {
                let s = shape(size);
                let a = spd(size, seed);
                let (pivots, lower) = plain(&s, &a);
                assert!(pivots.iter().all(|&p| p), "side {size}: pivots {pivots:?}");
                let expected = reference(&s, &a).expect("admissible");
                let mut at = 0;
                for i in 0..size {
                    for j in 0..=i {
                        assert_eq!(lower[at], *expected.get(i, j), "side {size}, ({i}, {j})");
                        at += 1;
                    }
                }
                // And the reference is the inverse to working precision.
                let one = 1i64 << 20;
                for i in 0..size {
                    for j in 0..size {
                        let dot: BigInt = (0..size)
                            .map(|t| a.get(i, t) * expected.get(t, j))
                            .sum::<BigInt>()
                            >> 20u32;
                        let want = if i == j { one } else { 0 };
                        let error = (dot - BigInt::from(want)).magnitude().clone();
                        assert!(
                            error < 64u32.into(),
                            "side {size}: A A^-1 off by {error} ulp"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_pivot_below_the_threshold_is_named() {
        let s = shape(3);
        // The second pivot is a22 - a21^2 / a11 = 0.
        let one = BigInt::from(1 << 20);
        let a = IntMatrix::from_fn(3, 3, |i, j| match (i, j) {
            (0, 0) | (0, 1) | (1, 0) | (1, 1) => one.clone(),
            (2, 2) => &one * 3,
            _ => BigInt::zero(),
        });
        let (pivots, _) = plain(&s, &a);
        // The third pivot (3, from garbage) is not revealed: only "all up to here".
        assert_eq!(pivots, vec![true, false, false]);
        assert!(reference(&s, &a).is_none());
    }
}
