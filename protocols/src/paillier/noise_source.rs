//! Where the randomness of a ciphertext comes from: `c = (1 + m n) r^n mod n^2` needs a fresh
//! `r^n` per encryption, and computing it is nearly all the cost of encrypting.
//!
//! - [`StandardNoise`]: `r^n mod n^2` for uniform `r` in `Z_n^*` (Paillier's original).
//! - [`DjnNoise`]: Damgard, Jurik and Nielsen's variant ("A generalization of Paillier's
//!   public-key system with applications to electronic voting", 2010, section 4.1): publish
//!   `h_s = (-x^2)^n mod n^2` once; a noise is `h_s^alpha` for a random `alpha` of about n/2 bits.
//!   As `h_s` is fixed, a precomputed table turns the exponentiation into one product per 8-bit
//!   window of alpha ([`FixedBaseTable`]), an order of magnitude faster than `r^n`. Semantic
//!   security rests on DCR plus the assumption that `h_s^alpha` with short `alpha` is
//!   indistinguishable from a random n-th power, as in DJN.
//! - [`NoisePool`]: noise computed ahead of time (offline, in parallel), so that encrypting
//!   online costs one multiplication.
//! - The key holder can use the CRT (see `SecretKey`), which [`CrtNoise`] wraps.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use num_bigint::BigUint;
use num_integer::Integer;
use rand::CryptoRng;
use rayon::prelude::*;

use zeroize::{Zeroize, Zeroizing};

use super::keys::{PublicKey, SecretKey};
use super::montgomery::{Montgomery, Residue, bit_length};
use super::paillier_error::{KeyFault, PaillierError};
use super::prime::random_bits;

/// A way to draw `r^n mod n^2` (as a Montgomery residue of the public key's context).
pub trait NoiseSource: Sync {
    /// One fresh noise value.
    fn noise<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Residue;

    /// Two fresh noise values (sources that can, compute them interleaved, faster).
    fn noise_pair<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> (Residue, Residue) {
        (self.noise(rng), self.noise(rng))
    }

    /// The public key the noise belongs to.
    fn public_key(&self) -> &PublicKey;
}

/// A uniform unit `r` of `Z_n`.
fn random_unit<R: CryptoRng + ?Sized>(n: &BigUint, rng: &mut R) -> BigUint {
    loop {
        let r = random_bits(n.bits() as u32, rng);
        if r > BigUint::ZERO && &r < n && r.gcd(n) == BigUint::from(1u8) {
            return r;
        }
    }
}

/// `r^n mod n^2` with `r` uniform in `Z_n^*`.
#[derive(Debug, Clone)]
pub struct StandardNoise {
    key: PublicKey,
    exponent: Vec<u64>,
}

impl StandardNoise {
    /// Standard noise for `key`.
    pub fn new(key: &PublicKey) -> Self {
        Self {
            exponent: key.n().to_u64_digits(),
            key: key.clone(),
        }
    }

    /// `r^n mod n^2` for a given `r` (for known-answer tests).
    pub fn for_r(&self, r: &BigUint) -> Residue {
        let context = self.key.context();
        // The exponent n is public; r is secret but only the exponent steers the windows.
        context.pow_public(&context.to_residue(r), &self.exponent)
    }
}

impl NoiseSource for StandardNoise {
    fn noise<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Residue {
        self.for_r(&random_unit(self.key.n(), rng))
    }

    fn public_key(&self) -> &PublicKey {
        &self.key
    }
}

/// `h^e` for a fixed base `h` and any exponent of at most `windows * WINDOW` bits, as one
/// product per window: `table[k][d] = h^(d 2^(WINDOW k))` (Brickell, Gordon, McCurley and
/// Wilson's fixed-base windowing).
///
/// Table lookups index by the exponent's digits, so the memory access pattern depends on the
/// (secret) exponent: there are no data-dependent branches, but the table is not hardened
/// against a cache-timing observer on the same machine. This is a documented trade-off: the
/// masked selection of [`Montgomery::pow_secret`] would read all 256 entries per window and
/// cost about as much as the products themselves.
pub struct FixedBaseTable {
    context: Montgomery,
    table: Vec<Vec<Residue>>,
}

impl std::fmt::Debug for FixedBaseTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FixedBaseTable {{ windows: {} }}", self.table.len())
    }
}

impl FixedBaseTable {
    /// Bits per window: 256 entries per window.
    pub const WINDOW: usize = 8;

    /// Precomputes the table of `base` (a residue of `context`) for exponents of `bits` bits.
    pub fn new(context: &Montgomery, base: &Residue, bits: usize) -> Self {
        let windows = bits.div_ceil(Self::WINDOW);
        // Window bases h^(2^(8k)), sequentially; then each window's 256 powers in parallel.
        let mut bases = Vec::with_capacity(windows);
        let mut b = base.clone();
        for _ in 0..windows {
            bases.push(b.clone());
            for _ in 0..Self::WINDOW {
                b = context.square(&b);
            }
        }
        let table = bases
            .par_iter()
            .map(|wb| {
                let mut row = Vec::with_capacity(1 << Self::WINDOW);
                row.push(context.one());
                for d in 1..(1 << Self::WINDOW) {
                    let next = context.mul(&row[d - 1], wb);
                    row.push(next);
                }
                row
            })
            .collect();
        Self {
            context: context.clone(),
            table,
        }
    }

