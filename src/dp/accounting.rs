//! Privacy accounting: what a sequence of releases spends, as (epsilon, delta).
//!
//! - [`EpsDelta`]: basic composition (budgets add), advanced composition (Dwork, Rothblum and
//!   Vadhan 2010, Theorem III.3; Dwork-Roth 2014, Theorem 3.20, which is dissertation
//!   Theorem 2.3.2), and amplification by sampling (dissertation Lemma 3.3.1, extended to delta
//!   by Balle, Barthe and Gaboardi 2018: `(ln(1 + q (e^eps - 1)), q delta)`).
//! - [`Rdp`]: Renyi differential privacy of Gaussian mechanisms, plain and Poisson-subsampled
//!   (Mironov, Talwar and Zhang 2019, section 3.3, integer orders), composed by adding curves
//!   and converted to (epsilon, delta) with the bound of Balle et al. 2020 (Proposition 12 of
//!   arXiv 2004.00010; Canonne, Kamath and Steinke 2020, eq. 20 of arXiv 2001.05990).
//! - [`Zcdp`]: zero-concentrated DP (Bun and Steinke 2016), `rho = Delta^2 / (2 sigma^2)` per
//!   Gaussian release, converted through the same RDP bound over every real order.
//!
//! The relation. privlogit's mechanisms are private for replace-one neighbours: data sets with
//! the same, public number of rows that differ in one row. Lemma 3.3.1's amplification holds
//! for it under Poisson sampling (couple the changed row's inclusion: the two samples are equal
//! with probability `1 - q` and replace-one neighbours otherwise, Balle, Barthe and Gaboardi
//! 2018). The subsampled-Gaussian RDP here is Mironov, Talwar and Zhang's add/remove analysis
//! (dp-accounting's default): its noise multiplier is relative to one row's add/remove
//! sensitivity, and a replace-one mechanism that uses it must say how it maps its own
//! sensitivity onto that. Only integer orders are used for
//! subsampled Gaussians: the conversion then takes the best of fewer orders than an accountant
//! with fractional ones, so it can only over-state epsilon (sound, slightly looser).

use thiserror::Error;

/// A parameter outside the domain of a theorem, named.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("invalid {name} = {value}: {reason}")]
#[non_exhaustive]
pub struct AccountingError {
    /// The parameter.
    pub name: &'static str,
    /// Its value.
    pub value: f64,
    /// The domain it must be in.
    pub reason: &'static str,
}

fn check(
    name: &'static str,
    value: f64,
    ok: bool,
    reason: &'static str,
) -> Result<f64, AccountingError> {
    if ok {
        Ok(value)
    } else {
        Err(AccountingError {
            name,
            value,
            reason,
        })
    }
}

fn epsilon_ok(name: &'static str, e: f64) -> Result<f64, AccountingError> {
    check(
        name,
        e,
        e.is_finite() && e >= 0.0,
        "must be finite and non-negative",
    )
}

fn noise_multiplier_ok(sigma: f64) -> Result<f64, AccountingError> {
    check(
        "noise multiplier sigma",
        sigma,
        sigma.is_finite() && sigma > 0.0,
        "must be positive and finite",
    )
}

fn probability_ok(name: &'static str, p: f64, open_at_zero: bool) -> Result<f64, AccountingError> {
    let ok = if open_at_zero {
        p > 0.0 && p < 1.0
    } else {
        (0.0..=1.0).contains(&p)
    };
    check(
        name,
        p,
        ok,
        if open_at_zero {
            "must be in (0, 1)"
        } else {
            "must be in [0, 1]"
        },
    )
}

/// An (epsilon, delta)-DP guarantee.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EpsDelta {
    /// epsilon.
    pub epsilon: f64,
    /// delta (0 for pure DP).
    pub delta: f64,
}

impl EpsDelta {
    /// A pure epsilon-DP guarantee.
    pub fn pure(epsilon: f64) -> Result<Self, AccountingError> {
        Ok(Self {
            epsilon: epsilon_ok("epsilon", epsilon)?,
            delta: 0.0,
        })
    }

    /// An (epsilon, delta) guarantee.
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, AccountingError> {
        Ok(Self {
            epsilon: epsilon_ok("epsilon", epsilon)?,
            delta: probability_ok("delta", delta, false)?,
        })
    }

