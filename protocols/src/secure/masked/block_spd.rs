//! Recursive block algorithms on shared matrices: the SPD inverse (block Gaussian elimination on
//! Schur complements) and the Cholesky factorisation with its inverse factor. Every `O(n^3)`
//! step is a masked product; the only garbled circuits are the `n` scalar pivots.
//!
//! **Public bounds.** Every intermediate's bound follows from three public numbers: the
//! dimension `d`, a bound `beta` on the entries of `A`, and a lower bound `mu` on its smallest
//! eigenvalue (for PrivLogit `mu = lambda / N`, the penalty). With `A = [A11 A12; A21 A22]`,
//! `T = A21 A11^-1`, `S = A22 - T A12` (all exact arithmetic):
//!
//! - principal blocks and Schur complements are SPD with `lambda_min >= mu` and entries `<=
//!   beta`; their inverses are principal blocks of `A^-1`, so entries `<= 1/mu`;
//! - `T A12 = A22 - S` is PSD below `A22`: entries `<= beta`;
//! - `T A11 T^T = A22 - S` gives `||T||_2 <= sqrt(d beta / mu)`;
//! - `U = S^-1 T = -(A^-1)_21` and `T^T U = (A^-1)_11 - A11^-1`: entries `<= 1/mu`;
//! - Cholesky: `|L_ij| <= sqrt(beta)`, `||L^-1||_2 = lambda_min^(-1/2) <= mu^(-1/2)`, and
//!   `L21 L11^-1 = T`.
//!
//! Each bound gets a factor 2 of headroom for rounding, and every pivot must be at least `mu /
//! 2` (checked in its circuit): a pivot below that means the matrix is not positive definite at
//! working precision, and the run stops with a named error instead of leaving the bounds.

use crate::secure::{Inconsistency, MatrixShapes};
use num_bigint::BigInt;
use privlogit_circuits::channel::Channel;

use super::cross::Zeros;
use super::engine::{MaskedEngine, ProductKind, Shared, bound_bits, to_integer};
use super::msgs::LeafKind;
use crate::secure::gc::AggregatorGc;
use crate::secure::{PlanReason, SecureError};

/// What is publicly known of a symmetric positive-definite matrix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpdBounds {
    /// Its side `d`.
    pub dim: usize,
    /// A bound on the magnitude of every entry.
    pub entry: f64,
    /// A lower bound on its smallest eigenvalue (positive).
    pub min_eigenvalue: f64,
    /// The smallest pivot accepted (at least half the smallest eigenvalue's bound); a caller
    /// that needs accuracy raises it (see the solver).
    pub min_pivot: f64,
}

impl SpdBounds {
    /// Bounds with the loosest pivot threshold the bounds allow, `min_eigenvalue / 2`.
    pub fn new(dim: usize, entry: f64, min_eigenvalue: f64) -> Self {
        Self {
            dim,
            entry,
            min_eigenvalue,
            min_pivot: min_eigenvalue / 2.0,
        }
    }

    /// The same bounds refusing pivots below `pivot` too.
    pub fn with_min_pivot(self, pivot: f64) -> Self {
        Self {
            min_pivot: self.min_pivot.max(pivot),
            ..self
        }
    }

    /// Checks the numbers are usable.
    pub fn validate(&self) -> Result<(), SecureError> {
        if self.dim == 0
            || !(self.entry.is_finite() && self.entry > 0.0)
            || !(self.min_eigenvalue.is_finite() && self.min_eigenvalue > 0.0)
        {
            return Err(SecureError::invalid_plan(
                "lambda",
                PlanReason::SpdBounds {
                    entry: self.entry,
                    min_eigenvalue: self.min_eigenvalue,
                },
            ));
        }
        Ok(())
    }

    /// Bits of every intermediate's bound at `frac` fractional bits.
    fn bits(&self, frac: u32) -> Bits {
        let (d, beta, mu) = (self.dim as f64, self.entry, self.min_eigenvalue);
        Bits {
            entry: bound_bits(2.0 * beta, frac),
            root: bound_bits(2.0 * beta.sqrt(), frac),
            inverse: bound_bits(4.0 / mu, frac),
            inverse_root: bound_bits(4.0 / mu.sqrt(), frac),
            gain: bound_bits(2.0 * (d * beta / mu).sqrt(), frac),
            threshold: to_integer(self.min_pivot.max(mu / 2.0), frac).max(BigInt::from(1)),
        }
    }

