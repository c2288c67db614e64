//! Paillier keys (Paillier 1999, scheme 1) with `g = n + 1`.
//!
//! The public key is the modulus `n = p q`; everything else is derived. The secret key keeps
//! `p`, `q` and the CRT constants that make decryption two half-size exponentiations. `Debug`
//! never prints them; serialising them needs the explicitly named
//! [`SecretKey::export_secret`].
//!
//! # What is wiped
//!
//! num-bigint's `BigUint` does not implement `Zeroize`, and this workspace has no `unsafe`, so
//! the secret key keeps its values as `Zeroizing<Vec<u64>>` limbs (wiped on drop by `zeroize`'s
//! volatile writes), and its Montgomery contexts modulo `p^2` and `q^2` (which hold `p^2`, `q^2`,
//! `-m^-1 mod 2^64`, `R mod m`, `R^2 mod m`, `R^3 mod m`) zeroize themselves on drop. Wiped
//! this way: `p`, `q`, `p - 1`, `q - 1`, `h_p`, `h_q`, `p^-1 mod q`, `lambda`, `mu`, the CRT
//! noise exponents and `(p^2)^-1 mod q^2`.
//!
//! Computation needs `BigUint`s: key construction makes them from the primes, and every
//! decryption rebuilds `p`, `q`, `h_p`, `h_q` and `p^-1 mod q` from the limbs (a few small
//! allocations, nothing next to the two exponentiations). Those temporaries are `SecretInt`s,
//! overwritten in place when dropped, as far as safe code reaches: `SecretInt`'s drop writes
//! the digits over (same length, so num-bigint refills the same heap buffer), makes the
//! compiler treat them as read (`std::hint::black_box`, best effort rather than the volatile
//! writes of `zeroize`), and then frees the buffer. Not wiped: copies num-bigint makes inside
//! arithmetic (a product's or remainder's scratch space, buffers it reallocates), freed
//! without being overwritten; the primes inside `random_prime` and the primality test; the
//! caller's own `BigUint`s passed to [`SecretKey::from_primes`]; and the decrypted values
//! (plaintexts, and `c^(p-1) mod p^2`, which depend on the message, not only the key).

use std::fmt;
use std::sync::Arc;

use num_bigint::BigUint;
use num_integer::Integer;
use num_traits::CheckedSub;
use rand::CryptoRng;
use zeroize::Zeroizing;

use super::montgomery::{Montgomery, pad};
use super::paillier_error::{KeyFault, Malformed, PaillierError};
use super::prime::{is_probable_prime, random_prime};

/// Serialisation format version of keys.
pub const KEY_FORMAT_VERSION: u16 = 1;
const PUBLIC_MAGIC: &[u8; 4] = b"PLPK";
const SECRET_MAGIC: &[u8; 4] = b"PLSK";
/// Largest modulus accepted anywhere, in bits.
pub const MAX_MODULUS_BITS: u64 = 4096;
/// Smallest modulus accepted from outside (imported keys); smaller ones only through the
/// explicitly named `*_insecure_for_tests` constructors.
pub const MIN_MODULUS_BITS: u64 = 2048;

/// Modulus sizes for real keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeySize {
    /// 2048-bit n (about 112-bit security; the default).
    #[default]
    Bits2048,
    /// 3072-bit n (about 128-bit security).
    Bits3072,
    /// 4096-bit n.
    Bits4096,
}

impl KeySize {
    /// The modulus length in bits.
    pub fn bits(self) -> u32 {
        match self {
            KeySize::Bits2048 => 2048,
            KeySize::Bits3072 => 3072,
            KeySize::Bits4096 => 4096,
        }
    }
}

/// A Paillier public key: the modulus `n`, with `n^2` and its Montgomery context.
#[derive(Clone)]
pub struct PublicKey {
    n: BigUint,
    n_squared: BigUint,
    half_n: BigUint,
    context: Arc<Montgomery>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey {{ bits: {} }}", self.bits())
    }
}

impl PartialEq for PublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.n == other.n
    }
}

impl Eq for PublicKey {}

