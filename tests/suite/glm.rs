//! Gaussian and Poisson models (with and without an offset and prior weights) against
//! statsmodels' `GLM`, in the plaintext fit and in secure studies.
//!
//! References: `tests/references/glm_statsmodels.json`, written with the data file
//! `tests/references/wine_glm.csv` by `target/dev-venv/bin/python
//! tests/references/glm_statsmodels.py` (statsmodels 0.15.0, numpy 2.4.6; the script says which
//! columns each case uses). Tolerances are the issue's: coefficients, p-values and interval ends
//! to 1e-6 absolute, standard errors, deviances, AIC, BIC and the Gaussian's dispersion (statsmodels' `scale`) to 1e-6
//! relative. Both sides stop at the optimum (Newton, gradient norm below 1e-9 here; statsmodels'
//! IRLS at tol 1e-14), so they agree to about 1e-9 (measured: `cargo test --release --test suite glm`).

use crate::common;

use std::path::PathBuf;

use common::json::{assert_lr, assert_table, close, floats, spec_of, study, toml};
use privlogit::fit::job::FitJob;
use privlogit::settings::{Origin, Reader, Spec};
use serde_json::Value;

fn references() -> Value {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/references/glm_statsmodels.json"),
    )
    .expect("reference file");
    serde_json::from_str(&text).expect("reference JSON")
}

fn data() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/references/wine_glm.csv")
}

/// Each reference case's settings (label, family, columns left out, offset, weights).
fn case(name: &str) -> Vec<(&'static str, Value)> {
    let (family, label, leave_out, offset, weights): (&str, &str, &[&str], _, _) = match name {
        "gaussian" => (
            "gaussian",
            "alcohol",
            &["log_total_sulfur_dioxide"],
            None,
            None,
        ),
        "gaussian_offset_weights" => (
            "gaussian",
            "alcohol",
            &["log_total_sulfur_dioxide"],
            Some("pH"),
            Some("sulphates"),
        ),
        "poisson" => (
            "poisson",
            "free_sulfur_dioxide",
            &["total_sulfur_dioxide", "log_total_sulfur_dioxide"],
            None,
            None,
        ),
        "poisson_offset_weights" => (
            "poisson",
            "free_sulfur_dioxide",
            &["total_sulfur_dioxide"],
            Some("log_total_sulfur_dioxide"),
            Some("sulphates"),
        ),
        other => panic!("no case {other}"),
    };
    let mut settings = vec![
        ("family", Value::from(family)),
        ("label", Value::from(label)),
        ("lambda", Value::from(0.0)),
        ("gradient_tol", Value::from(1e-9)),
        ("quiet", Value::from(true)),
    ];
    settings.extend(leave_out.iter().map(|c| ("exclude", Value::from(*c))));
    settings.extend(offset.map(|c| ("offset", Value::from(c))));
    settings.extend(weights.map(|c| ("weights", Value::from(c))));
    settings
}

fn fit(settings: &[(&str, Value)]) -> Result<Value, privlogit::error::Error> {
    let mut spec = Spec::new(Reader::Fit);
    for (k, v) in settings {
        spec.set(k, &toml(v), Origin::Given)?;
    }
    Ok(FitJob::new(&spec)?.run(&mut |_| {})?.json())
}

const MEASURES: [&str; 5] = ["log_likelihood", "deviance", "null_deviance", "aic", "bic"];

/// A result of the reference case `name` against statsmodels': the names, the family, the table
/// and the measures, no odds ratios (rate ratios for Poisson), the Gaussian's t table and its
/// dispersion (statsmodels' `scale`).
fn assert_glm(name: &str, ours: &Value, reference: &Value) {
    assert_eq!(ours["names"], reference["names"], "{name}: names");
    let family = name.split('_').next().expect("a family first");
    assert_eq!(ours["family"], Value::from(family), "{name}: family");
    if family == "gaussian" {
        // Estimated dispersion: t with df_resid, statsmodels' `fit(use_t=True)` (issue 51).
        let mut with_t = reference.clone();
        with_t["p_values"] = reference["t_p_values"].clone();
        with_t["conf_int"] = reference["t_conf_int"].clone();
        assert_table(name, ours, &with_t, &MEASURES);
        assert_eq!(ours["statistic"], "t", "{name}: t statistics");
        assert_eq!(ours["df_resid"], reference["df_residual"], "{name}: df");
    } else {
        assert_table(name, ours, reference, &MEASURES);
        assert_eq!(ours["statistic"], "z", "{name}: z statistics");
        let (rr, coef) = (
            floats(&ours["rate_ratios"]),
            floats(&reference["coefficients"]),
        );
        let exp: Vec<f64> = coef.iter().map(|b| b.exp()).collect();
        close(&format!("{name} rate ratios"), &rr, &exp, 0.0, 1e-6);
    }
    assert!(ours.get("odds_ratios").is_none(), "{name}: no odds ratios");
    if family == "gaussian" {
        let (ours, theirs) = (&ours["dispersion"], &reference["scale"]);
        close(
            &format!("{name} dispersion"),
            &[ours.as_f64().expect("dispersion")],
            &[theirs.as_f64().expect("scale")],
            0.0,
            1e-6,
        );
    }
}

