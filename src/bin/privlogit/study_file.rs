//! `--study FILE`: a study's settings in a TOML file, for `study`, `aggregator`, `keyholder`
//! and `node`. Every key is a long flag of the command (`protocol = "hessian"`, `lambda = 0.5`,
//! `standardize = true`, `party = ["a.csv", "b.csv"]`); the file's settings are placed before
//! the command line's, so a flag given on the command line overrides the file (list flags such
//! as `party` add to it).
//!
//! The parties of a study between organizations are tables of the same file, read by
//! [`roster`] rather than turned into flags:
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
//! ```
//!
//! Instead of a fingerprint per party, a study may name a consortium certificate authority,
//! `ca = "consortium.crt"`: a party whose table has neither `fingerprint` nor `certificate` is
//! then known by a certificate that authority issued for its name.
//!
//! Every party derives the study id from its copy of the file ([`Roster::study_id`]): the
//! label, the parties with their addresses and certificates, and the study's shared settings
//! (every key but [`LOCAL_KEYS`], which each party sets for itself). Two studies with the same
//! parties thus differ unless their files agree in every shared setting, and the parties of one
//! study must all use the same file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use privlogit::protocols::transport::{Fingerprint, Member, Role, Roster};

/// Keys of the study file that name parties (or the stacking stages' table) rather than flags.
const PARTY_KEYS: [&str; 6] = ["keyholder", "aggregator", "node", "study_id", "ca", "stack"];

/// Keys a party sets for itself (its files, identity, state, output, seeds, deadline): left
/// out of the study id, so that the parties' copies of a study file may differ in them.
const LOCAL_KEYS: [&str; 17] = [
    "identity",
    "insecure_plaintext",
    "deadline",
    "state",
    "resume",
    "listen",
    "parties",
    "seed",
    "noise_seed",
    "json",
    "out",
    "party",
    "label",
    "name",
    "ledger",
    "budget",
    "quiet",
];

/// Commands that take `--study FILE`.
const COMMANDS: [&str; 4] = ["study", "aggregator", "keyholder", "node"];

/// The stacking stages that take `--study FILE` (`stack publish`, ...): they read the file's
/// top-level keys they accept (`label`) and its `[stack]` table (`epsilon`, `lambda`,
/// `groups`, `low_fraction`, `high_lambda`, `model`, ...), so that one study file holds the
/// settings of every stage of a cross-organization stacking study, the secure high level's
/// (`dp_epsilon`, `protocol`, the parties) included.
const STACK_STAGES: [&str; 3] = ["publish", "meta", "run"];

/// `args` with the file of `--study FILE` expanded into the flags that the command accepts
/// (`accepts(command, flag)`); a key that no study command accepts is an error, one that only
/// other roles take (`protocol` for the key holder) is left to them.
pub fn expand(args: Vec<OsString>, accepts: &dyn Fn(&str, &str) -> bool) -> Result<Vec<OsString>> {
    if let Some(stage) = stack_stage(&args) {
        return expand_stage(args, stage, accepts);
    }
    let Some(command) = args.iter().position(|a| COMMANDS.iter().any(|c| a == c)) else {
        return Ok(args);
    };
    let Some(at) = args.iter().position(|a| a == "--study") else {
        return Ok(args);
    };
    if at < command {
        return Ok(args);
    }
    let path = args
        .get(at + 1)
        .context("--study needs a file: --study FILE")?
        .clone();
    let command_name = args[command].to_string_lossy().into_owned();
    let flags = read(Path::new(&path), &command_name, accepts)?;
    let mut out: Vec<OsString> = args[..=command].to_vec();
    out.extend(flags);
    // `--study FILE` stays: the command reads the file's parties from it.
    out.extend(args[command + 1..].iter().cloned());
    Ok(out)
}

/// The position of the stage in `privlogit stack STAGE ...`, if that is the command.
fn stack_stage(args: &[OsString]) -> Option<usize> {
    let stack = args.iter().position(|a| a == "stack")?;
    let stage = stack + 1;
    args.get(stage)
        .filter(|a| STACK_STAGES.iter().any(|s| *a == *s))
        .map(|_| stage)
}

