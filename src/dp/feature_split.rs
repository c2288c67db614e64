//! PLR with feature splitting: transfer paper Algorithm 3 (PLR-FS), which is also steps 2-13 of
//! the stacking paper's Algorithm 3 (PST-F's low level).
//!
//! The two papers differ in one symbol: with `eps' > 0` the stacking paper draws each group's
//! noise with `eps_k = eps'` (Algorithm 3 step 7), the transfer paper with `eps^(k) = eps`
//! (Algorithm 3 step 6). We follow the stacking paper: as in Algorithm 1, the log term
//! subtracted in step 3 pays for the Jacobian of the map from noise to model, so drawing with
//! `eps` would spend `eps + sum_k log(...)` in total, more than the `eps` promised.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis};
use rand::Rng;
use rand::seq::SliceRandom;

use super::plr::{self, LinearModel, Privacy};
use super::scaling::RowScaling;
use super::{DpError, positive};

/// A partition of the features into `K` groups with importances `q_k >= 0` summing to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureSplit {
    groups: Vec<Vec<usize>>,
    importance: Vec<f64>,
}

impl FeatureSplit {
    /// Validates the split of `d` features: `K` between 1 and `d`, groups non-empty, disjoint
    /// and covering every feature, `q_k >= 0` and finite, summing to 1 (within 1e-9).
    pub fn new(groups: Vec<Vec<usize>>, importance: Vec<f64>, d: usize) -> Result<Self, DpError> {
        let k = groups.len();
        if k == 0 || k > d {
            return Err(DpError {
                name: "K",
                value: k as f64,
                reason: "must be between 1 and the number of features",
            });
        }
        if importance.len() != k {
            return Err(DpError {
                name: "importance count",
                value: importance.len() as f64,
                reason: "must equal the number of groups K",
            });
        }
        let mut seen = vec![false; d];
        for group in &groups {
            if group.is_empty() {
                return Err(DpError {
                    name: "group size",
                    value: 0.0,
                    reason: "every group needs at least one feature",
                });
            }
            for &f in group {
                if f >= d || std::mem::replace(&mut seen[f], true) {
                    return Err(DpError {
                        name: "feature index",
                        value: f as f64,
                        reason: "out of range or in two groups",
                    });
                }
            }
        }
        if let Some(missing) = seen.iter().position(|s| !s) {
            return Err(DpError {
                name: "feature index",
                value: missing as f64,
                reason: "is in no group (the groups must partition the features)",
            });
        }
        for &q in &importance {
            if !(q.is_finite() && q >= 0.0) {
                return Err(DpError {
                    name: "q_k",
                    value: q,
                    reason: "must be finite and non-negative",
                });
            }
        }
        let total: f64 = importance.iter().sum();
        if (total - 1.0).abs() > 1e-9 {
            return Err(DpError {
                name: "sum of q_k",
                value: total,
                reason: "must be 1",
            });
        }
        Ok(Self { groups, importance })
    }

    /// PST-F(U) / PPTL-FS(R): features shuffled into `k` groups of near-equal size, `q_k = 1/K`.
    pub fn random<R: Rng + ?Sized>(d: usize, k: usize, rng: &mut R) -> Result<Self, DpError> {
        let mut order: Vec<usize> = (0..d).collect();
        order.shuffle(rng);
        Self::new(chunks(&order, k.max(1)), vec![1.0 / k as f64; k], d)
    }

    /// PST-F(W) / PPTL-FS(W): features sorted by a score (most important first) into `k`
    /// consecutive groups of near-equal size, `q_k` by stacking paper eq. (6): the group's share
    /// of the total score. The scores must come from outside the private data (or the result is
    /// not differentially private; the papers' MNIST runs use PCA variances and say so).
    pub fn by_importance(scores: &[f64], k: usize) -> Result<Self, DpError> {
        let d = scores.len();
        for &v in scores {
            if !(v.is_finite() && v >= 0.0) {
                return Err(DpError {
                    name: "feature score",
                    value: v,
                    reason: "must be finite and non-negative",
                });
            }
        }
        let total: f64 = scores.iter().sum();
        let total = positive("sum of feature scores", total)?;
        let mut order: Vec<usize> = (0..d).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        let groups = chunks(&order, k.max(1));
        let importance = groups
            .iter()
            .map(|g| g.iter().map(|&f| scores[f]).sum::<f64>() / total)
            .collect();
        Self::new(groups, importance, d)
    }

