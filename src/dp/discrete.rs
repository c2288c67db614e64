//! Exact samplers on integers: the discrete Laplace and discrete Gaussian distributions of
//! Canonne, Kamath and Steinke 2020 ("The Discrete Gaussian for Differential Privacy",
//! Algorithms 1-3), with rational parameters and integer arithmetic only.
//!
//! Floating-point samplers produce an irregular set of outputs whose pattern can reveal the
//! input (Mironov, CCS 2012). Here every probability is a ratio of integers and every random
//! choice a uniform integer from the CSPRNG, so the output distribution is exactly the stated
//! one; no rounding enters until a caller scales the integer onto its grid.

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::{One, ToPrimitive, Zero};
use rand::{Rng, RngExt};

use super::DpError;

/// A positive rational `num / den`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rational {
    num: BigUint,
    den: BigUint,
}

impl Rational {
    /// `num / den`; both must be positive.
    pub fn new(num: impl Into<BigUint>, den: impl Into<BigUint>) -> Option<Self> {
        let (num, den) = (num.into(), den.into());
        (!num.is_zero() && !den.is_zero()).then_some(Self { num, den })
    }

    /// The exact value of a positive finite `f64` (every finite double is a dyadic rational).
    pub fn from_f64(x: f64) -> Option<Self> {
        if !(x.is_finite() && x > 0.0) {
            return None;
        }
        let bits = x.to_bits();
        let exponent = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1u64 << 52) - 1);
        // x = mantissa * 2^power exactly.
        let (mantissa, power) = if exponent == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1u64 << 52), exponent - 1075)
        };
        let mantissa = BigUint::from(mantissa);
        if power >= 0 {
            Self::new(mantissa << power as usize, 1u32)
        } else {
            Self::new(mantissa, BigUint::one() << (-power) as usize)
        }
    }

    /// The value as an `f64` (for messages and tests; exact for values made by `from_f64`).
    pub fn to_f64(&self) -> f64 {
        // Top 64 bits of each, then the power of two in steps that cannot overflow.
        let top = |x: &BigUint| {
            let shift = x.bits().saturating_sub(64);
            ((x >> shift).to_f64().expect("64 bits"), shift as i64)
        };
        let ((n, sn), (d, sd)) = (top(&self.num), top(&self.den));
        let mut value = n / d;
        let mut power = sn - sd;
        while power != 0 {
            let step = power.clamp(-1000, 1000);
            value *= 2f64.powi(step as i32);
            power -= step;
        }
        value
    }
}

/// A uniform integer in `[0, bound)`, by rejection from whole random bytes (exact).
fn uniform_below<R: Rng + ?Sized>(bound: &BigUint, rng: &mut R) -> BigUint {
    let bits = bound.bits();
    let bytes = bits.div_ceil(8) as usize;
    let excess = bytes as u64 * 8 - bits;
    let mut buffer = vec![0u8; bytes];
    loop {
        rng.fill_bytes(&mut buffer);
        // Drop the bits above the bound's length, so a draw is accepted with probability > 1/2.
        if let Some(top) = buffer.first_mut() {
            *top &= 0xff >> excess;
        }
        let candidate = BigUint::from_bytes_be(&buffer);
        if &candidate < bound {
            return candidate;
        }
    }
}

/// true with probability `num / den` (at most 1).
fn bernoulli<R: Rng + ?Sized>(num: &BigUint, den: &BigUint, rng: &mut R) -> bool {
    &uniform_below(den, rng) < num
}

