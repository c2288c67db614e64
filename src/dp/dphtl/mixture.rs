//! The hypothesis weights of eq. (4.1): the point `w` of the simplex that minimises
//! `KL(w^T, sum_k w(k) w^k)`, the importance weights read as distributions over the public rows.
//!
//! With `a = w^T / N_P` and `b_k = w^k / N_P` (each sums to 1), the problem is to maximise the
//! concave `L(w) = sum_x a(x) ln(sum_k w(k) b_k(x))` over the simplex: the mixture-proportion
//! likelihood. The EM step `w(k) <- w(k) g_k(w)`, `g_k = sum_x a(x) b_k(x) / m(x)`, `m = sum_k
//! w(k) b_k`, stays on the simplex and increases `L` to its maximum; the maximum is certified by
//! the optimality (KKT) conditions `g_k <= 1` for all `k`, with equality where `w(k) > 0`, which
//! [`hypothesis_weights`] reports as its residual.
//!
//! EM alone is slow where the optimum sits on a face of the simplex with a vanishing gradient
//! gap (a source absent from an exact mixture): it approaches zero sublinearly. So EM only finds
//! the support; Newton steps on the support (the equality-constrained quadratic model, with a
//! ratio test that drops a weight reaching zero and a KKT check that adds back a source whose
//! `g_k > 1`) then converge quadratically.

use privlogit_protocols::cholesky::Cholesky;

use ndarray::{Array1, ArrayView1};

use crate::dp::DpError;

/// The solution and its certificate.
#[derive(Debug, Clone, PartialEq)]
pub struct HypothesisWeights {
    /// On the simplex.
    pub weights: Array1<f64>,
    /// `max_k (g_k - 1)` together with `max_{w(k) > 1e-9} |g_k - 1|`: zero at the optimum.
    pub kkt_residual: f64,
    /// EM steps taken.
    pub steps: usize,
}

/// Most EM steps.
const MAX_STEPS: usize = 200_000;

/// Eq. (4.1) for the target's weights `target` and the sources' `sources` (each over the same
/// public rows, non-negative).
pub fn hypothesis_weights(
    target: ArrayView1<'_, f64>,
    sources: &[ArrayView1<'_, f64>],
) -> Result<HypothesisWeights, DpError> {
    let k = sources.len();
    if k == 0 {
        return Err(DpError {
            name: "sources",
            value: 0.0,
            reason: "eq. (4.1) needs at least one source",
        });
    }
    let n = target.len();
    if sources.iter().any(|s| s.len() != n)
        || target
            .iter()
            .chain(sources.iter().flat_map(|s| s.iter()))
            .any(|v| !(v.is_finite() && *v >= 0.0))
    {
        return Err(DpError {
            name: "importance weights",
            value: n as f64,
            reason: "must be non-negative, finite and over the same public rows",
        });
    }
    let normalise = |v: ArrayView1<'_, f64>| {
        let s = v.sum();
        v.mapv(|x| x / s)
    };
    // Public rows where every source's weight is zero (underflow under strong noise) add the
    // same -infinity to L for every w: they say nothing about w and are left out.
    let informative: Vec<usize> = (0..n)
        .filter(|&x| sources.iter().any(|s| s[x] > 0.0))
        .collect();
    if informative.is_empty() {
        return Err(DpError {
            name: "importance weights",
            value: 0.0,
            reason: "every source's weights are zero on every public row",
        });
    }
    let keep =
        |v: ArrayView1<'_, f64>| -> Array1<f64> { informative.iter().map(|&x| v[x]).collect() };
    let target = keep(target);
    let sources: Vec<Array1<f64>> = sources.iter().map(|s| keep(*s)).collect();
    let n = informative.len();
    if target.sum() <= 0.0 || sources.iter().any(|s| s.sum() <= 0.0) {
        return Err(DpError {
            name: "importance weights",
            value: 0.0,
            reason: "a weight vector is zero on every informative public row",
        });
    }
    let a = normalise(target.view());
    let b: Vec<Array1<f64>> = sources.iter().map(|s| normalise(s.view())).collect();
    let mut w = Array1::from_elem(k, 1.0 / k as f64);
    // m = sum_k w(k) b_k, the mixture's distribution over the public rows.
    let mix = |w: &Array1<f64>| -> Array1<f64> {
        let mut m = Array1::<f64>::zeros(n);
        for (wk, bk) in w.iter().zip(&b) {
            m.scaled_add(*wk, bk);
        }
        m
    };
    let gradient = |w: &Array1<f64>| -> Array1<f64> {
        let m = mix(w);
        let ratio: Array1<f64> = a
            .iter()
            .zip(&m)
            .map(|(a, m)| if *a == 0.0 { 0.0 } else { a / m })
            .collect();
        b.iter().map(|bk| bk.dot(&ratio)).collect()
    };
    let residual = |w: &Array1<f64>, g: &Array1<f64>| {
        if g.iter().any(|v| !v.is_finite()) {
            return f64::INFINITY;
        }
        let over = g
            .iter()
            .map(|g| g - 1.0)
            .fold(f64::NEG_INFINITY, f64::max)
            .max(0.0);
        let off = w
            .iter()
            .zip(g)
            .filter(|(w, _)| **w > 1e-9)
            .map(|(_, g)| (g - 1.0).abs())
            .fold(0.0, f64::max);
        over.max(off)
    };
    let mut steps = 0;
    while steps < MAX_STEPS {
        let g = gradient(&w);
        if residual(&w, &g) <= 1e-6 {
            break;
        }
        w = &w * &g;
        let s = w.sum();
        w /= s;
        steps += 1;
    }
    let objective = |w: &Array1<f64>| -> f64 {
        let m = mix(w);
        a.iter()
            .zip(&m)
            .filter(|(a, _)| **a > 0.0)
            .map(|(a, m)| a * m.ln())
            .sum()
    };
    for _ in 0..200 {
        let g = gradient(&w);
        if residual(&w, &g) <= 1e-13 {
            break;
        }
        // The support: positive weights, and any zero weight whose gradient says it should grow.
        let support: Vec<usize> = (0..k)
            .filter(|&i| w[i] > 0.0 || g[i] > 1.0 + 1e-13)
            .collect();
        let m = mix(&w);
        let ratio: Array1<f64> = a
            .iter()
            .zip(&m)
            .map(|(a, m)| if *a == 0.0 { 0.0 } else { a / (m * m) })
            .collect();
        let s = support.len();
        let mut h = ndarray::Array2::<f64>::zeros((s, s));
        for (i, &p) in support.iter().enumerate() {
            for (j, &q) in support.iter().enumerate() {
                h[[i, j]] = (&b[p] * &b[q]).dot(&ratio);
            }
        }
        let ridge = 1e-14 * (0..s).map(|i| h[[i, i]]).sum::<f64>().max(1e-300);
        for i in 0..s {
            h[[i, i]] += ridge;
        }
        let Some(chol) = Cholesky::factor(&h) else {
            break;
        };
        let gs: Array1<f64> = support.iter().map(|&i| g[i]).collect();
        let ones = Array1::from_elem(s, 1.0);
        let (hg, h1) = (chol.solve(&gs), chol.solve(&ones));
        let nu = hg.sum() / h1.sum();
        let delta = &hg - &(&h1 * nu);
        // Ratio test: the longest step in [0, 1] that keeps every weight non-negative.
        let mut t: f64 = 1.0;
        for (i, &p) in support.iter().enumerate() {
            if delta[i] < 0.0 {
                t = t.min(w[p] / -delta[i]);
            }
        }
        let before = objective(&w);
        let mut next = w.clone();
        loop {
            for (i, &p) in support.iter().enumerate() {
                next[p] = (w[p] + t * delta[i]).max(0.0);
            }
            let total = next.sum();
            next /= total;
            if objective(&next) >= before - 1e-15 || t < 1e-12 {
                break;
            }
            t /= 2.0;
        }
        if (&next - &w).iter().all(|d| d.abs() < 1e-16) {
            w = next;
            break;
        }
        w = next;
    }
    let g = gradient(&w);
    Ok(HypothesisWeights {
        kkt_residual: residual(&w, &g),
        weights: w,
        steps,
    })
}

