//! A 32-byte secret sealed for one recipient, so that a relay (the aggregator, which carries
//! every message between parties) passes it on without reading it.
//!
//! The recipient publishes an X25519 public key; the sender draws an ephemeral key pair, derives
//! from the shared point (SHA-256, with both public keys and a domain label) a 32-byte pad and a
//! MAC key, and sends `(ephemeral public, secret XOR pad, HMAC-SHA256(mac key, ciphertext))`.
//! The pad is used once (the ephemeral key is fresh), so the ciphertext is a one-time pad; the
//! MAC makes a corrupted or misrouted message an error instead of a wrong key. A public key of
//! low order (whose shared point is the identity whatever the secret, so the pad would be a
//! public constant) is refused on both sides. Which public keys are genuine is the caller's to
//! check: a vertical study's Nodes sign theirs with their certificates' keys
//! (`secure::endorsement`), so a relay cannot put its own in.

use curve25519_dalek::montgomery::MontgomeryPoint;
use curve25519_dalek::traits::IsIdentity as _;
use hmac::{Hmac, Mac};
use rand::CryptoRng;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// The bytes of a sealed secret: ephemeral public key, ciphertext, tag.
pub const SEALED_BYTES: usize = 96;

/// A recipient's key pair; the secret half is wiped on drop.
pub struct Recipient {
    secret: Zeroizing<[u8; 32]>,
}

impl Recipient {
    /// A fresh key pair from a cryptographic generator.
    pub fn generate<R: CryptoRng>(rng: &mut R) -> Self {
        let mut secret = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(secret.as_mut());
        Self { secret }
    }

    /// The public half, to be sent to the sender.
    pub fn public(&self) -> [u8; 32] {
        MontgomeryPoint::mul_base_clamped(*self.secret).to_bytes()
    }

    /// The secret in `sealed`, or an error when it was not sealed for this recipient or was
    /// altered on the way.
    pub fn open(&self, sealed: &[u8; SEALED_BYTES]) -> Result<Zeroizing<[u8; 32]>, SealError> {
        let ephemeral: [u8; 32] = sealed[..32].try_into().expect("32 bytes");
        let shared = MontgomeryPoint(ephemeral).mul_clamped(*self.secret);
        if shared.is_identity() {
            return Err(SealError::LowOrder);
        }
        let (pad, mac_key) = derive(&shared, &ephemeral, &self.public());
        let ciphertext = &sealed[32..64];
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(mac_key.as_ref()).expect("any key");
        mac.update(ciphertext);
        mac.verify_slice(&sealed[64..])
            .map_err(|_| SealError::Corrupt)?;
        let mut secret = Zeroizing::new([0u8; 32]);
        for (s, (c, p)) in secret.iter_mut().zip(ciphertext.iter().zip(pad.iter())) {
            *s = c ^ p;
        }
        Ok(secret)
    }
}

/// `secret` sealed for the holder of `recipient` (an X25519 public key); refused for a key of
/// low order.
pub fn seal<R: CryptoRng>(
    secret: &[u8; 32],
    recipient: &[u8; 32],
    rng: &mut R,
) -> Result<[u8; SEALED_BYTES], SealError> {
    let ephemeral = Recipient::generate(rng);
    let ephemeral_public = ephemeral.public();
    let shared = MontgomeryPoint(*recipient).mul_clamped(*ephemeral.secret);
    if shared.is_identity() {
        return Err(SealError::LowOrder);
    }
    let (pad, mac_key) = derive(&shared, &ephemeral_public, recipient);
    let mut out = [0u8; SEALED_BYTES];
    out[..32].copy_from_slice(&ephemeral_public);
    for (o, (s, p)) in out[32..64].iter_mut().zip(secret.iter().zip(pad.iter())) {
        *o = s ^ p;
    }
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(mac_key.as_ref()).expect("any key");
    mac.update(&out[32..64]);
    out[64..].copy_from_slice(&mac.finalize().into_bytes());
    Ok(out)
}

/// Why a sealed secret could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The tag did not match: another recipient's message, or altered bytes.
    #[error("a sealed key did not open: it was sealed for another party or altered on the way")]
    Corrupt,
    /// A public key of low order: its shared point is the identity, whatever the secret.
    #[error("an X25519 public key of low order (its shared point is the identity): refused")]
    LowOrder,
}

/// The pad and the MAC key from the shared point and both public keys.
fn derive(
    shared: &MontgomeryPoint,
    ephemeral: &[u8; 32],
    recipient: &[u8; 32],
) -> (Zeroizing<[u8; 32]>, Zeroizing<[u8; 32]>) {
    let part = |label: &[u8]| {
        let mut h = Sha256::new();
        h.update(b"privlogit sealed v1 ");
        h.update(label);
        h.update(shared.as_bytes());
        h.update(ephemeral);
        h.update(recipient);
        Zeroizing::new(<[u8; 32]>::from(h.finalize()))
    };
    (part(b"pad"), part(b"mac"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn a_sealed_secret_opens_for_its_recipient_only() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let alice = Recipient::generate(&mut rng);
        let bob = Recipient::generate(&mut rng);
        let secret = [42u8; 32];
        let sealed = seal(&secret, &alice.public(), &mut rng).expect("sealed");
        assert_eq!(*alice.open(&sealed).expect("a value"), secret);
        assert_eq!(bob.open(&sealed).expect_err("an error"), SealError::Corrupt);
        // The ciphertext is not the secret, and one flipped bit is caught.
        assert_ne!(&sealed[32..64], &secret[..]);
        let mut altered = sealed;
        altered[40] ^= 1;
        assert_eq!(
            alice.open(&altered).expect_err("an error"),
            SealError::Corrupt
        );
    }

    /// Points of low order (u = 0, u = 1, and a point of order 8 from the list libsodium
    /// refuses): sealing to one and opening one are refused.
    #[test]
    fn low_order_points_are_refused() {
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let mut order8 = [0u8; 32];
        let hex = "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800";
        for (i, b) in order8.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex");
        }
        let mut one = [0u8; 32];
        one[0] = 1;
        let alice = Recipient::generate(&mut rng);
        for point in [[0u8; 32], one, order8] {
            assert_eq!(seal(&[1; 32], &point, &mut rng), Err(SealError::LowOrder));
            let mut sealed = [0u8; SEALED_BYTES];
            sealed[..32].copy_from_slice(&point);
            assert_eq!(
                alice.open(&sealed).expect_err("refused"),
                SealError::LowOrder
            );
        }
    }

    #[test]
    fn x25519_agrees_with_rfc_7748() {
        // RFC 7748 section 6.1: Alice's and Bob's keys and their shared secret.
        let hex = |s: &str| -> [u8; 32] {
            let v: Vec<u8> = (0..32)
                .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("a value"))
                .collect();
            v.try_into().expect("a value")
        };
        let a = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
        let b_public = hex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
        let shared = hex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
        let alice = Recipient {
            secret: Zeroizing::new(a),
        };
        assert_eq!(
            alice.public(),
            hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        );
        assert_eq!(MontgomeryPoint(b_public).mul_clamped(a).to_bytes(), shared);
    }
}
