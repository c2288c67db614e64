//! What the application layer ([`crate::study`], [`crate::fit`], [`crate::jobs`])
//! can fail with: one enum whose variants a caller can match (the command
//! line maps them to messages and exit codes, Python to exception classes), each carrying the
//! facts a user needs to fix the problem.

use std::path::PathBuf;

use privlogit_protocols::FitError;
use privlogit_protocols::secure::SecureError;
use privlogit_protocols::secure::study_protocol::StudyError;

use crate::data::DataError;
use crate::dl::DlError;
use crate::dp::DpError;
use crate::dp::ledger::LedgerError;
use crate::dp::release::ReleaseError;
use crate::model::ModelError;

/// Why a fit, a study or a release could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting's value is malformed or out of range (`origin` names the file and key, or the
    /// flag).
    #[error("{origin} {why}")]
    Setting {
        /// `study.toml: lambda` or setting `lambda`.
        origin: String,
        /// What is wrong with it.
        why: String,
    },
    /// Settings that cannot go together, or a setting a plan needs that is missing.
    #[error("{0}")]
    Plan(String),
    /// A study file that cannot be read as one (its line and column when known).
    #[error("{path}{at}: {why}", at = at(*.line, *.column))]
    StudyFile {
        /// The file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong.
        why: String,
    },
    /// A file that could not be read or written.
    #[error("{what} {path}: {source}")]
    Io {
        /// "cannot read", "cannot write".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A party's data.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The optimiser's settings or run.
    #[error(transparent)]
    Fit(#[from] FitError),
    /// A secure study's party failed or refused.
    #[error(transparent)]
    Study(#[from] StudyError),
    /// A secure role failed.
    #[error(transparent)]
    Secure(#[from] SecureError),
    /// The privacy ledger refused a release (over budget) or could not be used.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A DP method's parameters or data.
    #[error(transparent)]
    Release(#[from] ReleaseError),
    /// A DP parameter.
    #[error(transparent)]
    Dp(#[from] DpError),
    /// A design an unpenalised fit cannot estimate (collinear columns, separated classes).
    #[error(transparent)]
    Design(#[from] crate::inference::estimability::DesignError),
    /// Inference at the optimum.
    #[error(transparent)]
    Inference(#[from] crate::inference::InferenceError),
    /// Distributed DP deep learning.
    #[error(transparent)]
    Dl(#[from] DlError),
    /// A model file or the rows it is applied to.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A connection (listening, connecting, admitting the parties).
    #[error("{0}")]
    Network(std::io::Error),
}

impl Error {
    /// A plan refusal in words.
    pub fn plan(why: impl Into<String>) -> Self {
        Error::Plan(why.into())
    }

    /// A setting refusal.
    pub fn setting(origin: impl Into<String>, why: impl Into<String>) -> Self {
        Error::Setting {
            origin: origin.into(),
            why: why.into(),
        }
    }

    /// A file that could not be read.
    pub fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            what: "cannot read",
            path: path.into(),
            source,
        }
    }

    /// A file that could not be written.
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            what: "cannot write",
            path: path.into(),
            source,
        }
    }

    /// Whether the privacy ledger refused: a release over budget.
    pub fn is_over_budget(&self) -> bool {
        matches!(self, Error::Ledger(LedgerError::Exceeded { .. }))
    }

    /// Whether a party or the network failed during a secure study (a lost peer, a refused
    /// certificate, an abort, a timeout): the study may succeed when run again or resumed,
    /// where a bad input will not.
    pub fn is_network(&self) -> bool {
        let lost = |e: &SecureError| e.transport().is_some();
        // The optimiser prints its backend's error in its own message, not as a source.
        let fit_lost = |f: &FitError| match f {
            FitError::Aggregation(backend) => {
                backend.downcast_ref::<SecureError>().is_some_and(lost)
            }
            _ => false,
        };
        match self {
            Error::Secure(e) | Error::Study(StudyError::Secure(e) | StudyError::Party(_, e)) => {
                lost(e)
            }
            Error::Fit(f) | Error::Study(StudyError::Fit(f)) => fit_lost(f),
            _ => false,
        }
    }

    /// Whether a setting or the plan it makes was refused (a value out of range, settings that
    /// do not go together), for callers that report them apart (Python's `SettingError`).
    pub fn is_setting(&self) -> bool {
        let fit = |f: &FitError| {
            matches!(
                f,
                FitError::InvalidParameter { .. }
                    | FitError::InitialLength { .. }
                    | FitError::CentreLength { .. }
            )
        };
        match self {
            Error::Setting { .. } | Error::Plan(_) => true,
            Error::Fit(f) | Error::Study(StudyError::Fit(f)) => fit(f),
            _ => false,
        }
    }

    /// Whether the model cannot be estimated from these data (separated classes, collinear or
    /// constant columns), found before or during the fit: no model is published, and the fix
    /// is in the design or the penalty, not a rerun (Python's `EstimationError`).
    pub fn is_estimation(&self) -> bool {
        let secure = |e: &SecureError| {
            matches!(
                e,
                SecureError::Separated { .. } | SecureError::Singular { .. }
            )
        };
        match self {
            Error::Design(_)
            | Error::Fit(FitError::BoundNotPositiveDefinite)
            | Error::Study(StudyError::Fit(FitError::BoundNotPositiveDefinite)) => true,
            Error::Secure(e) | Error::Study(StudyError::Secure(e) | StudyError::Party(_, e)) => {
                secure(e)
            }
            _ => false,
        }
    }

    /// Whether it is about the data (a file, a row, a value), for callers that report data
    /// errors apart (Python's `DataError`).
    pub fn is_data(&self) -> bool {
        matches!(self, Error::Data(_) | Error::StudyFile { .. })
    }
}

fn at(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}
