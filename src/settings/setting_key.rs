//! What a setting is (its [`Key`]: who reads it, its kind, its default): the one type the
//! registries of fits, studies and DP fits list and every reader takes, kept apart from them.

use toml::Value;

/// Who reads a setting: the plaintext fit or one of a secure study's roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reader {
    /// `privlogit fit` (plaintext, every party in one process).
    Fit,
    /// `privlogit study` (every role of a secure study in one process).
    Study,
    /// The key holder of a study between organizations.
    KeyHolder,
    /// The aggregator of a study between organizations.
    Aggregator,
    /// A Node of a study between organizations.
    Node,
    /// The optional dealer of masked products of a study between organizations.
    Dealer,
    /// `privlogit dp fit` and Python's `privlogit.dp.fit` (a differentially private fit's
    /// options, [`DP_KEYS`](super::dp_keys::DP_KEYS)).
    DpFit,
}

impl Reader {
    /// The command that plays this part.
    pub fn command(self) -> &'static str {
        match self {
            Reader::Fit => "fit",
            Reader::Study => "study",
            Reader::KeyHolder => "keyholder",
            Reader::Aggregator => "aggregator",
            Reader::Node => "node",
            Reader::Dealer => "dealer",
            Reader::DpFit => "dp fit",
        }
    }

    /// A process that plays one part of a study between organizations (not the one-process
    /// `study`, nor `fit`).
    pub fn is_role(self) -> bool {
        matches!(
            self,
            Reader::KeyHolder | Reader::Aggregator | Reader::Node | Reader::Dealer
        )
    }

    /// The roles of a secure study (every reader but the plaintext fit).
    pub const STUDY_ROLES: [Reader; 4] = [
        Reader::Study,
        Reader::KeyHolder,
        Reader::Aggregator,
        Reader::Node,
    ];
}

/// What a setting's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// On or off (a flag without a value on the command line).
    Switch,
    /// A real number (negative ones too, so that their check can name them).
    Number,
    /// A whole number.
    Count,
    /// Text (a column name, an address, a fixed-point format).
    Text,
    /// A file or directory.
    Path,
    /// One of the given names.
    Choice(&'static [&'static str]),
}

/// One setting.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The study file's key (`gradient_tol`); the long flag is the same with `-`.
    pub name: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// The value's placeholder in help (`G`, `FILE`).
    pub value_name: &'static str,
    /// What it does, in a sentence or two.
    pub help: &'static str,
    /// Who reads it.
    pub readers: &'static [Reader],
    /// Part of a study's plan, which every party of a study agrees on (and which its id covers);
    /// otherwise a party sets it for itself (its files, identity, output, seeds).
    pub shared: bool,
    /// May be given several times (each adds to the list).
    pub many: bool,
    /// Left out of help (kept for older study files and scripts).
    pub hidden: bool,
    /// Its default.
    pub preset: Preset,
}

/// A setting's default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Preset {
    /// The study's and the fit's: [`Spec::default`](super::Spec::default) holds it.
    Spec,
    /// None: unset unless given (its use says what unset means).
    Unset,
    /// A number.
    Number(f64),
    /// A whole number.
    Count(u64),
    /// One of the key's choices.
    Choice(&'static str),
}

impl Preset {
    /// The default as a setting's value (`None` when unset or held by [`Spec`](super::Spec)).
    pub fn value(self) -> Option<Value> {
        match self {
            Preset::Spec | Preset::Unset => None,
            Preset::Number(x) => Some(Value::Float(x)),
            Preset::Count(n) => Some(Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))),
            Preset::Choice(c) => Some(Value::String(c.to_string())),
        }
    }
}

pub(super) const fn key(
    name: &'static str,
    kind: Kind,
    value_name: &'static str,
    readers: &'static [Reader],
    shared: bool,
    help: &'static str,
) -> Key {
    Key {
        name,
        kind,
        value_name,
        help,
        readers,
        shared,
        many: false,
        hidden: false,
        preset: Preset::Spec,
    }
}

pub(super) const fn many(mut k: Key) -> Key {
    k.many = true;
    k
}
