//! `Enc(X) R`: an encrypted matrix packed by columns times a plaintext matrix on the right, the
//! cross terms of every masked product and most of the aggregator's work.
//!
//! A block of the output (see [`super::layout`]) is `prod Enc(X)[l, b]^(R[l, j])` over the
//! inner index `l`: a multi-exponentiation whose bases are shared by every output column. So
//! each base is prepared once (`c^(2^(w t))` for every window `t`: `e` squarings, shared by all
//! the multi-exponentiations that use it), after which each block is one bucket pass
//! (Pippenger's method, as in [`crate::paillier::multiexp`]) over the prepared bases with
//! `w`-bit digits: about `k ceil(e / w) + 2^(w + 1)` multiplications modulo `n^2` and no
//! squarings. For 200 bases and 105-bit exponents that is about 3,100 multiplications, against
//! about 4,400 for a plain multi-exponentiation. Bases that are public zeros (a triangular
//! operand's empty blocks) and zero exponents are skipped. Variable time in `R`, which belongs
//! to the aggregator computing it.

use num_bigint::{BigInt, Sign};
use rayon::prelude::*;

use super::layout::{Layout, Segment};
use super::matrix::IntMatrix;
use super::packed::{PackedMatrix, packing_of, read_ciphertexts, write_ciphertexts};
use crate::paillier::montgomery::{Montgomery, Residue};
use crate::paillier::multiexp::digit;
use crate::paillier::{
    Ciphertext, Malformed, Mismatch, Packing, PaillierError, PublicKey, SecretKey,
};
use crate::secure::wire::{Reader, Writer};

/// Public zeros of a matrix, by shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Zeros {
    /// None known.
    #[default]
    None,
    /// Lower triangular: entries above the diagonal are zero.
    Lower,
    /// Upper triangular: entries below the diagonal are zero.
    Upper,
}

impl Zeros {
    /// The pattern of the transpose.
    pub fn transposed(self) -> Self {
        match self {
            Zeros::None => Zeros::None,
            Zeros::Lower => Zeros::Upper,
            Zeros::Upper => Zeros::Lower,
        }
    }

    /// True when rows `rows` of column `l` are all known zeros.
    fn empty(self, rows: std::ops::Range<usize>, l: usize) -> bool {
        match self {
            Zeros::None => false,
            Zeros::Lower => rows.end <= l,
            Zeros::Upper => rows.start > l,
        }
    }
}

/// A cross term's ciphertexts in the order of its layout, with their packing.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossTerm {
    packing: Packing,
    blocks: Vec<Ciphertext>,
}

impl CrossTerm {
    /// The packing.
    pub fn packing(&self) -> Packing {
        self.packing
    }

    /// Ciphertexts.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Adds `values[row][column]` to every laid-out entry (no fresh randomness).
    pub fn add_plain(
        &self,
        key: &PublicKey,
        layout: &Layout,
        values: &IntMatrix,
    ) -> Result<Self, PaillierError> {
        let blocks = self
            .blocks
            .par_iter()
            .zip(&layout.blocks)
            .map(|(c, segments)| {
                let packed = pack_segments(key, self.packing, segments, values)?;
                Ok(key.add_plain(c, &key.encode_signed(&packed)?))
            })
            .collect::<Result<Vec<_>, PaillierError>>()?;
        Ok(Self {
            packing: self.packing,
            blocks,
        })
    }

    /// The same plaintexts under fresh randomness (before they go to the key holder).
    pub fn rerandomized<S: crate::paillier::NoiseSource>(
        &self,
        key: &PublicKey,
        source: &S,
    ) -> Self {
        let blocks = key.rerandomize_all(&self.blocks, source);
        Self {
            packing: self.packing,
            blocks,
        }
    }

    /// Decrypts into a `rows x cols` matrix; entries the layout leaves out are zero.
    pub fn decrypt(&self, secret: &SecretKey, layout: &Layout) -> Result<IntMatrix, PaillierError> {
        let key = secret.public_key();
        let plaintexts = secret.decrypt_all(&self.blocks)?;
        let slots = self.packing.slots();
        let unpacked: Vec<Vec<BigInt>> = plaintexts
            .par_iter()
            .map(|m| self.packing.unpack(&key.decode_signed(m), slots))
            .collect();
        let mut data = vec![BigInt::from(0); layout.rows * layout.cols];
        for (values, segments) in unpacked.iter().zip(&layout.blocks) {
            for s in segments {
                for i in 0..s.count {
                    data[(s.row + i) * layout.cols + s.column] = values[s.offset + i].clone();
                }
            }
        }
        Ok(IntMatrix::from_vec(layout.rows, layout.cols, data))
    }

    /// Slot width, then the ciphertexts.
    pub fn write(&self, key: &PublicKey, w: Writer) -> Writer {
        write_ciphertexts(
            key,
            &self.blocks,
            w.u64(u64::from(self.packing.slot_bits())),
        )
    }