    /// Bits of the bound on `A^-1`'s entries.
    pub fn inverse_bits(&self, frac: u32) -> u32 {
        self.bits(frac).inverse
    }

    /// Bits of the bound on `A`'s entries.
    pub fn entry_bits(&self, frac: u32) -> u32 {
        self.bits(frac).entry
    }
}

/// Bound bits of the intermediates.
#[derive(Debug, Clone)]
struct Bits {
    /// `A`, its blocks and Schur complements, `T A12`.
    entry: u32,
    /// `L`.
    root: u32,
    /// `A^-1` and its blocks, `U`, `T^T U`.
    inverse: u32,
    /// `L^-1`.
    inverse_root: u32,
    /// `T = A21 A11^-1`.
    gain: u32,
    /// Smallest admissible pivot, integer units.
    threshold: BigInt,
}

/// `A^-1` for the shared SPD matrix `a` (entries and spectrum as `bounds` says).
pub fn spd_inverse<C: Channel>(
    engine: &mut MaskedEngine,
    gc: &mut AggregatorGc<C>,
    a: &Shared,
    bounds: &SpdBounds,
) -> Result<Shared, SecureError> {
    bounds.validate()?;
    check_square(a, bounds)?;
    let bits = bounds.bits(engine.frac());
    inverse(engine, gc, a, &bits, 0)
}

/// The Cholesky factor `L` of the shared SPD matrix `a` (`A = L L^T`) and, when asked, its
/// inverse `L^-1`.
pub fn cholesky<C: Channel>(
    engine: &mut MaskedEngine,
    gc: &mut AggregatorGc<C>,
    a: &Shared,
    bounds: &SpdBounds,
    with_inverse: bool,
) -> Result<(Shared, Option<Shared>), SecureError> {
    bounds.validate()?;
    check_square(a, bounds)?;
    let bits = bounds.bits(engine.frac());
    factor(engine, gc, a, &bits, with_inverse)
}

fn check_square(a: &Shared, bounds: &SpdBounds) -> Result<(), SecureError> {
    if a.rows() != a.cols() || a.rows() != bounds.dim {
        return Err(SecureError::inconsistent(Inconsistency::Shape(
            MatrixShapes {
                what: "the matrix of an SPD algorithm",
                got: (a.rows(), a.cols()),
                expected: (bounds.dim, bounds.dim),
            },
        )));
    }
    Ok(())
}

/// The four blocks of `a` split after row and column `n1`.
fn blocks<C: Channel>(
    e: &mut MaskedEngine,
    gc: &mut AggregatorGc<C>,
    a: &Shared,
) -> Result<(usize, Shared, Shared, Shared), SecureError> {
    let n = a.rows();
    let (n1, n2) = (n / 2, n - n / 2);
    let a11 = e.slice(gc, a, (0, 0), (n1, n1))?;
    let a21 = e.slice(gc, a, (n1, 0), (n2, n1))?;
    let a22 = e.slice(gc, a, (n1, n1), (n2, n2))?;
    Ok((n1, a11, a21, a22))
}

