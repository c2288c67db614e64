//! Uniform covariates at memory speed: eight Xoshiro256++ generators stepped in lock-step, so
//! that one AVX-512 register holds all eight states (64-bit rotates and integer-to-float
//! conversions are single instructions there). The arithmetic is integer steps, one exact
//! conversion of a 53-bit integer and one multiply and subtract, so the AVX-512, AVX2 and
//! portable paths produce the same bits: the data a seed defines does not depend on the CPU.
#![allow(unsafe_code)]

/// Generators stepped together.
pub const LANES: usize = 8;

/// `sqrt(3)`: Uniform(-sqrt 3, sqrt 3) has mean 0 and variance 1.
const HALF_WIDTH: f64 = 1.732_050_807_568_877_2;

/// Eight Xoshiro256++ states, lane `k` in `s[i][k]`.
#[derive(Debug, Clone)]
pub struct UniformLanes {
    s: [[u64; LANES]; 4],
}

impl UniformLanes {
    /// States from 32 words (a lane whose state would be all zero, which Xoshiro forbids, gets
    /// a fixed non-zero word instead).
    pub fn from_words(words: [u64; 4 * LANES]) -> Self {
        let mut s = [[0u64; LANES]; 4];
        for (i, w) in words.iter().enumerate() {
            s[i / LANES][i % LANES] = *w;
        }
        let zero_lanes: Vec<usize> = (0..LANES)
            .filter(|&k| s.iter().all(|words| words[k] == 0))
            .collect();
        for k in zero_lanes {
            s[0][k] = 0x9e37_79b9_7f4a_7c15;
        }
        Self { s }
    }

    /// Fills `out` with independent Uniform(-sqrt 3, sqrt 3) values (mean 0, variance 1).
    pub fn fill(&mut self, out: &mut [f64]) {
        let whole = out.len() - out.len() % LANES;
        let (body, tail) = out.split_at_mut(whole);
        self.fill_dispatch(body);
        if !tail.is_empty() {
            let mut last = [0.0; LANES];
            self.fill_dispatch(&mut last);
            tail.copy_from_slice(&last[..tail.len()]);
        }
    }

    fn fill_dispatch(&mut self, out: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
            {
                // SAFETY: the features the function is compiled for were detected above.
                unsafe { fill_avx512(self, out) };
                return;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                unsafe { fill_avx2(self, out) };
                return;
            }
        }
        self.fill_lanes(out);
    }

    /// The one implementation; `out.len()` is a multiple of [`LANES`].
    #[inline(always)]
    fn fill_lanes(&mut self, out: &mut [f64]) {
        const SCALE: f64 = 2.0 * HALF_WIDTH / (1u64 << 53) as f64;
        let [s0, s1, s2, s3] = &mut self.s;
        for block in out.chunks_exact_mut(LANES) {
            for k in 0..LANES {
                let r = s0[k]
                    .wrapping_add(s3[k])
                    .rotate_left(23)
                    .wrapping_add(s0[k]);
                let t = s1[k] << 17;
                s2[k] ^= s0[k];
                s3[k] ^= s1[k];
                s1[k] ^= s2[k];
                s0[k] ^= s3[k];
                s2[k] ^= t;
                s3[k] = s3[k].rotate_left(45);
                block[k] = (r >> 11) as f64 * SCALE - HALF_WIDTH;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl")]
fn fill_avx512(lanes: &mut UniformLanes, out: &mut [f64]) {
    lanes.fill_lanes(out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fill_avx2(lanes: &mut UniformLanes, out: &mut [f64]) {
    lanes.fill_lanes(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lane 0 reproduces the reference Xoshiro256++ (rand_xoshiro) from the same state, and
    /// every dispatch path gives the same bits.
    #[test]
    fn matches_reference_generator_and_paths_agree() {
        use rand::{Rng, SeedableRng};
        let words: [u64; 32] = std::array::from_fn(|i| (i as u64 + 1) * 0x0123_4567_89ab_cdef);
        let mut lanes = UniformLanes::from_words(words);
        let mut out = vec![0.0; 8 * LANES];
        lanes.fill(&mut out);
        let mut seed = [0u8; 32];
        for i in 0..4 {
            seed[8 * i..8 * i + 8].copy_from_slice(&words[i * LANES].to_le_bytes());
        }
        let mut reference = rand_xoshiro::Xoshiro256PlusPlus::from_seed(seed);
        for step in 0..8 {
            let r = reference.next_u64();
            let expected = (r >> 11) as f64 * (2.0 * HALF_WIDTH / (1u64 << 53) as f64) - HALF_WIDTH;
            assert_eq!(out[step * LANES], expected);
        }
        let mut portable = UniformLanes::from_words(words);
        let mut again = vec![0.0; 8 * LANES];
        portable.fill_lanes(&mut again);
        assert_eq!(out, again);
        assert!(out.iter().all(|v| v.abs() <= HALF_WIDTH));
    }
}
