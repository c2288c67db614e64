//! Fixed-key AES-128 on four blocks per instruction with VAES (AVX-512), for the garbling hash.
//!
//! AES-NI through the `aes` crate encrypts one block per instruction; VAES encrypts four, which
//! matters when every AND gate hashes four labels. Used when the CPU reports `vaes` and
//! `avx512f` (checked at run time); the `aes` crate is the fallback and the reference in tests.

#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// True when this CPU runs VAES with 512-bit registers.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVAILABLE.get_or_init(|| {
            std::env::var_os("PRIVLOGIT_NO_VAES").is_none()
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("vaes")
                && is_x86_feature_detected!("aes")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The AES S-box (FIPS-197, figure 7), for the key schedule.
const SBOX: [u8; 256] = [
    0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5, 0x30, 0x01, 0x67, 0x2b, 0xfe, 0xd7, 0xab, 0x76,
    0xca, 0x82, 0xc9, 0x7d, 0xfa, 0x59, 0x47, 0xf0, 0xad, 0xd4, 0xa2, 0xaf, 0x9c, 0xa4, 0x72, 0xc0,
    0xb7, 0xfd, 0x93, 0x26, 0x36, 0x3f, 0xf7, 0xcc, 0x34, 0xa5, 0xe5, 0xf1, 0x71, 0xd8, 0x31, 0x15,
    0x04, 0xc7, 0x23, 0xc3, 0x18, 0x96, 0x05, 0x9a, 0x07, 0x12, 0x80, 0xe2, 0xeb, 0x27, 0xb2, 0x75,
    0x09, 0x83, 0x2c, 0x1a, 0x1b, 0x6e, 0x5a, 0xa0, 0x52, 0x3b, 0xd6, 0xb3, 0x29, 0xe3, 0x2f, 0x84,
    0x53, 0xd1, 0x00, 0xed, 0x20, 0xfc, 0xb1, 0x5b, 0x6a, 0xcb, 0xbe, 0x39, 0x4a, 0x4c, 0x58, 0xcf,
    0xd0, 0xef, 0xaa, 0xfb, 0x43, 0x4d, 0x33, 0x85, 0x45, 0xf9, 0x02, 0x7f, 0x50, 0x3c, 0x9f, 0xa8,
    0x51, 0xa3, 0x40, 0x8f, 0x92, 0x9d, 0x38, 0xf5, 0xbc, 0xb6, 0xda, 0x21, 0x10, 0xff, 0xf3, 0xd2,
    0xcd, 0x0c, 0x13, 0xec, 0x5f, 0x97, 0x44, 0x17, 0xc4, 0xa7, 0x7e, 0x3d, 0x64, 0x5d, 0x19, 0x73,
    0x60, 0x81, 0x4f, 0xdc, 0x22, 0x2a, 0x90, 0x88, 0x46, 0xee, 0xb8, 0x14, 0xde, 0x5e, 0x0b, 0xdb,
    0xe0, 0x32, 0x3a, 0x0a, 0x49, 0x06, 0x24, 0x5c, 0xc2, 0xd3, 0xac, 0x62, 0x91, 0x95, 0xe4, 0x79,
    0xe7, 0xc8, 0x37, 0x6d, 0x8d, 0xd5, 0x4e, 0xa9, 0x6c, 0x56, 0xf4, 0xea, 0x65, 0x7a, 0xae, 0x08,
    0xba, 0x78, 0x25, 0x2e, 0x1c, 0xa6, 0xb4, 0xc6, 0xe8, 0xdd, 0x74, 0x1f, 0x4b, 0xbd, 0x8b, 0x8a,
    0x70, 0x3e, 0xb5, 0x66, 0x48, 0x03, 0xf6, 0x0e, 0x61, 0x35, 0x57, 0xb9, 0x86, 0xc1, 0x1d, 0x9e,
    0xe1, 0xf8, 0x98, 0x11, 0x69, 0xd9, 0x8e, 0x94, 0x9b, 0x1e, 0x87, 0xe9, 0xce, 0x55, 0x28, 0xdf,
    0x8c, 0xa1, 0x89, 0x0d, 0xbf, 0xe6, 0x42, 0x68, 0x41, 0x99, 0x2d, 0x0f, 0xb0, 0x54, 0xbb, 0x16,
];

