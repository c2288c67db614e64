//! The settings of fits and secure studies, defined once: every key (the study file's key, the
//! command line's long flag with `_` as `-`, Python's keyword), who reads it, its help, its one
//! default ([`Spec::default`]) and how its value is read, from a study file, a command line or
//! Python alike. The command line builds its flags from [`KEYS`] and hands over only what the
//! user gave; [`Spec`] applies a study file, then those, and the plans of
//! [`crate::study`] and [`crate::fit`] validate the result.
//!
//! The registry itself: `study_keys` (fits and studies, one `settings!` entry each), [`dp_keys`]
//! (DP fits), both lists of the one [`Key`] type (`setting_key`); [`values`] says how each field
//! type is read and written; [`words`] spells the settings in a front end's words.

pub mod dp_keys;
mod setting_key;
mod study_keys;
pub mod values;
pub mod words;

pub use setting_key::{Key, Kind, Preset, Reader};
pub use study_keys::{KEYS, Spec};
pub use values::{FAMILIES, LINEAR_ALGEBRA, OPTIMIZERS, PROTOCOLS, parse_format};
use values::{choice_error, read_count, read_number, read_switch, read_text};

use privlogit_protocols::Optimizer;
use privlogit_protocols::disclosure::Disclosure;
use privlogit_protocols::secure::aggregator::Protocol;
use toml::Value;

use crate::error::{Error, SettingProblem};

/// The settings that make a run repeat bit for bit: the aggregator's masks and the servers'
/// noise shares. Whoever knows them and one server's view unmasks the study or its noise, so a
/// role process between organizations refuses them: from a study file (which every party
/// holds) always, from its own command line unless [`TEST_SEEDS`] is set to 1.
pub const SEEDS: &[&str] = &["seed", "noise_seed"];

/// The environment variable that lets a role process take a seed on its command line, for the
/// tests that compare a deployed study with a one-process run bit for bit. Never in a study.
pub const TEST_SEEDS: &str = "PRIVLOGIT_INSECURE_TEST_SEEDS";

/// Refuses a seed (one of [`SEEDS`]) where `reader` is a role process: named `origin`, with
/// the reason.
pub fn refuse_role_seed(reader: Reader, name: &str, origin: Origin<'_>) -> Result<(), Error> {
    if !reader.is_role() || !SEEDS.contains(&name) {
        return Ok(());
    }
    let allowed =
        matches!(origin, Origin::Given) && std::env::var(TEST_SEEDS).is_ok_and(|v| v == "1");
    if allowed {
        return Ok(());
    }
    let what = if name == "seed" {
        "the aggregator's masks: with it the key holder regenerates them and unmasks everything"
    } else {
        "both servers' noise shares: with it each server knows the other's noise"
    };
    Err(Error::Setting {
        key: if name == "seed" { "seed" } else { "noise_seed" },
        origin: origin.into(),
        problem: SettingProblem::RoleSeed {
            command: reader.command(),
            seeds: what,
        },
    })
}

/// The setting named `name` of a fit or a study.
pub fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// Every setting `reader` takes, in the order help lists them: the registry is [`KEYS`] (fits
/// and studies) and [`dp_keys::DP_KEYS`] (DP fits), one [`Key`] type read by the same code in
/// every front end.
pub fn keys_of(reader: Reader) -> impl Iterator<Item = &'static Key> {
    KEYS.iter()
        .chain(dp_keys::DP_KEYS)
        .filter(move |k| k.readers.contains(&reader))
}

/// The default of `key` as help shows it (`None` for switches, lists and unset options).
pub fn default_text(key: &Key) -> Option<String> {
    if key.kind == Kind::Switch || key.many {
        return None;
    }
    let value = match key.preset {
        Preset::Spec => Spec::default().get(key.name)?,
        preset => preset.value()?,
    };
    Some(match value {
        Value::String(s) => s,
        Value::Float(f) => format_number(f),
        Value::Integer(i) => i.to_string(),
        Value::Boolean(b) => b.to_string(),
        other => format!("{other:?}"),
    })
}

