//! The privacy ledger: what each data set has spent, against a total stored in the ledger
//! itself, and a refusal before a fit that would take any data set past it.
//!
//! Spending composes sequentially (basic composition: budgets add up), the bound every
//! method here is proved under. Amounts are kept as whole micro-epsilons (`u64`), so that
//! three charges of 0.1 fill a total of 0.3 exactly (in `f64` they pass it by 4e-17 and the
//! third fit would be refused). A charge finer than a micro-epsilon is rounded up and a total
//! rounded down, so the ledger never under-counts.
//!
//! A data set is known by its rows ([`print`]): a reordered or reformatted copy is the same
//! data set, and one that shares most of its rows with a charged data set is charged as that
//! one (the caller is told). The ledger file (JSON) is rewritten atomically after each
//! recorded fit, under an exclusive lock (`LEDGER.lock`), and sealed with a MAC under a secret
//! key kept beside it (`LEDGER.key`, mode 0600, made with the ledger): an edit by hand (a spend
//! lowered, an account removed) is refused. What it cannot catch: a ledger deleted together
//! with its key, a data set changed in more than half of its rows, the same people in another
//! ledger.

mod epsilon;
mod ledger_error;
pub mod print;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::RngExt as _;

use serde::{Deserialize, Serialize};

/// The ledger format's name, first in the file.
const FORMAT: &str = "privlogit privacy ledger v4";

pub use epsilon::Epsilon;
pub use ledger_error::LedgerError;
pub use print::{DataPrint, LedgerKey};

/// The neighbouring relation a release's guarantee is stated under: recorded with each charge,
/// as sums under one relation do not carry over to the other unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Relation {
    /// Same number of rows, one row replaced (PLR, output perturbation, DPSTGD, DPHTL).
    #[default]
    ReplaceOne,
    /// One row added or removed (the sparse Gaussian mechanism of `dl`, as DP-SGD states it).
    AddRemove,
}

impl Relation {
    /// Its name in the ledger file.
    pub fn name(self) -> &'static str {
        match self {
            Relation::ReplaceOne => "replace-one",
            Relation::AddRemove => "add/remove",
        }
    }
}

/// What a release spends on each data set, as its guarantee states it: epsilon, delta (0 for
/// pure DP) and the relation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Guarantee {
    /// Epsilon.
    pub epsilon: f64,
    /// Delta.
    pub delta: f64,
    /// The neighbouring relation.
    pub relation: Relation,
}

impl Guarantee {
    /// Pure epsilon-DP under replace-one (every mechanism but `dl`'s sparse Gaussian one).
    pub fn pure(epsilon: f64) -> Self {
        Self {
            epsilon,
            delta: 0.0,
            relation: Relation::ReplaceOne,
        }
    }
}

/// What one fit spends on one data set.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// Which data set: its rows, as this ledger's key prints them.
    pub data: DataPrint,
    /// A file it was read from (or what the caller calls it), kept for people reading the
    /// ledger and named in refusals.
    pub file: String,
    /// How much epsilon (infinity for a non-private fit, which cannot be charged).
    pub epsilon: f64,
    /// Delta (0 for pure DP), summed per data set (basic composition).
    pub delta: f64,
    /// The relation the release's guarantee holds under.
    pub relation: Relation,
}

impl Charge {
    /// `cost` charged to the data set `data` read from `file`.
    pub fn new(data: DataPrint, file: impl Into<String>, cost: Guarantee) -> Self {
        Self {
            data,
            file: file.into(),
            epsilon: cost.epsilon,
            delta: cost.delta,
            relation: cost.relation,
        }
    }
}

/// What one data set has spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    /// Epsilon spent so far.
    pub spent: Epsilon,
    /// Files it was read from (for people; the rows decide).
    pub files: Vec<String>,
    /// Its rows.
    pub rows: u64,
    /// Its keyed bottom-k sketch (see [`print`]): how a file that shares most of its rows is
    /// recognised; the union of every data set charged to it.
    pub sketch: String,
    /// Delta spent so far (basic composition; 0, left out, for pure DP only).
    #[serde(default, skip_serializing_if = "is_zero_delta")]
    pub delta: f64,
    /// The neighbouring relations its charges were made under (left out when only
    /// replace-one, as in ledgers before relations were recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<String>,
}

