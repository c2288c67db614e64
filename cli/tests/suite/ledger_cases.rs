//! The privacy ledger recognises the same people in the ordinary workflows a review tried
//! (issue 49): the label recoded, a column rescaled, an id column added, a column dropped,
//! values rounded or saved as float32 or with 15 significant digits, a superset, and the two
//! sequences base -> superset -> base and train70 -> full -> test30. Each variant is charged
//! to the base's account, so with a total of 1 a second fit of 0.6 is refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

fn privlogit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args(args)
        .output()
        .expect("privlogit runs")
}

/// A table: header and rows of values, label last.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<f64>>,
}

impl Table {
    /// breast_cancer's rows `range`, every feature divided by 7 (values with many digits, so
    /// that rounding, float32 and 15 significant digits change them).
    fn breast(range: std::ops::Range<usize>) -> Self {
        let text = std::fs::read_to_string(common::shared_data("breast_cancer.csv")).expect("data");
        let mut lines = text.lines();
        let header: Vec<String> = lines
            .next()
            .expect("header")
            .split(',')
            .map(String::from)
            .collect();
        let label = header.len() - 1;
        assert_eq!(header[label], "label");
        let rows = lines
            .skip(range.start)
            .take(range.len())
            .map(|l| {
                l.split(',')
                    .enumerate()
                    .map(|(j, v)| {
                        let v: f64 = v.parse().expect("number");
                        if j == label { v } else { v / 7.0 }
                    })
                    .collect()
            })
            .collect();
        Table { header, rows }
    }

    fn write(&self, dir: &Path, name: &str, format: impl Fn(f64) -> String) -> String {
        let mut text = self.header.join(",") + "\n";
        for row in &self.rows {
            let label = row.len() - 1;
            let values: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(j, &v)| {
                    if j == label {
                        format!("{v}")
                    } else {
                        format(v)
                    }
                })
                .collect();
            text += &(values.join(",") + "\n");
        }
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path.display().to_string()
    }

    fn exact(&self, dir: &Path, name: &str) -> String {
        self.write(dir, name, |v| format!("{v:?}"))
    }

    fn map_column(mut self, j: usize, f: impl Fn(f64) -> f64) -> Self {
        for row in &mut self.rows {
            row[j] = f(row[j]);
        }
        self
    }

    fn drop_column(mut self, j: usize) -> Self {
        self.header.remove(j);
        for row in &mut self.rows {
            row.remove(j);
        }
        self
    }

    fn with_id(mut self) -> Self {
        self.header.insert(0, "id".into());
        for (i, row) in self.rows.iter_mut().enumerate() {
            row.insert(0, (842_302 + 17 * i) as f64);
        }
        self
    }

    fn plus(mut self, other: &Table) -> Self {
        self.rows.extend(other.rows.iter().cloned());
        self
    }
}

/// 478 rows none of the base holds: rows 398..569 at three scales (1.2 x 398 rows).
fn new_people() -> Table {
    let rest = Table::breast(398..569);
    let mut rows = Vec::new();
    for scale in [1.01, 1.02, 1.03] {
        for row in &rest.rows {
            let last = row.len() - 1;
            rows.push(
                row.iter()
                    .enumerate()
                    .map(|(j, &v)| if j == last { v } else { v * scale })
                    .collect(),
            );
        }
    }
    rows.truncate(478);
    Table {
        header: rest.header,
        rows,
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("privlogit-ledger-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch");
    dir
}

/// `dp fit` (PLR) of `data` at `epsilon` on the ledger `ledger` (total 1): whether it ran.
fn fit(ledger: &str, data: &str, epsilon: &str) -> (bool, String) {
    let out = privlogit(&[
        "dp",
        "fit",
        "--method",
        "plr",
        "--data",
        data,
        "--label",
        "label",
        "--epsilon",
        epsilon,
        "--ledger",
        ledger,
        "--budget",
        "1",
    ]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn variants_of_a_data_set_are_charged_to_its_account() {
    let dir = scratch("variants");
    let base = || Table::breast(0..398);
    let label = base().header.len() - 1;
    let variants: Vec<(&str, String)> = vec![
        (
            "label recoded",
            base()
                .map_column(label, |y| 1.0 - y)
                .exact(&dir, "recoded.csv"),
        ),
        (
            "a column x 10",
            base()
                .map_column(0, |v| v * 10.0)
                .exact(&dir, "times10.csv"),
        ),
        ("an id column added", base().with_id().exact(&dir, "id.csv")),
        (
            "a column dropped",
            base().drop_column(3).exact(&dir, "dropped.csv"),
        ),
        (
            "rounded to 6 decimals",
            base().write(&dir, "rounded.csv", |v| format!("{v:.6}")),
        ),
        (
            "saved as float32",
            base().write(&dir, "float32.csv", |v| format!("{:?}", v as f32 as f64)),
        ),
        (
            "15 significant digits",
            base().write(&dir, "r.csv", |v| format!("{v:.14e}")),
        ),
        (
            "a superset",
            base().plus(&new_people()).exact(&dir, "superset.csv"),
        ),
    ];
    for (i, (case, variant)) in variants.iter().enumerate() {
        let ledger = dir.join(format!("ledger-{i}.json")).display().to_string();
        let (ok, err) = fit(&ledger, &base().exact(&dir, "base.csv"), "0.6");
        assert!(ok, "{case}: the base: {err}");
        let (ok, err) = fit(&ledger, variant, "0.6");
        assert!(!ok, "{case}: charged as a new data set:\n{err}");
        assert!(err.contains("privacy budget exceeded"), "{case}: {err}");
    }
    // An unrelated data set opens its own account, and the note names the nearest.
    let ledger = dir.join("ledger-other.json").display().to_string();
    assert!(fit(&ledger, &base().exact(&dir, "base.csv"), "0.6").0);
    let (ok, err) = fit(&ledger, &new_people().exact(&dir, "others.csv"), "0.6");
    assert!(ok, "{err}");
    assert!(
        err.contains("opens a new account") && err.contains("nearest"),
        "{err}"
    );
}

#[test]
fn the_review_sequences_are_refused() {
    let dir = scratch("sequences");
    // base -> superset -> base -> superset spent 2.0 of a total of 1 on the base's people.
    let ledger = dir.join("ledger-a.json").display().to_string();
    let base = Table::breast(0..398).exact(&dir, "base.csv");
    let superset = Table::breast(0..398)
        .plus(&new_people())
        .exact(&dir, "superset.csv");
    assert!(fit(&ledger, &base, "0.5").0);
    let (ok, err) = fit(&ledger, &superset, "0.5");
    assert!(ok, "{err}");
    let (ok, err) = fit(&ledger, &base, "0.5");
    assert!(!ok && err.contains("privacy budget exceeded"), "{err}");
    // train70 -> full -> test30 spent 1.5 on the test rows.
    let ledger = dir.join("ledger-b.json").display().to_string();
    let train = Table::breast(0..398).exact(&dir, "train70.csv");
    let full = Table::breast(0..569).exact(&dir, "full.csv");
    let test = Table::breast(398..569).exact(&dir, "test30.csv");
    assert!(fit(&ledger, &train, "0.5").0);
    let (ok, err) = fit(&ledger, &full, "0.5");
    assert!(ok, "{err}");
    let (ok, err) = fit(&ledger, &test, "0.5");
    assert!(!ok && err.contains("privacy budget exceeded"), "{err}");
}
