//! `privlogit dl` end to end (issue 16): distributed training equals centralised numpy training
//! without noise; the participants as separate processes over loopback; a participant killed or
//! refusing its budget stops the run with its name and no model written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ndarray::Axis;

use crate::common;
use common::largest_difference;
use common::process::{Role, address, fresh_dir, new_identity, privlogit, privlogit_ok};

/// The numpy reference of tests/reference/dpstgd_reference.py (command in its JSON).
fn reference() -> serde_json::Value {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("tests/reference/dpstgd_reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("reference")).expect("JSON")
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// breast_cancer standardised as the reference does (pooled mean, ddof 0), written as the
/// reference's three blocks; and the reference's initial parameters as a model file.
fn setup(dir: &Path) -> (Vec<PathBuf>, PathBuf) {
    let data = common::load_shared("breast_cancer.csv");
    let mean = data.x.mean_axis(Axis(0)).expect("rows");
    let sd = data.x.std_axis(Axis(0), 0.0);
    let x = (&data.x - &mean) / &sd;
    let r = reference();
    let mut files = Vec::new();
    for (k, block) in r["blocks"].as_array().expect("blocks").iter().enumerate() {
        let (start, end) = (
            block[0].as_u64().expect("start") as usize,
            block[1].as_u64().expect("end") as usize,
        );
        let mut text = data.names.join(",") + ",label\n";
        for i in start..end {
            let row: Vec<String> = x.row(i).iter().map(|v| format!("{v:?}")).collect();
            text += &format!("{},{}\n", row.join(","), data.y[i]);
        }
        let path = dir.join(format!("participant_{k}.csv"));
        std::fs::write(&path, text).expect("write");
        files.push(path);
    }
    let init = dir.join("init.json");
    let model = serde_json::json!({"sizes": r["sizes"], "parameters": r["initial"]});
    std::fs::write(&init, model.to_string()).expect("write");
    (files, init)
}

/// The settings of the reference: DPSTGD's non-private baseline, no noise, q = 1, every
/// coordinate as its value.
fn reference_settings(r: &serde_json::Value) -> Vec<String> {
    vec![
        "--mechanism".into(),
        "dpstgd".into(),
        "--non-private".into(),
        "--q".into(),
        "1".into(),
        "--upload-ratio".into(),
        "1".into(),
        "--exact-upload".into(),
        "--bound".into(),
        r["bound"].to_string(),
        "--learning-rate".into(),
        r["learning_rate"].to_string(),
        "--iterations".into(),
        r["iterations"].to_string(),
        "--hidden".into(),
        "50,20".into(),
    ]
}

fn parameters(path: &Path) -> Vec<f64> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("model")).expect("JSON");
    floats(&v["parameters"])
}

/// `privlogit dl participant` with `file`, joining the server at `at` as `name` over plain TCP,
/// with `extra` flags.
/// `privlogit dl server` for `count` participants on a free loopback port over plain TCP, with
/// `extra` flags; and the address it listens on.
fn server(count: &str, extra: &[&str]) -> (Role, String) {
    let mut args = vec![
        "dl",
        "server",
        "--participants",
        count,
        "--listen",
        "127.0.0.1:0",
        "--insecure-plaintext",
    ];
    args.extend_from_slice(extra);
    let mut role = Role::spawn(&args);
    let at = address(&role.wait_for("listening on", Duration::from_secs(30)));
    (role, at)
}

fn participant(file: &str, at: &str, name: &str, extra: &[&str]) -> Role {
    let mut args = vec![
        "dl",
        "participant",
        "--party",
        file,
        "--label",
        "label",
        "--server",
        at,
        "--name",
        name,
        "--insecure-plaintext",
    ];
    args.extend_from_slice(extra);
    Role::spawn(&args)
}

