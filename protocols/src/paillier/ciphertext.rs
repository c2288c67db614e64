//! Ciphertexts and the homomorphic operations on them (Paillier 1999, section 8):
//! `E(a) E(b) = E(a + b)`, `E(a)^k = E(k a)`, `E(a) (1 + b n) = E(a + b)`, all modulo `n^2`.
//!
//! Plaintexts here are raw elements of `Z_n`; signed fixed-point values and the checks that
//! keep them from wrapping around `n` are the job of [`super::encoding`].

use num_bigint::{BigInt, BigUint, Sign};
use rand::CryptoRng;
use rayon::prelude::*;

use super::inverse::invert_mod_odd;
use super::keys::{PublicKey, SecretKey};
use super::montgomery::{Residue, pad, u32_digits};
use super::noise_source::NoiseSource;
use super::paillier_error::{Malformed, PaillierError};

/// A ciphertext, held as a Montgomery residue modulo `n^2` of the key it was made under.
#[derive(Clone, PartialEq, Eq)]
pub struct Ciphertext {
    residue: Residue,
}

impl std::fmt::Debug for Ciphertext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ciphertext({} limbs)", self.residue.len())
    }
}

impl Ciphertext {
    /// The ciphertext as the integer `c` in `[0, n^2)`.
    pub fn value(&self, key: &PublicKey) -> BigUint {
        key.context().to_biguint(&self.residue)
    }

    /// The ciphertext of the integer `c`, which must lie in `(0, n^2)` and be prime to `n`.
    /// Every `Ciphertext` is a unit modulo `n^2` (checked here, preserved by every operation),
    /// which is what lets negation and decryption assume an inverse exists.
    pub fn from_value(key: &PublicKey, c: &BigUint) -> Result<Self, PaillierError> {
        if !key.is_unit_below_n_squared(c) {
            return Err(PaillierError::InvalidCiphertext);
        }
        Ok(Self {
            residue: key.context().to_residue(c),
        })
    }

    /// Exactly [`PublicKey::ciphertext_bytes`] big-endian bytes.
    pub fn to_bytes(&self, key: &PublicKey) -> Vec<u8> {
        let raw = self.value(key).to_bytes_be();
        let mut out = vec![0u8; key.ciphertext_bytes() - raw.len()];
        out.extend_from_slice(&raw);
        out
    }

