//! The garbled-circuit half of the Center: the key holder garbles, the aggregator evaluates, and
//! both run the same circuit functions below on their side of one session ([`GcParty`]).
//!
//! Values enter a circuit from Paillier by additive masking over the integers (docs/src/how-it-computes.md,
//! "Fixed point"): for a secret integer `x` with `|x| < 2^b` (a public bound), the aggregator
//! draws `r` uniform in `[0, 2^(b + sigma))` and has the key holder decrypt `v = x + r`; the
//! statistical distance between `v` and `r` alone is below `2^-sigma`. In the circuit the key
//! holder inputs `v`, the aggregator inputs `r` by oblivious transfer, and `x = v - r` is
//! computed in `b + sigma + 2` bits, of which the fixed-point word keeps the low `width`.
//!
//! Values leave a circuit towards Paillier the same way round: the aggregator inputs a mask
//! `s` in `[0, 2^(width + sigma))`, the key holder learns `z + s` only, encrypts it, and the
//! aggregator subtracts `s` under encryption.

use std::io;

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::{One, Zero};
use privlogit_circuits::backend::{Backend, Bit, Builder, Word};
use privlogit_circuits::channel::Channel;
use privlogit_circuits::fixed_format::FixedFormat;
use privlogit_circuits::fixed_gadgets::constant_fixed;
use privlogit_circuits::garble::{Evaluator, Garbler};
use privlogit_circuits::matrix_circuits::{Matrix, MatrixCircuit, RangeCheck};
use privlogit_circuits::session::{EvaluatorSession, GarblerSession};
use privlogit_circuits::word::{abs, add, lt_signed, sign_extend, sub, zero_extend};
use rand::CryptoRng;
use zeroize::Zeroizing;

use crate::paillier::{DjnNoise, EncryptedVector, PaillierError, PublicKey};

/// Statistical security of the masks, in bits: a value below `2^b` masked with a uniform draw
/// below `2^(b + SIGMA)` is within statistical distance `2^-SIGMA` of the mask alone.
pub const SIGMA: u32 = 40;

/// One side of the Center's garbled-circuit session. Inputs and reveals take `Some` on the side
/// that knows the value and `None` on the other.
pub trait GcParty {
    /// The circuit backend (garbler or evaluator).
    type Backend: Backend<Wire = u128>;
    /// The builder to run circuit functions on.
    fn builder(&mut self) -> &mut Builder<Self::Backend>;
    /// An input the key holder knows.
    fn keyholder_input(&mut self, bits: Option<&[bool]>, width: usize) -> io::Result<Word<u128>>;
    /// An input the aggregator knows.
    fn aggregator_input(&mut self, bits: Option<&[bool]>, width: usize) -> io::Result<Word<u128>>;
    /// Reveals `word` to the aggregator (which gets `Some`).
    fn reveal_to_aggregator(&mut self, word: &[Bit<u128>]) -> io::Result<Option<Vec<bool>>>;
    /// Reveals `word` to the key holder (which gets `Some`).
    fn reveal_to_keyholder(&mut self, word: &[Bit<u128>]) -> io::Result<Option<Vec<bool>>>;
    /// AND gates so far.
    fn and_gates(&self) -> u64;
}

/// The key holder's side: the garbler.
pub struct KeyholderGc<C: Channel, R: CryptoRng> {
    /// The session.
    pub session: GarblerSession<C>,
    /// Randomness for fresh labels.
    pub rng: R,
}

impl<C: Channel, R: CryptoRng> GcParty for KeyholderGc<C, R> {
    type Backend = Garbler<C>;

    fn builder(&mut self) -> &mut Builder<Garbler<C>> {
        self.session.builder()
    }

    fn keyholder_input(&mut self, bits: Option<&[bool]>, _: usize) -> io::Result<Word<u128>> {
        let bits = bits.expect("the key holder knows its input");
        self.session.garbler_input(bits, &mut self.rng)
    }

    fn aggregator_input(&mut self, _: Option<&[bool]>, width: usize) -> io::Result<Word<u128>> {
        self.session.evaluator_input(width)
    }

    fn reveal_to_aggregator(&mut self, word: &[Bit<u128>]) -> io::Result<Option<Vec<bool>>> {
        self.session.reveal_to_evaluator(word)?;
        Ok(None)
    }