    /// `base^e1` and `base^e2` at once (the two multiplication chains interleaved).
    pub fn pow_pair(&self, e1: &[u64], e2: &[u64]) -> (Residue, Residue) {
        let limit = self.table.len() * Self::WINDOW;
        assert!(
            bit_length(e1) <= limit && bit_length(e2) <= limit,
            "exponent longer than the table"
        );
        let digit = |e: &[u64], bit: usize| {
            e.get(bit / 64)
                .map_or(0, |w| ((w >> (bit % 64)) & 0xff) as usize)
        };
        let c = &self.context;
        let (mut a1, mut a2) = (c.one(), c.one());
        let (mut s1, mut s2) = (vec![0u64; c.limbs()], vec![0u64; c.limbs()]);
        for (k, row) in self.table.iter().enumerate() {
            let bit = k * Self::WINDOW;
            c.mul_pair(
                (&a1, &row[digit(e1, bit)], &mut s1),
                c,
                (&a2, &row[digit(e2, bit)], &mut s2),
            );
            std::mem::swap(&mut a1, &mut s1);
            std::mem::swap(&mut a2, &mut s2);
        }
        (a1, a2)
    }

    /// `base^exponent`; the exponent must fit the table.
    pub fn pow(&self, exponent: &[u64]) -> Residue {
        assert!(
            bit_length(exponent) <= self.table.len() * Self::WINDOW,
            "exponent longer than the table"
        );
        let mut acc = self.context.one();
        let mut scratch = vec![0u64; self.context.limbs()];
        for (k, row) in self.table.iter().enumerate() {
            let bit = k * Self::WINDOW;
            let digit = exponent
                .get(bit / 64)
                .map_or(0, |w| ((w >> (bit % 64)) & 0xff) as usize);
            self.context.mul_into(&acc, &row[digit], &mut scratch);
            std::mem::swap(&mut acc, &mut scratch);
        }
        acc
    }

    /// Memory held by the table, in bytes.
    pub fn bytes(&self) -> usize {
        self.table.len() * (1 << Self::WINDOW) * self.context.limbs() * 8
    }
}

/// DJN noise `h_s^alpha` with a precomputed table of `h_s`. Clones share the table (building
/// one is most of a short study's setup: 32,768 products at 2048 bits), so each party builds it
/// once for all its uses; every draw still takes a fresh `alpha`.
#[derive(Debug, Clone)]
pub struct DjnNoise {
    key: PublicKey,
    h_s: BigUint,
    alpha_bits: usize,
    table: Arc<FixedBaseTable>,
    /// Keeps a process-shared table's entry alive ([`DjnNoise::shared`]).
    _keep: Option<Arc<SharedBase>>,
}

/// One key's process-shared noise, made once.
#[derive(Debug, Default)]
struct SharedBase {
    noise: OnceLock<DjnNoise>,
}

impl DjnNoise {
    /// Draws `x`, sets `h_s = (-x^2)^n mod n^2`, and precomputes its table for exponents of
    /// `ceil(bits(n) / 2)` bits (the default in DJN).
    pub fn new<R: CryptoRng + ?Sized>(key: &PublicKey, rng: &mut R) -> Self {
        let x = random_unit(key.n(), rng);
        let h = key.n() - (&x * &x) % key.n();
        let h_s = StandardNoise::new(key).for_r(&h);
        Self::with_base(key, key.context().to_biguint(&h_s))
    }

    /// DJN noise for `key` shared by every party of this process that asks for it: the first
    /// draws the base and builds the table, the others wait for it and share it (an in-process
    /// study's six parties would otherwise build six tables, a quarter of its CPU). The base
    /// is public in DJN (part of the public key), so sharing it changes nothing a party
    /// learns; every draw takes a fresh `alpha` as before. The table lives while a noise made
    /// from it does (so a long-running server keeps none for finished studies).
    pub fn shared(key: &PublicKey) -> Self {
        static TABLES: Mutex<Vec<(BigUint, Weak<SharedBase>)>> = Mutex::new(Vec::new());
        let slot = {
            let mut tables = TABLES.lock().unwrap_or_else(|e| e.into_inner());
            tables.retain(|(_, weak)| weak.strong_count() > 0);
            match tables
                .iter()
                .find(|(n, _)| n == key.n())
                .and_then(|(_, weak)| weak.upgrade())
            {
                Some(slot) => slot,
                None => {
                    let slot = Arc::new(SharedBase::default());
                    tables.push((key.n().clone(), Arc::downgrade(&slot)));
                    slot
                }
            }
        };
        let noise = slot
            .noise
            .get_or_init(|| Self::new(key, &mut rand::rng()))
            .clone();
        Self {
            _keep: Some(slot),
            ..noise
        }
    }

