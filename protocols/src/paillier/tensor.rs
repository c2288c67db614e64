//! Encrypted vectors and matrices: packed ciphertexts with a common scale and a public bound per
//! slot, the homomorphic operations the protocols need, and a fixed-length wire format.
//!
//! A vector of length `len` under packing `P` is `ceil(len / slots)` ciphertexts, values in
//! order. A matrix is stored by columns, each column a packed vector down the rows, so that
//! `Enc(M) v = sum_j v_j Enc(M[:, j])` is, for every packed block of rows, one
//! multi-exponentiation over the columns ([`EncryptedMatrix::mul_vector`]).

use ndarray::ArrayView2;
use num_bigint::{BigInt, BigUint, Sign};
use rayon::prelude::*;

use super::ciphertext::Ciphertext;
use super::encoding::{EncryptedNumber, Fixed, add_scales, check_scale, fits};
use super::keys::{PublicKey, SecretKey};
use super::multiexp::multi_pow;
use super::noise_source::NoiseSource;
use super::packing::Packing;
use super::paillier_error::{Malformed, Mismatch, PaillierError, Unencodable};

/// Wire format version of encrypted tensors.
pub const TENSOR_FORMAT_VERSION: u16 = 1;
const VECTOR_MAGIC: &[u8; 4] = b"PLEV";
const MATRIX_MAGIC: &[u8; 4] = b"PLEM";
/// Largest length accepted off the wire (values per vector, columns per matrix).
pub const MAX_WIRE_LEN: u64 = 1 << 24;

/// An encrypted vector of fixed-point values.
#[derive(Debug, Clone, PartialEq)]
pub struct EncryptedVector {
    len: usize,
    scale: u32,
    slot_bound: BigUint,
    packing: Packing,
    blocks: Vec<Ciphertext>,
}

impl EncryptedVector {
    /// Encrypts `values` (one scale for all) whose magnitudes never exceed `slot_bound`
    /// (public), packed by `packing`, in parallel.
    pub fn encrypt<S: NoiseSource>(
        key: &PublicKey,
        values: &[Fixed],
        slot_bound: &BigUint,
        packing: Packing,
        source: &S,
    ) -> Result<Self, PaillierError> {
        let scale = common_scale(values)?;
        check_slot_bound(key, &packing, slot_bound)?;
        if values.iter().any(|v| v.value.magnitude() > slot_bound) {
            return Err(PaillierError::Encoding(Unencodable::AboveBound));
        }
        let plaintexts = values
            .chunks(packing.slots())
            .map(|chunk| {
                let ints: Vec<BigInt> = chunk.iter().map(|v| v.value.clone()).collect();
                key.encode_signed(&packing.pack(key, &ints)?)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            len: values.len(),
            scale,
            slot_bound: slot_bound.clone(),
            packing,
            blocks: key.encrypt_all(&plaintexts, source),
        })
    }

