//! How a setting's value is read and written: one [`SettingValue`] per field type of
//! [`super::Spec`], so that a setting is declared once (its field's type says its [`Kind`], whether
//! it may be given several times, how a study file's or a command line's value becomes it and how
//! it is written back). Every reader (study files, the command line, Python) goes through these.

use std::path::PathBuf;

use privlogit_circuits::fixed_format::FixedFormat;
use privlogit_protocols::Family;
use privlogit_protocols::Optimizer;
use privlogit_protocols::secure::aggregator::{Protocol, Reveal};
use privlogit_protocols::secure::solver::LinearAlgebra;
use toml::Value;

use super::setting_key::Kind;

/// The names of [`Family`](privlogit_protocols::Family) values.
pub const FAMILIES: &[&str] = &["binomial", "gaussian", "poisson"];
/// The names of [`Protocol`]s.
pub const PROTOCOLS: &[&str] = &["auto", "local", "hessian", "newton"];
/// The names of [`Optimizer`]s.
pub const OPTIMIZERS: &[&str] = &["privlogit-accel", "privlogit", "newton"];
/// The names of [`LinearAlgebra`](privlogit_protocols::secure::solver::LinearAlgebra) methods.
pub const LINEAR_ALGEBRA: &[&str] = &["masked", "circuit"];

/// A type a setting's field may have.
pub trait SettingValue {
    /// What the value is, for help, Python's keyword types and [`super::read_as`].
    const KIND: Kind;
    /// Whether the setting may be given several times (each adds to a list).
    const MANY: bool = false;
    /// Takes one value (one item of a list), or says what is wrong with it.
    fn assign(&mut self, value: &Value) -> Result<(), String>;
    /// The value as a study file writes it (`None` when unset).
    fn value(&self) -> Option<Value>;
}

/// A type one value of a setting may have (a field is one, an optional one, or a list).
pub trait Scalar: Sized {
    /// What the value is.
    const KIND: Kind;
    /// Reads one value.
    fn read(value: &Value) -> Result<Self, String>;
    /// Writes it as a study file would.
    fn write(&self) -> Value;
}

impl<T: Scalar> SettingValue for Option<T> {
    const KIND: Kind = T::KIND;
    fn assign(&mut self, value: &Value) -> Result<(), String> {
        *self = Some(T::read(value)?);
        Ok(())
    }
    fn value(&self) -> Option<Value> {
        self.as_ref().map(T::write)
    }
}

impl<T: Scalar> SettingValue for Vec<T> {
    const KIND: Kind = T::KIND;
    const MANY: bool = true;
    fn assign(&mut self, value: &Value) -> Result<(), String> {
        self.push(T::read(value)?);
        Ok(())
    }
    fn value(&self) -> Option<Value> {
        Some(Value::Array(self.iter().map(T::write).collect()))
    }
}

/// A field that always has a value: the scalar itself.
macro_rules! plain_setting {
    ($($ty:ty),* $(,)?) => {$(
        impl SettingValue for $ty {
            const KIND: Kind = <$ty as Scalar>::KIND;
            fn assign(&mut self, value: &Value) -> Result<(), String> {
                *self = <$ty as Scalar>::read(value)?;
                Ok(())
            }
            fn value(&self) -> Option<Value> {
                Some(self.write())
            }
        }
    )*};
}

plain_setting!(
    bool,
    f64,
    usize,
    u64,
    u32,
    String,
    PathBuf,
    Share,
    Protocol,
    Optimizer,
    LinearAlgebra,
    Family,
    Reveal,
    FixedFormat,
);

impl Scalar for bool {
    const KIND: Kind = Kind::Switch;
    fn read(value: &Value) -> Result<Self, String> {
        read_switch(value)
    }
    fn write(&self) -> Value {
        Value::Boolean(*self)
    }
}

impl Scalar for f64 {
    const KIND: Kind = Kind::Number;
    fn read(value: &Value) -> Result<Self, String> {
        read_number(value)
    }
    fn write(&self) -> Value {
        Value::Float(*self)
    }
}