    fn reveal_to_keyholder(&mut self, word: &[Bit<u128>]) -> io::Result<Option<Vec<bool>>> {
        self.session.reveal_to_garbler(word).map(Some)
    }

    fn and_gates(&self) -> u64 {
        self.session.and_gates()
    }
}

/// The aggregator's side: the evaluator, and the noise that re-randomises every ciphertext it
/// hands the key holder (so the randomness the key holder can extract from a ciphertext says
/// nothing about how it was formed).
pub struct AggregatorGc<C: Channel> {
    /// The session.
    pub session: EvaluatorSession<C>,
    /// Fresh encryption noise under the study's key.
    pub noise: DjnNoise,
}

impl<C: Channel> AggregatorGc<C> {
    /// The aggregator's side of `session` under `key`.
    pub fn new(session: EvaluatorSession<C>, key: &PublicKey) -> Self {
        Self::with_noise(session, DjnNoise::new(key, &mut rand::rng()))
    }

    /// The aggregator's side of `session`, encrypting with `noise` (shared with its other
    /// uses, so that the party builds one table).
    pub fn with_noise(session: EvaluatorSession<C>, noise: DjnNoise) -> Self {
        Self { session, noise }
    }
}

impl<C: Channel> GcParty for AggregatorGc<C> {
    type Backend = Evaluator<C>;

    fn builder(&mut self) -> &mut Builder<Evaluator<C>> {
        self.session.builder()
    }

    fn keyholder_input(&mut self, _: Option<&[bool]>, width: usize) -> io::Result<Word<u128>> {
        self.session.garbler_input(width)
    }

    fn aggregator_input(&mut self, bits: Option<&[bool]>, _: usize) -> io::Result<Word<u128>> {
        let bits = bits.expect("the aggregator knows its input");
        self.session.evaluator_input(bits)
    }

    fn reveal_to_aggregator(&mut self, word: &[Bit<u128>]) -> io::Result<Option<Vec<bool>>> {
        self.session.reveal_to_evaluator(word).map(Some)
    }

    fn reveal_to_keyholder(&mut self, word: &[Bit<u128>]) -> io::Result<Option<Vec<bool>>> {
        self.session.reveal_to_garbler(word)?;
        Ok(None)
    }

    fn and_gates(&self) -> u64 {
        self.session.and_gates()
    }
}

/// Width in bits of a masked value whose secret part is below `2^value_bits`.
pub fn masked_width(value_bits: u64) -> usize {
    value_bits as usize + SIGMA as usize + 2
}

/// A uniform mask in `[0, 2^bits)`.
/// The limbs it is drawn into are wiped; the returned integer is not (num-bigint cannot wipe
/// its digits: see docs/src/security-model.md).
pub fn random_mask<R: CryptoRng + ?Sized>(bits: u64, rng: &mut R) -> BigUint {
    let limbs: Zeroizing<Vec<u32>> = Zeroizing::new(
        (0..bits.div_ceil(64))
            .flat_map(|_| {
                let l = rng.next_u64();
                [l as u32, (l >> 32) as u32]
            })
            .collect(),
    );
    BigUint::from_slice(&limbs) % (BigUint::one() << bits)
}

/// Masks every value of `v` (public bound `2^bits`) with a fresh `r` in `[0, 2^(bits +
/// sigma))` before the key holder decrypts it, and re-randomises it with `noise`; returns the
/// masked vector, the masks and the width of a masked value.
pub fn mask(
    key: &PublicKey,
    v: &EncryptedVector,
    bits: u64,
    noise: &DjnNoise,
) -> Result<(EncryptedVector, Vec<BigUint>, usize), PaillierError> {
    let mut rng = rand::rng();
    let masks: Vec<BigUint> = (0..v.len())
        .map(|_| random_mask(bits + u64::from(SIGMA), &mut rng))
        .collect();
    let signed: Vec<BigInt> = masks
        .iter()
        .map(|m| BigInt::from_biguint(Sign::Plus, m.clone()))
        .collect();
    Ok((
        v.add_plain(key, &signed)?.rerandomized(key, noise),
        masks,
        masked_width(bits),
    ))
}

/// The low `width` bits of the two's-complement integer `x`, least significant first.
pub fn to_bits(x: &BigInt, width: usize) -> Vec<bool> {
    let modulus = BigInt::one() << width;
    let mut v = x % &modulus;
    if v.sign() == Sign::Minus {
        v += &modulus;
    }
    let (_, digits) = v.to_u64_digits();
    (0..width)
        .map(|i| digits.get(i / 64).is_some_and(|d| d >> (i % 64) & 1 == 1))
        .collect()
}