    /// Number of groups `K`.
    pub fn k(&self) -> usize {
        self.groups.len()
    }

    /// The feature indices of each group.
    pub fn groups(&self) -> &[Vec<usize>] {
        &self.groups
    }

    /// The importances `q_k`.
    pub fn importance(&self) -> &[f64] {
        &self.importance
    }

    /// The columns of group `k`.
    pub fn columns(&self, x: ArrayView2<'_, f64>, k: usize) -> Array2<f64> {
        x.select(Axis(1), &self.groups[k])
    }
}

/// `order` cut into `k` consecutive pieces whose sizes differ by at most one.
pub(crate) fn chunks(order: &[usize], k: usize) -> Vec<Vec<usize>> {
    let (d, mut start) = (order.len(), 0);
    (0..k)
        .map(|i| {
            let len = d / k + usize::from(i < d % k);
            let piece = order[start..start + len].to_vec();
            start += len;
            piece
        })
        .collect()
}

/// The budget of Algorithm 3 (stacking) steps 3 and 6-10.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitBudget {
    /// The total budget `eps`.
    pub epsilon: f64,
    /// Step 3: `eps' = eps - sum_k log(1 + q_k^2/(2 n lambda_k) + q_k^4/(16 n^2 lambda_k^2))`.
    pub epsilon_prime: f64,
    /// Per group `(eps_k, Delta_k)`: `(eps', 0)` if `eps' > 0`, else
    /// `(eps/2, max(0, q_k^2 / (4 n (exp(eps q_k / 4) - 1)) - lambda_k))`.
    pub groups: Vec<(f64, f64)>,
}

impl SplitBudget {
    /// Steps 3 and 6-10 for `n` rows, importances `q` and penalties `lambda`.
    ///
    /// As for PLR ([`super::plr::PlrBudget::new`]), the `Delta_k` branch is taken when `eps'`
    /// falls below `eps/2` (not only below 0, as printed; `as_printed` restores that), so the
    /// noise never uses a tiny `eps'`; the `Delta_k` of step 9 bring the total back to `eps/2`.
    pub fn new(
        epsilon: f64,
        n: usize,
        lambda: &[f64],
        q: &[f64],
        as_printed: bool,
    ) -> Result<Self, DpError> {
        let epsilon = positive("epsilon", epsilon)?;
        if n == 0 {
            return Err(DpError {
                name: "n",
                value: 0.0,
                reason: "needs at least one row",
            });
        }
        let n = n as f64;
        let mut epsilon_prime = epsilon;
        for (&l, &q) in lambda.iter().zip(q) {
            let nl = n * positive("lambda_k", l)?;
            epsilon_prime -= (q * q / (2.0 * nl) + q.powi(4) / (16.0 * nl * nl)).ln_1p();
        }
        let groups = lambda
            .iter()
            .zip(q)
            .map(|(&l, &q)| {
                let switch = if as_printed { 0.0 } else { epsilon / 2.0 };
                if epsilon_prime > 0.0 && epsilon_prime >= switch {
                    (epsilon_prime, 0.0)
                } else if q == 0.0 {
                    // A group of importance zero sees all-zero rows; nothing to pay for.
                    (epsilon / 2.0, 0.0)
                } else {
                    // Step 9 can go negative for a low-importance group (the branch is taken on
                    // the sum over groups); a negative Delta would undercut lambda_k, so it is
                    // clamped at 0, which only adds penalty (and so stays within budget).
                    let delta = q * q / (4.0 * n * (epsilon * q / 4.0).exp_m1()) - l;
                    (epsilon / 2.0, delta.max(0.0))
                }
            })
            .collect();
        Ok(Self {
            epsilon,
            epsilon_prime,
            groups,
        })
    }
}

/// PLR-FS's output: one model per feature group.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitModel {
    /// The split the models were trained on.
    pub split: FeatureSplit,
    /// Model `k` reads the columns of group `k`, scaled to norm `q_k`.
    pub models: Vec<LinearModel>,
}

