//! Signed fixed-point plaintexts and encrypted numbers that know how large they can get.
//!
//! A real `x` at scale `s` is the integer `round(x 2^s)` (ties away from zero); `s` counts
//! fractional bits, as in the garbled circuits' format (docs/src/how-it-computes.md, "Fixed point"). A
//! signed integer `v` with `|v| <= floor(n/2)` is stored as `v mod n`, so plaintexts are the
//! centred range `(-n/2, n/2]` and decode back unambiguously.
//!
//! An [`EncryptedNumber`] carries its scale and a public bound on the magnitude of its value.
//! Every operation computes the bound of its result and refuses, with
//! [`PaillierError::Overflow`], any result that could leave the centred range: a refused
//! operation instead of a ciphertext that decodes to garbage. The bound is public metadata, so
//! it must come from public facts (the declared range of the inputs), never from the secret
//! value itself; [`EncryptedNumber::encrypt`] takes it as an argument.
//!
//! python-paillier (`phe`) encodes `x` as `round(x 16^-e)` with a base-16 exponent `e`; that is
//! scale `-4e` here ([`EncryptedNumber::from_phe`], [`EncryptedNumber::phe_exponent`]).

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::{Signed, ToPrimitive, Zero};
use rand::CryptoRng;

use super::ciphertext::Ciphertext;
use super::keys::{PublicKey, SecretKey};
use super::noise_source::NoiseSource;
use super::paillier_error::{PaillierError, Unencodable};

/// Largest supported scale (fractional bits).
pub const MAX_SCALE: u32 = 960;

/// A signed fixed-point number `value * 2^-scale`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixed {
    /// The scaled integer.
    pub value: BigInt,
    /// Fractional bits.
    pub scale: u32,
}

impl Fixed {
    /// `x` rounded to `scale` fractional bits (ties away from zero).
    pub fn from_f64(x: f64, scale: u32) -> Result<Self, PaillierError> {
        if !x.is_finite() {
            return Err(PaillierError::Encoding(Unencodable::NonFinite(x)));
        }
        check_scale(scale)?;
        let (mantissa, exponent) = decompose(x);
        let shift = i64::from(exponent) + i64::from(scale);
        let value = if shift >= 0 {
            mantissa << shift as u64
        } else {
            round_shift(&mantissa, (-shift) as u64)
        };
        Ok(Self { value, scale })
    }

    /// `x` exactly, at the smallest scale that represents it (like phe's float encoding).
    pub fn from_f64_exact(x: f64) -> Result<Self, PaillierError> {
        if !x.is_finite() {
            return Err(PaillierError::Encoding(Unencodable::NonFinite(x)));
        }
        let (_, exponent) = decompose(x);
        let scale = u32::try_from(-i64::from(exponent).min(0)).unwrap_or(u32::MAX);
        Self::from_f64(x, scale)
    }

    /// An integer at scale 0.
    pub fn integer(value: impl Into<BigInt>) -> Self {
        Self {
            value: value.into(),
            scale: 0,
        }
    }

    /// The nearest f64 (one rounding, except for results in the subnormal range).
    pub fn to_f64(&self) -> f64 {
        // Keep the top 64 bits with a sticky bit for the rest, so the conversion to f64 rounds
        // as the exact value would; fold the dropped bits into the exponent.
        let magnitude = self.value.magnitude();
        let shift = magnitude.bits().saturating_sub(64);
        let mut top = (magnitude >> shift).to_u64().unwrap_or(u64::MAX);
        if shift > 0 && magnitude.trailing_zeros().unwrap_or(0) < shift {
            top |= 1;
        }
        let mut out = top as f64;
        let mut exponent = shift as i64 - i64::from(self.scale);
        while exponent != 0 {
            let step = exponent.clamp(-1000, 1000);
            out *= (step as f64).exp2();
            exponent -= step;
        }
        if self.value.is_negative() { -out } else { out }
    }

    /// The same number at a larger scale (exact).
    pub fn rescaled(&self, scale: u32) -> Result<Self, PaillierError> {
        check_scale(scale)?;
        if scale < self.scale {
            return Err(PaillierError::Encoding(Unencodable::Lower {
                from: self.scale,
                to: scale,
                homomorphic: false,
            }));
        }
        Ok(Self {
            value: &self.value << (scale - self.scale),
            scale,
        })
    }

