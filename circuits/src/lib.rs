//! Boolean circuits and fixed-point arithmetic for privlogit's garbled-circuit side.
//!
//! Today this crate holds the fixed-point number format that both the garbled circuits and the
//! Paillier encoding use ([`fixed`]). The circuit builder, gadgets, linear-algebra circuits,
//! half-gates garbling and oblivious transfer are planned here (see `ARCHITECTURE.md`).

pub mod fixed;

pub use fixed::{FixedError, FixedFormat};
