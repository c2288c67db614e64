//! What one Node computes on its own rows: the local terms of the l2-regularised logistic
//! log-likelihood (dissertation eq. 2.9-2.13) and of the PrivLogit Hessian bound (eq. 5.5).
//!
//! The penalty terms (`-lambda/2 ||beta||^2`, `-lambda beta`, `-lambda I`) are not local: the
//! Center adds them once to the sums (eq. 5.6), so every quantity here is a plain sum over rows.
//! Each row's term is computed from that row alone and added into a [`CompensatedSum`]; blocks of
//! rows are summed in parallel on rayon and merged in block order. The Center merges the Nodes'
//! accumulators the same way, so the totals do not depend on how rows are split among Nodes.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;

use crate::compensated::CompensatedSum;

/// Rows per block of the local sums: enough work per rayon task, small enough to spread.
const BLOCK_ROWS: usize = 2048;

/// One party's rows: design matrix `x` (n x p, including any intercept column) and 0/1 labels.
#[derive(Debug, Clone, PartialEq)]
pub struct PartyData {
    x: Array2<f64>,
    y: Array1<f64>,
}

impl PartyData {
    /// Pairs a design matrix with its labels. Panics if the row counts differ or a label is not
    /// 0 or 1: callers build these from validated input, so a mismatch is a bug.
    pub fn new(x: Array2<f64>, y: Array1<f64>) -> Self {
        assert_eq!(
            x.nrows(),
            y.len(),
            "design matrix and labels differ in length"
        );
        assert!(
            y.iter().all(|&v| v == 0.0 || v == 1.0),
            "labels must be 0 or 1"
        );
        let x = if x.is_standard_layout() {
            x
        } else {
            x.as_standard_layout().into_owned()
        };
        Self { x, y }
    }

    /// The design matrix.
    pub fn x(&self) -> ArrayView2<'_, f64> {
        self.x.view()
    }

    /// The 0/1 labels.
    pub fn y(&self) -> ArrayView1<'_, f64> {
        self.y.view()
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.x.nrows()
    }

    /// Number of columns (coefficients).
    pub fn columns(&self) -> usize {
        self.x.ncols()
    }

    /// Accumulators of the local gradient `X^T (y - p)` (entries `0..p`, eq. 2.12 without the
    /// penalty) and log-likelihood `sum_i y_i z_i - log(1 + e^{z_i})` (entry `p`, eq. 2.9), with
    /// `z = X beta`: what a Node contributes to one PrivLogit round.
    pub fn gradient_sums(&self, beta: &Array1<f64>) -> CompensatedSum {
        let p = self.columns();
        let beta = beta.as_slice().expect("contiguous coefficients");
        self.sum_rows(p + 1, |acc, row, y| {
            let z = dot(row, beta);
            acc.add_scaled(0, row, y - sigmoid(z));
            acc.add(p, log_likelihood_term(z, y));
        })
    }

    /// Accumulators of the lower triangle (packed by rows) of `X^T A X`, `A = diag(p_i (1 -
    /// p_i))`: minus the local Hessian of eq. 2.13.
    pub fn information_sums(&self, beta: &Array1<f64>) -> CompensatedSum {
        let p = self.columns();
        let beta = beta.as_slice().expect("contiguous coefficients");
        self.sum_rows(p * (p + 1) / 2, |acc, row, _| {
            let prob = sigmoid(dot(row, beta));
            acc.add_outer_lower(row, prob * (1.0 - prob));
        })
    }

    /// Accumulators of the lower triangle (packed by rows) of `1/4 X^T X`: minus the local
    /// PrivLogit Hessian bound `H~_i` of eq. 5.5.
    pub fn information_bound_sums(&self) -> CompensatedSum {
        let p = self.columns();
        self.sum_rows(p * (p + 1) / 2, |acc, row, _| {
            acc.add_outer_lower(row, 0.25)
        })
    }

    /// Local gradient `X^T (y - p)` and log-likelihood (eq. 2.9), in one pass.
    pub fn gradient_and_log_likelihood(&self, beta: &Array1<f64>) -> (Array1<f64>, f64) {
        let mut v = self.gradient_sums(beta).values();
        let l = v.pop().expect("p + 1 sums");
        (Array1::from(v), l)
    }

    /// Local gradient `X^T (y - p)`.
    pub fn gradient(&self, beta: &Array1<f64>) -> Array1<f64> {
        self.gradient_and_log_likelihood(beta).0
    }

    /// Local log-likelihood (eq. 2.9).
    pub fn log_likelihood(&self, beta: &Array1<f64>) -> f64 {
        self.gradient_and_log_likelihood(beta).1
    }

    /// Local `X^T A X`.
    pub fn information(&self, beta: &Array1<f64>) -> Array2<f64> {
        unpack_lower(&self.information_sums(beta).values(), self.columns())
    }

    /// Local `1/4 X^T X`.
    pub fn information_bound(&self) -> Array2<f64> {
        unpack_lower(&self.information_bound_sums().values(), self.columns())
    }

    /// Runs `add_row(acc, row, label)` over every row into `len` accumulators: blocks in
    /// parallel, merged in block order.
    fn sum_rows<F>(&self, len: usize, add_row: F) -> CompensatedSum
    where
        F: Fn(&mut CompensatedSum, &[f64], f64) + Sync,
    {
        let p = self.columns();
        let x = self.x.as_slice().expect("standard layout");
        let y = self.y.as_slice().expect("contiguous labels");
        let blocks: Vec<CompensatedSum> = x
            .par_chunks(BLOCK_ROWS * p.max(1))
            .zip(y.par_chunks(BLOCK_ROWS))
            .map(|(xb, yb)| {
                let mut acc = CompensatedSum::zeros(len);
                for (row, &label) in xb.chunks_exact(p).zip(yb) {
                    add_row(&mut acc, row, label);
                }
                acc
            })
            .collect();
        let mut total = CompensatedSum::zeros(len);
        blocks.iter().for_each(|b| total.merge(b));
        total
    }
}

