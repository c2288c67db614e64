//! Rows already in memory, handed over as views (no copies).

use ndarray::{Array1, Array2, s};

use super::row_source::{ChunkVisitor, RowSource};
use super::rows_error::RowsError;

/// Rows per chunk handed to a scan: a multiple of [`super::blocks::BLOCK_ROWS`], so no block
/// straddles two chunks and nothing is copied.
const CHUNK_ROWS: usize = 8 * super::blocks::BLOCK_ROWS;

/// A design matrix and its labels, in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRows {
    x: Array2<f64>,
    y: Array1<f64>,
    names: Vec<String>,
}

impl MemoryRows {
    /// Pairs `x` with `y`. Panics if the row counts differ or a label is not finite: callers
    /// build these from validated input (the family's label rule checked), so a mismatch is a
    /// bug.
    pub fn new(x: Array2<f64>, y: Array1<f64>) -> Self {
        assert_eq!(
            x.nrows(),
            y.len(),
            "design matrix and labels differ in length"
        );
        assert!(y.iter().all(|v| v.is_finite()), "labels must be finite");
        let x = if x.is_standard_layout() {
            x
        } else {
            x.as_standard_layout().into_owned()
        };
        let names = (1..=x.ncols()).map(|j| format!("x{j}")).collect();
        Self { x, y, names }
    }

    /// Names the columns (one name per column).
    pub fn with_names(mut self, names: Vec<String>) -> Self {
        assert_eq!(names.len(), self.x.ncols(), "one name per column");
        self.names = names;
        self
    }

    /// The design matrix.
    pub fn x(&self) -> &Array2<f64> {
        &self.x
    }

    /// The labels.
    pub fn y(&self) -> &Array1<f64> {
        &self.y
    }

    /// The rows, labels and names, handed back without a copy.
    pub fn into_parts(self) -> (Array2<f64>, Array1<f64>, Vec<String>) {
        (self.x, self.y, self.names)
    }
}

impl RowSource for MemoryRows {
    fn describe(&self) -> String {
        format!("{} x {} rows in memory", self.x.nrows(), self.x.ncols())
    }

    fn rows(&self) -> usize {
        self.x.nrows()
    }

    fn columns(&self) -> usize {
        self.x.ncols()
    }

    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
        let n = self.x.nrows();
        let mut start = 0;
        while start < n {
            let end = (start + CHUNK_ROWS).min(n);
            visit(
                self.x.slice(s![start..end, ..]),
                self.y.slice(s![start..end]),
            )?;
            start = end;
        }
        Ok(())
    }
}