impl PublicKey {
    /// The public key of an odd modulus `n` of 2048 to 4096 bits, for keys made elsewhere
    /// (python-paillier exports only `n`).
    pub fn from_modulus(n: BigUint) -> Result<Self, PaillierError> {
        if n.bits() < MIN_MODULUS_BITS {
            return Err(PaillierError::InvalidKey(KeyFault::ModulusTooShort {
                bits: n.bits(),
                min: MIN_MODULUS_BITS,
            }));
        }
        Self::from_modulus_insecure_for_tests(n)
    }

    /// Like [`Self::from_modulus`] but accepting any odd modulus of more than 64 bits:
    /// **insecure below 2048 bits**, for tests and known-answer vectors only.
    pub fn from_modulus_insecure_for_tests(n: BigUint) -> Result<Self, PaillierError> {
        if !n.bit(0) || n.bits() <= 64 || n.bits() > MAX_MODULUS_BITS {
            return Err(PaillierError::InvalidKey(KeyFault::ModulusOutOfRange {
                bits: n.bits(),
                max: MAX_MODULUS_BITS,
            }));
        }
        let n_squared = &n * &n;
        Ok(Self {
            context: Arc::new(Montgomery::new(&n_squared)),
            half_n: &n >> 1u32,
            n_squared,
            n,
        })
    }

    /// The modulus `n`.
    pub fn n(&self) -> &BigUint {
        &self.n
    }

    /// `n^2`, the ciphertext modulus.
    pub fn n_squared(&self) -> &BigUint {
        &self.n_squared
    }

    /// `floor(n / 2)`: plaintexts above it decode as negative.
    pub fn half_n(&self) -> &BigUint {
        &self.half_n
    }

    /// Length of `n` in bits.
    pub fn bits(&self) -> u64 {
        self.n.bits()
    }

    /// True when `c` lies in `(0, n^2)` and is prime to `n`: a valid ciphertext (or noise base).
    pub(crate) fn is_unit_below_n_squared(&self, c: &BigUint) -> bool {
        if c == &BigUint::ZERO || c >= self.n_squared() {
            return false;
        }
        let limbs = self.n().to_u64_digits();
        let reduced = pad((c % self.n()).to_u64_digits(), limbs.len());
        super::inverse::invert_mod_odd(&reduced, &limbs).is_some()
    }

    /// True when every `c` lies in `(0, n^2)` and is prime to `n`, with one inversion for all:
    /// a prime factor of `n` divides the product of the `c mod n` exactly when it divides one.
    pub(crate) fn all_units_below_n_squared(&self, cs: &[BigUint]) -> bool {
        if cs
            .iter()
            .any(|c| c == &BigUint::ZERO || c >= self.n_squared())
        {
            return false;
        }
        let n = self.n();
        let product = cs
            .iter()
            .fold(BigUint::from(1u8), |acc, c| (acc * (c % n)) % n);
        let limbs = n.to_u64_digits();
        let reduced = pad(product.to_u64_digits(), limbs.len());
        super::inverse::invert_mod_odd(&reduced, &limbs).is_some()
    }

    /// Bytes of one ciphertext on the wire (the length of `n^2`).
    pub fn ciphertext_bytes(&self) -> usize {
        self.n_squared.bits().div_ceil(8) as usize
    }

    /// The Montgomery context modulo `n^2`.
    pub(crate) fn context(&self) -> &Montgomery {
        &self.context
    }

    /// Versioned bytes: `"PLPK"`, version (u16 BE), length of n (u32 BE), n (big-endian).
    pub fn to_bytes(&self) -> Vec<u8> {
        let n = self.n.to_bytes_be();
        let mut out = Vec::with_capacity(10 + n.len());
        out.extend_from_slice(PUBLIC_MAGIC);
        out.extend_from_slice(&KEY_FORMAT_VERSION.to_be_bytes());
        out.extend_from_slice(&(n.len() as u32).to_be_bytes());
        out.extend_from_slice(&n);
        out
    }

