//! Vertical studies end to end (`privlogit study --vertical` against `privlogit fit
//! --vertical`, the pooled reference on the joined intersection) on `data/vertical`:
//! breast_cancer's columns split across three organisations, each file in its own order with
//! about 10% of the people missing.

use std::path::Path;
use std::time::Duration;

use crate::common;
use common::deployment::json;
use common::process::{Role, address, fresh_dir, new_identity, privlogit, privlogit_ok};

fn file(name: &str) -> String {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
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

/// The settings the in-process checks share: the three files narrowed to 2 columns each, no
/// stopping rule (fixed iterations), JSON out.
fn narrowed_study() -> Vec<String> {
    let mut args: Vec<String> = [
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
    args.extend(parties());
    args.extend(narrowed(2));
    args
}

/// `fit --vertical` on [`narrowed_study`] run to 300 iterations: the pooled optimum the secure
/// studies are checked against.
fn pooled_reference() -> serde_json::Value {
    let mut args = vec!["fit".to_string()];
    args.extend(narrowed_study());
    args.extend(["--max-iter".to_string(), "300".to_string()]);
    json(&privlogit_ok(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    ))
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

/// The secure vertical study (accelerated PrivLogit and secure Newton) lands on the pooled optimum
/// of the joined rows: within 1e-6 of `fit --vertical`, N the intersection's size (398 people
/// are in all three files). Both run a fixed number of iterations (`--tol 0`): the secure
/// objective carries the circuit's 2^-30 rounding per row, below which no stopping rule can
/// see; the plaintext fit is converged to 1e-11 by then.
#[test]
fn a_vertical_study_equals_the_pooled_fit_of_the_intersection() {
    let common = narrowed_study();
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
    let reference = pooled_reference();
    assert_eq!(reference["n"], 398);
    // Plain PrivLogit's secure steps equal the plaintext ones step for step (the library's
    // `secure::vertical_rounds` test); at its linear rate it would need hundreds of iterations here.
    // Secure Newton is at the optimum after 9 (measured: 4.0e-9 from it on all 30 columns).
    for (optimizer, iterations) in [("privlogit-accel", "60"), ("newton", "10")] {
        let study = run(args(
            "study",
            &["--optimizer", optimizer, "--max-iter", iterations],
        ));
        assert_eq!(study["rows"], 398, "{optimizer}");
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

/// Without `--standardize` the columns keep their units (issue 51): each party divides a column
/// reaching the features' public bound (64) by a power of two and says which; the study fits
/// the raw estimator (its penalty weighed back) and reports raw coefficients. Here the
/// narrowed study with one column multiplied to reach 2e9: secure Newton equals `fit --vertical`
/// on the same files (plaintext, unscaled) to 1e-6 relative.
#[test]
fn an_unstandardised_vertical_study_equals_the_pooled_fit_in_raw_units() {
    let dir = fresh_dir("vertical-raw");
    // imaging.csv with its first feature column multiplied to reach 2e9.
    let text = std::fs::read_to_string(file("imaging.csv")).expect("readable");
    let mut lines = text.lines();
    let header = lines.next().expect("a header");
    let column = header
        .split(',')
        .position(|c| c != "id" && c != "label")
        .expect("a feature");
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    let largest = rows
        .iter()
        .map(|r| r[column].parse::<f64>().expect("a number").abs())
        .fold(0.0, f64::max);
    let factor = 2e9 / largest;
    let mut big = format!("{header}\n");
    for r in &rows {
        let mut r = r.clone();
        r[column] = (r[column].parse::<f64>().expect("a number") * factor).to_string();
        big.push_str(&r.join(","));
        big.push('\n');
    }
    let big_file = dir.join("imaging_big.csv");
    std::fs::write(&big_file, big).expect("writable");
    let mut args: Vec<String> = [
        "--vertical",
        "--id",
        "id",
        "--label",
        "label",
        "--optimizer",
        "newton",
        "--json",
        "--quiet",
        "--party",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend([
        file("outcomes.csv"),
        "--party".into(),
        big_file.display().to_string(),
        "--party".into(),
        file("registry.csv"),
    ]);
    args.extend(narrowed(2));
    let run = |command: &str| {
        let mut a = vec![command.to_string()];
        a.extend(args.iter().cloned());
        json(&privlogit_ok(
            &a.iter().map(String::as_str).collect::<Vec<_>>(),
        ))
    };
    let (study, reference) = (run("study"), run("fit"));
    assert_eq!(study["status"], "converged");
    assert!(study["standardization"].is_null(), "raw units");
    let (ours, theirs) = (by_name(&study), by_name(&reference));
    assert_eq!(ours.len(), 7);
    for ((name, a), (other, b)) in ours.iter().zip(&theirs) {
        assert_eq!(name, other);
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1e-300),
            "{name}: {a} secure vs {b} pooled"
        );
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

/// The organisations of `data/vertical` as parties of a study between organizations: an
/// identity each (and the servers'), and a study file naming them that says `vertical = true`.
struct Organisations {
    dir: std::path::PathBuf,
    study: String,
}

const ORGANISATIONS: [&str; 3] = ["outcomes", "imaging", "registry"];

impl Organisations {
    /// The study file runs accelerated PrivLogit for `iterations` (no stopping rule, as the
    /// in-process test) on 2 columns of each file.
    fn new(tag: &str, iterations: usize) -> Self {
        let dir = fresh_dir(tag);
        let mut fingerprints = std::collections::HashMap::new();
        for name in ["keyholder", "aggregator"].iter().chain(&ORGANISATIONS) {
            fingerprints.insert(*name, new_identity(&dir, name));
        }
        let excluded: Vec<String> = narrowed(2)
            .chunks(2)
            .map(|pair| format!("{:?}", pair[1]))
            .collect();
        let mut file = format!(
            "vertical = true\nid = \"id\"\nlabel = \"label\"\nstandardize = true\n\
             optimizer = \"privlogit-accel\"\ntol = 0\ngradient_tol = 0\nmax_iter = {iterations}\n\
             exclude = [{}]\n[keyholder]\nfingerprint = \"{}\"\n[aggregator]\n\
             certificate = \"aggregator.crt\"\n",
            excluded.join(", "),
            fingerprints["keyholder"]
        );
        for name in ORGANISATIONS {
            file.push_str(&format!(
                "[[node]]\nname = \"{name}\"\nfingerprint = \"{}\"\n",
                fingerprints[name]
            ));
        }
        let study = dir.join("study.toml");
        std::fs::write(&study, file).expect("study file");
        Self {
            study: study.display().to_string(),
            dir,
        }
    }

    fn identity(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// The key holder and the aggregator (writing its result as JSON to `out`), then each
    /// organisation's Node with its own file; returns them all, the aggregator first.
    fn start(&self, out: &Path, deadline: &str) -> Vec<Role> {
        let kh_id = self.identity("keyholder");
        let state = self.dir.join("state-keyholder").display().to_string();
        let mut keyholder = Role::spawn(&[
            "keyholder",
            "--study",
            &self.study,
            "--identity",
            &kh_id,
            "--listen",
            "127.0.0.1:0",
            "--deadline",
            deadline,
            "--state",
            &state,
        ]);
        let kh = address(&keyholder.wait_for("listening on", Duration::from_secs(30)));
        let agg_id = self.identity("aggregator");
        let out = out.display().to_string();
        let mut aggregator = Role::spawn(&[
            "aggregator",
            "--study",
            &self.study,
            "--identity",
            &agg_id,
            "--listen",
            "127.0.0.1:0",
            "--keyholder",
            &kh,
            "--json",
            "--out",
            &out,
            "--deadline",
            deadline,
        ]);
        let agg = address(&aggregator.wait_for("listening on", Duration::from_secs(30)));
        let mut roles = vec![aggregator, keyholder];
        for (name, data) in
            ORGANISATIONS
                .iter()
                .zip(["outcomes.csv", "imaging.csv", "registry.csv"])
        {
            let id = self.identity(name);
            let data = file(data);
            roles.push(Role::spawn(&[
                "node",
                "--study",
                &self.study,
                "--identity",
                &id,
                "--party",
                &data,
                "--aggregator",
                &agg,
                "--deadline",
                deadline,
            ]));
        }
        roles
    }
}

impl Drop for Organisations {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Separate processes over mutual TLS: the aggregator's model is the pooled fit's (within 1e-6,
/// as the in-process study's above, N the intersection's size), and every Node prints it.
#[test]
fn a_vertical_study_between_organisations_equals_the_pooled_fit() {
    let orgs = Organisations::new("vertical-roles", 60);
    let out = orgs.dir.join("model.json");
    let roles = orgs.start(&out, "6");
    let mut logs = Vec::new();
    for role in roles {
        let (ok, log) = role.end(Duration::from_secs(300));
        assert!(ok, "{log}");
        logs.push(log);
    }
    let study = json(&std::fs::read(&out).expect("the aggregator's result"));
    let reference = pooled_reference();
    assert_eq!(study["rows"], 398);
    let (ours, theirs) = (by_name(&study), by_name(&reference));
    assert_eq!(ours.len(), 7);
    for ((name, a), (other, b)) in ours.iter().zip(&theirs) {
        assert_eq!(name, other);
        assert!(
            (a - b).abs() < 1e-6,
            "{name}: {a} between organisations vs {b} pooled"
        );
    }
    // Each Node learned N and the model, printed on its standard output (the Nodes' logs
    // follow the two servers').
    for log in &logs[2..] {
        assert!(log.contains("N = 398 rows shared"), "{log}");
        assert!(log.contains(&format!("{:.8}", ours[1].1)), "{log}");
    }
}

/// A Node lost during the fit (killed after the third iteration) stops the aggregator and the
/// key holder within the deadline (2 s here; at most two deadlines and a margin), the
/// aggregator naming it, and the other Nodes too.
#[test]
fn a_lost_vertical_party_stops_the_others_within_the_deadline() {
    let orgs = Organisations::new("vertical-lost", 500);
    let out = orgs.dir.join("model.json");
    let mut roles = orgs.start(&out, "2");
    roles[0].wait_for("iteration    3", Duration::from_secs(120));
    let mut lost = roles.remove(3);
    lost.child.kill().expect("kill");
    let _ = lost.child.wait();
    let killed = std::time::Instant::now();
    let mut roles = roles.into_iter();
    let (ok, log) = roles
        .next()
        .expect("aggregator")
        .end(Duration::from_secs(30));
    let took = killed.elapsed();
    assert!(!ok, "{log}");
    assert!(took < Duration::from_secs(6), "{took:?}: {log}");
    assert!(log.contains("imaging"), "{log}");
    for role in roles {
        let (ok, log) = role.end(Duration::from_secs(30));
        assert!(!ok, "{log}");
        // A vertical study cannot be resumed: the key holder kept no key and advises nothing.
        assert!(!log.contains("--resume"), "{log}");
    }
    assert!(!out.exists(), "no model is written when a party is lost");
    let kept: Vec<_> = std::fs::read_dir(orgs.dir.join("state-keyholder"))
        .map(|d| d.map(|e| e.expect("entry").path()).collect())
        .unwrap_or_default();
    assert!(
        kept.iter()
            .all(|p| p.extension().is_none_or(|e| e != "key")),
        "{kept:?}"
    );
}

/// A Node started without `vertical` in a vertical study is named by the aggregator, and every
/// party learns why the study stopped (not only that the aggregator hung up).
#[test]
fn a_horizontal_node_in_a_vertical_study_is_named_to_every_party() {
    let dir = fresh_dir("vertical-stray");
    let vertical = dir.join("vertical.toml");
    std::fs::write(
        &vertical,
        "vertical = true\nid = \"id\"\nlabel = \"label\"\n",
    )
    .expect("file");
    let horizontal = dir.join("horizontal.toml");
    std::fs::write(&horizontal, "label = \"label\"\n").expect("file");
    let (v, h) = (
        vertical.display().to_string(),
        horizontal.display().to_string(),
    );
    let plain = "--insecure-plaintext";
    let mut keyholder =
        Role::spawn(&["keyholder", "--study", &v, plain, "--listen", "127.0.0.1:0"]);
    let kh = address(&keyholder.wait_for("listening on", Duration::from_secs(30)));
    let mut aggregator = Role::spawn(&[
        "aggregator",
        "--study",
        &v,
        plain,
        "--listen",
        "127.0.0.1:0",
        "--keyholder",
        &kh,
        "--parties",
        "2",
    ]);
    let agg = address(&aggregator.wait_for("listening on", Duration::from_secs(30)));
    let outcomes = file("outcomes.csv");
    let labelled = Role::spawn(&[
        "node",
        "--study",
        &v,
        plain,
        "--aggregator",
        &agg,
        "--party",
        &outcomes,
        "--name",
        "a",
    ]);
    let stray = Role::spawn(&[
        "node",
        "--study",
        &h,
        plain,
        "--aggregator",
        &agg,
        "--party",
        &outcomes,
        "--exclude",
        "id",
        "--name",
        "b",
    ]);
    for role in [aggregator, labelled, stray] {
        let (ok, log) = role.end(Duration::from_secs(60));
        assert!(!ok, "{log}");
        assert!(
            log.contains("joined a vertical study as a horizontal one"),
            "{log}"
        );
    }
    // The key holder is told too when the aggregator's connection was admitted before the
    // abort; if the abort came first, the connection gave its place up before the study
    // started and the key holder waits for an aggregator again (admission, roles.md).
    keyholder.child.kill().expect("kill");
    let (_, log) = keyholder.end(Duration::from_secs(10));
    assert!(
        !log.contains("the aggregator connected") || log.contains("as a horizontal one"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
