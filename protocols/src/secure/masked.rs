//! Masked linear algebra between the two servers (docs/src/how-it-computes.md, "Masked linear algebra"):
//! matrices stay secret as a mask at the aggregator and a masked view at the key holder, and
//! every `O(d^3)` step is a Beaver-style product whose cross terms the aggregator computes on
//! Paillier ciphertexts. Only the `d` scalar pivots go through (small) garbled circuits. This
//! replaces about 7,300 AND gates per multiply-add with about four 4096-bit modular
//! multiplications, and carries as many fractional bits as accuracy needs.
//!
//! - [`engine`]: the aggregator's side, which drives: shared matrices, products, blocks.
//! - [`helper`]: the key holder's side, which keeps views and answers.
//! - [`block_spd`]: SPD inverse and Cholesky on shared matrices, with bounds from public numbers.
//! - [`leaf`]: the garbled-circuit pivots (reciprocal, square root).
//! - [`block_leaf`]: a small block's whole inverse in one garbled circuit (one round trip).
//! - [`cross`]: `Enc(X) R`, the cross terms (shared-base multi-exponentiation).
//! - [`dealt`]: the cross terms from correlations a dealer hands out, without Paillier.
//! - [`packed`], [`matrix`], [`msgs`]: encrypted and plaintext matrices, the requests.

pub mod block_leaf;
pub mod block_spd;
pub mod cross;
pub mod dealt;
pub mod engine;
pub mod helper;
pub mod layout;
pub mod leaf;
pub mod matrix;
pub mod msgs;
pub mod packed;
pub mod pair;
mod wide;

pub use block_spd::SpdBounds;
pub use engine::{MaskedEngine, MaskedStats, ProductKind, Shared};
pub use helper::{HelperStats, MaskedHelper};