fn is_zero_delta(d: &f64) -> bool {
    *d == 0.0
}

/// What the seal covers.
#[derive(Serialize)]
struct Content<'a> {
    format: &'a str,
    total: Epsilon,
    accounts: &'a BTreeMap<String, Account>,
    /// How many times the ledger was saved (0, left out, in ledgers before the count): the
    /// head file beside the key keeps the last, so an older copy restored is refused.
    #[serde(skip_serializing_if = "is_zero")]
    saves: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The ledger as stored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    format: String,
    total: Epsilon,
    accounts: BTreeMap<String, Account>,
    #[serde(default)]
    saves: u64,
    /// HMAC-SHA256 of the content under the key file's MAC key, hex.
    seal: String,
}

/// Budget spent per data set against one total per data set.
#[derive(Debug, Clone)]
pub struct Ledger {
    total: Epsilon,
    accounts: BTreeMap<String, Account>,
    key: Arc<LedgerKey>,
    /// Saves so far (see [`head_path`]).
    saves: u64,
}

impl PartialEq for Ledger {
    fn eq(&self, other: &Self) -> bool {
        self.total == other.total && self.accounts == other.accounts
    }
}

/// `path` with `suffix` appended to its file name (`ledger.json` -> `ledger.json.lock`), so
/// that no ledger name makes its lock or key file the ledger itself.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The ledger's key file.
pub fn key_path(path: &Path) -> PathBuf {
    beside(path, ".key")
}

/// The ledger's head file: the count of its last save, beside its key (owner-only), so that
/// an older copy of the ledger put back is refused.
pub fn head_path(path: &Path) -> PathBuf {
    beside(path, ".head")
}

/// The save count the head file of the ledger at `path` holds (0 without one).
fn read_head(path: &Path) -> Result<u64, LedgerError> {
    let head = head_path(path);
    let bad = |message: String| LedgerError::Key {
        path: head.clone(),
        message,
    };
    match privlogit_protocols::secret_file::read(&head) {
        Ok(text) => std::str::from_utf8(&text)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .ok_or_else(|| bad("not a ledger head (a count of saves)".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(bad(e.to_string())),
    }
}

/// The ledger's lock file.
pub fn lock_path(path: &Path) -> PathBuf {
    beside(path, ".lock")
}

/// The key of the ledger at `path`: read from its key file (refused when others may read it),
/// or made with a new ledger (32 bytes from the OS CSPRNG, mode 0600). A ledger without its
/// key file is refused: it could not be checked.
fn ledger_key(path: &Path, ledger_exists: bool) -> Result<LedgerKey, LedgerError> {
    let key_file = key_path(path);
    let bad = |message: String| LedgerError::Key {
        path: key_file.clone(),
        message,
    };
    match privlogit_protocols::secret_file::read(&key_file) {
        Ok(text) => {
            let text = std::str::from_utf8(&text).map_err(|_| bad("not a ledger key".into()))?;
            let hex = text.trim();
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad("not a ledger key (64 hex digits)".into()));
            }
            let mut secret = zeroize::Zeroizing::new([0u8; 32]);
            for (i, byte) in secret.iter_mut().enumerate() {
                *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex digits");
            }
            Ok(LedgerKey::from_secret(&secret))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && ledger_exists => Err(bad(format!(
            "missing: the ledger {} cannot be checked without the key file made with it; restore it",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut secret = zeroize::Zeroizing::new([0u8; 32]);
            rand::rng().fill(&mut secret[..]);
            let text = zeroize::Zeroizing::new(format!(
                "{}\n",
                secret
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            ));
            match crate::output::create_private(&key_file, text.as_bytes()) {
                Ok(()) => Ok(LedgerKey::from_secret(&secret)),
                // Another process made it first: use theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    ledger_key(path, ledger_exists)
                }
                // The ledger's own directory is where the user erred: name it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(LedgerError::Key {
                    path: path.to_path_buf(),
                    message: format!(
                        "cannot create the ledger: its directory {} does not exist",
                        path.parent()
                            .filter(|p| !p.as_os_str().is_empty())
                            .unwrap_or(Path::new("."))
                            .display()
                    ),
                }),
                Err(e) => Err(bad(e.to_string())),
            }
        }
        Err(e) => Err(bad(e.to_string())),
    }
}

