//! The two-server secure protocols (dissertation chapter 5, Algorithms 6-8; data flow in
//! docs/src/architecture.md): Nodes encrypt their sums under the key holder's Paillier key, the
//! aggregator adds them up, and the key holder (garbler) and the aggregator (evaluator) finish
//! every computation on secret values in a garbled circuit.
//!
//! - [`wire`]: framed, session- and step-checked messages over a byte channel.
//! - [`gc`]: the circuits both servers run (unmasking, Cholesky, inverse, solve, comparisons).
//! - [`shapes`]: the public shape of every vector a Node sends.
//! - [`ranking`]: the exact AUC over the Nodes' held-out rows (shares, merge, rank sum).
//! - [`vertical_rounds`] and [`vertical_roles`]: studies whose parties hold different columns of the
//!   same rows: the two servers' rounds, and every party's role over channels.
//! - [`node`], [`keyholder`]: the two serving roles.
//! - [`aggregator`]: the driving role, an [`Aggregation`](crate::Aggregation) backend, so the
//!   optimisers of [`crate::optimizer`] run unchanged on top of it.
//! - [`study_protocol`]: the handshake and the roles from their first message, over any channel.
//! - [`checkpoint`]: what the aggregator keeps to continue a study after a party was lost.
//! - [`inprocess`]: every role on its own thread over in-memory channels.
//!
//! Scaling: every sum is divided by N before encryption (docs/src/how-it-computes.md, "Fixed point"), so the
//! bound, gradient and objective the Center holds are `B/N`, `g/N` and `l/N`. Steps `(B/N)^-1
//! (g/N) = B^-1 g` and the relative-change test are unchanged by the scaling, so the optimisers
//! see the same quantities as the plaintext run up to fixed-point rounding.

pub mod aggregator;
pub mod checkpoint;
pub mod endorsement;
pub mod gc;
pub mod inprocess;
pub mod keyholder;
pub mod masked;
pub mod node;
pub mod perturbation;
pub mod ranking;
pub mod round_trips;
mod secure_error;
pub mod seed;
pub mod shapes;
pub mod solver;
pub mod study_protocol;
pub mod vertical_roles;
pub mod vertical_rounds;
pub mod wire;

pub use secure_error::{
    BlockFault, Breach, CheckpointFault, Inconsistency, MatrixShapes, Overflow, Party, PlanReason,
    Refusal, ResumeMismatch, SecureError, ShapeMismatch, Unendorsement,
};

use num_bigint::BigUint;
use privlogit_circuits::fixed_format::FixedFormat;

use crate::paillier::{Packing, PaillierError, PublicKey};

/// The default fixed-point format of secure studies' circuits: 64-bit words with 46 fractional
/// bits (the Nodes' values and the masked method use [`PAILLIER_FRAC`]; the figures below are
/// from when they used the format's).
///
/// With the circuits' general default (32 fractional bits) accelerated PrivLogit drifts from the
/// plaintext run (5e-3 on breast_cancer: Anderson extrapolation amplifies the first step's 1e-7
/// rounding); 44 bits give 8e-7, 46 bits 6e-8, 48 bits 2e-8 on the demo study. 46 keeps an
/// integer range of +-2^17 for the bound, its factor and inverse (entries of `(B/N)^-1` grow as
/// the bound nears singularity) and `+-2^17 / (S + 1)` for each Node's values.
pub const DEFAULT_FORMAT: FixedFormat = match FixedFormat::new(64, 46) {
    Ok(f) => f,
    Err(_) => panic!("a valid format"),
};

/// Fractional bits of Paillier values under the masked method (the default).
///
/// The Center's steps cannot be more precise than the Nodes' rounding of `g_i/N`, which the
/// step multiplies by `(B/N)^-1`: at the circuit format's 46 bits that floor (about 1e-11 on a
/// 90-coefficient study) and the masked inverse's rounding (5e-11 relative) made accelerated
/// secure runs part from the plaintext run by up to 1e-5 and miss a 1e-8 gradient stop. At 60
/// bits a Node's f64 values of magnitude at least 2^-7 are encoded exactly; slots grow by 14
/// bits (the one-time bound packing holds about a tenth fewer values per ciphertext).
pub const PAILLIER_FRAC: u32 = 60;

/// Largest number of coefficients a request may claim.
pub const MAX_DIMENSION: usize = 1024;

/// Most iterations a study may ask for (the key holder's decryption budget follows from it).
pub const MAX_ITERATIONS: usize = 1_000_000;

/// The most Newton steps the separation probe of an unpenalised logistic study that ran out of
/// iterations takes (breast_cancer's Newton separates its classes in 13 from zero); the key
/// holder's decryption budget allows their Local steps.
pub const SEPARATION_PROBE: usize = 30;