    /// A vector from its ciphertexts, checked against the layout: `len` values at `scale`,
    /// each below `slot_bound`, packed by `packing`.
    pub(crate) fn from_parts(
        key: &PublicKey,
        len: usize,
        scale: u32,
        slot_bound: BigUint,
        packing: Packing,
        blocks: Vec<Ciphertext>,
    ) -> Result<Self, PaillierError> {
        check_scale(scale)?;
        check_slot_bound(key, &packing, &slot_bound)?;
        if blocks.len() != packing.plaintexts_for(len) {
            return Err(PaillierError::Mismatch(Mismatch::Length {
                what: "ciphertexts",
                len: blocks.len(),
                against: "values",
                expected: len,
            }));
        }
        Ok(Self {
            len,
            scale,
            slot_bound,
            packing,
            blocks,
        })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fractional bits of every value.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    /// Public bound on every value's magnitude.
    pub fn slot_bound(&self) -> &BigUint {
        &self.slot_bound
    }

    /// The slot layout.
    pub fn packing(&self) -> Packing {
        self.packing
    }

    /// The packed ciphertexts.
    pub fn ciphertexts(&self) -> &[Ciphertext] {
        &self.blocks
    }

    /// Decrypts every value (in parallel).
    pub fn decrypt(&self, secret: &SecretKey) -> Result<Vec<Fixed>, PaillierError> {
        let key = secret.public_key();
        let plaintexts = secret.decrypt_all(&self.blocks)?;
        let mut out = Vec::with_capacity(self.len);
        for (i, m) in plaintexts.iter().enumerate() {
            let count = (self.len - i * self.packing.slots()).min(self.packing.slots());
            for value in self.packing.unpack(&key.decode_signed(m), count) {
                out.push(Fixed {
                    value,
                    scale: self.scale,
                });
            }
        }
        Ok(out)
    }

    /// Decrypts to the nearest f64s.
    pub fn decrypt_f64(&self, secret: &SecretKey) -> Result<Vec<f64>, PaillierError> {
        Ok(self.decrypt(secret)?.iter().map(Fixed::to_f64).collect())
    }

    /// The slot-wise sum of vectors of the same length, layout and scale (the Center's
    /// aggregation of the Nodes' contributions).
    pub fn sum(key: &PublicKey, vectors: &[&Self]) -> Result<Self, PaillierError> {
        let first = vectors
            .first()
            .ok_or(PaillierError::Mismatch(Mismatch::Empty {
                what: "vectors to sum",
            }))?;
        for v in vectors {
            if v.len != first.len || v.packing != first.packing || v.scale != first.scale {
                return Err(PaillierError::Mismatch(Mismatch::Layouts {
                    what: "vectors",
                }));
            }
        }
        let slot_bound = vectors.iter().map(|v| &v.slot_bound).sum::<BigUint>();
        check_slot_bound(key, &first.packing, &slot_bound)?;
        let blocks = (0..first.blocks.len())
            .into_par_iter()
            .map(|b| key.sum(vectors.iter().map(|v| &v.blocks[b])))
            .collect();
        Ok(Self {
            slot_bound,
            blocks,
            ..(*first).clone()
        })
    }

    /// Every value times the plaintext `k` (scales add).
    pub fn mul_scalar(&self, key: &PublicKey, k: &Fixed) -> Result<Self, PaillierError> {
        key.encode_signed(&k.value)?;
        let slot_bound = &self.slot_bound * k.value.magnitude();
        check_slot_bound(key, &self.packing, &slot_bound)?;
        let scale = add_scales(self.scale, k.scale)?;
        let blocks = self
            .blocks
            .par_iter()
            .map(|c| key.mul_scalar(c, &k.value))
            .collect();
        Ok(Self {
            len: self.len,
            scale,
            slot_bound,
            packing: self.packing,
            blocks,
        })
    }

    /// `Enc(sum_i x_i v_i)` for a plaintext vector `v` (one scale for all entries), by one
    /// multi-exponentiation. Needs an unpacked vector: packed slots would be summed together.
    pub fn dot(&self, key: &PublicKey, v: &[Fixed]) -> Result<EncryptedNumber, PaillierError> {
        if self.packing.slots() != 1 {
            return Err(PaillierError::Mismatch(Mismatch::Packed {
                what: "a dot product",
            }));
        }
        if v.len() != self.len {
            return Err(PaillierError::Mismatch(Mismatch::Length {
                what: "values",
                len: v.len(),
                against: "encrypted values",
                expected: self.len,
            }));
        }
        let scale = add_scales(self.scale, common_scale(v)?)?;
        let weight: BigUint = v.iter().map(|x| x.value.magnitude()).sum();
        let bound = &self.slot_bound * weight;
        let group = vec![self.blocks.iter().collect::<Vec<_>>()];
        let product = signed_products(key, &group, v)?
            .pop()
            .expect("one group, one product");
        EncryptedNumber::from_parts(key, product, scale, bound)
    }

    /// Adds the plaintext integer `values[k]` to slot `k` (at this vector's scale): how the
    /// Center masks a sum before the key holder decrypts it.
    pub fn add_plain(&self, key: &PublicKey, values: &[BigInt]) -> Result<Self, PaillierError> {
        if values.len() != self.len {
            return Err(PaillierError::Mismatch(Mismatch::Length {
                what: "plaintexts",
                len: values.len(),
                against: "encrypted values",
                expected: self.len,
            }));
        }
        let largest = values.iter().map(BigInt::magnitude).max().cloned();
        let slot_bound = &self.slot_bound + largest.unwrap_or_default();
        check_slot_bound(key, &self.packing, &slot_bound)?;
        let blocks = values
            .chunks(self.packing.slots())
            .zip(&self.blocks)
            .map(|(chunk, c)| {
                let packed = key.encode_signed(&self.packing.pack(key, chunk)?)?;
                Ok(key.add_plain(c, &packed))
            })
            .collect::<Result<Vec<_>, PaillierError>>()?;
        Ok(Self {
            slot_bound,
            blocks,
            ..self.clone()
        })
    }

    /// A one-value unpacked vector holding an encrypted number.
    pub fn from_number(key: &PublicKey, x: &EncryptedNumber) -> Self {
        Self {
            len: 1,
            scale: x.scale(),
            slot_bound: x.bound().clone(),
            packing: Packing::unpacked(key),
            blocks: vec![x.ciphertext().clone()],
        }
    }

    /// The same vector with a smaller public bound that the caller knows from elsewhere (a value
    /// that left a garbled circuit as a fixed-width word, then was masked and unmasked).
    pub fn assume_slot_bound(&self, bound: BigUint) -> Self {
        Self {
            slot_bound: bound,
            ..self.clone()
        }
    }

    /// The same values under fresh randomness, before the vector leaves a party.
    pub fn rerandomized<S: NoiseSource>(&self, key: &PublicKey, source: &S) -> Self {
        let blocks = key.rerandomize_all(&self.blocks, source);
        Self {
            blocks,
            ..self.clone()
        }
    }

    /// Wire bytes: `"PLEV"`, version (u16), then [`Self::write_body`].
    pub fn to_bytes(&self, key: &PublicKey) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(VECTOR_MAGIC);
        out.extend_from_slice(&TENSOR_FORMAT_VERSION.to_be_bytes());
        self.write_body(key, &mut out);
        out
    }

