//! DPHTL (issue 17, dissertation ch. 4): DPIW against scipy without noise, eq. (4.1) against
//! scipy's SLSQP, the MAP fit against numpy's l2 logistic regression and against a pinned
//! prior, the hypothesis weights recovering a known mixture, and DPIW's noise reconstructed from
//! released weights (KS test).

use ndarray::{Array1, Array2, Axis, array, concatenate};
use privlogit::dp::dphtl::{dpiw, mixture, prior};
use privlogit::dp::scaling::RowScaling;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_distr::{Distribution, Normal};

use crate::common;

fn reference() -> serde_json::Value {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("tests/reference/dphtl_reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("reference")).expect("JSON")
}

fn floats(v: &serde_json::Value) -> Array1<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// breast_cancer standardised (pooled mean, ddof 0), rows scaled to norm 1, as the reference.
fn scaled_breast_cancer() -> (Array2<f64>, Array1<f64>) {
    let d = common::load_shared("breast_cancer.csv");
    let mean = d.x.mean_axis(Axis(0)).expect("rows");
    let sd = d.x.std_axis(Axis(0), 0.0);
    let x = (&d.x - &mean) / &sd;
    (RowScaling::Normalize.apply(x.view(), 1.0), d.y)
}

/// Acceptance: with epsilon = infinity DPIW's weights equal the non-private density-ratio
/// estimate of eq. (4.3), here scipy's trust-exact minimiser (gradient norm 2e-12 at its
/// solution, so beta to about 2e-10: tolerance 1e-8 relative on the weights).
#[test]
fn dpiw_without_noise_equals_scipys_density_ratio_estimate() {
    let r = reference();
    let (x, y) = scaled_breast_cancer();
    let positives: Vec<usize> = (0..y.len()).filter(|&i| y[i] == 1.0).take(150).collect();
    let private = x.select(Axis(0), &positives);
    let public = x.slice(ndarray::s![300..500, ..]).to_owned();
    let lambda = r["dpiw"]["lambda"].as_f64().expect("lambda");
    let got = dpiw::dpiw(
        private.view(),
        public.view(),
        None,
        lambda,
        &mut rand::rng(),
    )
    .expect("fits");
    let want = floats(&r["dpiw"]["weights"]);
    let worst = got
        .weights
        .iter()
        .zip(&want)
        .map(|(g, w)| ((g - w) / w).abs())
        .fold(0.0, f64::max);
    eprintln!("DPIW (eps = inf) vs scipy: max relative diff of the weights {worst:.2e}");
    assert!(worst <= 1e-8, "{worst:e}");
    assert!((got.weights.sum() - public.nrows() as f64).abs() < 1e-9);
}

/// Eq. (4.1) by our exact solver against scipy's SLSQP on seeded random weights: ours is at
/// least as good (KL within 1e-12 of scipy's or lower) and the points agree to 1e-5 (SLSQP's
/// own tolerance).
#[test]
fn hypothesis_weights_match_a_generic_optimiser() {
    let r = reference();
    let sources: Vec<Array1<f64>> = r["mixture"]["sources"]
        .as_array()
        .expect("rows")
        .iter()
        .map(floats)
        .collect();
    let target = floats(&r["mixture"]["target"]);
    let views: Vec<_> = sources.iter().map(|s| s.view()).collect();
    let got = mixture::hypothesis_weights(target.view(), &views).expect("solves");
    let ours = mixture::kl(target.view(), &views, got.weights.view());
    let theirs = r["mixture"]["kl"].as_f64().expect("kl");
    let want = floats(&r["mixture"]["weights"]);
    let gap = got
        .weights
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max);
    eprintln!(
        "eq. 4.1: KL ours {ours:.15} scipy {theirs:.15}, max weight diff {gap:.2e}, KKT residual {:.1e}",
        got.kkt_residual
    );
    assert!(ours <= theirs + 1e-12);
    assert!(gap <= 1e-5, "{gap:e}");
}

