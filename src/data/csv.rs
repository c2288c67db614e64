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

use super::{DataError, Dataset, LoadOptions, Table};

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

/// Reads the CSV file at `path`.
pub fn read(path: &Path, options: &LoadOptions) -> Result<Table, DataError> {
    let io = |source| DataError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(::csv::Trim::All)
        .from_reader(BufReader::with_capacity(1 << 20, file));
    // Line numbers are worked out only when an error needs one (see `line_at`).
    let line_of = |byte: u64| line_at(path, byte);

    let mut record = ::csv::StringRecord::new();
    let syntax = |e: ::csv::Error| match e.kind() {
        ::csv::ErrorKind::Io(_) => match e.into_kind() {
            ::csv::ErrorKind::Io(source) => io(source),
            _ => unreachable!("kind checked above"),
        },
        _ => DataError::Syntax {
            path: path.to_path_buf(),
            line: e.position().map_or(1, |p| line_of(p.byte())),
            message: e.to_string(),
        },
    };
    if !reader.read_record(&mut record).map_err(syntax)? {
        return Err(DataError::Empty {
            path: path.to_path_buf(),
        });
    }
    let header: Vec<String> = record
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
    let header_line = line_of(record.position().map_or(0, |p| p.byte()));
    let roles = assign_roles(path, header_line, &header, options)?;
    let names: Vec<String> = header
        .iter()
        .zip(&roles)
        .filter(|(_, r)| **r == Role::Feature)
        .map(|(n, _)| n.clone())
        .collect();
    if names.is_empty() {
        return Err(DataError::NoFeatures {
            path: path.to_path_buf(),
        });
    }

    let mut values: Vec<f64> = Vec::new();
    let mut labels: Vec<f64> = Vec::new();
    let mut groups: Option<Vec<String>> = options.group.as_ref().map(|_| Vec::new());
    while reader.read_record(&mut record).map_err(syntax)? {
        let line = || line_of(record.position().map_or(0, |p| p.byte()));
        if record.len() != header.len() {
            return Err(DataError::Ragged {
                path: path.to_path_buf(),
                line: line(),
                column: record.len().min(header.len()) + 1,
                expected: header.len(),
                found: record.len(),
            });
        }
        for (index, (cell, role)) in record.iter().zip(&roles).enumerate() {
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
                    if v != 0.0 && v != 1.0 {
                        return Err(cell_error(Problem::BadLabel));
                    }
                    labels.push(v);
                }
            }
        }
    }
    if labels.is_empty() {
        return Err(DataError::NoRows {
            path: path.to_path_buf(),
            line: header_line + 1,
        });
    }
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
                available: header.join(", "),
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
    assign(Role::Label, "label", &options.label)?;
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
    BadLabel,
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
            Problem::BadLabel => DataError::BadLabel {
                path,
                line,
                column,
                name,
                value,
            },
        }
    }
}
