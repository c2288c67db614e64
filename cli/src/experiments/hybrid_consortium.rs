//! `privlogit dp experiment hybrid` (issue 15): what a consortium of three organizations gains
//! from the hybrid pipelines, as test AUC against epsilon, on breast_cancer (three hospitals)
//! and MNIST 0 vs 8 (three organizations).
//!
//! Methods, each with PLR's lambda 0.01 (no tuning: the pipelines have no validation budget):
//! - `secure exact`: the non-private l2 fit over all organizations' rows, what a secure study
//!   publishes (the upper line; not private, drawn at every epsilon);
//! - `secure PLR`: the secure PLR study, noise `b_1 + b_2` from the two servers;
//! - `own`: each organization's PLR on its own rows alone, tested on the common test set (the
//!   mean over the three organizations);
//! - `stacking`: cross-organization stacking ([`super::stacking`]), D^l / D^h 50 % / 50 %,
//!   high level by secure PLR;
//! - `transfer`: organization 1's published PLR model as the centre of organizations 2 and 3's
//!   secure PLR study (eta 0.5).
//!
//! The secure steps are computed here by their plaintext equivalents (`plr::minimise` with
//! the very noise both servers of a study seeded alike draw, the same centre): the secure runs
//! equal them to 1e-9 (cli/tests/suite/secure_plr.rs), [`check_secure`] runs one repeat's secure PLR
//! points as real studies to show it, and running every point through Paillier would only add
//! hours.
//! Choices: per repeat, the rows are shuffled, 30 % held out for testing, and the rest cut into
//! three equal organizations; breast_cancer's features are standardised and MNIST's pixels
//! reduced by PCA to 50 dimensions, both fitted on the training rows (not private, as the
//! papers' PCA: disclosed, not counted); rows are then scaled to norm 1 (PLR's row rule).
//! Each method charges each organization epsilon once (stacking's halves are disjoint;
//! transfer's source and target are different organizations).

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, concatenate};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use crate::experiments::dp_papers::{ExperimentSettings, Fits, Outcome, Part, Results};
use privlogit::dp::DpError;
use privlogit::dp::plr::{self, LinearModel, PlrBudget, Privacy};
use privlogit::dp::scaling::RowScaling;
use privlogit::dp::stacking::{meta_rows, split_rows};
use privlogit::metrics::auc;
use privlogit_protocols::secure::perturbation::Release;

use privlogit::hybrid::secure_plr;

/// PLR's lambda of every fit.
const LAMBDA: f64 = 0.01;
/// Transfer's weight of plain l2 against closeness to the source model.
const ETA: f64 = 0.5;
/// Share of the rows held out for testing.
const TEST_FRACTION: f64 = 0.3;
/// Organizations in the consortium.
const ORGANIZATIONS: usize = 3;
/// The methods, in the figure's order.
pub const METHODS: [&str; 5] = ["secure exact", "secure PLR", "own", "stacking", "transfer"];

/// One data set for the experiment: rows (already in the features the methods see, before the
/// per-repeat preprocessing) and 0/1 labels.
#[derive(Debug, Clone)]
pub struct Task {
    /// For the results' names.
    pub name: &'static str,
    /// Rows.
    pub x: Array2<f64>,
    /// Labels.
    pub y: Array1<f64>,
    /// How training rows become features.
    pub features: Features,
}

/// The per-repeat preprocessing, fitted on the training rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Features {
    /// z-scores with the training rows' means and standard deviations.
    Standardize,
    /// PCA to this many dimensions.
    Pca(usize),
}

fn pooled(parts: &[&Part]) -> Part {
    let xs: Vec<ArrayView2<'_, f64>> = parts.iter().map(|p| p.x.view()).collect();
    let ys: Vec<ArrayView1<'_, f64>> = parts.iter().map(|p| p.y.view()).collect();
    Part {
        x: concatenate(Axis(0), &xs).expect("same columns"),
        y: concatenate(Axis(0), &ys).expect("labels"),
    }
}

/// Labels as -1/+1.
fn signed(y: &Array1<f64>) -> Array1<f64> {
    y.mapv(|t| if t == 1.0 { 1.0 } else { -1.0 })
}

/// A secure PLR study's model over `parts` (plaintext equivalent): penalty `lambda + Delta`
/// for the pooled N, the noise `b_1 + b_2` both servers of a study seeded with `noise_seed`
/// would draw ([`secure_plr::seeded_noise`]), `centre` (already `(1 - eta) w_src`) if
/// transferring; `epsilon` None is the exact, non-private fit.
fn secure_plr(
    parts: &[&Part],
    epsilon: Option<f64>,
    centre: Option<&Array1<f64>>,
    noise_seed: u64,
) -> Result<Array1<f64>, DpError> {
    let all = pooled(parts);
    let (n, d) = all.x.dim();
    let (delta, noise) = match epsilon {
        None => (0.0, None),
        Some(e) => {
            let release = Release {
                epsilon: e,
                lambda: LAMBDA,
            };
            let budget = PlrBudget::new(e, n, LAMBDA)?;
            let b = secure_plr::seeded_noise(noise_seed, &release, n, d)
                .map_err(|_| DpError::new("epsilon", e, "too small for the noise to be drawn"))?;
            (budget.delta, Some(b))
        }
    };
    plr::minimise(
        all.x.view(),
        signed(&all.y).view(),
        LAMBDA,
        delta,
        centre,
        noise.as_ref(),
    )
}

