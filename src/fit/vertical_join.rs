//! The plaintext side of a vertical study: each party's file read as its table (identifier
//! column, one party's label) and the rows the files share joined in the clear (`fit
//! --vertical`, the reference a secure study is checked against). The secure study
//! ([`crate::vertical_study`]) reads its parties' tables here too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2};
use privlogit_protocols::secure::vertical_roles::VerticalTable;
use privlogit_protocols::vertical::psi;

use crate::data::{self, DataError, Dataset, LoadOptions};
use crate::error::{Error, PlanError, SettingProblem};
use crate::settings::Spec;

/// One party's columns over the common rows.
#[derive(Debug, Clone)]
pub struct Block {
    /// Its file.
    pub path: PathBuf,
    /// Its column names.
    pub names: Vec<String>,
    /// `rows x names.len()` by rows, in the common order.
    pub x: Vec<f64>,
    /// Rows in its file.
    pub held: usize,
}

/// The parties' columns joined on the intersection, labelling party first.
#[derive(Debug, Clone)]
pub struct Joined {
    /// The blocks, the labelling party's first.
    pub blocks: Vec<Block>,
    /// The labels over the common rows.
    pub labels: Vec<f64>,
    /// The label column.
    pub label: String,
}

impl Joined {
    /// Rows in the intersection.
    pub fn rows(&self) -> usize {
        self.labels.len()
    }

    /// All feature names, in the blocks' order.
    pub fn names(&self) -> Vec<String> {
        self.blocks.iter().flat_map(|b| b.names.clone()).collect()
    }

