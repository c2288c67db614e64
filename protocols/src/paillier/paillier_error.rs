//! What the Paillier layer can fail with: one enum and the payloads that say which key,
//! which bytes, which value or which operands, kept apart from the arithmetic so that every
//! module of the layer imports its errors from here and nothing from its parent.

use thiserror::Error;

/// What can go wrong with keys, ciphertexts and encoded values. Decryption failures say that
/// they failed, never why.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PaillierError {
    /// A key is malformed or not usable.
    #[error("invalid Paillier key: {0}")]
    InvalidKey(KeyFault),
    /// Bytes are not in the expected format.
    #[error("malformed Paillier data: {0}")]
    Format(Malformed),
    /// A ciphertext is out of range for its key or not a unit modulo n.
    #[error("invalid ciphertext")]
    InvalidCiphertext,
    /// Decryption failed (said without saying why).
    #[error("decryption failed")]
    DecryptionFailed,
    /// An operation could wrap around n and decode to garbage, so it was refused.
    #[error(
        "refused: the result could reach {needed_bits} bits, beyond the {available_bits} bits a plaintext can hold without wrapping around n"
    )]
    Overflow {
        /// Bits the result's magnitude could need.
        needed_bits: u64,
        /// Bits available for a signed value below n/2.
        available_bits: u64,
    },
    /// A value cannot be encoded.
    #[error("cannot encode {0}")]
    Encoding(Unencodable),
    /// Operands disagree (different keys, lengths or layouts).
    #[error("mismatched operands: {0}")]
    Mismatch(Mismatch),
}

/// Why a key is refused ([`PaillierError::InvalidKey`]), so a caller can tell a short modulus
/// from a bad factorisation without reading a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum KeyFault {
    /// A modulus shorter than the least this crate accepts.
    #[error("modulus of {bits} bits: at least {min} are required")]
    ModulusTooShort {
        /// The modulus's bits.
        bits: u64,
        /// The least accepted.
        min: u64,
    },
    /// A modulus that is even or outside the sizes the arithmetic handles.
    #[error("modulus must be odd with 65 to {max} bits, got {bits} bits")]
    ModulusOutOfRange {
        /// The modulus's bits.
        bits: u64,
        /// The most accepted.
        max: u64,
    },
    /// `p` or `q` is not prime.
    #[error("p and q must be primes")]
    NotPrime,
    /// `p` and `q` are equal, even, or give no CRT constants.
    #[error("p and q must be distinct odd primes")]
    NotDistinctOddPrimes,
    /// `gcd(pq, (p-1)(q-1)) != 1`.
    #[error("gcd(pq, (p-1)(q-1)) must be 1")]
    NotCoprime,
    /// A constant of the secret key has no inverse.
    #[error("{what} must be invertible modulo {modulo}")]
    NotInvertible {
        /// The value (`lambda`).
        what: &'static str,
        /// The modulus (`n`).
        modulo: &'static str,
    },
    /// A DJN fixed base of 1.
    #[error("DJN base must not be 1")]
    DjnBaseOne,
    /// A DJN fixed base that is not a unit below n^2.
    #[error("DJN base must be a unit below n^2")]
    DjnBaseNotUnit,
}