    /// Reads [`Self::to_bytes`] output, checking magic, version and lengths.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PaillierError> {
        let mut reader = FieldReader::new(bytes, PUBLIC_MAGIC)?;
        let n = reader.number()?;
        reader.finish()?;
        Self::from_modulus(n)
    }

    /// [`Self::from_bytes`] accepting moduli below 2048 bits: **insecure**, for tests.
    pub fn from_bytes_insecure_for_tests(bytes: &[u8]) -> Result<Self, PaillierError> {
        let mut reader = FieldReader::new(bytes, PUBLIC_MAGIC)?;
        let n = reader.number()?;
        reader.finish()?;
        Self::from_modulus_insecure_for_tests(n)
    }
}

/// A Paillier secret key, with CRT constants for decryption.
pub struct SecretKey {
    public: PublicKey,
    p: Zeroizing<Vec<u64>>,
    q: Zeroizing<Vec<u64>>,
    /// Montgomery contexts modulo p^2 and q^2, for the decryption exponentiations.
    p_squared: Montgomery,
    q_squared: Montgomery,
    /// p - 1 and q - 1, the CRT decryption exponents.
    p_minus_1: Zeroizing<Vec<u64>>,
    q_minus_1: Zeroizing<Vec<u64>>,
    /// h_p = L_p(g^(p-1) mod p^2)^-1 mod p, and h_q likewise (Paillier, section 7).
    hp: Zeroizing<Vec<u64>>,
    hq: Zeroizing<Vec<u64>>,
    /// p^-1 mod q, for recombination.
    p_inv_q: Zeroizing<Vec<u64>>,
    /// lambda = lcm(p - 1, q - 1) and mu = lambda^-1 mod n, for the textbook decryption.
    lambda: Zeroizing<Vec<u64>>,
    mu: Zeroizing<Vec<u64>>,
    /// n mod p(p-1) and n mod q(q-1): the CRT noise exponents (the orders of Z_{p^2}^* and
    /// Z_{q^2}^*), padded to those orders' lengths.
    noise_exponent_p: Zeroizing<Vec<u64>>,
    noise_exponent_q: Zeroizing<Vec<u64>>,
    /// (p^2)^-1 mod q^2 as a residue of the q^2 context, for recombining CRT noise.
    p_squared_inv: Zeroizing<Vec<u64>>,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey {{ bits: {}, .. }}", self.public.bits())
    }
}

impl SecretKey {
    /// The matching public key.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// Builds the secret key from its primes, checking that they are probable primes (the
    /// Miller-Rabin test of key generation) and that n has at least 2048 bits.
    pub fn from_primes(p: &BigUint, q: &BigUint) -> Result<Self, PaillierError> {
        let mut rng = rand::rng();
        for x in [p, q] {
            if x.bits() < 3 || !is_probable_prime(x, &mut rng) {
                return Err(PaillierError::InvalidKey(KeyFault::NotPrime));
            }
        }
        if (p * q).bits() < MIN_MODULUS_BITS {
            return Err(PaillierError::InvalidKey(KeyFault::ModulusTooShort {
                bits: (p * q).bits(),
                min: MIN_MODULUS_BITS,
            }));
        }
        Self::from_primes_insecure_for_tests(p, q)
    }