    /// Reads [`Self::to_bytes`] output, checking every length against the key before
    /// allocating and refusing trailing bytes.
    pub fn from_bytes(key: &PublicKey, bytes: &[u8]) -> Result<Self, PaillierError> {
        let mut reader = Reader::new(bytes, VECTOR_MAGIC)?;
        let v = Self::read_body(key, &mut reader)?;
        reader.finish()?;
        Ok(v)
    }

    /// Body: len (u64), scale (u32), slot bits (u32), slots (u32), bound (u32 length + bytes),
    /// then `ceil(len / slots)` ciphertexts of exactly `key.ciphertext_bytes()` bytes each.
    fn write_body(&self, key: &PublicKey, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.len as u64).to_be_bytes());
        out.extend_from_slice(&self.scale.to_be_bytes());
        out.extend_from_slice(&self.packing.slot_bits().to_be_bytes());
        out.extend_from_slice(&(self.packing.slots() as u32).to_be_bytes());
        let bound = self.slot_bound.to_bytes_be();
        out.extend_from_slice(&(bound.len() as u32).to_be_bytes());
        out.extend_from_slice(&bound);
        for c in &self.blocks {
            out.extend_from_slice(&c.to_bytes(key));
        }
    }

    fn read_body(key: &PublicKey, reader: &mut Reader<'_>) -> Result<Self, PaillierError> {
        let len = reader.u64()?;
        if len > MAX_WIRE_LEN {
            return Err(PaillierError::Format(Malformed::Value {
                what: "vector length",
                value: len,
            }));
        }
        let scale = reader.u32()?;
        check_scale(scale)?;
        let slot_bits = reader.u32()?;
        let slots = reader.u32()? as usize;
        let packing = if slots == 1 && u64::from(slot_bits) == key.bits() {
            Packing::unpacked(key)
        } else {
            Packing::new(key, slot_bits)?
        };
        if packing.slots() != slots {
            return Err(PaillierError::Format(Malformed::Slots { slots, slot_bits }));
        }
        let bound_len = reader.u32()? as u64;
        if bound_len > key.bits().div_ceil(8) {
            return Err(PaillierError::Format(Malformed::Value {
                what: "bound bytes",
                value: bound_len,
            }));
        }
        let slot_bound = BigUint::from_bytes_be(reader.take(bound_len as usize)?);
        check_slot_bound(key, &packing, &slot_bound)?;
        let count = packing.plaintexts_for(len as usize);
        let size = key.ciphertext_bytes();
        if reader.remaining() < count * size {
            return Err(PaillierError::Format(Malformed::Truncated {
                what: "ciphertexts",
            }));
        }
        let chunks = (0..count)
            .map(|_| reader.take(size))
            .collect::<Result<Vec<_>, _>>()?;
        let blocks = Ciphertext::many_from_bytes(key, chunks)?;
        Ok(Self {
            len: len as usize,
            scale,
            slot_bound,
            packing,
            blocks,
        })
    }
}