/// How bytes fail to be a key, a ciphertext, a tensor or a masked message
/// ([`PaillierError::Format`]). `what` names the thing read in the site's words.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Malformed {
    /// Bytes that do not start with the format's magic.
    #[error("not a {what} (wrong magic)")]
    Magic {
        /// The format (`privlogit key`).
        what: &'static str,
    },
    /// A format version this build does not read.
    #[error("{what} version {found}, this build reads {supported}")]
    Version {
        /// The format (`key format`).
        what: &'static str,
        /// The version found.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    /// Bytes that end before the thing does.
    #[error("truncated {what}")]
    Truncated {
        /// What was cut short (`key`).
        what: &'static str,
    },
    /// Bytes left over after the thing.
    #[error("{bytes} unexpected bytes after the {what}")]
    Trailing {
        /// What was read (`key`).
        what: &'static str,
        /// The bytes left.
        bytes: usize,
    },
    /// Something of the wrong length.
    #[error("{what}: {got}, expected {expected}")]
    Length {
        /// What was measured, with its unit (`ciphertext bytes`).
        what: &'static str,
        /// Its length.
        got: usize,
        /// The length it must have.
        expected: usize,
    },
    /// A number the format does not allow there (a count, a width, a tag).
    #[error("{what}: {value}")]
    Value {
        /// The number (`slot offset`).
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// A matrix whose declared shape is too large to read.
    #[error("a {what} of {rows} x {cols} is too large")]
    TooLarge {
        /// The matrix (`packed matrix`).
        what: &'static str,
        /// Declared rows.
        rows: u64,
        /// Declared columns.
        cols: u64,
    },
    /// Slots that do not match the key's packing for their width.
    #[error("{slots} slots of {slot_bits} bits do not match the key")]
    Slots {
        /// The slots declared.
        slots: usize,
        /// Their width.
        slot_bits: u32,
    },
    /// A list of ciphertexts whose bytes do not make the count declared.
    #[error("{bytes} bytes for {count} ciphertexts")]
    Ciphertexts {
        /// The bytes.
        bytes: usize,
        /// The ciphertexts declared.
        count: usize,
    },
    /// Matrix columns whose lengths differ from the declared row count.
    #[error("column length differs from the row count")]
    Ragged,
    /// A wire reader's failure (truncated or invalid data), kept as it came.
    #[error("{0}")]
    Read(std::io::Error),
}

/// Why a value cannot be encoded ([`PaillierError::Encoding`]).
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum Unencodable {
    /// A NaN or an infinity.
    #[error("non-finite value {0}")]
    NonFinite(f64),
    /// A bound that is negative or not finite.
    #[error("bound {0}")]
    Bound(f64),
    /// A scale beyond the supported one.
    #[error("scale {scale} above the supported {max}")]
    Scale {
        /// The scale asked for.
        scale: u32,
        /// The most supported.
        max: u32,
    },
    /// Two scales whose sum overflows.
    #[error("scale {0} + {1}")]
    ScaleSum(u32, u32),
    /// A scale that cannot be lowered exactly (or without decrypting).
    #[error(
        "cannot lower scale {from} to {to} {}",
        if *homomorphic { "homomorphically" } else { "without rounding" }
    )]
    Lower {
        /// The value's scale.
        from: u32,
        /// The scale asked for.
        to: u32,
        /// Whether it was asked of a ciphertext.
        homomorphic: bool,
    },
    /// A value above the bound declared for it.
    #[error("value exceeds its declared bound")]
    AboveBound,
    /// A python-paillier exponent this crate cannot take.
    #[error(
        "phe exponent {exponent}{}",
        if *exponent > 0 { " > 0 (integers scaled up) is not supported" } else { "" }
    )]
    PheExponent {
        /// The exponent.
        exponent: i64,
    },
    /// Slots too wide for the modulus.
    #[error("slots of {slot_bits} bits do not fit a {modulus_bits}-bit modulus")]
    SlotWidth {
        /// The slot width.
        slot_bits: u32,
        /// The modulus's bits.
        modulus_bits: u64,
    },
    /// More values than a plaintext has slots.
    #[error("{values} values for {slots} slots")]
    Slots {
        /// The values.
        values: usize,
        /// The slots.
        slots: usize,
    },
}

