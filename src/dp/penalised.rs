//! Logistic regression with row weights and a diagonal Gaussian prior, solved by Newton's
//! method: minimise
//! `sum_i c_i log(1 + exp(-y_i x_i^T t)) + 1/2 sum_j p_j (t_j - m_j)^2`
//! (labels `y` in {-1, +1}, weights `c_i >= 0`, precisions `p_j > 0`, prior means `m_j`).
//!
//! One solver for the dissertation's chapter 4: DPIW's per-class averaged discrimination
//! (eq. 4.3: `c = 1/N_P` on the public rows, `1/N_X` on the private ones, `p = lambda`), the MAP
//! fit under the Gaussian prior of eq. (4.2) (`c = 1`, `p = 1/sigma^2`, `m = mu`), plain l2
//! logistic regression (`c = 1/n`, `p = lambda`, `m = 0`) and soft labels (a row twice, with
//! weights `alpha` and `1 - alpha`).

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use privlogit_protocols::cholesky::Cholesky;
use privlogit_protocols::objective::{sigmoid, softplus};

use super::DpError;

/// The problem's data.
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a> {
    /// Rows.
    pub x: ArrayView2<'a, f64>,
    /// Labels, -1 or +1.
    pub y: ArrayView1<'a, f64>,
    /// Row weights `c_i`.
    pub weights: ArrayView1<'a, f64>,
    /// Prior precisions `p_j` (positive).
    pub precision: ArrayView1<'a, f64>,
    /// Prior means `m_j`.
    pub mean: ArrayView1<'a, f64>,
}

/// Most Newton steps (the objective is strongly convex: a few dozen suffice).
const MAX_STEPS: usize = 200;

impl Problem<'_> {
    /// The objective at `t`.
    pub fn objective(&self, t: &Array1<f64>) -> f64 {
        let z = self.x.dot(t);
        let loss: f64 = z
            .iter()
            .zip(self.y)
            .zip(self.weights)
            .map(|((z, y), c)| c * softplus(-y * z))
            .sum();
        let off = t - &self.mean;
        loss + 0.5 * (&off * &off * self.precision).sum()
    }

    /// The minimiser: Newton steps with backtracking until the step is below 1e-12 of the
    /// iterate (relative) or the gradient vanishes to rounding; refused, with a named error,
    /// if that does not happen.
    pub fn solve(&self) -> Result<Array1<f64>, DpError> {
        if self.precision.iter().any(|&p| !(p.is_finite() && p > 0.0)) {
            return Err(DpError {
                name: "prior precision",
                value: self.precision.iter().cloned().fold(f64::NAN, f64::min),
                reason: "every precision must be positive and finite",
            });
        }
        let mut t = self.mean.to_owned();
        for _ in 0..MAX_STEPS {
            let z = self.x.dot(&t);
            let r: Array1<f64> = z
                .iter()
                .zip(self.y)
                .zip(self.weights)
                .map(|((z, y), c)| -c * y * sigmoid(-y * z))
                .collect();
            let g = self.x.t().dot(&r) + (&t - &self.mean) * self.precision;
            let s: Array1<f64> = z
                .iter()
                .zip(self.weights)
                .map(|(z, c)| c * sigmoid(*z) * sigmoid(-z))
                .collect();
            let xs = &self.x * &s.view().insert_axis(Axis(1));
            let h = self.x.t().dot(&xs) + Array2::from_diag(&self.precision);
            let step = Cholesky::factor(&h)
                .ok_or(DpError {
                    name: "rows",
                    value: f64::NAN,
                    reason: "leave the Hessian not positive definite in f64 (non-finite values)",
                })?
                .solve(&g);
            let f0 = self.objective(&t);
            let slope = g.dot(&step);
            if !(slope.is_finite() && f0.is_finite()) {
                break;
            }
            let size = step.dot(&step).sqrt();
            let scale = t.dot(&t).sqrt().max(1.0);
            if size <= 1e-12 * scale || slope <= 1e-24 * f0.abs().max(1.0) {
                return Ok(&t - &step);
            }
            let rounding = 1e-14 * f0.abs().max(1.0);
            let mut a = 1.0;
            while self.objective(&(&t - &(&step * a))) > f0 - 1e-4 * a * slope + rounding
                && a > 1e-10
            {
                a /= 2.0;
            }
            t = &t - &(&step * a);
        }
        Err(DpError {
            name: "Newton steps",
            value: MAX_STEPS as f64,
            reason: "did not reach the minimiser (non-finite data or an extreme prior)",
        })
    }
}

/// Plain l2 logistic regression: `(1/n) sum log(1 + exp(-y x^T t)) + lambda/2 ||t||^2` with
/// 0/1 labels.
pub fn l2_logistic(
    x: ArrayView2<'_, f64>,
    y01: ArrayView1<'_, f64>,
    lambda: f64,
) -> Result<Array1<f64>, DpError> {
    let lambda = super::positive("lambda", lambda)?;
    let n = x.nrows().max(1) as f64;
    let y = super::plr::signed(y01);
    let weights = Array1::from_elem(x.nrows(), 1.0 / n);
    let d = x.ncols();
    let precision = Array1::from_elem(d, lambda);
    let mean = Array1::zeros(d);
    Problem {
        x,
        y: y.view(),
        weights: weights.view(),
        precision: precision.view(),
        mean: mean.view(),
    }
    .solve()
}
