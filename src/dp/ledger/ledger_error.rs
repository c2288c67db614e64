//! Why a fit was refused or the ledger could not be used: shared by the ledger and by
//! [`super::print`], which reads the data sets it knows by their rows.

use std::path::PathBuf;

use thiserror::Error;

use super::epsilon::Epsilon;

/// Why a fit was refused or the ledger could not be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The fit would exceed the total.
    #[error(
        "privacy budget exceeded on {file} ({dataset}): {spent} already spent + {asked} asked > total {total}"
    )]
    Exceeded {
        /// The data set's account (and, when recognised by shared rows, which one).
        dataset: String,
        /// The file it was read from.
        file: String,
        /// Spent before this fit.
        spent: Epsilon,
        /// This fit's charge.
        asked: Epsilon,
        /// The ledger's total.
        total: Epsilon,
    },
    /// A charge that cannot be recorded.
    #[error("cannot charge {epsilon} to {file}: a charge must be finite and non-negative")]
    Charge {
        /// The file.
        file: String,
        /// The charge.
        epsilon: f64,
    },
    /// The total is not a positive number.
    #[error("invalid privacy total {0}: must be at least 0.000001 and finite")]
    Total(f64),
    /// The ledger's total is stored; another one was asked.
    #[error(
        "{path}: this ledger's total is {stored}; setting `budget` {asked} differs (a total is fixed when the ledger is created; start a new ledger for a new total)"
    )]
    TotalChanged {
        /// The ledger.
        path: PathBuf,
        /// Its stored total.
        stored: Epsilon,
        /// The total asked for.
        asked: Epsilon,
    },
    /// A new ledger needs a total.
    #[error("{0}: no ledger there yet; give its total with setting `budget`")]
    NoTotal(PathBuf),
    /// The ledger file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The ledger.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The ledger file is not a ledger.
    #[error("{path}:{line}:{column}: not a privacy ledger: {message}")]
    Parse {
        /// The ledger.
        path: PathBuf,
        /// Line of the fault.
        line: usize,
        /// Column of the fault.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// The ledger's key file is missing or unusable.
    #[error("{path}: {message}")]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The ledger was changed by something other than privlogit.
    #[error(
        "{0}: the ledger was changed outside privlogit (its seal does not match its key file): refused; restore it from a copy"
    )]
    Tampered(PathBuf),
    /// An older copy of the ledger was put back (its save count is behind its head file's).
    #[error(
        "{path}: an older copy of the ledger (save {saves}; its head file says {head} saves): \
         refused, as it would forget what was spent since; put the latest copy back"
    )]
    RolledBack {
        /// The ledger.
        path: PathBuf,
        /// Its save count.
        saves: u64,
        /// The head file's.
        head: u64,
    },
    /// A data set could not be read to know it by its rows.
    #[error("{0}")]
    Data(String),
}
