//! CSV tables: a header row, then one record per line; the label column is chosen by name and
//! every other column (not excluded, not the group column) must hold finite numbers.
//!
//! Missing values are empty cells and the usual markers `NA`, `N/A`, `NaN`, `null` and `?`
//! (any case); they are refused, not imputed. Labels must read as the number 0 or 1.
//! Leading and trailing blanks around cells are ignored; blank lines are skipped. Line numbers
//! in errors are those an editor shows (LF or CRLF endings, blank lines counted); for a quoted
//! cell spanning lines, the line where its record starts.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use ndarray::{Array1, Array2};
use privlogit_protocols::Family;

use super::table::{DataError, Dataset, LoadOptions, Table};

/// Markers read as a missing value (compared case-insensitively).
const MISSING_MARKERS: [&str; 6] = ["", "na", "n/a", "nan", "null", "?"];

/// What each header column is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Feature,
    Label,
    Group,
    Excluded,
}

impl Role {
    fn describe(self) -> &'static str {
        match self {
            Role::Feature => "a feature",
            Role::Label => "the label",
            Role::Group => "the group column",
            Role::Excluded => "excluded",
        }
    }
}

/// Reads the CSV file at `path` whole.
pub fn read(path: &Path, options: &LoadOptions) -> Result<Table, DataError> {
    let mut reader = RecordReader::open(path, options)?;
    let mut values: Vec<f64> = Vec::new();
    let mut labels: Vec<f64> = Vec::new();
    let mut groups: Option<Vec<String>> = options.group.as_ref().map(|_| Vec::new());
    reader.read_rows(usize::MAX, &mut values, &mut labels, groups.as_mut())?;
    if labels.is_empty() {
        return Err(reader.no_rows());
    }
    let names = reader.names.clone();
    let x = Array2::from_shape_vec((labels.len(), names.len()), values)
        .expect("one value per feature per row");
    Ok(Table {
        data: Dataset {
            source: path.display().to_string(),
            names,
            x,
            y: Array1::from(labels),
        },
        groups,
    })
}

/// A CSV file read record by record: the header checked on opening, every row checked as it
/// is read, so a file can be streamed in chunks with the same errors as a whole read.
pub struct RecordReader {
    path: std::path::PathBuf,
    reader: ::csv::Reader<BufReader<File>>,
    record: ::csv::StringRecord,
    header: Vec<String>,
    roles: Vec<Role>,
    /// Whether a column is the label (else every label reads 0).
    labelled: bool,
    /// The rule labels must follow.
    family: Family,
    header_line: u64,
    /// The feature names, in column order.
    pub names: Vec<String>,
}

impl RecordReader {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path, options: &LoadOptions) -> Result<Self, DataError> {
        let file = File::open(path).map_err(|source| DataError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let reader = ::csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(::csv::Trim::All)
            .from_reader(BufReader::with_capacity(1 << 20, file));
        let mut this = Self {
            path: path.to_path_buf(),
            reader,
            record: ::csv::StringRecord::new(),
            header: Vec::new(),
            roles: Vec::new(),
            labelled: true,
            family: options.family,
            header_line: 1,
            names: Vec::new(),
        };
        if !this.next_record()? {
            return Err(DataError::Empty {
                path: path.to_path_buf(),
            });
        }
        this.header = this
            .record
            .iter()
            .enumerate()
            .map(|(i, h)| {
                if i == 0 {
                    h.trim_start_matches('\u{feff}').trim().to_string()
                } else {
                    h.to_string()
                }
            })
            .collect();
        this.header_line = this.line();
        this.roles = assign_roles(path, this.header_line, &this.header, options)?;
        this.labelled = this.roles.contains(&Role::Label);
        this.names = this
            .header
            .iter()
            .zip(&this.roles)
            .filter(|(_, r)| **r == Role::Feature)
            .map(|(n, _)| n.clone())
            .collect();
        if this.names.is_empty() {
            return Err(DataError::NoFeatures {
                path: path.to_path_buf(),
            });
        }
        Ok(this)
    }

    /// The error for a file with a header and no rows.
    pub fn no_rows(&self) -> DataError {
        DataError::NoRows {
            path: self.path.clone(),
            line: self.header_line + 1,
        }
    }

    // Line numbers are worked out only when an error needs one (see `line_at`).
    fn line(&self) -> u64 {
        line_at(&self.path, self.record.position().map_or(0, |p| p.byte()))
    }

    fn next_record(&mut self) -> Result<bool, DataError> {
        self.reader.read_record(&mut self.record).map_err(|e| {
            let path = self.path.clone();
            match e.kind() {
                ::csv::ErrorKind::Io(_) => match e.into_kind() {
                    ::csv::ErrorKind::Io(source) => DataError::Io { path, source },
                    _ => unreachable!("kind checked above"),
                },
                _ => DataError::Syntax {
                    line: e.position().map_or(1, |p| line_at(&path, p.byte())),
                    path,
                    message: e.to_string(),
                },
            }
        })
    }