    /// Reads many [`Self::to_bytes`] outputs, as [`Self::from_bytes`] each but checking that
    /// all are units modulo `n^2` with one inversion (a vector's worth of separate inversions
    /// was a tenth of a small study's time).
    pub fn many_from_bytes<'a>(
        key: &PublicKey,
        chunks: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<Vec<Self>, PaillierError> {
        use rayon::prelude::*;
        let values = chunks
            .into_iter()
            .map(|bytes| {
                if bytes.len() != key.ciphertext_bytes() {
                    return Err(PaillierError::Format(Malformed::Length {
                        what: "ciphertext bytes",
                        got: bytes.len(),
                        expected: key.ciphertext_bytes(),
                    }));
                }
                Ok(BigUint::from_bytes_be(bytes))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if !key.all_units_below_n_squared(&values) {
            return Err(PaillierError::InvalidCiphertext);
        }
        Ok(values
            .par_iter()
            .map(|c| Self {
                residue: key.context().to_residue(c),
            })
            .collect())
    }

    /// Reads [`Self::to_bytes`] output, refusing any other length or an out-of-range value.
    pub fn from_bytes(key: &PublicKey, bytes: &[u8]) -> Result<Self, PaillierError> {
        if bytes.len() != key.ciphertext_bytes() {
            return Err(PaillierError::Format(Malformed::Length {
                what: "ciphertext bytes",
                got: bytes.len(),
                expected: key.ciphertext_bytes(),
            }));
        }
        Self::from_value(key, &BigUint::from_bytes_be(bytes))
    }

    pub(crate) fn from_residue(residue: Residue) -> Self {
        Self { residue }
    }

    pub(crate) fn residue(&self) -> &Residue {
        &self.residue
    }
}

impl PublicKey {
    /// `(1 + m n)` as a residue: the plaintext part of a ciphertext, for `m < n`.
    fn plaintext_residue(&self, m: &BigUint) -> Residue {
        self.context().to_residue(&(m * self.n() + 1u32))
    }

    /// Encrypts `m` (reduced modulo n) with a fresh noise from `source`.
    pub fn encrypt<S, R>(&self, m: &BigUint, source: &S, rng: &mut R) -> Ciphertext
    where
        S: NoiseSource,
        R: CryptoRng + ?Sized,
    {
        assert!(source.public_key() == self, "noise source of another key");
        self.encrypt_with_noise(m, &source.noise(rng))
    }

    /// Encrypts `m` with a given noise residue `r^n` (for known-answer tests and pools).
    pub fn encrypt_with_noise(&self, m: &BigUint, noise: &Residue) -> Ciphertext {
        let m = m % self.n();
        Ciphertext {
            residue: self.context().mul(&self.plaintext_residue(&m), noise),
        }
    }

    /// Encrypts many plaintexts in parallel, each task drawing from its own OS-seeded CSPRNG
    /// (noise two at a time: see [`NoiseSource::noise_pair`]).
    pub fn encrypt_all<S: NoiseSource>(
        &self,
        plaintexts: &[BigUint],
        source: &S,
    ) -> Vec<Ciphertext> {
        assert!(source.public_key() == self, "noise source of another key");
        let noises = noise_for(source, plaintexts.len());
        plaintexts
            .par_iter()
            .zip(noises)
            .map(|(m, noise)| self.encrypt_with_noise(m, &noise))
            .collect()
    }

    /// Every ciphertext under fresh randomness, in parallel (noise two at a time).
    pub fn rerandomize_all<S: NoiseSource>(
        &self,
        ciphertexts: &[Ciphertext],
        source: &S,
    ) -> Vec<Ciphertext> {
        assert!(source.public_key() == self, "noise source of another key");
        let noises = noise_for(source, ciphertexts.len());
        ciphertexts
            .par_iter()
            .zip(noises)
            .map(|(c, noise)| Ciphertext {
                residue: self.context().mul(&c.residue, &noise),
            })
            .collect()
    }

    /// `E(a + b)`.
    pub fn add(&self, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        Ciphertext {
            residue: self.context().mul(&a.residue, &b.residue),
        }
    }

    /// `E(-a)`: the inverse modulo `n^2`, found by inverting modulo n (half the length, about
    /// a quarter of the work) and one Hensel step: if `c x0 = 1 mod n` then `x = x0 (2 - c x0)`
    /// has `c x = 1 mod n^2`.
    pub fn negate(&self, a: &Ciphertext) -> Ciphertext {
        let context = self.context();
        let limbs = self.n().to_u64_digits();
        let reduced = pad((a.value(self) % self.n()).to_u64_digits(), limbs.len());
        let x0 = invert_mod_odd(&reduced, &limbs).expect("ciphertexts are units modulo n");
        let x0 = context.to_residue(&BigUint::from_slice(&u32_digits(&x0)));
        let two = context.to_residue(&BigUint::from(2u8));
        let correction = context.sub(&two, &context.mul(&a.residue, &x0));
        Ciphertext {
            residue: context.mul(&x0, &correction),
        }
    }

    /// `E(a - b)`.
    pub fn sub(&self, a: &Ciphertext, b: &Ciphertext) -> Ciphertext {
        self.add(a, &self.negate(b))
    }

    /// `E(a + m)` for a plaintext `m` (reduced modulo n); no fresh randomness is added.
    pub fn add_plain(&self, a: &Ciphertext, m: &BigUint) -> Ciphertext {
        let m = m % self.n();
        Ciphertext {
            residue: self.context().mul(&a.residue, &self.plaintext_residue(&m)),
        }
    }

    /// `E(k a)` for a signed integer `k`. A negative `k` costs one inversion and an exponent
    /// `|k|`, never an exponent near n (magnitudes of n or more are first reduced modulo n).
    /// Variable time in `k` (the scalar belongs to the party computing).
    pub fn mul_scalar(&self, a: &Ciphertext, k: &BigInt) -> Ciphertext {
        let sign = k.sign();
        let magnitude = if k.magnitude() < self.n() {
            k.magnitude().clone()
        } else {
            k.magnitude() % self.n()
        };
        let base = match sign {
            Sign::Minus => self.negate(a),
            _ => a.clone(),
        };
        Ciphertext {
            residue: self
                .context()
                .pow_public(&base.residue, &magnitude.to_u64_digits()),
        }
    }

    /// `E(sum_i a_i 2^(w i))`: one-value ciphertexts packed into the slots of one (slot 0
    /// first), by Horner's rule from the top slot, `w` squarings a slot. Packing before a
    /// decryption trades one decryption per value (two 1024-bit exponentiations modulo `p^2`
    /// and `q^2` at 2048 bits) for `w` squarings modulo `n^2` per value: a fifth of the work
    /// for slots of 130 bits. The caller keeps the packed sum within the slots' capacity.
    pub fn pack(&self, values: &[Ciphertext], slot_bits: u32) -> Ciphertext {
        let context = self.context();
        let mut iter = values.iter().rev();
        let Some(top) = iter.next() else {
            return Ciphertext {
                residue: context.one(),
            };
        };
        let mut acc = top.residue.clone();
        for c in iter {
            for _ in 0..slot_bits {
                acc = context.square(&acc);
            }
            acc = context.mul(&acc, &c.residue);
        }
        Ciphertext { residue: acc }
    }

    /// `E(sum a_i)` of any number of ciphertexts (`E(0)` with noise 1 for none).
    pub fn sum<'a>(&self, items: impl IntoIterator<Item = &'a Ciphertext>) -> Ciphertext {
        let context = self.context();
        let mut acc = context.one();
        let mut scratch = vec![0u64; context.limbs()];
        for c in items {
            context.mul_into(&acc, &c.residue, &mut scratch);
            std::mem::swap(&mut acc, &mut scratch);
        }
        Ciphertext { residue: acc }
    }

    /// The same plaintext under fresh randomness: multiply by a new noise. Derived ciphertexts
    /// (sums, products) must be re-randomised before they leave a party, or their randomness
    /// reveals how they were formed.
    pub fn rerandomize<S, R>(&self, a: &Ciphertext, source: &S, rng: &mut R) -> Ciphertext
    where
        S: NoiseSource,
        R: CryptoRng + ?Sized,
    {
        Ciphertext {
            residue: self.context().mul(&a.residue, &source.noise(rng)),
        }
    }
}

/// `count` fresh noises drawn in parallel, in pairs (and one alone for an odd count).
fn noise_for<S: NoiseSource>(source: &S, count: usize) -> Vec<Residue> {
    let mut noises: Vec<Residue> = (0..count / 2)
        .into_par_iter()
        .map_init(rand::rng, |rng, _| source.noise_pair(rng))
        .flat_map_iter(|(a, b)| [a, b])
        .collect();
    if count % 2 == 1 {
        noises.push(source.noise(&mut rand::rng()));
    }
    noises
}

impl SecretKey {
    /// Decrypts to the plaintext in `[0, n)` with the CRT (two exponentiations modulo p^2 and
    /// q^2 with exponents p - 1 and q - 1, constant-time windows). Fails (without saying why)
    /// for a ciphertext that is not a unit modulo this key's n, e.g. one made under another key.
    pub fn decrypt(&self, c: &Ciphertext) -> Result<BigUint, PaillierError> {
        self.decrypt_crt(&c.value(self.public_key()))
    }

    /// Decrypts with the textbook formula, without the CRT (for cross-checking).
    pub fn decrypt_without_crt(&self, c: &Ciphertext) -> Result<BigUint, PaillierError> {
        self.decrypt_textbook(&c.value(self.public_key()))
    }

    /// Decrypts many ciphertexts in parallel.
    pub fn decrypt_all(&self, ciphertexts: &[Ciphertext]) -> Result<Vec<BigUint>, PaillierError> {
        ciphertexts.par_iter().map(|c| self.decrypt(c)).collect()
    }
}
