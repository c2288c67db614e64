//! `Enc(X) R`: an encrypted matrix packed by columns times a plaintext matrix on the right, the
//! cross terms of every masked product and most of the aggregator's work.
//!
//! Block `b` of output column `j` is `prod_l Enc(X)[l, b]^(R[l, j])`: for each block the same `k`
//! ciphertexts are bases of all `n` columns' multi-exponentiations. So the bases are prepared
//! once per block (`c_l^(2^(w t))` for every window `t`, `e` squarings per base, shared by all
//! columns), after which each column is one bucket pass (Pippenger's method, as in
//! [`crate::paillier::multiexp`]) over `k ceil(e / w)` prepared bases with `w`-bit digits:
//! `k ceil(e / w) + 2^(w + 1)` multiplications modulo `n^2` per block and column, and no
//! squarings. For 200 bases and 105-bit exponents that is about 3,100 multiplications, against
//! about 4,400 for a plain multi-exponentiation per column. Variable time in `R`, which
//! belongs to the aggregator computing it.

use rayon::prelude::*;

use super::matrix::IntMatrix;
use super::packed::PackedMatrix;
use crate::paillier::montgomery::{Montgomery, Residue};
use crate::paillier::{Ciphertext, PaillierError, PublicKey};

/// `Enc(X) R` for `X` (m x k, packed by columns) and non-negative `R` (k x n), in `X`'s packing.
pub fn times_plain(
    key: &PublicKey,
    x: &PackedMatrix,
    r: &IntMatrix,
) -> Result<PackedMatrix, PaillierError> {
    let (k, n) = (r.rows(), r.cols());
    if x.cols() != k {
        return Err(PaillierError::Mismatch(format!(
            "an encrypted {} x {} matrix times a {k} x {n} one",
            x.rows(),
            x.cols()
        )));
    }
    if r.data().iter().any(|v| v.sign() == num_bigint::Sign::Minus) {
        return Err(PaillierError::Mismatch(
            "exponents must be non-negative".into(),
        ));
    }
    let context = key.context();
    let bits = r.max_bits() as usize;
    let per_column = x.blocks_per_column();
    if bits == 0 || k == 0 {
        let blocks = vec![Ciphertext::from_residue(context.one()); n * per_column];
        return PackedMatrix::from_blocks(x.rows(), n, x.packing(), blocks);
    }
    let w = window_bits(k, bits);
    let windows = bits.div_ceil(w);
    // digits[(l * n + j) * windows + t]: window t of R[l, j].
    let digits: Vec<u16> = r
        .data()
        .par_iter()
        .flat_map_iter(|v| {
            let limbs = v.magnitude().to_u64_digits();
            (0..windows).map(move |t| digit(&limbs, t * w, w) as u16)
        })
        .collect();
    let limbs = context.limbs();
    // prepared[b][(l * windows + t) * limbs ..]: Enc(X)[l, b]^(2^(w t)).
    let prepared: Vec<Vec<u64>> = (0..per_column)
        .into_par_iter()
        .map(|b| {
            let mut table = vec![0u64; k * windows * limbs];
            let mut scratch = vec![0u64; limbs];
            for l in 0..k {
                let mut current: Residue = x.block(l, b).residue().clone();
                for t in 0..windows {
                    let at = (l * windows + t) * limbs;
                    table[at..at + limbs].copy_from_slice(&current);
                    if t + 1 < windows {
                        for _ in 0..w {
                            context.square_into(&current, &mut scratch);
                            std::mem::swap(&mut current, &mut scratch);
                        }
                    }
                }
            }
            table
        })
        .collect();
    let blocks: Vec<Ciphertext> = (0..n * per_column)
        .into_par_iter()
        .map_init(
            || Buckets::new(w, limbs),
            |buckets, at| {
                let (j, b) = (at / per_column, at % per_column);
                buckets.clear();
                let table = &prepared[b];
                for l in 0..k {
                    let row = &digits[(l * n + j) * windows..(l * n + j + 1) * windows];
                    for (t, &d) in row.iter().enumerate() {
                        if d != 0 {
                            let at = (l * windows + t) * limbs;
                            buckets.add(context, d as usize, &table[at..at + limbs]);
                        }
                    }
                }
                Ciphertext::from_residue(buckets.total(context))
            },
        )
        .collect();
    PackedMatrix::from_blocks(x.rows(), n, x.packing(), blocks)
}