/// The inverse of the SPD `a`, whose first row and column are the matrix's `at`-th: the leaves
/// (pivots) come in column order, so a pivot below the threshold names its column.
fn inverse<C: Channel>(
    e: &mut MaskedEngine,
    gc: &mut AggregatorGc<C>,
    a: &Shared,
    bits: &Bits,
    at: usize,
) -> Result<Shared, SecureError> {
    let n = a.rows();
    if n > 1 && n <= e.block() {
        let width = bits.entry.max(bits.inverse).max(bits.gain).max(a.bound()) + 2;
        return e
            .block_inverse(gc, a, &bits.threshold, (bits.entry, bits.inverse, width))
            .map_err(|err| match err {
                SecureError::Singular { column, .. } => SecureError::Singular {
                    column: at + column,
                    name: None,
                },
                other => other,
            });
    }
    if n == 1 {
        let mut out = e
            .leaf(
                gc,
                LeafKind::Reciprocal,
                a,
                &bits.threshold,
                &[bits.inverse],
            )
            .map_err(|err| match err {
                SecureError::Range(_) => SecureError::Singular {
                    column: at,
                    name: None,
                },
                other => other,
            })?;
        return Ok(out.remove(0));
    }
    let (n1, a11, mut a21, a22) = blocks(e, gc, a)?;
    let mut x = inverse(e, gc, &a11, bits, at)?;
    let mut t = e.product(gc, &mut a21, &mut x, bits.gain, ProductKind::Truncated)?;
    let mut a12 = e.transpose(gc, &a21)?;
    let p = e.product(gc, &mut t, &mut a12, bits.entry, ProductKind::Symmetric)?;
    let s = e.combine(gc, &[(&a22, false), (&p, true)], bits.entry)?;
    e.release(gc, &[&a11, &a21, &a12, &a22, &p])?;
    let mut y = inverse(e, gc, &s, bits, at + n1)?;
    let mut u = e.product(gc, &mut y, &mut t, bits.inverse, ProductKind::Truncated)?;
    let mut tt = e.transpose(gc, &t)?;
    let q0 = e.product(gc, &mut tt, &mut u, bits.inverse, ProductKind::Symmetric)?;
    let q = e.combine(gc, &[(&x, false), (&q0, false)], bits.inverse)?;
    let minus_u = e.combine(gc, &[(&u, true)], bits.inverse)?;
    let out = e.assemble(
        gc,
        (n, n),
        &[
            (&q, 0, 0, false),
            (&minus_u, n1, 0, false),
            (&minus_u, 0, n1, true),
            (&y, n1, n1, false),
        ],
        Zeros::None,
    )?;
    e.release(gc, &[&s, &x, &t, &tt, &u, &q0, &q, &minus_u, &y])?;
    Ok(out)
}

fn factor<C: Channel>(
    e: &mut MaskedEngine,
    gc: &mut AggregatorGc<C>,
    a: &Shared,
    bits: &Bits,
    with_inverse: bool,
) -> Result<(Shared, Option<Shared>), SecureError> {
    let n = a.rows();
    if n == 1 {
        let mut out = e.leaf(
            gc,
            LeafKind::SqrtPair,
            a,
            &bits.threshold,
            &[bits.root, bits.inverse_root],
        )?;
        let m = out.pop().filter(|_| with_inverse);
        let l = out.pop().expect("two outputs");
        return Ok((l, m));
    }
    let (n1, a11, mut a21, a22) = blocks(e, gc, a)?;
    let n2 = n - n1;
    let (l11, m11) = factor(e, gc, &a11, bits, true)?;
    let mut m11 = m11.expect("asked for the inverse");
    let mut m11t = e.transpose(gc, &m11)?;
    // L21 = A21 L11^-T; S = A22 - L21 L21^T.
    let mut l21 = e.product(gc, &mut a21, &mut m11t, bits.root, ProductKind::Truncated)?;
    let mut l21t = e.transpose(gc, &l21)?;
    let p = e.product(gc, &mut l21, &mut l21t, bits.entry, ProductKind::Symmetric)?;
    let s = e.combine(gc, &[(&a22, false), (&p, true)], bits.entry)?;
    e.release(gc, &[&a11, &a21, &a22, &m11t, &l21t, &p])?;
    let (l22, m22) = factor(e, gc, &s, bits, with_inverse)?;
    let zeros = e.zeros(gc, (n1, n2))?;
    let l = e.assemble(
        gc,
        (n, n),
        &[
            (&l11, 0, 0, false),
            (&zeros, 0, n1, false),
            (&l21, n1, 0, false),
            (&l22, n1, n1, false),
        ],
        Zeros::Lower,
    )?;
    let m = match m22 {
        Some(mut m22) => {
            // L^-1 = [M11 0; -M22 L21 M11  M22], with L21 M11 = T.
            let mut gain = e.product(gc, &mut l21, &mut m11, bits.gain, ProductKind::Truncated)?;
            let m21 = e.product(
                gc,
                &mut m22,
                &mut gain,
                bits.inverse_root,
                ProductKind::Truncated,
            )?;
            let minus = e.combine(gc, &[(&m21, true)], bits.inverse_root)?;
            let m = e.assemble(
                gc,
                (n, n),
                &[
                    (&m11, 0, 0, false),
                    (&zeros, 0, n1, false),
                    (&minus, n1, 0, false),
                    (&m22, n1, n1, false),
                ],
                Zeros::Lower,
            )?;
            e.release(gc, &[&gain, &m21, &minus, &m22])?;
            Some(m)
        }
        None => None,
    };
    e.release(gc, &[&s, &l11, &m11, &l21, &l22, &zeros])?;
    Ok((l, m))
}
