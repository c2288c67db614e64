//! Differential privacy: PLR against numpy references, PCA against numpy's eigh, parameter
//! validation, and the experiments end to end on a small scale.

use crate::common;

use ndarray::{Array1, Array2, Axis};
use privlogit::dp::feature_split::{self, FeatureSplit};
use privlogit::dp::mnist::Digits;
use privlogit::dp::noise::Randomness;
use privlogit::dp::plr::{self, Privacy};
use privlogit::dp::scaling::RowScaling;
use privlogit::dp::stacking::{self, Combiner, StackingSettings};
use privlogit::dp::transfer::{self, Labelled, TransferSettings};
use privlogit::pca::{self, Pca};
use privlogit_cli::experiments::dp_papers::{
    self as experiment, ExperimentSettings, Paper, Selection,
};

fn breast_cancer() -> (Array2<f64>, Array1<f64>) {
    let d = common::load_shared("breast_cancer.csv");
    (d.x, d.y)
}

/// With the noise off, PLR is non-private l2 logistic regression on unit-norm rows. Reference:
/// `python3 tests/reference/plr_reference.py` (numpy Newton to gradient norm 1e-14):
/// lambda = 0.01, first coefficients 0.14513413129766636, 0.2785541866555953,
/// 0.8890054686991179, 1.5318932368742728, norm 2.1747594869830063; with the transfer centre
/// c = 0.1 (w_src = 0.2, eta = 0.5): 0.24203735571603296, 0.37318369212057795,
/// 0.969132886157315, 1.5286477470619018, norm 2.3337166263847373. Tolerance 1e-8 (the issue's).
#[test]
fn plr_without_noise_is_l2_logistic_regression() {
    let (x, y) = breast_cancer();
    let mut rng = Randomness::Seeded(1).rng();
    let m = plr::fit(
        x.view(),
        y.view(),
        Privacy::Off,
        0.01,
        RowScaling::Normalize,
        None,
        &mut rng,
    )
    .expect("fits");
    let want = [
        0.14513413129766636,
        0.2785541866555953,
        0.8890054686991179,
        1.5318932368742728,
    ];
    for (got, want) in m.w.iter().zip(want) {
        assert!((got - want).abs() < 1e-8, "{got} vs {want}");
    }
    assert!((m.w.dot(&m.w).sqrt() - 2.1747594869830063).abs() < 1e-8);
    // Output perturbation with the noise off is the same minimiser.
    let o = privlogit::dp::output_perturbation::fit(
        x.view(),
        y.view(),
        Privacy::Off,
        0.01,
        RowScaling::Normalize,
        &mut rng,
    )
    .expect("fits");
    assert!((&o.w - &m.w).iter().all(|d| d.abs() < 1e-12));
    // The transfer regulariser eta/2 ||w||^2 + (1 - eta)/2 ||w - w_src||^2, via SimComb's target step.
    let w_src = Array1::from_elem(x.ncols(), 0.2);
    let centre = &w_src * 0.5;
    let t = plr::fit(
        x.view(),
        y.view(),
        Privacy::Off,
        0.01,
        RowScaling::Normalize,
        Some(&centre),
        &mut rng,
    )
    .expect("fits");
    let want = [
        0.24203735571603296,
        0.37318369212057795,
        0.969132886157315,
        1.5286477470619018,
    ];
    for (got, want) in t.w.iter().zip(want) {
        assert!((got - want).abs() < 1e-8, "{got} vs {want}");
    }
    assert!((t.w.dot(&t.w).sqrt() - 2.3337166263847373).abs() < 1e-8);
}

/// The noise shrinks as epsilon grows: at eps = 1e6 the model is within the noise's reach of
/// the non-private one (E||b|| = 2d/eps' = 6e-5, so ||w - w*|| <= ||b||/(n lambda) ~ 1e-5),
/// and at eps = 0.1 it is far from it.
#[test]
fn noise_scale_follows_epsilon() {
    let (x, y) = breast_cancer();
    let mut rng = Randomness::Seeded(7).rng();
    let fit = |p, rng: &mut _| {
        plr::fit(
            x.view(),
            y.view(),
            p,
            0.01,
            RowScaling::Normalize,
            None,
            rng,
        )
        .expect("fits")
        .w
    };
    let reference = fit(Privacy::Off, &mut rng);
    let close = fit(Privacy::Epsilon(1e6), &mut rng);
    let far = fit(Privacy::Epsilon(0.1), &mut rng);
    let dist = |w: &Array1<f64>| (w - &reference).mapv(|d| d * d).sum().sqrt();
    assert!(dist(&close) < 1e-3, "{}", dist(&close));
    assert!(dist(&far) > 0.1, "{}", dist(&far));
}