    /// Like [`Self::from_primes`] without the primality test and accepting small moduli:
    /// **for tests and known-answer vectors only** (key generation calls it after testing).
    pub fn from_primes_insecure_for_tests(p: &BigUint, q: &BigUint) -> Result<Self, PaillierError> {
        let one = BigUint::from(1u8);
        if p == q || !p.bit(0) || !q.bit(0) || p.bits() < 8 || q.bits() < 8 || p.gcd(q) != one {
            return Err(PaillierError::InvalidKey(KeyFault::NotDistinctOddPrimes));
        }
        let public = PublicKey::from_modulus_insecure_for_tests(p * q)?;
        let (pm1, qm1) = (p - &one, q - &one);
        // gcd(n, (p-1)(q-1)) = 1 is what makes g = n + 1 a valid base.
        if !public.n().gcd(&(&pm1 * &qm1)).eq(&one) {
            return Err(PaillierError::InvalidKey(KeyFault::NotCoprime));
        }
        let invalid = || PaillierError::InvalidKey(KeyFault::NotDistinctOddPrimes);
        let hp = h_constant(p, q).ok_or_else(invalid)?;
        let hq = h_constant(q, p).ok_or_else(invalid)?;
        let p_inv_q = p
            .modinv(q)
            .ok_or(PaillierError::InvalidKey(KeyFault::NotInvertible {
                what: "p",
                modulo: "q",
            }))?;
        let lambda = pm1.lcm(&qm1);
        let mu = (&lambda % public.n())
            .modinv(public.n())
            .ok_or(PaillierError::InvalidKey(KeyFault::NotInvertible {
                what: "lambda",
                modulo: "n",
            }))?;
        let (pm1, qm1) = (SecretInt(pm1), SecretInt(qm1));
        let (hp, hq, p_inv_q) = (SecretInt(hp), SecretInt(hq), SecretInt(p_inv_q));
        let (lambda, mu) = (SecretInt(lambda), SecretInt(mu));
        let secret = |x: &BigUint| limbs_of(x, 0);
        let noise_exponent = |x: &BigUint| {
            let order = SecretInt(x * (x - 1u32));
            let exponent = SecretInt(public.n() % &*order);
            limbs_of(&exponent, order.bits().div_ceil(64) as usize)
        };
        let (p_squared, q_squared) = (SecretInt(p * p), SecretInt(q * q));
        let q_squared_context = Montgomery::new(&q_squared);
        let p_squared_inv = SecretInt(p_squared.modinv(&q_squared).ok_or(
            PaillierError::InvalidKey(KeyFault::NotInvertible {
                what: "p^2",
                modulo: "q^2",
            }),
        )?);
        Ok(Self {
            noise_exponent_p: noise_exponent(p),
            noise_exponent_q: noise_exponent(q),
            p_squared_inv: Zeroizing::new(q_squared_context.to_residue(&p_squared_inv)),
            p_squared: Montgomery::new(&p_squared),
            q_squared: q_squared_context,
            p: secret(p),
            q: secret(q),
            p_minus_1: secret(&pm1),
            q_minus_1: secret(&qm1),
            hp: secret(&hp),
            hq: secret(&hq),
            p_inv_q: secret(&p_inv_q),
            lambda: secret(&lambda),
            mu: secret(&mu),
            public,
        })
    }

    /// `p` (secret; wiped when dropped).
    pub(crate) fn p(&self) -> SecretInt {
        from_limbs(&self.p)
    }

    /// `q` (secret; wiped when dropped).
    pub(crate) fn q(&self) -> SecretInt {
        from_limbs(&self.q)
    }

    /// Decrypts the ciphertext value `c < n^2` with the CRT: `m_p = L_p(c^(p-1) mod p^2) h_p mod p`, likewise for q, then
    /// `m = m_p + p ((m_q - m_p) p^-1 mod q)`.
    pub(crate) fn decrypt_crt(&self, c: &BigUint) -> Result<BigUint, PaillierError> {
        let p = self.p();
        let q = self.q();
        // The two halves' exponentiations run interleaved (see `pow_secret_pair`).
        let (xp, xq) = self.p_squared.pow_secret_pair(
            &self.p_squared.to_residue(c),
            &self.p_minus_1,
            &self.q_squared,
            &self.q_squared.to_residue(c),
            &self.q_minus_1,
        );
        let mp = Self::half_decrypt(&self.p_squared.to_biguint(&xp), &p, &self.hp)?;
        let mq = Self::half_decrypt(&self.q_squared.to_biguint(&xq), &q, &self.hq)?;
        let p_inv_q = from_limbs(&self.p_inv_q);
        let (p, q) = (&*p, &*q);
        let diff = (&mq + q - (&mp % q)) % q;
        let h = (diff * &*p_inv_q) % q;
        Ok(mp + p * h)
    }

    /// `L_x(c^(x-1) mod x^2) h_x mod x` from the power `c^(x-1) mod x^2`.
    fn half_decrypt(power: &BigUint, prime: &BigUint, h: &[u64]) -> Result<BigUint, PaillierError> {
        // For a valid ciphertext the power is 1 mod x; anything else (c sharing a factor with
        // n) fails.
        let (l, rest) = power
            .checked_sub(&BigUint::from(1u8))
            .map(|t| t.div_rem(prime))
            .ok_or(PaillierError::DecryptionFailed)?;
        if rest != BigUint::ZERO {
            return Err(PaillierError::DecryptionFailed);
        }
        Ok((l * &*from_limbs(h)) % prime)
    }

