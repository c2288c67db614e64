//! Report-Noisy-Top-N (dissertation Algorithm 3) and the ternarization of eq. (3.6).
//!
//! Algorithm 3 adds `Lap(lambda / eps)` to each score (eq. 3.7) and reports the `N` indices
//! with the largest noisy scores; Theorem 3.3.2 proves it `2 N eps`-DP when each score has
//! sensitivity `lambda`. Algorithm 2 scores coordinate `j` by `|G^j|` (eq. 3.5).
//!
//! Eq. (3.6) then releases, for a selected `j`, `(G^j + Lap(lambda / eps)) x B`, and the text
//! says the upload is "the ternary gradient {-B, 0, B} based on the sign of the selected noisy
//! gradients": so the upload is `B sign(G^j + nu)` with fresh `nu ~ Lap(lambda / eps)`. That is
//! a Laplace mechanism on `G^j` (sensitivity `lambda`) whose output is post-processed to a
//! sign: `eps`-DP per coordinate, a cost Theorem 3.3.2 leaves out ([`super::budget`] counts it).
//! The sign is not unbiased for `G^j`: with `b = lambda / eps`,
//! `E[B sign(G + nu)] = B sign(G) (1 - exp(-|G| / b))` (the Laplace tail, eq. 3.12) - the same
//! sign as `G` and increasing in `|G|`, but equal to `G` only by accident. (TernGrad, which the
//! chapter cites, is unbiased because it draws a Bernoulli of `|G| / B`; eq. 3.6 does not.)
//!
//! The noise here is `f64` Laplace (`b (E1 - E2)`, two exponentials by inversion of CSPRNG
//! uniforms), not the exact discrete sampler of [`crate::dp::noise`]: only the order of the
//! noisy scores and the signs of the noisy values leave the participant, never a noisy value,
//! so the floating-point attack that sampler guards against (Mironov 2012 reads a released
//! value's low bits) has nothing to read; and the exact sampler's ~1 us per draw would cost a
//! second per step on a 40,000-parameter network.

use rand::{Rng, RngExt};

use super::{DlError, SettingReason};

/// `Lap(scale)` as `scale (E1 - E2)` with `E = -ln(1 - U)`, `U` uniform in `[0, 1)`.
pub fn laplace<R: Rng + ?Sized>(scale: f64, rng: &mut R) -> f64 {
    let e1 = -(1.0 - rng.random::<f64>()).ln();
    let e2 = -(1.0 - rng.random::<f64>()).ln();
    scale * (e1 - e2)
}

/// `value` plus Laplace noise of `scale`, or `value` alone (a non-private run).
fn noisy<R: Rng + ?Sized>(value: f64, scale: Option<f64>, rng: &mut R) -> Result<f64, DlError> {
    match scale {
        None => Ok(value),
        Some(b) if b.is_finite() && b > 0.0 => Ok(value + laplace(b, rng)),
        Some(b) => Err(DlError::setting(
            "noise scale",
            b,
            "must be positive and finite",
        )),
    }
}

/// Algorithm 3: the `n` indices of `scores` with the largest `scores[j] + Lap(scale)`, in
/// increasing index order. Without noise (`scale = None`) the exact top `n`, ties to the lower
/// index.
pub fn report_noisy_top_n<R: Rng + ?Sized>(
    scores: &[f64],
    n: usize,
    scale: Option<f64>,
    rng: &mut R,
) -> Result<Vec<usize>, DlError> {
    if n > scores.len() {
        return Err(DlError::setting(
            "n",
            n,
            SettingReason::Selection {
                coordinates: scores.len(),
            },
        ));
    }
    let noisy_scores = scores
        .iter()
        .map(|&s| noisy(s, scale, rng))
        .collect::<Result<Vec<_>, _>>()?;
    let mut order: Vec<usize> = (0..scores.len()).collect();
    let larger_first =
        |a: &usize, b: &usize| noisy_scores[*b].total_cmp(&noisy_scores[*a]).then(a.cmp(b));
    if n < order.len() && n > 0 {
        order.select_nth_unstable_by(n - 1, larger_first);
    }
    order.truncate(n);
    order.sort_unstable();
    Ok(order)
}

/// Eq. (3.6) read as the text says: the sign of `value + Lap(scale)` (fresh noise), or of
/// `value` without noise, as -1, 0 or 1.
pub fn noisy_sign<R: Rng + ?Sized>(
    value: f64,
    scale: Option<f64>,
    rng: &mut R,
) -> Result<i8, DlError> {
    let v = noisy(value, scale, rng)?;
    Ok(if v > 0.0 {
        1
    } else if v < 0.0 {
        -1
    } else {
        0
    })
}

