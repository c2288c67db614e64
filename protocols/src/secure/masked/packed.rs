//! Encrypted matrices packed down their columns: column `j` is `ceil(rows / slots)` ciphertexts,
//! slot `i` of block `b` holding row `b * slots + i`. A matrix wanted "packed by rows" is stored
//! as its transpose packed by columns, so one layout serves both orientations.
//!
//! Raising a ciphertext to a scalar multiplies every slot by it, so `Enc(X) R` (plaintext `R`
//! on the right) keeps this layout ([`super::cross`]); that is why a product's left operand is
//! wanted packed by columns and its right operand packed by rows.

use num_bigint::BigInt;
use rayon::prelude::*;

use super::matrix::IntMatrix;
use num_bigint::BigUint;

use crate::paillier::{
    Ciphertext, EncryptedMatrix, EncryptedVector, Malformed, Mismatch, NoiseSource, Packing,
    PaillierError, PublicKey, SecretKey,
};
use crate::secure::wire::{Reader, Writer};

/// An encrypted `rows x cols` matrix packed by columns, row 0 in slot `offset` (0 unless the
/// whole column fits after it in one plaintext; see [`super::layout`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PackedMatrix {
    rows: usize,
    cols: usize,
    packing: Packing,
    offset: usize,
    blocks: Vec<Ciphertext>,
}

/// The packing of `slot_bits`-bit slots under `key` (unpacked when the slot is the whole
/// plaintext).
pub fn packing_of(key: &PublicKey, slot_bits: u32) -> Result<Packing, PaillierError> {
    if u64::from(slot_bits) == key.bits() {
        Ok(Packing::unpacked(key))
    } else {
        Packing::new(key, slot_bits)
    }
}

/// The packing of `slot_bits`-bit slots to repack one-value ciphertexts into, or `None` when
/// they are packed already (`current`) or no two such slots fit a plaintext.
pub fn repacking(key: &PublicKey, current: Packing, slot_bits: u32) -> Option<Packing> {
    Packing::new(key, slot_bits)
        .ok()
        .filter(|p| p.slots() > 1 && current.slots() == 1)
}

/// One-value ciphertexts, column after column of `rows`, packed column by column into
/// blocks of `packing.slots()` (in parallel).
pub fn pack_columns(
    key: &PublicKey,
    values: &[Ciphertext],
    rows: usize,
    packing: Packing,
) -> Vec<Ciphertext> {
    let chunks: Vec<&[Ciphertext]> = values
        .chunks(rows.max(1))
        .flat_map(|column| column.chunks(packing.slots()))
        .collect();
    chunks
        .par_iter()
        .map(|chunk| key.pack(chunk, packing.slot_bits()))
        .collect()
}

/// Writes ciphertexts back to back (their count is the reader's to know).
pub fn write_ciphertexts(key: &PublicKey, blocks: &[Ciphertext], w: Writer) -> Writer {
    let mut bytes = Vec::with_capacity(blocks.len() * key.ciphertext_bytes());
    for c in blocks {
        bytes.extend_from_slice(&c.to_bytes(key));
    }
    w.bytes(&bytes)
}

/// Reads exactly `count` ciphertexts written by [`write_ciphertexts`], checking the length
/// before parsing any.
pub fn read_ciphertexts(
    key: &PublicKey,
    r: &mut Reader<'_>,
    count: usize,
) -> Result<Vec<Ciphertext>, PaillierError> {
    let bytes = r
        .bytes()
        .map_err(|e| PaillierError::Format(Malformed::Read(e)))?;
    let size = key.ciphertext_bytes();
    if bytes.len() != count * size {
        return Err(PaillierError::Format(Malformed::Ciphertexts {
            bytes: bytes.len(),
            count,
        }));
    }
    Ciphertext::many_from_bytes(key, bytes.chunks(size))
}

impl PackedMatrix {
    /// A packed matrix from its ciphertexts (column by column).
    pub fn from_blocks(
        rows: usize,
        cols: usize,
        packing: Packing,
        blocks: Vec<Ciphertext>,
    ) -> Result<Self, PaillierError> {
        Self::from_blocks_at(rows, cols, packing, 0, blocks)
    }

