//! The secure study commands end to end: `privlogit study` against `privlogit fit`, and the three
//! roles as separate processes over real TCP, with a Node killed mid-run.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn demo(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/demo")
        .join(name)
        .display()
        .to_string()
}

fn json(stdout: &[u8]) -> serde_json::Value {
    serde_json::from_slice(stdout).expect("JSON on stdout")
}

fn coefficients(v: &serde_json::Value) -> Vec<f64> {
    v["coefficients"]
        .as_array()
        .expect("coefficients")
        .iter()
        .map(|c| c.as_f64().expect("number"))
        .collect()
}

/// The README's demo study: secure PrivLogit-Local (accelerated, standardised under encryption)
/// equals the plaintext distributed fit to 1e-6, with the same iteration count.
#[test]
fn study_command_matches_plaintext_fit() {
    let files = ["hospital_a.csv", "hospital_b.csv", "hospital_c.csv"].map(demo);
    let mut study = Command::new(env!("CARGO_BIN_EXE_privlogit"));
    study.args([
        "study",
        "--label",
        "label",
        "--standardize",
        "--protocol",
        "local",
    ]);
    study.args(["--accelerate", "--json", "--quiet"]);
    for f in &files {
        study.args(["--party", f]);
    }
    let out = study.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secure = json(&out.stdout);

    let mut fit = Command::new(env!("CARGO_BIN_EXE_privlogit"));
    fit.args([
        "fit",
        "--label",
        "label",
        "--standardize",
        "--optimizer",
        "privlogit-accel",
    ]);
    fit.args(["--json", "--quiet", "--party"]);
    fit.args(&files);
    let out = fit.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plain = json(&out.stdout);

    assert_eq!(secure["converged"], true);
    assert_eq!(secure["iterations"], plain["iterations"]);
    let (a, b) = (coefficients(&secure), coefficients(&plain));
    let diff = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    eprintln!(
        "study vs fit: max abs diff {diff:.2e}, {} AND gates",
        secure["and_gates"]
    );
    assert!(diff <= 1e-6, "{diff:e}");
    assert!(secure["and_gates"].as_u64().expect("count") > 0);
}

/// A spawned role whose standard error is read line by line on a thread.
struct Role {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Role {
    fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_privlogit"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Role {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line containing `needle`, returning it.
    fn wait_for(&mut self, needle: &str, patience: Duration) -> String {
        let deadline = Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {needle:?}; saw {:?}", self.seen),
            }
        }
    }

    /// Waits for the process to end, at most `patience`; returns success and all stderr.
    fn end(mut self, patience: Duration) -> (bool, String) {
        let deadline = Instant::now() + patience;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the process did not end; saw {:?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(line);
        }
        (status.success(), self.seen.join("\n"))
    }
}

fn address(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.contains(':') && w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .expect("an address")
        .trim_end_matches(',')
        .to_string()
}

/// Key holder, aggregator and three Nodes as five processes over TCP; one Node is killed after
/// the third iteration. The aggregator and the key holder stop within seconds with errors that
/// name who failed and at which step, and the aggregator writes no result file.
#[test]
fn killing_a_node_process_stops_the_study() {
    let scratch = std::env::temp_dir().join(format!("privlogit-kill-{}", std::process::id()));
    let result = scratch.with_extension("json");
    let _ = std::fs::remove_file(&result);
    let mut keyholder = Role::spawn(&["keyholder", "--listen", "127.0.0.1:0"]);
    let kh = address(&keyholder.wait_for("listening on", Duration::from_secs(30)));
    let result_path = result.display().to_string();
    let mut aggregator = Role::spawn(&[
        "aggregator",
        "--listen",
        "127.0.0.1:0",
        "--keyholder",
        &kh,
        "--parties",
        "3",
        "--protocol",
        "hessian",
        "--standardize",
        "--out",
        &result_path,
    ]);
    let agg = address(&aggregator.wait_for("listening on", Duration::from_secs(30)));
    let mut nodes: Vec<Role> = ["hospital_a.csv", "hospital_b.csv", "hospital_c.csv"]
        .iter()
        .map(|f| {
            let file = demo(f);
            Role::spawn(&[
                "node",
                "--party",
                &file,
                "--label",
                "label",
                "--aggregator",
                &agg,
            ])
        })
        .collect();
    let locals: Vec<String> = nodes
        .iter_mut()
        .map(|n| {
            let line = n.wait_for("joined", Duration::from_secs(30));
            line.rsplit(' ').next().expect("local address").to_string()
        })
        .collect();
    // The aggregator numbers Nodes in the order they connected.
    let mut numbers = Vec::new();
    for _ in 0..3 {
        let line = aggregator.wait_for("connected from", Duration::from_secs(30));
        let from = line.rsplit(' ').next().expect("address").to_string();
        let number: usize = line
            .split_whitespace()
            .nth(1)
            .expect("number")
            .parse()
            .expect("n");
        numbers.push((from, number));
    }
    aggregator.wait_for("iteration    3", Duration::from_secs(120));
    let mut victim = nodes.remove(1);
    let victim_number = numbers
        .iter()
        .find(|(from, _)| *from == locals[1])
        .map(|(_, n)| *n)
        .unwrap_or_else(|| panic!("the victim's number: {locals:?} {numbers:?}"));
    let victim_name = format!("Node {victim_number}");
    victim.child.kill().expect("kill");
    let killed = Instant::now();
    let (ok, log) = aggregator.end(Duration::from_secs(30));
    let stopped = killed.elapsed();
    eprintln!("aggregator after the kill ({stopped:?}):\n{log}");
    assert!(!ok, "the aggregator must fail");
    assert!(stopped < Duration::from_secs(10), "{stopped:?}");
    let last = log.lines().last().expect("an error line");
    assert!(
        last.starts_with("error:") && last.contains(&victim_name),
        "{last}"
    );
    assert!(last.contains("Gradient"), "names the step: {last}");
    assert!(!result.exists(), "no partial result written");
    let (ok, log) = keyholder.end(Duration::from_secs(30));
    assert!(!ok, "the key holder must fail too:\n{log}");
    for n in nodes {
        let (ok, log) = n.end(Duration::from_secs(30));
        assert!(!ok, "the other Nodes must fail too:\n{log}");
    }
    let _ = victim.child.wait();
}

/// A study file gives the settings; a flag on the command line overrides it; a malformed file
/// is refused with its line and column.
#[test]
fn study_file_settings_and_overrides() {
    let dir = std::env::temp_dir().join(format!("privlogit-studyfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let files: Vec<String> = ["hospital_a.csv", "hospital_b.csv", "hospital_c.csv"]
        .map(demo)
        .to_vec();
    let good = dir.join("study.toml");
    std::fs::write(
        &good,
        format!(
            "party = {files:?}\nlabel = \"label\"\nprotocol = \"hessian\"\nstandardize = true\nmax_iter = 5\n"
        ),
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args([
            "study",
            "--study",
            &good.display().to_string(),
            "--max-iter",
            "2",
        ])
        .args(["--json", "--quiet"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out.stdout);
    assert_eq!(v["protocol"], "hessian");
    assert_eq!(v["iterations"], 2, "the command line's --max-iter wins");
    assert_eq!(v["status"], "max_iterations");

    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "protocol = \"local\"\nlambda = = 2\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args(["study", "--study", &bad.display().to_string()])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:2:10:"), "{err}");
    assert!(out.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
