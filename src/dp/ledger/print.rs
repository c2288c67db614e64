//! How the ledger knows a data set: by its rows, not by its file's bytes. A reordered copy, a
//! copy with CRLF line endings or `17.990` for `17.99`, a binary or Parquet copy, or the same
//! arrays handed over from Python are one data set; a file that shares most of its rows with a
//! charged one, or most of whose rows it holds, is recognised as that data set.
//!
//! - A value is canonical before anything is hashed: rounded to 6 decimals, then to 5
//!   significant digits, so a copy rounded to 6 decimals, saved as float32 or written with 15
//!   significant digits (R's `write.csv`) has the same values; `-0.0` is `0.0`.
//! - A row's exact print is its label and its canonical values, sorted (so the order of the
//!   columns does not matter, and no column names are needed), under a keyed hash
//!   (HMAC-SHA256 under the ledger's secret key: the ledger stays on the data owner's machine,
//!   but its hashes of single rows must not be open to a dictionary of guessed rows). The data
//!   set's digest adds the exact prints up, four 64-bit lanes each (a multiset hash:
//!   order-independent, duplicates counted), with the row count: the account's name.
//! - A row's sketch print leaves the label out (a label recoded as `1 - y` is the same people)
//!   and keeps only its three values that come first under a fixed hash of the value, among
//!   those that are not small integers (codes, counts, flags, which many rows share): a column
//!   added (an id), dropped or rescaled changes the print of the rows whose chosen values it
//!   touches only (about `6 / p` of them for `p` columns). A row with fewer than three such values
//!   is printed whole.
//! - The sketch keeps the 256 smallest distinct sketch prints (a bottom-k sketch, Broder 1997):
//!   two sketches estimate what share of one data set's rows the other holds, within about
//!   6 % (1 / sqrt(256)), exactly when a data set has at most 256 distinct rows.

use std::collections::BTreeSet;
use std::path::Path;

use hmac::{Hmac, Mac};
use ndarray::{ArrayView1, ArrayView2};
use privlogit_protocols::rows::{RowSource, RowsError};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::ledger_error::LedgerError;
use crate::data::{self, LoadOptions};

/// The row hashes a sketch keeps.
pub const SKETCH: usize = 256;

/// The share of a new data set's rows that must be in a charged one for the new one to be
/// charged as that one ("most of its rows").
pub const SAME_PEOPLE: f64 = 0.5;

type HmacSha256 = Hmac<Sha256>;

/// The ledger's secret key, in two parts derived from the key file's secret: one for the row
/// hashes, one for the ledger's MAC.
pub struct LedgerKey {
    rows: HmacSha256,
    mac: Zeroizing<[u8; 32]>,
}

impl std::fmt::Debug for LedgerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LedgerKey(..)")
    }
}

impl LedgerKey {
    /// The key of the key file's 32-byte `secret`.
    pub fn from_secret(secret: &[u8; 32]) -> Self {
        let derive = |purpose: &[u8]| -> Zeroizing<[u8; 32]> {
            let mut h = HmacSha256::new_from_slice(secret).expect("any key length");
            h.update(purpose);
            Zeroizing::new(h.finalize().into_bytes().into())
        };
        let rows = derive(b"privlogit ledger rows v1");
        Self {
            rows: HmacSha256::new_from_slice(rows.as_slice()).expect("any key length"),
            mac: derive(b"privlogit ledger mac v1"),
        }
    }

    /// The MAC of `bytes` (the ledger's contents).
    pub(crate) fn mac(&self, bytes: &[u8]) -> [u8; 32] {
        let mut h = HmacSha256::new_from_slice(self.mac.as_slice()).expect("any key length");
        h.update(bytes);
        h.finalize().into_bytes().into()
    }

    /// Whether `tag` is the MAC of `bytes` (compared in constant time).
    pub(crate) fn verify(&self, bytes: &[u8], tag: &[u8]) -> bool {
        let mut h = HmacSha256::new_from_slice(self.mac.as_slice()).expect("any key length");
        h.update(bytes);
        h.verify_slice(tag).is_ok()
    }

