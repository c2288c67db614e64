//! Dense integer matrices: the key holder's views and the aggregator's masks. Entries are
//! fixed-point integers (value times `2^frac`) of any width.

use std::io;

use num_bigint::{BigInt, Sign};
use num_traits::{Signed, Zero};

use crate::secure::wire::{Reader, Writer};

/// A row-major matrix of integers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntMatrix {
    rows: usize,
    cols: usize,
    data: Vec<BigInt>,
}

impl IntMatrix {
    /// The `rows x cols` zero matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            data: vec![BigInt::zero(); rows * cols],
        }
    }

    /// A matrix from its entries, row by row.
    ///
    /// # Panics
    /// If `data` does not have `rows * cols` entries (a bug in the caller).
    pub fn from_vec(rows: usize, cols: usize, data: Vec<BigInt>) -> Self {
        assert_eq!(data.len(), rows * cols, "{rows} x {cols} entries");
        Self { rows, cols, data }
    }

    /// A matrix whose entry `(i, j)` is `f(i, j)`.
    pub fn from_fn(rows: usize, cols: usize, mut f: impl FnMut(usize, usize) -> BigInt) -> Self {
        let mut data = Vec::with_capacity(rows * cols);
        for i in 0..rows {
            for j in 0..cols {
                data.push(f(i, j));
            }
        }
        Self { rows, cols, data }
    }

    /// The symmetric `d x d` matrix whose lower triangle is `lower` (row by row, `j <= i`).
    pub fn from_lower(d: usize, lower: &[BigInt]) -> Self {
        assert_eq!(lower.len(), d * (d + 1) / 2, "a lower triangle of {d}");
        Self::from_fn(d, d, |i, j| {
            let (a, b) = (i.max(j), i.min(j));
            lower[a * (a + 1) / 2 + b].clone()
        })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Entry `(i, j)`.
    pub fn get(&self, i: usize, j: usize) -> &BigInt {
        &self.data[i * self.cols + j]
    }

    /// Sets entry `(i, j)`.
    pub fn set(&mut self, i: usize, j: usize, v: BigInt) {
        self.data[i * self.cols + j] = v;
    }

    /// The entries, row by row.
    pub fn data(&self) -> &[BigInt] {
        &self.data
    }

    /// Column `j`, top to bottom.
    pub fn column(&self, j: usize) -> Vec<BigInt> {
        (0..self.rows).map(|i| self.get(i, j).clone()).collect()
    }

    /// The block of `rows x cols` starting at `(r0, c0)`.
    pub fn slice(&self, r0: usize, c0: usize, rows: usize, cols: usize) -> Self {
        assert!(
            r0 + rows <= self.rows && c0 + cols <= self.cols,
            "block inside"
        );
        Self::from_fn(rows, cols, |i, j| self.get(r0 + i, c0 + j).clone())
    }

    /// The transpose.
    pub fn transpose(&self) -> Self {
        Self::from_fn(self.cols, self.rows, |i, j| self.get(j, i).clone())
    }

    /// `sum_k sign_k M_k + offset` entry by entry (all of one shape).
    pub fn combine(terms: &[(&IntMatrix, bool)], offset: &BigInt) -> Self {
        let first = terms.first().expect("at least one term").0;
        assert!(
            terms
                .iter()
                .all(|(m, _)| m.rows == first.rows && m.cols == first.cols),
            "terms of one shape"
        );
        let data = (0..first.data.len())
            .map(|k| {
                let mut v = offset.clone();
                for (m, negate) in terms {
                    if *negate {
                        v -= &m.data[k];
                    } else {
                        v += &m.data[k];
                    }
                }
                v
            })
            .collect();
        Self {
            rows: first.rows,
            cols: first.cols,
            data,
        }
    }

    /// A matrix made of blocks placed at `(row, col)` offsets (transposed first when asked);
    /// the blocks must tile the `rows x cols` result exactly.
    pub fn assemble(rows: usize, cols: usize, blocks: &[(&IntMatrix, usize, usize, bool)]) -> Self {
        let mut out: Vec<Option<BigInt>> = vec![None; rows * cols];
        for (block, r0, c0, transpose) in blocks {
            let (br, bc) = if *transpose {
                (block.cols, block.rows)
            } else {
                (block.rows, block.cols)
            };
            assert!(r0 + br <= rows && c0 + bc <= cols, "block inside");
            for i in 0..br {
                for j in 0..bc {
                    let v = if *transpose {
                        block.get(j, i)
                    } else {
                        block.get(i, j)
                    };
                    let slot = &mut out[(r0 + i) * cols + c0 + j];
                    assert!(slot.is_none(), "blocks overlap");
                    *slot = Some(v.clone());
                }
            }
        }
        let data = out
            .into_iter()
            .map(|v| v.expect("blocks tile the matrix"))
            .collect();
        Self { rows, cols, data }
    }

    /// `floor(x / 2^bits)` of every entry.
    pub fn floor_shift(&self, bits: u32) -> Self {
        Self {
            rows: self.rows,
            cols: self.cols,
            data: self.data.iter().map(|v| floor_shift(v, bits)).collect(),
        }
    }

    /// Bits of the largest magnitude (0 for the zero matrix).
    pub fn max_bits(&self) -> u64 {
        self.data.iter().map(|v| v.bits()).max().unwrap_or(0)
    }

    /// Writes the shape and the entries (sign and magnitude each).
    pub fn write(&self, w: Writer) -> Writer {
        let mut w = w.u64(self.rows as u64).u64(self.cols as u64);
        let mut bytes = Vec::new();
        for v in &self.data {
            write_int(v, &mut bytes);
        }
        w = w.bytes(&bytes);
        w
    }

    /// Reads what [`Self::write`] wrote, refusing more than `max_entries` entries or entries
    /// wider than `max_bits` before allocating for them.
    pub fn read(r: &mut Reader<'_>, max_entries: usize, max_bits: u64) -> io::Result<Self> {
        let rows = r.u64()? as usize;
        let cols = r.u64()? as usize;
        let count = rows
            .checked_mul(cols)
            .filter(|&c| c <= max_entries)
            .ok_or_else(|| invalid(format!("a {rows} x {cols} integer matrix is too large")))?;
        let bytes = r.bytes()?;
        let mut at = 0;
        let mut data = Vec::with_capacity(count);
        for _ in 0..count {
            data.push(read_int(bytes, &mut at, max_bits)?);
        }
        if at != bytes.len() {
            return Err(invalid("trailing bytes after an integer matrix".into()));
        }
        Ok(Self { rows, cols, data })
    }
}

