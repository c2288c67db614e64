//! One party's rows and the sums a Node forms over them, each a [`RowJob`] run over its
//! [`RowSource`].

use std::sync::Arc;

use ndarray::{Array1, Array2};

use super::family::Glm;
use super::gram::unpack_lower;
use super::row_kernel::{CONSTANT_SUMS, RowJob, RowKernel};
use crate::compensated::CompensatedSum;
use crate::rows::{MemoryRows, RowSource, RowsError, RowsProblem};

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
    ///
    /// [`Family::null_terms`]: super::family::Family::null_terms
    /// [`Family::saturated_term`]: super::family::Family::saturated_term
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
