//! One finished run of a Table 5.1 row, kept as a JSON file under `results/paper/runs/` so that
//! `--resume` can skip it and the table and figures can be drawn from it later.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Which run of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Run {
    PlaintextNewton,
    PlaintextPrivlogit,
    PlaintextAccelerated,
    SecureLocal,
    SecureHessian,
    SecureNewton,
}

impl Run {
    /// Every run of a row, cheapest first among the secure ones.
    pub const ALL: [Run; 6] = [
        Run::PlaintextNewton,
        Run::PlaintextPrivlogit,
        Run::PlaintextAccelerated,
        Run::SecureLocal,
        Run::SecureHessian,
        Run::SecureNewton,
    ];

    /// The name in file names and messages.
    pub fn name(self) -> &'static str {
        match self {
            Run::PlaintextNewton => "plaintext-newton",
            Run::PlaintextPrivlogit => "plaintext-privlogit",
            Run::PlaintextAccelerated => "plaintext-accelerated",
            Run::SecureLocal => "secure-local",
            Run::SecureHessian => "secure-hessian",
            Run::SecureNewton => "secure-newton",
        }
    }
}

/// Where a secure run's time went (seconds; Node figures summed over the Nodes).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Breakdown {
    /// Nodes' plaintext sums over their rows.
    pub node_plaintext_seconds: f64,
    /// Nodes' encryptions and ciphertext products.
    pub node_paillier_seconds: f64,
    /// The key holder's Paillier work (decryptions, encryptions).
    pub keyholder_paillier_seconds: f64,
    /// The aggregator's masked arithmetic (pivot circuits included).
    pub masked_seconds: f64,
    /// Garbled circuits (comparisons, the circuit method).
    pub circuit_seconds: f64,
    /// The aggregator waiting for the Nodes.
    pub waiting_for_nodes_seconds: f64,
}

/// What one run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub row: String,
    pub run: Run,
    /// Rows and features actually used (after `--rows-scale`), parties, key size.
    pub rows: usize,
    pub features: usize,
    pub parties: usize,
    pub rows_scale: f64,
    pub key_bits: u32,
    pub linear_algebra: Option<String>,
    pub status: String,
    pub iterations: usize,
    pub rounds: usize,
    pub seconds: f64,
    pub setup_seconds: f64,
    /// Largest coefficient difference to the plaintext run of the same optimiser.
    pub max_abs_diff_to_plaintext: Option<f64>,
    pub coefficients: Vec<f64>,
    pub breakdown: Option<Breakdown>,
    /// The process's peak resident memory when the run ended (all parties in one process).
    pub peak_resident_bytes: Option<u64>,
    pub machine: String,
}

/// The file of `row`'s `run` under `dir`.
pub fn path(dir: &Path, row: &str, run: Run) -> PathBuf {
    let safe: String = row
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    dir.join("runs").join(format!("{safe}.{}.json", run.name()))
}

/// The record at `path`, if there is one; an unreadable one is an error naming the file.
pub fn load(path: &Path) -> Result<Option<Record>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{}: not a run record (delete it to rerun)", path.display()))
            .map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Writes the record atomically (a stopped run leaves no half-written file).
pub fn save(path: &Path, record: &Record) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut text = serde_json::to_string_pretty(record)?;
    text.push('\n');
    privlogit::output::write_text(path, &text)
        .with_context(|| format!("writing {}", path.display()))
}
