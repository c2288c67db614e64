//! Montgomery multiplication with AVX-512 IFMA (52-bit multiply-accumulate on eight lanes).
//!
//! Numbers are held in radix 2^52, `L` limbs with `L` a multiple of 8, so that one operand is
//! `L / 8` vector registers. The product is the "almost Montgomery multiplication" of Gueron
//! and Krasnov ("Accelerating big integer arithmetic using Intel IFMA extensions", ARITH 2016),
//! in operand-scanning form: for each limb `b_i`, add the low halves of `a b_i` and `m y`
//! (with `y` chosen to clear the lowest limb), shift the accumulator down one limb, then add the
//! high halves, which now sit in the right lanes. With `R = 2^(52 L) > 4m` and inputs below `m`
//! the result is below `2m`; one conditional subtraction makes it canonical, so residues stay
//! comparable and interchangeable with the portable engine's.
//!
//! Used when the CPU reports `avx512f` and `avx512ifma` (checked at run time); the portable
//! engine in `montgomery` is the fallback and the reference in tests. Like it, this code has no
//! branches or memory accesses that depend on the operands.

#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Bits per limb.
pub const LIMB_BITS: u32 = 52;
const MASK: u64 = (1 << LIMB_BITS) - 1;
/// Most vector registers per operand: 160 limbs, enough for an 8192-bit `n^2`.
pub const MAX_VECTORS: usize = 20;

/// True when this CPU can run the IFMA engine (and it was not switched off with
/// `PRIVLOGIT_NO_IFMA`, which tests and benchmarks use to compare the engines).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVAILABLE.get_or_init(|| {
            std::env::var_os("PRIVLOGIT_NO_IFMA").is_none()
                && is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512ifma")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Limbs (a multiple of 8) for a modulus of `bits` bits, keeping `R = 2^(52 L) > 4m`.
pub(crate) fn limbs_for(bits: u64) -> usize {
    ((bits as usize + 2).div_ceil(LIMB_BITS as usize)).div_ceil(8) * 8
}

/// Radix-2^52 limbs of a little-endian u64 number, padded to `len`.
pub(crate) fn from_u64_limbs(x: &[u64], len: usize) -> Vec<u64> {
    let mut out = vec![0u64; len];
    for (i, o) in out.iter_mut().enumerate() {
        let bit = i * LIMB_BITS as usize;
        let (word, shift) = (bit / 64, bit % 64);
        let mut v = x.get(word).copied().unwrap_or(0) >> shift;
        if shift > 64 - LIMB_BITS as usize {
            v |= x.get(word + 1).copied().unwrap_or(0) << (64 - shift);
        }
        *o = v & MASK;
    }
    out
}

/// Little-endian u64 limbs of a radix-2^52 number.
pub(crate) fn to_u64_limbs(x: &[u64]) -> Vec<u64> {
    let words = (x.len() * LIMB_BITS as usize).div_ceil(64);
    let mut out = vec![0u64; words];
    for (i, &limb) in x.iter().enumerate() {
        let bit = i * LIMB_BITS as usize;
        let (word, shift) = (bit / 64, bit % 64);
        out[word] |= limb << shift;
        if shift > 64 - LIMB_BITS as usize && word + 1 < words {
            out[word + 1] |= limb >> (64 - shift);
        }
    }
    out
}