/// The eleven AES-128 round keys (FIPS-197, section 5.2), as little-endian `u128`s of the byte
/// order AES-NI uses.
pub fn expand_key(key: &[u8; 16]) -> [u128; 11] {
    let mut w = [[0u8; 4]; 44];
    for i in 0..4 {
        w[i].copy_from_slice(&key[4 * i..4 * i + 4]);
    }
    let mut rcon = 1u8;
    for i in 4..44 {
        let mut t = w[i - 1];
        if i % 4 == 0 {
            t = [
                SBOX[t[1] as usize] ^ rcon,
                SBOX[t[2] as usize],
                SBOX[t[3] as usize],
                SBOX[t[0] as usize],
            ];
            rcon = if rcon & 0x80 != 0 {
                (rcon << 1) ^ 0x1b
            } else {
                rcon << 1
            };
        }
        for k in 0..4 {
            w[i][k] = w[i - 4][k] ^ t[k];
        }
    }
    core::array::from_fn(|r| {
        let mut bytes = [0u8; 16];
        for c in 0..4 {
            bytes[4 * c..4 * c + 4].copy_from_slice(&w[4 * r + c]);
        }
        u128::from_le_bytes(bytes)
    })
}

/// Encrypts every block in place (blocks as little-endian `u128`s of their bytes). The caller
/// has checked [`available`].
pub fn encrypt(round_keys: &[u128; 11], blocks: &mut [u128]) {
    #[cfg(target_arch = "x86_64")]
    {
        assert!(available(), "VAES kernel needs VAES and AVX-512");
        // SAFETY: the CPU supports the features `encrypt_vaes` is compiled for (checked above).
        unsafe { encrypt_vaes(round_keys, blocks) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (round_keys, blocks);
        unreachable!("VAES is only selected on x86_64");
    }
}

/// 512-bit registers processed together.
#[cfg(target_arch = "x86_64")]
const LANES: usize = 8;

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,vaes,aes")]
fn encrypt_vaes(round_keys: &[u128; 11], blocks: &mut [u128]) {
    // SAFETY (for the block below): the function is compiled with avx512f, vaes and aes, which
    // the caller verified; loads and stores touch 4 * 16 bytes inside `blocks` (whole chunks)
    // or a local 64-byte array (the tail).
    unsafe {
        let keys: [__m512i; 11] = core::array::from_fn(|r| {
            let k = round_keys[r].to_le_bytes();
            _mm512_broadcast_i32x4(_mm_loadu_si128(k.as_ptr().cast()))
        });
        // Eight registers (32 blocks) in flight hide the latency of the AES rounds.
        let round = |mut v: [__m512i; LANES]| {
            for x in v.iter_mut() {
                *x = _mm512_xor_si512(*x, keys[0]);
            }
            for key in &keys[1..10] {
                for x in v.iter_mut() {
                    *x = _mm512_aesenc_epi128(*x, *key);
                }
            }
            for x in v.iter_mut() {
                *x = _mm512_aesenclast_epi128(*x, keys[10]);
            }
            v
        };
        let mut chunks = blocks.chunks_exact_mut(4 * LANES);
        for chunk in chunks.by_ref() {
            let p = chunk.as_mut_ptr();
            let v = round(core::array::from_fn(|r| {
                _mm512_loadu_si512(p.add(4 * r).cast())
            }));
            for (r, x) in v.iter().enumerate() {
                _mm512_storeu_si512(p.add(4 * r).cast(), *x);
            }
        }
        // The tail: whole registers straight from the slice, the last partial one via a buffer.
        let tail = chunks.into_remainder();
        for group in tail.chunks_mut(4) {
            let mut buf = [0u128; 4];
            buf[..group.len()].copy_from_slice(group);
            let p = buf.as_mut_ptr();
            let mut x = _mm512_xor_si512(_mm512_loadu_si512(p.cast()), keys[0]);
            for key in &keys[1..10] {
                x = _mm512_aesenc_epi128(x, *key);
            }
            x = _mm512_aesenclast_epi128(x, keys[10]);
            _mm512_storeu_si512(p.cast(), x);
            group.copy_from_slice(&buf[..group.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FIPS-197 appendix A.1: the last round key of 2b7e1516 28aed2a6 abf71588 09cf4f3c is
    /// d014f9a8 c9ee2589 e13f0cc8 b6630ca6.
    #[test]
    fn key_schedule_known_answer() {
        let key = [
            0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf,
            0x4f, 0x3c,
        ];
        let last = expand_key(&key)[10].to_le_bytes();
        assert_eq!(
            last,
            [
                0xd0, 0x14, 0xf9, 0xa8, 0xc9, 0xee, 0x25, 0x89, 0xe1, 0x3f, 0x0c, 0xc8, 0xb6, 0x63,
                0x0c, 0xa6
            ]
        );
    }
}