impl Ledger {
    /// Nothing spent yet; every data set may spend up to `total` (in memory, with a fresh
    /// key).
    pub fn new(total: f64) -> Result<Self, LedgerError> {
        let mut secret = zeroize::Zeroizing::new([0u8; 32]);
        rand::rng().fill(&mut secret[..]);
        Ok(Self {
            total: Epsilon::total(total).ok_or(LedgerError::Total(total))?,
            accounts: BTreeMap::new(),
            key: Arc::new(LedgerKey::from_secret(&secret)),
            saves: 0,
        })
    }

    /// The ledger at `path`. A new ledger (no file yet) takes `total`, which is then required,
    /// and gets its key file; an existing one keeps its stored total (a different `total` is
    /// refused: a total raised after the fact would make every earlier refusal meaningless),
    /// and is refused if its seal does not match its key.
    pub fn load(path: &Path, total: Option<f64>) -> Result<Self, LedgerError> {
        let asked = match total {
            Some(t) => Some(Epsilon::total(t).ok_or(LedgerError::Total(t))?),
            None => None,
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if read_head(path)? > 0 {
                    // Deleting a ledger must not reset what its data sets spent. (A key alone,
                    // made by a load that saved nothing, is no ledger yet.)
                    return Err(LedgerError::Key {
                        path: head_path(path),
                        message: format!(
                            "the ledger {} is missing but its key is here: put the ledger back \
                             (a new ledger over an old key would forget what was spent), or \
                             remove the key and head files to start a new ledger knowingly",
                            path.display()
                        ),
                    });
                }
                let total = asked.ok_or_else(|| LedgerError::NoTotal(path.to_owned()))?;
                return Ok(Self {
                    total,
                    accounts: BTreeMap::new(),
                    key: Arc::new(ledger_key(path, false)?),
                    saves: 0,
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
        let format: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| parse(e.line(), e.column(), e.to_string()))?;
        match format.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some("privlogit privacy ledger v3") => {
                return Err(parse(
                    1,
                    1,
                    "a ledger of an earlier privlogit, whose row prints did not survive \
                     rounding, rescaling or an added or dropped column; they cannot be carried \
                     over: keep it for the record and start a new ledger (with the remaining \
                     budgets as totals)"
                        .into(),
                ));
            }
            Some("privlogit privacy ledger v2") => {
                return Err(parse(
                    1,
                    1,
                    "a ledger of an earlier privlogit, which knew data sets by their files' \
                     bytes; its accounts name no rows and cannot be carried over: keep it for \
                     the record and start a new ledger (with the remaining budgets as totals)"
                        .into(),
                ));
            }
            other => {
                return Err(parse(
                    1,
                    1,
                    format!("format {other:?}, expected {FORMAT:?}"),
                ));
            }
        }
        let stored: Stored =
            serde_json::from_str(&text).map_err(|e| parse(e.line(), e.column(), e.to_string()))?;
        let key = ledger_key(path, true)?;
        let content = Content {
            format: FORMAT,
            total: stored.total,
            accounts: &stored.accounts,
            saves: stored.saves,
        };
        let seal = (0..stored.seal.len())
            .step_by(2)
            .map(|i| {
                stored
                    .seal
                    .get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            })
            .collect::<Option<Vec<u8>>>();
        let content = serde_json::to_vec(&content).expect("strings and numbers");
        if !seal.is_some_and(|tag| key.verify(&content, &tag)) {
            return Err(LedgerError::Tampered(path.to_owned()));
        }
        let head = read_head(path)?;
        if stored.saves < head {
            return Err(LedgerError::RolledBack {
                path: path.to_owned(),
                saves: stored.saves,
                head,
            });
        }
        if stored.total.micros() == 0 {
            return Err(parse(1, 1, "its total is 0".into()));
        }
        if let Some((name, _)) = stored
            .accounts
            .iter()
            .find(|(_, a)| DataPrint::parse_sketch(&a.sketch).is_none())
        {
            return Err(parse(1, 1, format!("account {name}: a malformed sketch")));
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
            accounts: stored.accounts,
            key: Arc::new(key),
            saves: stored.saves,
        })
    }