    /// The bound `ceil(max_abs 2^scale)` for values of magnitude at most `max_abs`.
    pub fn bound_for(max_abs: f64, scale: u32) -> Result<BigUint, PaillierError> {
        if !(max_abs.is_finite() && max_abs >= 0.0) {
            return Err(PaillierError::Encoding(Unencodable::Bound(max_abs)));
        }
        let fixed = Self::from_f64(max_abs, scale)?;
        // Rounding may have gone down by at most one half: add one to stay an upper bound.
        Ok(fixed.value.magnitude() + 1u32)
    }
}

/// The scale of a product, refused beyond [`MAX_SCALE`].
pub(crate) fn add_scales(a: u32, b: u32) -> Result<u32, PaillierError> {
    let scale = a
        .checked_add(b)
        .ok_or(PaillierError::Encoding(Unencodable::ScaleSum(a, b)))?;
    check_scale(scale)?;
    Ok(scale)
}

pub(crate) fn check_scale(scale: u32) -> Result<(), PaillierError> {
    if scale > MAX_SCALE {
        return Err(PaillierError::Encoding(Unencodable::Scale {
            scale,
            max: MAX_SCALE,
        }));
    }
    Ok(())
}

/// `x = mantissa 2^exponent` with an integer mantissa (odd unless x is 0).
fn decompose(x: f64) -> (BigInt, i32) {
    if x == 0.0 {
        return (BigInt::zero(), 0);
    }
    let bits = x.to_bits();
    let sign = if bits >> 63 == 1 { -1i64 } else { 1 };
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    let (mut mantissa, mut exponent) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1u64 << 52), biased - 1075)
    };
    let zeros = mantissa.trailing_zeros();
    mantissa >>= zeros;
    exponent += zeros as i32;
    (BigInt::from(sign) * BigInt::from(mantissa), exponent)
}

/// `round(v / 2^shift)`, ties away from zero.
fn round_shift(v: &BigInt, shift: u64) -> BigInt {
    let magnitude = v.magnitude();
    let rounded = (magnitude + (BigUint::from(1u8) << (shift - 1))) >> shift;
    BigInt::from_biguint(v.sign(), rounded)
}

impl PublicKey {
    /// `v mod n` for a signed `v` with `|v| <= floor(n/2)`.
    pub fn encode_signed(&self, v: &BigInt) -> Result<BigUint, PaillierError> {
        if v.magnitude() > self.half_n() {
            return Err(PaillierError::Overflow {
                needed_bits: v.magnitude().bits(),
                available_bits: self.half_n().bits(),
            });
        }
        Ok(match v.sign() {
            Sign::Minus => self.n() - v.magnitude(),
            _ => v.magnitude().clone(),
        })
    }

    /// The signed value of a plaintext in `[0, n)`: above `floor(n/2)` means negative.
    pub fn decode_signed(&self, m: &BigUint) -> BigInt {
        if m > self.half_n() {
            -BigInt::from(self.n() - m)
        } else {
            BigInt::from(m.clone())
        }
    }
}

/// An encrypted fixed-point number with its scale and a public bound on `|value|`.
#[derive(Debug, Clone, PartialEq)]
pub struct EncryptedNumber {
    ciphertext: Ciphertext,
    scale: u32,
    bound: BigUint,
}

impl EncryptedNumber {
    /// Encrypts `x`, declaring that values in its place never exceed `bound` in magnitude
    /// (refused if `x` does, or if the bound itself does not fit).
    pub fn encrypt<S, R>(
        key: &PublicKey,
        x: &Fixed,
        bound: &BigUint,
        source: &S,
        rng: &mut R,
    ) -> Result<Self, PaillierError>
    where
        S: NoiseSource,
        R: CryptoRng + ?Sized,
    {
        fits(key, bound)?;
        if x.value.magnitude() > bound {
            return Err(PaillierError::Encoding(Unencodable::AboveBound));
        }
        let m = key.encode_signed(&x.value)?;
        Ok(Self {
            ciphertext: key.encrypt(&m, source, rng),
            scale: x.scale,
            bound: bound.clone(),
        })
    }

