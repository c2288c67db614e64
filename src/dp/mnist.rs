//! The MNIST digits table (`label,px0,...,px783`, grey levels 0-255) the experiments read.

use std::path::Path;

use ndarray::Array2;

use crate::data::DataError;

/// Digits and their pixels, scaled to [0, 1] (division by the public maximum 255).
#[derive(Debug, Clone, PartialEq)]
pub struct Digits {
    /// The digit of each row.
    pub labels: Vec<u8>,
    /// One row of 784 pixel values per image.
    pub pixels: Array2<f64>,
}

impl Digits {
    /// Reads `path`; every fault is reported with its line and column (the data loaders'
    /// [`DataError`]).
    pub fn load(path: &Path) -> Result<Self, DataError> {
        let text = std::fs::read_to_string(path).map_err(|source| DataError::Io {
            path: path.to_owned(),
            source,
        })?;
        let at = || path.to_path_buf();
        let mut lines = text.lines();
        let header = lines
            .next()
            .ok_or_else(|| DataError::Empty { path: at() })?;
        let names: Vec<&str> = header.split(',').collect();
        if names[0] != "label" {
            // The layout is fixed (MNIST's): say so when the label is there but elsewhere.
            let message = match names.iter().position(|n| *n == "label") {
                Some(j) => format!(
                    "the label column must come first (the MNIST layout: label, then the \
                     features); here it is column {}",
                    j + 1
                ),
                None => format!(
                    "no \"label\" column (the MNIST layout: label first, then the features); \
                     the columns are {header}"
                ),
            };
            return Err(DataError::Syntax {
                path: at(),
                line: 1,
                message,
            });
        }
        if names.len() < 2 {
            return Err(DataError::NoFeatures { path: at() });
        }
        let width = names.len();
        let (mut labels, mut pixels) = (Vec::new(), Vec::new());
        for (i, line) in lines.enumerate() {
            let line_no = i as u64 + 2;
            let mut column = 1;
            let mut cells = 0;
            for (j, cell) in line.split(',').enumerate() {
                let name = names
                    .get(j)
                    .copied()
                    .unwrap_or("(beyond the header)")
                    .to_string();
                let value: f64 = cell.trim().parse().map_err(|_| DataError::NonNumeric {
                    path: at(),
                    line: line_no,
                    column,
                    name: name.clone(),
                    value: cell.to_string(),
                })?;
                let range = if j == 0 { "0-9" } else { "0-255" };
                let ok = if j == 0 {
                    (0.0..=9.0).contains(&value) && value.fract() == 0.0
                } else {
                    (0.0..=255.0).contains(&value)
                };
                if !ok {
                    return Err(DataError::OutOfRange {
                        path: at(),
                        line: line_no,
                        column,
                        name,
                        value: cell.to_string(),
                        range,
                    });
                }
                if j == 0 {
                    labels.push(value as u8);
                } else {
                    pixels.push(value / 255.0);
                }
                column += cell.chars().count() + 1;
                cells += 1;
            }
            if cells != width {
                return Err(DataError::Ragged {
                    path: at(),
                    line: line_no,
                    column,
                    expected: width,
                    found: cells,
                });
            }
        }
        if labels.is_empty() {
            return Err(DataError::NoRows {
                path: at(),
                line: 2,
            });
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
