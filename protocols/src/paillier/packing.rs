//! Several signed fixed-width slots in one plaintext.
//!
//! A packing of width `w` puts values `v_0, v_1, ...` into the single integer
//! `P = sum_i v_i 2^(w i)` and encrypts `P`. Because `P` is linear in the slots, adding packed
//! ciphertexts adds slot by slot, and raising one to a scalar `k` multiplies every slot by `k`
//! (the same scalar for all, which is what "encrypted column times plaintext gradient entry"
//! needs). Negative slots need no offset: unpacking reads balanced base-`2^w` digits, which is
//! unambiguous while every slot stays below `2^(w-1)` in magnitude.
//!
//! Capacity: `floor((bits(n) - 2) / w)` slots, so that `|P| < 2^(k w - 1) <= n / 4` stays in
//! the centred range. For values bounded by `B` that will be summed `K` times, choose
//! `w = bits(B K) + 1` ([`Packing::for_sums`]); for example 64-bit fixed-point products (128
//! bits) summed over 200 terms need 137-bit slots, 14 to a 2048-bit plaintext.

use num_bigint::{BigInt, BigUint};
use num_integer::Integer;
use num_traits::Zero;

use super::keys::PublicKey;
use super::paillier_error::{PaillierError, Unencodable};

/// Slot layout of packed plaintexts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packing {
    slot_bits: u32,
    slots: usize,
}

impl Packing {
    /// Slots of `slot_bits` bits (at least 2), as many as fit a plaintext of `key`.
    pub fn new(key: &PublicKey, slot_bits: u32) -> Result<Self, PaillierError> {
        let usable = key.bits().saturating_sub(2);
        if slot_bits < 2 || u64::from(slot_bits) > usable {
            return Err(PaillierError::Encoding(Unencodable::SlotWidth {
                slot_bits,
                modulus_bits: key.bits(),
            }));
        }
        Ok(Self {
            slot_bits,
            slots: (usable / u64::from(slot_bits)) as usize,
        })
    }

    /// One value per plaintext (no packing): the slot is the whole centred range.
    pub fn unpacked(key: &PublicKey) -> Self {
        Self {
            slot_bits: key.bits() as u32,
            slots: 1,
        }
    }

    /// Slots wide enough for sums of `terms` values each bounded by `bound`.
    pub fn for_sums(key: &PublicKey, bound: &BigUint, terms: usize) -> Result<Self, PaillierError> {
        let total = bound * BigUint::from(terms.max(1));
        Self::new(key, total.bits() as u32 + 1)
    }

    /// Bits per slot.
    pub fn slot_bits(&self) -> u32 {
        self.slot_bits
    }

    /// Slots per plaintext.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Plaintexts needed for `len` values.
    pub fn plaintexts_for(&self, len: usize) -> usize {
        len.div_ceil(self.slots)
    }

    /// The largest magnitude a slot may hold: `2^(w-1) - 1` (the key's `floor(n/2)` when
    /// unpacked).
    pub fn max_slot(&self, key: &PublicKey) -> BigUint {
        if self.slots == 1 && u64::from(self.slot_bits) == key.bits() {
            key.half_n().clone()
        } else {
            (BigUint::from(1u8) << (self.slot_bits - 1)) - 1u32
        }
    }

    /// Packs up to [`Self::slots`] values, each within [`Self::max_slot`].
    pub fn pack(&self, key: &PublicKey, values: &[BigInt]) -> Result<BigInt, PaillierError> {
        if values.len() > self.slots {
            return Err(PaillierError::Encoding(Unencodable::Slots {
                values: values.len(),
                slots: self.slots,
            }));
        }
        let max = self.max_slot(key);
        let mut packed = BigInt::zero();
        for v in values.iter().rev() {
            if v.magnitude() > &max {
                return Err(PaillierError::Overflow {
                    needed_bits: v.magnitude().bits(),
                    available_bits: max.bits(),
                });
            }
            packed = (packed << self.slot_bits) + v;
        }
        Ok(packed)
    }

    /// The first `count` slots of a packed value, as balanced digits.
    pub fn unpack(&self, packed: &BigInt, count: usize) -> Vec<BigInt> {
        if self.slots == 1 {
            return vec![packed.clone()];
        }
        let base = BigInt::from(1u8) << self.slot_bits;
        let half = BigInt::from(1u8) << (self.slot_bits - 1);
        let mut rest = packed.clone();
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let mut digit = rest.mod_floor(&base);
            if digit >= half {
                digit -= &base;
            }
            rest = (rest - &digit) >> self.slot_bits;
            out.push(digit);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paillier::keys::SecretKey;

    fn key() -> PublicKey {
        let p = BigUint::from(23194683100664294251u128);
        let q = BigUint::from(11084480205242485763u128);
        SecretKey::from_primes_insecure_for_tests(&p, &q)
            .expect("primes")
            .public_key()
            .clone()
    }

    #[test]
    fn negative_slots_round_trip() {
        let key = key();
        let packing = Packing::new(&key, 20).expect("fits");
        assert_eq!(packing.slots(), 6);
        let values: Vec<BigInt> = [-5, 524287, -524287, 0, -1, 7]
            .iter()
            .map(|&v| BigInt::from(v))
            .collect();
        let packed = packing.pack(&key, &values).expect("in range");
        assert_eq!(packing.unpack(&packed, 6), values);
        assert!(packing.pack(&key, &[BigInt::from(524288)]).is_err());
        assert!(packing.pack(&key, &vec![BigInt::from(1); 7]).is_err());
    }

    #[test]
    fn sums_and_scalar_products_act_slotwise() {
        let key = key();
        let packing = Packing::for_sums(&key, &BigUint::from(1000u32), 10).expect("fits");
        let a: Vec<BigInt> = [-1000, 3, 999].iter().map(|&v| BigInt::from(v)).collect();
        let b: Vec<BigInt> = [-1000, -400, 1].iter().map(|&v| BigInt::from(v)).collect();
        let pa = packing.pack(&key, &a).expect("in range");
        let pb = packing.pack(&key, &b).expect("in range");
        let sum = packing.unpack(&(&pa * 3 + &pb * -7), 3);
        let expected: Vec<BigInt> = a.iter().zip(&b).map(|(x, y)| x * 3 + y * -7).collect();
        assert_eq!(sum, expected);
    }
}
