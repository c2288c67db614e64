//! Boolean circuits, fixed-point arithmetic and garbling for privlogit's garbled-circuit side.
//!
//! - [`circuit`]: gate lists in topological order and their plaintext evaluation.
//! - [`bristol`]: Bristol Fashion import and export.
//! - [`fixed`]: the fixed-point number format (shared with the Paillier encoding).

pub mod bristol;
pub mod circuit;
pub mod fixed;

pub use circuit::{Circuit, CircuitError, Gate, GateCounts};
pub use fixed::{FixedError, FixedFormat};
