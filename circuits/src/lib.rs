//! Boolean circuits, fixed-point arithmetic and garbling for privlogit's garbled-circuit side.
//!
//! - [`circuit`]: gate lists in topological order and their plaintext evaluation.
//! - [`bristol`]: Bristol Fashion import and export.
//! - [`backend`]: the backend trait circuits are written against, with plaintext, counting and
//!   recording backends and constant folding.
//! - [`word`]: integer gadgets (add, compare, select, products, ...).
//! - [`fixed_format`]: the fixed-point number format (shared with the Paillier encoding).
//! - [`garble`]: half-gates garbling and evaluation as backends; [`channel`]: byte channels.
//! - [`ot`]: base OT and IKNP extension; [`session`]: two-party sessions tying them together.
//! - [`matrix_circuits`]: Cholesky, substitutions and inverses on fixed-point matrices.
//! - [`fixed_gadgets`]: fixed-point gadgets (multiply, dot product, divide, square root).
//! - [`lanes`]: word gadgets over many lanes at once, one AND batch per bit position.
//! - [`merge`]: Batcher's odd-even merge of sorted lists; [`rank_sum`]: the Mann-Whitney
//!   statistic of a sorted labelled list (an exact AUC).

pub mod backend;
pub mod bristol;
pub mod channel;
pub mod circuit;
pub mod fixed_format;
pub mod fixed_gadgets;
pub mod garble;
pub mod lanes;
pub mod logistic;
pub mod matrix_circuits;
pub mod merge;
pub mod ot;
pub mod rank_sum;
pub mod session;
pub mod word;

pub use backend::{Backend, Bit, Builder, Word};
pub use circuit::{Circuit, CircuitError, Gate, GateCounts};
pub use fixed_format::{FixedError, FixedFormat};