    /// Decrypts with the textbook formula `m = L(c^lambda mod n^2) mu mod n`, without the CRT
    /// (for cross-checking; about four times slower).
    pub(crate) fn decrypt_textbook(&self, c: &BigUint) -> Result<BigUint, PaillierError> {
        let context = self.public.context();
        let x = context.to_biguint(&context.pow_secret(&context.to_residue(c), &self.lambda));
        let (l, rest) = x
            .checked_sub(&BigUint::from(1u8))
            .map(|t| t.div_rem(self.public.n()))
            .ok_or(PaillierError::DecryptionFailed)?;
        if rest != BigUint::ZERO {
            return Err(PaillierError::DecryptionFailed);
        }
        Ok((l * &*from_limbs(&self.mu)) % self.public.n())
    }

    /// Noise `r^n mod n^2` computed with the CRT (what the key holder can do): `r^(n mod
    /// p(p-1)) mod p^2` and likewise for q, then `x = x_p + p^2 ((x_q - x_p) (p^2)^-1 mod q^2)`.
    /// Two exponentiations of half the modulus length with exponents of half the length.
    pub(crate) fn crt_noise(&self, r: &BigUint) -> BigUint {
        let (pc, qc) = (&self.p_squared, &self.q_squared);
        let xp = pc.pow_secret(&pc.to_residue(r), &self.noise_exponent_p);
        let xq = qc.pow_secret(&qc.to_residue(r), &self.noise_exponent_q);
        let xp_value = pc.to_biguint(&xp);
        let difference = qc.sub(&xq, &qc.to_residue(&xp_value));
        let h = qc.to_biguint(&qc.mul(&difference, &self.p_squared_inv));
        xp_value + pc.modulus() * h
    }

    /// Versioned bytes of the secret key: `"PLSK"`, version, then p and q. The name says what
    /// it does: whoever holds the result can decrypt everything.
    pub fn export_secret(&self) -> Zeroizing<Vec<u8>> {
        let mut out = Zeroizing::new(Vec::new());
        out.extend_from_slice(SECRET_MAGIC);
        out.extend_from_slice(&KEY_FORMAT_VERSION.to_be_bytes());
        for value in [self.p(), self.q()] {
            let bytes = Zeroizing::new(value.to_bytes_be());
            out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            out.extend_from_slice(&bytes);
        }
        out
    }

    /// Reads [`Self::export_secret`] output.
    pub fn import_secret(bytes: &[u8]) -> Result<Self, PaillierError> {
        let (p, q) = Self::exported_primes(bytes)?;
        Self::from_primes(&p, &q)
    }

    /// [`Self::import_secret`] accepting keys below 2048 bits: **insecure**, for tests only.
    pub fn import_secret_insecure_for_tests(bytes: &[u8]) -> Result<Self, PaillierError> {
        let (p, q) = Self::exported_primes(bytes)?;
        Self::from_primes_insecure_for_tests(&p, &q)
    }

    /// The primes in [`Self::export_secret`] output.
    fn exported_primes(bytes: &[u8]) -> Result<(SecretInt, SecretInt), PaillierError> {
        let mut reader = FieldReader::new(bytes, SECRET_MAGIC)?;
        let p = SecretInt(reader.number()?);
        let q = SecretInt(reader.number()?);
        reader.finish()?;
        Ok((p, q))
    }
}

/// A public and secret key together.
#[derive(Debug)]
pub struct KeyPair {
    /// The secret key (which also holds the public key).
    pub secret: SecretKey,
}

impl KeyPair {
    /// A fresh key pair of a real size. Primes of half the modulus length each with their top
    /// two bits set, so n has exactly the requested length, and `|p - q| > 2^(bits/2 - 100)`
    /// (FIPS 186-5, A.1.3) so Fermat factoring cannot work.
    pub fn generate<R: CryptoRng + ?Sized>(size: KeySize, rng: &mut R) -> Self {
        Self::generate_bits(size.bits(), rng)
    }