/// The two's-complement integer of `bits` (least significant first).
pub fn from_bits_signed(bits: &[bool]) -> BigInt {
    let mut v = BigInt::zero();
    for (i, &bit) in bits.iter().enumerate() {
        if bit {
            v += BigInt::one() << i;
        }
    }
    if bits.last() == Some(&true) {
        v -= BigInt::one() << bits.len();
    }
    v
}

/// Unmasks many values at once: the key holder passes the masked values `v_k`, the aggregator
/// the masks `r_k`; every value is `x_k = v_k - r_k` in `masked` bits, returned as its low
/// `width` bits, with a bit that is set when some `x_k` does not fit them (its bits from
/// `width - 1` up are not all equal: not the sign extension of the word kept), which a wrong
/// public bound or a wrong mask would cause: the word would otherwise wrap silently.
pub fn unmask<P: GcParty>(
    party: &mut P,
    count: usize,
    masked_values: Option<&[BigInt]>,
    masks: Option<&[BigUint]>,
    masked: usize,
    width: usize,
) -> io::Result<(Vec<Word<u128>>, Bit<u128>)> {
    let flatten = |values: Vec<BigInt>| -> Vec<bool> {
        values.iter().flat_map(|v| to_bits(v, masked)).collect()
    };
    let v_bits = masked_values.map(|v| flatten(v.to_vec()));
    let r_bits = masks.map(|r| {
        flatten(
            r.iter()
                .map(|m| BigInt::from_biguint(Sign::Plus, m.clone()))
                .collect(),
        )
    });
    // The aggregator's input first: it goes out with the request that started the circuit,
    // so the key holder's labels and tables come back in one round trip.
    let r = party.aggregator_input(r_bits.as_deref(), count * masked)?;
    let v = party.keyholder_input(v_bits.as_deref(), count * masked)?;
    let b = party.builder();
    let mut out_of_range = Bit::Const(false);
    let words = v
        .chunks(masked)
        .zip(r.chunks(masked))
        .map(|(v, r)| {
            let x = sub(b, v, r);
            let sign = &x[width - 1];
            for high in &x[width..] {
                let differs = b.xor(high, sign);
                out_of_range = b.or(&out_of_range, &differs);
            }
            x[..width].to_vec()
        })
        .collect();
    Ok((words, out_of_range))
}

/// Sends words to the key holder masked: the aggregator passes masks `s_k` below
/// `2^(width + SIGMA)`, the key holder receives `z_k + s_k` as signed integers.
pub fn reveal_masked<P: GcParty>(
    party: &mut P,
    words: &[Word<u128>],
    masks: Option<&[BigUint]>,
    width: usize,
) -> io::Result<Option<Vec<BigInt>>> {
    let out = width + SIGMA as usize + 2;
    let s_bits: Option<Vec<bool>> = masks.map(|m| {
        m.iter()
            .flat_map(|s| to_bits(&BigInt::from_biguint(Sign::Plus, s.clone()), out - 2))
            .collect()
    });
    let s = party.aggregator_input(s_bits.as_deref(), words.len() * (out - 2))?;
    let b = party.builder();
    let sums: Vec<Bit<u128>> = words
        .iter()
        .zip(s.chunks(out - 2))
        .flat_map(|(z, s)| add(b, &sign_extend(z, out), &zero_extend(s, out)))
        .collect();
    Ok(party
        .reveal_to_keyholder(&sums)?
        .map(|bits| bits.chunks(out).map(from_bits_signed).collect()))
}

/// The lower triangle (row by row, `i >= j`) of a symmetric matrix into a full matrix.
fn symmetric(lower: Vec<Word<u128>>, d: usize) -> Matrix<u128> {
    // Row i of the triangle starts at i (i + 1) / 2.
    let at = |i: usize, j: usize| &lower[i * (i + 1) / 2 + j];
    (0..d)
        .map(|i| (0..d).map(|j| at(i.max(j), i.min(j)).clone()).collect())
        .collect()
}

/// What the factor circuit yields: the factor's wires (kept in the session), the masked inverse
/// on the key holder's side (PrivLogit-Local), and on the aggregator's side whether every
/// value stayed in range.
pub type Factored = (Matrix<u128>, Option<Vec<BigInt>>, Option<bool>);