    /// Basic composition of `k` runs: `(k eps, k delta)` (dissertation Theorem 2.3.1).
    pub fn basic(self, k: u64) -> Self {
        let k = k as f64;
        Self {
            epsilon: k * self.epsilon,
            delta: (k * self.delta).min(1.0),
        }
    }

    /// Basic composition of different releases: the epsilons and deltas add.
    pub fn sum(releases: &[EpsDelta]) -> Self {
        Self {
            epsilon: releases.iter().map(|r| r.epsilon).sum(),
            delta: releases.iter().map(|r| r.delta).sum::<f64>().min(1.0),
        }
    }

    /// Advanced composition of `k` runs for any `slack` delta' in (0, 1):
    /// `(sqrt(2 k ln(1/delta')) eps + k eps (e^eps - 1), k delta + delta')`.
    pub fn advanced(self, k: u64, slack: f64) -> Result<Self, AccountingError> {
        probability_ok("delta'", slack, true)?;
        let (k, e) = (k as f64, self.epsilon);
        Ok(Self {
            epsilon: (2.0 * k * (1.0 / slack).ln()).sqrt() * e + k * e * e.exp_m1(),
            delta: (k * self.delta + slack).min(1.0),
        })
    }

    /// The guarantee of running the mechanism on a Poisson sample that keeps each record with
    /// probability `q`: `(ln(1 + q (e^eps - 1)), q delta)`.
    pub fn amplified(self, q: f64) -> Result<Self, AccountingError> {
        probability_ok("sampling ratio q", q, false)?;
        Ok(Self {
            epsilon: amplified_epsilon(self.epsilon, q),
            delta: q * self.delta,
        })
    }
}

/// `ln(1 + q (e^eps - 1))` without overflow: for large eps it is `eps + ln(q + (1 - q) e^-eps)`.
fn amplified_epsilon(epsilon: f64, q: f64) -> f64 {
    if q == 0.0 {
        0.0
    } else if epsilon <= 1.0 {
        (q * epsilon.exp_m1()).ln_1p()
    } else {
        epsilon + (q + (1.0 - q) * (-epsilon).exp()).ln()
    }
}

/// Orders used when none are given: every integer 2..=64, then powers of two to 1024.
pub fn default_orders() -> Vec<u32> {
    (2..=64).chain([128, 256, 512, 1024]).collect()
}

/// A Renyi-DP curve: at each integer order alpha, the mechanism is (alpha, value)-RDP.
#[derive(Debug, Clone, PartialEq)]
pub struct Rdp {
    orders: Vec<u32>,
    values: Vec<f64>,
}

impl Rdp {
    /// The Gaussian mechanism with noise standard deviation `noise_multiplier` times the L2
    /// sensitivity: `alpha / (2 sigma^2)` (Mironov 2017, Proposition 7).
    pub fn gaussian(noise_multiplier: f64, orders: &[u32]) -> Result<Self, AccountingError> {
        Self::subsampled_gaussian(1.0, noise_multiplier, orders)
    }

    /// The Gaussian mechanism run on a Poisson sample keeping each record with probability
    /// `q` (Mironov, Talwar and Zhang 2019, section 3.3): for integer alpha,
    /// `A_alpha = sum_k C(alpha, k) (1 - q)^(alpha - k) q^k exp((k^2 - k) / (2 sigma^2))` and
    /// the RDP is `ln(A_alpha) / (alpha - 1)`, summed in log space.
    pub fn subsampled_gaussian(
        q: f64,
        noise_multiplier: f64,
        orders: &[u32],
    ) -> Result<Self, AccountingError> {
        probability_ok("sampling ratio q", q, false)?;
        let sigma = noise_multiplier_ok(noise_multiplier)?;
        let orders = Self::checked_orders(orders)?;
        let values = orders
            .iter()
            .map(|&alpha| {
                if q == 0.0 {
                    0.0
                } else if q == 1.0 {
                    f64::from(alpha) / (2.0 * sigma * sigma)
                } else {
                    log_a_integer(q, sigma, alpha) / f64::from(alpha - 1)
                }
            })
            .collect();
        Ok(Self { orders, values })
    }