    /// Reads what [`Self::write`] wrote; `blocks` gives the number of ciphertexts the layout
    /// has for the packing's slot count.
    pub fn read(
        key: &PublicKey,
        r: &mut Reader<'_>,
        blocks: impl FnOnce(usize) -> usize,
    ) -> Result<Self, PaillierError> {
        let slot_bits = r
            .u64()
            .map_err(|e| PaillierError::Format(Malformed::Read(e)))?;
        let packing = packing_of(
            key,
            u32::try_from(slot_bits).map_err(|_| {
                PaillierError::Format(Malformed::Value {
                    what: "slot width (bits)",
                    value: slot_bits,
                })
            })?,
        )?;
        let count = blocks(packing.slots());
        Ok(Self {
            packing,
            blocks: read_ciphertexts(key, r, count)?,
        })
    }
}

/// Packs the laid-out entries of one block.
fn pack_segments(
    key: &PublicKey,
    packing: Packing,
    segments: &[Segment],
    values: &IntMatrix,
) -> Result<BigInt, PaillierError> {
    let end = segments
        .iter()
        .map(|s| s.offset + s.count)
        .max()
        .unwrap_or(0);
    let mut slots = vec![BigInt::from(0); end];
    for s in segments {
        for i in 0..s.count {
            slots[s.offset + i] = values.get(s.row + i, s.column).clone();
        }
    }
    packing.pack(key, &slots)
}

/// `Enc(X) R` laid out by `layout`, for `X` (`m x k`) with public zeros `zeros`, encrypted as
/// `copies[t]` = `X` packed by columns from slot `t m` (only `copies[0]`, at slot 0, when the
/// layout cuts tall columns), and non-negative `R` (`k x n`).
pub fn times_plain(
    key: &PublicKey,
    copies: &[&PackedMatrix],
    zeros: Zeros,
    r: &IntMatrix,
    layout: &Layout,
) -> Result<CrossTerm, PaillierError> {
    let first = copies
        .first()
        .ok_or(PaillierError::Mismatch(Mismatch::Empty { what: "operand" }))?;
    let (m, k) = (first.rows(), first.cols());
    if copies.len() != layout.copies
        || copies
            .iter()
            .any(|c| (c.rows(), c.cols()) != (m, k) || c.packing() != first.packing())
        || r.rows() != k
        || (layout.rows, layout.cols) != (m, r.cols())
    {
        return Err(PaillierError::Mismatch(Mismatch::Layout {
            operand: (m, k),
            copies: copies.len(),
            layout: (layout.rows, layout.cols),
            layout_copies: layout.copies,
        }));
    }
    if r.data().iter().any(|v| v.sign() == Sign::Minus) {
        return Err(PaillierError::Mismatch(Mismatch::NegativeExponent));
    }
    let slots = first.packing().slots();
    // Bases: copy t, column l, block b at index (t * k + l) * per_column + b.
    let per_column = first.blocks_per_column();
    let base = |t: usize, l: usize, b: usize| (t * k + l) * per_column + b;
    let jobs: Vec<Vec<(usize, usize)>> = layout
        .blocks
        .iter()
        .map(|segments| {
            let mut terms = Vec::new();
            for s in segments {
                let (t, b) = if layout.copies > 1 {
                    (s.offset / m, 0)
                } else {
                    (0, s.row / slots)
                };
                for l in 0..k {
                    let exponent = l * r.cols() + s.column;
                    if !zeros.empty(s.row..s.row + s.count, l)
                        && r.data()[exponent].sign() != Sign::NoSign
                    {
                        terms.push((base(t, l, b), exponent));
                    }
                }
            }
            terms
        })
        .collect();
    let bases: Vec<&Ciphertext> = copies
        .iter()
        .flat_map(|c| (0..k).flat_map(move |l| (0..per_column).map(move |b| c.block(l, b))))
        .collect();
    let blocks = products(key.context(), &bases, r.data(), &jobs);
    Ok(CrossTerm {
        packing: first.packing(),
        blocks,
    })
}

/// Bases prepared at once, at most (bounds the memory of the prepared powers).
const PREPARED_BASES: usize = 4096;

