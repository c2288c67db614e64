//! The data types every loader fills and every command reads: a labelled table, its borrowed
//! view, the load options, and the one error type of loading, with file, line and column.

use std::path::PathBuf;

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use privlogit_protocols::Family;
use thiserror::Error;

/// A labelled table: feature columns (by name) and labels, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Where the rows came from (a file, or a file and a part of it), for messages.
    pub source: String,
    /// Feature names, in column order.
    pub names: Vec<String>,
    /// Features, one row per record.
    pub x: Array2<f64>,
    /// Labels, 0 or 1.
    pub y: Array1<f64>,
}

/// A labelled table borrowed from its owner: a [`Dataset`], or memory another program holds
/// (the Python package reads numpy arrays in place through it).
#[derive(Debug, Clone, Copy)]
pub struct DatasetView<'a> {
    /// Where the rows came from, for messages.
    pub source: &'a str,
    /// Feature names, in column order.
    pub names: &'a [String],
    /// Features, one row per record.
    pub x: ArrayView2<'a, f64>,
    /// Labels, 0 or 1.
    pub y: ArrayView1<'a, f64>,
}

impl Dataset {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.x.nrows()
    }

    /// The table, borrowed.
    pub fn view(&self) -> DatasetView<'_> {
        DatasetView {
            source: &self.source,
            names: &self.names,
            x: self.x.view(),
            y: self.y.view(),
        }
    }

    /// Refuses what a file's loader would have refused: a label `family` does not take (for
    /// the binomial, not 0 or 1), a feature that is NaN or infinite ([`DataError::BadValue`],
    /// naming the first such row and column). Data read from files has passed this already;
    /// rows handed over in memory have not.
    pub fn check_values(&self, family: Family) -> Result<(), DataError> {
        self.view().check_values(family)
    }

    /// The rows at `indices`, in that order, as a new dataset named `source`.
    pub fn select_rows(&self, indices: &[usize], source: String) -> Dataset {
        Dataset {
            source,
            names: self.names.clone(),
            x: self.x.select(ndarray::Axis(0), indices),
            y: self.y.select(ndarray::Axis(0), indices),
        }
    }
}

impl DatasetView<'_> {
    /// [`Dataset::check_values`] for borrowed rows.
    pub fn check_values(&self, family: Family) -> Result<(), DataError> {
        check_values(family, self.source, self.names, self.x, self.y)
    }
}

/// [`Dataset::check_values`] for a design `x` and labels `y` of `source` (column `j` named
/// `names[j]` when there is one). Rows are 1-based.
pub fn check_values(
    family: Family,
    source: &str,
    names: &[String],
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
) -> Result<(), DataError> {
    let bad = |row: usize, what: String| DataError::BadValue {
        source_name: source.to_string(),
        row: row + 1,
        what,
    };
    if let Some((i, v, why)) = y
        .iter()
        .enumerate()
        .find_map(|(i, v)| family.label_problem(*v).map(|why| (i, v, why)))
    {
        return Err(bad(i, format!("label {v} {why}")));
    }
    for (i, row) in x.rows().into_iter().enumerate() {
        if let Some((j, v)) = row.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            let column = match names.get(j) {
                Some(name) => format!("column {} ({name:?})", j + 1),
                None => format!("column {}", j + 1),
            };
            return Err(bad(i, format!("{column}: {v} is not a finite number")));
        }
    }
    Ok(())
}

/// Which columns to read, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Name of the label column.
    pub label: String,
    /// The model the labels are for: its rule on label values (0/1 for the binomial, counts for
    /// Poisson, any finite number for the Gaussian).
    pub family: Family,
    /// Columns to leave out.
    pub exclude: Vec<String>,
    /// A column whose values name the party each row belongs to (read as text).
    pub group: Option<String>,
}

impl LoadOptions {
    /// Reads every column as a feature, with no label (rows to score; CSV only: the binary
    /// table and Parquet readers need their label column). Every label reads 0.
    pub fn unlabelled() -> Self {
        Self::new("")
    }

    /// Reads `label` as the label and every other column as a feature.
    pub fn new(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            family: Family::Binomial,
            exclude: Vec::new(),
            group: None,
        }
    }
}

/// A loaded table, with the group column's values when one was requested.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The features and labels.
    pub data: Dataset,
    /// The group column's value on each row, if [`LoadOptions::group`] was set.
    pub groups: Option<Vec<String>>,
}