    /// Reads up to `max_rows` more rows, appending features (row-major), labels and group
    /// values; returns how many were read (0 at the end of the file).
    pub fn read_rows(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f64>,
        labels: &mut Vec<f64>,
        mut groups: Option<&mut Vec<String>>,
    ) -> Result<usize, DataError> {
        let mut read = 0;
        while read < max_rows && self.next_record()? {
            let record = &self.record;
            let path = &self.path;
            let header = &self.header;
            let line = || line_at(path, record.position().map_or(0, |p| p.byte()));
            if record.len() != header.len() {
                return Err(DataError::Ragged {
                    path: path.to_path_buf(),
                    line: line(),
                    column: record.len().min(header.len()) + 1,
                    expected: header.len(),
                    found: record.len(),
                });
            }
            for (index, (cell, role)) in record.iter().zip(&self.roles).enumerate() {
                let cell_error =
                    |problem: Problem| problem.at(path, line(), index + 1, &header[index], cell);
                match role {
                    Role::Excluded => {}
                    Role::Group => {
                        if is_missing(cell) {
                            return Err(cell_error(Problem::Missing));
                        }
                        if let Some(g) = groups.as_mut() {
                            g.push(cell.to_string());
                        }
                    }
                    Role::Feature => values.push(parse_number(cell).map_err(cell_error)?),
                    Role::Label => {
                        let v = parse_number(cell).map_err(cell_error)?;
                        if let Some(why) = self.family.label_problem(v) {
                            return Err(cell_error(Problem::BadLabel(why)));
                        }
                        labels.push(v);
                    }
                }
            }
            if !self.labelled {
                labels.push(0.0);
            }
            read += 1;
        }
        Ok(read)
    }
}

/// The 1-based line of the record whose parse started at byte `start`.
///
/// The csv crate's own line counter is off for CRLF endings and after blank lines, and its
/// record positions can point at the line ending before a record; so count the newlines in the
/// file up to the first byte of the record instead. Only called on the error path.
fn line_at(path: &Path, start: u64) -> u64 {
    let Ok(file) = File::open(path) else {
        return 0;
    };
    let mut newlines = 0;
    for (offset, byte) in (0u64..).zip(BufReader::new(file).bytes()) {
        let Ok(b) = byte else { break };
        let is_newline = b == b'\n' || b == b'\r';
        if offset >= start && !is_newline {
            break;
        }
        if b == b'\n' {
            newlines += 1;
        }
    }
    newlines + 1
}

/// Decides each header column's role, refusing duplicate, empty and unknown names and a column
/// asked to play two roles.
fn assign_roles(
    path: &Path,
    line: u64,
    header: &[String],
    options: &LoadOptions,
) -> Result<Vec<Role>, DataError> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, name) in header.iter().enumerate() {
        if name.is_empty() {
            return Err(DataError::EmptyColumnName {
                path: path.to_path_buf(),
                line,
                column: i + 1,
            });
        }
        if let Some(first) = seen.insert(name, i + 1) {
            return Err(DataError::DuplicateColumn {
                path: path.to_path_buf(),
                line,
                name: name.clone(),
                first,
                column: i + 1,
            });
        }
    }
    let mut roles = vec![Role::Feature; header.len()];
    let mut assign = |role: Role, what: &'static str, name: &str| {
        let index = seen
            .get(name)
            .map(|c| c - 1)
            .ok_or_else(|| DataError::UnknownColumn {
                path: path.to_path_buf(),
                line,
                role: what,
                name: name.to_string(),
                available: header_for_message(header),
            })?;
        if roles[index] != Role::Feature {
            return Err(DataError::ColumnRoleClash {
                path: path.to_path_buf(),
                line,
                column: index + 1,
                name: name.to_string(),
                first: roles[index].describe(),
                second: role.describe(),
            });
        }
        roles[index] = role;
        Ok(())
    };
    // No label column (`LoadOptions::unlabelled`): rows to score; every label reads 0.
    if !options.label.is_empty() {
        assign(Role::Label, "label", &options.label)?;
    }
    if let Some(group) = &options.group {
        assign(Role::Group, "group", group)?;
    }
    for name in &options.exclude {
        assign(Role::Excluded, "excluded", name)?;
    }
    Ok(roles)
}

fn is_missing(cell: &str) -> bool {
    MISSING_MARKERS.iter().any(|m| cell.eq_ignore_ascii_case(m))
}

/// Parses a finite number, classifying failures as missing or non-numeric.
fn parse_number(cell: &str) -> Result<f64, Problem> {
    if is_missing(cell) {
        return Err(Problem::Missing);
    }
    match cell.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(Problem::NonNumeric),
    }
}

/// What is wrong with a cell.
#[derive(Debug, Clone, Copy)]
enum Problem {
    Missing,
    NonNumeric,
    BadLabel(&'static str),
}

impl Problem {
    /// The error for this problem at 1-based `line` and `column`.
    fn at(self, path: &Path, line: u64, column: usize, name: &str, value: &str) -> DataError {
        let (path, name, value) = (path.to_path_buf(), name.to_string(), value.to_string());
        match self {
            Problem::Missing => DataError::Missing {
                path,
                line,
                column,
                name,
                value,
            },
            Problem::NonNumeric => DataError::NonNumeric {
                path,
                line,
                column,
                name,
                value,
            },
            Problem::BadLabel(reason) => DataError::BadLabel {
                reason,
                path,
                line,
                column,
                name,
                value,
            },
        }
    }
}

/// The header as a missing column's message lists it; a header read as one column that holds
/// another usual delimiter is named as the likely cause (a file saved with `;` or tabs).
fn header_for_message(header: &[String]) -> String {
    let listed = header.join(", ");
    match header {
        [only] => match [';', '\t', '|'].into_iter().find(|d| only.contains(*d)) {
            Some(d) => format!(
                "{listed} (one column: the file looks delimited by {:?}; privlogit reads \
                 comma-separated values)",
                d
            ),
            None => listed,
        },
        _ => listed,
    }
}