/// An encrypted matrix, stored by columns.
#[derive(Debug, Clone, PartialEq)]
pub struct EncryptedMatrix {
    rows: usize,
    columns: Vec<EncryptedVector>,
}

impl EncryptedMatrix {
    /// Encrypts `matrix` at `scale` fractional bits, declaring `|entry| <= max_abs`, each column
    /// packed by `packing`.
    pub fn encrypt_f64<S: NoiseSource>(
        key: &PublicKey,
        matrix: ArrayView2<'_, f64>,
        scale: u32,
        max_abs: f64,
        packing: Packing,
        source: &S,
    ) -> Result<Self, PaillierError> {
        let columns = matrix
            .columns()
            .into_iter()
            .map(|col| {
                let fixed = col
                    .iter()
                    .map(|&v| Fixed::from_f64(v, scale))
                    .collect::<Result<Vec<_>, _>>()?;
                let bound = Fixed::bound_for(max_abs, scale)?;
                EncryptedVector::encrypt(key, &fixed, &bound, packing, source)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            rows: matrix.nrows(),
            columns,
        })
    }

    /// A matrix from its encrypted columns, each of `rows` values.
    pub fn from_columns(rows: usize, columns: Vec<EncryptedVector>) -> Result<Self, PaillierError> {
        if let Some(c) = columns.iter().find(|c| c.len != rows) {
            return Err(PaillierError::Mismatch(Mismatch::Length {
                what: "values in a column",
                len: c.len,
                against: "matrix rows",
                expected: rows,
            }));
        }
        Ok(Self { rows, columns })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.columns.len()
    }

    /// The encrypted columns.
    pub fn columns(&self) -> &[EncryptedVector] {
        &self.columns
    }

    /// Ciphertexts held.
    pub fn ciphertext_count(&self) -> usize {
        self.columns.iter().map(|c| c.blocks.len()).sum()
    }

    /// Decrypts to rows of f64.
    pub fn decrypt_f64(&self, secret: &SecretKey) -> Result<Vec<Vec<f64>>, PaillierError> {
        let cols = self
            .columns
            .iter()
            .map(|c| c.decrypt_f64(secret))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((0..self.rows)
            .map(|r| cols.iter().map(|c| c[r]).collect())
            .collect())
    }

    /// `Enc(M v)` for a plaintext vector `v` (one scale for all entries): for every packed block
    /// of rows, one multi-exponentiation over the columns with exponents `|v_j|`, bases inverted
    /// (all at once) where `v_j < 0`. Blocks run in parallel.
    pub fn mul_vector(
        &self,
        key: &PublicKey,
        v: &[Fixed],
    ) -> Result<EncryptedVector, PaillierError> {
        self.product(key, v, |groups| signed_products(key, groups, v))
    }

