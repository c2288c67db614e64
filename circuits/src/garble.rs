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

pub mod aesni;
pub mod evaluator;
pub mod garbler;
pub mod hash;
mod labels;
pub mod vaes;

pub use evaluator::Evaluator;
pub use garbler::Garbler;
pub use labels::LABEL_BYTES;