/// `E[sign(value + Lap(scale))]`: `sign(value) (1 - exp(-|value| / scale))` (see the module).
pub fn expected_sign(value: f64, scale: f64) -> f64 {
    value.signum() * -(-value.abs() / scale).exp_m1() * f64::from(value != 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Laplace CDF.
    fn cdf(t: f64, mean: f64, b: f64) -> f64 {
        if t < mean {
            0.5 * ((t - mean) / b).exp()
        } else {
            1.0 - 0.5 * (-(t - mean) / b).exp()
        }
    }

    fn pdf(t: f64, mean: f64, b: f64) -> f64 {
        0.5 / b * (-(t - mean).abs() / b).exp()
    }

    /// P(the set `chosen` is the top |chosen| of `means + Lap(b)`), straight from the
    /// definition: the smallest chosen noisy score `t` beats every other score. Integrated over
    /// `t` (the minimum of the chosen) by Simpson's rule on a fine grid.
    fn probability_of_set(means: &[f64], chosen: &[usize], b: f64) -> f64 {
        let (lo, hi) = (-40.0 * b - 2.0, 40.0 * b + 2.0);
        let steps = 200_000;
        let h = (hi - lo) / steps as f64;
        let density = |t: f64| {
            // Density that min over chosen equals t and all chosen are >= t:
            // sum_i pdf_i(t) prod_{k in chosen, k != i} (1 - cdf_k(t)); others below t.
            let above: f64 = chosen
                .iter()
                .map(|&i| {
                    pdf(t, means[i], b)
                        * chosen
                            .iter()
                            .filter(|&&k| k != i)
                            .map(|&k| 1.0 - cdf(t, means[k], b))
                            .product::<f64>()
                })
                .sum();
            let below: f64 = (0..means.len())
                .filter(|k| !chosen.contains(k))
                .map(|k| cdf(t, means[k], b))
                .product();
            above * below
        };
        let mut sum = density(lo) + density(hi);
        for s in 1..steps {
            let t = lo + s as f64 * h;
            sum += if s % 2 == 1 { 4.0 } else { 2.0 } * density(t);
        }
        sum * h / 3.0
    }

    /// Selection frequencies of Report-Noisy-Top-2 on four scores against the probabilities of
    /// its definition (computed by integration above): Pearson chi-square over the six pairs,
    /// 5 degrees of freedom, critical value 15.086 at 1 % (scipy.stats.chi2.ppf(0.99, 5)).
    #[test]
    fn report_noisy_top_n_follows_its_definition() {
        let scores = [0.9, 0.5, 0.45, 0.1];
        let b = 0.3;
        let pairs: Vec<[usize; 2]> = (0..4)
            .flat_map(|i| ((i + 1)..4).map(move |j| [i, j]))
            .collect();
        let probabilities: Vec<f64> = pairs
            .iter()
            .map(|p| probability_of_set(&scores, p, b))
            .collect();
        let total: f64 = probabilities.iter().sum();
        assert!((total - 1.0).abs() < 1e-6, "probabilities sum to {total}");
        let mut rng = ChaCha20Rng::seed_from_u64(2026);
        let draws = 20_000;
        let mut counts = vec![0u64; pairs.len()];
        for _ in 0..draws {
            let got = report_noisy_top_n(&scores, 2, Some(b), &mut rng).expect("valid");
            let k = pairs.iter().position(|p| p[..] == got[..]).expect("a pair");
            counts[k] += 1;
        }
        let chi2: f64 = counts
            .iter()
            .zip(&probabilities)
            .map(|(&c, &p)| (c as f64 - p * draws as f64).powi(2) / (p * draws as f64))
            .sum();
        assert!(
            chi2 < 15.086,
            "chi-square {chi2}: counts {counts:?}, p {probabilities:?}"
        );
    }

    /// Report-Noisy-Max on two scores against the dissertation's closed form, eq. (3.28):
    /// P(the smaller is picked) = exp(-D eps / lambda) (D eps / (4 lambda) + 1/2), D the gap.
    #[test]
    fn report_noisy_max_of_two_is_eq_3_28() {
        let (gap, b): (f64, f64) = (0.4, 0.5);
        let closed = (-gap / b).exp() * (gap / (4.0 * b) + 0.5);
        let integrated = probability_of_set(&[gap, 0.0], &[1], b);
        assert!(
            (closed - integrated).abs() < 1e-9,
            "{closed} vs {integrated}"
        );
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let draws = 40_000;
        let smaller = (0..draws)
            .filter(|_| {
                report_noisy_top_n(&[gap, 0.0], 1, Some(b), &mut rng).expect("valid") == [1]
            })
            .count() as f64;
        // Binomial standard error sqrt(p(1-p)/n) ~ 0.0023; 4 of them.
        assert!(
            (smaller / draws as f64 - closed).abs()
                < 4.0 * (closed * (1.0 - closed) / draws as f64).sqrt()
        );
    }

    #[test]
    fn without_noise_the_exact_top_n_in_index_order() {
        let mut rng = ChaCha20Rng::seed_from_u64(0);
        let got = report_noisy_top_n(&[0.1, 0.7, 0.3, 0.7, 0.0], 3, None, &mut rng).expect("valid");
        assert_eq!(got, vec![1, 2, 3]);
        assert!(report_noisy_top_n(&[0.1], 2, None, &mut rng).is_err());
    }

    /// The ternary sign's mean against `sign(G) (1 - exp(-|G| / b))` for several G: 40,000
    /// draws each, within 4 standard errors (the sign's variance is at most 1). Shows the bias:
    /// for G = 0.2, b = 0.5 the mean is 0.33, not G / B for any fixed B.
    #[test]
    fn the_ternary_sign_has_the_laplace_tail_mean() {
        let b = 0.5;
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        for g in [-0.8, -0.2, 0.0, 0.05, 0.2, 1.5] {
            let draws = 40_000;
            let sum: f64 = (0..draws)
                .map(|_| f64::from(noisy_sign(g, Some(b), &mut rng).expect("valid")))
                .sum();
            let mean = sum / draws as f64;
            let expected = expected_sign(g, b);
            assert!(
                (mean - expected).abs() < 4.0 / (draws as f64).sqrt(),
                "G = {g}: mean {mean}, expected {expected}"
            );
        }
        assert!((expected_sign(0.2, 0.5) - (1.0 - (-0.4f64).exp())).abs() < 1e-15);
    }
}
