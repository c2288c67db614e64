//! Two's-complement fixed-point words (docs/src/how-it-computes.md, "Fixed point").
//!
//! A real `x` is stored as the integer `round(x * 2^frac)` in a `width`-bit two's-complement
//! word. The default format is 64 bits with 32 fractional bits. Rounding is to nearest, ties
//! away from zero (`f64::round`), so encoding a representable-range value errs by at most half a
//! unit in the last place: `|decode(encode(x)) - x| <= 2^-(frac + 1)` (plus the f64 rounding of
//! `x * 2^frac` itself, which is exact for `|x| < 2^(52 - frac)`).

use thiserror::Error;

/// Errors from building a format or encoding a value.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum FixedError {
    /// The word width or fractional-bit count is outside what this format supports.
    #[error(
        "invalid fixed-point format: width {width} with {frac} fractional bits (need 2 <= width <= 64 and frac < width)"
    )]
    InvalidFormat {
        /// Requested word width in bits.
        width: u32,
        /// Requested number of fractional bits.
        frac: u32,
    },
    /// The value is NaN or infinite.
    #[error("cannot encode non-finite value {0} as fixed point")]
    NonFinite(f64),
    /// The value does not fit in the word.
    #[error("value {value} is outside the fixed-point range [{min}, {max}]")]
    OutOfRange {
        /// The value that was to be encoded.
        value: f64,
        /// Smallest representable value.
        min: f64,
        /// Largest representable value.
        max: f64,
    },
}

/// A fixed-point number format: `width` bits in total, `frac` of them after the binary point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FixedFormat {
    width: u32,
    frac: u32,
}

impl Default for FixedFormat {
    /// 64-bit words with 32 fractional bits, the format the design uses unless configured.
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl FixedFormat {
    /// A format of `width` bits with `frac` fractional bits; `2 <= width <= 64`, `frac < width`.
    pub const fn new(width: u32, frac: u32) -> Result<Self, FixedError> {
        if width < 2 || width > 64 || frac >= width {
            return Err(FixedError::InvalidFormat { width, frac });
        }
        Ok(Self { width, frac })
    }

    /// The default format, 64 bits with 32 fractional bits, usable in constants.
    pub const DEFAULT: Self = Self {
        width: 64,
        frac: 32,
    };

    /// Total word width in bits.
    pub const fn width(&self) -> u32 {
        self.width
    }

    /// Number of fractional bits.
    pub const fn frac(&self) -> u32 {
        self.frac
    }

    /// The value of one unit in the last place, `2^-frac`.
    pub fn resolution(&self) -> f64 {
        (-(self.frac as f64)).exp2()
    }

    /// Smallest representable integer, `-2^(width-1)`.
    pub fn min_raw(&self) -> i64 {
        i64::MIN >> (64 - self.width)
    }

    /// Largest representable integer, `2^(width-1) - 1`.
    pub fn max_raw(&self) -> i64 {
        i64::MAX >> (64 - self.width)
    }

    /// Smallest representable real.
    pub fn min_value(&self) -> f64 {
        self.decode(self.min_raw())
    }

    /// Largest representable real.
    pub fn max_value(&self) -> f64 {
        self.decode(self.max_raw())
    }

    /// Encodes `x` as the signed integer `round(x * 2^frac)`, refusing values that do not fit.
    pub fn encode(&self, x: f64) -> Result<i64, FixedError> {
        if !x.is_finite() {
            return Err(FixedError::NonFinite(x));
        }
        let scaled = (x * (self.frac as f64).exp2()).round();
        // i64 -> f64 is exact for these powers of two, so the comparisons are exact.
        if scaled < self.min_raw() as f64 || scaled > self.max_raw() as f64 {
            return Err(FixedError::OutOfRange {
                value: x,
                min: self.min_value(),
                max: self.max_value(),
            });
        }
        Ok(scaled as i64)
    }

    /// Decodes the signed integer `raw` into the real `raw * 2^-frac`.
    pub fn decode(&self, raw: i64) -> f64 {
        raw as f64 * self.resolution()
    }

    /// The `width` low bits of `raw`: the word as it travels on circuit wires.
    pub fn to_word(&self, raw: i64) -> u64 {
        (raw as u64) & self.word_mask()
    }

    /// Sign-extends a `width`-bit word back to a signed integer; bits above `width` are ignored.
    pub fn from_word(&self, word: u64) -> i64 {
        let shift = 64 - self.width;
        ((word << shift) as i64) >> shift
    }

    fn word_mask(&self) -> u64 {
        u64::MAX >> (64 - self.width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_is_64_32() {
        let f = FixedFormat::default();
        assert_eq!((f.width(), f.frac()), (64, 32));
        assert_eq!(f.encode(1.5), Ok(3 << 31));
        assert_eq!(f.encode(-0.25), Ok(-(1 << 30)));
        assert_eq!(f.max_raw(), i64::MAX);
        assert_eq!(f.min_raw(), i64::MIN);
    }

    #[test]
    fn small_format_words() {
        let f = FixedFormat::new(8, 4).expect("valid format");
        assert_eq!(f.encode(-1.0), Ok(-16));
        assert_eq!(f.to_word(-16), 0xF0);
        assert_eq!(f.from_word(0xF0), -16);
        assert_eq!(f.max_value(), 127.0 / 16.0);
        assert_eq!(f.min_value(), -8.0);
        assert!(matches!(f.encode(8.0), Err(FixedError::OutOfRange { .. })));
        assert!(matches!(f.encode(f64::NAN), Err(FixedError::NonFinite(_))));
    }

    #[test]
    fn invalid_formats_are_refused() {
        assert!(FixedFormat::new(65, 32).is_err());
        assert!(FixedFormat::new(1, 0).is_err());
        assert!(FixedFormat::new(16, 16).is_err());
    }

    proptest! {
        /// Round-trip error is at most half a unit in the last place.
        #[test]
        fn round_trip_within_half_ulp(x in -1.0e6f64..1.0e6, frac in 8u32..40) {
            let f = FixedFormat::new(64, frac).expect("valid format");
            let back = f.decode(f.encode(x).expect("in range"));
            prop_assert!((back - x).abs() <= f.resolution() / 2.0);
        }

        /// Words round-trip through the wire representation for every width.
        #[test]
        fn word_round_trip(raw in any::<i64>(), width in 2u32..=64) {
            let f = FixedFormat::new(width, 0).expect("valid format");
            let clamped = raw.clamp(f.min_raw(), f.max_raw());
            prop_assert_eq!(f.from_word(f.to_word(clamped)), clamped);
        }
    }
}