    /// A packed matrix whose columns start at slot `offset` (one plaintext per column).
    pub fn from_blocks_at(
        rows: usize,
        cols: usize,
        packing: Packing,
        offset: usize,
        blocks: Vec<Ciphertext>,
    ) -> Result<Self, PaillierError> {
        if offset > 0 && offset + rows > packing.slots() {
            return Err(PaillierError::Mismatch(Mismatch::SlotRows {
                rows,
                offset,
                slots: packing.slots(),
            }));
        }
        let me = Self {
            rows,
            cols,
            packing,
            offset,
            blocks: Vec::new(),
        };
        if blocks.len() != cols * me.blocks_per_column() {
            return Err(PaillierError::Mismatch(Mismatch::Blocks {
                blocks: blocks.len(),
                rows,
                cols,
                slots: packing.slots(),
            }));
        }
        Ok(Self { blocks, ..me })
    }

    /// Encrypts `values` (each within the packing's slots), in parallel.
    pub fn encrypt<S: NoiseSource>(
        key: &PublicKey,
        values: &IntMatrix,
        packing: Packing,
        source: &S,
    ) -> Result<Self, PaillierError> {
        Self::encrypt_at(key, values, packing, 0, source)
    }

    /// Encrypts `values` with every column starting at slot `offset`.
    pub fn encrypt_at<S: NoiseSource>(
        key: &PublicKey,
        values: &IntMatrix,
        packing: Packing,
        offset: usize,
        source: &S,
    ) -> Result<Self, PaillierError> {
        let shape = Self::from_blocks_at(values.rows(), 0, packing, offset, Vec::new())?;
        let plaintexts = (0..values.cols())
            .flat_map(|j| (0..shape.blocks_per_column()).map(move |b| (j, b)))
            .map(|(j, b)| key.encode_signed(&shape.pack_block(key, values, j, b)?))
            .collect::<Result<Vec<_>, _>>()?;
        let blocks = key.encrypt_all(&plaintexts, source);
        Self::from_blocks_at(values.rows(), values.cols(), packing, offset, blocks)
    }