/// Acceptance: without noise, with upload ratio 1 and q = 1, distributed training (in this
/// process, and as four processes over loopback TCP) equals centralised training of the same
/// network from the same start, after 10 iterations, to 1e-9 (numpy's float order differs from
/// ours: the difference is rounding, ~1e-15 per operation, which 1e-9 bounds with room).
#[test]
fn without_noise_distributed_training_equals_centralised_numpy_training() {
    let dir = fresh_dir("dl-equal");
    let (files, init) = setup(&dir);
    let r = reference();
    let expected = floats(&r["final"]);
    let initial = floats(&r["initial"]);
    assert!(
        largest_difference(&expected, &initial) > 1e-2,
        "the reference moved"
    );
    let settings = reference_settings(&r);

    let local = dir.join("local.json");
    let mut args: Vec<String> = vec![
        "dl".into(),
        "train".into(),
        "--label".into(),
        "label".into(),
        "--party".into(),
    ];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(settings.iter().cloned());
    args.extend([
        "--init".into(),
        init.display().to_string(),
        "--out".into(),
        local.display().to_string(),
    ]);
    privlogit_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let diff = largest_difference(&parameters(&local), &expected);
    eprintln!("dl train (in process) vs numpy: max abs diff {diff:.2e}");
    assert!(diff <= 1e-9, "{diff:e}");

    let remote = dir.join("remote.json");
    let mut server_args: Vec<String> = [
        "dl",
        "server",
        "--participants",
        "3",
        "--listen",
        "127.0.0.1:0",
        "--insecure-plaintext",
    ]
    .map(String::from)
    .to_vec();
    server_args.extend(settings.iter().cloned());
    server_args.extend([
        "--init".into(),
        init.display().to_string(),
        "--out".into(),
        remote.display().to_string(),
    ]);
    let mut server = Role::spawn(&server_args.iter().map(String::as_str).collect::<Vec<_>>());
    let at = address(&server.wait_for("listening on", Duration::from_secs(30)));
    let participants: Vec<Role> = files
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let name = format!("bank-{k}");
            participant(
                &f.display().to_string(),
                &at,
                &name,
                &["--allow-non-private"],
            )
        })
        .collect();
    let (ok, log) = server.end(Duration::from_secs(120));
    assert!(ok, "{log}");
    for p in participants {
        let (ok, log) = p.end(Duration::from_secs(30));
        assert!(ok, "{log}");
        assert!(log.contains("final model received"), "{log}");
    }
    let diff = largest_difference(&parameters(&remote), &expected);
    eprintln!("dl server + 3 participant processes vs numpy: max abs diff {diff:.2e}");
    assert!(diff <= 1e-9, "{diff:e}");
}

/// A participant killed mid-run stops the server with an error naming it, and no model is
/// written; the other participants stop too.
#[test]
fn a_killed_participant_stops_the_run_with_its_name_and_no_model() {
    let dir = fresh_dir("dl-kill");
    let (files, _) = setup(&dir);
    let out = dir.join("model.json");
    let (mut server, at) = server(
        "3",
        &[
            "--mechanism",
            "dpstgd",
            "--epsilon",
            "1",
            "--iterations",
            "100000000",
            "--report-every",
            "1000000",
            "--deadline",
            "3",
            "--out",
            &out.display().to_string(),
        ],
    );
    let mut participants: Vec<Role> = files
        .iter()
        .enumerate()
        .map(|(k, f)| {
            participant(
                &f.display().to_string(),
                &at,
                &format!("bank-{k}"),
                &["--deadline", "3"],
            )
        })
        .collect();
    // The transport labels plaintext connections by place: find bank-1's.
    let joined = server.wait_for("participant bank-1 (", Duration::from_secs(60));
    let label = joined
        .split('(')
        .nth(1)
        .and_then(|t| t.split(')').next())
        .expect("a label")
        .to_string();
    for p in participants.iter_mut() {
        p.wait_for("iteration", Duration::from_secs(60));
    }
    let victim = participants.remove(1);
    let pid = victim.child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let (status, log) = server.end_with_status(Duration::from_secs(60));
    eprintln!("server after the kill:\n{log}");
    // Exit status 5: a party or the network failed (docs/src/deployment.md), as a study's.
    assert_eq!(
        status.code(),
        Some(5),
        "the server must fail as lost: {log}"
    );
    let last = log.lines().last().expect("an error line");
    // The loss shows first on the victim's own connection ("bank-1 (Node X): ... reset") or on
    // another's ("Node X hung up"): either way the line names the lost participant's connection.
    assert!(
        last.starts_with("error:") && last.contains(&label),
        "{last}"
    );
    assert!(!out.exists(), "no model written");
    for p in participants {
        let (status, log) = p.end_with_status(Duration::from_secs(60));
        assert_eq!(status.code(), Some(5), "the others stop as lost too: {log}");
    }
    let _ = victim.end(Duration::from_secs(5));
}