/// Bucket `d` holds the product of every prepared base whose digit is `d`.
struct Buckets {
    limbs: usize,
    values: Vec<u64>,
    set: Vec<bool>,
    scratch: Vec<u64>,
}

impl Buckets {
    fn new(w: usize, limbs: usize) -> Self {
        Self {
            limbs,
            values: vec![0u64; (1 << w) * limbs],
            set: vec![false; 1 << w],
            scratch: vec![0u64; limbs],
        }
    }

    fn clear(&mut self) {
        self.set.iter_mut().for_each(|s| *s = false);
    }

    fn add(&mut self, context: &Montgomery, d: usize, base: &[u64]) {
        let slot = &mut self.values[d * self.limbs..(d + 1) * self.limbs];
        if self.set[d] {
            context.mul_into(slot, base, &mut self.scratch);
            slot.copy_from_slice(&self.scratch);
        } else {
            slot.copy_from_slice(base);
            self.set[d] = true;
        }
    }

    /// `prod_d bucket_d^d` by running products from the top bucket down.
    fn total(&mut self, context: &Montgomery) -> Residue {
        let limbs = self.limbs;
        let mut running: Option<Residue> = None;
        let mut total: Option<Residue> = None;
        for d in (1..self.set.len()).rev() {
            if self.set[d] {
                let bucket = &self.values[d * limbs..(d + 1) * limbs];
                running = Some(match running {
                    Some(r) => {
                        context.mul_into(&r, bucket, &mut self.scratch);
                        self.scratch.clone()
                    }
                    None => bucket.to_vec(),
                });
            }
            if let Some(r) = &running {
                total = Some(match total {
                    Some(t) => {
                        context.mul_into(&t, r, &mut self.scratch);
                        self.scratch.clone()
                    }
                    None => r.clone(),
                });
            }
        }
        total.unwrap_or_else(|| context.one())
    }
}

/// The window minimising the multiplications per block and column, `k ceil(bits / w) +
/// 2^(w + 1)` (digits are kept in 16 bits).
fn window_bits(k: usize, bits: usize) -> usize {
    (1..=16)
        .min_by_key(|&w| k * bits.div_ceil(w) + (1 << (w + 1)))
        .unwrap_or(1)
}

/// Bits `start .. start + len` of `x` (`len <= 16`).
fn digit(x: &[u64], start: usize, len: usize) -> usize {
    let (word, bit) = (start / 64, start % 64);
    let mut v = x.get(word).copied().unwrap_or(0) >> bit;
    if bit + len > 64 && bit > 0 {
        v |= x.get(word + 1).copied().unwrap_or(0) << (64 - bit);
    }
    (v & ((1u64 << len) - 1)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paillier::{DjnNoise, KeyPair, Packing};
    use num_bigint::BigInt;

    #[test]
    fn equals_plaintext_product() {
        let mut rng = rand::rng();
        let pair = KeyPair::generate_insecure_for_tests(512, &mut rng);
        let key = pair.public_key();
        let noise = DjnNoise::new(key, &mut rng);
        let packing = Packing::new(key, 120).expect("fits");
        let (m, k, n) = (9, 5, 4);
        let x = IntMatrix::from_fn(m, k, |i, j| BigInt::from(i as i64 * 7 - j as i64 * 13 - 20));
        let r = IntMatrix::from_fn(k, n, |i, j| {
            (BigInt::from(0x9e37_79b9_7f4a_7c15u64) << (i * 3 + j)) + BigInt::from(i * n + j)
        });
        let enc = PackedMatrix::encrypt(key, &x, packing, &noise).expect("encrypts");
        let product = times_plain(key, &enc, &r).expect("multiplies");
        let expected = super::super::wide::product(&x, &r);
        assert_eq!(product.decrypt(&pair.secret).expect("decrypts"), expected);
        // Zero exponents give encryptions of zero.
        let zero = times_plain(key, &enc, &IntMatrix::zeros(k, 2)).expect("multiplies");
        assert_eq!(
            zero.decrypt(&pair.secret).expect("decrypts"),
            IntMatrix::zeros(m, 2)
        );
    }
}