impl Scalar for u64 {
    const KIND: Kind = Kind::Count;
    fn read(value: &Value) -> Result<Self, String> {
        read_count(value)
    }
    fn write(&self) -> Value {
        Value::Integer(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl Scalar for usize {
    const KIND: Kind = Kind::Count;
    fn read(value: &Value) -> Result<Self, String> {
        let n = read_count(value)?;
        usize::try_from(n).map_err(|_| "is too large".to_string())
    }
    fn write(&self) -> Value {
        (*self as u64).write()
    }
}

impl Scalar for u32 {
    const KIND: Kind = Kind::Count;
    fn read(value: &Value) -> Result<Self, String> {
        u32::try_from(read_count(value)?).map_err(|_| "is too large".to_string())
    }
    fn write(&self) -> Value {
        u64::from(*self).write()
    }
}

impl Scalar for String {
    const KIND: Kind = Kind::Text;
    fn read(value: &Value) -> Result<Self, String> {
        read_text(value)
    }
    fn write(&self) -> Value {
        Value::String(self.clone())
    }
}

impl Scalar for PathBuf {
    const KIND: Kind = Kind::Path;
    fn read(value: &Value) -> Result<Self, String> {
        read_text(value).map(PathBuf::from)
    }
    fn write(&self) -> Value {
        Value::String(self.display().to_string())
    }
}

/// A share above 0 (DataSHIELD's `nfilter.glm`: coefficients per training row).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share(pub f64);

impl Scalar for Share {
    const KIND: Kind = Kind::Number;
    fn read(value: &Value) -> Result<Self, String> {
        let share = read_number(value)?;
        if share.is_nan() || share <= 0.0 {
            return Err(format!("{share} is not a share above 0"));
        }
        Ok(Share(share))
    }
    fn write(&self) -> Value {
        Value::Float(self.0)
    }
}

/// A choice among named values: read by name, written by name.
macro_rules! choice {
    ($ty:ty, $names:expr, $parse:expr, $name:expr) => {
        impl Scalar for $ty {
            const KIND: Kind = Kind::Choice($names);
            fn read(value: &Value) -> Result<Self, String> {
                let got = read_text(value)?;
                let parse: fn(&str) -> Option<$ty> = $parse;
                parse(&got).ok_or_else(|| choice_error(&got, $names))
            }
            fn write(&self) -> Value {
                let name: fn(&$ty) -> &'static str = $name;
                Value::String(name(self).into())
            }
        }
    };
}

// `auto` is the protocol left out: [`super::Spec::set`] takes it before the value is read.
choice!(
    Protocol,
    PROTOCOLS,
    |s| match s {
        "local" => Some(Protocol::Local),
        "hessian" => Some(Protocol::Hessian),
        "newton" => Some(Protocol::Newton),
        _ => None,
    },
    |p| protocol_name(*p)
);

/// A protocol's name as a study file writes it (`auto` is no protocol: it is the one left out).
pub fn protocol_name(p: Protocol) -> &'static str {
    match p {
        Protocol::Local => "local",
        Protocol::Hessian => "hessian",
        Protocol::Newton => "newton",
    }
}
choice!(Optimizer, OPTIMIZERS, |s| s.parse().ok(), |o| o.name());
choice!(LinearAlgebra, LINEAR_ALGEBRA, |s| s.parse().ok(), |m| m
    .name());
choice!(Family, FAMILIES, Family::parse, |f| f.name());
choice!(Reveal, Reveal::NAMES, |s| s.parse().ok(), |r| r.name());

impl Scalar for FixedFormat {
    const KIND: Kind = Kind::Text;
    fn read(value: &Value) -> Result<Self, String> {
        parse_format(&read_text(value)?)
    }
    fn write(&self) -> Value {
        Value::String(format!("{}/{}", self.width(), self.frac()))
    }
}

/// "`x` is not one of a, b, c".
pub(super) fn choice_error(got: &str, choices: &[&str]) -> String {
    format!("`{got}` is not one of {}", choices.join(", "))
}

pub(super) fn read_text(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        other => Err(format!("is a {}, expected text", other.type_str())),
    }
}

pub(super) fn read_number(value: &Value) -> Result<f64, String> {
    match value {
        Value::Float(f) => Ok(*f),
        Value::Integer(i) => Ok(*i as f64),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a number")),
        other => Err(format!("is a {}, expected a number", other.type_str())),
    }
}

pub(super) fn read_count(value: &Value) -> Result<u64, String> {
    match value {
        Value::Integer(i) => u64::try_from(*i).map_err(|_| format!("{i} is negative")),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a whole number")),
        other => Err(format!(
            "is a {}, expected a whole number",
            other.type_str()
        )),
    }
}

pub(super) fn read_switch(value: &Value) -> Result<bool, String> {
    match value {
        Value::Boolean(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(format!("is a {}, expected true or false", other.type_str())),
    }
}

/// A fixed-point format written `WIDTH/FRACTION`.
pub fn parse_format(s: &str) -> Result<FixedFormat, String> {
    let (w, f) = s
        .split_once('/')
        .ok_or_else(|| format!("{s:?} is not WIDTH/FRACTION, e.g. 64/46"))?;
    let w: u32 = w
        .trim()
        .parse()
        .map_err(|_| format!("bad width in {s:?}"))?;
    let f: u32 = f
        .trim()
        .parse()
        .map_err(|_| format!("bad fraction in {s:?}"))?;
    FixedFormat::new(w, f).map_err(|e| e.to_string())
}