/// For every job, `prod bases[i]^exponents[e]` over its `(i, e)` terms (non-negative exponents);
/// an empty job gives the encryption of 0 with noise 1.
pub fn products(
    context: &Montgomery,
    bases: &[&Ciphertext],
    exponents: &[BigInt],
    jobs: &[Vec<(usize, usize)>],
) -> Vec<Ciphertext> {
    let bits = exponents.iter().map(|e| e.bits()).max().unwrap_or(0) as usize;
    let terms: usize = jobs.iter().map(Vec::len).sum();
    if bits == 0 || terms == 0 {
        return vec![Ciphertext::from_residue(context.one()); jobs.len()];
    }
    let average = terms.div_ceil(jobs.len());
    let w = window_bits(average, bits);
    let windows = bits.div_ceil(w);
    let digits: Vec<u16> = exponents
        .par_iter()
        .flat_map_iter(|v| {
            let limbs = v.magnitude().to_u64_digits();
            (0..windows).map(move |t| digit(&limbs, t * w, w) as u16)
        })
        .collect();
    let limbs = context.limbs();
    let mut out: Vec<Option<Ciphertext>> = vec![None; jobs.len()];
    // Jobs in runs whose distinct bases fit the preparation budget (layouts order their blocks
    // so that neighbours share bases).
    let mut start = 0;
    while start < jobs.len() {
        let mut slot_of = std::collections::HashMap::new();
        let mut end = start;
        while end < jobs.len() {
            let fresh = jobs[end]
                .iter()
                .filter(|(i, _)| !slot_of.contains_key(i))
                .count();
            if end > start && slot_of.len() + fresh > PREPARED_BASES {
                break;
            }
            for &(i, _) in &jobs[end] {
                let next = slot_of.len();
                slot_of.entry(i).or_insert(next);
            }
            end += 1;
        }
        let mut order: Vec<(usize, usize)> = slot_of.iter().map(|(&i, &s)| (s, i)).collect();
        order.sort_unstable();
        let prepared: Vec<Vec<u64>> = order
            .par_chunks(2)
            .flat_map_iter(|pair| {
                let residues: Vec<&Residue> =
                    pair.iter().map(|&(_, i)| bases[i].residue()).collect();
                prepare(context, &residues, windows, w)
            })
            .collect();
        // Each job as its (digit, prepared power) steps; jobs go two at a time so that their
        // multiplications interleave (see `Montgomery::mul_pair`).
        let steps = |job: &Vec<(usize, usize)>| -> Vec<(usize, &[u64])> {
            let mut out = Vec::with_capacity(job.len() * windows);
            for &(i, e) in job {
                let table = &prepared[slot_of[&i]];
                for (t, &d) in digits[e * windows..(e + 1) * windows].iter().enumerate() {
                    if d != 0 {
                        out.push((d as usize, &table[t * limbs..(t + 1) * limbs]));
                    }
                }
            }
            out
        };
        let results: Vec<Ciphertext> = jobs[start..end]
            .par_chunks(2)
            .map_init(
                || (Buckets::new(w, limbs), Buckets::new(w, limbs)),
                |(first, second), pair| {
                    first.clear();
                    second.clear();
                    let a = steps(&pair[0]);
                    let b = pair.get(1).map(steps).unwrap_or_default();
                    Buckets::add_all(context, first, &a, second, &b);
                    let (x, y) = Buckets::totals(context, first, second);
                    let mut out = vec![Ciphertext::from_residue(x)];
                    if pair.len() == 2 {
                        out.push(Ciphertext::from_residue(y));
                    }
                    out
                },
            )
            .flatten_iter()
            .collect();
        for (k, c) in results.into_iter().enumerate() {
            out[start + k] = Some(c);
        }
        start = end;
    }
    out.into_iter()
        .map(|c| c.expect("every job computed"))
        .collect()
}

