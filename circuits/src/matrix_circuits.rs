//! Linear-algebra circuits on fixed-point matrices (rows of words): Cholesky factorisation,
//! forward and back substitution, the inverse of a lower-triangular matrix, and the inverse of a
//! symmetric positive-definite matrix from its Cholesky factor.
//!
//! Every inner product is one [`dot`] (all partial products in one column compression, rounded
//! once), so an entry carries one rounding from its sum and one from its division or square
//! root. AND gates at 64 / 32: Cholesky about `d^3/6` products of 7,100 gates, plus `d^2/2`
//! divisions and `d` square roots.

use crate::backend::{Backend, Bit, Builder, Word};
use crate::fixed_format::FixedFormat;
use crate::fixed_gadgets::{WordPair, constant_fixed, div, div_checked, dot, dot_checked, sqrt};
use crate::word::{lt_signed, neg};

/// A matrix of fixed-point words, by rows.
pub type Matrix<W> = Vec<Vec<Word<W>>>;

/// Range checks for the circuits below: one bit, set as soon as any value leaves the format's
/// word (a product sum that wraps, a quotient too large, a division by zero) or a Cholesky pivot
/// falls below `min_pivot`. Every word the checked circuits produce is then in range, so every
/// sum of them is formed exactly in [`dot_checked`]'s wider columns (`extend` bits per operand,
/// enough for `2^(2 extend + 1)` terms) and the bit is exact: a wrapped value cannot pass
/// unnoticed. Costs about 10% more AND gates than the unchecked circuits.
#[derive(Debug, Clone)]
pub struct RangeCheck<W> {
    flag: Bit<W>,
    extend: usize,
    min_pivot: Word<W>,
}

impl<W: Clone> RangeCheck<W> {
    /// Checks for matrices of side `d`, refusing Cholesky pivots below the word `min_pivot`.
    pub fn new(d: usize, min_pivot: Word<W>) -> Self {
        // 2^(2 extend + 1) >= d terms per sum (plus the addend).
        let terms = (d + 1).next_power_of_two().trailing_zeros() as usize;
        Self {
            flag: Bit::Const(false),
            extend: terms.div_ceil(2),
            min_pivot,
        }
    }

    /// The bit: set when something was out of range.
    pub fn flag(&self) -> &Bit<W> {
        &self.flag
    }

    /// Adds `bit` (set when something was out of range) to the check.
    pub fn note<B: Backend<Wire = W>>(&mut self, b: &mut Builder<B>, bit: &Bit<W>) {
        self.flag = b.or(&self.flag, bit);
    }
}

/// The `d` by `d` matrix of constant zeros.
fn zero_matrix<W: Clone>(d: usize, format: FixedFormat) -> Matrix<W> {
    vec![vec![constant_fixed(0.0, format); d]; d]
}

/// A dot product and a quotient, range-checked when a [`RangeCheck`] is given.
fn dot_in<B: Backend>(
    b: &mut Builder<B>,
    check: &mut Option<&mut RangeCheck<B::Wire>>,
    addend: Option<&[crate::backend::Bit<B::Wire>]>,
    terms: &[WordPair<B::Wire>],
    format: FixedFormat,
) -> Word<B::Wire> {
    match check {
        Some(c) => {
            let (v, overflow) = dot_checked(b, addend, terms, format, c.extend);
            c.note(b, &overflow);
            v
        }
        None => dot(b, addend, terms, format),
    }
}

fn div_in<B: Backend>(
    b: &mut Builder<B>,
    check: &mut Option<&mut RangeCheck<B::Wire>>,
    x: &[crate::backend::Bit<B::Wire>],
    y: &[crate::backend::Bit<B::Wire>],
    format: FixedFormat,
) -> Word<B::Wire> {
    match check {
        Some(c) => {
            let (v, overflow) = div_checked(b, x, y, format);
            c.note(b, &overflow);
            v
        }
        None => div(b, x, y, format),
    }
}

/// The lower-triangular `L` with `L L^T = A` for a symmetric positive-definite `A` (only the
/// lower triangle of `A` is read): for each column `j`, `L_jj = sqrt(A_jj - sum_k L_jk^2)` and
/// `L_ij = (A_ij - sum_k L_ik L_jk) / L_jj`. Entries above the diagonal are the constant 0.
/// With `check`, range checks too (a circuit's pivots at least its `min_pivot`, quotients
/// and sums within the format).
pub fn cholesky<B: Backend>(
    b: &mut Builder<B>,
    a: &Matrix<B::Wire>,
    format: FixedFormat,
    mut check: Option<&mut RangeCheck<B::Wire>>,
) -> Matrix<B::Wire> {
    let d = a.len();
    let mut l = zero_matrix(d, format);
    for j in 0..d {
        // -L_jk, so that the sums are dot products with an addend.
        let negated: Vec<Word<B::Wire>> = (0..j).map(|k| neg(b, &l[j][k])).collect();
        let terms: Vec<_> = (0..j)
            .map(|k| (l[j][k].clone(), negated[k].clone()))
            .collect();
        let s = dot_in(b, &mut check, Some(&a[j][j]), &terms, format);
        if let Some(c) = check.as_mut() {
            let low = lt_signed(b, &s, &c.min_pivot);
            c.note(b, &low);
        }
        let diagonal = sqrt(b, &s, format);
        for i in j + 1..d {
            let terms: Vec<_> = (0..j)
                .map(|k| (l[i][k].clone(), negated[k].clone()))
                .collect();
            let t = dot_in(b, &mut check, Some(&a[i][j]), &terms, format);
            l[i][j] = div_in(b, &mut check, &t, &diagonal, format);
        }
        l[j][j] = diagonal;
    }
    l
}

