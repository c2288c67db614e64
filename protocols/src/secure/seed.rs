//! A 256-bit seed sent to the key holder encrypted under the study's key, so that a relay (the
//! aggregator) cannot read it: a vertical party's mask seed, a dealer's correlation seed.

use num_bigint::{BigInt, BigUint, Sign};
use zeroize::Zeroizing;

use super::secure_error::SecureError;
use crate::paillier::{DjnNoise, EncryptedVector, Fixed, Packing, PublicKey, SecretKey};

/// A 256-bit seed.
pub type Seed = [u8; 32];

/// A seed encrypted for the key holder (one 256-bit plaintext).
pub fn encrypt_seed(
    key: &PublicKey,
    seed: &Seed,
    noise: &DjnNoise,
) -> Result<EncryptedVector, SecureError> {
    let value = BigInt::from_bytes_le(Sign::Plus, seed);
    Ok(EncryptedVector::encrypt(
        key,
        &[Fixed::integer(value)],
        &(BigUint::from(1u8) << 256),
        Packing::unpacked(key),
        noise,
    )?)
}

/// A seed decrypted (modulo `2^256`: a substituted ciphertext gives some seed, not an error
/// that would tell its range).
pub fn decrypt_seed(
    seed: &EncryptedVector,
    secret: &SecretKey,
) -> Result<Zeroizing<Seed>, SecureError> {
    let value: BigInt = seed
        .decrypt(secret)?
        .into_iter()
        .next()
        .map(|f| f.value)
        .unwrap_or_default();
    let modulus: BigInt = BigInt::from(1u8) << 256;
    let reduced: BigInt = (value % &modulus + &modulus) % &modulus;
    let (_, bytes) = reduced.to_bytes_le();
    let bytes = Zeroizing::new(bytes);
    let mut out = Zeroizing::new([0u8; 32]);
    out[..bytes.len()].copy_from_slice(&bytes);
    Ok(out)
}