    /// A key pair of any even size from 128 bits: **insecure below 2048 bits**, for tests and
    /// experiments that need fast keys only.
    pub fn generate_insecure_for_tests<R: CryptoRng + ?Sized>(bits: u32, rng: &mut R) -> Self {
        assert!(bits >= 128 && bits.is_multiple_of(2) && u64::from(bits) <= MAX_MODULUS_BITS);
        Self::generate_bits(bits, rng)
    }

    /// [`Self::generate`] with the two primes searched at once on two threads, each drawing
    /// from its own OS-seeded CSPRNG (`rand::rng()`): about half the wall time of a key
    /// holder's setup on a 2-core machine (median 0.17 s to 0.09 s at 2048 bits, AMD EPYC).
    /// Not reproducible from a seed; [`Self::generate`] is.
    pub fn generate_parallel(size: KeySize) -> Self {
        let half = size.bits() / 2;
        let min_gap = BigUint::from(1u8) << half.saturating_sub(100);
        loop {
            let (p, q) = rayon::join(
                || SecretInt(random_prime(half, &mut rand::rng())),
                || SecretInt(random_prime(half, &mut rand::rng())),
            );
            let gap = SecretInt(if *p > *q { &*p - &*q } else { &*q - &*p });
            if *gap <= min_gap {
                continue;
            }
            if let Ok(secret) = SecretKey::from_primes_insecure_for_tests(&p, &q) {
                return Self { secret };
            }
        }
    }

    fn generate_bits<R: CryptoRng + ?Sized>(bits: u32, rng: &mut R) -> Self {
        let half = bits / 2;
        let min_gap = BigUint::from(1u8) << half.saturating_sub(100);
        loop {
            let p = SecretInt(random_prime(half, rng));
            let q = SecretInt(random_prime(half, rng));
            let gap = SecretInt(if *p > *q { &*p - &*q } else { &*q - &*p });
            if *gap <= min_gap {
                continue;
            }
            if let Ok(secret) = SecretKey::from_primes_insecure_for_tests(&p, &q) {
                debug_assert_eq!(secret.public_key().bits(), u64::from(bits));
                return Self { secret };
            }
        }
    }

    /// The public key.
    pub fn public_key(&self) -> &PublicKey {
        self.secret.public_key()
    }
}

/// `h = L(g^(x-1) mod x^2)^-1 mod x` for g = n + 1, n = x y: since `g^(x-1) = 1 + (x-1) n mod
/// x^2`, `L = (x-1) y mod x`, so `h = ((x-1) y)^-1 mod x` (`None` when x is not prime).
fn h_constant(x: &BigUint, y: &BigUint) -> Option<BigUint> {
    (((x - 1u32) * y) % x).modinv(x)
}

/// A secret value as a `BigUint` for computation: overwritten in place when dropped (see the
/// module's notes for how far that reaches).
pub(crate) struct SecretInt(pub(crate) BigUint);

impl std::ops::Deref for SecretInt {
    type Target = BigUint;

    fn deref(&self) -> &BigUint {
        &self.0
    }
}

impl Drop for SecretInt {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// Overwrites `x`'s digits in place and leaves it zero. `assign_from_slice` refills the same
/// heap buffer (cleared, then as many digits as before, which fit its capacity), and a top
/// digit of 1 keeps num-bigint from truncating or reallocating it; `black_box` keeps the
/// compiler from dropping the writes as dead before the buffer is freed. Best effort: safe code
/// cannot reach copies num-bigint made earlier.
fn wipe(x: &mut BigUint) {
    let digits = x.iter_u32_digits().len();
    if digits == 0 {
        return;
    }
    let mut pattern = vec![0u32; digits];
    pattern[digits - 1] = 1;
    x.assign_from_slice(&pattern);
    std::hint::black_box(&*x);
    *x = BigUint::ZERO;
}

/// The limbs of `x`, padded with zeros to at least `len`, in a buffer wiped on drop (allocated
/// once at its final length, so no unwiped copy is left behind by growing it).
fn limbs_of(x: &BigUint, len: usize) -> Zeroizing<Vec<u64>> {
    let digits = x.iter_u64_digits();
    let mut out = Zeroizing::new(Vec::with_capacity(len.max(digits.len())));
    out.extend(digits);
    let len = len.max(out.len());
    out.resize(len, 0);
    out
}

fn from_limbs(limbs: &[u64]) -> SecretInt {
    let digits = Zeroizing::new(super::montgomery::u32_digits(limbs));
    SecretInt(BigUint::from_slice(&digits))
}

/// Reads length-prefixed big-endian numbers after a magic and version.
struct FieldReader<'a> {
    rest: &'a [u8],
}

