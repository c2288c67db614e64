//! The privacy DPSTGD spends, per participant (each runs Algorithm 2 on its own rows once per
//! iteration), by two accountings.
//!
//! - **Dissertation** (Theorem 3.3.2): each of the `2n` Report-Noisy-Top-N releases of an
//!   iteration is amplified on its own by Lemma 3.3.1, `eps_g = ln(1 + (e^eps - 1) q)`, and the
//!   iteration spends `2 n eps_g` (basic composition) or, at `delta > 0`, the advanced
//!   composition of those releases. Over `T` iterations the same composition runs over
//!   `2 n T` releases.
//! - **Sound** (the default): the `n` signs of eq. (3.6) are a Laplace mechanism each, `eps`
//!   apiece, which Theorem 3.3.2 does not count; and all `3n` releases of an iteration read the
//!   one minibatch, so amplification applies once to their composition, not to each:
//!   `eps_iter = ln(1 + q (e^(3 n eps) - 1))` (pure), or at `delta > 0` the better of that and
//!   advanced composition on the minibatch (slack `delta / (2 T q)`) amplified once. Over `T`
//!   iterations: the better of basic and advanced composition (slack `delta / 2`).
//!
//! Both are computed with [`crate::dp::accounting`], which `privlogit dp account` exposes and
//! the dp-accounting tests check.

use super::DlError;
use super::participant::Settings;
use crate::dp::accounting::EpsDelta;

/// Which composition to charge by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accounting {
    /// Theorem 3.3.2 as the chapter states it.
    Dissertation,
    /// Counting the signs and amplifying once per minibatch (see the module).
    Sound,
}

/// What `iterations` iterations spend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spend {
    /// Per iteration, Theorem 3.3.2 by basic composition (`2 n eps_g`).
    pub iteration_dissertation: f64,
    /// Per iteration, the sound pure bound `ln(1 + q (e^(3 n eps) - 1))`.
    pub iteration_sound: f64,
    /// In total, by the dissertation's composition.
    pub total_dissertation: EpsDelta,
    /// In total, by the sound composition.
    pub total_sound: EpsDelta,
}

impl Spend {
    /// The total by `accounting`.
    pub fn total(&self, accounting: Accounting) -> EpsDelta {
        match accounting {
            Accounting::Dissertation => self.total_dissertation,
            Accounting::Sound => self.total_sound,
        }
    }
}

fn accounting_error(e: impl std::fmt::Display) -> DlError {
    DlError::Budget(format!("cannot account for this run: {e}"))
}

/// The spend of `iterations` iterations of Algorithm 2 on a network of `dim` parameters, with
/// `delta` the failure probability allowed (0 for pure differential privacy). `None` without
/// noise: such a run is not private.
pub fn spend(
    settings: &Settings,
    dim: usize,
    iterations: u64,
    delta: f64,
) -> Result<Option<Spend>, DlError> {
    let Some(epsilon) = settings.epsilon else {
        return Ok(None);
    };
    if !(0.0..1.0).contains(&delta) {
        return Err(DlError::setting("delta", delta, "must be in [0, 1)"));
    }
    let n = settings.upload_count(dim) as u64;
    let q = settings.q;
    let t = iterations.max(1);
    let pure = |e: f64| EpsDelta::pure(e).map_err(accounting_error);
    let best = |a: EpsDelta, b: EpsDelta| if b.epsilon < a.epsilon { b } else { a };

    // Theorem 3.3.2.
    let per_release = pure(epsilon)?.amplified(q).map_err(accounting_error)?;
    let iteration_dissertation = per_release.basic(2 * n).epsilon;
    let mut total_dissertation = per_release.basic(2 * n * t);
    if delta > 0.0 {
        total_dissertation = best(
            total_dissertation,
            per_release
                .advanced(2 * n * t, delta)
                .map_err(accounting_error)?,
        );
    }

    // Sound: 2n selections and n signs on one minibatch, amplified once.
    let releases = 3 * n;
    let minibatch = pure(epsilon)?;
    let iteration = minibatch
        .basic(releases)
        .amplified(q)
        .map_err(accounting_error)?;
    let iteration_sound = iteration.epsilon;
    let mut total_sound = iteration.basic(t);
    if delta > 0.0 {
        let inner = minibatch
            .advanced(releases, delta / (2.0 * t as f64 * q))
            .and_then(|e| e.amplified(q))
            .map_err(accounting_error)?;
        let per_iteration = best(iteration, inner);
        let half = delta / 2.0;
        total_sound = best(
            total_sound,
            best(
                per_iteration.basic(t),
                per_iteration.advanced(t, half).map_err(accounting_error)?,
            ),
        );
    }
    Ok(Some(Spend {
        iteration_dissertation,
        iteration_sound,
        total_dissertation,
        total_sound,
    }))
}

