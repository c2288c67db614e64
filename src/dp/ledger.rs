//! The privacy ledger: what each data set has spent, against a total stored in the ledger
//! itself, and a refusal before a fit that would take any data set past it.
//!
//! Spending composes sequentially (basic composition: budgets add up), the bound every
//! method here is proved under. Amounts are kept as whole micro-epsilons (`u64`), so that
//! three charges of 0.1 fill a total of 0.3 exactly (in `f64` they pass it by 4e-17 and the
//! third fit would be refused). A charge finer than a micro-epsilon is rounded up and a total
//! rounded down, so the ledger never under-counts. Data sets are named by the caller (the CLI
//! uses the SHA-256 of the file's bytes, so a copy of a file is the same data set). The ledger
//! file is JSON, rewritten atomically after each recorded fit, under an exclusive lock.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The ledger format's name, first in the file.
const FORMAT: &str = "privlogit privacy ledger v2";

/// An amount of epsilon in whole micro-epsilons (1e-6), exact under addition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Epsilon(u64);

/// How a decimal finer than a micro-epsilon is rounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Charges: never under-count what a fit spent.
    Up,
    /// Totals: never allow more than was set.
    Down,
}

impl Epsilon {
    /// Micro-epsilons in one epsilon.
    const SCALE: u64 = 1_000_000;
    /// The largest amount kept (about 1.8e13 epsilon, far past any meaningful budget).
    const MAX: Epsilon = Epsilon(u64::MAX);

    /// Whole micro-epsilons.
    pub fn micros(self) -> u64 {
        self.0
    }

    /// A charge: `value` rounded up to a micro-epsilon. Exact for every decimal with at most
    /// six places (the value is read through its shortest decimal form, so `0.1` is 100,000
    /// micro-epsilons, not the binary fraction just above it).
    pub fn charge(value: f64) -> Option<Epsilon> {
        Self::from_f64(value, Round::Up)
    }

    /// A total: `value` rounded down to a micro-epsilon; `None` unless it is positive after
    /// rounding.
    pub fn total(value: f64) -> Option<Epsilon> {
        Self::from_f64(value, Round::Down).filter(|e| e.0 > 0)
    }

    fn from_f64(value: f64, round: Round) -> Option<Epsilon> {
        if !(value.is_finite() && value >= 0.0) {
            return None;
        }
        // Rust prints an f64 in its shortest round-trip decimal form, never in exponent form.
        Self::parse(&format!("{value}"), round)
    }

    fn parse(text: &str, round: Round) -> Option<Epsilon> {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        if whole.is_empty() && fraction.is_empty()
            || !whole
                .bytes()
                .chain(fraction.bytes())
                .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let (kept, rest) = fraction.split_at(fraction.len().min(6));
        let kept: u64 = format!("{kept:0<6}").parse().ok()?;
        let finer = rest.bytes().any(|b| b != b'0');
        let micros = whole.checked_mul(Self::SCALE)?.checked_add(kept)?;
        let micros = match (finer, round) {
            (true, Round::Up) => micros.checked_add(1)?,
            _ => micros,
        };
        Some(Epsilon(micros))
    }

    fn saturating_add(self, other: Epsilon) -> Epsilon {
        Epsilon(self.0.saturating_add(other.0))
    }
}

impl fmt::Display for Epsilon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, fraction) = (self.0 / Self::SCALE, self.0 % Self::SCALE);
        if fraction == 0 {
            write!(f, "{whole}")
        } else {
            let digits = format!("{fraction:06}");
            write!(f, "{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

impl Serialize for Epsilon {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Epsilon {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Epsilon::parse(&text, Round::Up).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{text:?} is not a decimal epsilon (digits, at most one '.')"
            ))
        })
    }
}