/// How operands disagree ([`PaillierError::Mismatch`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// Lengths that differ: `len` of `what` for `expected` of `against`.
    #[error("{len} {what} for {expected} {against}")]
    Length {
        /// What was counted (`ciphertexts`).
        what: &'static str,
        /// How many there are.
        len: usize,
        /// What it must match (`values`).
        against: &'static str,
        /// How many that is.
        expected: usize,
    },
    /// Nothing where at least one is needed.
    #[error("no {what}")]
    Empty {
        /// What is missing (`vectors to sum`).
        what: &'static str,
    },
    /// Parts of one operation that differ in length, packing or scale.
    #[error("{what} differ in length, packing or scale")]
    Layouts {
        /// The parts (`vectors`).
        what: &'static str,
    },
    /// Values of one tensor at different scales.
    #[error("values of one tensor must share a scale")]
    Scales,
    /// A packed vector where an unpacked one is needed.
    #[error("{what} needs an unpacked vector")]
    Packed {
        /// The operation (`a dot product`).
        what: &'static str,
    },
    /// Packed rows that do not fit a plaintext's slots from their offset.
    #[error("{rows} rows from slot {offset} of {slots}")]
    SlotRows {
        /// The rows.
        rows: usize,
        /// The first slot.
        offset: usize,
        /// The slots of a plaintext.
        slots: usize,
    },
    /// Ciphertexts that are not the blocks of a packed matrix.
    #[error("{blocks} ciphertexts for a {rows} x {cols} matrix of {slots} slots")]
    Blocks {
        /// The ciphertexts.
        blocks: usize,
        /// The matrix's rows.
        rows: usize,
        /// Its columns.
        cols: usize,
        /// The slots of a plaintext.
        slots: usize,
    },
    /// A packed matrix that starts at a slot offset, where none is allowed.
    #[error("an offset matrix is not an encrypted matrix")]
    Offset,
    /// Matrices added with different shapes.
    #[error("adding a {} x {} matrix to a {} x {} one", left.0, left.1, right.0, right.1)]
    Shapes {
        /// The added matrix's shape.
        left: (usize, usize),
        /// The other's.
        right: (usize, usize),
    },
    /// An encrypted operand that does not fit its cross-term layout.
    #[error(
        "an encrypted {} x {} operand in {copies} copies for a {} x {} layout of {layout_copies} copies",
        operand.0, operand.1, layout.0, layout.1
    )]
    Layout {
        /// The operand's shape.
        operand: (usize, usize),
        /// Its copies.
        copies: usize,
        /// The layout's shape.
        layout: (usize, usize),
        /// The layout's copies.
        layout_copies: usize,
    },
    /// A negative exponent where only non-negative ones are defined.
    #[error("exponents must be non-negative")]
    NegativeExponent,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paillier errors are matched by kind and print the numbers they carry.
    #[test]
    fn paillier_errors_print_their_facts() {
        let short = PaillierError::InvalidKey(KeyFault::ModulusTooShort {
            bits: 1024,
            min: 2048,
        });
        assert_eq!(
            short.to_string(),
            "invalid Paillier key: modulus of 1024 bits: at least 2048 are required"
        );
        let length = PaillierError::Format(Malformed::Length {
            what: "ciphertext bytes",
            got: 10,
            expected: 512,
        });
        assert_eq!(
            length.to_string(),
            "malformed Paillier data: ciphertext bytes: 10, expected 512"
        );
        let lower = PaillierError::Encoding(Unencodable::Lower {
            from: 40,
            to: 20,
            homomorphic: true,
        });
        assert_eq!(
            lower.to_string(),
            "cannot encode cannot lower scale 40 to 20 homomorphically"
        );
        let phe = Unencodable::PheExponent { exponent: 2 };
        assert_eq!(
            phe.to_string(),
            "phe exponent 2 > 0 (integers scaled up) is not supported"
        );
        let mismatch = PaillierError::Mismatch(Mismatch::Length {
            what: "ciphertexts",
            len: 3,
            against: "values",
            expected: 5,
        });
        assert_eq!(
            mismatch.to_string(),
            "mismatched operands: 3 ciphertexts for 5 values"
        );
        assert!(matches!(
            mismatch,
            PaillierError::Mismatch(Mismatch::Length { len: 3, .. })
        ));
    }
}
