//! Helpers of the tests that compare a fit's or a study's JSON with reference tables.

use privlogit::settings::{Origin, Reader, Spec};
use serde_json::Value;

/// A setting's value as a study file writes it.
pub fn toml(v: &Value) -> toml::Value {
    match v {
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Number(n) if n.is_i64() => toml::Value::Integer(n.as_i64().expect("int")),
        Value::Number(n) => toml::Value::Float(n.as_f64().expect("float")),
        Value::Array(items) => toml::Value::Array(items.iter().map(toml).collect()),
        other => panic!("no TOML for {other}"),
    }
}

pub fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

pub fn pairs(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .flat_map(floats)
        .collect()
}

pub fn close(what: &str, ours: &[f64], theirs: &[f64], abs: f64, rel: f64) {
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
    for (k, (a, b)) in ours.iter().zip(theirs).enumerate() {
        let err = (a - b).abs();
        assert!(
            err <= abs + rel * b.abs(),
            "{what}[{k}]: ours {a:e}, reference {b:e}, off by {err:e}"
        );
    }
}

/// The Wald table and fit measures of `ours` against `reference` at the tolerances:
/// coefficients, p-values and interval ends to 1e-6, standard errors and `measures` to 1e-6
/// relative.
pub fn assert_table(what: &str, ours: &Value, reference: &Value, measures: &[&str]) {
    let at = |f: &str| format!("{what} {f}");
    let (c, r) = (&ours["coefficients"], &reference["coefficients"]);
    close(&at("coefficients"), &floats(c), &floats(r), 1e-6, 0.0);
    let (c, r) = (&ours["standard_errors"], &reference["standard_errors"]);
    close(&at("standard errors"), &floats(c), &floats(r), 0.0, 1e-6);
    let (c, r) = (&ours["p_values"], &reference["p_values"]);
    close(&at("p-values"), &floats(c), &floats(r), 1e-6, 0.0);
    let (c, r) = (&ours["conf_int"], &reference["conf_int"]);
    close(&at("intervals"), &pairs(c), &pairs(r), 1e-6, 0.0);
    for field in measures {
        let (c, r) = (&ours[*field], &reference[*field]);
        close(
            &at(field),
            &[c.as_f64().expect(field)],
            &[r.as_f64().expect(field)],
            0.0,
            1e-6,
        );
    }
}

/// A spec for `reader` over the party files `parties` with `settings`.
pub fn spec_of(reader: Reader, parties: &[std::path::PathBuf], settings: &[(&str, Value)]) -> Spec {
    let mut spec = Spec::new(reader);
    for p in parties {
        spec.set(
            "party",
            &toml(&Value::from(p.display().to_string())),
            Origin::Given,
        )
        .expect("party");
    }
    for (k, v) in settings {
        spec.set(k, &toml(v), Origin::Given).expect(k);
    }
    spec
}

/// A secure study in this process, its result as JSON.
pub fn study(spec: &Spec) -> Result<Value, privlogit::error::Error> {
    privlogit::study::roles::InProcess::new(spec, None)?
        .run(None)?
        .json()
}

/// A result's likelihood-ratio test (statistic and p-value to 1e-6, two columns dropped) against
/// a reference's.
pub fn assert_lr(what: &str, ours: &Value, reference: &Value) {
    let lr = &ours["likelihood_ratio"];
    for field in ["statistic", "p_value"] {
        close(
            &format!("{what} LR {field}"),
            &[lr[field].as_f64().expect(field)],
            &[reference[field].as_f64().expect(field)],
            1e-6,
            0.0,
        );
    }
    assert_eq!(lr["df"], 2, "{what}");
}