    /// A printer for one data set's rows.
    pub fn printer(&self) -> Printer<'_> {
        Printer {
            key: self,
            lanes: [0; 4],
            rows: 0,
            sketch: BTreeSet::new(),
            values: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// The print of the rows of `x` with labels `y`.
    pub fn print_rows(&self, x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>) -> DataPrint {
        let mut p = self.printer();
        for (row, &label) in x.rows().into_iter().zip(y) {
            p.add(label, row.iter().copied());
        }
        p.finish()
    }

    /// The print of a row source's rows (one pass, a chunk at a time).
    pub fn print_source(&self, source: &dyn RowSource) -> Result<DataPrint, RowsError> {
        let mut p = self.printer();
        source.scan(&mut |x, y| {
            for (row, &label) in x.rows().into_iter().zip(y) {
                p.add(label, row.iter().copied());
            }
            Ok(())
        })?;
        Ok(p.finish())
    }

    /// The print of a data file's rows as `options` read them (CSV, binary or Parquet,
    /// streamed).
    pub fn print_file(&self, path: &Path, options: &LoadOptions) -> Result<DataPrint, LedgerError> {
        let source =
            data::stream::open(path, options).map_err(|e| LedgerError::Data(e.to_string()))?;
        self.print_source(source.as_ref())
            .map_err(|e| LedgerError::Data(e.to_string()))
    }
}

/// The values of a row its sketch print keeps (see the module).
const CHOSEN: usize = 3;

/// A value as the ledger compares it: `(mantissa, exponent)` with `v` about `m 10^e`, `m` of
/// at most 5 digits, after rounding to 6 decimals (`(0, 0)` for zero; non-finite values keep
/// their bits).
fn canonical(v: f64) -> (i64, i32) {
    if !v.is_finite() {
        return (v.to_bits() as i64, i32::MAX);
    }
    let r = (v * 1e6).round() / 1e6;
    if r == 0.0 {
        return (0, 0);
    }
    let mut e = r.abs().log10().floor() as i32 - 4;
    let mut m = (r / 10f64.powi(e)).round() as i64;
    if m.abs() >= 100_000 {
        m /= 10;
        e += 1;
    }
    while m != 0 && m % 10 == 0 {
        m /= 10;
        e += 1;
    }
    (m, e)
}

/// A small integer (a code, count or flag, which many rows share): not a row's distinctive
/// value.
fn common(value: (i64, i32)) -> bool {
    let (m, e) = value;
    (0..=2).contains(&e) && m.abs() * 10i64.pow(e as u32) < 1000
}

/// A fixed, unkeyed mix of a canonical value (splitmix64): which values a row's sketch print
/// keeps. The print itself is keyed.
fn order_of(value: (i64, i32)) -> u64 {
    let mut z = (value.0 as u64) ^ (u64::from(value.1 as u32) << 40) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Rows going into one [`DataPrint`].
pub struct Printer<'k> {
    key: &'k LedgerKey,
    lanes: [u64; 4],
    rows: u64,
    sketch: BTreeSet<u64>,
    values: Vec<(i64, i32)>,
    bytes: Vec<u8>,
}

impl Printer<'_> {
    /// The keyed hash of `values` (and `label`, when given), in the given order.
    fn keyed(&mut self, label: Option<(i64, i32)>, values: &[(i64, i32)]) -> [u8; 32] {
        self.bytes.clear();
        if let Some((m, e)) = label {
            self.bytes.push(1);
            self.bytes.extend_from_slice(&m.to_le_bytes());
            self.bytes.extend_from_slice(&e.to_le_bytes());
        } else {
            self.bytes.push(0);
        }
        self.bytes
            .extend_from_slice(&(values.len() as u64).to_le_bytes());
        for (m, e) in values {
            self.bytes.extend_from_slice(&m.to_le_bytes());
            self.bytes.extend_from_slice(&e.to_le_bytes());
        }
        let mut h = self.key.rows.clone();
        h.update(&self.bytes);
        h.finalize().into_bytes().into()
    }

