//! What a data-access committee asks of a study (issue 49): disclosure controls with
//! DataSHIELD's defaults, refused or suppressed where a small count would expose a patient;
//! outputs that never replace what is not a regular file and are checked before any work;
//! seeds refused by the role processes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::deployment::demo;
use common::process::{fresh_dir, privlogit};

/// The first `rows` data rows of the demo's `hospital` (a, b or c), header kept, in `dir`.
fn head(dir: &Path, hospital: char, rows: usize) -> String {
    let text = std::fs::read_to_string(demo(&format!("hospital_{hospital}.csv"))).expect("demo");
    let kept: Vec<&str> = text.lines().take(rows + 1).collect();
    let path = dir.join(format!("{hospital}-{rows}.csv"));
    std::fs::write(&path, kept.join("\n") + "\n").expect("write");
    path.display().to_string()
}

/// Rows `from..to` of the demo's `hospital`, header kept.
fn slice(dir: &Path, hospital: char, from: usize, to: usize) -> String {
    let text = std::fs::read_to_string(demo(&format!("hospital_{hospital}.csv"))).expect("demo");
    let mut lines = text.lines();
    let header = lines.next().expect("header");
    let rows: Vec<&str> = lines.skip(from).take(to - from).collect();
    let path = dir.join(format!("{hospital}-{from}-{to}.csv"));
    std::fs::write(&path, format!("{header}\n{}\n", rows.join("\n"))).expect("write");
    path.display().to_string()
}

/// The columns `keep` of the CSV file `file`, beside it.
fn columns(dir: &Path, file: &str, keep: &[&str]) -> String {
    let text = std::fs::read_to_string(file).expect("data");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let at: Vec<usize> = keep
        .iter()
        .map(|k| header.iter().position(|h| h == k).expect("column"))
        .collect();
    let mut out = keep.join(",") + "\n";
    for line in lines {
        let values: Vec<&str> = line.split(',').collect();
        let row: Vec<&str> = at.iter().map(|&i| values[i]).collect();
        out.push_str(&(row.join(",") + "\n"));
    }
    let name = Path::new(file).file_name().expect("name").to_string_lossy();
    let path = dir.join(format!("narrow-{name}"));
    std::fs::write(&path, out).expect("write");
    path.display().to_string()
}

/// The demo's three hospitals cut to two features, for tests about what happens around a study
/// (where its result goes, which flags a process takes): the same protocol, a quicker study.
fn narrow_demo(dir: &Path) -> Vec<String> {
    ["hospital_a.csv", "hospital_b.csv", "hospital_c.csv"]
        .map(|f| columns(dir, &demo(f), &["mean_radius", "mean_texture", "label"]))
        .to_vec()
}

