//! The exceptions the package raises: the message is the error's text as the command line
//! prints it (after `error: `), with a setting named by its Python keyword (`lam`) where the
//! command line names its flag (`--lambda`).

use pyo3::PyErr;
use pyo3::exceptions::PyValueError;

pyo3::create_exception!(
    privlogit,
    PrivlogitError,
    PyValueError,
    "An input, setting or protocol step privlogit refused (a ValueError)."
);
pyo3::create_exception!(
    privlogit,
    DataError,
    PrivlogitError,
    "A data file that cannot be read: the message names the file, line and column."
);
pyo3::create_exception!(
    privlogit,
    SettingError,
    PrivlogitError,
    "A setting refused: a value out of range, or settings that do not go together."
);
pyo3::create_exception!(
    privlogit,
    NetworkError,
    PrivlogitError,
    "A party or the network failed during a secure study (a lost peer, an abort, a timeout, a \
     refused certificate): run it again, or resume it from the aggregator's checkpoint."
);
pyo3::create_exception!(
    privlogit,
    EstimationError,
    PrivlogitError,
    "A model these data cannot estimate (separated classes, collinear or constant columns): no \
     model is published; penalise the fit or change the design."
);
pyo3::create_exception!(
    privlogit,
    BudgetExceeded,
    PrivlogitError,
    "A fit refused because it would take a data set past its ledger's privacy total."
);

/// The settings Python names by another keyword (`lambda` is a Python keyword): `(setting,
/// keyword)`.
const KEYWORDS: [(&str, &str); 2] = [("lambda", "lam"), ("source_lambda", "source_lam")];

/// A setting's Python keyword.
pub fn keyword(setting: &str) -> &str {
    KEYWORDS
        .iter()
        .find(|(s, _)| *s == setting)
        .map_or(setting, |(_, k)| k)
}

/// The setting a Python keyword names.
pub fn setting(keyword: &str) -> &str {
    KEYWORDS
        .iter()
        .find(|(_, k)| *k == keyword)
        .map_or(keyword, |(s, _)| s)
}

/// The library's mentions of settings (``setting `lambda` ``) as Python's keywords.
pub fn in_keywords(text: &str) -> String {
    privlogit::settings::words::spell_settings(text, |key| format!("`{}`", keyword(key)))
}

/// `e` as a [`PrivlogitError`] with its message.
pub fn error(e: impl std::fmt::Display) -> PyErr {
    PrivlogitError::new_err(in_keywords(&e.to_string()))
}

/// A library error as the exception its kind calls for: `DataError` for a file, a row or a
/// value, `BudgetExceeded` for a release the ledger refuses, `SettingError` for a refused
/// setting, `NetworkError` for a lost party or network, `EstimationError` for a model the data
/// cannot estimate, `PrivlogitError` otherwise (every one a `PrivlogitError`).
pub fn raise(e: privlogit::error::Error) -> PyErr {
    let message = in_keywords(&e.to_string());
    if e.is_over_budget() {
        BudgetExceeded::new_err(message)
    } else if e.is_data() {
        DataError::new_err(message)
    } else if e.is_setting() {
        SettingError::new_err(message)
    } else if e.is_network() {
        NetworkError::new_err(message)
    } else if e.is_estimation() {
        EstimationError::new_err(message)
    } else {
        PrivlogitError::new_err(message)
    }
}
