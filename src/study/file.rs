//! The study file: a study's settings and parties in TOML, the one file every party of a study
//! between organizations keeps a copy of. Every key but the party tables is a setting of
//! [`crate::settings::KEYS`] (`protocol = "hessian"`, `lambda = 0.5`, `standardize = true`,
//! `party = ["a.csv", "b.csv"]`); the parties are tables:
//!
//! ```toml
//! study_id = "diabetes-2026"          # optional label, part of the study id (below)
//! [keyholder]
//! address = "10.0.0.1:7000"
//! fingerprint = "sha256:..."          # or certificate = "keyholder.crt"
//! [aggregator]
//! address = "10.0.0.2:7100"
//! fingerprint = "sha256:..."
//! [[node]]
//! name = "hospital-a"
//! fingerprint = "sha256:..."
//! [dealer]                            # optional: a third server dealing masked products
//! address = "10.0.0.3:7200"
//! fingerprint = "sha256:..."
//! ```
//!
//! Instead of a fingerprint per party, a study may name a consortium certificate authority,
//! `ca = "consortium.crt"`: a party whose table has neither `fingerprint` nor `certificate` is
//! then known by a certificate that authority issued for its name. A `[stack]` table holds the
//! stacking stages' settings (`privlogit stack`).
//!
//! Every party derives the study id from its copy of the file ([`Roster::study_id`]): the
//! label, the parties with their addresses and certificates, and the study's shared settings
//! (every key that [`Key::shared`](crate::settings::Key::shared) marks, as written in the file).
//! Two studies with the same parties thus differ unless their files agree in every shared
//! setting, and the parties of one study must all use the same file.

use std::path::{Path, PathBuf};

use privlogit_protocols::transport::{Fingerprint, Member, Role, Roster};

use crate::error::Error;
use crate::settings::{self, Origin, Reader, Spec};

/// Keys of the file that name the study's parties (and its id and authority), not settings.
const ROSTER_KEYS: [&str; 6] = [
    "keyholder",
    "aggregator",
    "node",
    "dealer",
    "study_id",
    "ca",
];

/// [`ROSTER_KEYS`] and the stacking stages' table: every key that is not a setting.
const PARTY_KEYS: [&str; 7] = {
    let r = ROSTER_KEYS;
    [r[0], r[1], r[2], r[3], r[4], r[5], "stack"]
};

/// A study file, read and checked.
#[derive(Debug, Clone)]
pub struct StudyFile {
    /// Where it was read from.
    pub path: PathBuf,
    table: toml::Table,
    /// The parties it names, with the study id (`None` when it names none).
    pub parties: Option<StudyParties>,
}

/// What a study file says about the study as a whole: its parties and its id.
#[derive(Debug, Clone)]
pub struct StudyParties {
    /// The parties.
    pub roster: Roster,
    /// The study id every party derives alike from the file.
    pub id: [u8; 32],
}

impl StudyFile {
    /// Reads and checks the file at `path`: its TOML (errors at their line and column), that
    /// every key is a setting of some study command, and its parties (certificates read
    /// relative to the file).
    pub fn read(path: &Path) -> Result<Self, Error> {
        let (table, text) = parse(path)?;
        unknown_keys(path, &text, &table)?;
        let parties = roster(path, &table)?;
        Ok(Self {
            path: path.to_path_buf(),
            table,
            parties,
        })
    }

    /// Applies the file's settings that `spec`'s reader takes (those only other roles take
    /// are left to them).
    pub fn apply(&self, spec: &mut Spec) -> Result<(), Error> {
        for (name, value) in &self.table {
            if PARTY_KEYS.contains(&name.as_str()) {
                continue;
            }
            settings::refuse_role_seed(spec.reader, name, Origin::File(&self.path))?;
            let takes = settings::find(name).is_some_and(|k| k.readers.contains(&spec.reader));
            if takes {
                spec.set(name, value, Origin::File(&self.path))?;
            }
        }
        Ok(())
    }

    /// The file's settings (every top-level key but the parties' tables), as written.
    pub fn settings(&self) -> impl Iterator<Item = (&String, &toml::Value)> {
        self.table
            .iter()
            .filter(|(k, _)| !PARTY_KEYS.contains(&k.as_str()))
    }

    /// The top-level value of `key`, if the file sets it.
    pub fn value(&self, key: &str) -> Option<&toml::Value> {
        self.table.get(key)
    }

    /// The `[stack]` table (the stacking stages' settings), if any.
    pub fn stack(&self) -> Result<Option<&toml::Table>, Error> {
        match self.table.get("stack") {
            None => Ok(None),
            Some(toml::Value::Table(t)) => Ok(Some(t)),
            Some(_) => Err(Error::StudyFile {
                path: self.path.clone(),
                line: None,
                column: None,
                why: "stack must be a table ([stack])".into(),
            }),
        }
    }

    /// The study id (`None` when the file names no parties).
    pub fn id(&self) -> Option<[u8; 32]> {
        self.parties.as_ref().map(|p| p.id)
    }
}

