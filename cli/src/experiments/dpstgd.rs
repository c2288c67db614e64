//! Figures 3.3-3.6 of the dissertation on a public substitute for its card data.
//!
//! The paper's data (a US bank's transactions, 0.7 million rows after under-sampling, 14 %
//! fraud) is private. The substitute is the MNIST digits file `dp experiment --data` reads (10,000
//! images) as "digit 8 against the rest": a binary task with an imbalanced positive class
//! (9.4 %), many rows, and enough features for a network of the paper's shape (784 inputs,
//! 40,312 parameters). It is not tabular, and it is 70 times smaller than the paper's sample: a
//! participant holds about 1,700 rows with 5 participants (the paper's about 140,000), so at
//! `q = 0.01` a minibatch has about 17 rows and eq. (3.5)'s noise, `2B / (q n_k eps)`, is about
//! 80 times the paper's at the same epsilon. The figures' trends, not their levels, are what
//! can be compared.
//!
//! As in section 3.4.2, the rows are divided evenly among the participants and a held-out test
//! set (`K + 1` parts, shuffled per repeat), and the test AUC is reported against epsilon (5 and
//! 30 participants), against `q` and against the upload ratio, beside the non-private network
//! (the same network, clipping, sampling and iterations; every coordinate uploaded as its exact
//! value; its own learning rate, since its steps are not `B`-sized signs).

use ndarray::{Array1, Array2, Axis};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use privlogit::dl::DlError;
use privlogit::dl::budget;
use privlogit::dl::network::Network;
use privlogit::dl::participant::Settings;
use privlogit::dl::server::{self, Rows, Schedule};
use privlogit::dp::mnist::Digits;

/// A binary task: features and 0/1 labels.
#[derive(Debug, Clone)]
pub struct Task {
    /// One row per example.
    pub x: Array2<f64>,
    /// 0/1.
    pub y: Array1<f64>,
}

impl Task {
    /// `positive` against the other digits.
    pub fn digit_against_rest(digits: &Digits, positive: u8) -> Self {
        Task {
            x: digits.pixels.clone(),
            y: digits
                .labels
                .iter()
                .map(|&l| f64::from(l == positive))
                .collect(),
        }
    }
}

/// The training settings the figures share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Training {
    /// Iterations `T`.
    pub iterations: u64,
    /// Clipping bound and ternary magnitude `B`.
    pub bound: f64,
    /// DPSTGD's learning rate.
    pub rate: f64,
    /// The non-private network's learning rate.
    pub plain_rate: f64,
}

impl Default for Training {
    /// Chosen once on the substitute (seed 1, 5 participants, q = 0.01, T = 200) from
    /// B in {0.01, 0.1} and r in {0.01, 0.05} for DPSTGD and r in {0.1, 0.5} for the
    /// non-private network, by test AUC at epsilon = 10 and without noise; the figures then use
    /// them for every point.
    fn default() -> Self {
        Training {
            iterations: 200,
            bound: 0.1,
            rate: 0.05,
            plain_rate: 0.5,
        }
    }
}

/// One point of a figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// `fig3_3` ... `fig3_6`.
    pub figure: &'static str,
    /// Participants `K`.
    pub participants: usize,
    /// Algorithm 2's epsilon (`None`: the non-private network).
    pub epsilon: Option<f64>,
    /// Minibatch ratio.
    pub q: f64,
    /// Upload ratio.
    pub upload_ratio: f64,
    /// Test AUC per repeat.
    pub aucs: Vec<f64>,
    /// Total epsilon after `T` iterations, sound and by Theorem 3.3.2 (pure, basic).
    pub spend: Option<(f64, f64)>,
}

impl Point {
    /// Mean AUC.
    pub fn mean(&self) -> f64 {
        self.aucs.iter().sum::<f64>() / self.aucs.len().max(1) as f64
    }

