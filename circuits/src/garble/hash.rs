//! `H(x, i) = pi(sigma(x) ^ i) ^ sigma(x)`: the tweakable circular-correlation-robust hash of
//! Guo, Katz, Wang and Yu (S&P 2020, section 7.3), where `pi` is AES-128 under a fixed public key
//! and `sigma(x_hi || x_lo) = (x_hi ^ x_lo) || x_hi` is a linear orthomorphism.
//!
//! AES runs on the fastest kernel the CPU offers: VAES ([`super::vaes`], four blocks per
//! instruction), else AES-NI on `u128`s in place ([`super::aesni`]), else the `aes` crate
//! (eight blocks per call; also the reference in tests).

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit, generic_array::GenericArray};

/// The fixed public AES key: the first 16 bytes of SHA-256("privlogit fixed-key AES v1").
/// Any fixed key not chosen by an adversary will do; it must be the same at both parties.
/// (`python3 -c "import hashlib; print(hashlib.sha256(b'privlogit fixed-key AES v1').hexdigest()[:32])"`)
const FIXED_KEY: [u8; 16] = [
    0x88, 0x31, 0xdb, 0x05, 0x4d, 0x82, 0xc0, 0x80, 0xb0, 0xfc, 0xe7, 0xc3, 0x3f, 0x0b, 0x72, 0x5a,
];

/// Blocks per AES call.
const LANES: usize = 8;

/// An AES kernel: the eleven round keys, and the blocks encrypted in place.
type Kernel = fn(&[u128; 11], &mut [u128]);

/// The hash, with its key schedule expanded once.
#[derive(Clone)]
pub struct Hash {
    cipher: Aes128,
    /// The kernel this CPU runs, with its round keys (`None`: the `aes` crate).
    kernel: Option<(Kernel, [u128; 11])>,
}

impl std::fmt::Debug for Hash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hash(fixed-key AES-128)")
    }
}

impl Default for Hash {
    fn default() -> Self {
        Self::new()
    }
}

/// `sigma(x_hi || x_lo) = (x_hi ^ x_lo) || x_hi` (linear: `sigma(a ^ b) = sigma(a) ^ sigma(b)`).
#[inline(always)]
pub fn sigma(x: u128) -> u128 {
    let (hi, lo) = ((x >> 64) as u64, x as u64);
    (u128::from(hi ^ lo) << 64) | u128::from(hi)
}

impl Hash {
    /// The hash under the fixed key.
    pub fn new() -> Self {
        Self {
            cipher: Aes128::new(GenericArray::from_slice(&FIXED_KEY)),
            kernel: if super::vaes::available() {
                Some((super::vaes::encrypt, super::vaes::expand_key(&FIXED_KEY)))
            } else if super::aesni::available() {
                Some((super::aesni::encrypt, super::vaes::expand_key(&FIXED_KEY)))
            } else {
                None
            },
        }
    }

    /// `H(x, tweak)`.
    pub fn hash(&self, x: u128, tweak: u128) -> u128 {
        let mut one = [x];
        self.hash_many(&mut one, &[tweak]);
        one[0]
    }

    /// The fixed-key permutation `pi` on every block, in place. With `blocks[k] = sigma(x_k) ^
    /// t_k`, XORing `sigma(x_k)` back afterwards gives `H(x_k, t_k)`; callers that know
    /// `sigma` of their inputs cheaply (it is linear) use this directly.
    #[inline]
    pub fn permute(&self, blocks: &mut [u128]) {
        if let Some((encrypt, keys)) = &self.kernel {
            encrypt(keys, blocks);
            return;
        }
        let mut lanes = [GenericArray::from([0u8; 16]); LANES];
        for chunk in blocks.chunks_mut(LANES) {
            for (lane, x) in lanes.iter_mut().zip(chunk.iter()) {
                *lane = GenericArray::from(x.to_le_bytes());
            }
            self.cipher.encrypt_blocks(&mut lanes);
            for (lane, x) in lanes.iter().zip(chunk.iter_mut()) {
                *x = u128::from_le_bytes((*lane).into());
            }
        }
    }

    /// Replaces every `xs[k]` by `H(xs[k], tweaks[k])`.
    pub fn hash_many(&self, xs: &mut [u128], tweaks: &[u128]) {
        assert_eq!(xs.len(), tweaks.len(), "one tweak per block");
        self.hash_with(xs, |k| tweaks[k]);
    }