/// `fit --family gaussian|poisson` (three parties of contiguous rows) equals statsmodels' GLM,
/// with and without an offset and weights.
#[test]
fn plaintext_glm_equals_statsmodels() {
    let references = references();
    for name in [
        "gaussian",
        "gaussian_offset_weights",
        "poisson",
        "poisson_offset_weights",
    ] {
        let mut settings = case(name);
        settings.push(("data", Value::from(data().display().to_string())));
        settings.push(("split", Value::from(3)));
        let ours = fit(&settings).expect(name);
        let reference = &references[name];
        assert_glm(name, &ours, reference);
    }
}

/// Labels a family does not take, weights that are not positive, and PrivLogit for Poisson are
/// refused with the file, line and column or the setting named.
#[test]
fn bad_glm_input_is_refused() {
    let wine = common::shared_data("winequality_red.csv");
    let with = |extra: &[(&str, Value)]| {
        let mut settings = vec![
            ("data", Value::from(wine.display().to_string())),
            ("lambda", Value::from(0.0)),
        ];
        settings.extend(extra.iter().cloned());
        fit(&settings).expect_err("refused").to_string()
    };
    // A count label for the binomial.
    let e = with(&[("label", Value::from("free_sulfur_dioxide"))]);
    assert!(
        e.contains("winequality_red.csv:2:6") && e.contains("is not 0 or 1"),
        "{e}"
    );
    let e = with(&[
        ("label", Value::from("good")),
        ("family", Value::from("gaussian")),
        ("weights", Value::from("citric_acid")),
    ]);
    assert!(
        e.contains("row 1") && e.contains("not a positive number"),
        "{e}"
    );
    let e = with(&[
        ("label", Value::from("good")),
        ("family", Value::from("poisson")),
        ("offset", Value::from("no_such_column")),
    ]);
    assert!(
        e.contains("offset column \"no_such_column\" not found"),
        "{e}"
    );
    let e = with(&[
        ("label", Value::from("good")),
        ("family", Value::from("poisson")),
        ("optimizer", Value::from("privlogit")),
    ]);
    assert!(
        e.contains("setting `optimizer`") && e.contains("Newton"),
        "{e}"
    );
}

/// The `k` of `parts` contiguous parts of the GLM data file, as a party file.
fn party_file(parts: usize, k: usize) -> PathBuf {
    common::part_file(&data(), parts, k)
}

/// A secure study (three Nodes, in process, standardised, unpenalised) equals statsmodels' GLM
/// on the same standardised columns, for both families with and without an offset and
/// weights: Newton in masked arithmetic, the Gaussian's scale and the null deviance from the
/// Nodes' encrypted sums.
#[test]
fn secure_glm_equals_statsmodels() {
    let references = references();
    let parties: Vec<PathBuf> = (0..3).map(|k| party_file(3, k)).collect();
    for name in [
        "gaussian",
        "gaussian_offset_weights",
        "poisson",
        "poisson_offset_weights",
    ] {
        let mut settings = case(name);
        settings.push(("standardize", Value::from(true)));
        let ours = study(&spec_of(Reader::Study, &parties, &settings)).expect(name);
        let reference = &references[&format!("{name}_standardized")];
        assert_glm(name, &ours, reference);
    }
}

/// The likelihood-ratio test without two columns equals statsmodels' (`2 (llf_full -
/// llf_reduced)`, the Gaussian's llf maximised over its dispersion), in the fit for both
/// families and in a secure Gaussian study (the nested model a second study).
#[test]
fn glm_likelihood_ratio_equals_statsmodels() {
    let references = references();
    let drop = ("drop", Value::from(vec!["citric_acid", "residual_sugar"]));
    for name in ["gaussian", "poisson"] {
        let mut settings = case(name);
        settings.push(("data", Value::from(data().display().to_string())));
        settings.push(("split", Value::from(3)));
        settings.push(drop.clone());
        let ours = fit(&settings).expect(name);
        assert_lr(name, &ours, &references[&format!("{name}_lr")]);
    }
    let parties: Vec<PathBuf> = (0..3).map(|k| party_file(3, k)).collect();
    let mut settings = case("gaussian");
    settings.push(("standardize", Value::from(true)));
    settings.push(drop);
    let ours = study(&spec_of(Reader::Study, &parties, &settings)).expect("study");
    assert_lr("secure gaussian", &ours, &references["gaussian_lr"]);
}