    fn checked_orders(orders: &[u32]) -> Result<Vec<u32>, AccountingError> {
        if let Some(&bad) = orders.iter().find(|&&a| a < 2) {
            return Err(AccountingError {
                name: "order",
                value: f64::from(bad),
                reason: "integer orders must be at least 2",
            });
        }
        if orders.is_empty() {
            return Err(AccountingError {
                name: "number of orders",
                value: 0.0,
                reason: "at least one order is needed",
            });
        }
        Ok(orders.to_vec())
    }

    /// The orders.
    pub fn orders(&self) -> &[u32] {
        &self.orders
    }

    /// The RDP value at each order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Composition of `k` runs: RDP values add (Mironov 2017, Proposition 1).
    pub fn repeated(&self, k: u64) -> Self {
        Self {
            orders: self.orders.clone(),
            values: self.values.iter().map(|v| v * k as f64).collect(),
        }
    }

    /// Composition with another curve over the same orders.
    pub fn then(&self, other: &Rdp) -> Result<Self, AccountingError> {
        if self.orders != other.orders {
            return Err(AccountingError {
                name: "orders",
                value: other.orders.len() as f64,
                reason: "curves to compose must use the same orders",
            });
        }
        Ok(Self {
            orders: self.orders.clone(),
            values: self
                .values
                .iter()
                .zip(&other.values)
                .map(|(a, b)| a + b)
                .collect(),
        })
    }

    /// The smallest epsilon over the orders such that the composition is (epsilon, delta)-DP,
    /// and the order that gives it.
    pub fn epsilon(&self, delta: f64) -> Result<(f64, u32), AccountingError> {
        probability_ok("delta", delta, true)?;
        let best = self
            .orders
            .iter()
            .zip(&self.values)
            .map(|(&alpha, &rdp)| (rdp_to_epsilon(f64::from(alpha), rdp, delta), alpha))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("at least one order");
        Ok((best.0.max(0.0), best.1))
    }
}

/// Balle et al. 2020, Proposition 12: an (alpha, rdp)-RDP mechanism is (epsilon, delta)-DP for
/// `epsilon = rdp + ln((alpha - 1) / alpha) - (ln delta + ln alpha) / (alpha - 1)`.
fn rdp_to_epsilon(alpha: f64, rdp: f64, delta: f64) -> f64 {
    rdp + (-1.0 / alpha).ln_1p() - (delta.ln() + alpha.ln()) / (alpha - 1.0)
}

/// `ln A_alpha` of the Poisson-subsampled Gaussian at an integer order, for 0 < q < 1.
fn log_a_integer(q: f64, sigma: f64, alpha: u32) -> f64 {
    let (ln_q, ln_1mq) = (q.ln(), (-q).ln_1p());
    let mut ln_binomial = 0.0_f64; // ln C(alpha, k), built up term by term
    let terms: Vec<f64> = (0..=alpha)
        .map(|k| {
            if k > 0 {
                ln_binomial += f64::from(alpha - k + 1).ln() - f64::from(k).ln();
            }
            let k = f64::from(k);
            ln_binomial
                + (f64::from(alpha) - k) * ln_1mq
                + k * ln_q
                + (k * k - k) / (2.0 * sigma * sigma)
        })
        .collect();
    log_sum_exp(&terms)
}

/// `ln sum exp(t)`, with the largest term taken out and the rest added through `ln_1p`, so a
/// sum just above one term (small q) keeps its digits.
fn log_sum_exp(terms: &[f64]) -> f64 {
    let (top_at, top) = terms
        .iter()
        .copied()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one term");
    let rest: f64 = terms
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != top_at)
        .map(|(_, t)| (t - top).exp())
        .sum();
    top + rest.ln_1p()
}

/// A zero-concentrated DP guarantee: (alpha, rho alpha)-RDP at every real order alpha > 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zcdp {
    /// rho.
    pub rho: f64,
}

impl Zcdp {
    /// The Gaussian mechanism with noise `noise_multiplier` times the L2 sensitivity:
    /// `rho = 1 / (2 sigma^2)` (Bun and Steinke 2016, Proposition 1.6).
    pub fn gaussian(noise_multiplier: f64) -> Result<Self, AccountingError> {
        let sigma = noise_multiplier_ok(noise_multiplier)?;
        Ok(Self {
            rho: 1.0 / (2.0 * sigma * sigma),
        })
    }

    /// Composition: rho adds.
    pub fn then(self, other: Zcdp) -> Self {
        Self {
            rho: self.rho + other.rho,
        }
    }

