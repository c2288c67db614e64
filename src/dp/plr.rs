//! The privacy constants of PLR, objective-perturbed l2 logistic regression (stacking paper
//! Algorithm 1, after Chaudhuri, Monteleoni and Sarwate 2011), for the logistic loss (whose
//! second derivative is at most c = 1/4) on rows scaled to norm at most 1.

use super::{DpError, positive};

/// `eps'` and `Delta` of Algorithm 1 for a budget `epsilon`, `n` rows and penalty `lambda`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlrBudget {
    /// The budget spent, `epsilon`.
    pub epsilon: f64,
    /// `eps'`, the budget the noise is drawn with.
    pub epsilon_prime: f64,
    /// `Delta`, the extra l2 penalty (0 unless the budget is small for `n lambda`).
    pub delta: f64,
}

impl PlrBudget {
    /// Algorithm 1 steps 1-6: `eps' = eps - log(1 + 1/(2 n lambda) + 1/(16 n^2 lambda^2))`;
    /// if `eps' > 0` then `Delta = 0`, else `Delta = 1/(4 n (exp(eps/4) - 1)) - lambda` and
    /// `eps' = eps/2`.
    pub fn new(epsilon: f64, n: usize, lambda: f64) -> Result<Self, DpError> {
        let epsilon = positive("epsilon", epsilon)?;
        let lambda = positive("lambda", lambda)?;
        if n == 0 {
            return Err(DpError {
                name: "n",
                value: 0.0,
                reason: "needs at least one row",
            });
        }
        let nl = n as f64 * lambda;
        // ln_1p keeps the small correction exact when n lambda is large.
        let epsilon_prime = epsilon - (1.0 / (2.0 * nl) + 1.0 / (16.0 * nl * nl)).ln_1p();
        Ok(if epsilon_prime > 0.0 {
            Self {
                epsilon,
                epsilon_prime,
                delta: 0.0,
            }
        } else {
            Self {
                epsilon,
                epsilon_prime: epsilon / 2.0,
                delta: 1.0 / (4.0 * n as f64 * (epsilon / 4.0).exp_m1()) - lambda,
            }
        })
    }
}

/// Minimises the PLR objective (stacking paper eq. (1)-(2)) with labels `y` in {-1, +1}:
///
/// `J(w) = 1/n sum_i log(1 + exp(-y_i w^T x_i)) + (lambda + delta)/2 ||w||^2 + b^T w / n`.
///
/// Mapping to the foundation's objective (dissertation eq. 2.10, labels `t = (y + 1)/2` in
/// {0, 1}): `log(1 + exp(-y z)) = -(t z - log(1 + e^z))`, so `n J(w) = -l(w) + n (lambda +
/// delta)/2 ||w||^2 + b^T w`; with `b = 0` and `delta = 0`, PLR is eq. 2.10's l2 logistic
/// regression with penalty `n lambda`. `J` is strongly convex, so Newton's method with a
/// backtracking line search converges; it stops when the gradient norm is below 1e-12 (or 100
/// iterations). Rows are used as given: Algorithm 1's scaling to norm at most 1 is the caller's
/// (it must use a public bound, not the data's own maximum norm, or the scale leaks).
pub fn minimise(
    x: ndarray::ArrayView2<'_, f64>,
    y: ndarray::ArrayView1<'_, f64>,
    lambda: f64,
    delta: f64,
    b: Option<&ndarray::Array1<f64>>,
) -> ndarray::Array1<f64> {
    use privlogit_protocols::linalg::Cholesky;
    use privlogit_protocols::objective::{sigmoid, softplus};
    let (n, d) = x.dim();
    let nf = n as f64;
    let penalty = lambda + delta;
    let objective = |w: &ndarray::Array1<f64>| -> f64 {
        let z = x.dot(w);
        let loss: f64 = z.iter().zip(y).map(|(z, y)| softplus(-y * z)).sum::<f64>() / nf;
        loss + penalty / 2.0 * w.dot(w) + b.map_or(0.0, |b| b.dot(w) / nf)
    };
    let mut w = ndarray::Array1::<f64>::zeros(d);
    for _ in 0..100 {
        let z = x.dot(&w);
        // d/dz log(1 + exp(-y z)) = -y sigmoid(-y z); second derivative sigmoid(z)(1 - sigmoid(z)).
        let r: ndarray::Array1<f64> = z.iter().zip(y).map(|(z, y)| -y * sigmoid(-y * z)).collect();
        let mut g = x.t().dot(&r) / nf + &w * penalty;
        if let Some(b) = b {
            g = g + b / nf;
        }
        if g.dot(&g).sqrt() < 1e-12 {
            break;
        }
        let s: ndarray::Array1<f64> = z.mapv(|z| sigmoid(z) * (1.0 - sigmoid(z)) / nf);
        let xs = &x * &s.view().insert_axis(ndarray::Axis(1));
        let h = x.t().dot(&xs) + ndarray::Array2::<f64>::eye(d) * penalty;
        let step = Cholesky::factor(&h).expect("strongly convex").solve(&g);
        let (mut t, f0, slope) = (1.0, objective(&w), g.dot(&step));
        while objective(&(&w - &(&step * t))) > f0 - 1e-4 * t * slope && t > 1e-10 {
            t /= 2.0;
        }
        w = &w - &(&step * t);
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The constants (checked by hand from Algorithm 1):
    /// eps = 1, n = 1000, lambda = 0.01: eps' = 1 - ln(1.050625) = 0.9506147748192568, Delta = 0;
    /// eps = 0.1, n = 100, lambda = 0.01: eps' = 0.05, Delta = 1/(400 (e^0.025 - 1)) - 0.01
    /// = 0.08875520827908068. Tolerance: a few ulps.
    #[test]
    fn constants_of_algorithm_1() {
        let b = PlrBudget::new(1.0, 1000, 0.01).expect("valid");
        assert!(
            (b.epsilon_prime - 0.9506147748192568).abs() < 1e-15,
            "{b:?}"
        );
        assert_eq!(b.delta, 0.0);
        let b = PlrBudget::new(0.1, 100, 0.01).expect("valid");
        assert!((b.epsilon_prime - 0.05).abs() < 1e-16, "{b:?}");
        assert!((b.delta - 0.08875520827908068).abs() < 1e-15, "{b:?}");
    }

    #[test]
    fn parameters_are_validated() {
        for (eps, n, lambda, name) in [
            (0.0, 10, 0.1, "epsilon"),
            (f64::NAN, 10, 0.1, "epsilon"),
            (f64::INFINITY, 10, 0.1, "epsilon"),
            (1.0, 10, -0.1, "lambda"),
            (1.0, 0, 0.1, "n"),
        ] {
            let e = PlrBudget::new(eps, n, lambda).expect_err("refused");
            assert_eq!(e.name, name);
        }
    }
}