/// The spec of `reader` from the study file at `file` (if any), then the caller's settings
/// `given` (the command line's flags, Python's keywords), which override the file's (a list
/// setting such as `party` adds to it).
pub fn spec(
    reader: Reader,
    file: Option<&StudyFile>,
    given: &[(String, toml::Value)],
) -> Result<Spec, Error> {
    let mut spec = Spec::new(reader);
    if let Some(f) = file {
        f.apply(&mut spec)?;
    }
    for (name, value) in given {
        spec.set(name, value, Origin::Given)?;
    }
    spec.check_outputs()?;
    Ok(spec)
}

/// Refuses the top-level keys that are no setting, all at once (a user fixing typos one run at
/// a time finds the next only after the last), the first at its line and column, each with the
/// setting it is closest to.
fn unknown_keys(path: &Path, text: &str, table: &toml::Table) -> Result<(), Error> {
    let mut unknown: Vec<(&String, Option<(usize, usize)>)> = table
        .keys()
        .filter(|name| !PARTY_KEYS.contains(&name.as_str()) && settings::find(name).is_none())
        .map(|name| (name, key_position(text, name)))
        .collect();
    // In the file's order (a table's keys come sorted); keys not found at the top last.
    unknown.sort_by_key(|(_, at)| at.map_or(usize::MAX, |(line, _)| line));
    let Some(&(first, at)) = unknown.first() else {
        return Ok(());
    };
    let why = if unknown.len() == 1 {
        let hint = settings::did_you_mean(first, &PARTY_KEYS);
        format!("{first} is not a setting of any study command{hint}")
    } else {
        let each: Vec<String> = unknown
            .iter()
            .map(|(name, at)| {
                let line = at.map_or(String::new(), |(line, _)| format!("line {line}: "));
                let hint = settings::did_you_mean(name, &PARTY_KEYS);
                let hint = hint.trim_start_matches("; ");
                if hint.is_empty() {
                    format!("{line}{name}")
                } else {
                    format!("{line}{name} ({hint})")
                }
            })
            .collect();
        format!(
            "{} keys are not settings of any study command: {}",
            unknown.len(),
            each.join(", ")
        )
    };
    Err(Error::StudyFile {
        path: path.to_path_buf(),
        line: at.map(|(line, _)| line),
        column: at.map(|(_, column)| column),
        why,
    })
}

/// Line and column (1-based) of the line that assigns top-level `key` (`key = ...`, the key
/// bare or quoted), before any table header.
fn key_position(text: &str, key: &str) -> Option<(usize, usize)> {
    for (i, line) in text.lines().enumerate() {
        let body = line.trim_start();
        if body.starts_with('[') {
            return None;
        }
        let name = body
            .strip_prefix(key)
            .or_else(|| body.strip_prefix(&format!("\"{key}\"")));
        if name.is_some_and(|rest| rest.trim_start().starts_with('=')) {
            return Some((i + 1, line.len() - body.len() + 1));
        }
    }
    None
}

/// The file's TOML, with parse errors at their line and column, and its text.
fn parse(path: &Path) -> Result<(toml::Table, String), Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
    let table = text.parse().map_err(|e: toml::de::Error| {
        let (line, column) = e.span().map_or((None, None), |span| {
            let before = &text[..span.start];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            (Some(line), Some(column))
        });
        Error::StudyFile {
            path: path.to_path_buf(),
            line,
            column,
            why: e.message().to_string(),
        }
    })?;
    Ok((table, text))
}

fn file_error(path: &Path, why: String) -> Error {
    Error::StudyFile {
        path: path.to_path_buf(),
        line: None,
        column: None,
        why,
    }
}