/// `floor(x / 2^bits)` (towards minus infinity, as an arithmetic shift).
pub fn floor_shift(x: &BigInt, bits: u32) -> BigInt {
    // BigInt's >> rounds towards minus infinity for negative values.
    x >> bits
}

/// `2^bits`.
pub fn pow2(bits: u32) -> BigInt {
    BigInt::from(1u8) << bits
}

/// One byte of sign (0 non-negative, 1 negative), a u16 length, the magnitude big-endian.
fn write_int(v: &BigInt, out: &mut Vec<u8>) {
    let (sign, magnitude) = v.to_bytes_be();
    out.push(u8::from(sign == Sign::Minus));
    let magnitude = if v.is_zero() { Vec::new() } else { magnitude };
    out.extend_from_slice(&(magnitude.len() as u16).to_le_bytes());
    out.extend_from_slice(&magnitude);
}

fn read_int(bytes: &[u8], at: &mut usize, max_bits: u64) -> io::Result<BigInt> {
    let head = bytes
        .get(*at..*at + 3)
        .ok_or_else(|| invalid("truncated integer".into()))?;
    let negative = match head[0] {
        0 => false,
        1 => true,
        _ => return Err(invalid("bad integer sign".into())),
    };
    let len = u16::from_le_bytes([head[1], head[2]]) as usize;
    if (len as u64) * 8 > max_bits + 8 {
        return Err(invalid(format!(
            "an integer of {len} bytes, above {max_bits} bits"
        )));
    }
    let start = *at + 3;
    let magnitude = bytes
        .get(start..start + len)
        .ok_or_else(|| invalid("truncated integer".into()))?;
    *at = start + len;
    let v = BigInt::from_bytes_be(Sign::Plus, magnitude);
    if v.bits() > max_bits {
        return Err(invalid(format!("an integer above {max_bits} bits")));
    }
    Ok(if negative { -v } else { v })
}

/// True when every entry is below `2^bits` in magnitude.
pub fn within_bits(values: &[BigInt], bits: u64) -> bool {
    values.iter().all(|v| v.abs().bits() <= bits)
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(rows: usize, cols: usize, values: &[i64]) -> IntMatrix {
        IntMatrix::from_vec(
            rows,
            cols,
            values.iter().map(|&v| BigInt::from(v)).collect(),
        )
    }

    #[test]
    fn blocks_round_trip() {
        let a = m(3, 3, &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let top = a.slice(0, 0, 1, 3);
        let bottom_left = a.slice(1, 0, 2, 1);
        let bottom_right = a.slice(1, 1, 2, 2);
        let again = IntMatrix::assemble(
            3,
            3,
            &[
                (&top, 0, 0, false),
                (&bottom_left, 1, 0, false),
                (&bottom_right, 1, 1, false),
            ],
        );
        assert_eq!(again, a);
        assert_eq!(a.transpose().transpose(), a);
        assert_eq!(a.transpose().get(0, 2), &BigInt::from(7));
    }

    #[test]
    fn wire_round_trip_and_bounds() {
        let a = m(2, 2, &[-5, 0, i64::MAX, i64::MIN]);
        let bytes = a.write(Writer::new()).finish();
        let mut r = Reader::new(&bytes);
        assert_eq!(IntMatrix::read(&mut r, 4, 64).expect("reads"), a);
        let mut r = Reader::new(&bytes);
        assert!(IntMatrix::read(&mut r, 3, 64).is_err(), "entry count bound");
        let mut r = Reader::new(&bytes);
        assert!(IntMatrix::read(&mut r, 4, 32).is_err(), "width bound");
    }

    #[test]
    fn floor_shift_rounds_down() {
        assert_eq!(floor_shift(&BigInt::from(-5), 1), BigInt::from(-3));
        assert_eq!(floor_shift(&BigInt::from(5), 1), BigInt::from(2));
        assert_eq!(floor_shift(&BigInt::from(-4), 2), BigInt::from(-1));
    }
}
