//! Figures 4.2-4.5 and Tables 4.2-4.3 in structure, on a substitute setting built from the
//! project's MNIST digits (20 Newsgroups and the Amazon reviews cannot be downloaded here, and
//! no package on the registries this machine reaches ships them).
//!
//! The setting mirrors 20NG's (section 4.4.1): 5 source domains, each a pair of digit classes
//! ({0,1}, {2,3}, {4,5}, {6,7}, {8,9}) with the shared task "even digit?" (as 20NG's sources
//! pair topics under the shared task "computer-related?"), so every source solves the same task
//! on different inputs. Per repeat (reshuffled), each source gives 200 rows to the public set
//! (an even mixture, 1,000 rows), 500 labelled and 500 unlabelled rows of its own, and the rest
//! to the target pool; the target (800 rows) and its test set (200) are drawn from the pool in
//! the mixture's proportions. Features: PCA to 50 dimensions fitted on the public set (public,
//! so no privacy cost), each row then scaled to norm 1. `lambda_IW = 0.001` (the paper's),
//! `lambda_LR = 0.01`, prior sd floor 0.1, fixed for every method and point.

use ndarray::{Array1, Array2, Axis};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use super::transfer::{self, Published, Settings, Source};
use crate::dp::DpError;
use crate::dp::mnist::Digits;
use crate::dp::scaling::RowScaling;
use crate::pca::Pca;

/// The sources' digit pairs.
pub const SOURCES: [[u8; 2]; 5] = [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]];
/// Figure 4.2's mixtures (20NG).
pub const FIGURE_4_2: [[f64; 5]; 4] = [
    [0.2, 0.0, 0.4, 0.0, 0.4],
    [0.2, 0.2, 0.2, 0.2, 0.2],
    [0.2, 0.0, 0.0, 0.8, 0.0],
    [0.0, 0.0, 0.6, 0.0, 0.4],
];
/// Table 4.3's mixtures (20NG).
pub const TABLE_4_3: [[f64; 5]; 3] = [
    [0.0, 0.6, 0.2, 0.0, 0.2],
    [0.5, 0.0, 0.0, 0.5, 0.0],
    [0.2, 0.0, 0.3, 0.3, 0.2],
];
/// Figure 4.4's mixture: 60 % source 1, 40 % source 4.
pub const FIGURE_4_4: [f64; 5] = [0.6, 0.0, 0.0, 0.4, 0.0];

/// Rows per source for the public set, labelled, unlabelled; target and test sizes.
const PUBLIC: usize = 200;
const LABELLED: usize = 500;
const UNLABELLED: usize = 500;
const TARGET: usize = 800;
const TEST: usize = 200;
const PCA_DIMS: usize = 20;

/// The experiment's fixed settings at `epsilon`.
pub fn settings(epsilon: Option<f64>) -> Settings {
    Settings {
        epsilon,
        lambda_iw: 0.05,
        lambda_lr: 0.05,
        sd_floor: 0.1,
    }
}

/// One repeat's data: sources, public set, target (labelled share first) and test rows.
#[derive(Debug, Clone)]
pub struct Setting {
    /// The sources.
    pub sources: Vec<Source>,
    /// The public rows.
    pub public: Array2<f64>,
    /// The target's rows and labels.
    pub target_x: Array2<f64>,
    /// Labels of the target rows.
    pub target_y: Array1<f64>,
    /// Test rows.
    pub test_x: Array2<f64>,
    /// Test labels.
    pub test_y: Array1<f64>,
}

/// Builds the setting for `mixture` from `digits`, shuffled by `seed`.
pub fn setting(digits: &Digits, mixture: &[f64; 5], seed: u64) -> Result<Setting, DpError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut pools: Vec<Vec<usize>> = SOURCES
        .iter()
        .map(|pair| {
            let mut rows: Vec<usize> = (0..digits.labels.len())
                .filter(|&i| pair.contains(&digits.labels[i]))
                .collect();
            rows.shuffle(&mut rng);
            rows
        })
        .collect();
    let need = |k: usize, share: f64| (share * k as f64).round() as usize;
    let mut public_rows = Vec::new();
    let mut parts = Vec::new();
    let mut target_rows = Vec::new();
    let mut test_rows = Vec::new();
    for (k, pool) in pools.iter_mut().enumerate() {
        let (t, s) = (need(TARGET, mixture[k]), need(TEST, mixture[k]));
        if pool.len() < PUBLIC + LABELLED + UNLABELLED + t + s {
            return Err(DpError {
                name: "mixture share",
                value: mixture[k],
                reason: "needs more rows of its source than the digits file holds",
            });
        }
        public_rows.extend_from_slice(&pool[..PUBLIC]);
        let labelled = pool[PUBLIC..PUBLIC + LABELLED].to_vec();
        let unlabelled = pool[PUBLIC + LABELLED..PUBLIC + LABELLED + UNLABELLED].to_vec();
        let rest = &pool[PUBLIC + LABELLED + UNLABELLED..];
        target_rows.extend_from_slice(&rest[..t]);
        test_rows.extend_from_slice(&rest[t..t + s]);
        parts.push((labelled, unlabelled));
    }
    target_rows.shuffle(&mut rng);
    let pixels = |rows: &[usize]| digits.pixels.select(Axis(0), rows);
    let labels = |rows: &[usize]| {
        rows.iter()
            .map(|&i| f64::from(digits.labels[i].is_multiple_of(2)))
            .collect::<Array1<f64>>()
    };
    let pca = Pca::fit(pixels(&public_rows).view(), PCA_DIMS).map_err(|_| DpError {
        name: "PCA",
        value: PCA_DIMS as f64,
        reason: "the eigendecomposition failed",
    })?;
    let features = |rows: &[usize]| {
        RowScaling::Normalize.apply(pca.transform(pixels(rows).view()).view(), 1.0)
    };
    Ok(Setting {
        sources: parts
            .iter()
            .map(|(l, u)| Source {
                x: features(l),
                y: labels(l),
                unlabelled: features(u),
            })
            .collect(),
        public: features(&public_rows),
        target_x: features(&target_rows),
        target_y: labels(&target_rows),
        test_x: features(&test_rows),
        test_y: labels(&test_rows),
    })
}

