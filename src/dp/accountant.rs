//! The privacy accountant: what each data set has spent, and a refusal before a fit that would
//! take any data set past its total.
//!
//! Spending composes sequentially (basic composition: budgets add up), the bound every
//! method here is proved under. Data sets are named by the caller (the CLI uses the CSV's
//! canonical path); the ledger file is JSON, rewritten atomically after each recorded fit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Epsilon spent on one data set by one fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// Which data set.
    pub dataset: String,
    /// How much (infinity for a non-private fit).
    pub epsilon: f64,
}

/// Why a fit was refused or the ledger could not be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AccountantError {
    /// The fit would exceed the total.
    #[error(
        "privacy budget exceeded on {dataset}: {spent} already spent + {asked} asked > total {total}"
    )]
    Exceeded {
        /// The data set.
        dataset: String,
        /// Spent before this fit.
        spent: f64,
        /// This fit's charge.
        asked: f64,
        /// The configured total.
        total: f64,
    },
    /// A charge that cannot be recorded.
    #[error("cannot charge {epsilon} to {dataset}: a charge must be finite and non-negative")]
    Charge {
        /// The data set.
        dataset: String,
        /// The charge.
        epsilon: f64,
    },
    /// The total is not a positive number.
    #[error("invalid privacy total {0}: must be positive (infinity allowed)")]
    Total(f64),
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
}

/// Budget spent per data set against one total per data set.
#[derive(Debug, Clone, PartialEq)]
pub struct Accountant {
    total: f64,
    spent: BTreeMap<String, f64>,
}

impl Accountant {
    /// Nothing spent yet; every data set may spend up to `total`.
    pub fn new(total: f64) -> Result<Self, AccountantError> {
        if total.is_nan() || total <= 0.0 {
            return Err(AccountantError::Total(total));
        }
        Ok(Self {
            total,
            spent: BTreeMap::new(),
        })
    }

    /// The ledger at `path` (empty if the file does not exist yet).
    pub fn load(path: &Path, total: f64) -> Result<Self, AccountantError> {
        let mut accountant = Self::new(total)?;
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(accountant),
            Err(source) => {
                return Err(AccountantError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let parse = |line, column, message: String| AccountantError::Parse {
            path: path.to_owned(),
            line,
            column,
            message,
        };
        let spent: BTreeMap<String, f64> =
            serde_json::from_str(&text).map_err(|e| parse(e.line(), e.column(), e.to_string()))?;
        for (dataset, &eps) in &spent {
            if eps.is_nan() || eps < 0.0 {
                return Err(parse(1, 1, format!("{dataset} has spent {eps}")));
            }
        }
        accountant.spent = spent;
        Ok(accountant)
    }

    /// Writes the ledger to `path` atomically (a temporary file renamed over it).
    pub fn save(&self, path: &Path) -> Result<(), AccountantError> {
        let io = |source| AccountantError::Io {
            path: path.to_owned(),
            source,
        };
        let text = serde_json::to_string_pretty(&self.spent).expect("a map of numbers");
        crate::output::write_text(path, &(text + "\n")).map_err(io)
    }

    /// What `dataset` has spent so far.
    pub fn spent(&self, dataset: &str) -> f64 {
        self.spent.get(dataset).copied().unwrap_or(0.0)
    }

    /// Refuses `charges` (all or nothing) if any data set would pass the total, or if a charge
    /// is not a finite, non-negative number (a non-private fit cannot be recorded).
    pub fn check(&self, charges: &[Charge]) -> Result<(), AccountantError> {
        let mut after = self.spent.clone();
        for c in charges {
            if !(c.epsilon.is_finite() && c.epsilon >= 0.0) {
                return Err(AccountantError::Charge {
                    dataset: c.dataset.clone(),
                    epsilon: c.epsilon,
                });
            }
            let spent = after.entry(c.dataset.clone()).or_insert(0.0);
            if *spent + c.epsilon > self.total {
                return Err(AccountantError::Exceeded {
                    dataset: c.dataset.clone(),
                    spent: *spent,
                    asked: c.epsilon,
                    total: self.total,
                });
            }
            *spent += c.epsilon;
        }
        Ok(())
    }

    /// Runs `work` holding an exclusive lock on `<path>.lock`, so that concurrent fits on one
    /// ledger read, charge and save it one at a time.
    pub fn locked<T>(
        path: &Path,
        work: impl FnOnce() -> Result<T, AccountantError>,
    ) -> Result<T, AccountantError> {
        let lock_path = path.with_extension("lock");
        let io = |source| AccountantError::Io {
            path: lock_path.clone(),
            source,
        };
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io)?;
        lock.lock().map_err(io)?;
        let result = work();
        drop(lock); // closing the file releases the lock
        result
    }

    /// Under the ledger's lock: reloads it, charges, saves (refusing if another fit has spent
    /// the room in the meantime).
    pub fn record(path: &Path, total: f64, charges: &[Charge]) -> Result<(), AccountantError> {
        Self::locked(path, || {
            let mut accountant = Self::load(path, total)?;
            accountant.charge(charges)?;
            accountant.save(path)
        })
    }

    /// Checks, then records `charges`.
    pub fn charge(&mut self, charges: &[Charge]) -> Result<(), AccountantError> {
        self.check(charges)?;
        for c in charges {
            *self.spent.entry(c.dataset.clone()).or_insert(0.0) += c.epsilon;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(dataset: &str, epsilon: f64) -> Charge {
        Charge {
            dataset: dataset.into(),
            epsilon,
        }
    }

    #[test]
    fn refuses_a_fit_past_the_total() {
        let mut a = Accountant::new(2.0).expect("valid");
        a.charge(&[charge("src", 1.0), charge("tgt", 1.5)])
            .expect("fits");
        a.charge(&[charge("src", 1.0)]).expect("exactly the total");
        let e = a
            .charge(&[charge("tgt", 0.25), charge("src", 0.5)])
            .expect_err("src is full");
        assert!(matches!(e, AccountantError::Exceeded { ref dataset, .. } if dataset == "src"));
        // All or nothing: tgt was not charged either.
        assert_eq!(a.spent("tgt"), 1.5);
        // A non-private fit spends infinity; that, NaN and negative charges cannot be recorded.
        for bad in [f64::INFINITY, f64::NAN, -0.5] {
            assert!(matches!(
                a.check(&[charge("new", bad)]),
                Err(AccountantError::Charge { .. })
            ));
        }
        assert!(Accountant::new(0.0).is_err());
    }

    #[test]
    fn ledger_round_trips_and_reports_where_it_is_broken() {
        let dir = std::env::temp_dir().join(format!("privlogit-ledger-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("ledger.json");
        let mut a = Accountant::load(&path, 3.0).expect("no file yet");
        a.charge(&[charge("a.csv", 1.25)]).expect("fits");
        a.save(&path).expect("saved");
        let b = Accountant::load(&path, 3.0).expect("read back");
        assert_eq!(b.spent("a.csv"), 1.25);
        Accountant::record(&path, 3.0, &[charge("a.csv", 1.5)]).expect("under the lock");
        assert_eq!(
            Accountant::load(&path, 3.0).expect("read").spent("a.csv"),
            2.75
        );
        assert!(Accountant::record(&path, 3.0, &[charge("a.csv", 0.5)]).is_err());
        std::fs::write(&path, "{\n  \"a.csv\": oops\n}").expect("write");
        let e = Accountant::load(&path, 3.0).expect_err("broken");
        assert!(e.to_string().contains("ledger.json:2:"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