/// A participant whose data the network cannot read (another number of features) is told why
/// by the server, as every other participant is, instead of seeing only a closed connection;
/// and a server given a ledger, which it has no data set to charge, refuses before it listens.
#[test]
fn a_participant_refused_at_the_welcome_is_told_why() {
    let dir = fresh_dir("dl-features");
    let (files, _) = setup(&dir);
    let narrow = dir.join("narrow.csv");
    let text = std::fs::read_to_string(&files[1]).expect("read");
    let cut: String = text
        .lines()
        .map(|l| l.split_once(',').map_or(l, |(_, tail)| tail).to_string() + "\n")
        .collect();
    std::fs::write(&narrow, cut).expect("write");
    let (server, at) = server("2", &["--mechanism", "dpstgd", "--epsilon", "1"]);
    let first = participant(&files[0].display().to_string(), &at, "bank-0", &[]);
    let second = participant(&narrow.display().to_string(), &at, "bank-1", &[]);
    let (ok, log) = server.end(Duration::from_secs(60));
    assert!(!ok && log.contains("features"), "{log}");
    for p in [first, second] {
        let (ok, log) = p.end(Duration::from_secs(30));
        assert!(!ok, "{log}");
        assert!(log.contains("features, the network reads"), "{log}");
    }
    let out = privlogit(&[
        "dl",
        "server",
        "--participants",
        "2",
        "--listen",
        "127.0.0.1:0",
        "--insecure-plaintext",
        "--ledger",
        &dir.join("ledger.json").display().to_string(),
        "--ledger-total",
        "10",
        "--epsilon",
        "1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--ledger: the server holds no data set"),
        "{err}"
    );
    assert!(!err.contains("listening on"), "{err}");
}

/// A participant whose budget the plan would pass refuses before it trains; the server stops
/// naming it and writes nothing. `dl train` refuses the same plan up front.
#[test]
fn a_run_past_a_participants_budget_is_refused_before_training() {
    let dir = fresh_dir("dl-budget");
    let (files, _) = setup(&dir);
    let out = dir.join("model.json");
    let (server, at) = server(
        "1",
        &[
            "--mechanism",
            "dpstgd",
            "--epsilon",
            "0.01",
            "--iterations",
            "1000",
            "--out",
            &out.display().to_string(),
        ],
    );
    let p = participant(
        &files[0].display().to_string(),
        &at,
        "bank-0",
        &["--budget", "1"],
    );
    let (ok, log) = p.end(Duration::from_secs(60));
    assert!(!ok);
    assert!(
        log.contains("refuses the run") && log.contains("at most"),
        "{log}"
    );
    let (ok, log) = server.end(Duration::from_secs(60));
    assert!(!ok && log.contains("refuses the run"), "{log}");
    assert!(!out.exists());

    let refused = privlogit(&[
        "dl",
        "train",
        "--party",
        &files[0].display().to_string(),
        "--label",
        "label",
        "--mechanism",
        "dpstgd",
        "--epsilon",
        "0.01",
        "--iterations",
        "1000",
        "--budget",
        "1",
        "--out",
        &out.display().to_string(),
    ]);
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && text.contains("past the budget 1"),
        "{text}"
    );
    assert!(!out.exists());
}

