//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub mod json;

use ndarray::Array1;
use privlogit::data::{self, Dataset, LoadOptions, partition};
use privlogit::fit::{self, Preparation, Prepared};

/// The repository's root: these helpers also serve the command line's tests (`cli/tests`),
/// built in the `cli` folder.
pub fn root() -> &'static Path {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    match manifest.parent() {
        Some(parent) if manifest.ends_with("cli") => parent,
        _ => manifest,
    }
}

/// `../shared/data/NAME` beside the repository.
pub fn shared_data(name: &str) -> PathBuf {
    root().join("../shared/data").join(name)
}

/// Part `k` of `parts` contiguous parts of the CSV file `source` (header kept), written to a
/// file of this process's temporary directory.
pub fn part_file(source: &Path, parts: usize, k: usize) -> PathBuf {
    let text = std::fs::read_to_string(source).expect("data");
    let mut lines = text.lines();
    let header = lines.next().expect("header");
    let rows: Vec<&str> = lines.collect();
    let size = rows.len().div_ceil(parts);
    let dir = std::env::temp_dir().join(format!("privlogit-parts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let stem = source
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("data");
    let path = dir.join(format!("{stem}.{parts}.{k}.csv"));
    let mut out = format!("{header}\n");
    for row in rows.iter().skip(k * size).take(size) {
        out.push_str(row);
        out.push('\n');
    }
    write_atomically(&path, &out);
    path
}

/// Writes `text` to `path` through a private scratch file renamed into place. Tests run in
/// parallel and may write the same shared file at once; a rename is atomic, so a reader never
/// sees a file another test has just truncated (CI once read such a file as empty).
pub fn write_atomically(path: &Path, text: &str) {
    static WRITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut scratch = path.as_os_str().to_owned();
    scratch.push(format!(".{n}.tmp"));
    std::fs::write(&scratch, text).expect("write");
    std::fs::rename(&scratch, path).expect("rename");
}

/// The label column of each shared data set.
pub fn label_of(name: &str) -> &'static str {
    match name {
        "breast_cancer.csv" => "label",
        "winequality_red.csv" => "good",
        other => panic!("no label known for {other}"),
    }
}

/// A shared data set, loaded whole.
pub fn load_shared(name: &str) -> Dataset {
    data::load(&shared_data(name), &LoadOptions::new(label_of(name)))
        .expect("shared data loads")
        .data
}

/// A shared data set in `parties` contiguous parts, standardised, with intercept.
pub fn prepared(name: &str, parties: usize) -> Prepared {
    split_and_prepare(&load_shared(name), parties)
}

/// `whole` in `parties` contiguous parts, standardised with pooled statistics, with intercept.
pub fn split_and_prepare(whole: &Dataset, parties: usize) -> Prepared {
    let parts = partition::split_contiguous(whole, parties).expect("valid split");
    fit::prepare(
        parts,
        Preparation {
            standardize: true,
            intercept: true,
        },
    )
    .expect("shared data prepares")
}

/// The numpy reference coefficients for a shared data set (tests/reference/newton_reference.json).
pub fn reference(name: &str) -> (Vec<String>, Array1<f64>) {
    let path = root().join("tests/reference/newton_reference.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("reference file"))
            .expect("json");
    let entry = &json["datasets"][name];
    let names = entry["names"]
        .as_array()
        .expect("names")
        .iter()
        .map(|v| v.as_str().expect("string").to_string())
        .collect();
    let coefficients = entry["coefficients"]
        .as_array()
        .expect("coefficients")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect();
    (names, coefficients)
}

/// Largest absolute entry of `a - b`.
pub fn max_abs_diff(a: &Array1<f64>, b: &Array1<f64>) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b.iter())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}
