//! The [`RowSource`] trait: anything that hands over its rows in order, chunk by chunk. Every
//! source in this folder implements it; the parent module only names it.

use std::fmt::Debug;

use ndarray::{ArrayView1, ArrayView2};

use super::cluster_layers::Partitioned;
use super::rows_error::{RowsError, RowsProblem};

/// What [`RowSource::scan`] hands each chunk to.
pub type ChunkVisitor<'a> =
    dyn FnMut(ArrayView2<'_, f64>, ArrayView1<'_, f64>) -> Result<(), RowsError> + 'a;

/// Rows of features with 0/1 labels, read in order in chunks.
///
/// A source must give the same rows in the same order on every scan (the optimisers read it
/// once per round). Chunks may have any length; labels are 0 or 1 (a source checks that).
pub trait RowSource: Send + Sync + Debug {
    /// A name for messages (a file, a simulation and its seed).
    fn describe(&self) -> String;

    /// Number of rows.
    fn rows(&self) -> usize;

    /// Number of columns of each row.
    fn columns(&self) -> usize;

    /// Column names, in order.
    fn names(&self) -> Vec<String>;

    /// Hands every row to `visit`, in order, in consecutive chunks; stops at the first error.
    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError>;

    /// True when [`RowSource::read_rows`] works: the source can produce any run of rows on its
    /// own, from any thread (a regenerated simulation, a file read at an offset). The block
    /// driver then produces each block inside the task that consumes it, so the rows are still
    /// in cache when they are summed.
    fn random_access(&self) -> bool {
        false
    }

    /// Where a cluster computes this source's sums ([`super::partitioned`]), or `None` when
    /// they are computed here. A wrapper adds its [`Layer`](super::cluster_layers::Layer) to its
    /// inner source's.
    fn partitioned(&self) -> Option<Partitioned> {
        None
    }

    /// Rows `start..start + y.len()` into `x` (row-major, `y.len() * columns()` values) and
    /// `y`. Only called when [`RowSource::random_access`] says so.
    fn read_rows(&self, start: usize, x: &mut [f64], y: &mut [f64]) -> Result<(), RowsError> {
        let _ = (start, x, y);
        Err(RowsError::new(self.describe(), RowsProblem::SequentialOnly))
    }
}
