//! The public shape of every vector a Node sends: length, scale, declared bound and packing,
//! all derived from the study's public parameters ([`SecureConfig`]) and nothing a Node says.
//!
//! The aggregator sizes its masks from the bounds of the sums it forms, and a sum's bound is the
//! sum of its terms' declared bounds. Were those taken off the wire, one Node declaring a tiny
//! bound would narrow the mask on the whole sum and show the key holder the other Nodes'
//! aggregate. So the Node encrypts with exactly these shapes and the aggregator refuses any
//! vector whose shape differs, before it adds it to anything.

use num_bigint::BigUint;
use num_traits::One;

use super::gc::SIGMA;
use super::{SecureConfig, SecureError, ShapeMismatch, bits_for, pow2};
use crate::paillier::{EncryptedMatrix, EncryptedVector, Packing, PaillierError, PublicKey};
use crate::transport::Role;

/// Public bound (as a power of two) on a Node's feature sums divided by N (standardisation,
/// and the mean squares of an unstandardised study's scaling): raw values up to about 1.8e19
/// in magnitude, whose squares reach 2^128.
pub const MOMENT_BITS: u32 = 128;
/// Fractional bits of the standardisation moments: enough that a Node's moments (f64 values
/// of magnitude at least 2^-7) are encoded without rounding, so that the pooled means and
/// standard deviations are the plaintext ones to f64 rounding (at 40 bits their rounding put
/// 5e-11 relative errors into the first step of a 90-coefficient study).
pub const MOMENT_SCALE: u32 = 60;

/// What a vector must look like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Number of values.
    pub len: usize,
    /// Fractional bits.
    pub scale: u32,
    /// The declared bound on every value's magnitude.
    pub bound: BigUint,
    /// The slot layout.
    pub packing: Packing,
}

impl Shape {
    /// Refuses `v` unless its length, scale, declared bound and packing are this shape's;
    /// `node` (1-based) and `what` name its sender and the vector in the error.
    pub fn check(
        &self,
        v: &EncryptedVector,
        node: usize,
        what: &'static str,
    ) -> Result<(), SecureError> {
        self.check_from(v, Role::Node, Some(node), what)
    }

    /// [`Self::check`] for a vector another party than a Node sent (`node`: `None`).
    pub fn check_from(
        &self,
        v: &EncryptedVector,
        from: Role,
        node: Option<usize>,
        what: &'static str,
    ) -> Result<(), SecureError> {
        let mismatch = if v.len() != self.len {
            Some(ShapeMismatch::Length {
                got: v.len(),
                expected: self.len,
            })
        } else if v.scale() != self.scale {
            Some(ShapeMismatch::Scale {
                got: v.scale(),
                expected: self.scale,
            })
        } else if v.slot_bound() != &self.bound {
            Some(ShapeMismatch::Bound {
                got: v.slot_bound().bits(),
                expected: self.bound.bits(),
            })
        } else if v.packing() != self.packing {
            Some(ShapeMismatch::Slots {
                got: v.packing().slot_bits(),
                expected: self.packing.slot_bits(),
            })
        } else {
            None
        };
        match mismatch {
            Some(mismatch) => Err(SecureError::Shape {
                from,
                node,
                what,
                mismatch,
            }),
            None => Ok(()),
        }
    }
}

impl SecureConfig {
    /// `Enc(n_i)`: one unpacked integer below the largest row count.
    pub fn count_shape(&self, key: &PublicKey) -> Shape {
        Shape {
            len: 1,
            scale: 0,
            bound: BigUint::from(self.max_rows),
            packing: Packing::unpacked(key),
        }
    }

    /// Bound on a Node's value at `scale` fractional bits: `2^(value_bits + scale)`.
    pub fn value_bound(&self, scale: u32) -> BigUint {
        pow2(self.value_bits + scale)
    }

    /// `Enc(B_i/N)` (and Newton's `Enc(X_i^T A X_i / N)`): the lower triangle, packed.
    pub fn bound_shape(&self, key: &PublicKey) -> Result<Shape, PaillierError> {
        let d = self.dimension;
        Ok(Shape {
            len: d * (d + 1) / 2,
            scale: self.frac,
            bound: self.value_bound(self.frac),
            packing: self.bound_packing(key)?,
        })
    }

    /// `Enc(g_i/N)`: unpacked, so that the Center can take dot products with public vectors
    /// under encryption; or, with [`SecureConfig::packed_gradient`], packed in the bound's
    /// slots (room for the sum over the Nodes, the Center's terms and a mask sigma bits wider),
    /// so the sum can go to the key holder masked as it is.
    pub fn gradient_shape(&self, key: &PublicKey) -> Result<Shape, PaillierError> {
        Ok(Shape {
            len: self.dimension,
            scale: self.frac,
            bound: self.value_bound(self.frac),
            packing: if self.packed_gradient {
                self.bound_packing(key)?
            } else {
                Packing::unpacked(key)
            },
        })
    }

