//! Anderson acceleration (Anderson 1965; type II as in Walker and Ni 2011) of a fixed-point map.
//!
//! For the map `G(x) = x + f(x)` and the last `m + 1` pairs `(x_i, f_i)`, the extrapolated point
//! is `x_k + f_k - (dX + dF) gamma`, where `dX`, `dF` hold successive differences of the
//! iterates and residuals and `gamma` minimises `|| f_k - dF gamma ||_2`. Everything here is a
//! function of public coefficient vectors only: for PrivLogit, `f_i` is the revealed step
//! `B^{-1} g(x_i)`.
//!
//! The least-squares problem is solved by a QR factorisation (modified Gram-Schmidt with one
//! reorthogonalisation), not the normal equations, which would square the condition number of
//! the near-dependent columns that appear close to convergence. When the columns are dependent
//! to working precision (a diagonal of R below [`DEPENDENCE`] times its column's norm) the
//! oldest columns are dropped, as Walker and Ni recommend; no usable column means no candidate.

use std::collections::VecDeque;

use ndarray::Array1;

/// A column is treated as dependent on the newer ones when the part of it orthogonal to them
/// is below this fraction of its norm.
const DEPENDENCE: f64 = 1e-12;

/// The history window of Anderson acceleration.
#[derive(Debug, Clone)]
pub(crate) struct Anderson {
    memory: usize,
    iterates: VecDeque<Array1<f64>>,
    residuals: VecDeque<Array1<f64>>,
}

impl Anderson {
    pub(crate) fn new(memory: usize) -> Self {
        Self {
            memory,
            iterates: VecDeque::with_capacity(memory + 1),
            residuals: VecDeque::with_capacity(memory + 1),
        }
    }

    /// The window as `(x, f(x))` pairs, oldest first (public iterates and steps: what a
    /// checkpoint keeps).
    pub(crate) fn window(&self) -> Vec<(Array1<f64>, Array1<f64>)> {
        self.iterates
            .iter()
            .cloned()
            .zip(self.residuals.iter().cloned())
            .collect()
    }

    /// A window of `memory` holding `pairs` (oldest first; only the newest `memory + 1` kept).
    pub(crate) fn with_window(memory: usize, pairs: Vec<(Array1<f64>, Array1<f64>)>) -> Self {
        let mut a = Self::new(memory);
        for (x, f) in pairs {
            a.push(x, f);
        }
        a
    }

    /// Adds the pair `(x, f(x))`, forgetting the oldest beyond the window.
    pub(crate) fn push(&mut self, iterate: Array1<f64>, residual: Array1<f64>) {
        if self.iterates.len() == self.memory + 1 {
            self.iterates.pop_front();
            self.residuals.pop_front();
        }
        self.iterates.push_back(iterate);
        self.residuals.push_back(residual);
    }

    /// Forgets everything but the newest pair (a restart).
    pub(crate) fn restart(&mut self) {
        while self.iterates.len() > 1 {
            self.iterates.pop_front();
            self.residuals.pop_front();
        }
    }

    /// The extrapolated point, or `None` with fewer than two pairs or a degenerate system.
    pub(crate) fn extrapolate(&self) -> Option<Array1<f64>> {
        let m = self.iterates.len().checked_sub(1).filter(|&m| m > 0)?;
        let x_k = self.iterates.back()?;
        let f_k = self.residuals.back()?;
        let d_x: Vec<Array1<f64>> = (0..m)
            .map(|j| &self.iterates[j + 1] - &self.iterates[j])
            .collect();
        let d_f: Vec<Array1<f64>> = (0..m)
            .map(|j| &self.residuals[j + 1] - &self.residuals[j])
            .collect();

        let gamma = least_squares(&d_f, f_k)?;

        let mut candidate = x_k + f_k;
        for j in 0..m {
            candidate.scaled_add(-gamma[j], &(&d_x[j] + &d_f[j]));
        }
        candidate.iter().all(|v| v.is_finite()).then_some(candidate)
    }
}

/// `argmin_gamma || target - sum_j gamma_j columns[j] ||_2`, dropping the oldest (lowest-index)
/// columns while they are numerically dependent on the newer ones. Missing gammas are zero.
fn least_squares(columns: &[Array1<f64>], target: &Array1<f64>) -> Option<Vec<f64>> {
    let m = columns.len();
    'drop: for first in 0..m {
        // Orthogonalise newest first, so a dependent column found is the oldest of its group.
        let kept: Vec<usize> = (first..m).rev().collect();
        let mut q: Vec<Array1<f64>> = Vec::with_capacity(kept.len());
        let mut r = vec![vec![0.0; kept.len()]; kept.len()];
        for (a, &j) in kept.iter().enumerate() {
            let norm = columns[j].dot(&columns[j]).sqrt();
            let mut v = columns[j].clone();
            for _pass in 0..2 {
                for (b, qb) in q.iter().enumerate() {
                    let c = qb.dot(&v);
                    r[b][a] += c;
                    v.scaled_add(-c, qb);
                }
            }
            let rest = v.dot(&v).sqrt();
            if rest.is_nan() || rest <= DEPENDENCE * norm {
                if a == 0 {
                    return None;
                }
                continue 'drop;
            }
            r[a][a] = rest;
            q.push(v / rest);
        }
        // Back substitution R y = Q^T target, with unknowns in `kept` order.
        let n = kept.len();
        let mut y: Vec<f64> = q.iter().map(|qa| qa.dot(target)).collect();
        for a in (0..n).rev() {
            for b in (a + 1)..n {
                y[a] -= r[a][b] * y[b];
            }
            y[a] /= r[a][a];
        }
        let mut gamma = vec![0.0; m];
        for (a, &j) in kept.iter().enumerate() {
            gamma[j] = y[a];
        }
        return gamma.iter().all(|g| g.is_finite()).then_some(gamma);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// On a linear contraction `G(x) = A x + b` in two dimensions, Anderson with memory 2
    /// recovers the fixed point exactly (up to round-off) from three iterates: the residuals
    /// are affine in x, so the least-squares combination is the GMRES solution.
    #[test]
    fn solves_linear_fixed_point() {
        let a = array![[0.9, 0.05], [0.02, 0.8]];
        let b = array![1.0, -2.0];
        // Fixed point: (I - A) x = b.
        let (i00, i01, i10, i11) = (0.1, -0.05, -0.02, 0.2);
        let det = i00 * i11 - i01 * i10;
        let fixed = array![
            (i11 * b[0] - i01 * b[1]) / det,
            (i00 * b[1] - i10 * b[0]) / det
        ];

        let mut aa = Anderson::new(2);
        let mut x = array![0.0, 0.0];
        for _ in 0..3 {
            let f = a.dot(&x) + &b - &x;
            aa.push(x.clone(), f.clone());
            x = &x + &f;
        }
        let candidate = aa.extrapolate().expect("three pairs give a candidate");
        let err = (&candidate - &fixed)
            .iter()
            .map(|d| d.abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-6, "error {err}");
    }

    #[test]
    fn needs_two_pairs() {
        let mut aa = Anderson::new(3);
        assert!(aa.extrapolate().is_none());
        aa.push(array![1.0], array![0.5]);
        assert!(aa.extrapolate().is_none());
        aa.push(array![1.5], array![0.25]);
        assert!(aa.extrapolate().is_some());
        aa.restart();
        assert!(aa.extrapolate().is_none());
    }
}