/// The parties the file names and the study id; `None` when it names no parties.
fn roster(path: &Path, table: &toml::Table) -> Result<Option<StudyParties>, Error> {
    let fail = |why: String| file_error(path, why);
    let label = match table.get("study_id") {
        None => String::new(),
        Some(toml::Value::String(s)) => s.clone(),
        Some(v) => {
            return Err(fail(format!(
                "study_id is a {}, expected a string",
                v.type_str()
            )));
        }
    };
    let present: Vec<&str> = ["keyholder", "aggregator", "node"]
        .into_iter()
        .filter(|k| table.contains_key(*k))
        .collect();
    if present.is_empty() && !table.contains_key("dealer") {
        return Ok(None);
    }
    if present.len() < 3 {
        let missing: Vec<&str> = ["[keyholder]", "[aggregator]", "[[node]]"]
            .into_iter()
            .filter(|k| !present.contains(&k.trim_matches(['[', ']'])))
            .collect();
        return Err(fail(format!(
            "the study names some parties but not {}: name the key holder, the aggregator and \
             every Node",
            missing.join(", ")
        )));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let ca = match table.get("ca") {
        None => None,
        Some(toml::Value::String(c)) => {
            Some(pem_certificate(&base.join(c)).map_err(|e| fail(format!("ca: {e}")))?)
        }
        Some(v) => {
            return Err(fail(format!(
                "ca is a {}, expected a file name",
                v.type_str()
            )));
        }
    };
    let member = |v: &toml::Value, role: Role, default: &str, at: &str| -> Result<Member, Error> {
        let t = v
            .as_table()
            .ok_or_else(|| fail(format!("{at} is not a table")))?;
        for key in t.keys() {
            if !["name", "address", "fingerprint", "certificate"].contains(&key.as_str()) {
                return Err(fail(format!(
                    "{at} has an unknown key {key:?} (name, address, fingerprint or certificate)"
                )));
            }
        }
        let text = |key: &str| -> Result<Option<String>, Error> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => Err(fail(format!(
                    "{at}.{key} is a {}, expected a string",
                    v.type_str()
                ))),
            }
        };
        let fingerprint = match (text("fingerprint")?, text("certificate")?) {
            (Some(_), Some(_)) => {
                return Err(fail(format!(
                    "{at} has both a fingerprint and a certificate: give one"
                )));
            }
            (Some(f), None) => Some(
                f.parse::<Fingerprint>()
                    .map_err(|e| fail(format!("{at}.fingerprint: {e}")))?,
            ),
            (None, Some(c)) => {
                let der = pem_certificate(&base.join(&c))
                    .map_err(|e| fail(format!("{at}.certificate: {e}")))?;
                Some(Fingerprint::of(&der))
            }
            (None, None) => None,
        };
        let party_name = match text("name")? {
            Some(n) => n,
            None if role == Role::Node => return Err(fail(format!("{at} has no name"))),
            None => default.to_string(),
        };
        Ok(Member {
            role,
            name: party_name,
            address: text("address")?,
            fingerprint,
        })
    };
    let keyholder = member(
        &table["keyholder"],
        Role::KeyHolder,
        "keyholder",
        "[keyholder]",
    )?;
    let aggregator = member(
        &table["aggregator"],
        Role::Aggregator,
        "aggregator",
        "[aggregator]",
    )?;
    let nodes = match &table["node"] {
        toml::Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| member(v, Role::Node, "", &format!("[[node]] {}", i + 1)))
            .collect::<Result<Vec<_>, _>>()?,
        other => {
            return Err(fail(format!(
                "node is a {}, expected [[node]] tables",
                other.type_str()
            )));
        }
    };
    let dealer = table
        .get("dealer")
        .map(|v| member(v, Role::Dealer, "dealer", "[dealer]"))
        .transpose()?;
    let roster = Roster {
        keyholder,
        aggregator,
        nodes,
        dealer,
        ca,
    };
    roster.validate().map_err(fail)?;
    let id = roster.study_id(&label, &shared_settings(table));
    Ok(Some(StudyParties { roster, id }))
}

/// The study's shared settings in a canonical text: every key but the parties' tables and the
/// settings a party sets for itself, sorted, with canonical values (so key order, spacing and
/// comments in the file do not matter).
fn shared_settings(table: &toml::Table) -> String {
    let shared: toml::Table = table
        .iter()
        .filter(|(k, _)| {
            !ROSTER_KEYS.contains(&k.as_str()) && settings::find(k).is_none_or(|key| key.shared)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut out = String::new();
    canonical(&toml::Value::Table(shared), &mut out);
    out
}

/// `value` written canonically: tables with sorted keys, strings quoted and escaped, floats
/// in Rust's shortest round-trip form.
fn canonical(value: &toml::Value, out: &mut String) {
    use std::fmt::Write as _;
    match value {
        toml::Value::String(s) => {
            let _ = write!(out, "{s:?}");
        }
        toml::Value::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        toml::Value::Float(f) => {
            let _ = write!(out, "{f:?}");
        }
        toml::Value::Boolean(b) => {
            let _ = write!(out, "{b}");
        }
        toml::Value::Datetime(d) => {
            let _ = write!(out, "{d}");
        }
        toml::Value::Array(items) => {
            out.push('[');
            for item in items {
                canonical(item, out);
                out.push(',');
            }
            out.push(']');
        }
        toml::Value::Table(t) => {
            let mut keys: Vec<&String> = t.keys().collect();
            keys.sort();
            out.push('{');
            for k in keys {
                let _ = write!(out, "{k:?}=");
                canonical(&t[k], out);
                out.push(';');
            }
            out.push('}');
        }
    }
}

/// The DER bytes of a PEM certificate file.
fn pem_certificate(path: &Path) -> Result<Vec<u8>, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let pem = pem::parse(&text)
        .map_err(|e| format!("{}: not a PEM certificate ({e})", path.display()))?;
    if pem.tag() != "CERTIFICATE" {
        return Err(format!(
            "{}: a PEM {:?}, not a CERTIFICATE",
            path.display(),
            pem.tag()
        ));
    }
    Ok(pem.into_contents())
}
