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

use super::{DataError, Dataset, LoadOptions, Table};

/// First bytes of every binary table.
pub const MAGIC: [u8; 8] = *b"PRIVLOGB";
/// Format version written and accepted.
pub const VERSION: u32 = 1;
const MAX_FEATURES: u32 = 100_000;
const MAX_NAME_BYTES: u32 = 4096;

/// Writes the header of a binary table with `rows` rows.
pub fn write_header<W: Write>(
    out: &mut W,
    names: &[String],
    label: &str,
    rows: u64,
) -> std::io::Result<()> {
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

/// Reads the binary table at `path`. The label must be `options.label`; excluded columns are
/// dropped; a group column is not supported (split binary tables by rows instead).
pub fn read(path: &Path, options: &LoadOptions) -> Result<Table, DataError> {
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
    if label != options.label {
        return Err(DataError::UnknownColumn {
            path: path.to_path_buf(),
            role: "label",
            name: options.label.clone(),
            available: format!("{} (label {label})", all_names.join(", ")),
        });
    }
    if let Some(group) = &options.group {
        return Err(bad(format!(
            "group column {group:?} requested, but binary tables have no text columns"
        )));
    }
    let mut keep = vec![true; p as usize];
    for name in &options.exclude {
        let i =
            all_names
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| DataError::UnknownColumn {
                    path: path.to_path_buf(),
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
        return Err(DataError::NoRows {
            path: path.to_path_buf(),
            line: 1,
        });
    }

    let rows_usize = usize::try_from(rows).map_err(|_| bad("too many rows".to_string()))?;
    let mut values = Vec::with_capacity(rows_usize * names.len());
    let mut labels = Vec::with_capacity(rows_usize);
    let mut row = vec![0u8; row_bytes as usize];
    for r in 0..rows {
        input.read_exact(&mut row).map_err(io)?;
        for (j, chunk) in row.chunks_exact(8).enumerate() {
            let v = f64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
            let is_label = j == p as usize;
            let name = if is_label { &label } else { &all_names[j] };
            let value_error = |reason: String| DataError::BinaryValue {
                path: path.to_path_buf(),
                row: r + 1,
                name: name.clone(),
                reason,
            };
            if is_label {
                if v != 0.0 && v != 1.0 {
                    return Err(value_error(format!("label {v} is not 0 or 1")));
                }
                labels.push(v);
            } else if keep[j] {
                if !v.is_finite() {
                    return Err(value_error(format!("{v} is not a finite number")));
                }
                values.push(v);
            }
        }
    }
    let x = Array2::from_shape_vec((rows_usize, names.len()), values)
        .expect("one value per kept feature per row");
    Ok(Table {
        data: Dataset {
            source: path.display().to_string(),
            names,
            x,
            y: Array1::from(labels),
        },
        groups: None,
    })
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