/// PCA of breast_cancer's covariance against numpy (`np.linalg.eigh(np.cov(X, rowvar=False))`,
/// largest first): 443782.6051465959, 7310.100061653082, 703.8337420062828,
/// 54.64873786521713, 39.890017787272065. Relative tolerance 1e-9: the smallest of these is
/// 1e-4 of the largest, and a backward-stable solver's error is about 1e-16 times the largest.
/// numpy's first component (same command, `v[:, -1]` signed so its largest-magnitude entry is
/// positive) starts 0.005086232018734081, 0.0021965702606348003, 0.03507632977831098; absolute
/// tolerance 1e-10 (the eigengap is 0.98 of the largest eigenvalue, so the vector is as
/// accurate as the eigenvalue)..
#[test]
fn pca_matches_numpy_eigh() {
    let (x, _) = breast_cancer();
    let want = [
        443782.6051465959,
        7310.100061653082,
        703.8337420062828,
        54.64873786521713,
        39.890017787272065,
    ];
    let p = Pca::fit(x.view(), 5).expect("finite");
    assert!(p.residual < 1e-12, "{}", p.residual);
    for (i, w) in want.iter().enumerate() {
        assert!(
            (p.variances[i] - w).abs() / w < 1e-9,
            "{i}: {}",
            p.variances[i]
        );
    }
    for (i, w) in [
        0.005086232018734081,
        0.0021965702606348003,
        0.03507632977831098,
    ]
    .iter()
    .enumerate()
    {
        assert!(
            (p.components[[i, 0]] - w).abs() < 1e-10,
            "{i}: {}",
            p.components[[i, 0]]
        );
    }
    // Orthonormal components, and the projected data's variance is the eigenvalue.
    let gram = p.components.t().dot(&p.components);
    assert!(
        (&gram - &Array2::<f64>::eye(5))
            .iter()
            .all(|d| d.abs() < 1e-10)
    );
    let z = p.transform(x.view());
    let var0 = z.column(0).mapv(|v| v * v).sum() / (x.nrows() as f64 - 1.0);
    assert!((var0 - want[0]).abs() / want[0] < 1e-9);
}

/// Two eigenvalues that tie, and a non-finite matrix refused by name.
#[test]
fn eigen_handles_ties_and_refuses_non_finite() {
    let a = Array2::from_diag(&ndarray::arr1(&[2.0, 5.0, 5.0, 1.0]));
    let (values, vectors) = pca::leading_eigen(&a, 3).expect("finite");
    assert_eq!(values.to_vec(), vec![5.0, 5.0, 2.0]);
    let gram = vectors.t().dot(&vectors);
    assert!(
        (&gram - &Array2::<f64>::eye(3))
            .iter()
            .all(|d| d.abs() < 1e-14)
    );
    assert!((vectors[[0, 2]] - 1.0).abs() < 1e-14, "sign convention");
    let mut bad = a.clone();
    bad[[1, 0]] = f64::NAN;
    assert!(pca::leading_eigen(&bad, 1).is_err());
}

#[test]
fn every_parameter_is_refused_by_name_before_work() {
    let (x, y) = breast_cancer();
    let mut rng = Randomness::Seeded(1).rng();
    fn name<T>(r: Result<T, privlogit::dp::DpError>) -> &'static str {
        r.map(|_| ()).expect_err("refused").name
    }
    let s = |privacy, lambda, low_fraction| StackingSettings {
        privacy,
        lambda,
        combiner: Combiner::Stacking { lambda: 0.01 },
        low_fraction,
        scaling: RowScaling::Normalize,
    };
    let plr_fit = |privacy, lambda, rng: &mut _| {
        plr::fit(
            x.view(),
            y.view(),
            privacy,
            lambda,
            RowScaling::Normalize,
            None,
            rng,
        )
    };
    assert_eq!(
        name(plr_fit(Privacy::Epsilon(-1.0), 0.1, &mut rng)),
        "epsilon"
    );
    assert_eq!(
        name(plr_fit(Privacy::Epsilon(f64::INFINITY), 0.1, &mut rng)),
        "epsilon"
    );
    assert_eq!(
        name(plr_fit(Privacy::Epsilon(1.0), 0.0, &mut rng)),
        "lambda"
    );
    assert_eq!(
        name(stacking::pst_s(
            x.view(),
            y.view(),
            0,
            &s(Privacy::Epsilon(1.0), 0.1, 0.5),
            &mut rng
        )),
        "K"
    );
    assert_eq!(
        name(stacking::pst_s(
            x.view(),
            y.view(),
            3,
            &s(Privacy::Epsilon(1.0), 0.1, 1.0),
            &mut rng
        )),
        "low fraction"
    );
    assert_eq!(name(FeatureSplit::random(30, 31, &mut rng)), "K");
    assert_eq!(
        name(FeatureSplit::new(
            vec![(0..15).collect(), (15..30).collect()],
            vec![0.7, 0.2],
            30
        )),
        "sum of q_k"
    );
    let t = TransferSettings {
        source: Privacy::Epsilon(1.0),
        target: Privacy::Epsilon(1.0),
        lambda_source: 0.1,
        lambda_target: 0.1,
        eta: 1.5,
        mu: 0.1,
        low_fraction: 0.5,
        scaling: RowScaling::Normalize,
    };
    let l = Labelled {
        x: x.view(),
        y: y.view(),
    };
    assert_eq!(name(transfer::simcomb(l, l, &t, &mut rng)), "eta");
    let mut settings = ExperimentSettings::papers(1);
    settings.k = 101;
    assert_eq!(name(settings.validate()), "K");
}