    /// Block `b` of column `j` of `values` as one packed plaintext.
    fn pack_block(
        &self,
        key: &PublicKey,
        values: &IntMatrix,
        j: usize,
        b: usize,
    ) -> Result<BigInt, PaillierError> {
        let start = b * self.packing.slots();
        let end = (start + self.packing.slots() - self.offset).min(self.rows);
        let mut slots = vec![BigInt::from(0); self.offset];
        slots.extend((start..end).map(|i| values.get(i, j).clone()));
        self.packing.pack(key, &slots)
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The slot layout.
    pub fn packing(&self) -> Packing {
        self.packing
    }

    /// The slot of row 0.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Ciphertexts per column.
    pub fn blocks_per_column(&self) -> usize {
        if self.offset > 0 {
            1
        } else {
            self.packing.plaintexts_for(self.rows)
        }
    }

    /// Every ciphertext, column by column.
    pub fn blocks(&self) -> &[Ciphertext] {
        &self.blocks
    }

    /// Block `b` of column `j`.
    pub fn block(&self, j: usize, b: usize) -> &Ciphertext {
        &self.blocks[j * self.blocks_per_column() + b]
    }

    /// The same ciphertexts as an [`EncryptedMatrix`] of values at `scale` fractional bits,
    /// each below `bound` (what the Nodes multiply their gradients into).
    pub fn to_encrypted_matrix(
        &self,
        key: &PublicKey,
        scale: u32,
        bound: BigUint,
    ) -> Result<EncryptedMatrix, PaillierError> {
        if self.offset != 0 {
            return Err(PaillierError::Mismatch(Mismatch::Offset));
        }
        let per_column = self.blocks_per_column();
        let columns = self
            .blocks
            .chunks(per_column)
            .map(|blocks| {
                EncryptedVector::from_parts(
                    key,
                    self.rows,
                    scale,
                    bound.clone(),
                    self.packing,
                    blocks.to_vec(),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        EncryptedMatrix::from_columns(self.rows, columns)
    }

    /// Decrypts every slot (in parallel).
    pub fn decrypt(&self, secret: &SecretKey) -> Result<IntMatrix, PaillierError> {
        let key = secret.public_key();
        let plaintexts = secret.decrypt_all(&self.blocks)?;
        let per_column = self.blocks_per_column();
        let slots = self.packing.slots();
        let columns: Vec<Vec<BigInt>> = (0..self.cols)
            .into_par_iter()
            .map(|j| {
                let mut column = Vec::with_capacity(self.rows);
                for b in 0..per_column {
                    let count = (self.rows - b * slots).min(slots - self.offset);
                    let m = key.decode_signed(&plaintexts[j * per_column + b]);
                    let unpacked = self.packing.unpack(&m, self.offset + count);
                    column.extend(unpacked.into_iter().skip(self.offset));
                }
                column
            })
            .collect();
        Ok(IntMatrix::from_fn(self.rows, self.cols, |i, j| {
            columns[j][i].clone()
        }))
    }

    /// Adds the plaintext `values[i][j]` to every slot (no fresh randomness).
    pub fn add_plain(&self, key: &PublicKey, values: &IntMatrix) -> Result<Self, PaillierError> {
        if values.rows() != self.rows || values.cols() != self.cols {
            return Err(PaillierError::Mismatch(Mismatch::Shapes {
                left: (values.rows(), values.cols()),
                right: (self.rows, self.cols),
            }));
        }
        let per_column = self.blocks_per_column();
        let blocks = (0..self.blocks.len())
            .into_par_iter()
            .map(|at| {
                let (j, b) = (at / per_column, at % per_column);
                let packed = key.encode_signed(&self.pack_block(key, values, j, b)?)?;
                Ok(key.add_plain(&self.blocks[at], &packed))
            })
            .collect::<Result<Vec<_>, PaillierError>>()?;
        Ok(Self {
            blocks,
            ..self.clone()
        })
    }

    /// A one-value-per-ciphertext matrix whose entries all lie in `(-2^(w-1), 2^(w-1))`, packed
    /// `w` bits a slot under encryption (see [`PublicKey::pack`]), so that the key holder
    /// decrypts a few ciphertexts instead of one per entry. Unchanged when already packed or
    /// when no two slots of `w` bits fit a plaintext.
    pub fn packed_to(&self, key: &PublicKey, slot_bits: u32) -> Result<Self, PaillierError> {
        let Some(packing) = repacking(key, self.packing, slot_bits) else {
            return Ok(self.clone());
        };
        let blocks = pack_columns(key, &self.blocks, self.rows, packing);
        Self::from_blocks(self.rows, self.cols, packing, blocks)
    }

    /// The same plaintexts under fresh randomness (before the matrix goes to the key holder,
    /// who could otherwise read how it was formed from its randomness).
    pub fn rerandomized<S: NoiseSource>(&self, key: &PublicKey, source: &S) -> Self {
        let blocks = key.rerandomize_all(&self.blocks, source);
        Self {
            blocks,
            ..self.clone()
        }
    }

    /// Shape, slot width, offset, then the ciphertexts.
    pub fn write(&self, key: &PublicKey, w: Writer) -> Writer {
        let w = w
            .u64(self.rows as u64)
            .u64(self.cols as u64)
            .u64(u64::from(self.packing.slot_bits()))
            .u64(self.offset as u64);
        write_ciphertexts(key, &self.blocks, w)
    }

    /// Reads what [`Self::write`] wrote, refusing more than `max_entries` entries before
    /// allocating for them.
    pub fn read(
        key: &PublicKey,
        r: &mut Reader<'_>,
        max_entries: usize,
    ) -> Result<Self, PaillierError> {
        let bad = |e: std::io::Error| PaillierError::Format(Malformed::Read(e));
        let rows = r.u64().map_err(bad)? as usize;
        let cols = r.u64().map_err(bad)? as usize;
        if rows.checked_mul(cols).is_none_or(|c| c > max_entries) {
            return Err(PaillierError::Format(Malformed::TooLarge {
                what: "packed matrix",
                rows: rows as u64,
                cols: cols as u64,
            }));
        }
        let width = r.u64().map_err(bad)?;
        let slot_bits = u32::try_from(width).map_err(|_| {
            PaillierError::Format(Malformed::Value {
                what: "slot width (bits)",
                value: width,
            })
        })?;
        let packing = packing_of(key, slot_bits)?;
        let offset = r.u64().map_err(bad)?;
        if offset >= packing.slots() as u64 {
            return Err(PaillierError::Format(Malformed::Value {
                what: "slot offset",
                value: offset,
            }));
        }
        let shape = Self::from_blocks_at(rows, 0, packing, offset as usize, Vec::new())?;
        let blocks = read_ciphertexts(key, r, cols * shape.blocks_per_column())?;
        Self::from_blocks_at(rows, cols, packing, offset as usize, blocks)
    }
}