/// `value` read as `key` takes it (one item of a list key), or why not: the one check of a
/// value's form for every reader.
pub fn read_as(key: &Key, value: &Value) -> Result<Value, String> {
    Ok(match key.kind {
        Kind::Switch => Value::Boolean(read_switch(value)?),
        Kind::Number => Value::Float(read_number(value)?),
        Kind::Count => {
            let n = read_count(value)?;
            Value::Integer(i64::try_from(n).map_err(|_| format!("{n} is too large"))?)
        }
        Kind::Text | Kind::Path => Value::String(read_text(value)?),
        Kind::Choice(names) => {
            let got = read_text(value)?;
            if !names.contains(&got.as_str()) {
                return Err(choice_error(&got, names));
            }
            Value::String(got)
        }
    })
}

/// `"; did you mean `lambda`?"` for a name that is not a setting but close to one of `also`
/// or of the settings (at most two edits, or a third of its length), else "".
pub fn did_you_mean(name: &str, also: &[&str]) -> String {
    let settings = KEYS.iter().filter(|k| !k.hidden).map(|k| k.name);
    closest(name, settings.chain(also.iter().copied()))
}

/// `"; did you mean `x`?"` for the candidate closest to `name` (at most two edits, or a third
/// of its length), else "".
pub fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    closest_name(name, candidates).map_or(String::new(), |k| format!("; did you mean `{k}`?"))
}

/// The candidate closest to `name` (at most two edits, or a third of its length), if any: an
/// error carries it as a fact, its message words it. Edits may change at most half of the
/// shorter name, so that a short name is not "corrected" into an unrelated one (`aaa` is not
/// `ca`, two edits away).
pub fn closest_name<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.len() / 3).max(2);
    let wanted = name.replace('-', "_");
    candidates
        .map(|k| (strsim::damerau_levenshtein(&wanted, k), k))
        .filter(|(d, k)| *d <= limit && 2 * d <= wanted.len().min(k.len()))
        .min()
        .map(|(_, k)| k)
}

/// Where a value came from, for messages: a study file or the command line / caller.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// A study file (named).
    File(&'a std::path::Path),
    /// The command line or a library caller.
    Given,
}

impl Spec {
    /// The defaults, for `reader`.
    pub fn new(reader: Reader) -> Self {
        Self {
            reader,
            ..Self::default()
        }
    }

