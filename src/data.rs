//! Loading labelled tables and shaping them into parties.
//!
//! - [`csv`]: CSV with a header row, label column by name, every other column numeric.
//! - [`binary`]: a compact binary table format for data sets too large for CSV.
//! - [`partition`]: horizontal partitioning into parties and the feature-agreement check.
//! - [`standardize`]: pooled z-scores and the intercept column.
//! - [`stream`]: binary tables, CSV and Parquet files read chunk by chunk (a Node's rows).
//! - [`table`]: the types they fill: [`Dataset`], [`LoadOptions`], [`Table`], [`DataError`].
//!
//! Errors name the file, line and column (1-based, as an editor shows them).

pub mod binary;
pub mod csv;
pub mod partition;
pub mod standardize;
pub mod stream;
pub mod table;

use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2};

pub use table::{DataError, Dataset, DatasetView, LoadOptions, Table, check_values};

/// The first of `paths` that names a file an earlier one names too, compared by canonical path
/// (`./a.csv` is `a.csv`; a path that does not resolve is compared as written): one file given
/// for two parties would count its rows twice.
pub fn repeated_file(paths: &[PathBuf]) -> Option<&PathBuf> {
    let mut seen = std::collections::BTreeSet::new();
    paths.iter().find(|path| {
        !seen.insert(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
    })
}

/// Loads a table from `path`: a privlogit binary table or a Parquet file (recognised by their
/// magic bytes), otherwise CSV. Every command and the Python package load through here or
/// through [`stream::open`], which read the same formats.
pub fn load(path: &Path, options: &LoadOptions) -> Result<Table, DataError> {
    match stream::sniff(path)? {
        stream::Format::Binary => binary::read(path, options),
        stream::Format::Parquet => {
            if let Some(group) = &options.group {
                return Err(DataError::BinaryUnsupported {
                    path: path.to_path_buf(),
                    what: format!("group column {group:?} in a Parquet file"),
                    hint: "split the file by group first",
                });
            }
            let rows = stream::ParquetRows::open(path, options)?;
            Ok(Table {
                data: collect_rows(&rows)?,
                groups: None,
            })
        }
        stream::Format::Csv => csv::read(path, options),
    }
}

/// Every row of a streamed source, in memory.
fn collect_rows(source: &dyn privlogit_protocols::rows::RowSource) -> Result<Dataset, DataError> {
    let (n, p) = (source.rows(), source.columns());
    let mut x = Vec::with_capacity(n * p);
    let mut y = Vec::with_capacity(n);
    source
        .scan(&mut |chunk, labels| {
            x.extend(chunk.iter());
            y.extend(labels.iter());
            Ok(())
        })
        .map_err(|e| DataError::Parquet {
            path: PathBuf::from(source.describe()),
            reason: e.to_string(),
        })?;
    Ok(Dataset {
        source: source.describe(),
        names: source.names(),
        x: Array2::from_shape_vec((y.len(), p), x).expect("chunks of p columns"),
        y: Array1::from(y),
    })
}