/// The objective of eq. (4.1) at `w` (for tests and reports).
pub fn kl(
    target: ArrayView1<'_, f64>,
    sources: &[ArrayView1<'_, f64>],
    w: ArrayView1<'_, f64>,
) -> f64 {
    let ta = target.sum();
    let mut m = Array1::<f64>::zeros(target.len());
    for (wk, s) in w.iter().zip(sources) {
        m.scaled_add(*wk / s.sum(), s);
    }
    target
        .iter()
        .zip(&m)
        .filter(|(t, _)| **t > 0.0)
        .map(|(t, m)| (t / ta) * ((t / ta) / m).ln())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// A target that is exactly a mixture of the sources: the weights come back.
    #[test]
    fn an_exact_mixture_is_recovered() {
        let s1 = array![4.0, 1.0, 0.0, 1.0];
        let s2 = array![0.0, 1.0, 4.0, 1.0];
        let s3 = array![1.0, 2.0, 1.0, 2.0];
        let truth = [0.2, 0.0, 0.8];
        let target = &s1 * truth[0] + &s2 * truth[1] + &s3 * truth[2];
        let got =
            hypothesis_weights(target.view(), &[s1.view(), s2.view(), s3.view()]).expect("solves");
        for (g, t) in got.weights.iter().zip(truth) {
            assert!((g - t).abs() < 1e-12, "{:?}", got.weights);
        }
        assert!(got.kkt_residual <= 1e-12);
    }

    /// Public rows where every source's weight underflowed to zero are left out (they add the
    /// same -infinity for every w), instead of turning the gradient into NaN.
    #[test]
    fn rows_no_source_covers_are_left_out() {
        let s1 = array![4.0, 1.0, 0.0, 0.0];
        let s2 = array![0.0, 1.0, 4.0, 0.0];
        let target = array![1.0, 1.0, 1.0, 5.0];
        let got = hypothesis_weights(target.view(), &[s1.view(), s2.view()]).expect("solves");
        assert!(got.kkt_residual <= 1e-12 && (got.weights.sum() - 1.0).abs() < 1e-12);
        assert!((got.weights[0] - 0.5).abs() < 1e-9, "{:?}", got.weights);
        let zero = array![0.0, 0.0, 0.0, 0.0];
        assert!(hypothesis_weights(target.view(), &[zero.view(), zero.view()]).is_err());
    }

    /// Against a generic optimiser: random search over the simplex never beats the EM point.
    #[test]
    fn no_point_of_the_simplex_is_better() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let sources: Vec<Array1<f64>> = (0..4)
            .map(|_| (0..30).map(|_| rng.random::<f64>()).collect())
            .collect();
        let target: Array1<f64> = (0..30).map(|_| rng.random::<f64>()).collect();
        let views: Vec<_> = sources.iter().map(|s| s.view()).collect();
        let got = hypothesis_weights(target.view(), &views).expect("solves");
        assert!(got.kkt_residual <= 1e-12);
        let best = kl(target.view(), &views, got.weights.view());
        for _ in 0..20_000 {
            let raw: Array1<f64> = (0..4).map(|_| -rng.random::<f64>().ln()).collect();
            let w = &raw / raw.sum();
            assert!(kl(target.view(), &views, w.view()) >= best - 1e-12);
        }
    }
}