    /// Writes the ledger to `path` atomically (a temporary file renamed over it), sealed, then
    /// its save count to the head file (a crash between the two leaves the ledger ahead of
    /// its head, which loads; an older copy put back is behind it, which is refused).
    pub fn save(&mut self, path: &Path) -> Result<(), LedgerError> {
        let io = |source| LedgerError::Io {
            path: path.to_owned(),
            source,
        };
        self.saves += 1;
        let content = Content {
            format: FORMAT,
            total: self.total,
            accounts: &self.accounts,
            saves: self.saves,
        };
        let bytes = serde_json::to_vec(&content).expect("strings and numbers");
        let seal: String = self
            .key
            .mac(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut stored = serde_json::to_value(&content).expect("strings and numbers");
        stored["seal"] = serde_json::Value::String(seal);
        let text = serde_json::to_string_pretty(&stored).expect("strings and numbers");
        crate::output::write_text(path, &(text + "\n")).map_err(io)?;
        crate::output::write_private(&head_path(path), format!("{}\n", self.saves).as_bytes())
            .map_err(|source| LedgerError::Io {
                path: head_path(path),
                source,
            })
    }

    /// The key this ledger knows data sets by (to print them for [`Charge`]s).
    pub fn key(&self) -> &LedgerKey {
        &self.key
    }

    /// The total each data set may spend.
    pub fn total(&self) -> Epsilon {
        self.total
    }

    /// What the data set with `print` has spent so far: its own account's, or the accounts'
    /// with which it shares most of its rows.
    pub fn spent_by(&self, print: &DataPrint) -> Epsilon {
        self.accounts_of(print)
            .iter()
            .filter_map(|(name, _)| self.accounts.get(name))
            .map(|a| a.spent)
            .max()
            .unwrap_or_default()
    }

    /// What the account `name` has spent so far.
    pub fn spent(&self, name: &str) -> Epsilon {
        self.accounts.get(name).map(|a| a.spent).unwrap_or_default()
    }

    /// The accounts a data set is charged to: its own, or, failing that, every account with
    /// which it shares at least [`print::SAME_PEOPLE`] of its rows, or at least that share of
    /// whose rows it holds (a superset), with the larger share.
    fn accounts_of(&self, print: &DataPrint) -> Vec<(String, Option<f64>)> {
        let own = print.name();
        if self.accounts.contains_key(&own) {
            return vec![(own, None)];
        }
        self.shares(print)
            .into_iter()
            .filter(|(_, share)| *share >= print::SAME_PEOPLE)
            .map(|(name, share)| (name, Some(share)))
            .collect()
    }

    /// Every account with the larger of the two shares it has with `print` (see
    /// [`Self::accounts_of`]), largest first.
    fn shares(&self, print: &DataPrint) -> Vec<(String, f64)> {
        let mut shares: Vec<(String, f64)> = self
            .accounts
            .iter()
            .filter_map(|(name, a)| {
                let sketch = DataPrint::parse_sketch(&a.sketch)?;
                let share = print
                    .share_in(a.rows, &sketch)
                    .max(print.share_of(a.rows, &sketch));
                Some((name.clone(), share))
            })
            .collect();
        shares.sort_by(|a, b| b.1.total_cmp(&a.1));
        shares
    }

    /// Refuses `charges` (all or nothing) if any data set would pass the total, or if a charge
    /// is not a finite, non-negative number (a non-private fit cannot be recorded). Returns
    /// what the charges would say of data sets recognised by their shared rows.
    pub fn check(&self, charges: &[Charge]) -> Result<Vec<String>, LedgerError> {
        self.after(charges).map(|(_, notes)| notes)
    }

    /// Checks, then records `charges`; returns what [`Self::check`] does.
    pub fn charge(&mut self, charges: &[Charge]) -> Result<Vec<String>, LedgerError> {
        let (accounts, notes) = self.after(charges)?;
        self.accounts = accounts;
        Ok(notes)
    }

    /// The accounts after `charges`, with notes, or the first refusal.
    #[allow(clippy::type_complexity)]
    fn after(
        &self,
        charges: &[Charge],
    ) -> Result<(BTreeMap<String, Account>, Vec<String>), LedgerError> {
        let mut after = self.accounts.clone();
        let mut notes = Vec::new();
        for c in charges {
            let asked = Epsilon::charge(c.epsilon).ok_or_else(|| LedgerError::Charge {
                file: c.file.clone(),
                epsilon: c.epsilon,
            })?;
            let ledger = Ledger {
                total: self.total,
                accounts: after.clone(),
                key: Arc::clone(&self.key),
                saves: self.saves,
            };
            let mut targets = ledger.accounts_of(&c.data);
            if targets.is_empty() {
                let nearest: Vec<String> = ledger
                    .shares(&c.data)
                    .into_iter()
                    .take(3)
                    .map(|(name, share)| {
                        let files = ledger.accounts[&name].files.join(", ");
                        format!("{files} ({:.0} %)", 100.0 * share)
                    })
                    .collect();
                if !nearest.is_empty() {
                    notes.push(format!(
                        "{} opens a new account: it shares under {:.0} % of rows either way with \
                         every charged data set (nearest: {})",
                        c.file,
                        100.0 * print::SAME_PEOPLE,
                        nearest.join("; ")
                    ));
                }
                let name = c.data.name();
                after.insert(
                    name.clone(),
                    Account {
                        spent: Epsilon::default(),
                        files: Vec::new(),
                        rows: c.data.rows(),
                        sketch: c.data.sketch_text(),
                        delta: 0.0,
                        relations: Vec::new(),
                    },
                );
                targets.push((name, None));
            }
            for (name, share) in targets {
                let account = after.get_mut(&name).expect("an account");
                let dataset = match share {
                    None => name.clone(),
                    Some(share) => {
                        let note = format!(
                            "{} shares about {:.0} % of its rows with the data set charged as {} \
                             (ledger account {name}): charged to that data set",
                            c.file,
                            100.0 * share,
                            account.files.join(", ")
                        );
                        notes.push(note.clone());
                        note
                    }
                };
                let sum = account.spent.saturating_add(asked);
                if sum > self.total || sum == Epsilon::MAX {
                    return Err(LedgerError::Exceeded {
                        dataset,
                        file: c.file.clone(),
                        spent: account.spent,
                        asked,
                        total: self.total,
                    });
                }
                account.spent = sum;
                account.delta += c.delta;
                let relation = c.relation.name().to_string();
                if !account.relations.contains(&relation) {
                    account.relations.push(relation);
                }
                if !account.files.contains(&c.file) {
                    account.files.push(c.file.clone());
                }
                // The account now stands for both: a later subset of either is recognised.
                if let Some(sketch) = DataPrint::parse_sketch(&account.sketch) {
                    let (rows, union) = c.data.union_with(account.rows, &sketch);
                    account.rows = rows;
                    account.sketch = print::sketch_text(&union);
                }
            }
        }
        Ok((after, notes))
    }

    /// Runs `work` holding an exclusive lock on `<path>.lock`, so that concurrent fits on one
    /// ledger read, charge and save it one at a time.
    pub fn locked<T>(
        path: &Path,
        work: impl FnOnce() -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        let lock_path = lock_path(path);
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
    /// the room in the meantime); returns what [`Self::check`] does.
    pub fn record(
        path: &Path,
        total: Option<f64>,
        charges: &[Charge],
    ) -> Result<Vec<String>, LedgerError> {
        Self::locked(path, || {
            let mut ledger = Self::load(path, total)?;
            let notes = ledger.charge(charges)?;
            ledger.save(path)?;
            Ok(notes)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2};

    /// A data set of `rows` rows, different for each `seed`.
    fn data(seed: u64, rows: usize) -> (Array2<f64>, Array1<f64>) {
        let x = Array2::from_shape_fn((rows, 4), |(i, j)| {
            ((i as u64 * 31 + j as u64 * 17 + seed * 1_000_003) % 9973) as f64 / 13.0
        });
        let y = Array1::from_shape_fn(rows, |i| (i % 2) as f64);
        (x, y)
    }

    fn charge(ledger: &Ledger, seed: u64, epsilon: f64) -> Charge {
        let (x, y) = data(seed, 300);
        Charge::new(
            ledger.key().print_rows(x.view(), y.view()),
            format!("data-{seed}.csv"),
            Guarantee::pure(epsilon),
        )
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("privlogit-ledger-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir.join("ledger.json")
    }

    #[test]
    fn refuses_a_fit_past_the_total() {
        let mut a = Ledger::new(2.0).expect("valid");
        let (src, tgt) = (charge(&a, 1, 1.0), charge(&a, 2, 1.5));
        a.charge(&[src.clone(), tgt.clone()]).expect("fits");
        a.charge(std::slice::from_ref(&src))
            .expect("exactly the total");
        let e = a
            .charge(&[
                Charge {
                    epsilon: 0.25,
                    ..tgt.clone()
                },
                Charge {
                    epsilon: 0.5,
                    ..src.clone()
                },
            ])
            .expect_err("src is full");
        assert!(matches!(e, LedgerError::Exceeded { ref file, .. } if file == "data-1.csv"));
        // All or nothing: tgt was not charged either.
        assert_eq!(a.spent_by(&tgt.data).to_string(), "1.5");
        // A non-private fit spends infinity; that, NaN and negative charges cannot be recorded.
        for bad in [f64::INFINITY, f64::NAN, -0.5] {
            assert!(matches!(
                a.check(&[charge(&a, 3, bad)]),
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
        let c = charge(&a, 1, 0.1);
        for _ in 0..3 {
            a.charge(std::slice::from_ref(&c))
                .expect("within the total");
        }
        assert_eq!(a.spent_by(&c.data).micros(), 300_000);
        assert!(
            a.check(&[Charge {
                epsilon: 0.000001,
                ..c
            }])
            .is_err()
        );
    }

    /// A data set that shares most of its rows with a charged one (one value changed, half of
    /// its rows) is charged as that one, and says so; an unrelated one opens its own account.
    #[test]
    fn a_data_set_sharing_most_rows_is_charged_as_the_charged_one() {
        let mut a = Ledger::new(1.0).expect("valid");
        let (x, y) = data(1, 300);
        let whole = Charge::new(
            a.key().print_rows(x.view(), y.view()),
            "whole.csv",
            Guarantee::pure(1.0),
        );
        a.charge(&[whole]).expect("fits");
        let mut one = x.clone();
        one[[7, 2]] += 0.5;
        let changed = Charge::new(
            a.key().print_rows(one.view(), y.view()),
            "changed.csv",
            Guarantee::pure(0.1),
        );
        let e = a.check(std::slice::from_ref(&changed)).expect_err("spent");
        assert!(e.to_string().contains("whole.csv"), "{e}");
        assert!(e.to_string().contains("changed.csv"), "{e}");
        let half = Charge::new(
            a.key()
                .print_rows(x.slice(ndarray::s![..150, ..]), y.slice(ndarray::s![..150])),
            "half.csv",
            Guarantee::pure(0.1),
        );
        assert!(a.check(&[half]).is_err());
        let notes = a.check(&[charge(&a, 9, 0.5)]).expect("unrelated");
        // An unrelated data set opens its own account; the note names the nearest (0 %).
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("opens a new account") && notes[0].contains("(0 %)"));
        let mut b = Ledger::new(2.0).expect("valid");
        let (x, y) = data(1, 300);
        b.charge(&[Charge::new(
            b.key().print_rows(x.view(), y.view()),
            "whole.csv",
            Guarantee::pure(1.0),
        )])
        .expect("fits");
        let changed = Charge::new(
            b.key().print_rows(one.view(), y.view()),
            "changed.csv",
            Guarantee::pure(0.5),
        );
        let notes = b.charge(std::slice::from_ref(&changed)).expect("fits");
        assert!(notes[0].contains("shares about"), "{notes:?}");
        assert_eq!(b.spent_by(&changed.data).to_string(), "1.5");
    }

    /// Found in review: the total was not stored, so `--budget 100` after `--budget 1` passed.
    #[test]
    fn the_total_is_stored_and_cannot_be_changed() {
        let path = scratch("total");
        assert!(matches!(
            Ledger::load(&path, None),
            Err(LedgerError::NoTotal(_))
        ));
        let fresh = Ledger::load(&path, Some(1.0)).expect("new ledger");
        let c = charge(&fresh, 1, 0.75);
        Ledger::record(&path, Some(1.0), std::slice::from_ref(&c)).expect("new ledger");
        let e = Ledger::load(&path, Some(100.0)).expect_err("raised total");
        assert!(matches!(e, LedgerError::TotalChanged { .. }), "{e}");
        assert!(e.to_string().contains("total is 1;"), "{e}");
        let stored = Ledger::load(&path, None).expect("stored total");
        assert_eq!(stored.total().to_string(), "1");
        let more = Charge {
            epsilon: 0.5,
            ..c.clone()
        };
        assert!(Ledger::record(&path, None, &[more]).is_err());
        let last = Charge { epsilon: 0.25, ..c };
        Ledger::record(&path, Some(1.0), &[last]).expect("the same total");
        std::fs::remove_dir_all(path.parent().expect("dir")).ok();
    }

    /// The ledger reads back; an edit by hand breaks its seal and is refused; a ledger
    /// without its key file, a key file others may read, an older format and a file that is
    /// not JSON are refused, naming where.
    #[test]
    fn ledger_round_trips_and_refuses_edits() {
        let path = scratch("parse");
        let mut a = Ledger::load(&path, Some(3.0)).expect("no file yet");
        let c = charge(&a, 1, 1.25);
        a.charge(std::slice::from_ref(&c)).expect("fits");
        a.save(&path).expect("saved");
        let b = Ledger::load(&path, Some(3.0)).expect("read back");
        assert_eq!(b, a);
        Ledger::record(&path, Some(3.0), &[Charge { epsilon: 1.5, ..c }]).expect("locked");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains("\"2.75\""), "{text}");
        std::fs::write(&path, text.replace("\"2.75\"", "\"0.75\"")).expect("write");
        let e = Ledger::load(&path, None).expect_err("edited");
        assert!(matches!(e, LedgerError::Tampered(_)), "{e}");
        std::fs::write(&path, &text).expect("restore");
        Ledger::load(&path, None).expect("restored");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let key = key_path(&path);
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
            let e = Ledger::load(&path, None).expect_err("readable key");
            assert!(e.to_string().contains("chmod 600"), "{e}");
            std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        }
        let key = std::fs::read(key_path(&path)).expect("key");
        std::fs::remove_file(key_path(&path)).expect("remove key");
        let e = Ledger::load(&path, None).expect_err("no key");
        assert!(e.to_string().contains("missing"), "{e}");
        crate::output::create_private(&key_path(&path), &key).expect("key back");
        std::fs::write(&path, "{\"format\": \"privlogit privacy ledger v2\"}").expect("write");
        let e = Ledger::load(&path, None).expect_err("v2");
        assert!(e.to_string().contains("earlier privlogit"), "{e}");
        std::fs::write(&path, "{\"a.csv\": 1.0,").expect("write");
        let e = Ledger::load(&path, Some(3.0)).expect_err("broken");
        assert!(e.to_string().contains("ledger.json:1:"), "{e}");
        std::fs::remove_dir_all(path.parent().expect("dir")).ok();
    }

    /// An older copy of the ledger put back is refused (its save count is behind the head
    /// file's); so is a ledger deleted while its key stays, where `--budget` would otherwise
    /// open a fresh one: 1.5 spent of a total of 1 was possible both ways.
    #[test]
    fn a_rolled_back_or_deleted_ledger_is_refused() {
        let path = scratch("rollback");
        let mut a = Ledger::load(&path, Some(1.0)).expect("new");
        let c = charge(&a, 1, 0.6);
        a.charge(std::slice::from_ref(&c)).expect("fits");
        a.save(&path).expect("saved");
        let older = std::fs::read(&path).expect("copy");
        Ledger::record(
            &path,
            Some(1.0),
            &[Charge {
                epsilon: 0.3,
                ..c.clone()
            }],
        )
        .expect("0.9");
        std::fs::write(&path, &older).expect("put the older copy back");
        let e = Ledger::load(&path, None).expect_err("rolled back");
        assert!(
            matches!(
                e,
                LedgerError::RolledBack {
                    saves: 1,
                    head: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            Ledger::record(
                &path,
                None,
                &[Charge {
                    epsilon: 0.3,
                    ..c.clone()
                }]
            )
            .is_err()
        );
        std::fs::remove_file(&path).expect("delete the ledger");
        let e = Ledger::load(&path, Some(1.0)).expect_err("deleted, key kept");
        assert!(e.to_string().contains("missing but its key"), "{e}");
        // The save count is sealed: raising it by hand breaks the seal.
        std::fs::write(&path, &older).expect("older");
        let text = std::fs::read_to_string(&path).expect("read");
        std::fs::write(&path, text.replace("\"saves\": 1", "\"saves\": 9")).expect("edit");
        assert!(matches!(
            Ledger::load(&path, None).expect_err("edited"),
            LedgerError::Tampered(_)
        ));
        std::fs::remove_dir_all(path.parent().expect("dir")).ok();
    }

    /// A charge records its delta (summed: basic composition) and its relation, and both read
    /// back sealed.
    #[test]
    fn deltas_and_relations_are_recorded() {
        let path = scratch("delta");
        let mut a = Ledger::load(&path, Some(3.0)).expect("new");
        let pure = charge(&a, 1, 0.5);
        let sparse = Charge::new(
            pure.data.clone(),
            "data-1.csv",
            Guarantee {
                epsilon: 1.0,
                delta: 1e-5,
                relation: Relation::AddRemove,
            },
        );
        a.charge(&[pure.clone(), sparse.clone(), sparse])
            .expect("fits");
        a.save(&path).expect("saved");
        let b = Ledger::load(&path, None).expect("read back");
        let account = &b.accounts[&pure.data.name()];
        assert_eq!(account.spent.to_string(), "2.5");
        assert!((account.delta - 2e-5).abs() < 1e-20);
        assert_eq!(account.relations, ["replace-one", "add/remove"]);
        std::fs::remove_dir_all(path.parent().expect("dir")).ok();
    }

    /// `--ledger X.lock`: the lock file is `X.lock.lock`, not the ledger.
    #[test]
    fn a_ledger_named_like_a_lock_file_works() {
        let path = scratch("lockname").with_file_name("spend.lock");
        let fresh = Ledger::load(&path, Some(1.0)).expect("new");
        let c = charge(&fresh, 1, 0.5);
        Ledger::record(&path, Some(1.0), std::slice::from_ref(&c)).expect("first");
        Ledger::record(&path, Some(1.0), std::slice::from_ref(&c)).expect("second");
        assert_eq!(
            Ledger::load(&path, None)
                .expect("read")
                .spent_by(&c.data)
                .to_string(),
            "1"
        );
        assert!(lock_path(&path).ends_with("spend.lock.lock"));
        std::fs::remove_dir_all(path.parent().expect("dir")).ok();
    }
}
