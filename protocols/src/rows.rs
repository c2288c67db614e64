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
mod row_source;
mod rows_error;
pub mod unit_norm;

pub use design::DesignRows;
pub use memory::MemoryRows;
pub use row_source::{ChunkVisitor, RowSource};
pub use rows_error::{Cause, RowsError, RowsProblem};
