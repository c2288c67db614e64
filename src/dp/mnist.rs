//! The MNIST digits table (`label,px0,...,px783`, grey levels 0-255) the experiments read.

use std::path::{Path, PathBuf};

use ndarray::Array2;

/// A fault in the digits file, with its place.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A cell or line is wrong.
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column (in characters of the line).
        column: u64,
        /// What is wrong.
        message: String,
    },
}

/// Digits and their pixels, scaled to [0, 1] (division by the public maximum 255).
#[derive(Debug, Clone, PartialEq)]
pub struct Digits {
    /// The digit of each row.
    pub labels: Vec<u8>,
    /// One row of 784 pixel values per image.
    pub pixels: Array2<f64>,
}

impl Digits {
    /// Reads `path`; every fault is reported with its line and column.
    pub fn load(path: &Path) -> Result<Self, DataError> {
        let text = std::fs::read_to_string(path).map_err(|source| DataError::Io {
            path: path.to_owned(),
            source,
        })?;
        let mut lines = text.lines();
        let header = lines
            .next()
            .ok_or_else(|| invalid(path, 1, 1, "file is empty (expected a header row)".into()))?;
        let width = header.split(',').count();
        if header.split(',').next() != Some("label") || width < 2 {
            return Err(invalid(
                path,
                1,
                1,
                "expected a header `label,px0,...`".into(),
            ));
        }
        let (mut labels, mut pixels) = (Vec::new(), Vec::new());
        for (i, line) in lines.enumerate() {
            let line_no = i as u64 + 2;
            let mut column = 1;
            let mut cells = 0;
            for (j, cell) in line.split(',').enumerate() {
                let value: f64 = cell.trim().parse().map_err(|_| {
                    invalid(path, line_no, column, format!("`{cell}` is not a number"))
                })?;
                if j == 0 {
                    if !(0.0..=9.0).contains(&value) || value.fract() != 0.0 {
                        return Err(invalid(
                            path,
                            line_no,
                            column,
                            format!("digit {cell} is not 0-9"),
                        ));
                    }
                    labels.push(value as u8);
                } else {
                    if !(0.0..=255.0).contains(&value) {
                        return Err(invalid(
                            path,
                            line_no,
                            column,
                            format!("pixel {cell} is outside 0-255"),
                        ));
                    }
                    pixels.push(value / 255.0);
                }
                column += cell.len() as u64 + 1;
                cells += 1;
            }
            if cells != width {
                return Err(invalid(
                    path,
                    line_no,
                    column,
                    format!("{cells} cells where the header has {width}"),
                ));
            }
        }
        if labels.is_empty() {
            return Err(invalid(path, 2, 1, "no data rows after the header".into()));
        }
        let pixels = Array2::from_shape_vec((labels.len(), width - 1), pixels).expect("counted");
        Ok(Self { labels, pixels })
    }

    /// Indices of the rows showing `digit`.
    pub fn rows_of(&self, digit: u8) -> Vec<usize> {
        (0..self.labels.len())
            .filter(|&i| self.labels[i] == digit)
            .collect()
    }
}

fn invalid(path: &Path, line: u64, column: u64, message: String) -> DataError {
    DataError::Invalid {
        path: path.to_owned(),
        line,
        column,
        message,
    }
}