    /// Adds one row.
    pub fn add(&mut self, label: f64, features: impl Iterator<Item = f64>) {
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        values.extend(features.map(canonical));
        values.sort_unstable();
        let hash = self.keyed(Some(canonical(label)), &values);
        for (lane, chunk) in self.lanes.iter_mut().zip(hash.chunks_exact(8)) {
            *lane = lane.wrapping_add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        self.rows += 1;
        // The sketch print: the row's chosen distinctive values, or the whole row.
        let mut chosen: Vec<(u64, (i64, i32))> = values
            .iter()
            .filter(|&&v| !common(v))
            .map(|&v| (order_of(v), v))
            .collect();
        chosen.sort_unstable();
        chosen.dedup();
        let print = if chosen.len() >= CHOSEN {
            let picked: Vec<(i64, i32)> = chosen[..CHOSEN].iter().map(|&(_, v)| v).collect();
            self.keyed(None, &picked)
        } else {
            self.keyed(None, &values)
        };
        self.values = values;
        let first = u64::from_le_bytes(print[..8].try_into().expect("8 bytes"));
        let full = self.sketch.len() >= SKETCH;
        if !full || self.sketch.last().is_some_and(|&max| first < max) {
            self.sketch.insert(first);
            if self.sketch.len() > SKETCH {
                self.sketch.pop_last();
            }
        }
    }

    /// The print of the rows added.
    pub fn finish(self) -> DataPrint {
        let mut h = Sha256::new();
        h.update(b"privlogit data set v1\0");
        h.update(self.rows.to_le_bytes());
        for lane in self.lanes {
            h.update(lane.to_le_bytes());
        }
        DataPrint {
            digest: h.finalize().into(),
            rows: self.rows,
            sketch: self.sketch.into_iter().collect(),
        }
    }
}

/// A data set as one ledger knows it (keyed with that ledger's key: prints of two ledgers do
/// not compare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataPrint {
    digest: [u8; 32],
    rows: u64,
    /// The smallest distinct row hashes (first lanes), ascending.
    sketch: Vec<u64>,
}

impl DataPrint {
    /// The name of its ledger account: `rows:` and the first 16 bytes of the digest in hex.
    pub fn name(&self) -> String {
        format!("rows:{}", hex(&self.digest[..16]))
    }

    /// Its number of rows.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The sketch, as the ledger file keeps it (16 hex digits per hash).
    pub(crate) fn sketch_text(&self) -> String {
        sketch_text(&self.sketch)
    }

    /// A sketch read back from [`Self::sketch_text`], `None` if malformed.
    pub(crate) fn parse_sketch(text: &str) -> Option<Vec<u64>> {
        if !text.len().is_multiple_of(16) || !text.is_ascii() {
            return None;
        }
        let values: Option<Vec<u64>> = (0..text.len())
            .step_by(16)
            .map(|i| u64::from_str_radix(&text[i..i + 16], 16).ok())
            .collect();
        values.filter(|v| v.len() <= SKETCH && v.windows(2).all(|w| w[0] < w[1]))
    }

    /// The estimated share of this data set's rows that are rows of `other` (see
    /// [`Self::share_in`]).
    pub fn share_of_rows_in(&self, other: &DataPrint) -> f64 {
        self.share_in(other.rows, &other.sketch)
    }

    /// The estimated share of this data set's rows that are rows of the data set with `rows`
    /// rows and `sketch`: its containment in the other, from the Jaccard estimate of the two
    /// bottom-k sketches and the row counts.
    pub(crate) fn share_in(&self, rows: u64, sketch: &[u64]) -> f64 {
        self.shared_rows(rows, sketch) / self.rows.max(1) as f64
    }

    /// The estimated share of the other data set's rows (`rows`, `sketch`) that are rows of
    /// this one: the other direction of [`Self::share_in`].
    pub(crate) fn share_of(&self, rows: u64, sketch: &[u64]) -> f64 {
        self.shared_rows(rows, sketch) / rows.max(1) as f64
    }

    /// The estimated count of rows both hold (at most the smaller count).
    fn shared_rows(&self, rows: u64, sketch: &[u64]) -> f64 {
        if self.rows == 0 || rows == 0 {
            return 0.0;
        }
        let jaccard = jaccard(&self.sketch, sketch);
        // |A n B| = J |A u B| and |A u B| = (|A| + |B|) / (1 + J).
        let shared = jaccard * (self.rows + rows) as f64 / (1.0 + jaccard);
        shared.clamp(0.0, self.rows.min(rows) as f64)
    }

