//! `privlogit reproduce table-5.1` end to end on a small scale: the runs are recorded, the
//! tables are written with the paper's numbers beside ours, and `--resume` skips what is done.

use std::process::Command;

fn reproduce(out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let output = Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args([
            "reproduce",
            "table-5.1",
            "--rows-scale",
            "0.02",
            "--only",
            "SimuX10",
        ])
        .args([
            "--skip",
            "secure-newton",
            "--skip",
            "secure-hessian",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn table_is_written_and_resume_skips_finished_runs() {
    let dir = std::env::temp_dir().join(format!("privlogit-reproduce-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = String::from_utf8_lossy(&reproduce(&dir, &[]).stderr).to_string();
    assert!(
        first.contains("SimuX10 (1000 x 10, 5 Nodes) secure-local"),
        "{first}"
    );
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("runs/SimuX10.secure-local.json")).expect("record"),
    )
    .expect("JSON");
    // The secure run equals the plaintext PrivLogit run it is compared with (issue 11's bound
    // for whole studies is 1e-9; these runs agree to about 1e-13).
    let diff = record["max_abs_diff_to_plaintext"]
        .as_f64()
        .expect("a diff");
    assert!(diff < 1e-9, "{diff}");
    let markdown = std::fs::read_to_string(dir.join("table_5_1.md")).expect("markdown");
    let line = markdown
        .lines()
        .find(|l| l.starts_with("| SimuX10 "))
        .expect("a SimuX10 line");
    // Paper: 6 Newton and 20 PrivLogit iterations, Local 13 s; Hessian and Newton not run here.
    assert!(
        line.contains("(6)") && line.contains("(20)") && line.contains("(13)"),
        "{line}"
    );
    assert!(line.contains("- (24)"), "{line}");
    let csv = std::fs::read_to_string(dir.join("table_5_1.csv")).expect("csv");
    assert!(
        csv.lines()
            .any(|l| l.starts_with("SimuX10,SimuX10,1000,10,")),
        "{csv}"
    );

    let again = String::from_utf8_lossy(&reproduce(&dir, &["--resume"]).stderr).to_string();
    assert_eq!(again.matches("done earlier, skipped").count(), 4, "{again}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_rows_and_runs_are_refused_by_name() {
    let output = Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args(["reproduce", "table-5.1", "--only", "SimuX11"])
        .output()
        .expect("runs");
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("--only SimuX11: no such row") && err.contains("SimuX400"),
        "{err}"
    );
}
