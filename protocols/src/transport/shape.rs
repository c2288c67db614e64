//! A network you can dial in: a one-way latency and a bandwidth that every connection of this
//! process imposes on what it sends, so that a study on one machine (one process or five) runs
//! as it would between organizations far apart. Each data record leaves the writer no earlier
//! than `latency` after the protocol handed it over, and no faster than `bandwidth` allows (a
//! link that is busy serialising earlier records holds later ones back). Both ends of a
//! connection apply their own setting, so a round trip costs twice the latency.
//!
//! Set it once per process ([`set_link_shape`], the command line's `--latency` and
//! `--bandwidth`) or through `PRIVLOGIT_LATENCY` and `PRIVLOGIT_BANDWIDTH` (read when the first
//! connection starts). Handshakes are not delayed: they happen once per connection, and a
//! forwarder outside the process (`scripts/delay-proxy`) measures them too.

use std::fmt;
use std::sync::RwLock;
use std::time::Duration;

/// The latency and bandwidth a connection imposes on what it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkShape {
    /// One-way delay added to every record sent.
    pub latency: Duration,
    /// Bits per second (`None`: as fast as the machine).
    pub bandwidth: Option<u64>,
}

impl LinkShape {
    /// No delay, no limit: the machine's own network.
    pub const NATIVE: Self = Self {
        latency: Duration::ZERO,
        bandwidth: None,
    };

    /// Whether this shape changes anything.
    pub fn is_native(&self) -> bool {
        *self == Self::NATIVE
    }

    /// How long `bytes` take on the wire at this bandwidth.
    pub fn serialisation(&self, bytes: usize) -> Duration {
        match self.bandwidth {
            Some(bits) if bits > 0 => Duration::from_secs_f64(bytes as f64 * 8.0 / bits as f64),
            _ => Duration::ZERO,
        }
    }
}

impl fmt::Display for LinkShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ms one way ({} ms round trip)",
            self.latency.as_secs_f64() * 1e3,
            self.latency.as_secs_f64() * 2e3
        )?;
        if let Some(bits) = self.bandwidth {
            write!(f, ", {} Mbit/s", bits as f64 / 1e6)?;
        }
        Ok(())
    }
}

/// What a latency or bandwidth text could not be read as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{text}`: {expected}")]
#[non_exhaustive]
pub struct ShapeError {
    what: &'static str,
    text: String,
    expected: &'static str,
}

/// Reads a one-way latency: `25ms`, `0.5s`, `250us`, `0`.
pub fn parse_latency(text: &str) -> Result<Duration, ShapeError> {
    let error = || ShapeError {
        what: "latency",
        text: text.to_string(),
        expected: "a duration such as 25ms, 0.05s or 0",
    };
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if t == "0" {
        ("0", 1.0)
    } else {
        return Err(error());
    };
    let value: f64 = number.trim().parse().map_err(|_| error())?;
    let seconds = value * scale;
    if !seconds.is_finite() || !(0.0..=60.0).contains(&seconds) {
        return Err(ShapeError {
            expected: "between 0 and 60 s",
            ..error()
        });
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Reads a bandwidth: `100mbit`, `1gbit`, `500kbit`, `off`.
pub fn parse_bandwidth(text: &str) -> Result<Option<u64>, ShapeError> {
    let error = || ShapeError {
        what: "bandwidth",
        text: text.to_string(),
        expected: "bits per second such as 100mbit, 1gbit, 500kbit, or off",
    };
    let t = text.trim().to_ascii_lowercase();
    if t == "off" || t == "0" {
        return Ok(None);
    }
    let (number, scale) = if let Some(n) = t.strip_suffix("gbit") {
        (n.to_string(), 1e9)
    } else if let Some(n) = t.strip_suffix("mbit") {
        (n.to_string(), 1e6)
    } else if let Some(n) = t.strip_suffix("kbit") {
        (n.to_string(), 1e3)
    } else if let Some(n) = t.strip_suffix("bit") {
        (n.to_string(), 1.0)
    } else {
        return Err(error());
    };
    let value: f64 = number.trim().parse().map_err(|_| error())?;
    let bits = value * scale;
    if !bits.is_finite() || !(1e3..=1e12).contains(&bits) {
        return Err(ShapeError {
            expected: "between 1kbit and 1000gbit",
            ..error()
        });
    }
    Ok(Some(bits as u64))
}

static SHAPE: RwLock<Option<LinkShape>> = RwLock::new(None);

/// Sets the shape of every connection this process starts from now on.
pub fn set_link_shape(shape: LinkShape) {
    *SHAPE.write().unwrap_or_else(|p| p.into_inner()) = Some(shape);
}

/// The shape connections start with: what [`set_link_shape`] set, else the environment's,
/// else none. The library prints nothing: an unreadable environment value is ignored here,
/// and the front ends refuse it with [`from_environment`] before anything runs (the command
/// line at its start, Python when its module is loaded).
pub fn link_shape() -> LinkShape {
    if let Some(shape) = *SHAPE.read().unwrap_or_else(|p| p.into_inner()) {
        return shape;
    }
    let shape = from_environment().unwrap_or(LinkShape::NATIVE);
    set_link_shape(shape);
    shape
}

/// The shape `PRIVLOGIT_LATENCY` and `PRIVLOGIT_BANDWIDTH` ask for.
pub fn from_environment() -> Result<LinkShape, ShapeError> {
    // The error names the variable, which the user may not know is set.
    let named = |what: &'static str| move |e: ShapeError| ShapeError { what, ..e };
    let latency = match std::env::var("PRIVLOGIT_LATENCY") {
        Ok(text) if !text.trim().is_empty() => {
            parse_latency(&text).map_err(named("PRIVLOGIT_LATENCY"))?
        }
        _ => Duration::ZERO,
    };
    let bandwidth = match std::env::var("PRIVLOGIT_BANDWIDTH") {
        Ok(text) if !text.trim().is_empty() => {
            parse_bandwidth(&text).map_err(named("PRIVLOGIT_BANDWIDTH"))?
        }
        _ => None,
    };
    Ok(LinkShape { latency, bandwidth })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_and_bandwidths_read_as_written() {
        assert_eq!(parse_latency("25ms"), Ok(Duration::from_millis(25)));
        assert_eq!(parse_latency("0.05s"), Ok(Duration::from_millis(50)));
        assert_eq!(parse_latency("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_latency("0"), Ok(Duration::ZERO));
        assert!(parse_latency("25").is_err());
        assert!(parse_latency("-1ms").is_err());
        assert!(parse_latency("2min").is_err());
        assert_eq!(parse_bandwidth("100mbit"), Ok(Some(100_000_000)));
        assert_eq!(parse_bandwidth("1Gbit"), Ok(Some(1_000_000_000)));
        assert_eq!(parse_bandwidth("off"), Ok(None));
        assert!(parse_bandwidth("100MB").is_err());
        assert!(parse_bandwidth("5bit").is_err());
    }

    #[test]
    fn serialisation_follows_the_bandwidth() {
        let shape = LinkShape {
            latency: Duration::ZERO,
            bandwidth: Some(8_000_000),
        };
        assert_eq!(shape.serialisation(1_000_000), Duration::from_secs(1));
        assert_eq!(LinkShape::NATIVE.serialisation(1 << 30), Duration::ZERO);
    }
}