/// `privlogit study` over `parties` (label `label`, JSON, quiet) with `extra` flags.
fn study(parties: &[&str], extra: &[&str]) -> (bool, String, String) {
    let mut args = vec!["study", "--label", "label", "--json", "--quiet"];
    for p in parties {
        args.extend(["--party", p]);
    }
    args.extend(extra);
    let out = privlogit(&args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn refused(parties: &[&str], extra: &[&str], why: &str) {
    let (ok, _, err) = study(parties, extra);
    assert!(!ok, "must be refused: {err}");
    assert!(
        err.contains("refuses the study") && err.contains(why),
        "{err}"
    );
}

/// A Node under a threshold refuses before it sends anything computed from its rows (the
/// check runs between the welcome and the first request, `secure::study_protocol::run_node`), and its
/// reason names the threshold, not its count.
#[test]
fn a_node_under_a_threshold_refuses() {
    let dir = fresh_dir("disclosure-node");
    let a = demo("hospital_a.csv");
    let b = demo("hospital_b.csv");
    // The review's case: a Node of 2 rows beside two others (min_rows, nfilter.subset).
    let two = head(&dir, 'c', 2);
    refused(
        &[&a, &b, &two],
        &["--standardize"],
        "fewer than 3 training rows",
    );
    // p <= 0.33 N_k (nfilter.glm): 31 coefficients need 94 rows; 60 is too few.
    let sixty = head(&dir, 'c', 60);
    refused(&[&a, &b, &sixty], &["--standardize"], "nfilter.glm");
    // A class of 1 (nfilter.tab): 21 rows, one positive (the parameter share lifted).
    let text = std::fs::read_to_string(&a).expect("demo");
    let mut lines = text.lines();
    let header = lines.next().expect("header");
    let label = header
        .split(',')
        .position(|c| c == "label")
        .expect("label column");
    let rows: Vec<&str> = lines.collect();
    let (pos, neg): (Vec<&str>, Vec<&str>) = rows
        .iter()
        .partition(|r| r.split(',').nth(label) == Some("1"));
    let few = dir.join("one-positive.csv");
    let mut body = vec![header];
    body.extend(&neg[..20]);
    body.push(pos[0]);
    std::fs::write(&few, body.join("\n") + "\n").expect("write");
    let few = few.display().to_string();
    refused(
        &[&a, &b, &few],
        &["--standardize", "--max-parameter-share", "100"],
        "positive labels",
    );
    // No positive at all is no cell to disclose (as in DataSHIELD): that Node takes part.
    let none = dir.join("no-positive.csv");
    let mut body = vec![header];
    body.extend(&neg[..60]);
    std::fs::write(&none, body.join("\n") + "\n").expect("write");
    // The studies that run use two of the demo's columns: what is tested is who takes part.
    let narrow = |f: &str| columns(&dir, f, &["mean_radius", "mean_texture", "label"]);
    let (a, b, two) = (narrow(&a), narrow(&b), narrow(&two));
    let (ok, _, err) = study(
        &[&a, &b, &narrow(&none.display().to_string())],
        &[
            "--standardize",
            "--max-parameter-share",
            "100",
            "--reveal",
            "coefficients",
        ],
    );
    assert!(ok, "{err}");
    // The thresholds are the study file's to set (DataSHIELD's are defaults, not laws).
    let (ok, _, err) = study(
        &[&a, &b, &two],
        &[
            "--standardize",
            "--min-rows",
            "2",
            "--min-cell",
            "0",
            "--max-parameter-share",
            "100",
            "--reveal",
            "coefficients",
        ],
    );
    assert!(ok, "{err}");
}

/// Held-out rows: three Nodes of one held-out row each (the review showed each row's predicted
/// probability through the calibration bins) and two Nodes of 50 and 1 (the other Node
/// recovered the one row by subtraction) are refused; with two Nodes even 3 rows each are
/// refused by default, as subtraction gives each the other's sums.
#[test]
fn small_held_out_sets_and_two_node_subtraction_are_refused() {
    let dir = fresh_dir("disclosure-held-out");
    let train: Vec<String> = ['a', 'b', 'c']
        .iter()
        .map(|&h| slice(&dir, h, 10, 180))
        .collect();
    let one: Vec<String> = ['a', 'b', 'c']
        .iter()
        .map(|&h| slice(&dir, h, 0, 1))
        .collect();
    let parties: Vec<&str> = train.iter().map(String::as_str).collect();
    let mut flags = vec!["--standardize"];
    for f in &one {
        flags.extend(["--test-party", f]);
    }
    refused(&parties, &flags, "fewer than 3 held-out rows");
    // Two Nodes, A holding 50 held-out rows and B 1: B refuses.
    let a50 = head(&dir, 'a', 50);
    let two = [train[0].as_str(), train[1].as_str()];
    let (ok, _, err) = study(
        &two,
        &[
            "--two-node-disclosure",
            "--test-party",
            &a50,
            "--test-party",
            &one[1],
        ],
    );
    assert!(!ok && err.contains("fewer than 3 held-out rows"), "{err}");
    // Two Nodes, B holding 3: refused by default (each would learn the other's sums).
    let b3 = slice(&dir, 'b', 0, 3);
    let (ok, _, err) = study(&two, &["--test-party", &a50, "--test-party", &b3]);
    assert!(!ok && err.contains("two_node_disclosure"), "{err}");
    // Two Nodes publish their coefficients only by default: no standard errors (columns of
    // small values, which need no standardisation).
    let small: Vec<String> = train
        .iter()
        .take(2)
        .map(|f| columns(&dir, f, &["mean_smoothness", "mean_symmetry", "label"]))
        .collect();
    let small = [small[0].as_str(), small[1].as_str()];
    let (ok, out, err) = study(&small, &[]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["reveal"], "coefficients", "{out}");
    let (ok, _, err) = study(&two, &["--standardize"]);
    assert!(!ok && err.contains("two_node_disclosure"), "{err}");
    // With the study file's agreement, the result says what each Node learns of the other.
    let (ok, out, err) = study(&two, &["--standardize", "--two-node-disclosure"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let learnt = v["two_nodes_learn"]
        .as_str()
        .expect("what each Node learns");
    assert!(
        learnt.contains("row count") && learnt.contains("means"),
        "{learnt}"
    );
    assert_eq!(v["reveal"], "standard-errors");
}

/// Published held-out figures: the AUC is withheld when a class holds 1 or 2 rows, and
/// calibration bins are merged until each holds 0 or at least 3 rows of each class.
#[test]
fn small_cells_of_the_held_out_figures_are_suppressed() {
    let dir = fresh_dir("disclosure-cells");
    let train: Vec<String> = ['a', 'b', 'c']
        .iter()
        .map(|&h| slice(&dir, h, 10, 180))
        .collect();
    let held: Vec<String> = ['a', 'b', 'c']
        .iter()
        .map(|&h| slice(&dir, h, 0, 10))
        .collect();
    let parties: Vec<&str> = train.iter().map(String::as_str).collect();
    let mut flags = vec!["--standardize", "--min-cell", "0"];
    for f in &held {
        flags.extend(["--test-party", f]);
    }
    // The Nodes' own class checks off (min_cell 0) so that the published figures are made.
    let (ok, plain, err) = study(&parties, &flags);
    assert!(ok, "{err}");
    let plain: serde_json::Value = serde_json::from_str(&plain).expect("json");
    let bins = plain["calibration"]["bins"].as_array().expect("bins");
    assert_eq!(bins.len(), 10, "no control: ten fixed bins");
    // The same figures under min_cell 3 at the aggregator: bins merged, each fine.
    let published: privlogit::evaluation::Evaluation =
        serde_json::from_value(plain.clone()).expect("the evaluation's fields");
    let published = published.disclosed(3);
    assert!(published.calibration.bins.iter().all(|b| {
        let small = |n: u64| n > 0 && n < 3;
        !small(b.n) && !small(b.observed) && !small(b.n - b.observed)
    }));
    let rows: u64 = published.calibration.bins.iter().map(|b| b.n).sum();
    assert_eq!(rows, 30, "merging keeps every row");
}

/// `--out` never replaces a device, FIFO or symbolic link: a device is written through (and
/// stays a device), a FIFO's reader gets the result, a link is followed and kept.
#[cfg(unix)]
#[test]
fn outputs_write_through_devices_fifos_and_links() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = fresh_dir("outputs");
    let parties = narrow_demo(&dir);
    let parties: Vec<&str> = parties.iter().map(String::as_str).collect();
    let (ok, _, err) = study(&parties, &["--standardize", "--out", "/dev/null"]);
    assert!(ok, "{err}");
    assert!(
        std::fs::metadata("/dev/null")
            .expect("null")
            .file_type()
            .is_char_device()
    );
    // /dev/full takes the open and refuses the bytes: the study fails, the device stays.
    let (ok, _, err) = study(&parties, &["--standardize", "--out", "/dev/full"]);
    assert!(!ok && err.contains("/dev/full"), "{err}");
    assert!(
        std::fs::metadata("/dev/full")
            .expect("full")
            .file_type()
            .is_char_device()
    );
    // A FIFO: its reader gets the whole result.
    let fifo = dir.join("result.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).expect("read the fifo"))
    };
    let fifo_arg = fifo.display().to_string();
    let (ok, _, err) = study(&parties, &["--standardize", "--out", &fifo_arg]);
    assert!(ok, "{err}");
    let text = reader.join().expect("reader");
    let v: serde_json::Value = serde_json::from_str(&text).expect("the whole JSON");
    assert_eq!(v["status"], "converged");
    assert!(
        std::fs::metadata(&fifo)
            .expect("fifo")
            .file_type()
            .is_fifo()
    );
    // A link: followed, and still a link afterwards.
    let target = dir.join("model.json");
    let link = dir.join("latest.json");
    std::fs::write(&target, "old").expect("target");
    std::os::unix::fs::symlink("model.json", &link).expect("link");
    let link_arg = link.display().to_string();
    let (ok, _, err) = study(&parties, &["--standardize", "--out", &link_arg]);
    assert!(ok, "{err}");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("link")
            .file_type()
            .is_symlink()
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).expect("target")).expect("json");
    assert_eq!(v["status"], "converged");
}

/// An output that cannot be written is refused before any party starts: the aggregator does
/// not listen, the one-process study makes no key.
#[test]
fn an_unwritable_out_is_refused_before_any_party_starts() {
    let dir = fresh_dir("unwritable");
    // Root writes through a directory's mode: /sys, which the kernel keeps read-only, then.
    let read_only: PathBuf = {
        let ro = dir.join("read-only");
        std::fs::create_dir(&ro).expect("dir");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o500)).expect("chmod");
        }
        if std::fs::write(ro.join("probe"), "").is_ok() {
            PathBuf::from("/sys")
        } else {
            ro
        }
    };
    let out = read_only.join("model.json").display().to_string();
    let study_file = dir.join("study.toml");
    std::fs::write(&study_file, "label = \"label\"\n").expect("study file");
    let study_file = study_file.display().to_string();
    let started = std::time::Instant::now();
    let run = privlogit(&[
        "aggregator",
        "--study",
        &study_file,
        "--insecure-plaintext",
        "--parties",
        "3",
        "--listen",
        "127.0.0.1:0",
        "--keyholder",
        "127.0.0.1:9",
        "--state",
        &dir.join("state").display().to_string(),
        "--out",
        &out,
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{err}");
    assert!(
        err.contains("model.json") && !err.contains("listening on"),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let parties = [
        demo("hospital_a.csv"),
        demo("hospital_b.csv"),
        demo("hospital_c.csv"),
    ];
    let parties: Vec<&str> = parties.iter().map(String::as_str).collect();
    let (ok, _, err) = study(&parties, &["--standardize", "--out", &out]);
    assert!(!ok && err.contains("model.json"), "{err}");
    assert!(!err.contains("key holder"), "{err}");
}

/// A study file carrying `seed` or `noise_seed` is refused by both servers (the key holder
/// would regenerate the aggregator's masks; each server would know the other's noise), and
/// so is `--seed` on a server's command line outside the tests.
#[test]
fn seeds_are_refused_by_both_servers() {
    let dir = fresh_dir("seeds");
    for seed in ["seed = 7", "noise_seed = 7"] {
        let file = dir.join("study.toml");
        std::fs::write(&file, format!("label = \"label\"\n{seed}\n")).expect("study file");
        let file = file.display().to_string();
        for role in ["keyholder", "aggregator"] {
            let out = privlogit(&[
                role,
                "--study",
                &file,
                "--insecure-plaintext",
                "--listen",
                "127.0.0.1:0",
            ]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{role} {seed}: {err}");
            assert!(
                err.contains("refused by `") && err.contains("study.toml"),
                "{err}"
            );
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args([
            "aggregator",
            "--insecure-plaintext",
            "--parties",
            "3",
            "--seed",
            "7",
        ])
        .env_remove("PRIVLOGIT_INSECURE_TEST_SEEDS")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--seed refused by `aggregator`"),
        "{err}"
    );
    // The one-process study takes a seed (every party is this process).
    let parties = narrow_demo(&dir);
    let parties: Vec<&str> = parties.iter().map(String::as_str).collect();
    let (ok, _, err) = study(&parties, &["--standardize", "--seed", "7"]);
    assert!(ok, "{err}");
}

/// A vertical study whose parties share 2 identifiers is refused by each party before it
/// deals anything (the review recovered both people's values through the standardisation).
#[test]
fn a_vertical_intersection_under_the_minimum_is_refused() {
    let dir = fresh_dir("disclosure-vertical");
    let vertical = |name: &str| {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .join("data/vertical")
            .join(name)
    };
    // The outcomes' first 2 rows and the imaging rows of the same ids plus others'.
    let outcomes = std::fs::read_to_string(vertical("outcomes.csv")).expect("outcomes");
    let kept: Vec<&str> = outcomes.lines().take(3).collect();
    let ids: Vec<&str> = kept[1..]
        .iter()
        .map(|l| l.split(',').next().expect("id"))
        .collect();
    let a = dir.join("outcomes-2.csv");
    std::fs::write(&a, kept.join("\n") + "\n").expect("write");
    let a = a.display().to_string();
    let b = vertical("imaging.csv").display().to_string();
    let out = privlogit(&[
        "study",
        "--vertical",
        "--id",
        "id",
        "--label",
        "label",
        "--quiet",
        "--party",
        &a,
        "--party",
        &b,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("share fewer than 3 rows"), "{err}");
    assert!(!ids.is_empty());
}
