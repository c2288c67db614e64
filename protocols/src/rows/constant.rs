//! A source's rows with constant columns appended: how a study gives each Node its own
//! baseline (per-site intercepts, as indicator columns that are 1 at one site and 0 elsewhere).

use std::sync::Arc;

use ndarray::Array2;

use super::row_source::{ChunkVisitor, RowSource};
use super::rows_error::RowsError;

/// `inner`'s rows, each followed by the same `values` (named `names`).
#[derive(Debug, Clone)]
pub struct WithConstants {
    inner: Arc<dyn RowSource>,
    values: Vec<f64>,
    names: Vec<String>,
}

impl WithConstants {
    /// `inner` with the columns `names` holding `values` on every row. Panics if the lengths
    /// differ.
    pub fn new(inner: Arc<dyn RowSource>, names: Vec<String>, values: Vec<f64>) -> Self {
        assert_eq!(names.len(), values.len(), "one name per constant column");
        Self {
            inner,
            values,
            names,
        }
    }
}

impl RowSource for WithConstants {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn rows(&self) -> usize {
        self.inner.rows()
    }

    fn columns(&self) -> usize {
        self.inner.columns() + self.values.len()
    }

    fn names(&self) -> Vec<String> {
        let mut names = self.inner.names();
        names.extend(self.names.iter().cloned());
        names
    }

    fn random_access(&self) -> bool {
        self.inner.random_access()
    }

    fn partitioned(&self) -> Option<super::cluster_layers::Partitioned> {
        let inner = self.inner.partitioned()?;
        let layer = super::cluster_layers::Layer::Constants(self.values.clone());
        Some(inner.with(layer))
    }

    fn read_rows(&self, start: usize, x: &mut [f64], y: &mut [f64]) -> Result<(), RowsError> {
        let (width, p) = (self.inner.columns(), self.columns());
        let n = y.len();
        self.inner.read_rows(start, &mut x[..n * width], y)?;
        // Widen in place from the last row back: each row ends at or after its raw row.
        for i in (0..n).rev() {
            x.copy_within(i * width..(i + 1) * width, i * p);
            x[i * p + width..(i + 1) * p].copy_from_slice(&self.values);
        }
        Ok(())
    }

    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
        let width = self.inner.columns();
        self.inner.scan(&mut |x, y| {
            let mut out = Array2::zeros((x.nrows(), self.columns()));
            out.slice_mut(ndarray::s![.., ..width]).assign(&x);
            for mut row in out.rows_mut() {
                for (v, c) in row.iter_mut().skip(width).zip(&self.values) {
                    *v = *c;
                }
            }
            visit(out.view(), y)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::memory::MemoryRows;
    use ndarray::array;

    #[test]
    fn appends_the_constants_to_every_row() {
        let rows = MemoryRows::new(array![[1.0], [2.0]], array![1.0, 0.0]);
        let c = WithConstants::new(Arc::new(rows), vec!["s".into()], vec![7.0]);
        assert_eq!(c.names(), ["x1", "s"]);
        let mut seen = Vec::new();
        c.scan(&mut |x, _| {
            seen.extend(x.iter().copied());
            Ok(())
        })
        .expect("in memory");
        assert_eq!(seen, [1.0, 7.0, 2.0, 7.0]);
    }
}