/// Setup circuit: unmasks the bound `B/N` (lower triangle), factors it, and for PrivLogit-Local
/// also forms `(B/N)^-1` and reveals it to the key holder masked by `inverse_masks` (the
/// aggregator's, `d * d` of them, row by row). Every step is range-checked (pivots at least
/// `min_pivot`) and the check's one bit goes to the aggregator, which stops the study when it
/// is set: a wrapped word would otherwise give a wrong model silently.
#[allow(clippy::too_many_arguments)]
pub fn factor_circuit<P: GcParty>(
    party: &mut P,
    d: usize,
    masked_values: Option<&[BigInt]>,
    masks: Option<&[BigUint]>,
    masked: usize,
    format: FixedFormat,
    local: bool,
    inverse_masks: Option<&[BigUint]>,
    min_pivot: f64,
) -> io::Result<Factored> {
    let width = format.width() as usize;
    let (lower, wrapped) = unmask(party, d * (d + 1) / 2, masked_values, masks, masked, width)?;
    let a = symmetric(lower, d);
    let mut check = RangeCheck::new(d, pivot_word(min_pivot, format));
    check.note(party.builder(), &wrapped);
    let l = MatrixCircuit::new(party.builder(), format, Some(&mut check)).cholesky(&a);
    let mut masked_inverse = None;
    if local {
        let inverse = MatrixCircuit::new(party.builder(), format, Some(&mut check))
            .spd_inverse_from_cholesky(&l);
        let flat: Vec<Word<u128>> = inverse.into_iter().flatten().collect();
        masked_inverse = reveal_masked(party, &flat, inverse_masks, width)?;
    }
    let out_of_range = party
        .reveal_to_aggregator(&[check.flag().clone()])?
        .map(|bits| !bits[0]);
    Ok((l, masked_inverse, out_of_range))
}

/// The smallest admissible pivot as a word of `format` (at least one unit).
fn pivot_word(min_pivot: f64, format: FixedFormat) -> Word<u128> {
    let v = min_pivot.clamp(format.resolution(), format.max_value());
    constant_fixed(v, format)
}

/// Iteration circuit of PrivLogit-Hessian and Newton: unmasks `g/N` and reveals the step
/// `(L L^T)^-1 g` to the aggregator as fixed-point words, with the range check's bit (`None`
/// for the step when a value left the range).
pub fn solve_circuit<P: GcParty>(
    party: &mut P,
    l: &Matrix<u128>,
    masked_values: Option<&[BigInt]>,
    masks: Option<&[BigUint]>,
    masked: usize,
    format: FixedFormat,
) -> io::Result<Option<Option<Vec<i64>>>> {
    let d = l.len();
    let width = format.width() as usize;
    let (g, wrapped) = unmask(party, d, masked_values, masks, masked, width)?;
    let mut check = RangeCheck::new(d, pivot_word(0.0, format));
    check.note(party.builder(), &wrapped);
    let x = MatrixCircuit::new(party.builder(), format, Some(&mut check)).cholesky_solve(l, &g);
    let mut flat: Vec<Bit<u128>> = x.into_iter().flatten().collect();
    flat.push(check.flag().clone());
    Ok(party.reveal_to_aggregator(&flat)?.map(|bits| {
        if bits[d * width] {
            return None;
        }
        Some(
            bits[..d * width]
                .chunks(width)
                .map(|c| from_bits_signed(c).try_into().expect("a 64-bit word"))
                .collect(),
        )
    }))
}

/// A comparison on masked integers, one bit revealed to the aggregator: `|a| < |b|` for
/// [`Comparison::AbsLess`] (the relative-change test), `a + |b| >= 0` for
/// [`Comparison::NonNegativeWithSlack`] (Newton's ascent test), `a >= 0` for
/// [`Comparison::NonNegative`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// `|a| < |b|`.
    AbsLess,
    /// `a + |b| >= 0`.
    NonNegativeWithSlack,
    /// `a >= 0` (`b` ignored but still input, so every comparison has one shape).
    NonNegative,
}

impl Comparison {
    /// Wire code.
    pub fn code(self) -> u64 {
        self as u64
    }

