//! Vertical studies end to end (`privlogit study --vertical` against `privlogit fit
//! --vertical`, the pooled reference on the joined intersection) on `data/vertical`:
//! breast_cancer's columns split across three organisations, each file in its own order with
//! about 10% of the people missing.

use std::path::Path;

mod common;
use common::deployment::json;
use common::process::{fresh_dir, privlogit, privlogit_ok};

fn file(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/vertical")
        .join(name)
        .display()
        .to_string()
}

/// The three organisations' files as `--party` arguments.
fn parties() -> Vec<String> {
    ["outcomes.csv", "imaging.csv", "registry.csv"]
        .iter()
        .flat_map(|f| ["--party".to_string(), file(f)])
        .collect()
}

/// All but `keep` columns of each file left out (this test is about the join and the secure
/// rounds; the full 30-column study is measured in the guide).
fn narrowed(keep: usize) -> Vec<String> {
    let mut out = Vec::new();
    for f in ["outcomes.csv", "imaging.csv", "registry.csv"] {
        let text = std::fs::read_to_string(file(f)).expect("readable");
        let header = text.lines().next().expect("a header");
        let columns: Vec<&str> = header
            .split(',')
            .filter(|c| *c != "id" && *c != "label")
            .collect();
        for c in &columns[keep..] {
            out.push("--exclude".to_string());
            out.push((*c).to_string());
        }
    }
    out
}

fn by_name(v: &serde_json::Value) -> Vec<(String, f64)> {
    let names = v["names"].as_array().expect("names");
    let coefficients = v["coefficients"].as_array().expect("coefficients");
    names
        .iter()
        .zip(coefficients)
        .map(|(n, c)| {
            (
                n.as_str().expect("a name").to_string(),
                c.as_f64().expect("a number"),
            )
        })
        .collect()
}

/// The secure vertical study (accelerated PrivLogit) lands on the pooled optimum
/// of the joined rows: within 1e-6 of `fit --vertical`, N the intersection's size (398 people
/// are in all three files). Both run a fixed number of iterations (`--tol 0`): the secure
/// objective carries the circuit's 2^-30 rounding per row, below which no stopping rule can
/// see; the plaintext fit is converged to 1e-11 by then.
#[test]
fn a_vertical_study_equals_the_pooled_fit_of_the_intersection() {
    let mut common: Vec<String> = [
        "--vertical",
        "--id",
        "id",
        "--label",
        "label",
        "--standardize",
        "--tol",
        "0",
        "--gradient-tol",
        "0",
        "--json",
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    common.extend(parties());
    common.extend(narrowed(2));
    let args = |command: &str, extra: &[&str]| -> Vec<String> {
        let mut a = vec![command.to_string()];
        a.extend(common.iter().cloned());
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |a: Vec<String>| {
        json(&privlogit_ok(
            &a.iter().map(String::as_str).collect::<Vec<_>>(),
        ))
    };
    let reference = run(args("fit", &["--max-iter", "300"]));
    assert_eq!(reference["n"], 398);
    // Plain PrivLogit's secure steps equal the plaintext ones step for step (the library's
    // `secure::vertical` test); at its linear rate it would need hundreds of iterations here.
    for (optimizer, iterations) in [("privlogit-accel", "60")] {
        let study = run(args(
            "study",
            &["--optimizer", optimizer, "--max-iter", iterations],
        ));
        assert_eq!(study["n"], 398, "{optimizer}");
        let (ours, theirs) = (by_name(&study), by_name(&reference));
        assert_eq!(ours.len(), 7, "intercept and 2 columns from each party");
        for ((name, a), (other, b)) in ours.iter().zip(&theirs) {
            assert_eq!(name, other);
            assert!(
                (a - b).abs() < 1e-6,
                "{optimizer}: {name}: {a} secure vs {b} pooled"
            );
        }
    }
}

/// Bad inputs are refused before any cryptography, naming what is wrong: an identifier twice
/// in one file (its file and both lines), the label in two files, no identifier column.
#[test]
fn bad_vertical_inputs_are_named() {
    let dir = fresh_dir("vertical-bad");
    let twice = dir.join("twice.csv");
    let mut text = std::fs::read_to_string(file("imaging.csv")).expect("readable");
    let second_line = text.lines().nth(1).expect("a row").to_string();
    text.push_str(&second_line);
    text.push('\n');
    std::fs::write(&twice, &text).expect("writable");
    let run = |files: &[String], extra: &[&str]| {
        let mut a: Vec<String> = ["study", "--vertical", "--label", "label", "--quiet"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for f in files {
            a.push("--party".into());
            a.push(f.clone());
        }
        a.extend(extra.iter().map(|s| s.to_string()));
        let out = privlogit(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let lines = text.lines().count();
    let err = run(
        &[file("outcomes.csv"), twice.display().to_string()],
        &["--id", "id"],
    );
    assert!(
        err.contains("twice.csv") && err.contains(&format!(":{lines}:")) && err.contains("line 2"),
        "{err}"
    );
    let err = run(
        &[file("outcomes.csv"), file("outcomes.csv")],
        &["--id", "id"],
    );
    assert!(err.contains("exactly one party's file"), "{err}");
    let err = run(&[file("outcomes.csv"), file("imaging.csv")], &[]);
    assert!(err.contains("--id"), "{err}");
}