    /// Sample standard deviation of the AUC.
    pub fn sd(&self) -> f64 {
        let n = self.aucs.len();
        if n < 2 {
            return 0.0;
        }
        let m = self.mean();
        (self.aucs.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    }
}

/// The figures' sweeps as in the paper's captions: epsilon for 5 and 30 participants
/// (q = 0.01, 10 % uploaded), q for 5 participants (eps = 1, 10 %), the upload ratio for 5
/// participants (eps = 1, q = 0.01); each with its non-private point(s).
pub fn points() -> Vec<Point> {
    let point = |figure, participants, epsilon, q, upload_ratio| Point {
        figure,
        participants,
        epsilon,
        q,
        upload_ratio,
        aucs: Vec::new(),
        spend: None,
    };
    let mut out = Vec::new();
    for (figure, k) in [("fig3_3", 5), ("fig3_4", 30)] {
        for e in [0.01, 0.1, 0.5, 1.0, 10.0] {
            out.push(point(figure, k, Some(e), 0.01, 0.1));
        }
        out.push(point(figure, k, None, 0.01, 1.0));
    }
    for q in [0.005, 0.01, 0.02, 0.05, 0.1] {
        out.push(point("fig3_5", 5, Some(1.0), q, 0.1));
        out.push(point("fig3_5", 5, None, q, 1.0));
    }
    for r in [0.01, 0.05, 0.1, 0.3, 0.5, 1.0] {
        out.push(point("fig3_6", 5, Some(1.0), 0.01, r));
    }
    out.push(point("fig3_6", 5, None, 0.01, 1.0));
    out
}

/// The test AUC of one run: `task` shuffled by `seed` into `K + 1` parts.
pub fn run_point(
    task: &Task,
    point: &Point,
    training: Training,
    seed: u64,
) -> Result<f64, DlError> {
    let k = point.participants;
    let mut order: Vec<usize> = (0..task.x.nrows()).collect();
    order.shuffle(&mut ChaCha20Rng::seed_from_u64(seed));
    let part = task.x.nrows() / (k + 1);
    let take = |range: &[usize]| (task.x.select(Axis(0), range), task.y.select(Axis(0), range));
    let parties: Vec<Rows> = (0..k)
        .map(|i| {
            let (x, y) = take(&order[i * part..(i + 1) * part]);
            Rows {
                name: format!("participant {}", i + 1),
                x,
                y,
            }
        })
        .collect();
    let (test_x, test_y) = take(&order[k * part..(k + 1) * part]);
    let network = Network::paper(task.x.ncols())?;
    let private = point.epsilon.is_some();
    let settings = Settings {
        epsilon: point.epsilon,
        q: point.q,
        upload_ratio: point.upload_ratio,
        bound: training.bound,
        ternary: private,
        sparse: None,
    };
    let schedule = Schedule {
        iterations: training.iterations,
        learning_rate: if private {
            training.rate
        } else {
            training.plain_rate
        },
        settings,
    };
    let (params, _) = server::train_in_process(
        &network,
        &parties,
        schedule,
        Some(seed),
        None,
        &mut |_, _| Ok(()),
    )?;
    Ok(network
        .evaluate(&params, test_x.view(), test_y.view())
        .auc
        .unwrap_or(0.5))
}

/// Every point of [`points`] over `repeats` repeats (seeds `seed`, `seed + 1`, ...), in
/// parallel; `tick` after each run.
pub fn run(
    task: &Task,
    training: Training,
    repeats: usize,
    seed: u64,
    tick: &(dyn Fn() + Sync),
) -> Result<Vec<Point>, DlError> {
    let mut pts = points();
    let jobs: Vec<(usize, usize)> = (0..pts.len())
        .flat_map(|p| (0..repeats).map(move |r| (p, r)))
        .collect();
    let results: Vec<((usize, usize), Result<f64, DlError>)> = jobs
        .par_iter()
        .map(|&(p, r)| {
            let auc = run_point(task, &pts[p], training, seed + r as u64);
            tick();
            ((p, r), auc)
        })
        .collect();
    for p in pts.iter_mut() {
        p.aucs = vec![f64::NAN; repeats];
    }
    for ((p, r), auc) in results {
        pts[p].aucs[r] = auc?;
    }
    let dim = Network::paper(task.x.ncols())?.parameter_count();
    for p in pts.iter_mut() {
        let settings = Settings {
            epsilon: p.epsilon,
            q: p.q,
            upload_ratio: p.upload_ratio,
            bound: training.bound,
            ternary: true,
            sparse: None,
        };
        p.spend = budget::spend(&settings, dim, training.iterations, 0.0)?
            .map(|s| (s.total_sound.epsilon, s.total_dissertation.epsilon));
    }
    Ok(pts)
}
