//! Why a source's rows could not be read, typed: every source and the cluster's layers report
//! through it, so it stands apart from the [`super::RowSource`] trait that returns it.

use thiserror::Error;

/// A source failed while its rows were being read (a file changed or became unreadable after it
/// was opened, a value that does not parse): where, and why. The why is a [`RowsProblem`] so a
/// caller can tell a bad value from a changed file without reading the message.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{source_name}: {problem}")]
#[non_exhaustive]
pub struct RowsError {
    /// The source, as [`RowSource::describe`](super::RowSource::describe) names it (with a line
    /// or row where known).
    pub source_name: String,
    /// What went wrong.
    pub problem: RowsProblem,
}

impl RowsError {
    /// An error in `source_name` (a [`RowsProblem`], or a reason already worded elsewhere).
    pub fn new(source_name: impl Into<String>, problem: impl Into<RowsProblem>) -> Self {
        Self {
            source_name: source_name.into(),
            problem: problem.into(),
        }
    }
}

/// Why a source's rows could not be read: typed, so callers match on it, and worded when shown.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum RowsProblem {
    /// A value that is NaN or infinite where every value must be a finite number.
    #[error("column {column:?} is {value} (every value must be a finite number)")]
    NotFinite {
        /// The column's name.
        column: String,
        /// The value met.
        value: f64,
    },
    /// A row (counted from 1) with an entry that is not finite, met while scaling it.
    #[error("row {row} has an entry that is not finite: it cannot be scaled to unit norm")]
    RowNotFinite {
        /// The row, counted from 1.
        row: usize,
    },
    /// A label the family does not take.
    #[error("the label {label} {why}")]
    Label {
        /// The label met.
        label: f64,
        /// What the family asks of labels.
        why: &'static str,
    },
    /// A chunk whose shape is not the source's.
    #[error("a chunk of {rows} x {columns} with {labels} labels, expected {expected} columns")]
    ChunkShape {
        /// Rows of the chunk.
        rows: usize,
        /// Columns of the chunk.
        columns: usize,
        /// Labels of the chunk.
        labels: usize,
        /// Columns of the source.
        expected: usize,
    },
    /// A partition whose rows, labels and names do not agree.
    #[error("a partition of {rows} x {columns} with {labels} labels and {names} names")]
    PartitionShape {
        /// Rows of the partition.
        rows: usize,
        /// Columns of the partition.
        columns: usize,
        /// Labels of the partition.
        labels: usize,
        /// Column names given.
        names: usize,
    },
    /// Standardisation statistics of the wrong length, or not finite and positive.
    #[error("unusable standardisation statistics for {features} features")]
    Standardization {
        /// Features of the source.
        features: usize,
    },
    /// Rows asked beyond the source's end.
    #[error("rows {start}..{end} asked of {rows} rows")]
    OutOfRange {
        /// First row asked.
        start: usize,
        /// One past the last row asked.
        end: usize,
        /// Rows of the source.
        rows: usize,
    },
    /// The source holds another number of rows than when it was opened or counted.
    #[error("held {then} rows when opened, {now} now")]
    RowsChanged {
        /// Rows when opened.
        then: usize,
        /// Rows now.
        now: usize,
    },
    /// A cluster's partitions hold another number of rows than when they were counted.
    #[error("the partitions hold {now} rows, {counted} when they were counted")]
    PartitionRows {
        /// Rows when counted.
        counted: usize,
        /// Rows now.
        now: usize,
    },
    /// A partition said to start beyond any source's rows.
    #[error("its first row {offset} is beyond any source's rows")]
    OffsetBeyond {
        /// The partition's first row.
        offset: u64,
    },
    /// A cluster's rows out of order.
    #[error("rows from {got} where row {due} was due")]
    OutOfOrder {
        /// The first row sent.
        got: u64,
        /// The row due.
        due: u64,
    },
    /// Bytes that do not decode.
    #[error("malformed: {0}")]
    Malformed(&'static str),
    /// An encoded tag that names nothing known.
    #[error("malformed: unknown {what} {tag}")]
    UnknownTag {
        /// What the tag selects (a layer, a partial, a family, a kernel).
        what: &'static str,
        /// The tag read.
        tag: u8,
    },
    /// Rows that do not form a matrix of the source's width.
    #[error("{0}")]
    Shape(#[source] ndarray::ShapeError),
    /// The file or stream could not be read.
    #[error("{0}")]
    Unreadable(#[source] Cause),
    /// A value another layer refused (a data file's decoder), with its error.
    #[error("{0}")]
    Data(#[source] Cause),
    /// A missing value in a row (counted from 1) and column.
    #[error("row {row}, column {column:?}: missing value")]
    MissingValue {
        /// The row, counted from 1.
        row: usize,
        /// The column's name.
        column: String,
    },
    /// A value that is not finite in a row (counted from 1) and column.
    #[error("row {row}, column {column:?}: {value} is not a finite number")]
    ValueNotFinite {
        /// The row, counted from 1.
        row: usize,
        /// The column's name.
        column: String,
        /// The value met.
        value: f64,
    },
    /// A label the family does not take, in a row counted from 1.
    #[error("row {row}, label: {label} {why}")]
    RowLabel {
        /// The row, counted from 1.
        row: usize,
        /// The label met.
        label: f64,
        /// What the family asks of labels.
        why: &'static str,
    },
    /// A column that ends before its row group does.
    #[error("column {column:?} ends early in row group {group} ({got} of {expected} rows)")]
    ColumnEnds {
        /// The column's name.
        column: String,
        /// The row group.
        group: usize,
        /// Values read.
        got: usize,
        /// Rows of the group.
        expected: usize,
    },
    /// A column that could not be read (the reader's reason).
    #[error("column {column:?}: {reason}")]
    Column {
        /// The column's name.
        column: String,
        /// The reader's reason.
        reason: String,
    },
    /// Row groups that hold another number of rows than the file's footer says.
    #[error("row groups hold {held} rows, the footer says {footer}")]
    RowGroups {
        /// Rows the groups hold.
        held: usize,
        /// Rows the footer says.
        footer: usize,
    },
    /// A weight that is not a positive number.
    #[error("weight {value} in column {column:?} is not a positive number")]
    Weight {
        /// The weights' column.
        column: String,
        /// The weight met.
        value: f64,
    },
    /// A log-link offset whose exp overflows.
    #[error(
        "offset {value} in column {column:?} is past {limit}: its exp overflows (an offset is the \
         log of the exposure)"
    )]
    Offset {
        /// The offset's column.
        column: String,
        /// The offset met.
        value: f64,
        /// The largest offset taken.
        limit: f64,
    },
    /// A source read in order asked for a run of rows.
    #[error("this source is read in order only")]
    SequentialOnly,
    /// A reason worded by another layer (a data file's parser, a Python exception, a model's
    /// check), kept as given.
    #[error("{0}")]
    Other(String),
}

impl From<String> for RowsProblem {
    fn from(reason: String) -> Self {
        RowsProblem::Other(reason)
    }
}

impl From<&str> for RowsProblem {
    fn from(reason: &str) -> Self {
        RowsProblem::Other(reason.into())
    }
}

/// The error underneath a [`RowsProblem`] (an I/O error, a data file's error), shared so that
/// [`RowsError`] stays `Clone`; equal when the messages are.
#[derive(Debug, Clone)]
pub struct Cause(pub std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// `error`, kept as a cause.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(error))
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A problem is matched as data and worded with the source's name.
    #[test]
    fn a_rows_error_keeps_its_facts_as_data() {
        let e = RowsError::new(
            "d.csv",
            RowsProblem::OutOfRange {
                start: 3,
                end: 9,
                rows: 5,
            },
        );
        assert!(matches!(
            e.problem,
            RowsProblem::OutOfRange {
                end: 9,
                rows: 5,
                ..
            }
        ));
        assert_eq!(e.to_string(), "d.csv: rows 3..9 asked of 5 rows");
        let io = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "cut short");
        let e = RowsError::new("d.bin", RowsProblem::Unreadable(Cause::new(io)));
        assert_eq!(e.to_string(), "d.bin: cut short");
        let RowsProblem::Unreadable(cause) = &e.problem else {
            panic!("{e:?}");
        };
        assert!(std::error::Error::source(cause).is_some());
        assert_eq!(e.clone(), e);
    }
}