    /// The same product by one scalar multiplication per ciphertext and a sum per block: the
    /// baseline [`Self::mul_vector`] is measured against.
    pub fn mul_vector_entrywise(
        &self,
        key: &PublicKey,
        v: &[Fixed],
    ) -> Result<EncryptedVector, PaillierError> {
        self.product(key, v, |groups| {
            Ok(groups
                .par_iter()
                .map(|group| {
                    let terms: Vec<Ciphertext> = group
                        .iter()
                        .zip(v)
                        .map(|(c, x)| key.mul_scalar(c, &x.value))
                        .collect();
                    key.sum(&terms)
                })
                .collect())
        })
    }

    /// `M v` with shape, scale and bound checked: `blocks` maps the ciphertexts of every packed
    /// block of rows (one per column) to the product's blocks.
    fn product(
        &self,
        key: &PublicKey,
        v: &[Fixed],
        blocks: impl FnOnce(&[Vec<&Ciphertext>]) -> Result<Vec<Ciphertext>, PaillierError>,
    ) -> Result<EncryptedVector, PaillierError> {
        if v.len() != self.cols() {
            return Err(PaillierError::Mismatch(Mismatch::Length {
                what: "values",
                len: v.len(),
                against: "matrix columns",
                expected: self.cols(),
            }));
        }
        let first = self
            .columns
            .first()
            .ok_or(PaillierError::Mismatch(Mismatch::Empty {
                what: "matrix columns",
            }))?;
        check_columns_agree(&self.columns)?;
        let v_scale = common_scale(v)?;
        let weight: BigUint = v.iter().map(|x| x.value.magnitude()).sum();
        let slot_bound = self
            .columns
            .iter()
            .map(|c| &c.slot_bound)
            .max()
            .expect("non-empty")
            * weight;
        check_slot_bound(key, &first.packing, &slot_bound)?;
        let scale = add_scales(first.scale, v_scale)?;
        let groups: Vec<Vec<&Ciphertext>> = (0..first.blocks.len())
            .map(|b| self.columns.iter().map(|c| &c.blocks[b]).collect())
            .collect();
        Ok(EncryptedVector {
            len: self.rows,
            scale,
            slot_bound,
            packing: first.packing,
            blocks: blocks(&groups)?,
        })
    }

    /// Wire bytes: `"PLEM"`, version, rows (u64), columns (u64), then each column's vector body.
    pub fn to_bytes(&self, key: &PublicKey) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MATRIX_MAGIC);
        out.extend_from_slice(&TENSOR_FORMAT_VERSION.to_be_bytes());
        out.extend_from_slice(&(self.rows as u64).to_be_bytes());
        out.extend_from_slice(&(self.columns.len() as u64).to_be_bytes());
        for c in &self.columns {
            c.write_body(key, &mut out);
        }
        out
    }

    /// Reads [`Self::to_bytes`] output with the same checks as vectors.
    pub fn from_bytes(key: &PublicKey, bytes: &[u8]) -> Result<Self, PaillierError> {
        let mut reader = Reader::new(bytes, MATRIX_MAGIC)?;
        let rows = reader.u64()?;
        let cols = reader.u64()?;
        if rows > MAX_WIRE_LEN || cols > MAX_WIRE_LEN {
            return Err(PaillierError::Format(Malformed::TooLarge {
                what: "matrix",
                rows,
                cols,
            }));
        }
        let columns = (0..cols)
            .map(|_| EncryptedVector::read_body(key, &mut reader))
            .collect::<Result<Vec<_>, _>>()?;
        if columns.iter().any(|c| c.len as u64 != rows) {
            return Err(PaillierError::Format(Malformed::Ragged));
        }
        check_columns_agree(&columns)?;
        reader.finish()?;
        Ok(Self {
            rows: rows as usize,
            columns,
        })
    }
}