    /// `Enc(c_i/N)`: a Node's [`crate::objective::PartyData::constant_sums`], unpacked.
    pub fn constants_shape(&self, key: &PublicKey) -> Shape {
        Shape {
            len: crate::objective::CONSTANT_SUMS,
            scale: self.frac,
            bound: self.value_bound(self.frac),
            packing: Packing::unpacked(key),
        }
    }

    /// `Enc(e_i/N)`: a Node's [`crate::evaluation_sums::sums`] over its held-out rows, unpacked.
    pub fn evaluation_shape(&self, key: &PublicKey) -> Shape {
        Shape {
            len: crate::evaluation_sums::SUMS,
            scale: self.frac,
            bound: self.value_bound(self.frac),
            packing: Packing::unpacked(key),
        }
    }

    /// `Enc(l_i/N)`: one value at twice the fractional bits.
    pub fn objective_shape(&self, key: &PublicKey) -> Shape {
        let scale = 2 * self.frac;
        Shape {
            len: 1,
            scale,
            bound: self.value_bound(scale),
            packing: Packing::unpacked(key),
        }
    }

    /// The standardisation moments of `features` columns, packed with room for the sum over
    /// the Nodes and a mask sigma bits wider.
    pub fn moments_shape(&self, key: &PublicKey, features: usize) -> Result<Shape, PaillierError> {
        let bound = BigUint::one() << (MOMENT_BITS + MOMENT_SCALE);
        let sum_bits = MOMENT_BITS + MOMENT_SCALE + bits_for(self.parties as u64);
        Ok(Shape {
            len: features,
            scale: MOMENT_SCALE,
            bound,
            packing: Packing::new(key, sum_bits + SIGMA + 2)?,
        })
    }

    /// PrivLogit-Local's `Enc((B/N)^-1 g_i/N)` for the inverse the aggregator handed out:
    /// the largest column bound times `d` gradient entries at their public bound.
    pub fn local_step_shape(&self, inverse: &EncryptedMatrix) -> Result<Shape, SecureError> {
        let first = inverse
            .columns()
            .first()
            .ok_or_else(|| SecureError::inconsistent("an empty inverse"))?;
        let largest = inverse
            .columns()
            .iter()
            .map(EncryptedVector::slot_bound)
            .max()
            .expect("non-empty");
        let frac = self.frac;
        Ok(Shape {
            len: inverse.rows(),
            scale: first.scale() + frac,
            bound: largest * BigUint::from(self.dimension) * self.value_bound(frac),
            packing: first.packing(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paillier::{DjnNoise, Fixed, KeyPair};
    use crate::secure::DEFAULT_FORMAT;

    fn key() -> &'static crate::paillier::PublicKey {
        use std::sync::OnceLock;
        static KEY: OnceLock<KeyPair> = OnceLock::new();
        KEY.get_or_init(|| KeyPair::generate_insecure_for_tests(1024, &mut rand::rng()))
            .secret
            .public_key()
    }

    /// A Node that declares a bound below the study's (which would narrow the aggregator's
    /// mask on the sum and show the key holder the other Nodes' aggregate) is refused, as are
    /// another scale, length or packing; the study's own shape passes.
    #[test]
    fn only_the_public_shape_is_accepted() {
        let key = key();
        let config = SecureConfig::new(1, 3, 4, DEFAULT_FORMAT);
        let shape = config.gradient_shape(key).expect("packing");
        let noise = DjnNoise::new(key, &mut rand::rng());
        let values: Vec<Fixed> = (0..4).map(Fixed::integer).collect();
        let at = |scale: u32| -> Vec<Fixed> {
            values
                .iter()
                .map(|f| Fixed {
                    value: f.value.clone(),
                    scale,
                })
                .collect()
        };
        let frac = DEFAULT_FORMAT.frac();
        let good = EncryptedVector::encrypt(key, &at(frac), &shape.bound, shape.packing, &noise)
            .expect("encrypt");
        shape.check(&good, 1, "gradient").expect("the public shape");
        let tiny = BigUint::from(8u8);
        let narrow = EncryptedVector::encrypt(key, &at(frac), &tiny, shape.packing, &noise)
            .expect("encrypt");
        let e = shape.check(&narrow, 2, "gradient").expect_err("narrow");
        assert!(
            e.to_string()
                .contains("Node 2's gradient has a declared bound of 4 bits"),
            "{e}"
        );
        let other_scale =
            EncryptedVector::encrypt(key, &at(frac - 1), &shape.bound, shape.packing, &noise)
                .expect("encrypt");
        assert!(shape.check(&other_scale, 1, "x").is_err());
        let short =
            EncryptedVector::encrypt(key, &at(frac)[..3], &shape.bound, shape.packing, &noise)
                .expect("encrypt");
        assert!(shape.check(&short, 1, "x").is_err());
        let packed = Packing::new(key, 200).expect("packing");
        let repacked = EncryptedVector::encrypt(key, &at(frac), &shape.bound, packed, &noise)
            .expect("encrypt");
        assert!(shape.check(&repacked, 1, "x").is_err());
    }
}