/// Acceptance: the MAP fit with a zero-mean prior of variance 1/lambda is l2 logistic regression
/// (sum of log-likelihoods, penalty lambda/2 ||beta||^2): numpy's Newton reference on
/// breast_cancer (tests/reference/newton_reference.py, lambda = 1, standardised with an
/// intercept), to 1e-8.
#[test]
fn map_with_a_zero_mean_prior_is_l2_logistic_regression() {
    let (names, want) = common::reference("breast_cancer.csv");
    let d = common::load_shared("breast_cancer.csv");
    let mean = d.x.mean_axis(Axis(0)).expect("rows");
    let sd = d.x.std_axis(Axis(0), 0.0);
    let z = (&d.x - &mean) / &sd;
    let x = concatenate(Axis(1), &[Array2::ones((z.nrows(), 1)).view(), z.view()]).expect("widths");
    assert_eq!(names.len(), x.ncols());
    let flat = prior::GaussianPrior {
        mean: Array1::zeros(x.ncols()),
        sd: Array1::from_elem(x.ncols(), 1.0),
    };
    let got = prior::map_fit(x.view(), d.y.view(), &flat).expect("fits");
    let diff = common::max_abs_diff(&got, &want);
    eprintln!("MAP (mu 0, sigma 1) vs numpy l2 logistic regression: {diff:.2e}");
    assert!(diff <= 1e-8, "{diff:e}");
}

/// Acceptance: a prior centred on the truth with tiny variance returns the prior mean.
#[test]
fn a_tight_prior_returns_its_mean() {
    let (x, y) = scaled_breast_cancer();
    let truth: Array1<f64> = (0..x.ncols())
        .map(|j| (j as f64 * 0.37).sin() * 3.0)
        .collect();
    let tight = prior::GaussianPrior {
        mean: truth.clone(),
        sd: Array1::from_elem(x.ncols(), 1e-6),
    };
    let got = prior::map_fit(x.view(), y.view(), &tight).expect("fits");
    let diff = common::max_abs_diff(&got, &truth);
    // The likelihood's gradient (at most 569 here) moves the mode by at most 569 * 1e-12.
    assert!(diff <= 1e-9, "{diff:e}");
    let spread = prior::prior(
        &[array![1.0, 2.0], array![3.0, 2.0]],
        array![0.5, 0.5].view(),
        1e-3,
    )
    .expect("prior");
    // eq. (4.2): mu = (2, 2), sigma(0) = sqrt(2 * 0.5 * (1 + 1)) = sqrt(2), sigma(1) floored.
    assert!((spread.sd[0] - 2f64.sqrt()).abs() < 1e-15 && spread.sd[1] == 1e-3);
}

/// Five simulated domains: Gaussian clouds in 8 dimensions around well-separated centres, the
/// public set an even mixture, the target the mixture [0.2, 0, 0.4, 0, 0.4]; rows scaled to
/// norm 1. Without noise the hypothesis weights recover it to 0.02 (acceptance).
#[test]
fn hypothesis_weights_recover_a_known_mixture() {
    let mut rng = ChaCha20Rng::seed_from_u64(2018);
    let d = 8;
    let noise = Normal::new(0.0, 0.6).expect("valid");
    let centre = |k: usize| -> Array1<f64> {
        (0..d)
            .map(|j| {
                if j == k {
                    3.0
                } else if j == 5 + k % 3 {
                    1.0
                } else {
                    0.0
                }
            })
            .collect()
    };
    let mut draw = |k: usize, n: usize| -> Array2<f64> {
        let c = centre(k);
        let mut x = Array2::zeros((n, d));
        for mut row in x.rows_mut() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = c[j] + noise.sample(&mut rng);
            }
        }
        RowScaling::Normalize.apply(x.view(), 1.0)
    };
    let truth = [0.2, 0.0, 0.4, 0.0, 0.4];
    let sources: Vec<Array2<f64>> = (0..5).map(|k| draw(k, 3000)).collect();
    let public = concatenate(
        Axis(0),
        &(0..5)
            .map(|k| draw(k, 600))
            .collect::<Vec<_>>()
            .iter()
            .map(|a| a.view())
            .collect::<Vec<_>>(),
    )
    .expect("rows");
    let target_parts: Vec<Array2<f64>> = truth
        .iter()
        .enumerate()
        .filter(|(_, t)| **t > 0.0)
        .map(|(k, t)| draw(k, (t * 3000.0) as usize))
        .collect();
    let target = concatenate(
        Axis(0),
        &target_parts.iter().map(|a| a.view()).collect::<Vec<_>>(),
    )
    .expect("rows");
    let lambda = 1e-3;
    let weights: Vec<Array1<f64>> = sources
        .iter()
        .map(|s| {
            dpiw::dpiw(s.view(), public.view(), None, lambda, &mut rand::rng())
                .expect("fits")
                .weights
        })
        .collect();
    let own = dpiw::dpiw(target.view(), public.view(), None, lambda, &mut rand::rng())
        .expect("fits")
        .weights;
    let views: Vec<_> = weights.iter().map(|w| w.view()).collect();
    let got = mixture::hypothesis_weights(own.view(), &views).expect("solves");
    let worst = got
        .weights
        .iter()
        .zip(truth)
        .map(|(g, t)| (g - t).abs())
        .fold(0.0, f64::max);
    eprintln!(
        "recovered {:?} (truth {truth:?}), max error {worst:.4}",
        got.weights
    );
    assert!(worst <= 0.02, "{:?}", got.weights);
}