/// Every method runs on breast_cancer, and with a generous budget each ranks test rows well
/// (AUC > 0.9; non-private l2 logistic regression reaches 0.99 here). The columns are
/// standardised first: the models have no intercept (as in the papers), so on all-positive raw
/// features every low-level model can sit on one side of 0.5 and the votes tie.
#[test]
fn every_method_fits_and_predicts() {
    let (x, y) = breast_cancer();
    let x = (&x - &x.mean_axis(Axis(0)).expect("rows")) / &x.std_axis(Axis(0), 0.0);
    let (train, test): (Vec<usize>, Vec<usize>) = (0..x.nrows()).partition(|i| i % 4 != 0);
    let (xt, yt) = (x.select(Axis(0), &train), y.select(Axis(0), &train));
    let (xv, yv) = (x.select(Axis(0), &test), y.select(Axis(0), &test));
    let mut rng = Randomness::Seeded(3).rng();
    let privacy = Privacy::Epsilon(50.0);
    let auc = |s: Array1<f64>| privlogit::metrics::auc(s.view(), yv.view()).expect("two classes");
    let split =
        FeatureSplit::by_importance(&(0..30).map(|i| 30.0 - i as f64).collect::<Vec<_>>(), 3)
            .expect("valid");
    for combiner in [
        Combiner::Stacking { lambda: 1e-3 },
        Combiner::MajorityVote,
        Combiner::WeightedVote,
    ] {
        let s = StackingSettings {
            privacy,
            lambda: 1e-3,
            combiner,
            low_fraction: 0.5,
            scaling: RowScaling::Normalize,
        };
        let pst_s = stacking::pst_s(xt.view(), yt.view(), 3, &s, &mut rng).expect("fits");
        let pst_f =
            stacking::pst_f(xt.view(), yt.view(), &split, None, &s, &mut rng).expect("fits");
        assert!(auc(pst_s.scores(xv.view())) > 0.9, "{combiner:?}");
        assert!(auc(pst_f.scores(xv.view())) > 0.9, "{combiner:?}");
    }
    let fs = feature_split::plr_fs(
        xt.view(),
        yt.view(),
        &split,
        privacy,
        &[1e-3; 3],
        None,
        RowScaling::Normalize,
        &mut rng,
    )
    .expect("fits");
    assert_eq!(fs.group_probabilities(xv.view()).dim(), (xv.nrows(), 3));
    let t = TransferSettings {
        source: privacy,
        target: privacy,
        lambda_source: 1e-3,
        lambda_target: 1e-3,
        eta: 0.5,
        mu: 1e-3,
        low_fraction: 0.5,
        scaling: RowScaling::Normalize,
    };
    let (src, tgt) = (
        Labelled {
            x: xt.view(),
            y: yt.view(),
        },
        Labelled {
            x: xt.view(),
            y: yt.view(),
        },
    );
    let sc = transfer::simcomb(src, tgt, &t, &mut rng).expect("fits");
    assert!(auc(sc.target.probabilities(xv.view())) > 0.9);
    let pp = transfer::pptl_fs(src, tgt, &split, &t, &mut rng).expect("fits");
    assert!(auc(pp.target.scores(xv.view())) > 0.9);
}

/// A group of importance zero sees nothing and contributes 0.5 (Remark 1).
#[test]
fn zero_importance_group_says_nothing() {
    let (x, y) = breast_cancer();
    let split = FeatureSplit::new(
        vec![(0..20).collect(), (20..30).collect()],
        vec![1.0, 0.0],
        30,
    )
    .expect("valid");
    let mut rng = Randomness::Seeded(5).rng();
    let m = feature_split::plr_fs(
        x.view(),
        y.view(),
        &split,
        Privacy::Epsilon(1.0),
        &[0.01; 2],
        None,
        RowScaling::Normalize,
        &mut rng,
    )
    .expect("fits");
    let p = m.group_probabilities(x.view());
    assert!(p.column(1).iter().all(|&v| v == 0.5));
    assert_eq!(m.models[1].w, Array1::<f64>::zeros(10));
}