impl SplitModel {
    /// An `n x K` matrix: column `k` is model `k`'s `P(y = 1 | x_(k))`.
    pub fn group_probabilities(&self, x: ArrayView2<'_, f64>) -> Array2<f64> {
        let mut out = Array2::zeros((x.nrows(), self.split.k()));
        for (k, model) in self.models.iter().enumerate() {
            let p = model.probabilities(self.split.columns(x, k).view());
            out.column_mut(k).assign(&p);
        }
        out
    }
}

/// PLR-FS (transfer paper Algorithm 3): one PLR per feature group, rows of group `k` scaled to
/// norm `q_k`, the budget split as [`SplitBudget`]; `centres[k]` is group `k`'s transfer centre
/// (see [`plr::minimise`]). Labels `y` are 0/1. The whole output is `eps`-differentially private
/// (transfer Proposition 3, stacking Theorem 4).
#[allow(clippy::too_many_arguments)]
pub fn plr_fs<R: Rng + ?Sized>(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    split: &FeatureSplit,
    privacy: Privacy,
    lambda: &[f64],
    centres: Option<&[Array1<f64>]>,
    scaling: RowScaling,
    rng: &mut R,
) -> Result<SplitModel, DpError> {
    if lambda.len() != split.k() {
        return Err(DpError {
            name: "lambda count",
            value: lambda.len() as f64,
            reason: "must equal the number of groups K",
        });
    }
    for &l in lambda {
        positive("lambda_k", l)?;
    }
    scaling.validate()?;
    let budget = match privacy.epsilon()? {
        Some(eps) => Some(SplitBudget::new(
            eps,
            x.nrows(),
            lambda,
            split.importance(),
            privacy.as_printed(),
        )?),
        None => None,
    };
    let mut models = Vec::with_capacity(split.k());
    for k in 0..split.k() {
        let q = split.importance()[k];
        let columns = split.columns(x, k);
        let centre = centres.map(|c| &c[k]);
        if q == 0.0 {
            // Remark 1: the group sees only zero rows; its model carries nothing.
            models.push(LinearModel {
                w: Array1::zeros(columns.ncols()),
                scaling,
                target: 0.0,
            });
            continue;
        }
        let settled = budget.as_ref().map(|b| b.groups[k]);
        let model = plr::fit_scaled(
            columns.view(),
            y,
            privacy,
            lambda[k],
            scaling,
            q,
            settled,
            centre,
            rng,
        )?;
        models.push(model);
    }
    Ok(SplitModel {
        split: split.clone(),
        models,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Algorithm 3 step 3 by hand for eps = 1, n = 200, K = 3, q = (0.5, 0.3, 0.2),
    /// lambda_k = 0.01 (n lambda = 2):
    ///   k=1: 1 + 0.25/4 + 0.0625/64     = 1.0634765625
    ///   k=2: 1 + 0.09/4 + 0.0081/64     = 1.0226265625
    ///   k=3: 1 + 0.04/4 + 0.0016/64     = 1.010025
    ///   eps' = 1 - ln(1.0634765625) - ln(1.0226265625) - ln(1.010025)
    /// (python3: 1 - math.log(1.0634765625) - math.log(1.0226265625) - math.log(1.010025)
    ///  = 0.9061072208632859). eps' > 0, so every group draws with eps' and Delta_k = 0.
    #[test]
    fn epsilon_prime_of_algorithm_3_step_3() {
        let b = SplitBudget::new(1.0, 200, &[0.01; 3], &[0.5, 0.3, 0.2], true).expect("valid");
        assert!(
            (b.epsilon_prime - 0.9061072208632859).abs() < 1e-15,
            "{b:?}"
        );
        assert_eq!(b.groups, vec![(b.epsilon_prime, 0.0); 3]);
    }

    /// The small-budget branch: eps = 0.1, n = 50, lambda_k = 0.01, q = (0.6, 0.4):
    /// n lambda = 0.5, eps' = 0.1 - ln(1 + 0.36 + 0.1296/4) - ln(1 + 0.16 + 0.0256/4) < 0, so
    /// eps_k = 0.05 and Delta_k = q^2 / (200 (exp(0.1 q / 4) - 1)) - 0.01 (python3:
    /// 0.36/(200*math.expm1(0.015)) - 0.01 = 0.10910224999156255,
    /// 0.16/(200*math.expm1(0.01)) - 0.01 = 0.06960066666555556).
    /// The switch at eps/2 (PLR's, see `plr::tests::no_cliff_at_the_switch`): eps = 1,
    /// n = 200, lambda_k = 0.0015, q = (0.5, 0.3, 0.2). Step 3 gives eps' = 0.41129503191770920
    /// (python3: 1 - sum(math.log1p(x*x/0.6 + x**4/1.44) for x in (.5, .3, .2))); as printed
    /// every group draws with it; now with eps/2 = 0.5 and Delta = (0.000847004360938075, 0,
    /// 0) (step 9, negative values clamped), under which the guarantee's own eps',
    /// 1 - sum 2 ln(1 + q^2 / (4 n (lambda + Delta))) = 0.539779031194766, covers 0.5.
    #[test]
    fn switch_at_half_the_budget() {
        let (lambda, q) = ([0.0015; 3], [0.5, 0.3, 0.2]);
        let printed = SplitBudget::new(1.0, 200, &lambda, &q, true).expect("valid");
        for &(e, d) in &printed.groups {
            assert!(
                (e - 0.4112950319177092).abs() < 1e-15 && d == 0.0,
                "{printed:?}"
            );
        }
        let b = SplitBudget::new(1.0, 200, &lambda, &q, false).expect("valid");
        let want_delta = [0.000847004360938075, 0.0, 0.0];
        for (&(e, d), want) in b.groups.iter().zip(want_delta) {
            assert_eq!(e, 0.5);
            assert!((d - want).abs() < 1e-17, "{b:?}");
        }
        let covered: f64 = 1.0
            - q.iter()
                .zip(&b.groups)
                .map(|(q, (_, d))| 2.0 * (q * q / (4.0 * 200.0 * (0.0015 + d))).ln_1p())
                .sum::<f64>();
        assert!((covered - 0.539779031194766).abs() < 1e-14 && covered >= 0.5);
    }

    #[test]
    fn small_budget_branch_of_algorithm_3() {
        let b = SplitBudget::new(0.1, 50, &[0.01; 2], &[0.6, 0.4], true).expect("valid");
        assert!(b.epsilon_prime < 0.0);
        let want = [
            0.36 / (200.0 * 0.015f64.exp_m1()) - 0.01,
            0.16 / (200.0 * 0.01f64.exp_m1()) - 0.01,
        ];
        for ((eps_k, delta_k), want) in b.groups.iter().zip(want) {
            assert_eq!(*eps_k, 0.05);
            assert!((delta_k - want).abs() < 1e-15);
        }
        assert!((want[0] - 0.10910224999156255).abs() < 1e-15);
        assert!((want[1] - 0.06960066666555556).abs() < 1e-15);
    }

    /// A low-importance group's step-9 Delta can go negative (eps = 0.5, n = 50, lambda_k =
    /// 0.01, q = (0.9, 0.1): 0.01/(200 (exp(0.0125) - 1)) - 0.01 = -0.006); it is clamped to 0.
    #[test]
    fn negative_delta_is_clamped() {
        let b = SplitBudget::new(0.5, 50, &[0.01; 2], &[0.9, 0.1], true).expect("valid");
        assert!(b.epsilon_prime < 0.0);
        assert_eq!(b.groups[1], (0.25, 0.0));
        let want = 0.81 / (200.0 * 0.1125f64.exp_m1()) - 0.01;
        assert!(want > 0.0 && (b.groups[0].1 - want).abs() < 1e-15);
    }

    #[test]
    fn importance_split_follows_equation_6() {
        let split = FeatureSplit::by_importance(&[1.0, 4.0, 2.0, 3.0], 2).expect("valid");
        assert_eq!(split.groups(), &[vec![1, 3], vec![2, 0]]);
        assert_eq!(split.importance(), &[0.7, 0.3]);
    }

    #[test]
    fn splits_are_validated() {
        let bad = [
            (vec![], vec![], "K"),
            (vec![vec![0], vec![2]], vec![0.5, 0.5], "feature index"),
            (vec![vec![0, 1]], vec![0.9], "sum of q_k"),
            (vec![vec![0], vec![1]], vec![1.5, -0.5], "q_k"),
            (vec![vec![0, 0], vec![1]], vec![0.5, 0.5], "feature index"),
        ];
        for (groups, q, name) in bad {
            let e = FeatureSplit::new(groups, q, 2).expect_err("refused");
            assert_eq!(e.name, name);
        }
    }
}