    /// Replaces every `xs[k]` by `H(xs[k], tweak(k))`, on the kernel [`Hash::new`] selected
    /// (VAES or AES-NI 64 blocks per call, else the `aes` crate eight per call).
    #[inline]
    pub fn hash_with(&self, xs: &mut [u128], tweak: impl Fn(usize) -> u128) {
        if let Some((encrypt, keys)) = &self.kernel {
            let mut sigmas = [0u128; 64];
            for (c, chunk) in xs.chunks_mut(64).enumerate() {
                for (k, x) in chunk.iter_mut().enumerate() {
                    sigmas[k] = sigma(*x);
                    *x = sigmas[k] ^ tweak(c * 64 + k);
                }
                encrypt(keys, chunk);
                for (k, x) in chunk.iter_mut().enumerate() {
                    *x ^= sigmas[k];
                }
            }
            return;
        }
        let mut blocks = [GenericArray::from([0u8; 16]); LANES];
        let mut sigmas = [0u128; LANES];
        for (c, chunk) in xs.chunks_mut(LANES).enumerate() {
            for k in 0..chunk.len() {
                sigmas[k] = sigma(chunk[k]);
                blocks[k] = GenericArray::from((sigmas[k] ^ tweak(c * LANES + k)).to_le_bytes());
            }
            self.cipher.encrypt_blocks(&mut blocks);
            for k in 0..chunk.len() {
                let bytes: [u8; 16] = blocks[k].into();
                chunk[k] = u128::from_le_bytes(bytes) ^ sigmas[k];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FIPS-197 appendix C.1 through the same AES object with a different key: the `aes`
    /// crate is the reference, so check that the wiring (byte order, key) is what we think.
    #[test]
    fn aes_known_answer() {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let cipher = Aes128::new(GenericArray::from_slice(&key));
        let mut block = GenericArray::from([
            0x00u8, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
            0xee, 0xff,
        ]);
        cipher.encrypt_block(&mut block);
        let expected = [
            0x69u8, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
            0xc5, 0x5a,
        ];
        assert_eq!(block.as_slice(), &expected);
    }

    /// Every kernel this CPU runs (VAES, AES-NI) agrees with the `aes` crate on whole chunks
    /// and tails.
    #[test]
    fn kernels_agree_with_the_aes_crate() {
        let kernels: [(&str, bool, Kernel); 2] = [
            (
                "VAES",
                super::super::vaes::available(),
                super::super::vaes::encrypt,
            ),
            (
                "AES-NI",
                super::super::aesni::available(),
                super::super::aesni::encrypt,
            ),
        ];
        let key = [9u8; 16];
        let keys = super::super::vaes::expand_key(&key);
        let reference = Aes128::new(GenericArray::from_slice(&key));
        for (name, available, encrypt) in kernels {
            if !available {
                eprintln!("skipped: no {name} on this CPU");
                continue;
            }
            for n in [1usize, 4, 7, 8, 9, 15, 16, 37] {
                let mut blocks: Vec<u128> = (0..n as u128)
                    .map(|i| i * 0x0101_0101_0101_0101_0101 + 3)
                    .collect();
                let expected: Vec<u128> = blocks
                    .iter()
                    .map(|b| {
                        let mut g = GenericArray::from(b.to_le_bytes());
                        reference.encrypt_block(&mut g);
                        u128::from_le_bytes(g.into())
                    })
                    .collect();
                encrypt(&keys, &mut blocks);
                assert_eq!(blocks, expected, "{name}, {n} blocks");
            }
        }
    }

    #[test]
    fn batches_equal_single_calls_and_tweaks_matter() {
        let h = Hash::new();
        let xs: Vec<u128> = (0..21u128).map(|i| i * 0x1234_5678_9abc_def1 + 7).collect();
        let tweaks: Vec<u128> = (0..21u128).collect();
        let mut batch = xs.clone();
        h.hash_many(&mut batch, &tweaks);
        for k in 0..xs.len() {
            assert_eq!(batch[k], h.hash(xs[k], tweaks[k]));
        }
        assert_ne!(h.hash(5, 0), h.hash(5, 1));
        assert_ne!(h.hash(5, 0), h.hash(6, 0));
    }
}
