//! Data files read chunk by chunk, so a Node's memory is bounded by a chunk and `p^2`, never by
//! its row count: the privlogit binary table (any block read at its offset, in parallel), CSV
//! and Parquet (read in order). Every file is checked whole when it is opened (the same checks,
//! with the same file, line and column in errors, as loading it), so a study does not start on
//! a file that fails half-way; a file changed after that is reported when a pass meets it.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ndarray::{Array1, Array2, ArrayView1, ArrayView2};
use parquet::column::reader::ColumnReader;
use parquet::file::reader::{FileReader, SerializedFileReader};
use privlogit_protocols::Family;
use privlogit_protocols::rows::{
    Cause, ChunkVisitor, MemoryRows, RowSource, RowsError, RowsProblem,
};

use super::binary::{self, Layout};
use super::csv::RecordReader;
use super::table::{DataError, LoadOptions};

/// Rows per chunk of a scan (a multiple of the Nodes' sum blocks, so nothing straddles).
const CHUNK_ROWS: usize = 8 * privlogit_protocols::rows::blocks::BLOCK_ROWS;

/// First bytes of a Parquet file.
const PARQUET_MAGIC: [u8; 4] = *b"PAR1";

/// Opens `path` as a streamed source: a privlogit binary table or a Parquet file (recognised by
/// their magic bytes), otherwise CSV. The label and excluded columns are as for
/// [`super::load`]; a group column is not supported when streaming (split the file instead).
pub fn open(path: &Path, options: &LoadOptions) -> Result<Arc<dyn RowSource>, DataError> {
    if let Some(group) = &options.group {
        return Err(DataError::BinaryUnsupported {
            path: path.to_path_buf(),
            what: format!("group column {group:?} when streaming"),
            hint: "split the file by group first",
        });
    }
    Ok(match sniff(path)? {
        Format::Binary => Arc::new(BinaryRows::open(path, options)?),
        Format::Parquet => Arc::new(ParquetRows::open(path, options)?),
        Format::Csv => Arc::new(CsvRows::open(path, options)?),
    })
}

/// The formats a data file may be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// privlogit's binary table.
    Binary,
    /// Apache Parquet.
    Parquet,
    /// Anything else is read as CSV.
    Csv,
}

/// The format of `path`, by its first bytes.
pub fn sniff(path: &Path) -> Result<Format, DataError> {
    let mut magic = [0u8; 8];
    let read = read_prefix(path, &mut magic)?;
    Ok(if read == magic.len() && magic == binary::MAGIC {
        Format::Binary
    } else if read >= 4 && magic[..4] == PARQUET_MAGIC {
        Format::Parquet
    } else {
        Format::Csv
    })
}

fn read_prefix(path: &Path, buf: &mut [u8]) -> Result<usize, DataError> {
    let io = |source| DataError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut read = 0;
    while read < buf.len() {
        match file.read(&mut buf[read..]).map_err(io)? {
            0 => break,
            n => read += n,
        }
    }
    Ok(read)
}

/// A failure met during a pass, as the Nodes' sums report it.
fn rows_error(path: &Path, e: DataError) -> RowsError {
    RowsError::new(path.display().to_string(), RowsProblem::Data(Cause::new(e)))
}

/// A privlogit binary table: any run of rows is read at its offset, so blocks are read in
/// parallel inside the tasks that sum them.
#[derive(Debug)]
pub struct BinaryRows {
    layout: Layout,
    file: File,
    path: PathBuf,
}

impl BinaryRows {
    /// Opens `path`, checks its header against the file size and every value in it.
    pub fn open(path: &Path, options: &LoadOptions) -> Result<Self, DataError> {
        let (layout, _) = binary::layout(path, options)?;
        let file = File::open(path).map_err(|source| DataError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let this = Self {
            layout,
            file,
            path: path.to_path_buf(),
        };
        this.scan(&mut |_, _| Ok(()))
            .map_err(|e| DataError::Binary {
                path: path.to_path_buf(),
                reason: e.problem.to_string(),
            })?;
        Ok(this)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
        }
        #[cfg(not(unix))]
        {
            use std::io::{Seek, SeekFrom};
            let mut file = self.file.try_clone()?;
            file.seek(SeekFrom::Start(offset))?;
            file.read_exact(buf)
        }
    }