    /// The joined rows as one table (the plaintext reference: pooling what a vertical study
    /// never pools).
    pub fn dataset(&self) -> Dataset {
        let names = self.names();
        let rows = self.rows();
        let mut x = Array2::<f64>::zeros((rows, names.len()));
        let mut at = 0;
        for b in &self.blocks {
            let w = b.names.len();
            for i in 0..rows {
                for j in 0..w {
                    x[[i, at + j]] = b.x[i * w + j];
                }
            }
            at += w;
        }
        Dataset {
            source: format!(
                "the intersection of {}",
                self.blocks
                    .iter()
                    .map(|b| b.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            names,
            x,
            y: Array1::from(self.labels.clone()),
        }
    }
}

/// One party's file as its table: the `--id` column as identifiers (each once: a repeated
/// one is named by file and both lines), the `--label` column as labels when the file has it,
/// the other columns but `--exclude`d ones as features.
pub fn table(path: &Path, spec: &Spec) -> Result<VerticalTable, Error> {
    let id = spec.id.clone().ok_or_else(|| {
        Error::from(PlanError::Missing {
            setting: "id",
            value: "COLUMN",
            why: "a vertical study needs the identifier column",
        })
    })?;
    let label = spec.label.clone().ok_or_else(|| {
        Error::from(PlanError::Missing {
            setting: "label",
            value: "COLUMN",
            why: "a vertical study needs the label column",
        })
    })?;
    if id == label {
        return Err(Error::bad(
            "id",
            SettingProblem::Refused {
                why: "names the label column: the identifiers that match the parties' rows are \
                      a column of their own",
            },
        ));
    }
    let columns = header(path)?;
    if !columns.contains(&id) {
        return Err(Error::bad(
            "id",
            SettingProblem::NoColumn {
                column: id,
                path: Some(path.to_path_buf()),
            },
        ));
    }
    let has_label = columns.contains(&label);
    let mut options = if has_label {
        LoadOptions::new(label)
    } else {
        LoadOptions::unlabelled()
    };
    options.group = Some(id.clone());
    options.exclude = spec
        .exclude
        .iter()
        .filter(|c| columns.contains(*c))
        .cloned()
        .collect();
    let loaded = data::load(path, &options)?;
    let ids = loaded.groups.unwrap_or_default();
    // The data lines, from line 2 (after the header): a repeated person named where a user
    // looks for it, before anything is sent.
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(ids.len());
    for (row, person) in ids.iter().enumerate() {
        if let Some(first) = seen.insert(person.as_str(), row) {
            return Err(PlanError::Identifier {
                path: path.to_path_buf(),
                line: row + 2,
                person: person.clone(),
                column: id.clone(),
                first: first + 2,
            }
            .into());
        }
    }
    let data = loaded.data;
    Ok(VerticalTable {
        source: path.display().to_string(),
        x: data.x.iter().copied().collect(),
        labels: has_label.then(|| data.y.iter().map(|&v| v == 1.0).collect()),
        names: data.names,
        ids,
        disclosure: spec.disclosure(),
    })
}

/// Every `--party` file's table, in order, checked as a whole: at least two parties, exactly
/// one with the label column, every `--exclude` a column of some file.
pub fn tables(spec: &Spec) -> Result<Vec<VerticalTable>, Error> {
    if spec.party.len() < 2 {
        return Err(PlanError::TooFew {
            what: "a vertical study (it joins the parties' columns)",
            least: 2,
            of: "parties: give setting `party` FILE for each",
        }
        .into());
    }
    let headers = spec
        .party
        .iter()
        .map(|p| header(p))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(missing) = spec
        .exclude
        .iter()
        .find(|c| !headers.iter().any(|h| h.contains(*c)))
    {
        return Err(Error::bad(
            "exclude",
            SettingProblem::NoColumn {
                column: missing.clone(),
                path: None,
            },
        ));
    }
    let label = spec.label.clone().unwrap_or_default();
    let labelled: Vec<&PathBuf> = spec
        .party
        .iter()
        .zip(&headers)
        .filter(|(_, h)| h.contains(&label))
        .map(|(p, _)| p)
        .collect();
    if labelled.len() != 1 {
        return Err(Error::bad(
            "label",
            SettingProblem::LabelParties {
                label,
                files: labelled.into_iter().cloned().collect(),
            },
        ));
    }
    spec.party.iter().map(|p| table(p, spec)).collect()
}

/// Reads every party's file and joins the rows they share in the clear, the labelling party's
/// columns first (`fit --vertical`, the reference a secure study is checked against; the
/// intersection is computed by the same PSI, in this process).
pub fn join(spec: &Spec) -> Result<Joined, Error> {
    let tables = tables(spec)?;
    let ids: Vec<Vec<&str>> = tables
        .iter()
        .map(|t| t.ids.iter().map(String::as_str).collect())
        .collect();
    let intersection =
        psi::intersect_in_process(&ids, &mut rand::rng()).map_err(PlanError::Intersection)?;
    let rows = intersection.rows[0].len();
    if rows == 0 {
        return Err(PlanError::NoIntersection {
            column: spec.id.clone().unwrap_or_default(),
        }
        .into());
    }
    let label_party = tables
        .iter()
        .position(|t| t.labels.is_some())
        .expect("one labelled table");
    let mut order: Vec<usize> = vec![label_party];
    order.extend((0..tables.len()).filter(|&k| k != label_party));
    let blocks = order
        .iter()
        .map(|&k| {
            let t = &tables[k];
            let w = t.names.len();
            let mut x = Vec::with_capacity(rows * w);
            for &r in &intersection.rows[k] {
                x.extend_from_slice(&t.x[r * w..(r + 1) * w]);
            }
            Block {
                path: spec.party[k].clone(),
                names: t.names.clone(),
                x,
                held: t.ids.len(),
            }
        })
        .collect();
    let labels = tables[label_party].labels.as_ref().expect("labelled");
    Ok(Joined {
        blocks,
        labels: intersection.rows[label_party]
            .iter()
            .map(|&r| f64::from(u8::from(labels[r])))
            .collect(),
        label: spec.label.clone().unwrap_or_default(),
    })
}

/// The header row of a CSV file.
fn header(path: &Path) -> Result<Vec<String>, Error> {
    let mut reader = ::csv::Reader::from_path(path).map_err(|e| Error::Io {
        what: "cannot read",
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let columns: Vec<String> = reader
        .headers()
        .map_err(|e| Error::Io {
            what: "cannot read the header of",
            path: path.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?
        .iter()
        .map(str::to_string)
        .collect();
    if columns.is_empty() {
        // As a horizontal party's empty file is refused (not as a missing `--id` column).
        return Err(DataError::Empty {
            path: path.to_path_buf(),
        }
        .into());
    }
    Ok(columns)
}