/// A symmetric p x p matrix from its lower triangle packed by rows.
pub fn unpack_lower(packed: &[f64], p: usize) -> Array2<f64> {
    assert_eq!(packed.len(), p * (p + 1) / 2, "packed length");
    let mut m = Array2::zeros((p, p));
    let mut k = 0;
    for j in 0..p {
        for i in 0..=j {
            m[(j, i)] = packed[k];
            m[(i, j)] = packed[k];
            k += 1;
        }
    }
    m
}

/// Dot product of one row with the coefficients, in a fixed order.
#[inline]
fn dot(row: &[f64], beta: &[f64]) -> f64 {
    row.iter().zip(beta).map(|(a, b)| a * b).sum()
}

/// One row's log-likelihood `y z - log(1 + e^z)` at linear predictor `z` (eq. 2.9).
#[inline]
pub fn log_likelihood_term(z: f64, y: f64) -> f64 {
    y * z - softplus(z)
}

/// The logistic function `1 / (1 + e^{-z})`, evaluated without overflow for any finite `z`.
pub fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// `log(1 + e^z)`, stable for large `|z|` (STYLE.md: `ln_1p(exp(-|z|))`).
pub fn softplus(z: f64) -> f64 {
    z.max(0.0) + (-z.abs()).exp().ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn toy() -> PartyData {
        PartyData::new(
            array![[1.0, 0.5, -1.0], [1.0, -1.5, 2.0], [1.0, 2.0, 0.25]],
            array![1.0, 0.0, 1.0],
        )
    }

    #[test]
    fn stable_scalar_functions() {
        assert_eq!(sigmoid(0.0), 0.5);
        assert!((sigmoid(800.0) - 1.0).abs() < 1e-300);
        assert!(sigmoid(-800.0) >= 0.0);
        assert!((softplus(0.0) - 2f64.ln()).abs() < 1e-15);
        assert_eq!(softplus(800.0), 800.0);
        assert!(softplus(-800.0) >= 0.0);
    }

    /// Hand-checkable values at beta = 0: p_i = 1/2, so the gradient is X^T (y - 1/2), the
    /// log-likelihood is -n log 2, and X^T A X = 1/4 X^T X = the bound.
    #[test]
    fn values_at_zero() {
        let d = toy();
        let zero = Array1::zeros(3);
        assert_eq!(d.gradient(&zero), array![0.5, 2.0, -1.375]);
        assert!((d.log_likelihood(&zero) + 3.0 * 2f64.ln()).abs() < 1e-15);
        assert_eq!(d.information(&zero), d.information_bound());
        assert_eq!(d.information_bound()[(1, 2)], -0.75);
    }

    /// Central finite differences of the log-likelihood agree with the analytic gradient, and
    /// of the gradient with minus the information matrix.
    #[test]
    fn derivatives_match_finite_differences() {
        let d = toy();
        let beta = array![0.3, -0.2, 0.7];
        let h = 1e-6;
        let g = d.gradient(&beta);
        let info = d.information(&beta);
        for j in 0..3 {
            let mut up = beta.clone();
            let mut down = beta.clone();
            up[j] += h;
            down[j] -= h;
            let fd = (d.log_likelihood(&up) - d.log_likelihood(&down)) / (2.0 * h);
            assert!((fd - g[j]).abs() < 1e-8, "gradient {j}: {fd} vs {}", g[j]);
            let fd_g = (d.gradient(&up) - d.gradient(&down)) / (2.0 * h);
            for i in 0..3 {
                assert!((fd_g[i] + info[(i, j)]).abs() < 1e-7);
            }
        }
    }

    /// `1/4 X^T X - X^T A X` is positive semi-definite because `p(1-p) <= 1/4`.
    #[test]
    fn bound_dominates_information() {
        let d = toy();
        let gap = d.information_bound() - d.information(&array![0.1, 2.0, -0.3]);
        for v in [
            array![1.0, 0.0, 0.0],
            array![0.3, -1.0, 2.0],
            array![1.0, 1.0, 1.0],
        ] {
            assert!(v.dot(&gap.dot(&v)) >= 0.0);
        }
    }
}