    /// Rows `start..start + n`, decoded and checked.
    fn decode(&self, start: usize, n: usize) -> Result<(Vec<f64>, Vec<f64>), RowsError> {
        let row_bytes = self.layout.row_bytes();
        let mut bytes = vec![0u8; n * row_bytes];
        let offset = self.layout.data_offset + (start * row_bytes) as u64;
        self.read_at(offset, &mut bytes)
            .map_err(|e| RowsError::new(self.describe(), RowsProblem::Unreadable(Cause::new(e))))?;
        let mut values = Vec::with_capacity(n * self.layout.names.len());
        let mut labels = Vec::with_capacity(n);
        self.layout
            .decode(&bytes, start as u64 + 1, &mut values, &mut labels)
            .map_err(|e| rows_error(&self.path, e))?;
        Ok((values, labels))
    }
}

impl RowSource for BinaryRows {
    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn rows(&self) -> usize {
        self.layout.rows as usize
    }

    fn columns(&self) -> usize {
        self.layout.names.len()
    }

    fn names(&self) -> Vec<String> {
        self.layout.names.clone()
    }

    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
        let (n, p) = (self.rows(), self.columns());
        let mut start = 0;
        while start < n {
            let len = CHUNK_ROWS.min(n - start);
            let (x, y) = self.decode(start, len)?;
            let x = ArrayView2::from_shape((len, p), &x).expect("whole rows");
            visit(x, ArrayView1::from(&y))?;
            start += len;
        }
        Ok(())
    }

    fn random_access(&self) -> bool {
        true
    }

    fn read_rows(&self, start: usize, x: &mut [f64], y: &mut [f64]) -> Result<(), RowsError> {
        if start + y.len() > self.rows() {
            return Err(RowsError::new(
                self.describe(),
                RowsProblem::OutOfRange {
                    start,
                    end: start + y.len(),
                    rows: self.rows(),
                },
            ));
        }
        let (values, labels) = self.decode(start, y.len())?;
        x.copy_from_slice(&values);
        y.copy_from_slice(&labels);
        Ok(())
    }
}

/// The most a CSV file's parsed values may take to be kept in memory after the opening pass
/// (256 MiB: 33.5 million values), so later passes read them instead of parsing the text again.
/// Parsing dominated a small study's Node rounds (about 0.25 s a pass for 33,000 x 101); a
/// larger file is parsed again on every pass, as before, and its Node's memory stays bounded.
pub const CSV_CACHE_BYTES: usize = 256 << 20;

/// A CSV file: its parsed rows kept when they fit [`CSV_CACHE_BYTES`], otherwise parsed again
/// on every pass.
#[derive(Debug)]
pub struct CsvRows {
    path: PathBuf,
    options: LoadOptions,
    names: Vec<String>,
    rows: usize,
    cached: Option<MemoryRows>,
}

impl CsvRows {
    /// Opens `path` and checks every row (one pass, counting them), keeping the values when
    /// they fit the cache.
    pub fn open(path: &Path, options: &LoadOptions) -> Result<Self, DataError> {
        let mut reader = RecordReader::open(path, options)?;
        let names = reader.names.clone();
        let (mut values, mut labels) = (Vec::new(), Vec::new());
        let mut keep = true;
        let mut rows = 0;
        loop {
            if !keep {
                values.clear();
                labels.clear();
            }
            let n = reader.read_rows(CHUNK_ROWS, &mut values, &mut labels, None)?;
            if n == 0 {
                break;
            }
            rows += n;
            if keep && values.len() * size_of::<f64>() > CSV_CACHE_BYTES {
                keep = false;
                values = Vec::new();
                labels = Vec::new();
            }
        }
        if rows == 0 {
            return Err(reader.no_rows());
        }
        let cached = keep.then(|| {
            let x = Array2::from_shape_vec((rows, names.len()), values).expect("whole rows");
            MemoryRows::new(x, Array1::from(labels)).with_names(names.clone())
        });
        Ok(Self {
            path: path.to_path_buf(),
            options: options.clone(),
            names,
            rows,
            cached,
        })
    }
}

/// A file's [`RowSource`] shape: named by its path, with the row count and column names read
/// when it was opened (the CSV and Parquet sources hold `path`, `rows` and `names` alike).
macro_rules! file_source_shape {
    () => {
        fn describe(&self) -> String {
            self.path.display().to_string()
        }

        fn rows(&self) -> usize {
            self.rows
        }

        fn columns(&self) -> usize {
            self.names.len()
        }

        fn names(&self) -> Vec<String> {
            self.names.clone()
        }
    };
}

