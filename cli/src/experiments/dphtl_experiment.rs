//! Figures 4.2-4.5 and Tables 4.2-4.3 in structure, on any rows labelled with their domain
//! ([`Domains::from_groups`]: 20NG or Amazon as feature files, for a user who has them), and by
//! default on a substitute setting built from the project's MNIST digits (20 Newsgroups and the Amazon reviews cannot be downloaded here, and
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

use privlogit::dp::DpError;
use privlogit::dp::dphtl::end_to_end::{self, Published, Settings, Source};
use privlogit::dp::mnist::Digits;
use privlogit::dp::scaling::RowScaling;
use privlogit::pca::Pca;

/// The sources' digit pairs.
pub const SOURCES: [[u8; 2]; 5] = [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]];
/// The mixtures of one data set's figures and table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mixtures {
    /// Figures 4.2 / 4.3: the hypothesis weights' MSE.
    pub weights: &'static [&'static [f64]],
    /// Tables 4.2 / 4.3: accuracy at 5 % labelled.
    pub table: &'static [&'static [f64]],
    /// Figures 4.4 / 4.5: accuracy against the labelled share.
    pub accuracy: &'static [f64],
}

/// 20NG's (5 sources): Figure 4.2, Table 4.3, Figure 4.4.
pub const TWENTY_NEWSGROUPS: Mixtures = Mixtures {
    weights: &[
        &FIGURE_4_2[0],
        &FIGURE_4_2[1],
        &FIGURE_4_2[2],
        &FIGURE_4_2[3],
    ],
    table: &[&TABLE_4_3[0], &TABLE_4_3[1], &TABLE_4_3[2]],
    accuracy: &FIGURE_4_4,
};

/// Amazon's (4 sources): Figure 4.3, Table 4.2, Figure 4.5.
pub const AMAZON: Mixtures = Mixtures {
    weights: &[
        &[0.75, 0.0, 0.25, 0.0],
        &[0.1, 0.2, 0.4, 0.3],
        &[0.0, 0.5, 0.5, 0.0],
        &[0.0, 0.2, 0.4, 0.4],
    ],
    table: &[&[0.25, 0.0, 0.75, 0.0], &[0.0, 0.5, 0.0, 0.5]],
    accuracy: &[0.0, 0.25, 0.0, 0.75],
};

impl Mixtures {
    /// The paper's mixtures for `k` sources (5: 20NG's, 4: Amazon's).
    pub fn for_sources(k: usize) -> Result<Self, DpError> {
        match k {
            5 => Ok(TWENTY_NEWSGROUPS),
            4 => Ok(AMAZON),
            _ => Err(DpError::new(
                "domains",
                k as f64,
                "the paper's mixtures are for 5 sources (20NG) or 4 (Amazon)",
            )),
        }
    }
}

/// Rows of several domains with a shared binary task: the experiment's input.
#[derive(Debug, Clone)]
pub struct Domains {
    /// Features, one row per example.
    pub x: Array2<f64>,
    /// 0/1 labels.
    pub y: Array1<f64>,
    /// The domain (source) of each row, `0..k`.
    pub domain: Vec<usize>,
    /// Domain names, in index order.
    pub names: Vec<String>,
}

impl Domains {
    /// The MNIST substitute: domain `k` is digit pair `SOURCES[k]`, the label "even digit?",
    /// pixels scaled to [0, 1].
    pub fn digit_pairs(digits: &Digits) -> Self {
        let keep: Vec<usize> = (0..digits.labels.len()).collect();
        Domains {
            x: digits.pixels.select(Axis(0), &keep),
            y: digits
                .labels
                .iter()
                .map(|l| f64::from(l.is_multiple_of(2)))
                .collect(),
            domain: digits.labels.iter().map(|l| usize::from(*l / 2)).collect(),
            names: SOURCES
                .iter()
                .map(|p| format!("digits {}-{}", p[0], p[1]))
                .collect(),
        }
    }

    /// A labelled table whose group column names each row's domain (e.g. 20NG or Amazon as
    /// feature files with a domain column); domains are numbered in sorted name order.
    pub fn from_groups(x: Array2<f64>, y: Array1<f64>, groups: &[String]) -> Self {
        let mut names: Vec<String> = groups.to_vec();
        names.sort();
        names.dedup();
        let domain = groups
            .iter()
            .map(|g| names.binary_search(g).expect("a listed name"))
            .collect();
        Domains {
            x,
            y,
            domain,
            names,
        }
    }
}

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

/// Builds the setting for `mixture` (one share per domain) from `data`, shuffled by `seed`.
pub fn setting(data: &Domains, mixture: &[f64], seed: u64) -> Result<Setting, DpError> {
    let k = data.names.len();
    if mixture.len() != k {
        return Err(DpError::new(
            "mixture",
            mixture.len() as f64,
            "needs one share per domain",
        ));
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut pools: Vec<Vec<usize>> = (0..k)
        .map(|d| {
            let mut rows: Vec<usize> = (0..data.domain.len())
                .filter(|&i| data.domain[i] == d)
                .collect();
            rows.shuffle(&mut rng);
            rows
        })
        .collect();
    let need = |n: usize, share: f64| (share * n as f64).round() as usize;
    let mut public_rows = Vec::new();
    let mut parts = Vec::new();
    let mut target_rows = Vec::new();
    let mut test_rows = Vec::new();
    for (d, pool) in pools.iter_mut().enumerate() {
        let (t, s) = (need(TARGET, mixture[d]), need(TEST, mixture[d]));
        if pool.len() < PUBLIC + LABELLED + UNLABELLED + t + s {
            return Err(DpError::new(
                "mixture share",
                mixture[d],
                "needs more rows of its domain than the data holds (public 200, labelled 500, unlabelled 500, then its share of 1,000 target and test rows)",
            ));
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
    let rows_of = |rows: &[usize]| data.x.select(Axis(0), rows);
    let labels = |rows: &[usize]| rows.iter().map(|&i| data.y[i]).collect::<Array1<f64>>();
    let dims = PCA_DIMS.min(data.x.ncols());
    let pca = Pca::fit(rows_of(&public_rows).view(), dims)
        .map_err(|_| DpError::new("PCA", dims as f64, "the eigendecomposition failed"))?;
    let features = |rows: &[usize]| {
        RowScaling::Normalize.apply(pca.transform(rows_of(rows).view()).view(), 1.0)
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
        .map(|src| end_to_end::publish(src, setting.public.view(), &s, &mut rng))
        .collect()
}

/// Squared error of the hypothesis weights against the mixture (mean over sources).
pub fn weight_mse(
    setting: &Setting,
    published: &[Published],
    mixture: &[f64],
) -> Result<f64, DpError> {
    let s = settings(None);
    let fitted = end_to_end::fit_target(
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
        / mixture.len() as f64)
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
        end_to_end::accuracy(theta, setting.test_x.view(), setting.test_y.view())
    };
    let weak = end_to_end::plain(xl, yl, s.lambda_lr)?;
    let source = published
        .iter()
        .map(|p| acc(&p.hypothesis))
        .fold(0.0, f64::max);
    let average = end_to_end::average(published, xl, yl, &s)?;
    let soft = end_to_end::soft(published, xl, yl, unlabelled, s.lambda_lr)?;
    let dphtl = end_to_end::fit_target(
        published,
        setting.public.view(),
        setting.target_x.view(),
        xl,
        yl,
        &s,
    )?
    .theta;
    let target = end_to_end::plain(
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