/// The ledger's name for a data file: `sha256:` and the hash of its bytes, so that a copy of
/// the file (another path, the same records) is the same data set and spends from the same
/// budget.
pub fn dataset_name(path: &Path) -> std::io::Result<String> {
    Ok(format!(
        "sha256:{}",
        file_hash(path)?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

/// SHA-256 of a file's bytes.
pub fn file_hash(path: &Path) -> std::io::Result<[u8; 32]> {
    use sha2::{Digest, Sha256};
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hasher.finalize().into())
}

/// Epsilon spent on one data set by one fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// Which data set (the CLI: `sha256:` and the file's hash).
    pub dataset: String,
    /// A file it was read from, kept in the ledger for people reading it.
    pub file: String,
    /// How much (infinity for a non-private fit, which cannot be charged).
    pub epsilon: f64,
}

/// Why a fit was refused or the ledger could not be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The fit would exceed the total.
    #[error(
        "privacy budget exceeded on {file} ({dataset}): {spent} already spent + {asked} asked > total {total}"
    )]
    Exceeded {
        /// The data set.
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
        "{path}: this ledger's total is {stored}; --budget {asked} differs (a total is fixed when the ledger is created; start a new ledger for a new total)"
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
    #[error("{0}: no ledger there yet; give its total with --budget")]
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
}

/// What one data set has spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    /// Epsilon spent so far.
    pub spent: Epsilon,
    /// Files it was read from (for people; the key is the content).
    pub files: Vec<String>,
}

/// The ledger as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    format: String,
    total: Epsilon,
    spent: BTreeMap<String, Account>,
}

/// Budget spent per data set against one total per data set.
#[derive(Debug, Clone, PartialEq)]
pub struct Ledger {
    total: Epsilon,
    accounts: BTreeMap<String, Account>,
}

impl Ledger {
    /// Nothing spent yet; every data set may spend up to `total`.
    pub fn new(total: f64) -> Result<Self, LedgerError> {
        Ok(Self {
            total: Epsilon::total(total).ok_or(LedgerError::Total(total))?,
            accounts: BTreeMap::new(),
        })
    }