    /// Wraps an existing ciphertext with its scale and bound (checked to fit).
    pub fn from_parts(
        key: &PublicKey,
        ciphertext: Ciphertext,
        scale: u32,
        bound: BigUint,
    ) -> Result<Self, PaillierError> {
        fits(key, &bound)?;
        check_scale(scale)?;
        Ok(Self {
            ciphertext,
            scale,
            bound,
        })
    }

    /// A ciphertext made by python-paillier with base-16 exponent `exponent <= 0`. phe tracks no
    /// bound, so the bound is the whole centred range.
    pub fn from_phe(
        key: &PublicKey,
        ciphertext: &BigUint,
        exponent: i32,
    ) -> Result<Self, PaillierError> {
        if exponent > 0 {
            return Err(PaillierError::Encoding(Unencodable::PheExponent {
                exponent: exponent.into(),
            }));
        }
        let scale = u32::try_from(-4 * i64::from(exponent)).map_err(|_| {
            PaillierError::Encoding(Unencodable::PheExponent {
                exponent: exponent.into(),
            })
        })?;
        Self::from_parts(
            key,
            Ciphertext::from_value(key, ciphertext)?,
            scale,
            key.half_n().clone(),
        )
    }

    /// The same ciphertext with a tighter public bound that the caller vouches for (values from
    /// outside, like phe's, arrive with the whole range as their bound, which leaves no room
    /// for arithmetic). If the claim is false, later results may wrap.
    pub fn assume_bound(&self, key: &PublicKey, bound: BigUint) -> Result<Self, PaillierError> {
        fits(key, &bound)?;
        Ok(Self {
            bound,
            ..self.clone()
        })
    }

    /// The base-16 exponent phe would use, when the scale is a multiple of 4.
    pub fn phe_exponent(&self) -> Option<i32> {
        self.scale
            .is_multiple_of(4)
            .then(|| -((self.scale / 4) as i32))
    }

    /// The ciphertext.
    pub fn ciphertext(&self) -> &Ciphertext {
        &self.ciphertext
    }

    /// Fractional bits.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    /// The public bound on `|value|`.
    pub fn bound(&self) -> &BigUint {
        &self.bound
    }

    /// Decrypts to the fixed-point value.
    pub fn decrypt(&self, secret: &SecretKey) -> Result<Fixed, PaillierError> {
        let key = secret.public_key();
        Ok(Fixed {
            value: key.decode_signed(&secret.decrypt(&self.ciphertext)?),
            scale: self.scale,
        })
    }

    /// Decrypts to the nearest f64.
    pub fn decrypt_f64(&self, secret: &SecretKey) -> Result<f64, PaillierError> {
        Ok(self.decrypt(secret)?.to_f64())
    }

    /// The same number at a larger scale: multiplied by `2^(scale - self.scale)`.
    pub fn rescaled(&self, key: &PublicKey, scale: u32) -> Result<Self, PaillierError> {
        check_scale(scale)?;
        if scale < self.scale {
            return Err(PaillierError::Encoding(Unencodable::Lower {
                from: self.scale,
                to: scale,
                homomorphic: true,
            }));
        }
        if scale == self.scale {
            return Ok(self.clone());
        }
        let factor = BigInt::from(1u8) << (scale - self.scale);
        let bound = &self.bound << (scale - self.scale);
        fits(key, &bound)?;
        Ok(Self {
            ciphertext: key.mul_scalar(&self.ciphertext, &factor),
            scale,
            bound,
        })
    }

    /// `self + other`, at the larger of the two scales.
    pub fn add(&self, key: &PublicKey, other: &Self) -> Result<Self, PaillierError> {
        let scale = self.scale.max(other.scale);
        let (a, b) = (self.rescaled(key, scale)?, other.rescaled(key, scale)?);
        let bound = &a.bound + &b.bound;
        fits(key, &bound)?;
        Ok(Self {
            ciphertext: key.add(&a.ciphertext, &b.ciphertext),
            scale,
            bound,
        })
    }

