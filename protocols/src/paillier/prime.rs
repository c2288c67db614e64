//! Random primes for Paillier keys.
//!
//! Candidates are uniformly random odd numbers of the requested length with the two top bits
//! set (so that the product of two has exactly twice the length). A candidate is sieved by
//! division by the odd primes below 2^14, then put through the Miller-Rabin strong
//! probable-prime test to base 2 and to [`RANDOM_BASES`] further random bases. 64 rounds bound
//! the chance that a composite survives by 4^-64 = 2^-128 even for adversarially chosen
//! candidates; for random candidates it is far smaller (OpenSSL uses the same count for primes
//! of RSA-2048 and above). The exponentiations run with the constant-time window
//! ([`Montgomery::pow_secret`]), since the candidate becomes a secret factor.

use num_bigint::BigUint;
use num_traits::Zero;
use rand::CryptoRng;
use zeroize::Zeroize;

use super::montgomery::{Montgomery, pad};

/// Miller-Rabin rounds with random bases after the base-2 round.
pub const RANDOM_BASES: usize = 64;

/// Upper end of the trial-division sieve.
const SIEVE_LIMIT: u32 = 1 << 14;

/// A random prime of exactly `bits` bits (`bits >= 16`) with its top two bits set.
pub fn random_prime<R: CryptoRng + ?Sized>(bits: u32, rng: &mut R) -> BigUint {
    assert!(bits >= 16, "primes of at least 16 bits");
    let small = small_primes();
    loop {
        let mut candidate = random_bits(bits, rng);
        candidate |= BigUint::from(3u8) << (bits - 2);
        candidate |= BigUint::from(1u8);
        if small.iter().any(|&s| (&candidate % s).is_zero()) {
            continue;
        }
        if is_probable_prime(&candidate, rng) {
            return candidate;
        }
    }
}

/// The Miller-Rabin test to base 2 and [`RANDOM_BASES`] random bases; `n` odd and > 3.
pub fn is_probable_prime<R: CryptoRng + ?Sized>(n: &BigUint, rng: &mut R) -> bool {
    if n.bits() <= 2 {
        return *n == BigUint::from(2u8) || *n == BigUint::from(3u8);
    }
    if !n.bit(0) {
        return false;
    }
    let ctx = Montgomery::new(n);
    let n_minus_1 = n - 1u32;
    let s = n_minus_1.trailing_zeros().expect("n > 1");
    let mut d = pad(
        (&n_minus_1 >> s).to_u64_digits(),
        n.bits().div_ceil(64) as usize,
    );
    let one = ctx.one();
    let minus_one = ctx.to_residue(&n_minus_1);
    let strong_witness_fails = |base: &BigUint| {
        let mut x = ctx.pow_secret(&ctx.to_residue(base), &d);
        if x == one || x == minus_one {
            return true;
        }
        for _ in 1..s {
            x = ctx.square(&x);
            if x == minus_one {
                return true;
            }
            if x == one {
                return false;
            }
        }
        false
    };
    let mut probable = strong_witness_fails(&BigUint::from(2u8));
    let mut rounds = 0;
    while probable && rounds < RANDOM_BASES {
        // A base uniform in [2, n - 2].
        let base = random_bits(n.bits() as u32, rng) % (n - 3u32) + 2u32;
        probable = strong_witness_fails(&base);
        rounds += 1;
    }
    d.zeroize();
    probable
}

/// A uniformly random number below `2^bits`.
pub(crate) fn random_bits<R: CryptoRng + ?Sized>(bits: u32, rng: &mut R) -> BigUint {
    let limbs = bits.div_ceil(64) as usize;
    let mut words: Vec<u64> = (0..limbs).map(|_| rng.next_u64()).collect();
    let excess = 64 * limbs as u32 - bits;
    if excess > 0 {
        words[limbs - 1] >>= excess;
    }
    let value = BigUint::from_slice(&super::montgomery::u32_digits(&words));
    words.zeroize();
    value
}

/// The odd primes below [`SIEVE_LIMIT`].
fn small_primes() -> Vec<u32> {
    let limit = SIEVE_LIMIT as usize;
    let mut composite = vec![false; limit];
    let mut primes = Vec::new();
    for i in 3..limit {
        if !composite[i] {
            if i % 2 == 1 {
                primes.push(i as u32);
            }
            let mut j = i * i;
            while j < limit {
                composite[j] = true;
                j += i;
            }
        }
    }
    primes
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn known_primes_and_composites() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        // 2^127 - 1 and 2^521 - 1 are Mersenne primes; the Carmichael number 561 and the strong
        // pseudoprime to base 2, 2047 = 23 * 89, are not prime.
        let m127 = (BigUint::from(1u8) << 127) - 1u32;
        let m521 = (BigUint::from(1u8) << 521) - 1u32;
        assert!(is_probable_prime(&m127, &mut rng));
        assert!(is_probable_prime(&m521, &mut rng));
        assert!(!is_probable_prime(&(&m127 * &m521), &mut rng));
        assert!(!is_probable_prime(&BigUint::from(561u32), &mut rng));
        assert!(!is_probable_prime(&BigUint::from(2047u32), &mut rng));
        // 3215031751 = 151 * 751 * 28351 is a strong pseudoprime to bases 2, 3, 5 and 7.
        assert!(!is_probable_prime(&BigUint::from(3215031751u64), &mut rng));
    }

    #[test]
    fn random_primes_have_the_requested_shape() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        for bits in [64u32, 256, 512] {
            let p = random_prime(bits, &mut rng);
            assert_eq!(p.bits(), u64::from(bits));
            assert!(p.bit(u64::from(bits) - 2), "second bit set");
            // Fermat check with an independent implementation.
            let two = BigUint::from(2u8);
            assert_eq!(two.modpow(&(&p - 1u32), &p), BigUint::from(1u8));
        }
    }
}
