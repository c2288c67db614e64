//! A source's rows with their columns reordered or left out, as each chunk passes: how a
//! generalised linear model's offset and weight columns, wherever they sit in a file, come to
//! trail the design columns ([`crate::objective::Glm`]), and how a nested model leaves
//! features out.

use std::sync::Arc;

use ndarray::Array2;

use super::row_source::{ChunkVisitor, RowSource};
use super::rows_error::RowsError;

/// `inner`'s rows with their columns in another order, some perhaps left out.
#[derive(Debug, Clone)]
pub struct Reordered {
    inner: Arc<dyn RowSource>,
    /// The new order: for each output column, the inner column it comes from.
    order: Vec<usize>,
}

impl Reordered {
    /// `inner` with the columns `moved` (indices into `inner`'s, in this order) at the end.
    /// Panics if an index is out of range or repeated: callers find the indices by name.
    pub fn trailing(inner: Arc<dyn RowSource>, moved: &[usize]) -> Self {
        let p = inner.columns();
        assert!(
            moved.iter().all(|&j| j < p)
                && moved
                    .iter()
                    .enumerate()
                    .all(|(k, j)| !moved[..k].contains(j)),
            "columns to move must be distinct columns of the source"
        );
        let order = (0..p)
            .filter(|j| !moved.contains(j))
            .chain(moved.iter().copied())
            .collect();
        Self { inner, order }
    }

    /// `inner` without the columns `dropped`, the others in their order.
    pub fn without(inner: Arc<dyn RowSource>, dropped: &[usize]) -> Self {
        let order = (0..inner.columns())
            .filter(|j| !dropped.contains(j))
            .collect();
        Self { inner, order }
    }

    /// `inner` with output column `k` taken from inner column `order[k]`. Panics if an index
    /// is out of range.
    pub fn with_order(inner: Arc<dyn RowSource>, order: Vec<usize>) -> Self {
        assert!(
            order.iter().all(|&j| j < inner.columns()),
            "column indices of the source"
        );
        Self { inner, order }
    }

    fn permute(&self, from: &[f64], to: &mut [f64]) {
        for (t, &j) in to.iter_mut().zip(&self.order) {
            *t = from[j];
        }
    }
}

impl RowSource for Reordered {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn rows(&self) -> usize {
        self.inner.rows()
    }

    fn columns(&self) -> usize {
        self.order.len()
    }

    fn names(&self) -> Vec<String> {
        let names = self.inner.names();
        self.order.iter().map(|&j| names[j].clone()).collect()
    }

    fn random_access(&self) -> bool {
        self.inner.random_access()
    }

    fn partitioned(&self) -> Option<super::cluster_layers::Partitioned> {
        let inner = self.inner.partitioned()?;
        let layer = super::cluster_layers::Layer::Reordered(self.order.clone());
        Some(inner.with(layer))
    }

    fn read_rows(&self, start: usize, x: &mut [f64], y: &mut [f64]) -> Result<(), RowsError> {
        let (p, width) = (self.order.len(), self.inner.columns());
        let mut raw = vec![0.0; y.len() * width];
        self.inner.read_rows(start, &mut raw, y)?;
        for (from, to) in raw
            .chunks_exact(width.max(1))
            .zip(x.chunks_exact_mut(p.max(1)))
        {
            self.permute(from, to);
        }
        Ok(())
    }

    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
        let p = self.order.len();
        self.inner.scan(&mut |x, y| {
            let mut out = Array2::zeros((x.nrows(), p));
            for (from, mut to) in x.rows().into_iter().zip(out.rows_mut()) {
                let to = to
                    .as_slice_mut()
                    .expect("a fresh array's rows are contiguous");
                for (t, &j) in to.iter_mut().zip(&self.order) {
                    *t = from[j];
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
    fn moves_the_named_columns_last_in_order() {
        let rows = MemoryRows::new(array![[1.0, 2.0, 3.0, 4.0]], array![1.0]).with_names(vec![
            "a".into(),
            "b".into(),
            "c".into(),
            "d".into(),
        ]);
        let rows: Arc<dyn RowSource> = Arc::new(rows);
        let t = Reordered::trailing(rows.clone(), &[2, 0]);
        assert_eq!(t.names(), ["b", "d", "c", "a"]);
        assert_eq!(Reordered::without(rows, &[1, 3]).names(), ["a", "c"]);
        let mut seen = Vec::new();
        t.scan(&mut |x, _| {
            seen.extend(x.iter().copied());
            Ok(())
        })
        .expect("in memory");
        assert_eq!(seen, [2.0, 4.0, 3.0, 1.0]);
    }
}
