//! The privlogit binary table: the same content as a CSV (named feature columns and a 0/1
//! label) in a form that is fast to write and read, for simulated sets of millions of rows.
//!
//! Layout, all integers little-endian:
//!
//! ```text
//! magic    8 bytes  "PRIVLOGB"
//! version  u32      1
//! features u32      p (1 ..= 100_000)
//! rows     u64
//! label    u32 length + UTF-8 name
//! names    p x (u32 length + UTF-8 name), each length <= 4096
//! data     rows x (p + 1) f64: the p features, then the label, row by row
//! ```
//!
//! Every length is bounded before anything is allocated, and the data size implied by the
//! header must equal what the file holds.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use privlogit_protocols::Family;

use super::table::{DataError, Dataset, LoadOptions, Table};

/// First bytes of every binary table.
pub const MAGIC: [u8; 8] = *b"PRIVLOGB";
/// Format version written and accepted.
pub const VERSION: u32 = 1;
const MAX_FEATURES: u32 = 100_000;
const MAX_NAME_BYTES: u32 = 4096;

/// Writes the header of a binary table with `rows` rows, refusing (with `InvalidInput`) what the
/// reader would refuse: no or too many features, empty, over-long or repeated names.
pub fn write_header<W: Write>(
    out: &mut W,
    names: &[String],
    label: &str,
    rows: u64,
) -> std::io::Result<()> {
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
    if names.is_empty() || names.len() > MAX_FEATURES as usize {
        return Err(invalid(format!(
            "binary tables hold 1 to {MAX_FEATURES} features, not {}",
            names.len()
        )));
    }
    for name in names.iter().map(String::as_str).chain([label]) {
        if name.is_empty() || name.len() > MAX_NAME_BYTES as usize {
            return Err(invalid(format!(
                "column name {name:?} must have 1 to {MAX_NAME_BYTES} bytes"
            )));
        }
    }
    if let Some(name) = first_repeat(names, label) {
        return Err(invalid(format!("column name {name:?} appears twice")));
    }
    out.write_all(&MAGIC)?;
    out.write_all(&VERSION.to_le_bytes())?;
    out.write_all(&(names.len() as u32).to_le_bytes())?;
    out.write_all(&rows.to_le_bytes())?;
    write_name(out, label)?;
    for name in names {
        write_name(out, name)?;
    }
    Ok(())
}

/// Appends rows (features and labels) to a binary table after its header.
pub fn write_rows<W: Write>(
    out: &mut W,
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity((x.ncols() + 1) * 8 * x.nrows());
    for (row, label) in x.outer_iter().zip(y.iter()) {
        for v in row.iter().chain(std::iter::once(label)) {
            buf.extend_from_slice(&v.to_le_bytes());
        }
    }
    out.write_all(&buf)
}

fn write_name<W: Write>(out: &mut W, name: &str) -> std::io::Result<()> {
    out.write_all(&(name.len() as u32).to_le_bytes())?;
    out.write_all(name.as_bytes())
}

/// What a binary table's header says, checked against the file's size and the load options.
#[derive(Debug, Clone)]
pub struct Layout {
    path: std::path::PathBuf,
    /// Rows in the table.
    pub rows: u64,
    /// Features in the file (kept or not).
    features_in_file: usize,
    keep: Vec<bool>,
    all_names: Vec<String>,
    /// The kept feature names.
    pub names: Vec<String>,
    label: String,
    /// The rule labels must follow.
    family: Family,
    /// Byte offset of the first row.
    pub data_offset: u64,
}

impl Layout {
    /// Bytes per row in the file.
    pub fn row_bytes(&self) -> usize {
        (self.features_in_file + 1) * 8
    }

    /// Decodes whole rows (`bytes`, the first being row `first_row`, 1-based in messages) into
    /// kept features and labels, refusing non-finite features and labels the family does not take.
    pub fn decode(
        &self,
        bytes: &[u8],
        first_row: u64,
        values: &mut Vec<f64>,
        labels: &mut Vec<f64>,
    ) -> Result<(), DataError> {
        let p = self.features_in_file;
        for (i, row) in bytes.chunks_exact(self.row_bytes()).enumerate() {
            let row_index = first_row + i as u64;
            let mut cells = row
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8-byte chunk")));
            for (j, v) in cells.by_ref().take(p).enumerate() {
                if !self.keep[j] {
                    continue;
                }
                if !v.is_finite() {
                    return Err(DataError::BinaryValue {
                        path: self.path.clone(),
                        row: row_index,
                        name: self.all_names[j].clone(),
                        reason: format!("{v} is not a finite number"),
                    });
                }
                values.push(v);
            }
            let y = cells.next().expect("label after the features");
            if let Some(why) = self.family.label_problem(y) {
                return Err(DataError::BinaryValue {
                    path: self.path.clone(),
                    row: row_index,
                    name: self.label.clone(),
                    reason: format!("label {y} {why}"),
                });
            }
            labels.push(y);
        }
        Ok(())
    }
}