/// The public parameters every party of a study agrees on.
#[derive(Debug, Clone)]
pub struct SecureConfig {
    /// Study session id carried by every message.
    pub session: u64,
    /// Number of Nodes.
    pub parties: usize,
    /// Number of coefficients.
    pub dimension: usize,
    /// Fixed-point format of the garbled circuits (the circuit method's words; its integer
    /// bits also fix [`Self::value_bits`]).
    pub format: FixedFormat,
    /// Fractional bits of every value under Paillier encryption (the Nodes' sums, the masked
    /// engine's shares, the Center's terms): the format's under the circuit method, whose
    /// circuits take those values as words; [`PAILLIER_FRAC`] under the masked method, whose
    /// integers have no word size.
    pub frac: u32,
    /// Every value a Node encrypts (entries of `B_i/N`, `g_i/N`, `l_i/N`) must be below
    /// `2^value_bits` in magnitude; a Node refuses to send anything larger. Public, because
    /// mask and slot widths follow from it.
    pub value_bits: u32,
    /// Largest row count a Node may declare.
    pub max_rows: u64,
    /// Terms the Center adds to every sum over the Nodes: its penalty, and in a secure PLR
    /// study the objective's noise ([`perturbation`]).
    pub center_terms: u32,
    /// Whether the Nodes send their gradients packed (a few ciphertexts instead of one per
    /// coefficient) for the Center to share once in masked arithmetic, where its dot products
    /// are taken; otherwise unpacked, for dot products under encryption. Packed where masked
    /// products are cheap (dealt, in one process); see [`Self::gradient_shape`].
    pub packed_gradient: bool,
    /// The aggregator's side of the masked inverse's circuit blocks
    /// ([`StudyPlan::circuit_block`](study_protocol::StudyPlan::circuit_block)); not sent to
    /// the key holder, which reads each block's side from its request.
    pub circuit_block: usize,
}

impl SecureConfig {
    /// A study in `format` ([`DEFAULT_FORMAT`] unless there is a reason); Node values must stay below the circuit's range divided by the
    /// number of terms of a sum ([`Self::value_bits`]); at most 2^40 rows per Node.
    pub fn new(session: u64, parties: usize, dimension: usize, format: FixedFormat) -> Self {
        let integer_bits = format.width() - format.frac() - 1;
        Self {
            session,
            parties,
            dimension,
            format,
            frac: format.frac(),
            value_bits: integer_bits.saturating_sub(bits_for(parties as u64 + 1)),
            max_rows: 1 << 40,
            center_terms: 1,
            circuit_block: masked::engine::DEFAULT_BLOCK,
            packed_gradient: false,
        }
    }

    /// The same study with the Nodes' gradients packed ([`Self::packed_gradient`]).
    pub fn with_packed_gradient(mut self, packed: bool) -> Self {
        self.packed_gradient = packed;
        self
    }

    /// The same study with Paillier values at `frac` fractional bits (the masked method; the
    /// Node values' integer range stays the format's).
    pub fn with_frac(mut self, frac: u32) -> Self {
        self.frac = frac;
        self
    }

    /// Refuses the circuit method unless Paillier values are at the circuit format's
    /// fractional bits (its circuits take them as words).
    pub fn check_circuit_scale(&self) -> Result<(), SecureError> {
        if self.frac == self.format.frac() {
            Ok(())
        } else {
            Err(SecureError::invalid_plan(
                "linear_algebra",
                PlanReason::Frac {
                    method: "the circuit method (its format)",
                    need: self.format.frac(),
                    at_least: false,
                    have: self.frac,
                },
            ))
        }
    }

    /// The same study with the objective's noise as one more term of every gradient sum (a
    /// secure PLR study): Node values get one bit less room when the count of terms needs it.
    pub fn with_noise_term(mut self) -> Self {
        self.center_terms = 2;
        let integer_bits = self.format.width() - self.format.frac() - 1;
        self.value_bits = integer_bits.saturating_sub(bits_for(self.terms()));
        self
    }

    /// Terms of a sum: one per Node and the Center's.
    pub fn terms(&self) -> u64 {
        self.parties as u64 + u64::from(self.center_terms)
    }

    /// Bits to hold the sum over all Nodes of values below `2^(value_bits + scale)`, plus the
    /// Center's added terms.
    fn sum_bits(&self, scale: u32) -> u32 {
        self.value_bits + scale + bits_for(self.terms())
    }

    /// Slots for the Hessian bound: a sum over the Nodes plus the penalty, then a mask of
    /// `sigma` more bits.
    pub fn bound_packing(&self, key: &PublicKey) -> Result<Packing, PaillierError> {
        Packing::new(key, self.sum_bits(self.frac) + gc::SIGMA + 3)
    }

    /// Slots for `Enc((B/N)^-1)` sent to the Nodes: entries below `2^entry_bits` that the key
    /// holder encrypts masked (`masked_bits` wide), and the products with gradients summed
    /// over the Nodes (`2^entry_bits * d * 2^(value_bits + frac)` each), which the aggregator
    /// masks sigma bits wider before the key holder decrypts the step. The circuit method's
    /// entries are words (`entry_bits` = width, masked `width + sigma + 1`).
    pub fn inverse_packing(
        &self,
        key: &PublicKey,
        d: usize,
        entry_bits: u32,
        masked_bits: u32,
    ) -> Result<Packing, PaillierError> {
        let products = entry_bits + bits_for(d as u64) + self.sum_bits(self.frac);
        Packing::new(key, (masked_bits + 2).max(products + gc::SIGMA + 2))
    }
}

/// Bits of `x` (at least 1).
pub(crate) fn bits_for(x: u64) -> u32 {
    (u64::BITS - x.leading_zeros()).max(1)
}

/// A bound `2^bits` as an integer.
pub(crate) fn pow2(bits: u32) -> BigUint {
    BigUint::from(1u8) << bits
}