/// [`expand`] for a stacking stage (`accepts("stack publish", flag)`): the top-level keys it
/// accepts and every key of the `[stack]` table (which must all be its own or another stage's).
fn expand_stage(
    args: Vec<OsString>,
    stage: usize,
    accepts: &dyn Fn(&str, &str) -> bool,
) -> Result<Vec<OsString>> {
    let Some(at) = args.iter().position(|a| a == "--study") else {
        return Ok(args);
    };
    let path = PathBuf::from(
        args.get(at + 1)
            .context("--study needs a file: --study FILE")?,
    );
    let command = format!("stack {}", args[stage].to_string_lossy());
    let name = path.display();
    let table = parse(&path)?;
    let mut flags = Vec::new();
    for (key, value) in table
        .iter()
        .filter(|(k, _)| !PARTY_KEYS.contains(&k.as_str()))
    {
        if accepts(&command, &key.replace('_', "-")) {
            flags.extend(as_flags(&name.to_string(), key, value)?);
        }
    }
    if let Some(stack) = table.get("stack") {
        let Some(stack) = stack.as_table() else {
            bail!("{name}: stack must be a table ([stack])");
        };
        for (key, value) in stack {
            let long = key.replace('_', "-");
            if accepts(&command, &long) {
                flags.extend(as_flags(&name.to_string(), key, value)?);
            } else if !STACK_STAGES
                .iter()
                .any(|s| accepts(&format!("stack {s}"), &long))
            {
                bail!("{name}: [stack] {key} is not a setting of any stacking stage");
            }
        }
    }
    let mut out: Vec<OsString> = args[..=stage].to_vec();
    out.extend(flags);
    out.extend(
        args[stage + 1..]
            .iter()
            .enumerate()
            .filter(|&(i, _)| i + stage + 1 != at && i + stage + 1 != at + 1)
            .map(|(_, a)| a.clone()),
    );
    Ok(out)
}

/// One key's value as command-line flags (`true`: the flag; arrays: the flag per item).
fn as_flags(name: &str, key: &str, value: &toml::Value) -> Result<Vec<OsString>> {
    let flag = format!("--{}", key.replace('_', "-"));
    let scalar = |v: &toml::Value| -> Result<String> {
        Ok(match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            other => bail!(
                "{name}: {key} is a {}, expected a string or a number",
                other.type_str()
            ),
        })
    };
    let mut flags: Vec<OsString> = Vec::new();
    match value {
        toml::Value::Boolean(true) => flags.push(flag.into()),
        toml::Value::Boolean(false) => {}
        toml::Value::Array(items) => {
            for item in items {
                flags.push(flag.clone().into());
                flags.push(scalar(item)?.into());
            }
        }
        v => {
            flags.push(flag.into());
            flags.push(scalar(v)?.into());
        }
    }
    Ok(flags)
}

/// Flags that name one study's own address or output, refused on the command line of a server
/// serving several studies (each study file names its own).
const PER_STUDY_FLAGS: [&str; 4] = ["--listen", "--keyholder", "--out", "--parties"];

/// One study's label and its command line.
pub type StudyArgs = (String, Vec<OsString>);

/// For `keyholder` or `aggregator` with several `--study FILE`: one argument list per study
/// (the others' `--study` removed) and a label for its lines (the file's stem); `None` when
/// there are fewer than two studies or another command.
pub fn split_studies(args: &[OsString]) -> Result<Option<Vec<StudyArgs>>> {
    let Some(command) = args
        .iter()
        .position(|a| a == "keyholder" || a == "aggregator")
    else {
        return Ok(None);
    };
    let studies: Vec<usize> = (command + 1..args.len())
        .filter(|&i| args[i] == "--study")
        .collect();
    if studies.len() < 2 {
        return Ok(None);
    }
    if let Some(flag) = args[command + 1..]
        .iter()
        .find(|a| PER_STUDY_FLAGS.iter().any(|f| a == f))
    {
        bail!(
            "{} with several studies: each study file names its own addresses (the [keyholder] \
             and [aggregator] tables) and output (out = \"FILE\"), so it is refused on the command line",
            flag.to_string_lossy()
        );
    }
    let mut common = Vec::new();
    let mut i = command + 1;
    let mut files = Vec::new();
    while i < args.len() {
        if args[i] == "--study" {
            files.push(
                args.get(i + 1)
                    .context("--study needs a file: --study FILE")?
                    .clone(),
            );
            i += 2;
        } else {
            common.push(args[i].clone());
            i += 1;
        }
    }
    Ok(Some(
        files
            .into_iter()
            .map(|file| {
                let label = Path::new(&file)
                    .file_stem()
                    .map_or_else(|| "study".into(), |s| s.to_string_lossy().into_owned());
                let mut argv: Vec<OsString> = args[..=command].to_vec();
                argv.push("--study".into());
                argv.push(file);
                argv.extend(common.iter().cloned());
                (label, argv)
            })
            .collect(),
    ))
}

/// The study file's TOML, with parse errors at their line and column.
fn parse(path: &Path) -> Result<toml::Table> {
    let name = path.display();
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {name}"))?;
    text.parse().map_err(|e: toml::de::Error| {
        let at = e
            .span()
            .map(|span| {
                let before = &text[..span.start];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!(":{line}:{column}")
            })
            .unwrap_or_default();
        anyhow::anyhow!("{name}{at}: {}", e.message())
    })
}