/// For each base (one or two, squared side by side), `c^(2^(w t))` for `t` in `0..windows`,
/// back to back.
fn prepare(context: &Montgomery, bases: &[&Residue], windows: usize, w: usize) -> Vec<Vec<u64>> {
    let limbs = context.limbs();
    let mut tables: Vec<Vec<u64>> = bases.iter().map(|_| vec![0u64; windows * limbs]).collect();
    let mut current: Vec<Residue> = bases.iter().map(|b| (*b).clone()).collect();
    let mut scratch: Vec<Residue> = bases.iter().map(|_| vec![0u64; limbs]).collect();
    for t in 0..windows {
        for (table, c) in tables.iter_mut().zip(&current) {
            table[t * limbs..(t + 1) * limbs].copy_from_slice(c);
        }
        if t + 1 < windows {
            for _ in 0..w {
                if let ([c0, c1], [s0, s1]) = (&mut current[..], &mut scratch[..]) {
                    context.mul_pair((c0, c0, s0), context, (c1, c1, s1));
                } else {
                    context.square_into(&current[0], &mut scratch[0]);
                }
                std::mem::swap(&mut current, &mut scratch);
            }
        }
    }
    tables
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

    /// Adds every `(digit, base)` step of two jobs, their multiplications paired.
    fn add_all(
        context: &Montgomery,
        first: &mut Buckets,
        a: &[(usize, &[u64])],
        second: &mut Buckets,
        b: &[(usize, &[u64])],
    ) {
        let limbs = first.limbs;
        let common = a.len().min(b.len());
        for (&(da, ba), &(db, bb)) in a[..common].iter().zip(&b[..common]) {
            if first.set[da] && second.set[db] {
                let x = &mut first.values[da * limbs..(da + 1) * limbs];
                let y = &mut second.values[db * limbs..(db + 1) * limbs];
                context.mul_pair(
                    (x, ba, &mut first.scratch),
                    context,
                    (y, bb, &mut second.scratch),
                );
                x.copy_from_slice(&first.scratch);
                y.copy_from_slice(&second.scratch);
            } else {
                first.add(context, da, ba);
                second.add(context, db, bb);
            }
        }
        for &(d, base) in &a[common..] {
            first.add(context, d, base);
        }
        for &(d, base) in &b[common..] {
            second.add(context, d, base);
        }
    }

    /// The totals of two bucket sets (see [`Self::total`]), their chains interleaved.
    fn totals(
        context: &Montgomery,
        first: &mut Buckets,
        second: &mut Buckets,
    ) -> (Residue, Residue) {
        let limbs = first.limbs;
        let one = context.one();
        // Running products and totals start at 1 (a bucket left empty multiplies by 1).
        let (mut r1, mut r2) = (one.clone(), one.clone());
        let (mut t1, mut t2) = (one.clone(), one.clone());
        let (mut s1, mut s2) = (vec![0u64; limbs], vec![0u64; limbs]);
        for d in (1..first.set.len()).rev() {
            let b1: &[u64] = if first.set[d] {
                &first.values[d * limbs..(d + 1) * limbs]
            } else {
                &one
            };
            let b2: &[u64] = if second.set[d] {
                &second.values[d * limbs..(d + 1) * limbs]
            } else {
                &one
            };
            context.mul_pair((&r1, b1, &mut s1), context, (&r2, b2, &mut s2));
            std::mem::swap(&mut r1, &mut s1);
            std::mem::swap(&mut r2, &mut s2);
            context.mul_pair((&t1, &r1, &mut s1), context, (&t2, &r2, &mut s2));
            std::mem::swap(&mut t1, &mut s1);
            std::mem::swap(&mut t2, &mut s2);
        }
        (t1, t2)
    }
}

/// The window minimising the multiplications per job, `terms ceil(bits / w) + 2^(w + 1)`.
fn window_bits(terms: usize, bits: usize) -> usize {
    (1..=12)
        .min_by_key(|&w| terms * bits.div_ceil(w) + (1 << (w + 1)))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::super::layout::{Need, layout};
    use super::*;
    use crate::paillier::{DjnNoise, KeyPair, Packing};

    fn check(m: usize, k: usize, n: usize, need: Need, zeros: Zeros) {
        let mut rng = rand::rng();
        let pair = KeyPair::generate_insecure_for_tests(512, &mut rng);
        let key = pair.public_key();
        let noise = DjnNoise::new(key, &mut rng);
        let packing = Packing::new(key, 120).expect("fits");
        let x = IntMatrix::from_fn(m, k, |i, j| match zeros {
            Zeros::Lower if j > i => BigInt::from(0),
            Zeros::Upper if j < i => BigInt::from(0),
            _ => BigInt::from(i as i64 * 7 - j as i64 * 13 - 20),
        });
        let r = IntMatrix::from_fn(k, n, |i, j| {
            (BigInt::from(0x9e37_79b9_7f4a_7c15u64) << (i * 3 + j)) + BigInt::from(i * n + j)
        });
        let plan = layout(m, n, packing.slots(), need);
        let copies: Vec<PackedMatrix> = (0..plan.copies)
            .map(|t| PackedMatrix::encrypt_at(key, &x, packing, t * m, &noise).expect("encrypts"))
            .collect();
        let refs: Vec<&PackedMatrix> = copies.iter().collect();
        let product = times_plain(key, &refs, zeros, &r, &plan).expect("multiplies");
        let got = product.decrypt(&pair.secret, &plan).expect("decrypts");
        let expected = super::super::wide::product(&x, &r);
        for i in 0..m {
            for j in 0..n {
                let wanted = match need {
                    Need::All => true,
                    Need::Lower => i >= j,
                    Need::Upper => i <= j,
                };
                if wanted {
                    assert_eq!(got.get(i, j), expected.get(i, j), "({i}, {j}) of {m} x {n}");
                }
            }
        }
    }

    /// Every layout (tall and short columns, triangles) and zero pattern gives the plaintext
    /// product on the wanted entries.
    #[test]
    fn equals_plaintext_product() {
        for (m, k, n) in [(9, 5, 4), (1, 3, 5), (2, 2, 7), (7, 6, 7)] {
            for need in [Need::All, Need::Lower, Need::Upper] {
                for zeros in [Zeros::None, Zeros::Lower, Zeros::Upper] {
                    check(m, k, n, need, zeros);
                }
            }
        }
    }
}