    /// From its wire code.
    pub fn from_code(c: u64) -> Option<Self> {
        [Self::AbsLess, Self::NonNegativeWithSlack, Self::NonNegative]
            .into_iter()
            .find(|k| k.code() == c)
    }
}

/// Runs `kind` on two masked integers of `width` bits (their magnitudes below
/// `2^(width - 2)`, so sums do not overflow). Reveals the comparison's bit and whether the
/// unmasked values fitted their words; the aggregator gets `Err` when they did not.
pub fn compare_circuit<P: GcParty>(
    party: &mut P,
    kind: Comparison,
    masked_values: Option<&[BigInt]>,
    masks: Option<&[BigUint]>,
    masked: usize,
    width: usize,
) -> io::Result<Option<Result<bool, OutOfRange>>> {
    let (v, wrapped) = unmask(party, 2, masked_values, masks, masked, width)?;
    let b = party.builder();
    let bit = match kind {
        Comparison::AbsLess => {
            let (x, y) = (abs(b, &v[0]), abs(b, &v[1]));
            lt_signed(b, &x, &y)
        }
        Comparison::NonNegativeWithSlack => {
            let y = abs(b, &v[1]);
            let s = add(b, &v[0], &y);
            b.not(&s[width - 1])
        }
        Comparison::NonNegative => b.not(&v[0][width - 1]),
    };
    Ok(party.reveal_to_aggregator(&[bit, wrapped])?.map(|bits| {
        if bits[1] {
            Err(OutOfRange)
        } else {
            Ok(bits[0])
        }
    }))
}

/// A circuit's inputs did not fit their words (the one bit the range check reveals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfRange;

#[cfg(test)]
mod tests {
    use super::*;
    use privlogit_circuits::channel::MemoryChannel;

    fn test_key() -> PublicKey {
        crate::paillier::KeyPair::generate_insecure_for_tests(256, &mut rand::rng())
            .secret
            .public_key()
            .clone()
    }

    /// `a >= 0` on masked integers whose public width is `width`: the key holder garbles on
    /// one thread, the aggregator evaluates; returns the aggregator's result.
    fn non_negative(a: i64, width: usize) -> Result<bool, OutOfRange> {
        let masked = width + SIGMA as usize + 2;
        let mut rng = rand::rng();
        let masks: Vec<BigUint> = (0..2)
            .map(|_| random_mask((width + SIGMA as usize) as u64, &mut rng))
            .collect();
        let values: Vec<BigInt> = [a, 0]
            .iter()
            .zip(&masks)
            .map(|(x, r)| BigInt::from(*x) + BigInt::from_biguint(Sign::Plus, r.clone()))
            .collect();
        let (k, e) = MemoryChannel::pair();
        let garbler = std::thread::spawn(move || {
            let session = GarblerSession::new(k, &mut rand::rng()).expect("base OT");
            let mut party = KeyholderGc {
                session,
                rng: rand::rng(),
            };
            compare_circuit(
                &mut party,
                Comparison::NonNegative,
                Some(&values),
                None,
                masked,
                width,
            )
            .expect("garble");
            party.session.channel().expect("flush");
        });
        let session = EvaluatorSession::new(e, &mut rand::rng()).expect("base OT");
        let mut party = AggregatorGc {
            session,
            noise: DjnNoise::new(&test_key(), &mut rand::rng()),
        };
        let out = compare_circuit(
            &mut party,
            Comparison::NonNegative,
            None,
            Some(&masks),
            masked,
            width,
        )
        .expect("evaluate")
        .expect("the aggregator learns it");
        garbler.join().expect("garbler");
        out
    }

    /// Unmasking keeps the low `width` bits of `v - r`; a value that does not fit them (a
    /// wrong public bound, or a wrong mask) used to wrap silently (2^11 + 5 read as a negative
    /// 12-bit word). Now the sign-extension bit reports it and the result is refused.
    #[test]
    fn unmasked_values_that_do_not_fit_are_refused() {
        assert_eq!(non_negative(5, 12), Ok(true));
        assert_eq!(non_negative(-5, 12), Ok(false));
        assert_eq!(non_negative((1 << 11) - 1, 12), Ok(true));
        assert_eq!(non_negative(-(1 << 11), 12), Ok(false));
        assert_eq!(non_negative((1 << 11) + 5, 12), Err(OutOfRange));
        assert_eq!(non_negative(-(1 << 11) - 1, 12), Err(OutOfRange));
    }
}