/// Why the experiment stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HybridError {
    /// A parameter or a fit.
    #[error(transparent)]
    Dp(#[from] DpError),
    /// A secure study of the check.
    #[error("the secure check's study: {0}")]
    Study(#[from] privlogit_protocols::secure::study_protocol::StudyError),
}

/// One organization's own PLR (rows already on the unit sphere).
fn own_plr(part: &Part, epsilon: f64, rng: &mut ChaCha20Rng) -> Result<LinearModel, DpError> {
    plr::fit(
        part.x.view(),
        part.y.view(),
        Privacy::Epsilon(epsilon),
        LAMBDA,
        RowScaling::Normalize,
        None,
        rng,
    )
}

fn test_auc(scores: Array1<f64>, y: &Array1<f64>) -> f64 {
    auc(scores.view(), y.view()).unwrap_or(0.5)
}

fn linear_scores(w: &Array1<f64>, x: &Array2<f64>) -> Array1<f64> {
    x.dot(w).mapv(privlogit_protocols::objective::sigmoid)
}

/// Training and test rows of one repeat, preprocessed, on the unit sphere; training cut into
/// the organizations.
fn prepare(task: &Task, rng: &mut ChaCha20Rng) -> Result<(Vec<Part>, Part), DpError> {
    let whole = Part {
        x: task.x.clone(),
        y: task.y.clone(),
    };
    let mut order: Vec<usize> = (0..whole.x.nrows()).collect();
    order.shuffle(rng);
    let cut = (order.len() as f64 * TEST_FRACTION).round() as usize;
    let (test_rows, train_rows) = order.split_at(cut);
    let (mut train, mut test) = (whole.rows(train_rows), whole.rows(test_rows));
    match task.features {
        Features::Standardize => {
            let mean = train.x.mean_axis(Axis(0)).expect("rows");
            let sd = train
                .x
                .std_axis(Axis(0), 0.0)
                .mapv(|s| if s > 0.0 { s } else { 1.0 });
            train.x = (&train.x - &mean) / &sd;
            test.x = (&test.x - &mean) / &sd;
        }
        Features::Pca(k) => {
            let pca = privlogit::pca::Pca::fit(train.x.view(), k)
                .map_err(|_| DpError::new("PCA", k as f64, "the eigendecomposition failed"))?;
            train.x = pca.transform(train.x.view());
            test.x = pca.transform(test.x.view());
        }
    }
    train.x = RowScaling::Normalize.apply_checked(train.x.view(), 1.0)?;
    test.x = RowScaling::Normalize.apply_checked(test.x.view(), 1.0)?;
    let n = train.x.nrows();
    let organizations = (0..ORGANIZATIONS)
        .map(|k| {
            let rows: Vec<usize> = (k * n / ORGANIZATIONS..(k + 1) * n / ORGANIZATIONS).collect();
            train.rows(&rows)
        })
        .collect();
    Ok((organizations, test))
}

/// Test AUCs of every method at every budget in one repeat: `[budget][method]`. With `check`,
/// every secure PLR point is also run as a real secure study (in this process, the key holder
/// holding `check`, both servers seeded as the plaintext equivalent's noise), and the largest
/// coefficient difference per budget is returned beside the AUCs.
#[allow(clippy::type_complexity)]
fn repeat(
    task: &Task,
    epsilons: &[f64],
    seed: u64,
    check: Option<&privlogit_protocols::paillier::SecretKey>,
) -> Result<(Vec<Vec<f64>>, Vec<f64>), HybridError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (orgs, test) = prepare(task, &mut rng)?;
    let all: Vec<&Part> = orgs.iter().collect();
    let exact = test_auc(
        linear_scores(&secure_plr(&all, None, None, 0)?, &test.x),
        &test.y,
    );
    let mut diffs = Vec::new();
    let aucs = epsilons
        .iter()
        .map(|&e| -> Result<Vec<f64>, HybridError> {
            let noise_seed: u64 = rng.random();
            let w = secure_plr(&all, Some(e), None, noise_seed)?;
            if let Some(secret) = check {
                let names: Vec<String> = (1..=w.len()).map(|j| format!("x{j}")).collect();
                let parts = orgs.iter().map(|o| (o.x.clone(), o.y.clone())).collect();
                let release = Release {
                    epsilon: e,
                    lambda: LAMBDA,
                };
                let study = secure_plr::study_in_process(
                    &names,
                    parts,
                    release,
                    secret,
                    Some(noise_seed),
                    false,
                )?;
                diffs.push(
                    (&study.fit.beta - &w)
                        .iter()
                        .fold(0.0_f64, |m, v| m.max(v.abs())),
                );
            }
            let secure = test_auc(linear_scores(&w, &test.x), &test.y);
            let mut own = 0.0;
            for org in &orgs {
                own += test_auc(
                    own_plr(org, e, &mut rng)?.probabilities(test.x.view()),
                    &test.y,
                );
            }
            own /= orgs.len() as f64;
            // Stacking: each organization's low model on its D^l, meta rows of every D^h.
            let mut lows = Vec::new();
            let mut highs = Vec::new();
            for org in &orgs {
                let (low, high) = split_rows(org.x.nrows(), 0.5, &mut rng)?;
                lows.push(own_plr(&org.rows(&low), e, &mut rng)?);
                highs.push(org.rows(&high));
            }
            let meta = |x: &Array2<f64>| {
                let mut p = Array2::zeros((x.nrows(), lows.len()));
                for (k, m) in lows.iter().enumerate() {
                    p.column_mut(k).assign(&m.probabilities(x.view()));
                }
                RowScaling::Normalize
                    .apply_checked(meta_rows(&p).view(), 1.0)
                    .expect("finite probabilities")
            };
            let meta_parts: Vec<Part> = highs
                .iter()
                .map(|h| Part {
                    x: meta(&h.x),
                    y: h.y.clone(),
                })
                .collect();
            let high = secure_plr(
                &meta_parts.iter().collect::<Vec<_>>(),
                Some(e),
                None,
                rng.random(),
            )?;
            let stacking = test_auc(linear_scores(&high, &meta(&test.x)), &test.y);
            // Transfer: organization 1 publishes; 2 and 3 fit with its model as the centre.
            let source = own_plr(&orgs[0], e, &mut rng)?;
            let centre = &source.w * (1.0 - ETA);
            let target = secure_plr(&all[1..], Some(e), Some(&centre), rng.random())?;
            let transfer = test_auc(linear_scores(&target, &test.x), &test.y);
            Ok(vec![exact, secure, own, stacking, transfer])
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((aucs, diffs))
}

/// Runs repeat 0 with every secure PLR point also as a real secure study: the largest
/// coefficient difference between the study and the plaintext equivalent the experiment
/// reports, per budget (what `dp experiment hybrid --check-secure` prints).
pub fn check_secure(
    task: &Task,
    epsilons: &[f64],
    seed: u64,
    secret: &privlogit_protocols::paillier::SecretKey,
) -> Result<Vec<f64>, HybridError> {
    Ok(repeat(task, epsilons, seed, Some(secret))?.1)
}

/// The experiment on `task`: `repeats` seeded repeats (repeat r uses `seed + r`), in parallel.
pub fn run(
    task: &Task,
    epsilons: &[f64],
    repeats: usize,
    seed: u64,
    progress: &(dyn Fn() + Sync),
) -> Result<Results, HybridError> {
    if repeats == 0 || epsilons.is_empty() {
        return Err(DpError::new(
            "repeats",
            repeats as f64,
            "needs at least one repeat and one budget",
        )
        .into());
    }
    for &e in epsilons {
        DpError::check_positive("epsilon", e)?;
    }
    let per_repeat: Vec<Vec<Vec<f64>>> = (0..repeats)
        .into_par_iter()
        .map(|r| {
            let out = repeat(task, epsilons, seed.wrapping_add(r as u64), None).map(|(a, _)| a);
            progress();
            out
        })
        .collect::<Result<_, _>>()?;
    let mut outcomes = Vec::new();
    for (m, &method) in METHODS.iter().enumerate() {
        for (i, &e) in epsilons.iter().enumerate() {
            outcomes.push(Outcome {
                method,
                epsilon: e,
                aucs: per_repeat.iter().map(|r| r[i][m]).collect(),
                chosen: vec![format!("lambda={LAMBDA}"); repeats],
                fits: Fits {
                    target: u32::from(method != "secure exact"),
                    source: 0,
                },
            });
        }
    }
    let mut settings = ExperimentSettings::papers(seed);
    settings.repeats = repeats;
    settings.epsilons = epsilons.iter().map(|&e| Privacy::Epsilon(e)).collect();
    Ok(Results {
        experiment: task.name,
        outcomes,
        settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a separable toy task every method ranks the test rows perfectly at a large budget,
    /// and secure PLR at epsilon 1e6 is the exact fit to within the noise (checked through
    /// AUC, which the experiment reports); the methods keep the figure's order.
    #[test]
    fn at_a_large_budget_every_method_reaches_the_exact_fit() {
        let n = 300;
        let x = Array2::from_shape_fn((n, 3), |(i, j)| {
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            sign * (1.0 + j as f64) + ((i * 7 + j * 3) % 11) as f64 / 20.0
        });
        let y = Array1::from_shape_fn(n, |i| f64::from(u8::from(i % 2 == 0)));
        let task = Task {
            name: "toy",
            x,
            y,
            features: Features::Standardize,
        };
        let results = run(&task, &[1e6], 2, 5, &|| {}).expect("runs");
        assert_eq!(results.methods(), METHODS.to_vec());
        for m in METHODS {
            let o = results.get(m, 1e6).expect("cell");
            assert!(o.mean() > 0.999, "{m}: {}", o.mean());
        }
    }
}