    /// The ledger at `path`. A new ledger (no file yet) takes `total`, which is then required;
    /// an existing one keeps its stored total, and a different `total` is refused (a total
    /// raised after the fact would make every earlier refusal meaningless).
    pub fn load(path: &Path, total: Option<f64>) -> Result<Self, LedgerError> {
        let asked = match total {
            Some(t) => Some(Epsilon::total(t).ok_or(LedgerError::Total(t))?),
            None => None,
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let total = asked.ok_or_else(|| LedgerError::NoTotal(path.to_owned()))?;
                return Ok(Self {
                    total,
                    accounts: BTreeMap::new(),
                });
            }
            Err(source) => {
                return Err(LedgerError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let parse = |line, column, message: String| LedgerError::Parse {
            path: path.to_owned(),
            line,
            column,
            message,
        };
        let stored: Stored =
            serde_json::from_str(&text).map_err(|e| parse(e.line(), e.column(), e.to_string()))?;
        if stored.format != FORMAT {
            return Err(parse(
                1,
                1,
                format!("format {:?}, expected {FORMAT:?}", stored.format),
            ));
        }
        if stored.total.0 == 0 {
            return Err(parse(1, 1, "its total is 0".into()));
        }
        if let Some(asked) = asked.filter(|&a| a != stored.total) {
            return Err(LedgerError::TotalChanged {
                path: path.to_owned(),
                stored: stored.total,
                asked,
            });
        }
        Ok(Self {
            total: stored.total,
            accounts: stored.spent,
        })
    }

    /// Writes the ledger to `path` atomically (a temporary file renamed over it).
    pub fn save(&self, path: &Path) -> Result<(), LedgerError> {
        let io = |source| LedgerError::Io {
            path: path.to_owned(),
            source,
        };
        let stored = Stored {
            format: FORMAT.into(),
            total: self.total,
            spent: self.accounts.clone(),
        };
        let text = serde_json::to_string_pretty(&stored).expect("strings and lists");
        crate::output::write_text(path, &(text + "\n")).map_err(io)
    }

    /// The total each data set may spend.
    pub fn total(&self) -> Epsilon {
        self.total
    }

    /// What `dataset` has spent so far.
    pub fn spent(&self, dataset: &str) -> Epsilon {
        self.accounts
            .get(dataset)
            .map(|a| a.spent)
            .unwrap_or_default()
    }

    /// Refuses `charges` (all or nothing) if any data set would pass the total, or if a charge
    /// is not a finite, non-negative number (a non-private fit cannot be recorded).
    pub fn check(&self, charges: &[Charge]) -> Result<(), LedgerError> {
        self.after(charges).map(drop)
    }

    /// Checks, then records `charges`.
    pub fn charge(&mut self, charges: &[Charge]) -> Result<(), LedgerError> {
        self.accounts = self.after(charges)?;
        Ok(())
    }

    /// The accounts after `charges`, or the first refusal.
    fn after(&self, charges: &[Charge]) -> Result<BTreeMap<String, Account>, LedgerError> {
        let mut after = self.accounts.clone();
        for c in charges {
            let asked = Epsilon::charge(c.epsilon).ok_or_else(|| LedgerError::Charge {
                file: c.file.clone(),
                epsilon: c.epsilon,
            })?;
            let account = after.entry(c.dataset.clone()).or_insert(Account {
                spent: Epsilon::default(),
                files: Vec::new(),
            });
            let sum = account.spent.saturating_add(asked);
            if sum > self.total || sum == Epsilon::MAX {
                return Err(LedgerError::Exceeded {
                    dataset: c.dataset.clone(),
                    file: c.file.clone(),
                    spent: account.spent,
                    asked,
                    total: self.total,
                });
            }
            account.spent = sum;
            if !account.files.contains(&c.file) {
                account.files.push(c.file.clone());
            }
        }
        Ok(after)
    }

    /// Runs `work` holding an exclusive lock on `<path>.lock`, so that concurrent fits on one
    /// ledger read, charge and save it one at a time.
    pub fn locked<T>(
        path: &Path,
        work: impl FnOnce() -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        let lock_path = path.with_extension("lock");
        let io = |source| LedgerError::Io {
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
    pub fn record(path: &Path, total: Option<f64>, charges: &[Charge]) -> Result<(), LedgerError> {
        Self::locked(path, || {
            let mut ledger = Self::load(path, total)?;
            ledger.charge(charges)?;
            ledger.save(path)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(dataset: &str, epsilon: f64) -> Charge {
        Charge {
            dataset: dataset.into(),
            file: format!("{dataset}.csv"),
            epsilon,
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("privlogit-ledger-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir.join("ledger.json")
    }

    #[test]
    fn refuses_a_fit_past_the_total() {
        let mut a = Ledger::new(2.0).expect("valid");
        a.charge(&[charge("src", 1.0), charge("tgt", 1.5)])
            .expect("fits");
        a.charge(&[charge("src", 1.0)]).expect("exactly the total");
        let e = a
            .charge(&[charge("tgt", 0.25), charge("src", 0.5)])
            .expect_err("src is full");
        assert!(matches!(e, LedgerError::Exceeded { ref dataset, .. } if dataset == "src"));
        // All or nothing: tgt was not charged either.
        assert_eq!(a.spent("tgt").to_string(), "1.5");
        // A non-private fit spends infinity; that, NaN and negative charges cannot be recorded.
        for bad in [f64::INFINITY, f64::NAN, -0.5] {
            assert!(matches!(
                a.check(&[charge("new", bad)]),
                Err(LedgerError::Charge { .. })
            ));
        }
        assert!(Ledger::new(0.0).is_err());
        assert!(Ledger::new(4e-7).is_err(), "rounds down to 0");
    }

    /// Found in review: in f64, 0.1 + 0.1 + 0.1 = 0.30000000000000004 > 0.3, so the third
    /// fit against a total of 0.3 was refused.
    #[test]
    fn three_tenths_fill_a_total_of_three_tenths_exactly() {
        let tenth = std::hint::black_box(0.1_f64);
        assert!(
            tenth + tenth + tenth > 0.3,
            "the float sum passes the total"
        );
        let mut a = Ledger::new(0.3).expect("valid");
        for _ in 0..3 {
            a.charge(&[charge("d", 0.1)]).expect("within the total");
        }
        assert_eq!(a.spent("d").micros(), 300_000);
        assert!(a.check(&[charge("d", 0.000001)]).is_err());
    }

    #[test]
    fn amounts_finer_than_a_micro_epsilon_round_against_the_spender() {
        assert_eq!(Epsilon::charge(0.1).map(Epsilon::micros), Some(100_000));
        assert_eq!(Epsilon::charge(1e-7).map(Epsilon::micros), Some(1));
        assert_eq!(
            Epsilon::charge(0.1234561).map(Epsilon::micros),
            Some(123_457)
        );
        assert_eq!(
            Epsilon::total(0.1234569).map(Epsilon::micros),
            Some(123_456)
        );
        assert_eq!(Epsilon::charge(1e300), None, "past u64 micro-epsilons");
        assert_eq!(
            Epsilon::charge(2.5).map(|e| e.to_string()).as_deref(),
            Some("2.5")
        );
        assert_eq!(
            Epsilon::charge(3.0).map(|e| e.to_string()).as_deref(),
            Some("3")
        );
    }

    /// Found in review: the total was not stored, so `--budget 100` after `--budget 1` passed.
    #[test]
    fn the_total_is_stored_and_cannot_be_changed() {
        let path = scratch("total");
        std::fs::remove_file(&path).ok();
        assert!(matches!(
            Ledger::load(&path, None),
            Err(LedgerError::NoTotal(_))
        ));
        Ledger::record(&path, Some(1.0), &[charge("a", 0.75)]).expect("new ledger");
        let e = Ledger::load(&path, Some(100.0)).expect_err("raised total");
        assert!(matches!(e, LedgerError::TotalChanged { .. }), "{e}");
        assert!(e.to_string().contains("total is 1;"), "{e}");
        let stored = Ledger::load(&path, None).expect("stored total");
        assert_eq!(stored.total().to_string(), "1");
        assert!(Ledger::record(&path, None, &[charge("a", 0.5)]).is_err());
        Ledger::record(&path, Some(1.0), &[charge("a", 0.25)]).expect("the same total");
        std::fs::remove_dir_all(path.parent().expect("dir")).ok();
    }

    #[test]
    fn ledger_round_trips_and_reports_where_it_is_broken() {
        let path = scratch("parse");
        std::fs::remove_file(&path).ok();
        let mut a = Ledger::load(&path, Some(3.0)).expect("no file yet");
        a.charge(&[charge("a", 1.25)]).expect("fits");
        a.save(&path).expect("saved");
        let b = Ledger::load(&path, Some(3.0)).expect("read back");
        assert_eq!(b, a);
        Ledger::record(&path, Some(3.0), &[charge("a", 1.5)]).expect("under the lock");
        assert_eq!(
            Ledger::load(&path, None).expect("read").spent("a").micros(),
            2_750_000
        );
        assert!(Ledger::record(&path, None, &[charge("a", 0.5)]).is_err());
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(&path, text.replace("\"2.75\"", "oops")).expect("write");
        let e = Ledger::load(&path, None).expect_err("broken");
        assert!(e.to_string().contains("ledger.json:"), "{e}");
        std::fs::write(&path, "{\"a.csv\": 1.0}").expect("write");
        assert!(Ledger::load(&path, Some(3.0)).is_err(), "v1 ledger");
        std::fs::remove_dir_all(path.parent().expect("dir")).ok();
    }
}