/// Reads and checks the header of the binary table at `path`, leaving the reader at the first
/// row. The label must be `options.label`; excluded columns are dropped; a group column is not
/// supported (split binary tables by rows instead).
pub fn layout(path: &Path, options: &LoadOptions) -> Result<(Layout, BufReader<File>), DataError> {
    let bad = |reason: String| DataError::Binary {
        path: path.to_path_buf(),
        reason,
    };
    let io = |source| DataError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    let mut input = BufReader::with_capacity(1 << 20, file);
    let truncated = |_| bad("the file ends inside the header".to_string());

    let mut magic = [0u8; 8];
    input.read_exact(&mut magic).map_err(truncated)?;
    if magic != MAGIC {
        return Err(bad("wrong magic bytes".to_string()));
    }
    let version = read_u32(&mut input).map_err(truncated)?;
    if version != VERSION {
        return Err(bad(format!(
            "version {version}, this build reads {VERSION}"
        )));
    }
    let p = read_u32(&mut input).map_err(truncated)?;
    if p == 0 || p > MAX_FEATURES {
        return Err(bad(format!("{p} features (expected 1 to {MAX_FEATURES})")));
    }
    let rows = read_u64(&mut input).map_err(truncated)?;
    let label = read_name(&mut input).map_err(|e| bad(format!("label name: {e}")))?;
    let mut header_len = 8 + 4 + 4 + 8 + 4 + label.len() as u64;
    let mut all_names = Vec::with_capacity(p as usize);
    for i in 0..p {
        let name = read_name(&mut input).map_err(|e| bad(format!("name of feature {i}: {e}")))?;
        header_len += 4 + name.len() as u64;
        all_names.push(name);
    }
    let row_bytes = (u64::from(p) + 1) * 8;
    let expected = rows
        .checked_mul(row_bytes)
        .and_then(|d| d.checked_add(header_len));
    if expected != Some(file_len) {
        return Err(bad(format!(
            "header promises {rows} rows of {} values, but the file holds {} bytes of data",
            p + 1,
            file_len.saturating_sub(header_len)
        )));
    }
    if let Some(name) = first_repeat(&all_names, &label) {
        return Err(bad(format!("column name {name:?} appears twice")));
    }
    if label != options.label {
        return Err(DataError::UnknownColumn {
            path: path.to_path_buf(),
            line: 1,
            role: "label",
            name: options.label.clone(),
            available: format!("{} (label {label})", all_names.join(", ")),
        });
    }
    if let Some(group) = &options.group {
        return Err(DataError::BinaryUnsupported {
            path: path.to_path_buf(),
            what: format!("group column {group:?}"),
            hint: "binary tables hold numbers only; split them with setting `split`",
        });
    }
    let mut keep = vec![true; p as usize];
    for name in &options.exclude {
        if *name == label {
            return Err(DataError::BinaryUnsupported {
                path: path.to_path_buf(),
                what: format!("excluding the label {name:?}"),
                hint: "the label column is always read",
            });
        }
        let i =
            all_names
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| DataError::UnknownColumn {
                    path: path.to_path_buf(),
                    line: 1,
                    role: "excluded",
                    name: name.clone(),
                    available: all_names.join(", "),
                })?;
        keep[i] = false;
    }
    let names: Vec<String> = all_names
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(n, _)| n.clone())
        .collect();
    if names.is_empty() {
        return Err(DataError::NoFeatures {
            path: path.to_path_buf(),
        });
    }
    if rows == 0 {
        return Err(bad("the table has no rows".to_string()));
    }

    Ok((
        Layout {
            path: path.to_path_buf(),
            rows,
            features_in_file: p as usize,
            keep,
            all_names,
            names,
            label,
            family: options.family,
            data_offset: header_len,
        },
        input,
    ))
}