/// true with probability `exp(-gamma)`, gamma >= 0 (Algorithm 1): for gamma <= 1, the parity
/// of the first k with Bernoulli(gamma / k) = 0; beyond 1, one exp(-1) trial per whole unit.
fn bernoulli_exp<R: Rng + ?Sized>(num: &BigUint, den: &BigUint, rng: &mut R) -> bool {
    if num > den {
        let whole = num / den;
        let mut k = BigUint::zero();
        while k < whole {
            if !bernoulli_exp(&BigUint::one(), &BigUint::one(), rng) {
                return false;
            }
            k += 1u32;
        }
        return bernoulli_exp(&(num - &whole * den), den, rng);
    }
    let mut k = BigUint::one();
    loop {
        if !bernoulli(num, &(den * &k), rng) {
            return k.bit(0); // odd k: true
        }
        k += 1u32;
    }
}

/// true with probability `exp(-gamma)`.
pub fn bernoulli_exp_of<R: Rng + ?Sized>(gamma: &Rational, rng: &mut R) -> bool {
    bernoulli_exp(&gamma.num, &gamma.den, rng)
}

/// A geometric count `y >= 0` with `P(y) proportional to exp(-y / scale)` (Algorithm 2 steps
/// 1-4 with scale = t / s: a geometric of scale t drawn as `U + t V`, then `floor(. / s)`).
pub fn geometric<R: Rng + ?Sized>(scale: &Rational, rng: &mut R) -> BigUint {
    let (t, s) = (&scale.num, &scale.den);
    let u = loop {
        let u = uniform_below(t, rng);
        if bernoulli_exp(&u, t, rng) {
            break u;
        }
    };
    let mut v = BigUint::zero();
    while bernoulli_exp(&BigUint::one(), &BigUint::one(), rng) {
        v += 1u32;
    }
    (u + t * v) / s
}

/// The discrete Laplace distribution: `P(x) proportional to exp(-|x| / scale)` on the integers
/// (Algorithm 2).
pub fn discrete_laplace<R: Rng + ?Sized>(scale: &Rational, rng: &mut R) -> BigInt {
    loop {
        let y = geometric(scale, rng);
        let negative = rng.random::<bool>();
        if negative && y.is_zero() {
            continue; // zero would be counted twice
        }
        return BigInt::from_biguint(if negative { Sign::Minus } else { Sign::Plus }, y);
    }
}

/// The discrete Gaussian distribution: `P(x) proportional to exp(-x^2 / (2 sigma^2))` on the
/// integers, for `sigma^2 = variance` (Algorithm 3: a discrete Laplace of scale
/// `t = floor(sigma) + 1`, accepted with probability `exp(-(|y| - sigma^2/t)^2 / (2 sigma^2))`).
pub fn discrete_gaussian<R: Rng + ?Sized>(variance: &Rational, rng: &mut R) -> BigInt {
    let (num, den) = (&variance.num, &variance.den);
    let t = (num / den).sqrt() + 1u32;
    let laplace_scale = Rational {
        num: t.clone(),
        den: BigUint::one(),
    };
    // gamma = (|y| t den - num)^2 / (2 num den t^2)
    let gamma_den = BigUint::from(2u32) * num * den * &t * &t;
    loop {
        let y = discrete_laplace(&laplace_scale, rng);
        let a = y.magnitude() * &t * den;
        let diff = if a >= *num { a - num } else { num - a };
        if bernoulli_exp(&(&diff * &diff), &gamma_den, rng) {
            return y;
        }
    }
}

/// A grid point `g * y` for an exact integer draw `y`: the grid is a power of two about
/// `2^-40` of `scale`, so the f64 product is exact while `|y| < 2^53`.
fn on_grid(scale: f64, draw: impl FnOnce(&Rational) -> BigInt) -> Result<(f64, f64), DpError> {
    let grid = grid_for(scale)?;
    let ratio = Rational::from_f64(scale / grid).expect("positive and finite");
    let y = draw(&ratio);
    Ok((y.to_f64().unwrap_or(f64::INFINITY) * grid, grid))
}