/// The noise of DPIW, reconstructed from released weights only: `ln w(x) = beta_priv^T x + c`
/// on the public rows, so least squares on them (with an intercept) gives `beta_priv`, and
/// `beta_priv - beta*` is the noise. Its norm must be Gamma(d, 2 / (eps N_X lambda)): KS over 200
/// seeded releases, critical value 1.63 / sqrt(200) = 0.115 at 1 %.
#[test]
fn dpiw_noise_reconstructed_from_released_weights_follows_its_density() {
    let (x, y) = scaled_breast_cancer();
    let x = x.slice(ndarray::s![.., ..5]).to_owned();
    let x = RowScaling::Normalize.apply(x.view(), 1.0);
    let positives: Vec<usize> = (0..y.len()).filter(|&i| y[i] == 1.0).take(150).collect();
    let private = x.select(Axis(0), &positives);
    let public = x.slice(ndarray::s![300..500, ..]).to_owned();
    let (eps, lambda) = (1.0, 0.05);
    let exact = dpiw::discriminator(private.view(), public.view(), lambda).expect("fits");
    let design = concatenate(
        Axis(1),
        &[public.view(), Array2::ones((public.nrows(), 1)).view()],
    )
    .expect("widths");
    let gram = design.t().dot(&design);
    let chol = privlogit::protocols::cholesky::Cholesky::factor(&gram).expect("full rank");
    let scale = dpiw::noise_scale(eps, private.nrows(), lambda);
    let mut norms: Vec<f64> = (0..200u64)
        .map(|seed| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let released = dpiw::dpiw(private.view(), public.view(), Some(eps), lambda, &mut rng)
                .expect("fits")
                .weights;
            let coef = chol.solve(&design.t().dot(&released.mapv(f64::ln)));
            let beta = coef.slice(ndarray::s![..5]).to_owned();
            let noise = &beta - &exact;
            noise.dot(&noise).sqrt()
        })
        .collect();
    norms.sort_by(f64::total_cmp);
    let gamma = gamma_cdf(5.0, scale);
    let n = norms.len() as f64;
    let ks = norms
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let f = gamma(v);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max);
    eprintln!("DPIW noise norm vs Gamma(5, {scale:.4}): KS {ks:.3} (critical 0.115)");
    assert!(ks < 0.115, "{ks}");
}

/// The Gamma(k, theta) CDF for integer k: 1 - exp(-x/theta) sum_{i<k} (x/theta)^i / i!.
fn gamma_cdf(k: f64, theta: f64) -> impl Fn(f64) -> f64 {
    move |x: f64| {
        let t = x / theta;
        let mut term = 1.0;
        let mut sum = 0.0;
        for i in 0..k as usize {
            if i > 0 {
                term *= t / i as f64;
            }
            sum += term;
        }
        1.0 - (-t).exp() * sum
    }
}

