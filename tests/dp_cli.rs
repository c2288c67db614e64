//! `privlogit dp fit` and `privlogit dp experiment` on the command line: results, the privacy
//! ledger's refusals, and errors that name the parameter or the file position.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

fn privlogit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args(args)
        .output()
        .expect("privlogit runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("privlogit-dpcli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch");
    dir
}

fn breast() -> String {
    common::shared_data("breast_cancer.csv")
        .display()
        .to_string()
}

#[test]
fn fit_reports_model_budget_and_test_auc() {
    let data = breast();
    for method in ["plr", "output", "pst-s", "pst-f", "plr-fs"] {
        let out = privlogit(&[
            "dp",
            "fit",
            "--method",
            method,
            "--data",
            &data,
            "--label",
            "label",
            "--epsilon",
            "4",
            "--seed",
            "3",
            "--test",
            &data,
        ]);
        assert!(
            out.status.success(),
            "{method}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(json["epsilon_spent"][0]["epsilon"], 4.0, "{method}");
        assert!(
            json["noise"]
                .as_str()
                .expect("noise")
                .contains("NOT for private release")
        );
        let auc = json["test"]["auc"].as_f64().expect("auc");
        assert!((0.5..=1.0).contains(&auc), "{method}: {auc}");
    }
    // Transfer methods charge both data sets.
    let out = privlogit(&[
        "dp",
        "fit",
        "--method",
        "pptl-fs",
        "--data",
        &data,
        "--source",
        &data,
        "--label",
        "label",
        "--epsilon",
        "1",
        "--source-epsilon",
        "2",
        "--k",
        "3",
        "--group-importance",
        "0.5,0.3,0.2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let spent = json["epsilon_spent"].as_array().expect("list");
    assert_eq!(spent.len(), 2);
    assert_eq!(spent[1]["epsilon"], 2.0);
    assert_eq!(json["model"]["source"]["groups"][0]["importance"], 0.5);
}

#[test]
fn ledger_refuses_a_fit_past_the_total_and_keeps_its_record() {
    let dir = scratch("ledger");
    let ledger = dir.join("ledger.json");
    let ledger = ledger.to_str().expect("utf-8");
    let data = breast();
    let fit = |eps: &str| {
        privlogit(&[
            "dp",
            "fit",
            "--method",
            "plr",
            "--data",
            &data,
            "--label",
            "label",
            "--epsilon",
            eps,
            "--ledger",
            ledger,
            "--budget",
            "1.5",
        ])
    };
    assert!(fit("1").status.success());
    let before = std::fs::read_to_string(ledger).expect("ledger written");
    let refused = fit("0.75");
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("privacy budget exceeded") && err.contains("total 1.5"),
        "{err}"
    );
    assert!(refused.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(ledger).expect("ledger"), before);
    assert!(fit("0.5").status.success(), "exactly the total is allowed");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_parameters_are_named() {
    let data = breast();
    let cases: [(&[&str], &str); 5] = [
        (&["--method", "plr", "--epsilon", "0"], "epsilon"),
        (
            &["--method", "plr", "--epsilon", "1", "--lambda", "-1"],
            "lambda",
        ),
        (&["--method", "pst-f", "--epsilon", "1", "--k", "40"], "K"),
        (
            &[
                "--method",
                "pst-f",
                "--epsilon",
                "1",
                "--k",
                "2",
                "--group-importance",
                "0.5,0.6",
            ],
            "sum of q_k",
        ),
        (&["--method", "simcomb", "--epsilon", "1"], "needs --source"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["dp", "fit", "--data", &data, "--label", "label"];
        args.extend_from_slice(extra);
        let out = privlogit(&args);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}

#[test]
fn experiment_reports_a_bad_digits_file_by_position() {
    let dir = scratch("digits");
    let bad = dir.join("digits.csv");
    std::fs::write(&bad, "label,px0\n1,3\n12,0\n").expect("write");
    let out = privlogit(&[
        "dp",
        "experiment",
        "stacking",
        "--data",
        bad.to_str().expect("utf-8"),
        "--out-dir",
        dir.join("out").to_str().expect("utf-8"),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("digits.csv:3:1: digit 12 is not 0-9"), "{err}");
    assert!(!dir.join("out/stacking.csv").exists());
    let out = privlogit(&["dp", "experiment", "transfer", "--epsilons", "1,-2"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("epsilon"));
    std::fs::remove_dir_all(&dir).ok();
}
