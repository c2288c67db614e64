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
    Ciphertext, EncryptedMatrix, EncryptedVector, NoiseSource, Packing, PaillierError, PublicKey,
    SecretKey,
};
use crate::secure::wire::{Reader, Writer};

/// An encrypted `rows x cols` matrix packed by columns.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedMatrix {
    rows: usize,
    cols: usize,
    packing: Packing,
    blocks: Vec<Ciphertext>,
}

impl PackedMatrix {
    /// A packed matrix from its ciphertexts (column by column).
    pub fn from_blocks(
        rows: usize,
        cols: usize,
        packing: Packing,
        blocks: Vec<Ciphertext>,
    ) -> Result<Self, PaillierError> {
        if blocks.len() != cols * packing.plaintexts_for(rows) {
            return Err(PaillierError::Mismatch(format!(
                "{} ciphertexts for a {rows} x {cols} matrix of {} slots",
                blocks.len(),
                packing.slots()
            )));
        }
        Ok(Self {
            rows,
            cols,
            packing,
            blocks,
        })
    }

    /// Encrypts `values` (each within the packing's slots), in parallel.
    pub fn encrypt<S: NoiseSource>(
        key: &PublicKey,
        values: &IntMatrix,
        packing: Packing,
        source: &S,
    ) -> Result<Self, PaillierError> {
        let per_column = packing.plaintexts_for(values.rows());
        let plaintexts = (0..values.cols())
            .flat_map(|j| (0..per_column).map(move |b| (j, b)))
            .map(|(j, b)| {
                let start = b * packing.slots();
                let end = (start + packing.slots()).min(values.rows());
                let slots: Vec<BigInt> = (start..end).map(|i| values.get(i, j).clone()).collect();
                key.encode_signed(&packing.pack(key, &slots)?)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let blocks = key.encrypt_all(&plaintexts, source);
        Self::from_blocks(values.rows(), values.cols(), packing, blocks)
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

    /// Ciphertexts per column.
    pub fn blocks_per_column(&self) -> usize {
        self.packing.plaintexts_for(self.rows)
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
                    let count = (self.rows - b * slots).min(slots);
                    let m = key.decode_signed(&plaintexts[j * per_column + b]);
                    column.extend(self.packing.unpack(&m, count));
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
            return Err(PaillierError::Mismatch(format!(
                "adding a {} x {} matrix to a {} x {} one",
                values.rows(),
                values.cols(),
                self.rows,
                self.cols
            )));
        }
        let per_column = self.blocks_per_column();
        let slots = self.packing.slots();
        let blocks = (0..self.blocks.len())
            .into_par_iter()
            .map(|at| {
                let (j, b) = (at / per_column, at % per_column);
                let start = b * slots;
                let end = (start + slots).min(self.rows);
                let chunk: Vec<BigInt> = (start..end).map(|i| values.get(i, j).clone()).collect();
                let packed = key.encode_signed(&self.packing.pack(key, &chunk)?)?;
                Ok(key.add_plain(&self.blocks[at], &packed))
            })
            .collect::<Result<Vec<_>, PaillierError>>()?;
        Ok(Self {
            blocks,
            ..self.clone()
        })
    }

    /// The same plaintexts under fresh randomness (before the matrix goes to the key holder,
    /// who could otherwise read how it was formed from its randomness).
    pub fn rerandomized<S: NoiseSource>(&self, key: &PublicKey, source: &S) -> Self {
        let blocks = self
            .blocks
            .par_iter()
            .map_init(rand::rng, |rng, c| key.rerandomize(c, source, rng))
            .collect();
        Self {
            blocks,
            ..self.clone()
        }
    }

    /// Shape, slot width, then the ciphertexts.
    pub fn write(&self, key: &PublicKey, w: Writer) -> Writer {
        let mut bytes = Vec::with_capacity(self.blocks.len() * key.ciphertext_bytes());
        for c in &self.blocks {
            bytes.extend_from_slice(&c.to_bytes(key));
        }
        w.u64(self.rows as u64)
            .u64(self.cols as u64)
            .u64(u64::from(self.packing.slot_bits()))
            .bytes(&bytes)
    }

    /// Reads what [`Self::write`] wrote, refusing more than `max_entries` entries before
    /// allocating for them.
    pub fn read(
        key: &PublicKey,
        r: &mut Reader<'_>,
        max_entries: usize,
    ) -> Result<Self, PaillierError> {
        let bad = |e: std::io::Error| PaillierError::Format(e.to_string());
        let rows = r.u64().map_err(bad)? as usize;
        let cols = r.u64().map_err(bad)? as usize;
        if rows.checked_mul(cols).is_none_or(|c| c > max_entries) {
            return Err(PaillierError::Format(format!(
                "a packed {rows} x {cols} matrix is too large"
            )));
        }
        let slot_bits = u32::try_from(r.u64().map_err(bad)?)
            .map_err(|_| PaillierError::Format("slot width".into()))?;
        let packing = if u64::from(slot_bits) == key.bits() {
            Packing::unpacked(key)
        } else {
            Packing::new(key, slot_bits)?
        };
        let bytes = r.bytes().map_err(bad)?;
        let size = key.ciphertext_bytes();
        if bytes.len() != cols * packing.plaintexts_for(rows) * size {
            return Err(PaillierError::Format(format!(
                "{} bytes of ciphertexts for a packed {rows} x {cols} matrix",
                bytes.len()
            )));
        }
        let blocks = bytes
            .par_chunks(size)
            .map(|c| Ciphertext::from_bytes(key, c))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_blocks(rows, cols, packing, blocks)
    }
}
