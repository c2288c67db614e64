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
mod paillier_error;
pub mod prime;
pub mod tensor;

pub use ciphertext::Ciphertext;
pub use encoding::{EncryptedNumber, Fixed};
pub use keys::{KeyPair, KeySize, PublicKey, SecretKey};
pub use noise_source::{CrtNoise, DjnNoise, NoisePool, NoiseSource, StandardNoise};
pub use packing::Packing;
pub use paillier_error::{KeyFault, Malformed, Mismatch, PaillierError, Unencodable};
pub use tensor::{EncryptedMatrix, EncryptedVector};