/// The power of two `2^(floor(log2 scale) - 40)`: outputs are whole multiples of it.
pub fn grid_for(scale: f64) -> Result<f64, DpError> {
    let scale = super::positive("scale", scale)?;
    let exponent = scale.log2().floor() as i32 - 40;
    let grid = 2f64.powi(exponent);
    if grid == 0.0 || !grid.is_normal() {
        return Err(DpError {
            name: "scale",
            value: scale,
            reason: "too small for a grid of normal doubles 2^-40 below it",
        });
    }
    Ok(grid)
}

/// Laplace noise of scale `b`, on the grid [`grid_for`]`(b)`: `g` times an exact discrete
/// Laplace draw of scale `b / g` (the ratio of two doubles, an exact rational). Returns the
/// noise and the grid.
pub fn laplace_on_grid<R: Rng + ?Sized>(scale: f64, rng: &mut R) -> Result<(f64, f64), DpError> {
    on_grid(scale, |ratio| discrete_laplace(ratio, rng))
}

/// Gaussian noise of standard deviation `sigma`, on the grid [`grid_for`]`(sigma)`: `g` times
/// an exact discrete Gaussian draw of variance `(sigma / g)^2`.
pub fn gaussian_on_grid<R: Rng + ?Sized>(sigma: f64, rng: &mut R) -> Result<(f64, f64), DpError> {
    on_grid(sigma, |ratio| {
        let variance = Rational {
            num: &ratio.num * &ratio.num,
            den: &ratio.den * &ratio.den,
        };
        discrete_gaussian(&variance, rng)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Pearson's chi-square of `counts` against `probabilities` (the last bin is the rest).
    fn chi_square(counts: &[u64], probabilities: &[f64]) -> f64 {
        let n: u64 = counts.iter().sum();
        counts
            .iter()
            .zip(probabilities)
            .map(|(&c, &p)| {
                let expected = p * n as f64;
                (c as f64 - expected).powi(2) / expected
            })
            .sum()
    }

    /// Counts of draws in bins -k..=k, with the two tails pooled in a last bin.
    fn histogram(draws: impl Iterator<Item = i64>, k: i64) -> Vec<u64> {
        let mut counts = vec![0u64; (2 * k + 2) as usize];
        for x in draws {
            let bin = if x.abs() <= k {
                (x + k) as usize
            } else {
                (2 * k + 1) as usize
            };
            counts[bin] += 1;
        }
        counts
    }

    /// Probabilities of bins -k..=k and the pooled tails, from unnormalised weights w(|x|)
    /// summed over |x| <= limit (the rest is below 1e-300).
    fn probabilities(weight: impl Fn(f64) -> f64, k: i64, limit: i64) -> Vec<f64> {
        let total: f64 = (-limit..=limit).map(|x| weight(x as f64)).sum();
        let mut p: Vec<f64> = (-k..=k).map(|x| weight(x as f64) / total).collect();
        p.push(1.0 - p.iter().sum::<f64>());
        p
    }

    // Critical values of chi-square at p = 0.001 (scipy.stats.chi2.ppf(0.999, df), scipy 1.17):
    // df 21 -> 46.797, df 17 -> 40.790, df 1 -> 10.828. Seeds are fixed, so each test is a fixed
    // draw; a wrong sampler (off by a bin's weight of 1 %) fails it by far at 200,000 draws.
    const CHI2_999_DF21: f64 = 46.797;
    const CHI2_999_DF17: f64 = 40.790;
    const CHI2_999_DF1: f64 = 10.828;

    #[test]
    fn bernoulli_exp_has_the_exact_frequency() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        for (num, den) in [(3u32, 10u32), (1, 1), (5, 2), (7, 3)] {
            let gamma = Rational::new(num, den).expect("positive");
            let p = (-f64::from(num) / f64::from(den)).exp();
            let n = 200_000u64;
            let hits = (0..n)
                .filter(|_| bernoulli_exp_of(&gamma, &mut rng))
                .count() as u64;
            let chi = chi_square(&[hits, n - hits], &[p, 1.0 - p]);
            assert!(
                chi < CHI2_999_DF1,
                "gamma {num}/{den}: {hits} of {n}, chi^2 {chi}"
            );
        }
    }

    /// Discrete Laplace of scale 3/2: P(x) = tanh(1 / (2 scale)) exp(-|x| / scale).
    #[test]
    fn discrete_laplace_passes_chi_square() {
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        let scale = Rational::new(3u32, 2u32).expect("positive");
        let draws =
            (0..200_000).map(|_| discrete_laplace(&scale, &mut rng).to_i64().expect("small"));
        let counts = histogram(draws, 10);
        let p = probabilities(|x| (-x.abs() / 1.5).exp(), 10, 2000);
        assert!(
            (p[10] - (1.0 / 3.0_f64).tanh()).abs() < 1e-15,
            "P(0) {}",
            p[10]
        );
        let chi = chi_square(&counts, &p);
        assert!(chi < CHI2_999_DF21, "chi^2 {chi}: {counts:?}");
    }

    /// Discrete Gaussian of variance 7/3 (sigma 1.53) and 20 (the rejection step with t = 5).
    #[test]
    fn discrete_gaussian_passes_chi_square() {
        for (seed, num, den, k) in [(13u64, 7u32, 3u32, 10i64), (14, 20, 1, 10)] {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let variance = Rational::new(num, den).expect("positive");
            let s2 = f64::from(num) / f64::from(den);
            let draws = (0..200_000).map(|_| {
                discrete_gaussian(&variance, &mut rng)
                    .to_i64()
                    .expect("small")
            });
            let counts = histogram(draws, k);
            let p = probabilities(|x| (-x * x / (2.0 * s2)).exp(), k, 400);
            let chi = chi_square(&counts, &p);
            assert!(chi < CHI2_999_DF21, "sigma^2 {s2}: chi^2 {chi}: {counts:?}");
        }
    }

    /// A geometric of scale 1e6 / 7 (large t, rational): the count floor(y / 20,000) is
    /// geometric with ratio exp(-20000 * 7 / 1e6) per bin.
    #[test]
    fn geometric_with_a_large_scale_passes_chi_square() {
        let mut rng = ChaCha20Rng::seed_from_u64(15);
        let scale = Rational::new(1_000_000u32, 7u32).expect("positive");
        let ratio = (-20_000.0 * 7.0 / 1e6_f64).exp();
        let draws = (0..200_000).map(|_| {
            (geometric(&scale, &mut rng) / BigUint::from(20_000u32))
                .to_i64()
                .expect("small")
        });
        let mut counts = vec![0u64; 18];
        for b in draws {
            counts[(b as usize).min(17)] += 1;
        }
        let mut p: Vec<f64> = (0..17).map(|b| (1.0 - ratio) * ratio.powi(b)).collect();
        p.push(ratio.powi(17));
        let chi = chi_square(&counts, &p);
        assert!(chi < CHI2_999_DF17, "chi^2 {chi}: {counts:?}");
    }

    #[test]
    fn doubles_are_exact_rationals() {
        for x in [1.0, 0.1, 3.5e-300, 5e-324, 1.7e308, 2.0 / 3.0] {
            assert_eq!(Rational::from_f64(x).expect("positive").to_f64(), x);
        }
        assert!(Rational::from_f64(0.0).is_none() && Rational::from_f64(f64::NAN).is_none());
    }

    #[test]
    fn grid_draws_are_multiples_of_the_grid() {
        let mut rng = ChaCha20Rng::seed_from_u64(16);
        for _ in 0..100 {
            let (x, g) = laplace_on_grid(0.37, &mut rng).expect("valid");
            assert_eq!(g, 2f64.powi(-42));
            assert_eq!((x / g).fract(), 0.0);
            let (y, h) = gaussian_on_grid(1e-3, &mut rng).expect("valid");
            assert_eq!((y / h).fract(), 0.0);
        }
        assert!(laplace_on_grid(1e-300, &mut rng).is_err());
    }
}