impl RowSource for CsvRows {
    file_source_shape!();

    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
        if let Some(rows) = &self.cached {
            return rows.scan(visit);
        }
        let fail = |e| rows_error(&self.path, e);
        let mut reader = RecordReader::open(&self.path, &self.options).map_err(fail)?;
        let (mut values, mut labels) = (Vec::new(), Vec::new());
        let mut seen = 0;
        loop {
            values.clear();
            labels.clear();
            let n = reader
                .read_rows(CHUNK_ROWS, &mut values, &mut labels, None)
                .map_err(fail)?;
            if n == 0 {
                break;
            }
            seen += n;
            let x = ArrayView2::from_shape((n, self.names.len()), &values).expect("whole rows");
            visit(x, ArrayView1::from(&labels))?;
        }
        if seen != self.rows {
            return Err(RowsError::new(
                self.describe(),
                RowsProblem::RowsChanged {
                    then: self.rows,
                    now: seen,
                },
            ));
        }
        Ok(())
    }
}

/// A Parquet file: flat numeric columns (boolean, 32/64-bit integer, float, double), no
/// missing values, read row group by row group, a chunk of rows at a time from every column.
#[derive(Debug)]
pub struct ParquetRows {
    path: PathBuf,
    /// Leaf column indices of the features, then the label.
    columns: Vec<usize>,
    names: Vec<String>,
    rows: usize,
    /// The rule labels must follow.
    family: Family,
}

impl ParquetRows {
    /// Opens `path`, maps its columns (label by name, excluded ones dropped, every other one a
    /// numeric feature) and checks every value.
    pub fn open(path: &Path, options: &LoadOptions) -> Result<Self, DataError> {
        let bad = |reason: String| DataError::Parquet {
            path: path.to_path_buf(),
            reason,
        };
        let reader = Self::reader(path)?;
        let meta = reader.metadata().file_metadata();
        let schema = meta.schema_descr();
        let all: Vec<String> = schema.columns().iter().map(|c| c.path().string()).collect();
        let mut features = Vec::new();
        let mut label = None;
        for name in options.exclude.iter().chain([&options.label]) {
            if !all.contains(name) {
                return Err(DataError::UnknownColumn {
                    path: path.to_path_buf(),
                    line: 1,
                    role: if *name == options.label {
                        "label"
                    } else {
                        "excluded"
                    },
                    name: name.clone(),
                    available: all.join(", "),
                });
            }
        }
        for (i, column) in schema.columns().iter().enumerate() {
            let name = &all[i];
            if options.exclude.contains(name) {
                continue;
            }
            if column.max_rep_level() > 0 {
                return Err(bad(format!("column {name:?} is repeated (nested)")));
            }
            use parquet::basic::Type;
            if !matches!(
                column.physical_type(),
                Type::BOOLEAN | Type::INT32 | Type::INT64 | Type::FLOAT | Type::DOUBLE
            ) {
                return Err(bad(format!(
                    "column {name:?} holds {:?}, not numbers (exclude it)",
                    column.physical_type()
                )));
            }
            if *name == options.label {
                label = Some(i);
            } else {
                features.push(i);
            }
        }
        let label = label.expect("checked above");
        if features.is_empty() {
            return Err(DataError::NoFeatures {
                path: path.to_path_buf(),
            });
        }
        let rows = usize::try_from(meta.num_rows())
            .map_err(|_| bad(format!("{} rows", meta.num_rows())))?;
        if rows == 0 {
            return Err(bad("the file has no rows".to_string()));
        }
        let names = features.iter().map(|&i| all[i].clone()).collect();
        let mut columns = features;
        columns.push(label);
        let this = Self {
            path: path.to_path_buf(),
            columns,
            names,
            rows,
            family: options.family,
        };
        this.scan(&mut |_, _| Ok(()))
            .map_err(|e| bad(e.problem.to_string()))?;
        Ok(this)
    }

