//! What one Node computes on its own rows: the local terms of the l2-regularised logistic
//! log-likelihood (dissertation eq. 2.9-2.13) and of the PrivLogit Hessian bound (eq. 5.5).
//!
//! The penalty terms (`-lambda/2 ||beta||^2`, `-lambda beta`, `-lambda I`) are not local: the
//! Center adds them once to the sums (eq. 5.6), so every quantity here is a plain sum over rows.
//! Each row's gradient and log-likelihood term is computed from that row alone and added into a
//! [`CompensatedSum`]; the `p x p` sums (`X^T X / 4`, `X^T A X`) are formed block by block by
//! matrix products (lower triangle only) and each block's product is added into compensated
//! accumulators. Blocks are fixed runs of rows ([`crate::rows::blocks`]) merged in order, so a
//! Node's sums do not depend on how its source chunks the rows, and the Center merges the Nodes'
//! accumulators the same way, so the totals depend on the partition among Nodes only through the
//! rounding inside one block's product.
//!
//! The rows come from a [`RowSource`]: in memory, or streamed from a file or a simulation, so a
//! Node holds one chunk and `p^2` accumulators, never its whole data.

mod family;
mod kernels;
pub mod row_kernel;

pub use family::{Family, Glm};
pub use row_kernel::{RowJob, RowKernel};

use std::sync::Arc;

#[cfg(not(feature = "faer"))]
use ndarray::linalg::general_mat_mul;
#[cfg(not(feature = "faer"))]
use ndarray::s;
use ndarray::{Array1, Array2, ArrayView2};

use crate::compensated::CompensatedSum;
use crate::rows::{MemoryRows, RowSource, RowsError, RowsProblem};

/// How many sums [`PartyData::constant_sums`] returns.
pub const CONSTANT_SUMS: usize = 5;

/// One party's rows: design matrix (n x p, including any intercept column) and 0/1 labels,
/// read from a [`RowSource`] each time a sum is asked for.
#[derive(Debug, Clone)]
pub struct PartyData {
    rows: Arc<dyn RowSource>,
    glm: Glm,
}

impl PartyData {
    /// A design matrix and its labels held in memory. Panics if the row counts differ or a label
    /// is not finite: callers build these from validated input, so a mismatch is a bug.
    pub fn new(x: Array2<f64>, y: Array1<f64>) -> Self {
        Self::from_source(Arc::new(MemoryRows::new(x, y)))
    }

    /// Rows read from `rows` on every pass.
    pub fn from_source(rows: Arc<dyn RowSource>) -> Self {
        Self {
            rows,
            glm: Glm::logistic(),
        }
    }

    /// The same rows read as a generalised linear model: `glm`'s trailing columns (offset,
    /// weight) are taken off the end of each row and its family's mean and variance replace the
    /// logistic ones.
    pub fn with_glm(mut self, glm: Glm) -> Self {
        assert!(
            self.rows.columns() >= glm.trailing(),
            "rows narrower than their offset and weight columns"
        );
        self.glm = glm;
        self
    }

    /// The model these rows are read as.
    pub fn glm(&self) -> Glm {
        self.glm
    }

    /// Where the rows come from.
    pub fn source(&self) -> &Arc<dyn RowSource> {
        &self.rows
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows.rows()
    }

    /// Number of columns (coefficients): the source's, less an offset and a weight column.
    pub fn columns(&self) -> usize {
        self.rows.columns() - self.glm.trailing()
    }

    /// Every row read into memory, trailing offset and weight columns included (tests and
    /// small data only).
    pub fn collect(&self) -> Result<(Array2<f64>, Array1<f64>), RowsError> {
        let p = self.rows.columns();
        let mut xs = Vec::with_capacity(self.rows() * p);
        let mut ys = Vec::with_capacity(self.rows());
        self.rows.scan(&mut |x, y| {
            xs.extend(x.iter());
            ys.extend(y.iter());
            Ok(())
        })?;
        let x = Array2::from_shape_vec((ys.len(), p), xs)
            .map_err(|e| RowsError::new(self.rows.describe(), RowsProblem::Shape(e)))?;
        Ok((x, Array1::from(ys)))
    }

    /// Accumulators of the local gradient `X^T (y - p)` (entries `0..p`, eq. 2.12 without the
    /// penalty) and log-likelihood `sum_i y_i z_i - log(1 + e^{z_i})` (entry `p`, eq. 2.9), with
    /// `z = X beta`: what a Node contributes to one PrivLogit round.
    pub fn gradient_sums(&self, beta: &Array1<f64>) -> Result<CompensatedSum, RowsError> {
        self.sums(RowKernel::Gradient(beta.to_vec()))
    }