/// Refuses a run whose `iterations` would spend more than `budget` by `accounting` (or any
/// run without noise), before anything is trained.
pub fn check(
    settings: &Settings,
    dim: usize,
    iterations: u64,
    delta: f64,
    accounting: Accounting,
    budget: f64,
) -> Result<Spend, DlError> {
    let Some(spend) = spend(settings, dim, iterations, delta)? else {
        return Err(DlError::Budget(
            "a run without noise is not differentially private: no budget covers it".into(),
        ));
    };
    let total = spend.total(accounting);
    if total.epsilon > budget {
        let per = match accounting {
            Accounting::Dissertation => spend.iteration_dissertation,
            Accounting::Sound => spend.iteration_sound,
        };
        // Spend grows with the iterations: the largest count that fits, by bisection.
        let fits = |t: u64| {
            t == 0
                || self::spend(settings, dim, t, delta)
                    .ok()
                    .flatten()
                    .is_some_and(|s| s.total(accounting).epsilon <= budget)
        };
        let (mut lo, mut hi) = (0u64, iterations);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let affordable = lo;
        return Err(DlError::Budget(format!(
            "{iterations} iterations would spend epsilon {:.4} (delta {:.1e}, {} accounting; {:.4} per iteration), past the budget {budget}: at most {affordable} iterations fit",
            total.epsilon,
            total.delta,
            match accounting {
                Accounting::Dissertation => "dissertation",
                Accounting::Sound => "sound",
            },
            per
        )));
    }
    Ok(spend)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::accounting::table_3_1;

    fn settings(epsilon: f64, q: f64, ratio: f64) -> Settings {
        Settings {
            epsilon: Some(epsilon),
            q,
            upload_ratio: ratio,
            bound: 1.0,
            ternary: true,
        }
    }

    /// The dissertation's per-iteration figure is Table 3.1's basic column: the paper's
    /// network has 14,312 parameters, and 10 % of them is its n = 1432 (ceil; the table's 1431
    /// rounds down), so check through Table 3.1's own n.
    #[test]
    fn the_dissertation_column_is_table_3_1() {
        for row in table_3_1().iter().filter(|r| r.q < 1.0) {
            let ratio = row.n as f64 / 14_312.0;
            let s = settings(row.epsilon, row.q, ratio);
            let dim = 14_312;
            let n = s.upload_count(dim) as u64;
            let spend = spend(&s, dim, 1, 0.0).expect("valid").expect("private");
            let expected = row.basic * n as f64 / row.n as f64;
            assert!(
                (spend.iteration_dissertation - expected).abs() < 1e-9 * expected,
                "{row:?}: {} vs {expected}",
                spend.iteration_dissertation
            );
        }
    }

    /// The sound per-iteration bound by its formula, and that it is never below the
    /// dissertation's (it counts more releases and amplifies once).
    #[test]
    fn the_sound_bound_counts_the_signs_and_amplifies_once() {
        let s = settings(0.01, 0.05, 0.001);
        let dim = 10_000;
        let n = s.upload_count(dim) as f64;
        let spend = spend(&s, dim, 1, 0.0).expect("valid").expect("private");
        let expected = (1.0 + 0.05 * ((3.0 * n * 0.01_f64).exp() - 1.0)).ln();
        assert!((spend.iteration_sound - expected).abs() < 1e-12);
        assert!(spend.iteration_sound >= spend.iteration_dissertation);
        let many = super::spend(&s, dim, 100, 1e-6)
            .expect("valid")
            .expect("private");
        assert!(many.total_sound.epsilon <= 100.0 * spend.iteration_sound + 1e-12);
        assert!(many.total_sound.delta <= 1e-6 * (1.0 + 1e-12));
    }

    #[test]
    fn a_run_past_its_budget_is_refused_naming_what_fits() {
        let s = settings(0.01, 0.01, 0.001);
        let dim = 1000;
        let err = check(&s, dim, 10_000, 0.0, Accounting::Sound, 1.0).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("past the budget 1"), "{text}");
        let fits: u64 = text
            .rsplit("at most ")
            .next()
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse().ok())
            .expect("a count");
        assert!(check(&s, dim, fits, 0.0, Accounting::Sound, 1.0).is_ok());
        assert!(check(&s, dim, fits + 1, 0.0, Accounting::Sound, 1.0).is_err());
        let none = Settings { epsilon: None, ..s };
        assert!(check(&none, dim, 1, 0.0, Accounting::Sound, 1e9).is_err());
    }
}
