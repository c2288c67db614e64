//! A study between organizations as separate processes: identities, a study file naming
//! them, and the roles spawned over loopback TCP (shared by the study and operations tests).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::process::{Role, address, new_identity};

/// A demo data file (`data/demo/NAME`).
pub fn demo(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/demo")
        .join(name)
        .display()
        .to_string()
}

/// The JSON object a command printed.
pub fn json(stdout: &[u8]) -> serde_json::Value {
    serde_json::from_slice(stdout).expect("JSON on stdout")
}

/// The coefficients of a JSON result.
pub fn coefficients(v: &serde_json::Value) -> Vec<f64> {
    v["coefficients"]
        .as_array()
        .expect("coefficients")
        .iter()
        .map(|c| c.as_f64().expect("number"))
        .collect()
}

/// Five parties with identities from `privlogit identity new` and a study file naming their
/// certificates (hospital-a, -b, -c), plus a stranger's identity the file does not name.
pub struct Deployment {
    pub dir: std::path::PathBuf,
    pub study: String,
}

pub const HOSPITALS: [&str; 3] = ["hospital-a", "hospital-b", "hospital-c"];

impl Deployment {
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("privlogit-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let mut fingerprints = std::collections::HashMap::new();
        for name in ["keyholder", "aggregator", "stranger"]
            .iter()
            .chain(&HOSPITALS)
        {
            let fp = new_identity(&dir, name);
            fingerprints.insert(*name, fp);
        }
        // Accelerated PrivLogit with the paper's relative-change rule (37 iterations on the
        // demo) keeps these transport tests short; the default gradient rule is tested in
        // study_cli.rs.
        let mut file = format!(
            "label = \"label\"\nstandardize = true\noptimizer = \"privlogit-accel\"\ntol = 1e-6\ngradient_tol = 0\n[keyholder]\nfingerprint = \"{}\"\n[aggregator]\ncertificate = \"aggregator.crt\"\n",
            fingerprints["keyholder"]
        );
        for h in HOSPITALS {
            file.push_str(&format!(
                "[[node]]\nname = \"{h}\"\nfingerprint = \"{}\"\n",
                fingerprints[h]
            ));
        }
        let study = dir.join("study.toml");
        std::fs::write(&study, file).expect("study file");
        Self {
            study: study.display().to_string(),
            dir,
        }
    }

    pub fn identity(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    pub fn keyholder(&self) -> (Role, String) {
        self.keyholder_with(&[])
    }

    /// Each server's state directory (checkpoint, key file) inside the deployment.
    pub fn state(&self, role: &str) -> String {
        self.dir.join(format!("state-{role}")).display().to_string()
    }

    pub fn keyholder_with(&self, extra: &[&str]) -> (Role, String) {
        let id = self.identity("keyholder");
        let state = self.state("keyholder");
        let mut args = vec![
            "keyholder",
            "--study",
            &self.study,
            "--identity",
            &id,
            "--listen",
            "127.0.0.1:0",
            "--state",
            &state,
        ];
        args.extend(extra);
        let mut k = Role::spawn(&args);
        let address = address(&k.wait_for("listening on", Duration::from_secs(30)));
        (k, address)
    }

    pub fn aggregator(&self, keyholder: &str, extra: &[&str]) -> (Role, String) {
        self.aggregator_with_open_files(keyholder, extra, None)
    }

    /// The aggregator, under a limit on its open files if `files` says.
    pub fn aggregator_with_open_files(
        &self,
        keyholder: &str,
        extra: &[&str],
        files: Option<u32>,
    ) -> (Role, String) {
        let id = self.identity("aggregator");
        let state = self.state("aggregator");
        let mut args = vec![
            "aggregator",
            "--study",
            &self.study,
            "--identity",
            &id,
            "--listen",
            "127.0.0.1:0",
            "--keyholder",
            keyholder,
            "--state",
            &state,
        ];
        args.extend(extra);
        let mut a = match files {
            Some(files) => Role::spawn_with_open_files(files, &args),
            None => Role::spawn(&args),
        };
        let address = address(&a.wait_for("listening on", Duration::from_secs(30)));
        (a, address)
    }

    /// A Node with `identity`'s certificate serving hospital `data` (a, b or c).
    pub fn node(&self, identity: &str, data: char, aggregator: &str) -> Role {
        node_process(
            &self.study,
            &self.identity(identity),
            &demo(&format!("hospital_{data}.csv")),
            Some(aggregator),
        )
    }
}

/// A Node process of the study file `study` with the identity `identity` serving `data`,
/// dialling `aggregator` (or the study file's address).
pub fn node_process(study: &str, identity: &str, data: &str, aggregator: Option<&str>) -> Role {
    let mut args = vec![
        "node",
        "--study",
        study,
        "--identity",
        identity,
        "--party",
        data,
    ];
    if let Some(a) = aggregator {
        args.extend(["--aggregator", a]);
    }
    Role::spawn(&args)
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free loopback port (bound, then released for a server to take).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

/// The plaintext fit of the demo files with this optimiser (the reference of a secure study).
pub fn plaintext_fit(files: &[String], optimizer: &str) -> Vec<f64> {
    let mut fit = Command::new(env!("CARGO_BIN_EXE_privlogit"));
    fit.args([
        "fit",
        "--label",
        "label",
        "--standardize",
        "--optimizer",
        optimizer,
    ]);
    // The deployments' stopping rule (the paper's relative change, see `Deployment::new`).
    fit.args(["--tol", "1e-6", "--gradient-tol", "0"]);
    fit.args(["--json", "--quiet", "--party"]);
    fit.args(files);
    let out = fit.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    coefficients(&json(&out.stdout))
}
