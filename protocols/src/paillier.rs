//! Paillier encryption (Paillier, "Public-key cryptosystems based on composite degree residuosity
//! classes", EUROCRYPT 1999) with `g = n + 1`: the additively homomorphic layer the secure
//! protocols aggregate with.
//!
//! - [`keys`]: key generation, the secret key's CRT constants, serialisation.
//! - [`noise_source`]: the randomness of encryption: standard `r^n`, DJN fixed-base, pools, CRT.
//! - [`ciphertext`]: encryption, decryption and homomorphic operations on raw plaintexts.
//! - [`encoding`]: signed fixed-point values and encrypted numbers with overflow checks.
//! - [`packing`]: several signed slots per plaintext.
//! - [`tensor`]: encrypted vectors and matrices, `Enc(M) v`, wire format.
//! - [`montgomery`], [`multiexp`], [`inverse`], [`prime`]: the arithmetic engine underneath.

pub mod ciphertext;
pub mod encoding;
pub mod ifma;
pub mod inverse;
pub mod keys;
mod limbs;
pub mod montgomery;
pub mod multiexp;
pub mod noise_source;
pub mod packing;
pub mod prime;
pub mod tensor;

pub use ciphertext::Ciphertext;
pub use encoding::{EncryptedNumber, Fixed};
pub use keys::{KeyPair, KeySize, PublicKey, SecretKey};
pub use noise_source::{CrtNoise, DjnNoise, NoisePool, NoiseSource, StandardNoise};
pub use packing::Packing;
pub use tensor::{EncryptedMatrix, EncryptedVector};

use thiserror::Error;

/// What can go wrong with keys, ciphertexts and encoded values. Decryption failures say that
/// they failed, never why.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PaillierError {
    /// A key is malformed or not usable.
    #[error("invalid Paillier key: {0}")]
    InvalidKey(String),
    /// Bytes are not in the expected format.
    #[error("malformed Paillier data: {0}")]
    Format(String),
    /// A ciphertext is out of range for its key or not a unit modulo n.
    #[error("invalid ciphertext")]
    InvalidCiphertext,
    /// Decryption failed (said without saying why).
    #[error("decryption failed")]
    DecryptionFailed,
    /// An operation could wrap around n and decode to garbage, so it was refused.
    #[error(
        "refused: the result could reach {needed_bits} bits, beyond the {available_bits} bits a plaintext can hold without wrapping around n"
    )]
    Overflow {
        /// Bits the result's magnitude could need.
        needed_bits: u64,
        /// Bits available for a signed value below n/2.
        available_bits: u64,
    },
    /// A value cannot be encoded.
    #[error("cannot encode {0}")]
    Encoding(String),
    /// Operands disagree (different keys, lengths or layouts).
    #[error("mismatched operands: {0}")]
    Mismatch(String),
}