    /// `-self`.
    pub fn neg(&self, key: &PublicKey) -> Self {
        Self {
            ciphertext: key.negate(&self.ciphertext),
            scale: self.scale,
            bound: self.bound.clone(),
        }
    }

    /// `self - other`.
    pub fn sub(&self, key: &PublicKey, other: &Self) -> Result<Self, PaillierError> {
        self.add(key, &other.neg(key))
    }

    /// `self + x` for a plaintext `x`, at the larger scale.
    pub fn add_plain(&self, key: &PublicKey, x: &Fixed) -> Result<Self, PaillierError> {
        let scale = self.scale.max(x.scale);
        let a = self.rescaled(key, scale)?;
        let x = x.rescaled(scale)?;
        let bound = &a.bound + x.value.magnitude();
        fits(key, &bound)?;
        Ok(Self {
            ciphertext: key.add_plain(&a.ciphertext, &key.encode_signed(&x.value)?),
            scale,
            bound,
        })
    }

    /// `self * k` for a plaintext `k`: scales add, bounds multiply.
    pub fn mul_plain(&self, key: &PublicKey, k: &Fixed) -> Result<Self, PaillierError> {
        let scale = add_scales(self.scale, k.scale)?;
        key.encode_signed(&k.value)?;
        let bound = &self.bound * k.value.magnitude();
        fits(key, &bound)?;
        Ok(Self {
            ciphertext: key.mul_scalar(&self.ciphertext, &k.value),
            scale,
            bound,
        })
    }

    /// The same value under fresh randomness (before it leaves a party).
    pub fn rerandomized<S, R>(&self, key: &PublicKey, source: &S, rng: &mut R) -> Self
    where
        S: NoiseSource,
        R: CryptoRng + ?Sized,
    {
        Self {
            ciphertext: key.rerandomize(&self.ciphertext, source, rng),
            scale: self.scale,
            bound: self.bound.clone(),
        }
    }
}

/// Refuses a bound whose values could leave the centred range `[-floor(n/2), floor(n/2)]`.
pub(crate) fn fits(key: &PublicKey, bound: &BigUint) -> Result<(), PaillierError> {
    if bound > key.half_n() {
        return Err(PaillierError::Overflow {
            needed_bits: bound.bits(),
            available_bits: key.half_n().bits(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_rounds() {
        let f = Fixed::from_f64(-1.5, 4).expect("finite");
        assert_eq!(f.value, BigInt::from(-24));
        assert_eq!(f.to_f64(), -1.5);
        // 0.1 at 8 bits: 25.6 rounds to 26; at the exact scale it is 0.1 exactly.
        assert_eq!(
            Fixed::from_f64(0.1, 8).expect("finite").value,
            BigInt::from(26)
        );
        let exact = Fixed::from_f64_exact(0.1).expect("finite");
        assert_eq!(exact.scale, 55);
        assert_eq!(exact.to_f64(), 0.1);
        // Ties away from zero: 2.5 at scale 0 is 3, -2.5 is -3.
        assert_eq!(
            Fixed::from_f64(2.5, 0).expect("finite").value,
            BigInt::from(3)
        );
        assert_eq!(
            Fixed::from_f64(-2.5, 0).expect("finite").value,
            BigInt::from(-3)
        );
        assert_eq!(Fixed::from_f64(1e300, 10).expect("finite").to_f64(), 1e300);
        assert_eq!(
            Fixed::from_f64(f64::MIN_POSITIVE, 1100)
                .map(|f| f.scale)
                .ok(),
            None
        );
        assert!(Fixed::from_f64(f64::NAN, 8).is_err());
        assert_eq!(
            Fixed::from_f64(3.25, 2)
                .expect("finite")
                .rescaled(6)
                .expect("up")
                .value,
            BigInt::from(208)
        );
        assert!(
            Fixed::from_f64(3.25, 6)
                .expect("finite")
                .rescaled(2)
                .is_err()
        );
        assert_eq!(
            Fixed::bound_for(1.5, 2).expect("finite"),
            BigUint::from(7u8)
        );
    }
}
