//! Yao garbling with free-XOR, point-and-permute and half-gates (Zahur, Rosulek and Evans,
//! "Two halves make a whole", EUROCRYPT 2015): two ciphertexts per AND gate, XOR and NOT free.
//!
//! - [`hash`]: the tweakable correlation-robust hash from fixed-key AES (Guo, Katz, Wang and Yu,
//!   "Efficient and secure multiparty computation from fixed-key block ciphers", S&P 2020).
//! - [`garbler`] and [`evaluator`]: the two roles as circuit [`Backend`](crate::Backend)s. The
//!   garbler writes each AND gate's two ciphertexts to the channel as the gate is built and the
//!   evaluator reads them in the same order, so no circuit or table is ever held whole.
//!
//! Labels are 128-bit blocks. The garbler holds the zero-label of every wire and a global
//! offset `delta` with its lowest bit set; the one-label is `zero ^ delta`, and the lowest bit
//! of a label is its permute bit.

pub mod evaluator;
pub mod garbler;
pub mod hash;

pub use evaluator::Evaluator;
pub use garbler::Garbler;

/// Bytes of a label.
pub const LABEL_BYTES: usize = 16;

/// The permute bit of a label.
#[inline(always)]
pub(crate) fn lsb(x: u128) -> u128 {
    x & 1
}

/// All ones when `bit` is 1, else zero: for branch-free selection.
#[inline(always)]
pub(crate) fn mask(bit: u128) -> u128 {
    bit.wrapping_neg()
}
