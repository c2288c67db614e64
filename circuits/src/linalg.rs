//! Linear-algebra circuits on fixed-point matrices (rows of words): Cholesky factorisation,
//! forward and back substitution, the inverse of a lower-triangular matrix, and the inverse of a
//! symmetric positive-definite matrix from its Cholesky factor.
//!
//! Every inner product is one [`dot`] (all partial products in one column compression, rounded
//! once), so an entry carries one rounding from its sum and one from its division or square
//! root. AND gates at 64 / 32: Cholesky about `d^3/6` products of 7,100 gates, plus `d^2/2`
//! divisions and `d` square roots.

use crate::backend::{Backend, Builder, Word};
use crate::fixed::FixedFormat;
use crate::fixedpoint::{constant_fixed, div, dot, sqrt};
use crate::word::neg;

/// A matrix of fixed-point words, by rows.
pub type Matrix<W> = Vec<Vec<Word<W>>>;

/// The lower-triangular `L` with `L L^T = A` for a symmetric positive-definite `A` (only the
/// lower triangle of `A` is read): for each column `j`, `L_jj = sqrt(A_jj - sum_k L_jk^2)` and
/// `L_ij = (A_ij - sum_k L_ik L_jk) / L_jj`. Entries above the diagonal are the constant 0.
pub fn cholesky<B: Backend>(
    b: &mut Builder<B>,
    a: &Matrix<B::Wire>,
    format: FixedFormat,
) -> Matrix<B::Wire> {
    let d = a.len();
    let zero = constant_fixed(0.0, format);
    let mut l: Matrix<B::Wire> = vec![vec![zero; d]; d];
    for j in 0..d {
        // -L_jk, so that the sums are dot products with an addend.
        let negated: Vec<Word<B::Wire>> = (0..j).map(|k| neg(b, &l[j][k])).collect();
        let terms: Vec<_> = (0..j)
            .map(|k| (l[j][k].clone(), negated[k].clone()))
            .collect();
        let s = dot(b, Some(&a[j][j]), &terms, format);
        let diagonal = sqrt(b, &s, format);
        for i in j + 1..d {
            let terms: Vec<_> = (0..j)
                .map(|k| (l[i][k].clone(), negated[k].clone()))
                .collect();
            let t = dot(b, Some(&a[i][j]), &terms, format);
            l[i][j] = div(b, &t, &diagonal, format);
        }
        l[j][j] = diagonal;
    }
    l
}

/// `y` with `L y = v` for lower-triangular `L`: `y_i = (v_i - sum_{k<i} L_ik y_k) / L_ii`.
pub fn forward_substitution<B: Backend>(
    b: &mut Builder<B>,
    l: &Matrix<B::Wire>,
    v: &[Word<B::Wire>],
    format: FixedFormat,
) -> Vec<Word<B::Wire>> {
    let d = l.len();
    let mut y: Vec<Word<B::Wire>> = Vec::with_capacity(d);
    for i in 0..d {
        let terms: Vec<_> = (0..i).map(|k| (l[i][k].clone(), neg(b, &y[k]))).collect();
        let t = dot(b, Some(&v[i]), &terms, format);
        y.push(div(b, &t, &l[i][i], format));
    }
    y
}

/// `x` with `L^T x = y` for lower-triangular `L`: `x_i = (y_i - sum_{k>i} L_ki x_k) / L_ii`.
pub fn back_substitution<B: Backend>(
    b: &mut Builder<B>,
    l: &Matrix<B::Wire>,
    y: &[Word<B::Wire>],
    format: FixedFormat,
) -> Vec<Word<B::Wire>> {
    let d = l.len();
    let mut x: Vec<Option<Word<B::Wire>>> = vec![None; d];
    for i in (0..d).rev() {
        let terms: Vec<_> = (i + 1..d)
            .map(|k| (l[k][i].clone(), neg(b, x[k].as_ref().expect("solved"))))
            .collect();
        let t = dot(b, Some(&y[i]), &terms, format);
        x[i] = Some(div(b, &t, &l[i][i], format));
    }
    x.into_iter().map(|v| v.expect("solved")).collect()
}

/// `M = L^-1` for lower-triangular `L`: `M_ii = 1 / L_ii` and, below the diagonal,
/// `M_ij = -(sum_{k=j}^{i-1} L_ik M_kj) / L_ii`.
pub fn triangular_inverse<B: Backend>(
    b: &mut Builder<B>,
    l: &Matrix<B::Wire>,
    format: FixedFormat,
) -> Matrix<B::Wire> {
    let d = l.len();
    let zero = constant_fixed(0.0, format);
    let one = constant_fixed(1.0, format);
    let mut m: Matrix<B::Wire> = vec![vec![zero; d]; d];
    for i in 0..d {
        m[i][i] = div(b, &one, &l[i][i], format);
        let row: Vec<Word<B::Wire>> = (0..i)
            .map(|j| {
                let terms: Vec<_> = (j..i).map(|k| (l[i][k].clone(), m[k][j].clone())).collect();
                let s = dot(b, None, &terms, format);
                let negated = neg(b, &s);
                div(b, &negated, &l[i][i], format)
            })
            .collect();
        m[i][..i].clone_from_slice(&row);
    }
    m
}

/// `A^-1 = L^-T L^-1` from the Cholesky factor `L` of `A`: with `M = L^-1`,
/// `(A^-1)_ij = sum_{k >= max(i, j)} M_ki M_kj` (computed for `i >= j` and mirrored).
pub fn spd_inverse_from_cholesky<B: Backend>(
    b: &mut Builder<B>,
    l: &Matrix<B::Wire>,
    format: FixedFormat,
) -> Matrix<B::Wire> {
    let d = l.len();
    let m = triangular_inverse(b, l, format);
    let zero = constant_fixed(0.0, format);
    let mut inverse: Matrix<B::Wire> = vec![vec![zero; d]; d];
    for i in 0..d {
        for j in 0..=i {
            let terms: Vec<_> = (i..d).map(|k| (m[k][i].clone(), m[k][j].clone())).collect();
            let v = dot(b, None, &terms, format);
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