/// `privlogit dp fit --method dphtl` on files: three sources, a public set and a target cut from
/// breast_cancer; the weights lie on the simplex, each source is charged epsilon once
/// (Theorem 4.3.1), and a second fit past the ledger's total is refused with the ledger
/// unchanged and no output.
#[test]
fn dp_fit_dphtl_charges_each_source_once() {
    use common::process::{fresh_dir, privlogit};
    let dir = fresh_dir("dphtl-cli");
    let text = std::fs::read_to_string(common::shared_data("breast_cancer.csv")).expect("data");
    let mut lines = text.lines();
    let header = lines.next().expect("header");
    let rows: Vec<&str> = lines.collect();
    let write = |name: &str, range: std::ops::Range<usize>| {
        let path = dir.join(name);
        std::fs::write(&path, format!("{header}\n{}\n", rows[range].join("\n"))).expect("write");
        path.display().to_string()
    };
    let (a, b, c) = (
        write("a.csv", 0..150),
        write("b.csv", 150..300),
        write("c.csv", 300..450),
    );
    let (public, target) = (write("public.csv", 450..520), write("target.csv", 520..569));
    let ledger = dir.join("ledger.json").display().to_string();
    let out = dir.join("model.json");
    let args = |out: &std::path::Path| -> Vec<String> {
        [
            "dp",
            "fit",
            "--method",
            "dphtl",
            "--source",
            &a,
            &b,
            &c,
            "--public",
            &public,
            "--data",
            &target,
            "--label",
            "label",
            "--epsilon",
            "1",
            "--lambda",
            "0.05",
            "--lambda-iw",
            "0.05",
            "--seed",
            "3",
            "--ledger",
            &ledger,
            "--budget",
            "1.5",
            "--out",
            &out.display().to_string(),
        ]
        .map(String::from)
        .to_vec()
    };
    let first = privlogit(&args(&out).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("model")).expect("JSON");
    let w = floats(&v["hypothesis_weights"]);
    assert_eq!(w.len(), 3);
    assert!(
        (w.sum() - 1.0).abs() < 1e-12 && w.iter().all(|x| *x >= 0.0),
        "{w}"
    );
    let spent = v["epsilon_spent"].as_array().expect("charges");
    assert_eq!(spent.len(), 3);
    assert!(spent.iter().all(|c| c["epsilon"] == 1.0));
    assert_eq!(floats(&v["coefficients"]).len(), 30);
    let before = std::fs::read(&ledger).expect("ledger");
    let again = dir.join("again.json");
    let second = privlogit(&args(&again).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!second.status.success());
    assert_eq!(
        std::fs::read(&ledger).expect("ledger"),
        before,
        "ledger unchanged"
    );
    assert!(!again.exists());
    let one = privlogit(&[
        "dp",
        "fit",
        "--method",
        "dphtl",
        "--source",
        &a,
        "--public",
        &public,
        "--data",
        &target,
        "--label",
        "label",
        "--epsilon",
        "1",
    ]);
    assert!(!one.status.success() && String::from_utf8_lossy(&one.stderr).contains("at least two"));
}

/// The experiment on a user's own domain-labelled table (the path for 20NG or Amazon as
/// feature files): five simulated Gaussian domains with a shared linear task, one repeat. The
/// figure and table files appear, with a row per mixture and epsilon, and without noise the
/// hypothesis weights' MSE is small.
#[test]
fn the_experiment_runs_on_a_domain_labelled_table() {
    use common::process::{fresh_dir, privlogit_ok};
    let dir = fresh_dir("dphtl-domains");
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let noise = Normal::new(0.0, 1.0).expect("valid");
    let mut text = String::from("f0,f1,f2,f3,f4,f5,label,domain\n");
    for k in 0..5 {
        for _ in 0..2100 {
            let x: Vec<f64> = (0..6)
                .map(|j| noise.sample(&mut rng) + if j == k { 3.0 } else { 0.0 })
                .collect();
            let label = u8::from(x[5] + 0.5 * x[k] - 1.5 > 0.0);
            let cells: Vec<String> = x.iter().map(|v| format!("{v:.6}")).collect();
            text += &format!("{},{label},src{k}\n", cells.join(","));
        }
    }
    let file = dir.join("domains.csv");
    std::fs::write(&file, text).expect("write");
    let out = dir.join("results");
    privlogit_ok(&[
        "dp",
        "experiment",
        "dphtl",
        "--domains",
        &file.display().to_string(),
        "--repeats",
        "1",
        "--out-dir",
        &out.display().to_string(),
    ]);
    let mse = std::fs::read_to_string(out.join("fig4_2.csv")).expect("fig4_2.csv");
    assert_eq!(mse.lines().count(), 1 + 4 * 7, "{mse}");
    for line in mse.lines().filter(|l| l.contains(",inf,")) {
        let value: f64 = line
            .rsplit(',')
            .nth(2)
            .and_then(|v| v.parse().ok())
            .expect("mse");
        assert!(value < 5e-3, "{line}");
    }
    assert!(out.join("table4_3.md").exists() && out.join("fig4_2.svg").exists());
}
