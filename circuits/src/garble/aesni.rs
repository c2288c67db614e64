//! Fixed-key AES-128 with AES-NI on 128-bit registers, eight blocks in flight, for the garbling
//! hash on CPUs without VAES ([`super::vaes`]).
//!
//! The `aes` crate also uses AES-NI, but through its generic block interface: every call copies
//! blocks into byte arrays and dispatches on the CPU's features, which cost more than the ten
//! rounds themselves when a gate hashes four labels (a garbled ranking runs in 0.86 of the
//! time with this kernel: docs/src/results/performance.md). This kernel encrypts `u128`s in
//! place with the round keys expanded once ([`super::vaes::expand_key`]). The `aes` crate
//! stays the fallback (on a CPU without VAES, `PRIVLOGIT_NO_AESNI=1` forces it; with VAES,
//! `PRIVLOGIT_NO_VAES=1` too) and the reference in tests.

#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// True when this CPU has AES-NI.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVAILABLE.get_or_init(|| {
            std::env::var_os("PRIVLOGIT_NO_AESNI").is_none()
                && is_x86_feature_detected!("aes")
                && is_x86_feature_detected!("sse2")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Encrypts every block in place (blocks as little-endian `u128`s of their bytes). The caller
/// has checked [`available`].
pub fn encrypt(round_keys: &[u128; 11], blocks: &mut [u128]) {
    #[cfg(target_arch = "x86_64")]
    {
        assert!(available(), "the AES-NI kernel needs AES-NI");
        // SAFETY: the CPU supports the features `encrypt_aesni` is compiled for (checked above).
        unsafe { encrypt_aesni(round_keys, blocks) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (round_keys, blocks);
        unreachable!("AES-NI is only selected on x86_64");
    }
}

/// Blocks in flight: AESENC has a latency of about four cycles and a throughput of one or two
/// per cycle, so eight independent blocks keep the unit busy.
#[cfg(target_arch = "x86_64")]
const LANES: usize = 8;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,sse2")]
fn encrypt_aesni(round_keys: &[u128; 11], blocks: &mut [u128]) {
    // SAFETY (for the block below): the function is compiled with aes and sse2, which the
    // caller verified; unaligned loads and stores touch 16 bytes inside `blocks` each.
    unsafe {
        let keys: [__m128i; 11] = core::array::from_fn(|r| {
            let k = round_keys[r].to_le_bytes();
            _mm_loadu_si128(k.as_ptr().cast())
        });
        let mut chunks = blocks.chunks_exact_mut(LANES);
        for chunk in chunks.by_ref() {
            let p = chunk.as_mut_ptr();
            let mut v: [__m128i; LANES] =
                core::array::from_fn(|r| _mm_xor_si128(_mm_loadu_si128(p.add(r).cast()), keys[0]));
            for key in &keys[1..10] {
                for x in v.iter_mut() {
                    *x = _mm_aesenc_si128(*x, *key);
                }
            }
            for (r, x) in v.iter().enumerate() {
                _mm_storeu_si128(p.add(r).cast(), _mm_aesenclast_si128(*x, keys[10]));
            }
        }
        for block in chunks.into_remainder() {
            let p: *mut u128 = block;
            let mut x = _mm_xor_si128(_mm_loadu_si128(p.cast()), keys[0]);
            for key in &keys[1..10] {
                x = _mm_aesenc_si128(x, *key);
            }
            _mm_storeu_si128(p.cast(), _mm_aesenclast_si128(x, keys[10]));
        }
    }
}
