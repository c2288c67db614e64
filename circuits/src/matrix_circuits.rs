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
use crate::fixed_gadgets::{WordPair, constant_fixed, div, dot, dot_checked, sqrt};
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

/// The circuits above on one builder, in one format, range-checked when a [`RangeCheck`] is
/// given: what every step of a factorisation, inverse or solve shares.
#[derive(Debug)]
pub struct MatrixCircuit<'a, B: Backend> {
    b: &'a mut Builder<B>,
    format: FixedFormat,
    check: Option<&'a mut RangeCheck<B::Wire>>,
}

impl<'a, B: Backend> MatrixCircuit<'a, B> {
    /// Circuits built on `b` in `format`; with `check`, range checks too (a circuit's pivots at
    /// least its `min_pivot`, quotients and sums within the format).
    pub fn new(
        b: &'a mut Builder<B>,
        format: FixedFormat,
        check: Option<&'a mut RangeCheck<B::Wire>>,
    ) -> Self {
        Self { b, format, check }
    }

    /// The `d` by `d` matrix of constant zeros.
    fn zero_matrix(&self, d: usize) -> Matrix<B::Wire> {
        vec![vec![constant_fixed(0.0, self.format); d]; d]
    }

    /// A dot product, range-checked when there is a check.
    fn dot(
        &mut self,
        addend: Option<&[Bit<B::Wire>]>,
        terms: &[WordPair<B::Wire>],
    ) -> Word<B::Wire> {
        match self.check.as_deref_mut() {
            Some(c) => {
                let (v, overflow) = dot_checked(self.b, addend, terms, self.format, c.extend);
                c.note(self.b, &overflow);
                v
            }
            None => dot(self.b, addend, terms, self.format),
        }
    }

    /// A quotient, range-checked when there is a check.
    fn div(&mut self, x: &[Bit<B::Wire>], y: &[Bit<B::Wire>]) -> Word<B::Wire> {
        let (v, overflow) = div(self.b, x, y, self.format, self.check.is_some());
        if let Some(c) = self.check.as_deref_mut() {
            c.note(self.b, &overflow);
        }
        v
    }

    /// The lower-triangular `L` with `L L^T = A` for a symmetric positive-definite `A` (only
    /// the lower triangle of `A` is read): for each column `j`,
    /// `L_jj = sqrt(A_jj - sum_k L_jk^2)` and `L_ij = (A_ij - sum_k L_ik L_jk) / L_jj`. Entries
    /// above the diagonal are the constant 0.
    pub fn cholesky(&mut self, a: &Matrix<B::Wire>) -> Matrix<B::Wire> {
        let d = a.len();
        let mut l = self.zero_matrix(d);
        for j in 0..d {
            // -L_jk, so that the sums are dot products with an addend.
            let negated: Vec<Word<B::Wire>> = (0..j).map(|k| neg(self.b, &l[j][k])).collect();
            let terms: Vec<_> = (0..j)
                .map(|k| (l[j][k].clone(), negated[k].clone()))
                .collect();
            let s = self.dot(Some(&a[j][j]), &terms);
            if let Some(c) = self.check.as_deref_mut() {
                let low = lt_signed(self.b, &s, &c.min_pivot);
                c.note(self.b, &low);
            }
            let diagonal = sqrt(self.b, &s, self.format);
            for i in j + 1..d {
                let terms: Vec<_> = (0..j)
                    .map(|k| (l[i][k].clone(), negated[k].clone()))
                    .collect();
                let t = self.dot(Some(&a[i][j]), &terms);
                l[i][j] = self.div(&t, &diagonal);
            }
            l[j][j] = diagonal;
        }
        l
    }

    /// `x` with `L L^T x = v` for lower-triangular `L`: forward substitution (`L y = v`), then
    /// back substitution (`L^T x = y`).
    pub fn cholesky_solve(
        &mut self,
        l: &Matrix<B::Wire>,
        v: &[Word<B::Wire>],
    ) -> Vec<Word<B::Wire>> {
        let y = self.substitute(l, v, false);
        self.substitute(l, &y, true)
    }

    /// Solves `L x = v`, or `L^T x = v` when `transposed` (then from the last row up): each
    /// unknown is its right-hand side less the solved terms, divided by the diagonal.
    fn substitute(
        &mut self,
        l: &Matrix<B::Wire>,
        v: &[Word<B::Wire>],
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
                    (
                        coefficient.clone(),
                        neg(self.b, x[k].as_ref().expect("solved")),
                    )
                })
                .collect();
            let t = self.dot(Some(&v[i]), &terms);
            x[i] = Some(self.div(&t, &l[i][i]));
        }
        x.into_iter().map(|v| v.expect("solved")).collect()
    }

    /// `M = L^-1` for lower-triangular `L`: `M_ii = 1 / L_ii` and, below the diagonal,
    /// `M_ij = -(sum_{k=j}^{i-1} L_ik M_kj) / L_ii`.
    pub fn triangular_inverse(&mut self, l: &Matrix<B::Wire>) -> Matrix<B::Wire> {
        let d = l.len();
        let one = constant_fixed(1.0, self.format);
        let mut m = self.zero_matrix(d);
        for i in 0..d {
            m[i][i] = self.div(&one, &l[i][i]);
            let mut row: Vec<Word<B::Wire>> = Vec::with_capacity(i);
            #[allow(clippy::needless_range_loop)] // j indexes m[k][j] for every k
            for j in 0..i {
                let terms: Vec<_> = (j..i).map(|k| (l[i][k].clone(), m[k][j].clone())).collect();
                let s = self.dot(None, &terms);
                let negated = neg(self.b, &s);
                row.push(self.div(&negated, &l[i][i]));
            }
            m[i][..i].clone_from_slice(&row);
        }
        m
    }

    /// `A^-1 = L^-T L^-1` from the Cholesky factor `L` of `A`: with `M = L^-1`,
    /// `(A^-1)_ij = sum_{k >= max(i, j)} M_ki M_kj` (computed for `i >= j` and mirrored).
    pub fn spd_inverse_from_cholesky(&mut self, l: &Matrix<B::Wire>) -> Matrix<B::Wire> {
        let d = l.len();
        let m = self.triangular_inverse(l);
        let mut inverse = self.zero_matrix(d);
        for i in 0..d {
            for j in 0..=i {
                let terms: Vec<_> = (i..d).map(|k| (m[k][i].clone(), m[k][j].clone())).collect();
                let v = self.dot(None, &terms);
                inverse[j][i] = v.clone();
                inverse[i][j] = v;
            }
        }
        inverse
    }
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