    /// The protocol's name.
    pub fn protocol_name(p: Protocol) -> &'static str {
        values::protocol_name(p)
    }

    /// Sets `name` to `value` (a list appends to a setting taken several times), checking the
    /// value's form; `origin` names where it came from in errors.
    pub fn set(&mut self, name: &str, value: &Value, origin: Origin<'_>) -> Result<(), Error> {
        let Some(key) = find(name) else {
            return Err(self.unknown(name, origin));
        };
        refuse_role_seed(self.reader, key.name, origin)?;
        if !key.readers.contains(&self.reader) {
            return Err(Error::Setting {
                key: key.name,
                origin: origin.into(),
                problem: SettingProblem::NotRead {
                    command: self.reader.command(),
                    readers: key.readers.iter().map(|r| r.command()).collect(),
                },
            });
        }
        // The value's reader words its refusal (the one String left: see `values`).
        let at = |why: String| Error::Setting {
            key: key.name,
            origin: origin.into(),
            problem: SettingProblem::Invalid { why },
        };
        // A list the caller gives replaces the study file's, as any other setting does (the
        // file's parties and the command line's would otherwise add up).
        if key.many && matches!(origin, Origin::Given) && self.from_file.contains_key(key.name) {
            self.reset(key.name);
            self.from_file.remove(key.name);
        }
        if let Value::Array(items) = value {
            if !key.many {
                return Err(Error::Setting {
                    key: key.name,
                    origin: origin.into(),
                    problem: SettingProblem::Refused {
                        why: "takes one value, not a list",
                    },
                });
            }
            for item in items {
                self.set(name, item, origin)?;
            }
            return Ok(());
        }
        match (key.name, value) {
            // As if left out: the plan chooses (a file's choice is overridden).
            ("protocol", Value::String(auto)) if auto == "auto" => {
                self.protocol = Spec::default().protocol;
                self.explicit.remove("protocol");
                self.from_caller.remove("protocol");
                return Ok(());
            }
            _ => self.assign(key.name, value).map_err(at)?,
        }
        // Older study files' switch for the accelerated optimiser.
        if key.name == "accelerate" && self.accelerate {
            self.optimizer = Optimizer::AcceleratedPrivLogit {
                memory: self.memory,
            };
            self.explicit.insert("optimizer");
            if matches!(origin, Origin::Given) {
                self.from_caller.insert("optimizer");
            }
        }
        self.explicit.insert(key.name);
        match origin {
            Origin::Given => {
                self.from_caller.insert(key.name);
                self.from_file.remove(key.name);
            }
            Origin::File(path) => {
                self.from_file.insert(key.name, path.to_path_buf());
            }
        }
        Ok(())
    }

    /// A refusal of the setting `key` named where its value came from: the study file's line
    /// (`study.toml: key_bits`) when the file set it and the caller did not, else the caller's
    /// setting (`--key-bits` on the command line).
    pub fn bad(&self, key: &'static str, problem: SettingProblem) -> Error {
        let origin = match self.from_file.get(key) {
            Some(path) if !self.from_caller.contains(key) => {
                crate::error::Origin::File(path.clone())
            }
            _ => crate::error::Origin::Given,
        };
        Error::Setting {
            key,
            origin,
            problem,
        }
    }

    fn unknown(&self, name: &str, origin: Origin<'_>) -> Error {
        let settings = KEYS.iter().filter(|k| !k.hidden).map(|k| k.name);
        Error::UnknownSetting {
            name: name.to_string(),
            origin: origin.into(),
            what: "a setting of any study command",
            suggestion: closest_name(name, settings),
        }
    }

    /// Refuses, before any work, an output (`out`, `cost`) that could not be written when the
    /// work ends: a missing or read-only directory, a full disk, a directory named as a file
    /// ([`crate::output::check_writable`]).
    pub fn check_outputs(&self) -> Result<(), Error> {
        for path in [&self.out, &self.cost].into_iter().flatten() {
            crate::output::check_writable(path).map_err(|e| Error::write(path, e))?;
        }
        Ok(())
    }

    /// Refuses one file named for two parties (`party`, `test_party`): a copied line that
    /// would count one site's rows twice. Files are compared by their canonical path, so
    /// `./a.csv` and `a.csv` are one; a file that does not exist is left to the reader's error.
    pub fn check_distinct_parties(&self) -> Result<(), Error> {
        for (key, paths) in [("party", &self.party), ("test_party", &self.test_party)] {
            if let Some(path) = crate::data::repeated_file(paths) {
                return Err(self.bad(
                    key,
                    SettingProblem::Twice {
                        value: path.display().to_string(),
                        why: " (each file is one party's rows: twice would count them twice)",
                    },
                ));
            }
        }
        Ok(())
    }

    /// Whether `name` was set by a file or the caller (not left at its default).
    pub fn given(&self, name: &str) -> bool {
        self.explicit.contains(name)
    }

    /// How firmly `name` was set: 0 its default, 1 by the study file, 2 by the caller.
    pub fn rank(&self, name: &str) -> u8 {
        u8::from(self.explicit.contains(name)) + u8::from(self.from_caller.contains(name))
    }

    /// The value of `name` as a study file would write it (`None` when unset), for help texts,
    /// Python's keyword defaults and the test that they agree.
    pub fn get(&self, name: &str) -> Option<Value> {
        match name {
            "protocol" if !self.given("protocol") => Some(Value::String("auto".into())),
            _ => self.value_of(name),
        }
    }

    /// The disclosure controls the settings make (a Node takes part with at least one row).
    pub fn disclosure(&self) -> Disclosure {
        Disclosure {
            min_rows: self.min_rows.max(1),
            max_parameter_share: self.max_parameter_share.0,
            min_cell: self.min_cell,
            two_nodes: self.two_node_disclosure,
        }
    }

    /// Whether the design has an intercept column.
    pub fn intercept(&self) -> bool {
        !self.no_intercept
    }

    /// The intervals' confidence level, refused unless strictly between 0 and 1 (a fit and a
    /// study check it before any work).
    pub fn checked_ci_level(&self) -> Result<f64, Error> {
        let level = self.ci_level;
        if level > 0.0 && level < 1.0 {
            Ok(level)
        } else {
            Err(self.bad(
                "ci_level",
                SettingProblem::OutOfRange {
                    value: level,
                    low: 0.0,
                    high: 1.0,
                    closed: false,
                },
            ))
        }
    }

    /// The default of `name` as help shows it (`None` for switches and unset options).
    pub fn default_text(name: &str) -> Option<String> {
        default_text(find(name)?)
    }
}