/// Reads the binary table at `path` whole (see [`layout`] for what is checked).
pub fn read(path: &Path, options: &LoadOptions) -> Result<Table, DataError> {
    let (layout, mut input) = layout(path, options)?;
    let io = |source| DataError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bad = |reason: String| DataError::Binary {
        path: path.to_path_buf(),
        reason,
    };
    let rows = layout.rows;
    let rows_usize = usize::try_from(rows).map_err(|_| bad("too many rows".to_string()))?;
    let mut values = Vec::with_capacity(rows_usize * layout.names.len());
    let mut labels = Vec::with_capacity(rows_usize);
    // Read whole rows in blocks of about 8 MiB: one copy, no per-row calls.
    let row_bytes = layout.row_bytes();
    let block_rows = ((8 << 20) / row_bytes).max(1);
    let mut block = vec![0u8; block_rows * row_bytes];
    let mut row_index: u64 = 0;
    while row_index < rows {
        let n = block_rows.min((rows - row_index) as usize);
        let bytes = &mut block[..n * row_bytes];
        input.read_exact(bytes).map_err(io)?;
        layout.decode(bytes, row_index + 1, &mut values, &mut labels)?;
        row_index += n as u64;
    }
    let x = Array2::from_shape_vec((rows_usize, layout.names.len()), values)
        .expect("one value per kept feature per row");
    Ok(Table {
        data: Dataset {
            source: path.display().to_string(),
            names: layout.names,
            x,
            y: Array1::from(labels),
        },
        groups: None,
    })
}

/// The first name that occurs twice among the features and the label.
fn first_repeat<'a>(names: &'a [String], label: &'a str) -> Option<&'a str> {
    let mut seen = std::collections::HashSet::new();
    names
        .iter()
        .map(String::as_str)
        .chain([label])
        .find(|n| !seen.insert(*n))
}

fn read_u32<R: Read>(input: &mut R) -> std::io::Result<u32> {
    let mut b = [0u8; 4];
    input.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64<R: Read>(input: &mut R) -> std::io::Result<u64> {
    let mut b = [0u8; 8];
    input.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn read_name<R: Read>(input: &mut R) -> Result<String, String> {
    let len = read_u32(input).map_err(|_| "the file ends inside the header".to_string())?;
    if len == 0 || len > MAX_NAME_BYTES {
        return Err(format!(
            "name length {len} (expected 1 to {MAX_NAME_BYTES})"
        ));
    }
    let mut bytes = vec![0u8; len as usize];
    input
        .read_exact(&mut bytes)
        .map_err(|_| "the file ends inside the header".to_string())?;
    String::from_utf8(bytes).map_err(|_| "name is not UTF-8".to_string())
}

/// Writes a whole dataset as a binary table (labels named `label`).
pub fn write_dataset(path: &Path, data: &Dataset, label: &str) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    write_header(&mut out, &data.names, label, data.rows() as u64)?;
    write_rows(&mut out, data.x.view(), data.y.view())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn sample() -> Dataset {
        Dataset {
            source: "mem".into(),
            names: vec!["a".into(), "b".into()],
            x: array![[1.0, 2.0], [3.0, -4.5], [0.25, 8.0]],
            y: array![0.0, 1.0, 1.0],
        }
    }

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!(
            "privlogit-binary-{name}-{}.plb",
            std::process::id()
        ))
    }

    #[test]
    fn round_trip_and_exclusion() {
        let path = temp("round");
        write_dataset(&path, &sample(), "y").expect("writable");
        let back = read(&path, &LoadOptions::new("y")).expect("valid table");
        assert_eq!(back.data.x, sample().x);
        assert_eq!(back.data.y, sample().y);
        let mut options = LoadOptions::new("y");
        options.exclude = vec!["a".into()];
        let back = read(&path, &options).expect("valid table");
        assert_eq!(back.data.names, vec!["b"]);
        assert_eq!(back.data.x.column(0), sample().x.column(1));
        std::fs::remove_file(path).expect("cleanup");
    }

    #[test]
    fn truncation_and_bad_values_are_refused() {
        let path = temp("bad");
        write_dataset(&path, &sample(), "y").expect("writable");
        let bytes = std::fs::read(&path).expect("readable");

        std::fs::write(&path, &bytes[..bytes.len() - 3]).expect("writable");
        let err = read(&path, &LoadOptions::new("y")).expect_err("truncated");
        assert!(err.to_string().contains("header promises 3 rows"), "{err}");

        let mut corrupt = bytes.clone();
        let last_label = corrupt.len() - 8;
        corrupt[last_label..].copy_from_slice(&2.0f64.to_le_bytes());
        std::fs::write(&path, &corrupt).expect("writable");
        let err = read(&path, &LoadOptions::new("y")).expect_err("bad label");
        assert!(
            err.to_string()
                .contains("row 3, column \"y\": label 2 is not 0 or 1"),
            "{err}"
        );

        let mut corrupt = bytes;
        corrupt[8] = 9; // version
        std::fs::write(&path, &corrupt).expect("writable");
        let err = read(&path, &LoadOptions::new("y")).expect_err("bad version");
        assert!(err.to_string().contains("version 9"), "{err}");
        std::fs::remove_file(path).expect("cleanup");
    }
}