    /// DJN noise with a published base `h_s`, which must be a unit of `Z_{n^2}` other than 1
    /// (a base of 1 would make encryption deterministic).
    pub fn from_base(key: &PublicKey, h_s: BigUint) -> Result<Self, PaillierError> {
        if h_s == BigUint::from(1u8) {
            return Err(PaillierError::InvalidKey(KeyFault::DjnBaseOne));
        }
        if !key.is_unit_below_n_squared(&h_s) {
            return Err(PaillierError::InvalidKey(KeyFault::DjnBaseNotUnit));
        }
        Ok(Self::with_base(key, h_s))
    }

    fn with_base(key: &PublicKey, h_s: BigUint) -> Self {
        let alpha_bits = (key.bits() as usize).div_ceil(2);
        let context = key.context();
        let table = Arc::new(FixedBaseTable::new(
            context,
            &context.to_residue(&h_s),
            alpha_bits,
        ));
        Self {
            key: key.clone(),
            h_s,
            alpha_bits,
            table,
            _keep: None,
        }
    }

    /// The published base `h_s`.
    pub fn base(&self) -> &BigUint {
        &self.h_s
    }

    /// Memory held by the precomputed table, in bytes.
    pub fn table_bytes(&self) -> usize {
        self.table.bytes()
    }
}

impl DjnNoise {
    /// A random exponent alpha of `alpha_bits`, in a buffer wiped when dropped.
    fn alpha<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Zeroizing<Vec<u64>> {
        let words = self.alpha_bits.div_ceil(64);
        let mut alpha: Zeroizing<Vec<u64>> =
            Zeroizing::new((0..words).map(|_| rng.next_u64()).collect());
        let excess = 64 * words - self.alpha_bits;
        if excess > 0 {
            alpha[words - 1] >>= excess;
        }
        alpha
    }
}

impl NoiseSource for DjnNoise {
    fn noise<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Residue {
        self.table.pow(&self.alpha(rng))
    }

    fn noise_pair<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> (Residue, Residue) {
        let (a1, a2) = (self.alpha(rng), self.alpha(rng));
        self.table.pow_pair(&a1, &a2)
    }

    fn public_key(&self) -> &PublicKey {
        &self.key
    }
}

/// Standard noise computed by the key holder with the CRT.
#[derive(Debug)]
pub struct CrtNoise<'a> {
    secret: &'a SecretKey,
}

impl<'a> CrtNoise<'a> {
    /// CRT noise with the key holder's secret key.
    pub fn new(secret: &'a SecretKey) -> Self {
        Self { secret }
    }
}

impl NoiseSource for CrtNoise<'_> {
    fn noise<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Residue {
        let key = self.secret.public_key();
        let r = random_unit(key.n(), rng);
        key.context().to_residue(&self.secret.crt_noise(&r))
    }

    fn public_key(&self) -> &PublicKey {
        self.secret.public_key()
    }
}

/// Noise drawn ahead of time. [`NoisePool::fill`] computes a batch in parallel (offline);
/// [`NoiseSource::noise`] hands one out and computes a fresh one from the inner source when the
/// pool is empty, so it never runs dry. Pooled noise is secret (with a ciphertext it reveals the
/// plaintext): `Debug` shows only the count and the pool is wiped on drop.
pub struct NoisePool<S> {
    source: S,
    pool: Mutex<Vec<Residue>>,
}

impl<S> std::fmt::Debug for NoisePool<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.pool.lock().map_or(0, |p| p.len());
        write!(f, "NoisePool {{ available: {count} }}")
    }
}

impl<S> Drop for NoisePool<S> {
    fn drop(&mut self) {
        if let Ok(pool) = self.pool.get_mut() {
            pool.iter_mut().for_each(|r| r.zeroize());
        }
    }
}

impl<S: NoiseSource> NoisePool<S> {
    /// An empty pool over `source`.
    pub fn new(source: S) -> Self {
        Self {
            source,
            pool: Mutex::new(Vec::new()),
        }
    }

    /// Adds `count` noise values, computed in parallel on rayon (each task with its own
    /// OS-seeded generator).
    pub fn fill(&self, count: usize) {
        let fresh: Vec<Residue> = (0..count)
            .into_par_iter()
            .map_init(rand::rng, |rng, _| self.source.noise(rng))
            .collect();
        self.lock().extend(fresh);
    }

    /// Noise values ready.
    pub fn available(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Residue>> {
        // A poisoned pool only means another thread panicked mid-push; the values are intact.
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<S: NoiseSource> NoiseSource for NoisePool<S> {
    fn noise<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Residue {
        match self.lock().pop() {
            Some(n) => n,
            None => self.source.noise(rng),
        }
    }

    fn public_key(&self) -> &PublicKey {
        self.source.public_key()
    }
}
