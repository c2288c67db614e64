//! Where a Node's rows come from, read in chunks so that its memory is bounded by the chunk
//! size and `p^2`, never by its row count.
//!
//! - [`RowSource`]: anything that can hand over its rows in order, chunk by chunk, as often as
//!   asked (a file read again, a simulation regenerated, an array in memory).
//! - [`memory`]: the in-memory source (tests, small studies, data already loaded).
//! - [`design`]: the design matrix a study asks for: an intercept column and pooled z-scores
//!   applied to each chunk as it passes.
//! - [`blocks`]: cuts any source's chunks into fixed blocks of [`blocks::BLOCK_ROWS`] rows
//!   counted from the first row, so sums come out bit-identical however a source chunks.

pub mod blocks;
pub mod cluster_layers;
pub mod constant;
pub mod design;
pub mod memory;
pub mod partitioned;
pub mod reordered;
pub mod unit_norm;

use std::fmt::Debug;

use ndarray::{ArrayView1, ArrayView2};
use thiserror::Error;

pub use design::DesignRows;
pub use memory::MemoryRows;

/// A source failed while its rows were being read (a file changed or became unreadable after it
/// was opened, a value that does not parse): where, and why. Made with [`RowsError::new`].
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{source_name}: {reason}")]
#[non_exhaustive]
pub struct RowsError {
    /// The source, as [`RowSource::describe`] names it (with a line or row where known).
    pub source_name: String,
    /// What went wrong.
    pub reason: String,
}

impl RowsError {
    /// An error in `source_name`.
    pub fn new(source_name: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            source_name: source_name.into(),
            reason: reason.into(),
        }
    }
}

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

    /// Where a cluster computes this source's sums ([`partitioned`]), or `None` when they are
    /// computed here. A wrapper adds its [`cluster_layers::Layer`] to its inner source's.
    fn partitioned(&self) -> Option<cluster_layers::Partitioned> {
        None
    }

    /// Rows `start..start + y.len()` into `x` (row-major, `y.len() * columns()` values) and
    /// `y`. Only called when [`RowSource::random_access`] says so.
    fn read_rows(&self, start: usize, x: &mut [f64], y: &mut [f64]) -> Result<(), RowsError> {
        let _ = (start, x, y);
        Err(RowsError::new(
            self.describe(),
            "this source is read in order only",
        ))
    }
}