/// `y` with `L y = v` for lower-triangular `L`: `y_i = (v_i - sum_{k<i} L_ik y_k) / L_ii`.
/// With `check`, range checks too (a circuit's pivots at least its `min_pivot`, quotients
/// and sums within the format).
pub fn forward_substitution<B: Backend>(
    b: &mut Builder<B>,
    l: &Matrix<B::Wire>,
    v: &[Word<B::Wire>],
    format: FixedFormat,
    check: Option<&mut RangeCheck<B::Wire>>,
) -> Vec<Word<B::Wire>> {
    substitute(b, l, v, format, check, false)
}

/// `x` with `L^T x = y` for lower-triangular `L`: `x_i = (y_i - sum_{k>i} L_ki x_k) / L_ii`.
/// With `check`, range checks too (a circuit's pivots at least its `min_pivot`, quotients
/// and sums within the format).
pub fn back_substitution<B: Backend>(
    b: &mut Builder<B>,
    l: &Matrix<B::Wire>,
    y: &[Word<B::Wire>],
    format: FixedFormat,
    check: Option<&mut RangeCheck<B::Wire>>,
) -> Vec<Word<B::Wire>> {
    substitute(b, l, y, format, check, true)
}

/// Solves `L x = v`, or `L^T x = v` when `transposed` (then from the last row up): each
/// unknown is its right-hand side less the solved terms, divided by the diagonal.
fn substitute<B: Backend>(
    b: &mut Builder<B>,
    l: &Matrix<B::Wire>,
    v: &[Word<B::Wire>],
    format: FixedFormat,
    mut check: Option<&mut RangeCheck<B::Wire>>,
    transposed: bool,
) -> Vec<Word<B::Wire>> {
    let d = l.len();
    let order: Vec<usize> = if transposed {
        (0..d).rev().collect()
    } else {
        (0..d).collect()
    };
    let mut x: Vec<Option<Word<B::Wire>>> = vec![None; d];
    for i in order {
        let solved = if transposed { i + 1..d } else { 0..i };
        let terms: Vec<_> = solved
            .map(|k| {
                let coefficient = if transposed { &l[k][i] } else { &l[i][k] };
                (coefficient.clone(), neg(b, x[k].as_ref().expect("solved")))
            })
            .collect();
        let t = dot_in(b, &mut check, Some(&v[i]), &terms, format);
        x[i] = Some(div_in(b, &mut check, &t, &l[i][i], format));
    }
    x.into_iter().map(|v| v.expect("solved")).collect()
}

/// `M = L^-1` for lower-triangular `L`: `M_ii = 1 / L_ii` and, below the diagonal,
/// `M_ij = -(sum_{k=j}^{i-1} L_ik M_kj) / L_ii`.
pub fn triangular_inverse<B: Backend>(
    b: &mut Builder<B>,
    l: &Matrix<B::Wire>,
    format: FixedFormat,
    mut check: Option<&mut RangeCheck<B::Wire>>,
) -> Matrix<B::Wire> {
    let d = l.len();
    let one = constant_fixed(1.0, format);
    let mut m = zero_matrix(d, format);
    for i in 0..d {
        m[i][i] = div_in(b, &mut check, &one, &l[i][i], format);
        let mut row: Vec<Word<B::Wire>> = Vec::with_capacity(i);
        #[allow(clippy::needless_range_loop)] // j indexes m[k][j] for every k
        for j in 0..i {
            let terms: Vec<_> = (j..i).map(|k| (l[i][k].clone(), m[k][j].clone())).collect();
            let s = dot_in(b, &mut check, None, &terms, format);
            let negated = neg(b, &s);
            row.push(div_in(b, &mut check, &negated, &l[i][i], format));
        }
        m[i][..i].clone_from_slice(&row);
    }
    m
}

/// `A^-1 = L^-T L^-1` from the Cholesky factor `L` of `A`: with `M = L^-1`,
/// `(A^-1)_ij = sum_{k >= max(i, j)} M_ki M_kj` (computed for `i >= j` and mirrored).
/// With `check`, range checks too (a circuit's pivots at least its `min_pivot`, quotients
/// and sums within the format).
pub fn spd_inverse_from_cholesky<B: Backend>(
    b: &mut Builder<B>,
    l: &Matrix<B::Wire>,
    format: FixedFormat,
    mut check: Option<&mut RangeCheck<B::Wire>>,
) -> Matrix<B::Wire> {
    let d = l.len();
    let m = triangular_inverse(b, l, format, check.as_deref_mut());
    let mut inverse = zero_matrix(d, format);
    for i in 0..d {
        for j in 0..=i {
            let terms: Vec<_> = (i..d).map(|k| (m[k][i].clone(), m[k][j].clone())).collect();
            let v = dot_in(b, &mut check, None, &terms, format);
            inverse[j][i] = v.clone();
            inverse[i][j] = v;
        }
    }
    inverse
}

/// `sum_k x_k y_k`, rounded once.
pub fn dot_product<B: Backend>(
    b: &mut Builder<B>,
    x: &[Word<B::Wire>],
    y: &[Word<B::Wire>],
    format: FixedFormat,
) -> Word<B::Wire> {
    let terms: Vec<_> = x.iter().cloned().zip(y.iter().cloned()).collect();
    dot(b, None, &terms, format)
}