impl From<Origin<'_>> for crate::error::Origin {
    fn from(origin: Origin<'_>) -> Self {
        match origin {
            Origin::File(path) => crate::error::Origin::File(path.to_path_buf()),
            Origin::Given => crate::error::Origin::Given,
        }
    }
}

/// A number as a person writes it (the tables' convention, [`crate::inference::summary`]).
pub use crate::inference::summary::format_number;

#[cfg(test)]
mod tests {
    use super::*;

    /// Typos get their setting; short names far from every setting get none.
    #[test]
    fn suggestions_fix_typos_and_leave_strangers_alone() {
        let suggest = |name| closest_name(name, KEYS.iter().map(|k| k.name));
        assert_eq!(suggest("lamda"), Some("lambda"));
        assert_eq!(suggest("labl"), Some("label"));
        assert_eq!(suggest("max-iter"), Some("max_iter"));
        assert_eq!(suggest("sed"), Some("seed"));
        assert_eq!(suggest("aaa"), None);
        assert_eq!(suggest("zz"), None);
    }

    #[test]
    fn every_key_reads_and_writes_its_default() {
        let defaults = Spec::default();
        for key in KEYS {
            let mut spec = Spec::new(key.readers[0]);
            if let Some(v) = defaults.get(key.name) {
                let v = match v {
                    Value::Array(items) if items.is_empty() => continue,
                    v => v,
                };
                spec.set(key.name, &v, Origin::Given)
                    .unwrap_or_else(|e| panic!("{}: {e}", key.name));
                assert_eq!(spec.get(key.name), Some(v), "{}", key.name);
            }
        }
    }

    /// `protocol = "auto"` is the protocol left out: a study in one process plans what the
    /// roles do (Local), and the command line's auto overrides a file's choice.
    #[test]
    fn auto_protocol_is_the_protocol_left_out() {
        let file = Origin::File(std::path::Path::new("study.toml"));
        let mut spec = Spec::new(Reader::Study);
        spec.set("protocol", &Value::String("local".into()), file)
            .expect("a protocol");
        assert_eq!(
            spec.in_process_plan(3).expect("plan").protocol,
            Protocol::Local
        );
        spec.set("protocol", &Value::String("auto".into()), Origin::Given)
            .expect("auto");
        assert!(!spec.given("protocol"));
        assert_eq!(spec.get("protocol"), Some(Value::String("auto".into())));
        assert_eq!(
            spec.in_process_plan(3).expect("plan").protocol,
            Protocol::Local
        );
        assert_eq!(spec.study_plan(3).expect("plan").protocol, Protocol::Local);
        spec.set("optimizer", &Value::String("newton".into()), Origin::Given)
            .expect("an optimizer");
        assert_eq!(
            spec.in_process_plan(3).expect("plan").protocol,
            Protocol::Newton
        );
    }

    /// A list the command line gives replaces the study file's (`--party` over a file's
    /// parties: they used to add up, and one file named in both was refused as given twice),
    /// and several values given on the command line add up among themselves.
    #[test]
    fn a_given_list_replaces_the_files() {
        let file = Origin::File(std::path::Path::new("study.toml"));
        let mut spec = Spec::new(Reader::Study);
        let parties = Value::Array(vec![
            Value::String("a.csv".into()),
            Value::String("b.csv".into()),
        ]);
        spec.set("party", &parties, file).expect("parties");
        spec.set("party", &Value::String("c.csv".into()), Origin::Given)
            .expect("a party");
        spec.set("party", &Value::String("d.csv".into()), Origin::Given)
            .expect("another");
        let names: Vec<_> = spec.party.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(names, ["c.csv", "d.csv"]);
    }

    #[test]
    fn values_from_files_and_command_lines_agree() {
        let mut a = Spec::new(Reader::Study);
        let mut b = Spec::new(Reader::Study);
        a.set("lambda", &Value::Float(0.5), Origin::Given)
            .expect("a number");
        b.set("lambda", &Value::String("0.5".into()), Origin::Given)
            .expect("a number as text");
        assert_eq!(a.lambda, b.lambda);
        let e = a
            .set("lambda", &Value::Boolean(true), Origin::Given)
            .expect_err("a switch is not a number");
        assert!(e.to_string().contains("setting `lambda`"), "{e}");
        let e = a
            .set("listen", &Value::String("x".into()), Origin::Given)
            .expect_err("a study has no listen address");
        assert!(e.to_string().contains("keyholder"), "{e}");
    }
}