    /// Sums over the rows, independent of the coefficients, that a generalised linear model's
    /// goodness of fit needs: the three of [`Family::null_terms`] (the null model), then
    /// `sum w * saturated(y)` (the log-likelihood at `mu = y`, [`Family::saturated_term`]) and
    /// `sum log w` (the Gaussian likelihood's weight term).
    pub fn constant_sums(&self) -> Result<[f64; CONSTANT_SUMS], RowsError> {
        let sums = self.sums(RowKernel::Constants)?;
        let mut out = [0.0; CONSTANT_SUMS];
        out.copy_from_slice(&sums.values());
        Ok(out)
    }

    /// Accumulators of the lower triangle (packed by rows) of `X^T A X`, `A = diag(p_i (1 -
    /// p_i))`: minus the local Hessian of eq. 2.13.
    pub fn information_sums(&self, beta: &Array1<f64>) -> Result<CompensatedSum, RowsError> {
        self.sums(RowKernel::Information(beta.to_vec()))
    }

    /// Accumulators of the lower triangle (packed by rows) of `1/4 X^T X`: minus the local
    /// PrivLogit Hessian bound `H~_i` of eq. 5.5.
    /// With prior weights the bound is `1/4 X^T W X`; for the other families it is the same
    /// Gram matrix (used to check the design's rank), not a bound.
    pub fn information_bound_sums(&self) -> Result<CompensatedSum, RowsError> {
        self.sums(RowKernel::Bound)
    }

    /// Local gradient `X^T (y - p)` and log-likelihood (eq. 2.9), in one pass.
    pub fn gradient_and_log_likelihood(
        &self,
        beta: &Array1<f64>,
    ) -> Result<(Array1<f64>, f64), RowsError> {
        let mut v = self.gradient_sums(beta)?.values();
        let l = v.pop().expect("p + 1 sums");
        Ok((Array1::from(v), l))
    }

    /// Local gradient `X^T (y - p)`.
    pub fn gradient(&self, beta: &Array1<f64>) -> Result<Array1<f64>, RowsError> {
        Ok(self.gradient_and_log_likelihood(beta)?.0)
    }

    /// Local log-likelihood (eq. 2.9).
    pub fn log_likelihood(&self, beta: &Array1<f64>) -> Result<f64, RowsError> {
        Ok(self.gradient_and_log_likelihood(beta)?.1)
    }

    /// Local `X^T A X`.
    pub fn information(&self, beta: &Array1<f64>) -> Result<Array2<f64>, RowsError> {
        Ok(unpack_lower(
            &self.information_sums(beta)?.values(),
            self.columns(),
        ))
    }

    /// Local `1/4 X^T X`.
    pub fn information_bound(&self) -> Result<Array2<f64>, RowsError> {
        Ok(unpack_lower(
            &self.information_bound_sums()?.values(),
            self.columns(),
        ))
    }

    /// `kernel`'s sums over every row, read as this party's model.
    pub fn sums(&self, kernel: RowKernel) -> Result<CompensatedSum, RowsError> {
        RowJob::new(self.glm, kernel).fold(self.rows.as_ref())
    }
}

/// `lower_gram` of the first `p` columns of a block (copied into standard layout only when
/// trailing offset or weight columns follow them).
fn design_gram(x: ArrayView2<'_, f64>, p: usize, weights: Option<&[f64]>, scale: f64) -> Vec<f64> {
    if x.ncols() == p {
        lower_gram(x, weights, scale)
    } else {
        let design = x
            .slice(ndarray::s![.., ..p])
            .as_standard_layout()
            .into_owned();
        lower_gram(design.view(), weights, scale)
    }
}

/// Columns of the result formed per matrix product in [`lower_gram`]: the lower triangle is
/// built panel by panel, each panel a product over its rows only, so the work is about half a
/// full `X^T X` (plus a panel's width).
#[cfg(not(feature = "faer"))]
const GRAM_PANEL: usize = 64;

/// The lower triangle, packed by rows, of `scale * X^T W X` for a block `x` (rows in standard
/// layout) and `W = diag(weights)` (identity if `None`), single-threaded (the blocks run in
/// parallel): for each panel of rows `i0..i1` of the result, one matrix product
/// `X[:, i0..i1]^T (W X)[:, ..i1]` (ndarray's, over matrixmultiply's kernels).
#[cfg(not(feature = "faer"))]
fn lower_gram(x: ArrayView2<'_, f64>, weights: Option<&[f64]>, scale: f64) -> Vec<f64> {
    let p = x.ncols();
    let weighted;
    let rhs = match weights {
        Some(w) => {
            let mut wx = x.to_owned();
            for (mut row, &wi) in wx.rows_mut().into_iter().zip(w) {
                row *= wi;
            }
            weighted = wx;
            weighted.view()
        }
        None => x,
    };
    let mut product = Array2::<f64>::zeros((p, p));
    for i0 in (0..p).step_by(GRAM_PANEL) {
        let i1 = (i0 + GRAM_PANEL).min(p);
        general_mat_mul(
            scale,
            &x.slice(s![.., i0..i1]).t(),
            &rhs.slice(s![.., ..i1]),
            0.0,
            &mut product.slice_mut(s![i0..i1, ..i1]),
        );
    }
    let mut packed = Vec::with_capacity(p * (p + 1) / 2);
    for j in 0..p {
        packed.extend((0..=j).map(|i| product[(j, i)]));
    }
    packed
}