/// `a b R^-1 mod m` into `out`, all radix-2^52 with `m.len()` limbs (a multiple of 8);
/// `k0 = -m^-1 mod 2^52`. Panics unless [`available`]: running the kernel on a CPU without
/// IFMA would be undefined behaviour, so the check is not left to callers.
pub(crate) fn mul(m: &[u64], k0: u64, a: &[u64], b: &[u64], out: &mut [u64]) {
    #[cfg(target_arch = "x86_64")]
    {
        assert!(available(), "the IFMA engine needs AVX-512 IFMA");
        assert!(
            m.len().is_multiple_of(8),
            "radix-2^52 operands come in whole vectors"
        );
        let vectors = m.len() / 8;
        // SAFETY: the caller checked `available()`, so the CPU supports the target features
        // these functions are compiled for.
        unsafe {
            match vectors {
                5 => amm_fixed::<5>(m, k0, a, b, out),
                8 => amm_fixed::<8>(m, k0, a, b, out),
                10 => amm_fixed::<10>(m, k0, a, b, out),
                15 => amm_fixed::<15>(m, k0, a, b, out),
                20 => amm_fixed::<20>(m, k0, a, b, out),
                _ => amm(m, k0, a, b, out),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (m, k0, a, b, out);
        unreachable!("the IFMA engine is only selected on x86_64");
    }
}

/// Two independent products at once, `a1 b1 R^-1 mod m1` and `a2 b2 R^-1 mod m2` (moduli of the
/// same limb count): the kernel is latency-bound (each limb's reduction waits for the last), so
/// interleaving two instruction streams nearly doubles the throughput. Panics as [`mul`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn mul2(
    (m1, k1, a1, b1): (&[u64], u64, &[u64], &[u64]),
    out1: &mut [u64],
    (m2, k2, a2, b2): (&[u64], u64, &[u64], &[u64]),
    out2: &mut [u64],
) {
    #[cfg(target_arch = "x86_64")]
    {
        assert!(available(), "the IFMA engine needs AVX-512 IFMA");
        assert!(
            m1.len().is_multiple_of(8) && m1.len() == m2.len(),
            "radix-2^52 operands of one size come in whole vectors"
        );
        // SAFETY: as in `mul`.
        unsafe {
            match m1.len() / 8 {
                5 => amm2_fixed::<5>(m1, k1, a1, b1, out1, m2, k2, a2, b2, out2),
                _ => {
                    amm(m1, k1, a1, b1, out1);
                    amm(m2, k2, a2, b2, out2);
                }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (m1, k1, a1, b1, out1, m2, k2, a2, b2, out2);
        unreachable!("the IFMA engine is only selected on x86_64");
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512ifma")]
#[allow(clippy::too_many_arguments)]
fn amm2_fixed<const V: usize>(
    m1: &[u64],
    k1: u64,
    a1: &[u64],
    b1: &[u64],
    out1: &mut [u64],
    m2: &[u64],
    k2: u64,
    a2: &[u64],
    b2: &[u64],
    out2: &mut [u64],
) {
    let n = 8 * V;
    assert!(
        [
            m1.len(),
            a1.len(),
            b1.len(),
            out1.len(),
            m2.len(),
            a2.len(),
            b2.len(),
            out2.len()
        ]
        .iter()
        .all(|&l| l == n)
    );
    // SAFETY: compiled with avx512f and avx512ifma, verified by the caller; every load and store
    // touches eight u64 inside a slice of length 8 V checked above.
    unsafe {
        let zero = _mm512_setzero_si512();
        let mut acc1 = [zero; V];
        let mut acc2 = [zero; V];
        let mut av1 = [zero; V];
        let mut av2 = [zero; V];
        let mut mv1 = [zero; V];
        let mut mv2 = [zero; V];
        for j in 0..V {
            av1[j] = _mm512_loadu_si512(a1.as_ptr().add(8 * j).cast());
            mv1[j] = _mm512_loadu_si512(m1.as_ptr().add(8 * j).cast());
            av2[j] = _mm512_loadu_si512(a2.as_ptr().add(8 * j).cast());
            mv2[j] = _mm512_loadu_si512(m2.as_ptr().add(8 * j).cast());
        }
        for i in 0..n {
            let bv1 = _mm512_set1_epi64(b1[i] as i64);
            let bv2 = _mm512_set1_epi64(b2[i] as i64);
            for j in 0..V {
                acc1[j] = _mm512_madd52lo_epu64(acc1[j], av1[j], bv1);
                acc2[j] = _mm512_madd52lo_epu64(acc2[j], av2[j], bv2);
            }
            let low1 = _mm_cvtsi128_si64(_mm512_castsi512_si128(acc1[0])) as u64;
            let low2 = _mm_cvtsi128_si64(_mm512_castsi512_si128(acc2[0])) as u64;
            let yv1 = _mm512_set1_epi64((low1.wrapping_mul(k1) & MASK) as i64);
            let yv2 = _mm512_set1_epi64((low2.wrapping_mul(k2) & MASK) as i64);
            for j in 0..V {
                acc1[j] = _mm512_madd52lo_epu64(acc1[j], mv1[j], yv1);
                acc2[j] = _mm512_madd52lo_epu64(acc2[j], mv2[j], yv2);
            }
            let carry1 = (_mm_cvtsi128_si64(_mm512_castsi512_si128(acc1[0])) as u64) >> LIMB_BITS;
            let carry2 = (_mm_cvtsi128_si64(_mm512_castsi512_si128(acc2[0])) as u64) >> LIMB_BITS;
            for j in 0..V - 1 {
                acc1[j] = _mm512_alignr_epi64::<1>(acc1[j + 1], acc1[j]);
                acc2[j] = _mm512_alignr_epi64::<1>(acc2[j + 1], acc2[j]);
            }
            acc1[V - 1] = _mm512_alignr_epi64::<1>(zero, acc1[V - 1]);
            acc2[V - 1] = _mm512_alignr_epi64::<1>(zero, acc2[V - 1]);
            acc1[0] = _mm512_add_epi64(acc1[0], _mm512_maskz_set1_epi64(1, carry1 as i64));
            acc2[0] = _mm512_add_epi64(acc2[0], _mm512_maskz_set1_epi64(1, carry2 as i64));
            for j in 0..V {
                acc1[j] = _mm512_madd52hi_epu64(acc1[j], av1[j], bv1);
                acc2[j] = _mm512_madd52hi_epu64(acc2[j], av2[j], bv2);
                acc1[j] = _mm512_madd52hi_epu64(acc1[j], mv1[j], yv1);
                acc2[j] = _mm512_madd52hi_epu64(acc2[j], mv2[j], yv2);
            }
        }
        for j in 0..V {
            _mm512_storeu_si512(out1.as_mut_ptr().add(8 * j).cast(), acc1[j]);
            _mm512_storeu_si512(out2.as_mut_ptr().add(8 * j).cast(), acc2[j]);
        }
    }
    normalize_and_reduce(m1, out1);
    normalize_and_reduce(m2, out2);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512ifma")]
fn amm_fixed<const V: usize>(m: &[u64], k0: u64, a: &[u64], b: &[u64], out: &mut [u64]) {
    amm_kernel(&m[..8 * V], k0, &a[..8 * V], &b[..8 * V], &mut out[..8 * V]);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512ifma")]
fn amm(m: &[u64], k0: u64, a: &[u64], b: &[u64], out: &mut [u64]) {
    amm_kernel(m, k0, a, b, out);
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn amm_kernel(m: &[u64], k0: u64, a: &[u64], b: &[u64], out: &mut [u64]) {
    let limbs = m.len();
    let vectors = limbs / 8;
    assert!(
        limbs.is_multiple_of(8)
            && vectors <= MAX_VECTORS
            && a.len() == limbs
            && b.len() == limbs
            && out.len() == limbs
    );
    // SAFETY (for every block below): the enclosing functions are compiled with avx512f and
    // avx512ifma, which the caller verified at run time; every load and store reads or writes
    // eight u64 inside a slice whose length is a multiple of eight checked above.
    unsafe {
        let zero = _mm512_setzero_si512();
        let mut acc = [zero; MAX_VECTORS];
        let mut av = [zero; MAX_VECTORS];
        let mut mv = [zero; MAX_VECTORS];
        for j in 0..vectors {
            av[j] = _mm512_loadu_si512(a.as_ptr().add(8 * j).cast());
            mv[j] = _mm512_loadu_si512(m.as_ptr().add(8 * j).cast());
        }
        for &bi in b {
            let bv = _mm512_set1_epi64(bi as i64);
            for j in 0..vectors {
                acc[j] = _mm512_madd52lo_epu64(acc[j], av[j], bv);
            }
            let low = _mm_cvtsi128_si64(_mm512_castsi512_si128(acc[0])) as u64;
            let y = low.wrapping_mul(k0) & MASK;
            let yv = _mm512_set1_epi64(y as i64);
            for j in 0..vectors {
                acc[j] = _mm512_madd52lo_epu64(acc[j], mv[j], yv);
            }
            // The lowest lane is now a multiple of 2^52: shift everything down one lane and
            // carry its high part into the new lowest lane.
            let carry = (_mm_cvtsi128_si64(_mm512_castsi512_si128(acc[0])) as u64) >> LIMB_BITS;
            for j in 0..vectors - 1 {
                acc[j] = _mm512_alignr_epi64::<1>(acc[j + 1], acc[j]);
            }
            acc[vectors - 1] = _mm512_alignr_epi64::<1>(zero, acc[vectors - 1]);
            acc[0] = _mm512_add_epi64(acc[0], _mm512_maskz_set1_epi64(1, carry as i64));
            for j in 0..vectors {
                acc[j] = _mm512_madd52hi_epu64(acc[j], av[j], bv);
                acc[j] = _mm512_madd52hi_epu64(acc[j], mv[j], yv);
            }
        }
        for (j, vector) in acc.iter().take(vectors).enumerate() {
            _mm512_storeu_si512(out.as_mut_ptr().add(8 * j).cast(), *vector);
        }
    }
    normalize_and_reduce(m, out);
}

/// Propagates the lanes' carries so every limb is below 2^52, then subtracts `m` once if the
/// value (below `2m`) is at least `m`, without branching on the values.
#[inline(always)]
fn normalize_and_reduce(m: &[u64], x: &mut [u64]) {
    let mut carry = 0u64;
    for limb in x.iter_mut() {
        let v = *limb + carry;
        *limb = v & MASK;
        carry = v >> LIMB_BITS;
    }
    debug_assert_eq!(carry, 0, "the product is below R");
    let mut diff = [0u64; 8 * MAX_VECTORS];
    let mut borrow = 0u64;
    for (i, (&xi, &mi)) in x.iter().zip(m).enumerate() {
        let d = xi.wrapping_sub(mi).wrapping_sub(borrow);
        borrow = d >> 63;
        diff[i] = d & MASK;
    }
    // No borrow out means x >= m: take the difference.
    let mask = (borrow ^ 1).wrapping_neg();
    for (i, limb) in x.iter_mut().enumerate() {
        *limb = (diff[i] & mask) | (*limb & !mask);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigUint;

    fn to_big(x: &[u64]) -> BigUint {
        BigUint::from_slice(&crate::paillier::montgomery::u32_digits(&to_u64_limbs(x)))
    }

    /// The interleaved pair equals two single products.
    #[test]
    fn pairs_match_single_products() {
        if !available() {
            eprintln!("skipped: no AVX-512 IFMA on this CPU");
            return;
        }
        for bits in [2048u64, 4096] {
            let limbs = limbs_for(bits);
            let setup = |offset: u32| {
                let mut m = (BigUint::from(1u8) << bits) - BigUint::from(12345u32 + offset);
                m |= BigUint::from(1u8);
                let ml = from_u64_limbs(&m.to_u64_digits(), limbs);
                let mut inv: u64 = 1;
                for _ in 0..6 {
                    inv = inv.wrapping_mul(2u64.wrapping_sub(ml[0].wrapping_mul(inv)));
                }
                let a = from_u64_limbs(&((&m * 7u32 / 11u32) + offset).to_u64_digits(), limbs);
                let b = from_u64_limbs(&((&m * 5u32 / 13u32) + 1u32).to_u64_digits(), limbs);
                (ml, inv.wrapping_neg() & MASK, a, b)
            };
            let (m1, k1, a1, b1) = setup(0);
            let (m2, k2, a2, b2) = setup(1000);
            let (mut s1, mut s2) = (vec![0u64; limbs], vec![0u64; limbs]);
            mul(&m1, k1, &a1, &b1, &mut s1);
            mul(&m2, k2, &a2, &b2, &mut s2);
            let (mut p1, mut p2) = (vec![0u64; limbs], vec![0u64; limbs]);
            mul2((&m1, k1, &a1, &b1), &mut p1, (&m2, k2, &a2, &b2), &mut p2);
            assert_eq!((p1, p2), (s1, s2), "{bits} bits");
        }
    }

    #[test]
    fn radix_conversion_round_trips() {
        let x: Vec<u64> = (0..7u64)
            .map(|i| 0x0123_4567_89ab_cdefu64.rotate_left(i as u32 * 9))
            .collect();
        let y = from_u64_limbs(&x, limbs_for(7 * 64));
        let back = to_u64_limbs(&y);
        assert_eq!(&back[..7], &x[..]);
        assert!(back[7..].iter().all(|&w| w == 0));
    }

    #[test]
    fn products_match_num_bigint() {
        if !available() {
            eprintln!("skipped: no AVX-512 IFMA on this CPU");
            return;
        }
        for bits in [200u64, 2048, 3072, 4096, 6144, 8192] {
            let mut m = (BigUint::from(1u8) << bits) - BigUint::from(12345u32);
            m |= BigUint::from(1u8);
            let limbs = limbs_for(bits);
            let r = BigUint::from(1u8) << (52 * limbs);
            let ml = from_u64_limbs(&m.to_u64_digits(), limbs);
            let mut inv: u64 = 1;
            for _ in 0..6 {
                inv = inv.wrapping_mul(2u64.wrapping_sub(ml[0].wrapping_mul(inv)));
            }
            let k0 = inv.wrapping_neg() & MASK;
            let a = (&m * 7u32 / 11u32) + 3u32;
            let b = &m - 1u32;
            let mut out = vec![0u64; limbs];
            mul(
                &ml,
                k0,
                &from_u64_limbs(&a.to_u64_digits(), limbs),
                &from_u64_limbs(&b.to_u64_digits(), limbs),
                &mut out,
            );
            let rinv = r.modinv(&m).expect("R is invertible");
            assert_eq!(to_big(&out), (&a * &b * rinv) % &m, "{bits} bits");
        }
    }
}