/// The dissertation's accounting does not pass silently: against a budget it is refused
/// unless acknowledged (`--accept-unsound-accounting`), the refusal naming both figures; an
/// acknowledged run prints both figures when it ends and writes both, with which one decided,
/// into the model file.
#[test]
fn the_dissertations_accounting_needs_an_acknowledgement() {
    let dir = fresh_dir("dl-unsound");
    let (files, _) = setup(&dir);
    let out = dir.join("model.json");
    let run = |extra: &[&str]| {
        let party = files[0].display().to_string();
        let out = out.display().to_string();
        let mut args = vec![
            "dl",
            "train",
            "--party",
            &party,
            "--label",
            "label",
            "--mechanism",
            "dpstgd",
            "--epsilon",
            "0.01",
            "--q",
            "0.5",
            "--upload-ratio",
            "0.01",
            "--hidden",
            "4",
            "--iterations",
            "3",
            "--accounting",
            "dissertation",
            "--budget",
            "1000",
            "--seed",
            "1",
            "--out",
            &out,
        ];
        args.extend(extra);
        privlogit(&args)
    };
    let refused = run(&[]);
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{text}");
    assert!(text.contains("not a privacy bound"), "{text}");
    assert!(text.contains("soundly"), "{text}");
    assert!(!out.exists());
    let accepted = run(&["--accept-unsound-accounting"]);
    let text = String::from_utf8_lossy(&accepted.stderr);
    assert!(accepted.status.success(), "{text}");
    assert!(
        text.contains("privacy spent:") && text.contains("not a privacy bound"),
        "{text}"
    );
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("model")).expect("json");
    let sound = model["spend_sound"][0].as_f64().expect("sound");
    let dissertation = model["spend_dissertation"][0]
        .as_f64()
        .expect("dissertation");
    assert!(sound > dissertation, "{model}");
    assert!(
        model["accounting"]
            .as_str()
            .is_some_and(|a| a.starts_with("dissertation")),
        "{model}"
    );
}

/// Over mutual TLS with a study file naming every party's certificate (the deployment path):
/// the server and three participant processes train as over plain TCP, in the study file's
/// order, and equal the numpy reference to 1e-9.
#[test]
fn over_mutual_tls_the_run_equals_the_numpy_reference() {
    let dir = fresh_dir("dl-tls");
    let (files, init) = setup(&dir);
    let r = reference();
    let server_fp = new_identity(&dir, "server");
    let keyholder_fp = new_identity(&dir, "keyholder");
    let mut study = format!(
        "[keyholder]\nfingerprint = \"{keyholder_fp}\"\n[aggregator]\nname = \"server\"\nfingerprint = \"{server_fp}\"\n"
    );
    for k in 0..files.len() {
        let fp = new_identity(&dir, &format!("bank-{k}"));
        study += &format!("[[node]]\nname = \"bank-{k}\"\nfingerprint = \"{fp}\"\n");
    }
    let study_file = dir.join("study.toml");
    std::fs::write(&study_file, study).expect("study file");
    let study_path = study_file.display().to_string();
    let out = dir.join("tls.json");
    let mut args: Vec<String> = [
        "dl",
        "server",
        "--study",
        &study_path,
        "--listen",
        "127.0.0.1:0",
        "--identity",
    ]
    .map(String::from)
    .to_vec();
    args.push(dir.join("server").display().to_string());
    args.extend(reference_settings(&r));
    args.extend([
        "--init".into(),
        init.display().to_string(),
        "--out".into(),
        out.display().to_string(),
    ]);
    let mut server = Role::spawn(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let at = address(&server.wait_for("listening on", Duration::from_secs(30)));
    let participants: Vec<Role> = files
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let id = dir.join(format!("bank-{k}")).display().to_string();
            Role::spawn(&[
                "dl",
                "participant",
                "--study",
                &study_path,
                "--identity",
                &id,
                "--party",
                &f.display().to_string(),
                "--label",
                "label",
                "--server",
                &at,
                "--allow-non-private",
            ])
        })
        .collect();
    let (ok, log) = server.end(Duration::from_secs(120));
    assert!(ok, "{log}");
    assert!(!log.contains("plain TCP"), "{log}");
    for p in participants {
        let (ok, log) = p.end(Duration::from_secs(30));
        assert!(ok, "{log}");
    }
    let diff = largest_difference(&parameters(&out), &floats(&r["final"]));
    eprintln!("dl over mutual TLS vs numpy: max abs diff {diff:.2e}");
    assert!(diff <= 1e-9, "{diff:e}");
}