/// For every group of ciphertexts `c_j`, `prod_j c_j^(v_j)` by multi-exponentiation with
/// exponents `|v_j|`; the bases of negative `v_j` are inverted first, across all groups with one
/// modular inversion (Montgomery's trick). Groups run in parallel.
fn signed_products(
    key: &PublicKey,
    groups: &[Vec<&Ciphertext>],
    v: &[Fixed],
) -> Result<Vec<Ciphertext>, PaillierError> {
    let context = key.context();
    let exponents: Vec<Vec<u64>> = v
        .iter()
        .map(|x| x.value.magnitude().to_u64_digits())
        .collect();
    let negative: Vec<bool> = v.iter().map(|x| x.value.sign() == Sign::Minus).collect();
    let to_invert: Vec<_> = groups
        .iter()
        .flat_map(|g| {
            g.iter()
                .zip(&negative)
                .filter(|(_, n)| **n)
                .map(|(c, _)| c.residue().clone())
        })
        .collect();
    let mut inverses = context
        .invert_all(&to_invert)
        .ok_or(PaillierError::InvalidCiphertext)?
        .into_iter();
    let bases: Vec<Vec<Vec<u64>>> = groups
        .iter()
        .map(|g| {
            g.iter()
                .zip(&negative)
                .map(|(c, &neg)| {
                    if neg {
                        inverses.next().expect("one inverse per negative base")
                    } else {
                        c.residue().clone()
                    }
                })
                .collect()
        })
        .collect();
    let limbs: Vec<&[u64]> = exponents.iter().map(Vec::as_slice).collect();
    Ok(bases
        .par_iter()
        .map(|group| {
            let refs: Vec<&Vec<u64>> = group.iter().collect();
            Ciphertext::from_residue(multi_pow(context, &refs, &limbs))
        })
        .collect())
}

/// Refuses columns that differ in length, packing or scale (the products assume they agree).
fn check_columns_agree(columns: &[EncryptedVector]) -> Result<(), PaillierError> {
    if let Some(first) = columns.first()
        && columns
            .iter()
            .any(|c| c.len != first.len || c.packing != first.packing || c.scale != first.scale)
    {
        return Err(PaillierError::Mismatch(Mismatch::Layouts {
            what: "matrix columns",
        }));
    }
    Ok(())
}

/// The scale shared by all values (an error if they differ).
fn common_scale(values: &[Fixed]) -> Result<u32, PaillierError> {
    let scale = values.first().map_or(0, |v| v.scale);
    if values.iter().any(|v| v.scale != scale) {
        return Err(PaillierError::Mismatch(Mismatch::Scales));
    }
    Ok(scale)
}

/// Refuses a slot bound the packing cannot hold.
fn check_slot_bound(
    key: &PublicKey,
    packing: &Packing,
    bound: &BigUint,
) -> Result<(), PaillierError> {
    fits(key, bound)?;
    let max = packing.max_slot(key);
    if bound > &max {
        return Err(PaillierError::Overflow {
            needed_bits: bound.bits(),
            available_bits: max.bits(),
        });
    }
    Ok(())
}

/// A bounds-checked reader over wire bytes.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], magic: &[u8; 4]) -> Result<Self, PaillierError> {
        if bytes.len() < 6 || &bytes[..4] != magic {
            return Err(PaillierError::Format(Malformed::Magic {
                what: "privlogit tensor",
            }));
        }
        let version = u16::from_be_bytes([bytes[4], bytes[5]]);
        if version != TENSOR_FORMAT_VERSION {
            return Err(PaillierError::Format(Malformed::Version {
                what: "tensor format",
                found: version.into(),
                supported: TENSOR_FORMAT_VERSION.into(),
            }));
        }
        Ok(Self { rest: &bytes[6..] })
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], PaillierError> {
        if self.rest.len() < n {
            return Err(PaillierError::Format(Malformed::Truncated {
                what: "tensor",
            }));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, PaillierError> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> Result<u64, PaillierError> {
        Ok(u64::from_be_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn remaining(&self) -> usize {
        self.rest.len()
    }

    fn finish(self) -> Result<(), PaillierError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(PaillierError::Format(Malformed::Trailing {
                what: "tensor",
                bytes: self.rest.len(),
            }))
        }
    }
}