    /// Composition of `k` runs.
    pub fn repeated(self, k: u64) -> Self {
        Self {
            rho: self.rho * k as f64,
        }
    }

    /// The smallest epsilon for `delta` over every real order (the RDP conversion above,
    /// minimised by golden-section search; the function is unimodal in alpha).
    pub fn epsilon(self, delta: f64) -> Result<f64, AccountingError> {
        probability_ok("delta", delta, true)?;
        let f = |alpha: f64| rdp_to_epsilon(alpha, self.rho * alpha, delta);
        // The minimiser lies below 1 + (1 + sqrt(ln(1/delta) / rho)) (where rho alpha balances
        // ln(1/delta) / (alpha - 1)); search a bracket safely past it.
        let (mut lo, mut hi) = (
            1.0 + 1e-9,
            2.0 + 2.0 * ((1.0 / delta).ln() / self.rho).sqrt(),
        );
        let ratio = (5.0_f64.sqrt() - 1.0) / 2.0;
        for _ in 0..200 {
            let (a, b) = (hi - ratio * (hi - lo), lo + ratio * (hi - lo));
            if f(a) < f(b) {
                hi = b;
            } else {
                lo = a;
            }
        }
        Ok(f((lo + hi) / 2.0).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    /// Lemma 3.3.1 against the formula evaluated directly where it does not overflow, and the
    /// large-epsilon form against its limit eps + ln q.
    #[test]
    fn amplification_is_lemma_3_3_1() {
        for (eps, q) in [(0.1, 0.01), (1.0, 0.5), (3.0, 0.05), (30.0, 0.2)] {
            let direct = (1.0 + (f64::exp(eps) - 1.0) * q).ln();
            assert!(close(amplified_epsilon(eps, q), direct, 1e-12), "{eps} {q}");
        }
        assert!(close(
            amplified_epsilon(1000.0, 0.01),
            1000.0 + 0.01_f64.ln(),
            1e-15
        ));
        assert_eq!(amplified_epsilon(2.0, 1.0), 2.0);
        let e = EpsDelta::new(1.0, 1e-6)
            .and_then(|e| e.amplified(0.1))
            .expect("valid");
        assert!(close(e.delta, 1e-7, 1e-15));
        assert!(EpsDelta::pure(1.0).and_then(|e| e.amplified(1.5)).is_err());
    }

    /// Dwork-Roth Theorem 3.20 evaluated by hand for k = 10, eps = 0.1, delta' = 1e-5:
    /// sqrt(20 ln 1e5) 0.1 + 10 (0.1) (e^0.1 - 1) = 1.5174271 + 0.1051709 = 1.6225980.
    #[test]
    fn advanced_composition_is_drv() {
        let e = EpsDelta::pure(0.1)
            .and_then(|e| e.advanced(10, 1e-5))
            .expect("valid");
        let want = (20.0 * 1e5_f64.ln()).sqrt() * 0.1 + 0.1_f64.exp_m1();
        assert!(close(e.epsilon, want, 1e-14));
        assert!(close(e.epsilon, 1.622598, 1e-6));
        assert_eq!(e.delta, 1e-5);
    }

    /// With q = 1 there is no amplification, and the subsampled curve is the Gaussian's.
    #[test]
    fn unsampled_gaussian_rdp_is_alpha_over_two_sigma_squared() {
        let orders = default_orders();
        let plain = Rdp::gaussian(2.0, &orders).expect("valid");
        for (&a, &v) in plain.orders().iter().zip(plain.values()) {
            assert!(close(v, f64::from(a) / 8.0, 1e-15));
        }
        // The series at q just under 1 tends to the same curve.
        let near = Rdp::subsampled_gaussian(1.0 - 1e-12, 2.0, &[2, 8, 32]).expect("valid");
        for (&a, &v) in near.orders().iter().zip(near.values()) {
            assert!(close(v, f64::from(a) / 8.0, 1e-9), "{a}: {v}");
        }
        // zCDP converts through every real order, so it is at most the integer-order figure.
        let z = Zcdp::gaussian(2.0).expect("valid").repeated(100);
        let r = plain.repeated(100).epsilon(1e-5).expect("valid").0;
        let zeps = z.epsilon(1e-5).expect("valid");
        assert!(zeps <= r + 1e-12 && zeps > 0.99 * r, "{zeps} vs {r}");
    }
}