/// Both experiments end to end on one repeat and two budgets: every cell is an AUC, and the
/// non-private PLR separates 0 from 8 (AUC > 0.99: the classes are nearly separable in 100 PCA
/// dimensions, see README).
#[test]
fn experiments_run_end_to_end() {
    let digits = Digits::load(&common::shared_data("mnist_digits.csv")).expect("loads");
    assert_eq!(digits.pixels.dim(), (10_000, 784));
    assert_eq!(digits.rows_of(8).len(), 944);
    let settings = ExperimentSettings {
        repeats: 1,
        epsilons: vec![Privacy::Epsilon(1.0), Privacy::Off],
        ..ExperimentSettings::papers(11)
    };
    let s = experiment::run(Paper::Stacking, &digits, &settings, &|| {}).expect("runs");
    assert_eq!(s.outcomes.len(), 5 * 2);
    assert!(s.outcomes.iter().all(|o| (0.0..=1.0).contains(&o.mean())));
    assert!(s.get("PLR", f64::INFINITY).expect("cell").mean() > 0.99);
    let csv = s.csv();
    assert!(csv.starts_with("experiment,method,epsilon,mean_auc,sd_auc,repeats\n"));
    assert!(csv.contains("stacking,PST-F(W),inf,"));
    // What tuning and refitting cost (issue 14): PLR and output perturbation 4 settings x 3
    // draws + 1 refit = 13 fits; stacking 12 settings x 3 + 1 = 37; 137 in all, at epsilon 1
    // (the only finite budget) in the one repeat.
    let spend = s.spend_csv();
    for line in [
        "stacking,PLR,digits 0 and 8,13,13,13",
        "stacking,PST-S,digits 0 and 8,37,37,37",
        "stacking,all methods,digits 0 and 8,137,137,137",
    ] {
        assert!(spend.contains(line), "{line}\n{spend}");
    }
    let winners = experiment::run(
        Paper::Stacking,
        &digits,
        &ExperimentSettings {
            epsilons: vec![Privacy::Epsilon(1.0)],
            selection: Selection::Winner,
            ..settings.clone()
        },
        &|| {},
    )
    .expect("runs");
    assert_eq!(winners.outcomes.len(), 5);
    assert!(winners.repeats_csv().contains(",lambda="));
    let settings = ExperimentSettings {
        epsilons: vec![Privacy::Epsilon(2.0)],
        ..settings
    };
    let t = experiment::run(Paper::Transfer, &digits, &settings, &|| {}).expect("runs");
    assert_eq!(t.outcomes.len(), 5);
    // PPTL-FS: 24 settings x 3 folds + 1 refit read the source 73 times, a target record 24 x 2
    // + 1 = 49 times (it is in 2 of 3 folds); SimComb 8 settings: 25 and 17; SourceD 4
    // settings: the source 13 times; Direct: a target record 9 times. At epsilon 2.
    let spend = t.spend_csv();
    for line in [
        "transfer,PPTL-FS(W),target,49,98,98",
        "transfer,PPTL-FS(W),source,73,146,146",
        "transfer,SimComb,source,25,50,50",
        "transfer,SourceD,target,0,0,0",
        "transfer,Direct,target,9,18,18",
        "transfer,all methods,source,184,368,368",
    ] {
        assert!(spend.contains(line), "{line}\n{spend}");
    }
}

#[test]
fn digits_file_errors_name_line_and_column() {
    let dir = std::env::temp_dir().join(format!("privlogit-digits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("d.csv");
    std::fs::write(&path, "label,px0,px1\n3,0,255\n4,12,x7\n").expect("write");
    let e = Digits::load(&path).expect_err("bad cell").to_string();
    assert!(
        e.ends_with("d.csv:3:6: \"x7\" in column \"px1\" is not a finite number"),
        "{e}"
    );
    std::fs::write(&path, "label,px0,px1\n3,0,256\n").expect("write");
    let e = Digits::load(&path).expect_err("bad pixel").to_string();
    assert!(
        e.contains("d.csv:2:5: \"256\" in column \"px1\" is outside 0-255"),
        "{e}"
    );
    std::fs::write(&path, "label,px0,px1\n3,0\n").expect("write");
    let e = Digits::load(&path).expect_err("short row").to_string();
    assert!(e.contains("d.csv:2:"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
