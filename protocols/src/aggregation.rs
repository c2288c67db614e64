//! How the Center forms sums of the Nodes' contributions, and the few operations it performs on
//! them (docs/src/architecture.md, "Write each optimizer once").
//!
//! The optimisers in [`crate::optimizer`] only ever touch aggregated quantities through this
//! trait. Its associated types are the Center's *secret* view of those sums: plain `f64`s for
//! [`PlaintextAggregation`], ciphertexts or garbled wires for a secure backend. What crosses from
//! secret to public is exactly what the methods return as plain values:
//!
//! - the step `F^{-1} g` of [`Aggregation::solve_step`] (the new coefficients are public, and
//!   the previous ones too, so the step is as well);
//! - one bit from each of [`Aggregation::converged`], [`Aggregation::increased`] and
//!   [`Aggregation::sufficient_increase`].
//!
//! Every method that asks the Nodes for something is one aggregation round; the optimisers count
//! them.

mod center_access;
mod plaintext;

// Only the optimisers' test aggregations reach the macro through this face.
#[cfg(test)]
pub(crate) use center_access::plain_decisions;
pub use center_access::{Aggregation, NewtonSystem};
pub use plaintext::PlaintextAggregation;