    fn reader(path: &Path) -> Result<SerializedFileReader<File>, DataError> {
        let file = File::open(path).map_err(|source| DataError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        SerializedFileReader::new(file).map_err(|e| DataError::Parquet {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }
}

/// Reads up to `n` values of one flat column into `out` as f64; `None` where the value is null.
fn read_column(
    reader: &mut ColumnReader,
    n: usize,
    out: &mut Vec<Option<f64>>,
) -> Result<usize, String> {
    let mut defs: Vec<i16> = Vec::with_capacity(n);
    macro_rules! read_as {
        ($r:expr, $t:ty, $conv:expr) => {{
            let mut values: Vec<$t> = Vec::with_capacity(n);
            let (records, _, _) = $r
                .read_records(n, Some(&mut defs), None, &mut values)
                .map_err(|e| e.to_string())?;
            let mut it = values.into_iter();
            if defs.is_empty() {
                out.extend(it.by_ref().take(records).map(|v| Some($conv(v))));
            } else {
                let max = defs.iter().copied().max().unwrap_or(0).max(1);
                for d in defs.iter().take(records) {
                    out.push(if *d == max {
                        it.next().map($conv)
                    } else {
                        None
                    });
                }
            }
            Ok(records)
        }};
    }
    match reader {
        ColumnReader::BoolColumnReader(r) => read_as!(r, bool, |v: bool| f64::from(u8::from(v))),
        ColumnReader::Int32ColumnReader(r) => read_as!(r, i32, f64::from),
        ColumnReader::Int64ColumnReader(r) => read_as!(r, i64, |v: i64| v as f64),
        ColumnReader::FloatColumnReader(r) => read_as!(r, f32, f64::from),
        ColumnReader::DoubleColumnReader(r) => read_as!(r, f64, |v: f64| v),
        _ => Err("column is not numeric".to_string()),
    }
}

impl RowSource for ParquetRows {
    file_source_shape!();

    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
        let fail = |problem: RowsProblem| RowsError::new(self.describe(), problem);
        let unreadable =
            |e: parquet::errors::ParquetError| fail(RowsProblem::Unreadable(Cause::new(e)));
        let reader =
            Self::reader(&self.path).map_err(|e| fail(RowsProblem::Data(Cause::new(e))))?;
        let p = self.names.len();
        let mut row_base = 0usize;
        let (mut x, mut y) = (Vec::new(), Vec::new());
        let mut column: Vec<Option<f64>> = Vec::new();
        for g in 0..reader.num_row_groups() {
            let group = reader.get_row_group(g).map_err(unreadable)?;
            let group_rows = usize::try_from(group.metadata().num_rows()).unwrap_or(0);
            let mut readers = self
                .columns
                .iter()
                .map(|&c| group.get_column_reader(c).map_err(unreadable))
                .collect::<Result<Vec<_>, _>>()?;
            let mut done = 0;
            while done < group_rows {
                let n = CHUNK_ROWS.min(group_rows - done);
                x.clear();
                x.resize(n * p, 0.0);
                y.clear();
                for (k, r) in readers.iter_mut().enumerate() {
                    column.clear();
                    let name = self.names.get(k).map_or("the label", String::as_str);
                    let got = read_column(r, n, &mut column).map_err(|reason| {
                        fail(RowsProblem::Column {
                            column: name.into(),
                            reason,
                        })
                    })?;
                    if got != n {
                        return Err(fail(RowsProblem::ColumnEnds {
                            column: name.into(),
                            group: g,
                            got,
                            expected: n,
                        }));
                    }
                    for (i, v) in column.iter().enumerate() {
                        let row = row_base + done + i + 1;
                        let v = v.ok_or_else(|| {
                            fail(RowsProblem::MissingValue {
                                row,
                                column: name.into(),
                            })
                        })?;
                        if k < p {
                            if !v.is_finite() {
                                return Err(fail(RowsProblem::ValueNotFinite {
                                    row,
                                    column: name.into(),
                                    value: v,
                                }));
                            }
                            x[i * p + k] = v;
                        } else {
                            if let Some(why) = self.family.label_problem(v) {
                                return Err(fail(RowsProblem::RowLabel { row, label: v, why }));
                            }
                            y.push(v);
                        }
                    }
                }
                let view = ArrayView2::from_shape((n, p), &x).expect("whole rows");
                visit(view, ArrayView1::from(&y))?;
                done += n;
            }
            row_base += group_rows;
        }
        if row_base != self.rows {
            return Err(fail(RowsProblem::RowGroups {
                held: row_base,
                footer: self.rows,
            }));
        }
        Ok(())
    }
}
