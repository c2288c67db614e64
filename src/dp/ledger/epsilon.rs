//! Amounts of epsilon in whole micro-epsilons: the one unit the ledger, its accounts and its
//! errors count in, kept apart so that each of them reads it from here.

use std::fmt;

use serde::{Deserialize, Serialize};

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
    pub(super) const MAX: Epsilon = Epsilon(u64::MAX);

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

    pub(super) fn saturating_add(self, other: Epsilon) -> Epsilon {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