impl<'a> FieldReader<'a> {
    fn new(bytes: &'a [u8], magic: &[u8; 4]) -> Result<Self, PaillierError> {
        if bytes.len() < 6 || &bytes[..4] != magic {
            return Err(PaillierError::Format(Malformed::Magic {
                what: "privlogit key",
            }));
        }
        let version = u16::from_be_bytes([bytes[4], bytes[5]]);
        if version != KEY_FORMAT_VERSION {
            return Err(PaillierError::Format(Malformed::Version {
                what: "key format",
                found: version.into(),
                supported: KEY_FORMAT_VERSION.into(),
            }));
        }
        Ok(Self { rest: &bytes[6..] })
    }

    fn number(&mut self) -> Result<BigUint, PaillierError> {
        let bad = || PaillierError::Format(Malformed::Truncated { what: "key" });
        let len_bytes: [u8; 4] = self
            .rest
            .get(..4)
            .ok_or_else(bad)?
            .try_into()
            .map_err(|_| bad())?;
        let len = u32::from_be_bytes(len_bytes) as usize;
        if len == 0 || len as u64 > MAX_MODULUS_BITS / 8 {
            return Err(PaillierError::Format(Malformed::Value {
                what: "key field bytes",
                value: len as u64,
            }));
        }
        let value = self.rest.get(4..4 + len).ok_or_else(bad)?;
        self.rest = &self.rest[4 + len..];
        Ok(BigUint::from_bytes_be(value))
    }

    fn finish(self) -> Result<(), PaillierError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(PaillierError::Format(Malformed::Trailing {
                what: "key",
                bytes: self.rest.len(),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wiping_leaves_zero_whatever_the_size() {
        for bits in [0u32, 1, 31, 32, 63, 64, 65, 1024, 2047] {
            let mut x = (BigUint::from(1u8) << bits) - 1u8 + (BigUint::from(1u8) << bits);
            wipe(&mut x);
            assert_eq!(x, BigUint::ZERO, "{bits}");
        }
        let secret = SecretInt(BigUint::from(12345u32));
        assert_eq!(*secret, BigUint::from(12345u32));
    }

    /// One inversion decides a whole vector: a single value sharing a factor with `n` (or
    /// zero, or past `n^2`) fails it, as the one-by-one check does.
    #[test]
    fn a_vector_of_units_is_checked_at_once() {
        let pair = crate::paillier::KeyPair::generate_insecure_for_tests(512, &mut rand::rng());
        let key = pair.secret.public_key();
        let units: Vec<BigUint> = (2u32..40)
            .map(|v| BigUint::from(v) * 7919u32 + 1u32)
            .collect();
        assert!(units.iter().all(|c| key.is_unit_below_n_squared(c)));
        assert!(key.all_units_below_n_squared(&units));
        assert!(key.all_units_below_n_squared(&[]));
        let multiple_of_p = &*pair.secret.p() * 12345u32;
        for bad in [multiple_of_p, BigUint::ZERO, key.n_squared().clone()] {
            let mut with_bad = units.clone();
            with_bad.insert(17, bad.clone());
            assert!(!key.is_unit_below_n_squared(&bad));
            assert!(!key.all_units_below_n_squared(&with_bad));
        }
    }

    #[test]
    fn limbs_are_padded_without_growing() {
        let limbs = limbs_of(&BigUint::from(7u8), 4);
        assert_eq!(&limbs[..], &[7, 0, 0, 0]);
        assert_eq!(limbs.capacity(), 4);
        assert_eq!(from_limbs(&limbs).0, BigUint::from(7u8));
    }
}