#[cfg(feature = "faer")]
/// [`lower_gram`] by faer's triangular matrix product (the `faer` feature: about 1.5x faster
/// at p = 400 on AVX-512 machines, the same sums up to rounding; off by default for build
/// time).
fn lower_gram(x: ArrayView2<'_, f64>, weights: Option<&[f64]>, scale: f64) -> Vec<f64> {
    let (n, p) = x.dim();
    let xs = x.to_slice().expect("standard layout");
    let xt = MatRef::from_column_major_slice(xs, p, n);
    let weighted: Vec<f64>;
    let rhs = match weights {
        Some(w) => {
            weighted = xs
                .chunks_exact(p)
                .zip(w)
                .flat_map(|(row, &wi)| row.iter().map(move |v| wi * v))
                .collect();
            MatRef::from_row_major_slice(&weighted, n, p)
        }
        None => MatRef::from_row_major_slice(xs, n, p),
    };
    use faer::linalg::matmul::triangular::{BlockStructure, matmul};
    use faer::{Accum, Mat, MatRef, Par};
    let mut product = Mat::<f64>::zeros(p, p);
    matmul(
        product.as_mut(),
        BlockStructure::TriangularLower,
        Accum::Replace,
        xt,
        BlockStructure::Rectangular,
        rhs,
        BlockStructure::Rectangular,
        scale,
        Par::Seq,
    );
    let mut packed = Vec::with_capacity(p * (p + 1) / 2);
    for j in 0..p {
        packed.extend((0..=j).map(|i| product[(j, i)]));
    }
    packed
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

/// Dot product of one row with the coefficients in a fixed order: eight interleaved partial
/// sums (so the compiler can vectorise it) added pairwise, then the tail.
#[inline]
pub fn dot(row: &[f64], beta: &[f64]) -> f64 {
    const LANES: usize = 8;
    let mut lanes = [0.0; LANES];
    let split = row.len() - row.len() % LANES;
    for (r, b) in row[..split]
        .chunks_exact(LANES)
        .zip(beta[..split].chunks_exact(LANES))
    {
        for k in 0..LANES {
            lanes[k] += r[k] * b[k];
        }
    }
    let mut total = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5]))
        + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (r, b) in row[split..].iter().zip(&beta[split..]) {
        total += r * b;
    }
    total
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

/// `log(1 + e^z)`, stable for large `|z|`: `max(z, 0) + ln_1p(exp(-|z|))` never overflows.
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
        assert_eq!(
            d.gradient(&zero).expect("in memory"),
            array![0.5, 2.0, -1.375]
        );
        assert!((d.log_likelihood(&zero).expect("in memory") + 3.0 * 2f64.ln()).abs() < 1e-15);
        assert_eq!(
            d.information(&zero).expect("in memory"),
            d.information_bound().expect("in memory")
        );
        assert_eq!(d.information_bound().expect("in memory")[(1, 2)], -0.75);
    }

    /// Central finite differences of the log-likelihood agree with the analytic gradient, and
    /// of the gradient with minus the information matrix.
    #[test]
    fn derivatives_match_finite_differences() {
        let d = toy();
        let beta = array![0.3, -0.2, 0.7];
        let h = 1e-6;
        let g = d.gradient(&beta).expect("in memory");
        let info = d.information(&beta).expect("in memory");
        for j in 0..3 {
            let mut up = beta.clone();
            let mut down = beta.clone();
            up[j] += h;
            down[j] -= h;
            let fd = (d.log_likelihood(&up).expect("in memory")
                - d.log_likelihood(&down).expect("in memory"))
                / (2.0 * h);
            assert!((fd - g[j]).abs() < 1e-8, "gradient {j}: {fd} vs {}", g[j]);
            let fd_g = (d.gradient(&up).expect("in memory")
                - d.gradient(&down).expect("in memory"))
                / (2.0 * h);
            for i in 0..3 {
                assert!((fd_g[i] + info[(i, j)]).abs() < 1e-7);
            }
        }
    }

    /// `1/4 X^T X - X^T A X` is positive semi-definite because `p(1-p) <= 1/4`.
    #[test]
    fn bound_dominates_information() {
        let d = toy();
        let gap = d.information_bound().expect("in memory")
            - d.information(&array![0.1, 2.0, -0.3]).expect("in memory");
        for v in [
            array![1.0, 0.0, 0.0],
            array![0.3, -1.0, 2.0],
            array![1.0, 1.0, 1.0],
        ] {
            assert!(v.dot(&gap.dot(&v)) >= 0.0);
        }
    }
}