/// The flags a study file stands for.
fn read(path: &Path, command: &str, accepts: &dyn Fn(&str, &str) -> bool) -> Result<Vec<OsString>> {
    let name = path.display();
    let table = parse(path)?;
    let mut flags = Vec::new();
    for (key, value) in table
        .iter()
        .filter(|(k, _)| !PARTY_KEYS.contains(&k.as_str()))
    {
        let long = key.replace('_', "-");
        if !accepts(command, &long) {
            if COMMANDS.iter().any(|c| accepts(c, &long)) {
                continue;
            }
            bail!("{name}: {key} is not a setting of any study command");
        }
        flags.extend(as_flags(&name.to_string(), key, value)?);
    }
    Ok(flags)
}

/// What a study file says about the study as a whole: its parties and its id.
pub struct StudyParties {
    /// The parties.
    pub roster: Roster,
    /// The study id every party derives alike from the file.
    pub id: [u8; 32],
}

/// The parties a study file names and the study id; `None` when it names no parties.
pub fn roster(path: &Path) -> Result<Option<StudyParties>> {
    let name = path.display().to_string();
    let table = parse(path)?;
    let label = match table.get("study_id") {
        None => String::new(),
        Some(toml::Value::String(s)) => s.clone(),
        Some(v) => bail!("{name}: study_id is a {}, expected a string", v.type_str()),
    };
    let present: Vec<&str> = ["keyholder", "aggregator", "node"]
        .into_iter()
        .filter(|k| table.contains_key(*k))
        .collect();
    if present.is_empty() {
        return Ok(None);
    }
    if present.len() < 3 {
        let missing: Vec<&str> = ["[keyholder]", "[aggregator]", "[[node]]"]
            .into_iter()
            .filter(|k| !present.contains(&k.trim_matches(['[', ']'])))
            .collect();
        bail!(
            "{name}: the study names some parties but not {}: name the key holder, the aggregator and every Node",
            missing.join(", ")
        );
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let ca = match table.get("ca") {
        None => None,
        Some(toml::Value::String(c)) => {
            Some(rustls_pem_certificate(&base.join(c)).with_context(|| format!("{name}: ca"))?)
        }
        Some(v) => bail!("{name}: ca is a {}, expected a file name", v.type_str()),
    };
    let member = |v: &toml::Value, role: Role, default: &str, at: &str| -> Result<Member> {
        let t = v
            .as_table()
            .with_context(|| format!("{name}: {at} is not a table"))?;
        for key in t.keys() {
            if !["name", "address", "fingerprint", "certificate"].contains(&key.as_str()) {
                bail!(
                    "{name}: {at} has an unknown key {key:?} (name, address, fingerprint or certificate)"
                );
            }
        }
        let text = |key: &str| -> Result<Option<String>> {
            match t.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => bail!(
                    "{name}: {at}.{key} is a {}, expected a string",
                    v.type_str()
                ),
            }
        };
        let fingerprint = match (text("fingerprint")?, text("certificate")?) {
            (Some(_), Some(_)) => {
                bail!("{name}: {at} has both a fingerprint and a certificate: give one")
            }
            (Some(f), None) => Some(
                f.parse::<Fingerprint>()
                    .map_err(|e| anyhow::anyhow!("{name}: {at}.fingerprint: {e}"))?,
            ),
            (None, Some(c)) => {
                let file = base.join(&c);
                let der = rustls_pem_certificate(&file)
                    .with_context(|| format!("{name}: {at}.certificate"))?;
                Some(Fingerprint::of(&der))
            }
            (None, None) => None,
        };
        let party_name = match text("name")? {
            Some(n) => n,
            None if role == Role::Node => bail!("{name}: {at} has no name"),
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
            .collect::<Result<Vec<_>>>()?,
        other => bail!(
            "{name}: node is a {}, expected [[node]] tables",
            other.type_str()
        ),
    };
    let roster = Roster {
        keyholder,
        aggregator,
        nodes,
        ca,
    };
    roster
        .validate()
        .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    let id = roster.study_id(&label, &shared_settings(&table));
    Ok(Some(StudyParties { roster, id }))
}

/// The study's shared settings in a canonical text: every key but the parties' tables and
/// [`LOCAL_KEYS`], sorted, with canonical values (so key order, spacing and comments in the
/// file do not matter).
fn shared_settings(table: &toml::Table) -> String {
    let shared: toml::Table = table
        .iter()
        .filter(|(k, _)| {
            !LOCAL_KEYS.contains(&k.as_str())
                && !["keyholder", "aggregator", "node", "study_id", "ca"].contains(&k.as_str())
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

/// The study id of the study file `path` (`None` when it names no parties): what a server
/// serving several studies compares to refuse two that are one.
pub fn study_id(path: &Path) -> Result<Option<[u8; 32]>> {
    Ok(roster(path)?.map(|s| s.id))
}

/// The DER bytes of a PEM certificate file.
fn rustls_pem_certificate(path: &Path) -> Result<Vec<u8>> {
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let pem = pem::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}: not a PEM certificate ({e})", path.display()))?;
    if pem.tag() != "CERTIFICATE" {
        bail!(
            "{}: a PEM {:?}, not a CERTIFICATE",
            path.display(),
            pem.tag()
        );
    }
    Ok(pem.into_contents())
}