    /// The union of this data set and the one with `rows` and `sketch`: its estimated count of
    /// rows and its sketch (what an account becomes when this data set is charged to it).
    pub(crate) fn union_with(&self, rows: u64, sketch: &[u64]) -> (u64, Vec<u64>) {
        let jaccard = jaccard(&self.sketch, sketch);
        let union_rows = ((self.rows + rows) as f64 / (1.0 + jaccard)).round() as u64;
        let both: BTreeSet<u64> = self.sketch.iter().chain(sketch).copied().collect();
        let union_rows = union_rows.max(self.rows).max(rows);
        (union_rows, both.into_iter().take(SKETCH).collect())
    }
}

/// The Jaccard similarity of two data sets estimated from their bottom-k sketches.
fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    let mine: BTreeSet<u64> = a.iter().copied().collect();
    let theirs: BTreeSet<u64> = b.iter().copied().collect();
    let union: Vec<u64> = mine.union(&theirs).copied().take(SKETCH).collect();
    if union.is_empty() {
        return 0.0;
    }
    let both = union
        .iter()
        .filter(|u| mine.contains(u) && theirs.contains(u))
        .count();
    both as f64 / union.len() as f64
}

/// A sketch's text (16 hex digits per hash).
pub(crate) fn sketch_text(sketch: &[u64]) -> String {
    sketch.iter().map(|v| format!("{v:016x}")).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2, s};

    fn key(byte: u8) -> LedgerKey {
        LedgerKey::from_secret(&[byte; 32])
    }

    fn table(rows: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
        // Pseudo-random values (an arithmetic progression per row would make rows of two
        // tables share most of their values, as no two people's records do).
        let x = Array2::from_shape_fn((rows, 5), |(i, j)| {
            let v = super::order_of(((i * 5 + j) as i64, seed as i32));
            (v % 10_007) as f64 / 97.0
        });
        let y = Array1::from_shape_fn(rows, |i| (i as u64 + seed).is_multiple_of(3) as u8 as f64);
        (x, y)
    }

    /// Reordered rows, reordered columns and negative zero give the same print; another key
    /// another print; one changed value another digest but nearly all rows shared; an
    /// unrelated table none.
    #[test]
    fn the_rows_decide_not_their_order() {
        let k = key(1);
        let (x, y) = table(1000, 1);
        let print = k.print_rows(x.view(), y.view());
        let reversed = k.print_rows(x.slice(s![..;-1, ..]), y.slice(s![..;-1]));
        assert_eq!(print, reversed);
        let columns = k.print_rows(x.slice(s![.., ..;-1]), y.view());
        assert_eq!(print, columns);
        assert_ne!(print, key(2).print_rows(x.view(), y.view()));
        let mut zeros = x.clone();
        zeros[[3, 1]] = 0.0;
        let mut negative = zeros.clone();
        negative[[3, 1]] = -0.0;
        assert_eq!(
            k.print_rows(zeros.view(), y.view()),
            k.print_rows(negative.view(), y.view())
        );
        let mut changed = x.clone();
        changed[[10, 2]] += 1.0;
        let one = k.print_rows(changed.view(), y.view());
        assert_ne!(one.name(), print.name());
        let share = one.share_in(print.rows, &print.sketch);
        assert!(share > 0.9, "{share}");
        let (u, v) = table(800, 2);
        let other = k.print_rows(u.view(), v.view());
        assert!(other.share_in(print.rows, &print.sketch) < 0.1);
        // Half of the rows: all of them are in the whole table, half of the table in them.
        let half = k.print_rows(x.slice(s![..500, ..]), y.slice(s![..500]));
        let share = half.share_in(print.rows, &print.sketch);
        assert!(share > 0.85, "{share}");
        let share = print.share_in(half.rows, &half.sketch);
        assert!((share - 0.5).abs() < 0.12, "{share}");
    }

    #[test]
    fn sketches_read_back() {
        let k = key(3);
        let (x, y) = table(300, 4);
        let p = k.print_rows(x.view(), y.view());
        assert_eq!(p.sketch.len(), SKETCH);
        assert_eq!(
            DataPrint::parse_sketch(&p.sketch_text()),
            Some(p.sketch.clone())
        );
        assert_eq!(DataPrint::parse_sketch("12"), None);
        assert_eq!(DataPrint::parse_sketch("zzzzzzzzzzzzzzzz"), None);
    }
}
