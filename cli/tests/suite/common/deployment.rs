//! A study between organizations as separate processes: identities, a study file naming
//! them, and the roles spawned over loopback TCP (shared by the study and operations tests).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::process::{Role, address, new_identity};

/// A demo data file (`data/demo/NAME`).
pub fn demo(name: &str) -> String {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
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
    /// The hospitals' data files, narrowed (see [`narrow_hospitals`]).
    pub hospitals: [String; 3],
}

/// The features of a deployment's hospitals: the demo's first four (breast_cancer's mean
/// radius, texture, perimeter and area). These tests are about processes, certificates and
/// transport; 4 instead of 30 features makes each study several times cheaper.
pub const DEPLOYMENT_FEATURES: usize = 4;

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
        // Accelerated PrivLogit with the paper's relative-change rule (15 iterations on the
        // deployment's hospitals, 37 on the whole demo) keeps these transport tests short; the
        // default gradient rule is tested in study_cli.rs.
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
            hospitals: narrow_hospitals(&dir, DEPLOYMENT_FEATURES),
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

    /// A Node with `identity`'s certificate serving the deployment's hospital `data` (a, b or
    /// c).
    pub fn node(&self, identity: &str, data: char, aggregator: &str) -> Role {
        node_process(
            &self.study,
            &self.identity(identity),
            &self.hospital(data),
            Some(aggregator),
        )
    }

    /// The three hospitals as Node processes dialling `aggregator`, in Node order.
    pub fn hospital_nodes(&self, aggregator: &str) -> Vec<Role> {
        HOSPITALS
            .iter()
            .zip(['a', 'b', 'c'])
            .map(|(h, c)| self.node(h, c, aggregator))
            .collect()
    }

    /// `privlogit study ARGS` in one process over the three hospitals' files: its JSON result
    /// (it must succeed).
    pub fn one_process_study(&self, args: &[&str]) -> serde_json::Value {
        let mut one = Command::new(env!("CARGO_BIN_EXE_privlogit"));
        one.arg("study").args(args);
        for c in ['a', 'b', 'c'] {
            one.args(["--party", &self.hospital(c)]);
        }
        let out = one.output().expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out.stdout)
    }

    /// The whole study run once: the key holder (with `keyholder` arguments), the aggregator
    /// (with `aggregator`) and the three hospitals, every one exiting 0 within `patience`.
    pub fn run_all(&self, keyholder: &[&str], aggregator: &[&str], patience: Duration) {
        let (keyholder, kh) = self.keyholder_with(keyholder);
        let (aggregator, agg) = self.aggregator(&kh, aggregator);
        let nodes = self.hospital_nodes(&agg);
        super::process::all_succeed([aggregator, keyholder].into_iter().chain(nodes), patience);
    }

    /// The deployment's copy of hospital `data` (a, b or c): see [`DEPLOYMENT_FEATURES`].
    pub fn hospital(&self, data: char) -> String {
        let index = match data {
            'a' => 0,
            'b' => 1,
            'c' => 2,
            other => panic!("no hospital {other}"),
        };
        self.hospitals[index].clone()
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
    free_ports::<1>()[0]
}

/// `N` distinct free loopback ports: every listener is held until all are bound, so the kernel
/// cannot hand the same released port out twice (two calls to `free_port` once returned the
/// same port and a study's aggregator found its address taken by the other study's).
pub fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<std::net::TcpListener> = (0..N)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    std::array::from_fn(|i| held[i].local_addr().expect("address").port())
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

/// The three demo hospitals cut to their first `features` columns and the label, written into
/// `dir`: for tests of processes and transport, where the study's width only adds time (the
/// masked inverse of the bound grows as its dimension cubed). Full-width secure studies are
/// tested in process (`secure_protocols.rs`) and by the README's demo (`study_cli.rs`).
pub fn narrow_hospitals(dir: &Path, features: usize) -> [String; 3] {
    ['a', 'b', 'c'].map(|c| {
        let text = std::fs::read_to_string(demo(&format!("hospital_{c}.csv"))).expect("demo");
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().expect("header").split(',').collect();
        let label = header
            .iter()
            .position(|h| *h == "label")
            .expect("label column");
        let keep: Vec<usize> = (0..features).chain([label]).collect();
        let mut out = String::new();
        for line in std::iter::once(header.join(",").as_str()).chain(lines) {
            let cells: Vec<&str> = line.split(',').collect();
            let row: Vec<&str> = keep.iter().map(|&j| cells[j]).collect();
            out.push_str(&row.join(","));
            out.push('\n');
        }
        let path = dir.join(format!("hospital_{c}.csv"));
        std::fs::write(&path, out).expect("narrow file");
        path.display().to_string()
    })
}