/// A participant refuses a run the server plans without noise unless it says
/// `--allow-non-private`: privacy is the participant's to give up, not the server's.
#[test]
fn a_participant_refuses_a_non_private_plan_unless_it_allows_it() {
    let dir = fresh_dir("dl-nonprivate");
    let (files, _) = setup(&dir);
    let (server, at) = server("1", &["--non-private", "--iterations", "3"]);
    let p = participant(&files[0].display().to_string(), &at, "bank-0", &[]);
    let (ok, log) = p.end(Duration::from_secs(60));
    assert!(!ok && log.contains("without noise"), "{log}");
    let (ok, log) = server.end(Duration::from_secs(60));
    assert!(!ok && log.contains("without noise"), "{log}");
}

/// The sparse Gaussian mechanism, the default: `dl train` spends at most its `--epsilon`
/// (within the calibration's 0.1 %), charges each participant's file on `--ledger` (a second
/// run past the ledger's total is refused before training, and writes nothing), and uploads a
/// tenth of the parameters as about a byte each; the same plan over TCP, a server and three
/// participant processes, trains and reports its traffic.
#[test]
fn sparse_gaussian_runs_spend_their_budget_charge_the_ledger_and_upload_little() {
    let dir = fresh_dir("dl-sparse");
    let (files, _) = setup(&dir);
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let ledger = dir.join("ledger.json").display().to_string();
    let out = dir.join("model.json");
    let run = |out: &Path| {
        let out = out.display().to_string();
        let mut args = vec!["dl", "train", "--label", "label", "--party"];
        args.extend(names.iter().map(String::as_str));
        args.extend([
            "--epsilon",
            "2",
            "--q",
            "0.2",
            "--iterations",
            "20",
            "--hidden",
            "50,20",
            "--seed",
            "3",
            "--ledger",
            &ledger,
            "--ledger-total",
            "3",
            "--out",
            &out,
        ]);
        privlogit(&args)
    };
    let first = run(&out);
    let text = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{text}");
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("model")).expect("json");
    assert_eq!(model["method"], "sparse-gaussian", "{model}");
    let eps = model["spend_sound"][0].as_f64().expect("epsilon");
    assert!(eps <= 2.0 && eps > 2.0 * 0.998, "{eps}");
    assert_eq!(model["spend_sound"][1].as_f64(), Some(1e-5));
    let dim = model["parameters"].as_array().expect("parameters").len();
    let n = (0.1 * dim as f64).floor();
    let up = model["traffic"]["up_per_participant"].as_f64().expect("up") / 20.0;
    // Header (9 bytes) and step (8), then counts of about a byte each (at most 2 here).
    assert!(
        up <= 17.0 + 2.0 * n && up >= 17.0 + n,
        "{up} bytes for {n} counts"
    );
    assert!(text.contains("ledger"), "{text}");
    let down = model["traffic"]["down_per_participant"]
        .as_f64()
        .expect("down");
    assert!(down < 0.25 * 20.0 * 8.0 * dim as f64, "{down} bytes down");
    let second = dir.join("second.json");
    let refused = run(&second);
    let text = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{text}");
    assert!(text.contains("participant_0.csv"), "{text}");
    assert!(!second.exists());

    let remote = dir.join("remote.json");
    let (server, at) = server(
        "3",
        &[
            "--epsilon",
            "3",
            "--iterations",
            "5",
            "--out",
            &remote.display().to_string(),
        ],
    );
    let participants: Vec<Role> = names
        .iter()
        .enumerate()
        .map(|(k, f)| participant(f, &at, &format!("bank-{k}"), &["--budget", "3"]))
        .collect();
    let (ok, log) = server.end(Duration::from_secs(120));
    assert!(ok, "{log}");
    for p in participants {
        let (ok, log) = p.end(Duration::from_secs(60));
        assert!(ok, "{log}");
        assert!(log.contains("per participant"), "{log}");
    }
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&remote).expect("model")).expect("json");
    assert_eq!(model["method"], "sparse-gaussian");
    assert!(model["traffic"]["up_per_participant"].as_f64().expect("up") > 0.0);
    // After the first visit a participant downloads the uploads since its last one (replayed
    // and checked against the server's checksum), not the parameters: well under half.
    let down = model["traffic"]["down_per_participant"]
        .as_f64()
        .expect("down");
    assert!(down < 0.5 * 5.0 * 8.0 * dim as f64, "{down} bytes");
}