/// Everything that can be wrong with input data. Messages start with `file:line:column:` where
/// those are known, so editors and terminals can jump to the spot.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file has no header row.
    #[error("{path}:1:1: file is empty (expected a header row)")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A header but no data rows.
    #[error("{path}:{line}:1: no data rows after the header")]
    NoRows {
        /// The file.
        path: PathBuf,
        /// Line after the header.
        line: u64,
    },
    /// Two header cells carry the same name.
    #[error("{path}:{line}:{column}: duplicate column name {name:?} (also column {first})")]
    DuplicateColumn {
        /// The file.
        path: PathBuf,
        /// Line of the header.
        line: u64,
        /// The repeated name.
        name: String,
        /// 1-based column of the first occurrence.
        first: usize,
        /// 1-based column of the repeat.
        column: usize,
    },
    /// A header cell is empty.
    #[error("{path}:{line}:{column}: empty column name")]
    EmptyColumnName {
        /// The file.
        path: PathBuf,
        /// Line of the header.
        line: u64,
        /// 1-based column.
        column: usize,
    },
    /// A named column (label, excluded or group) is not in the header. There is no column
    /// number to give, so the message names the header line and lists the columns.
    #[error("{path}:{line}: {role} column {name:?} not found; the columns are {available}")]
    UnknownColumn {
        /// The file.
        path: PathBuf,
        /// Line of the header (1 for binary tables).
        line: u64,
        /// What the column was wanted for: "label", "excluded", "group".
        role: &'static str,
        /// The requested name.
        name: String,
        /// The header, for the user to pick from.
        available: String,
    },
    /// One column was asked to play two roles (say label and group).
    #[error("{path}:{line}:{column}: column {name:?} cannot be both {first} and {second}")]
    ColumnRoleClash {
        /// The file.
        path: PathBuf,
        /// Line of the header.
        line: u64,
        /// 1-based column.
        column: usize,
        /// Column name.
        name: String,
        /// The role it already had.
        first: &'static str,
        /// The role also asked for.
        second: &'static str,
    },
    /// A row has more or fewer fields than the header.
    #[error("{path}:{line}:{column}: expected {expected} fields as in the header, found {found}")]
    Ragged {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column where the row departs from the header.
        column: usize,
        /// Fields in the header.
        expected: usize,
        /// Fields in this row.
        found: usize,
    },
    /// A cell is empty or a missing-value marker.
    #[error("{path}:{line}:{column}: missing value {value:?} in column {name:?}")]
    Missing {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: usize,
        /// Column name.
        name: String,
        /// The cell as written.
        value: String,
    },
    /// A feature cell is not a finite number.
    #[error("{path}:{line}:{column}: {value:?} in column {name:?} is not a finite number")]
    NonNumeric {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: usize,
        /// Column name.
        name: String,
        /// The cell as written.
        value: String,
    },
    /// A cell outside the range its column takes (a digit 0-9, a grey level 0-255).
    #[error("{path}:{line}:{column}: {value:?} in column {name:?} is outside {range}")]
    OutOfRange {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: usize,
        /// Column name.
        name: String,
        /// The cell as written.
        value: String,
        /// The range the column takes.
        range: &'static str,
    },
    /// A label cell is neither 0 nor 1.
    #[error("{path}:{line}:{column}: label {value:?} in column {name:?} {reason}")]
    BadLabel {
        /// Why (the family's rule: "is not 0 or 1", ...).
        reason: &'static str,
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: usize,
        /// Column name.
        name: String,
        /// The cell as written.
        value: String,
    },
    /// A value handed over in memory (a numpy array, a Rust matrix) that a file would have
    /// been refused for: a label not 0 or 1, or a feature that is not a finite number. Rows
    /// and columns are 1-based, as in a file.
    #[error("{source_name}: row {row}, {what}")]
    BadValue {
        /// Whose rows (for example "party 2" or "X").
        source_name: String,
        /// 1-based row.
        row: usize,
        /// What is wrong, naming the column.
        what: String,
    },
    /// The CSV parser failed (for example on invalid UTF-8).
    #[error("{path}:{line}:1: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// What the parser said.
        message: String,
    },
    /// Nothing is left to use as a feature.
    #[error(
        "{path}: no feature columns left after taking out the label, group and excluded columns"
    )]
    NoFeatures {
        /// The file.
        path: PathBuf,
    },
    /// A binary table was asked for something only CSV has.
    #[error("{path}: {what} is not available for binary tables ({hint})")]
    BinaryUnsupported {
        /// The file.
        path: PathBuf,
        /// What was asked.
        what: String,
        /// What to do instead.
        hint: &'static str,
    },
    /// A binary table is malformed.
    #[error("{path}: not a valid privlogit binary table: {reason}")]
    Binary {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A Parquet file cannot be read (its structure, a codec not built in, a column type).
    #[error("{path}: not a readable Parquet file: {reason}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A value in a binary table is invalid.
    #[error("{path}: row {row}, column {name:?}: {reason}")]
    BinaryValue {
        /// The file.
        path: PathBuf,
        /// 1-based row.
        row: u64,
        /// Column name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// Parties disagree on their feature columns.
    #[error("{party}: its features differ from those of {reference}: {difference}")]
    FeatureMismatch {
        /// The party that differs.
        party: String,
        /// The party it was compared with (the first).
        reference: String,
        /// The first difference, in words.
        difference: String,
    },
    /// A partition request cannot be met.
    #[error("cannot partition {source_name}: {reason}")]
    Partition {
        /// The data being split.
        source_name: String,
        /// Why not.
        reason: String,
    },
    /// A column has no spread, so it cannot be standardised.
    #[error(
        "column {name:?} is constant over the pooled data (value {value}); it cannot be standardised, exclude it"
    )]
    ConstantColumn {
        /// Column name.
        name: String,
        /// Its value.
        value: f64,
    },
    /// A column's pooled mean or spread is beyond what an f64 holds: a value far too large.
    #[error(
        "column {name:?}: its pooled {what} overflows (a value there is far too large, such as \
         1e300); rescale or exclude the column"
    )]
    Overflow {
        /// Column name.
        name: String,
        /// `mean` or `standard deviation`.
        what: &'static str,
    },
    /// A feature is already called `intercept`.
    #[error("a feature is already named \"intercept\"; rename it or use setting `no_intercept`")]
    InterceptClash,
    /// Rows read from a source (a cluster's partition, a file after it was opened) were refused
    /// where they are: the source names the row.
    #[error("{0}")]
    Rows(#[from] privlogit_protocols::rows::RowsError),
}
