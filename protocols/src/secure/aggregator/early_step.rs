//! PrivLogit-Local's step at an accelerated candidate, asked of the key holder together with
//! the candidate's acceptance test.
//!
//! An accelerated round used to wait for the key holder twice: the sufficient-increase
//! comparison (is the candidate kept?), then the masked decryption of the step `B^-1 g` at the
//! kept candidate, which the next round extrapolates from. The aggregator now sends the
//! decryption ([`crate::secure::wire::Step::DecryptPublicAfterNext`]) just before the
//! comparison; the key holder answers it right after the comparison's circuit, so the two cost
//! one round trip. The price: the step at a rejected candidate is decrypted too (to the
//! aggregator only; the candidate's coefficients are public anyway), which the key holder's
//! [`super::super::keyholder::DecryptionBudget`] allows: at most two evaluated points an
//! iteration.

use num_bigint::{BigInt, BigUint, Sign};

use crate::paillier::{EncryptedVector, PublicKey};
use crate::secure::gc::{self, SIGMA};
use crate::secure::masked::engine::to_f64;
use crate::secure::masked::matrix::IntMatrix;
use crate::secure::wire::{Reader, Writer};
use crate::secure::{Breach, Overflow, SecureError};
use crate::transport::Role;

/// A masked decryption sent and not yet answered: what the aggregator needs to unmask it.
pub(super) struct AskedDecryption {
    masks: Vec<BigUint>,
    bound: BigUint,
    bits: u64,
    scale: u32,
}

impl AskedDecryption {
    /// Masks `v` (each value with a fresh integer sigma bits wider than its public bound) and
    /// returns the request's payload with what unmasks the answer.
    pub(super) fn ask(
        key: &PublicKey,
        v: &EncryptedVector,
        noise: &crate::paillier::DjnNoise,
    ) -> Result<(Vec<u8>, Self), SecureError> {
        let bound = v.slot_bound().clone();
        let bits = bound.bits();
        let (masked, masks, _) = gc::mask(key, v, bits, noise)?;
        let payload = Writer::new().bytes(&masked.to_bytes(key)).finish();
        Ok((
            payload,
            Self {
                masks,
                bound,
                bits,
                scale: v.scale(),
            },
        ))
    }

    /// The plain values from the key holder's `reply`, each checked against its public bound.
    pub(super) fn read(self, reply: &[u8]) -> Result<Vec<f64>, SecureError> {
        let len = self.masks.len();
        let at = |e| SecureError::io(Role::Aggregator, "a masked decryption", e);
        let mut r = Reader::new(reply);
        let values = IntMatrix::read(&mut r, len, self.bits + u64::from(SIGMA) + 2)
            .and_then(|m| r.end().map(|()| m))
            .map_err(at)?;
        if values.rows() != 1 || values.cols() != len {
            return Err(SecureError::violation(
                Role::KeyHolder,
                Breach::wrong_length(
                    "the key holder's answer to a decryption",
                    values.rows() * values.cols(),
                    len,
                ),
            ));
        }
        let bound = BigInt::from_biguint(Sign::Plus, self.bound);
        self.masks
            .into_iter()
            .enumerate()
            .map(|(k, mask)| {
                let plain = values.get(0, k) - BigInt::from_biguint(Sign::Plus, mask);
                if plain.magnitude() > bound.magnitude() {
                    return Err(SecureError::Range(Overflow::Bound(
                        "a decrypted value outside its public bound",
                    )));
                }
                Ok(to_f64(&plain, self.scale))
            })
            .collect()
    }
}

/// The step of the latest point the Nodes evaluated, and where its decryption stands.
#[derive(Default)]
pub(super) struct EarlyStep {
    /// The latest evaluated point's gradient serial and `Enc(B^-1 g)`.
    latest: Option<(u64, EncryptedVector)>,
    /// Its decryption, sent and not yet read.
    asked: Option<(u64, AskedDecryption)>,
    /// Its decryption, read.
    read: Option<(u64, Vec<f64>)>,
}

impl EarlyStep {
    /// A point was evaluated: its step is the one an acceptance test may ask for early.
    pub(super) fn evaluated(&mut self, serial: u64, step: &EncryptedVector) {
        self.latest = Some((serial, step.clone()));
    }

    /// The latest step to ask for now, unless it is asked or read already.
    pub(super) fn unasked(&mut self) -> Option<(u64, EncryptedVector)> {
        let (serial, _) = self.latest.as_ref()?;
        let serial = *serial;
        let done = self.asked.as_ref().is_some_and(|(s, _)| *s == serial)
            || self.read.as_ref().is_some_and(|(s, _)| *s == serial);
        if done { None } else { self.latest.take() }
    }

    /// The decryption of step `serial` was sent.
    pub(super) fn asked(&mut self, serial: u64, decryption: AskedDecryption) {
        self.asked = Some((serial, decryption));
    }

    /// The decryption in flight, to read its answer now (the key holder answers in order).
    pub(super) fn in_flight(&mut self) -> Option<(u64, AskedDecryption)> {
        self.asked.take()
    }

    /// Step `serial` was read.
    pub(super) fn answered(&mut self, serial: u64, step: Vec<f64>) {
        self.read = Some((serial, step));
    }

    /// Step `serial`, if it was read early.
    pub(super) fn take(&mut self, serial: u64) -> Option<Vec<f64>> {
        match &self.read {
            Some((s, _)) if *s == serial => self.read.take().map(|(_, step)| step),
            _ => None,
        }
    }

    /// Whether step `serial`'s decryption is in flight.
    pub(super) fn is_in_flight(&self, serial: u64) -> bool {
        self.asked.as_ref().is_some_and(|(s, _)| *s == serial)
    }
}