/// The sources' publications at `epsilon` (seeded by `seed`).
pub fn publish(
    setting: &Setting,
    epsilon: Option<f64>,
    seed: u64,
) -> Result<Vec<Published>, DpError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(1);
    let s = settings(epsilon);
    setting
        .sources
        .iter()
        .map(|src| transfer::publish(src, setting.public.view(), &s, &mut rng))
        .collect()
}

/// Squared error of the hypothesis weights against the mixture (mean over sources).
pub fn weight_mse(
    setting: &Setting,
    published: &[Published],
    mixture: &[f64; 5],
) -> Result<f64, DpError> {
    let s = settings(None);
    let fitted = transfer::fit_target(
        published,
        setting.public.view(),
        setting.target_x.view(),
        setting.target_x.view(),
        setting.target_y.view(),
        &s,
    )?;
    Ok(fitted
        .hypothesis_weights
        .weights
        .iter()
        .zip(mixture)
        .map(|(w, m)| (w - m).powi(2))
        .sum::<f64>()
        / 5.0)
}

/// Methods of section 4.4.3, in the tables' order.
pub const METHODS: [&str; 6] = ["WEAK", "SOURCE", "AVERAGE", "SOFT", "DPHTL", "TARGET"];

/// Test accuracy of every method with `labelled` of the target's rows labelled.
pub fn accuracies(
    setting: &Setting,
    published: &[Published],
    epsilon: Option<f64>,
    labelled: f64,
) -> Result<[f64; 6], DpError> {
    let s = settings(epsilon);
    let n = ((labelled * setting.target_x.nrows() as f64).round() as usize).max(2);
    let (xl, yl) = (
        setting.target_x.slice(ndarray::s![..n, ..]),
        setting.target_y.slice(ndarray::s![..n]),
    );
    let unlabelled = setting.target_x.slice(ndarray::s![n.., ..]);
    let acc = |theta: &Array1<f64>| {
        transfer::accuracy(theta, setting.test_x.view(), setting.test_y.view())
    };
    let weak = transfer::plain(xl, yl, s.lambda_lr)?;
    let source = published
        .iter()
        .map(|p| acc(&p.hypothesis))
        .fold(0.0, f64::max);
    let average = transfer::average(published, xl, yl, &s)?;
    let soft = transfer::soft(published, xl, yl, unlabelled, s.lambda_lr)?;
    let dphtl = transfer::fit_target(
        published,
        setting.public.view(),
        setting.target_x.view(),
        xl,
        yl,
        &s,
    )?
    .theta;
    let target = transfer::plain(
        setting.target_x.view(),
        setting.target_y.view(),
        s.lambda_lr,
    )?;
    Ok([
        acc(&weak),
        source,
        acc(&average),
        acc(&soft),
        acc(&dphtl),
        acc(&target),
    ])
}

/// A summary cell: mean and standard deviation over repeats.
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = if v.len() < 2 {
        0.0
    } else {
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    };
    (m, sd)
}

/// Runs `f` for every `(item, repeat)` in parallel and collects per item.
pub fn over_repeats<T: Sync, R: Send>(
    items: &[T],
    repeats: usize,
    f: impl Fn(&T, usize) -> Result<R, DpError> + Sync,
) -> Result<Vec<Vec<R>>, DpError> {
    let jobs: Vec<(usize, usize)> = (0..items.len())
        .flat_map(|i| (0..repeats).map(move |r| (i, r)))
        .collect();
    let results: Vec<(usize, Result<R, DpError>)> = jobs
        .par_iter()
        .map(|&(i, r)| (i, f(&items[i], r)))
        .collect();
    let mut out: Vec<Vec<R>> = (0..items.len()).map(|_| Vec::new()).collect();
    for (i, r) in results {
        out[i].push(r?);
    }
    Ok(out)
}
