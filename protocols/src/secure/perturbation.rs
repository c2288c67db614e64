//! Secure PLR: objective perturbation (stacking paper Algorithm 1, after Chaudhuri, Monteleoni
//! and Sarwate 2011) inside the two-server study, so that the published model is
//! epsilon-differentially private with respect to every Node's rows.
//!
//! PLR minimises `J(w) = 1/n sum log(1 + exp(-y w^T x)) + (lambda + Delta)/2 ||w||^2 + b^T w / n`
//! over rows of norm at most 1. Times `-n`, that is eq. 2.10's objective with penalty
//! `n (lambda + Delta)` and the linear term `-b^T w`: the Center adds `Enc(-b/N)` to the
//! gradient sum and `-w^T b / N` to the objective sum, under encryption.
//!
//! Nobody may know `b`: each server draws a whole PLR noise vector (`b_1` the aggregator,
//! `b_2` the key holder) and the study uses `b = b_1 + b_2`. From the aggregator's view `b_1`
//! is a public shift and `b_2` alone is Algorithm 1's noise, so the density-ratio argument of
//! the guarantee holds unchanged (docs/src/security-model.md); the same from the key holder's.
//! The price: `b` is larger than one draw (its norm about `sqrt(2)` times, for large d).
//!
//! PrivLogit-Local: the Nodes multiply only their own gradients into `Enc((B/N)^-1)`, so the
//! noise's part of every step, `(B/N)^-1 (-b/N)`, is solved once against the bound's factor in
//! masked arithmetic (revealed to the aggregator, as every Local step is) and added encrypted.
//!
//! The guarantee is for the exact minimiser: the study stops on the gradient norm alone
//! (`||grad J|| = ||g|| / N`, tested in masked arithmetic, one revealed bit), never on the
//! objective's change.

use ndarray::Array1;

use super::wire::{Reader, Writer};
use super::{Overflow, PlanReason, SecureConfig, SecureError, pow2};
use crate::paillier::{EncryptedVector, Fixed, NoiseSource, Packing, PublicKey};

/// What a secure PLR study publishes under: public, in the plan, sent to every party.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Release {
    /// The budget epsilon of the published model, per Node data set.
    pub epsilon: f64,
    /// PLR's lambda (per row: the study's penalty is `N (lambda + Delta)`).
    pub lambda: f64,
}

impl Release {
    /// Both positive and finite.
    pub fn validate(&self) -> Result<(), SecureError> {
        for (name, setting, v) in [
            ("epsilon", "release.epsilon", self.epsilon),
            ("lambda", "release.lambda", self.lambda),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(SecureError::invalid_plan(
                    setting,
                    PlanReason::Value {
                        what: name,
                        value: v,
                        rule: "a differentially private study needs it positive and finite",
                    },
                ));
            }
        }
        Ok(())
    }

    /// Appends `release` (absent: a zero epsilon) to a parameter message.
    pub(crate) fn write(w: Writer, release: Option<Release>) -> Writer {
        let (e, l) = release.map_or((0.0, 0.0), |r| (r.epsilon, r.lambda));
        w.f64s(&[e, l])
    }

    /// Reads what [`Release::write`] wrote.
    pub(crate) fn read(r: &mut Reader<'_>) -> std::io::Result<Option<Release>> {
        let values = r.f64s()?;
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
        match values[..] {
            [0.0, _] => Ok(None),
            [epsilon, lambda] => {
                let release = Release { epsilon, lambda };
                release
                    .validate()
                    .map_err(|_| bad("differential privacy parameters out of range"))?;
                Ok(Some(release))
            }
            _ => Err(bad("differential privacy parameters")),
        }
    }
}

/// A Node's answer to a differentially private study (its ledger): an error refuses it.
pub type Consent<'a> = &'a mut dyn FnMut(&Release) -> Result<(), SecureError>;

/// One server's draw: the penalty `N (lambda + Delta)` it derived (both servers must agree)
/// and its noise vector `b_i`.
#[derive(Debug, Clone)]
pub struct NoiseDraw {
    /// `N (lambda + Delta)`.
    pub penalty: f64,
    /// `b_i`, a whole PLR noise vector.
    pub noise: Array1<f64>,
}

/// Where a server's share of the noise comes from (the DP side of the toolkit implements it
/// with PLR's budget and exact sampler; this crate knows only the protocol).
pub trait NoiseShare: Send {
    /// Draws this server's share for `rows` rows and `dimension` coefficients; an error
    /// (a budget the data cannot carry) stops the study before anything is released.
    fn draw(
        &mut self,
        release: &Release,
        rows: usize,
        dimension: usize,
    ) -> Result<NoiseDraw, String>;
}

/// Both servers' noise sources, for a study run in one process.
pub struct NoiseShares {
    /// The aggregator's.
    pub aggregator: Box<dyn NoiseShare>,
    /// The key holder's.
    pub keyholder: Box<dyn NoiseShare>,
}

/// `Enc(-b_i/N)`, unpacked at the gradient's scale, declared at half a Node value's public
/// bound so that the two shares together are one term of the gradient sum
/// ([`SecureConfig::with_noise_term`]). A draw past that bound is refused: it depends on
/// epsilon, N and d only, never on the data, so refusing reveals nothing.
pub fn encrypt_share<S: NoiseSource>(
    key: &PublicKey,
    config: &SecureConfig,
    draw: &NoiseDraw,
    rows: usize,
    source: &S,
) -> Result<EncryptedVector, SecureError> {
    let frac = config.frac;
    let bound = share_bound(config);
    let values = draw
        .noise
        .iter()
        .map(|b| Fixed::from_f64(-b / rows as f64, frac))
        .collect::<Result<Vec<_>, _>>()?;
    if draw.noise.len() != config.dimension || values.iter().any(|v| v.value.magnitude() > &bound) {
        return Err(SecureError::Range(Overflow::Noise {
            norm: draw.noise.dot(&draw.noise).sqrt(),
            rows,
            bits: config.value_bits - 1,
        }));
    }
    Ok(EncryptedVector::encrypt(
        key,
        &values,
        &bound,
        Packing::unpacked(key),
        source,
    )?)
}

/// The public bound of one server's share: half of a Node value's.
pub fn share_bound(config: &SecureConfig) -> num_bigint::BigUint {
    pow2(config.value_bits - 1 + config.frac)
}

/// The study's gradient tolerance when the plan sets none: `||grad J|| <= 1e-8 (lambda +
/// Delta)`, which puts the model within 1e-8 of the exact minimiser (J is `(lambda +
/// Delta)`-strongly convex), in the secure rule's units (`||g|| < tol`, `g` the sum's gradient):
/// `tol = 1e-8 N (lambda + Delta) = 1e-8 penalty`.
pub fn default_gradient_tolerance(penalty: f64) -> f64 {
    MINIMISER_DISTANCE * penalty
}

/// How close to the exact minimiser a secure PLR study stops by default.
pub const MINIMISER_DISTANCE: f64 = 1e-8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_round_trips_and_absence_reads_as_none() {
        let r = Release {
            epsilon: 0.5,
            lambda: 1e-3,
        };
        let bytes = Release::write(Writer::new(), Some(r)).finish();
        assert_eq!(
            Release::read(&mut Reader::new(&bytes)).expect("reads"),
            Some(r)
        );
        let bytes = Release::write(Writer::new(), None).finish();
        assert_eq!(
            Release::read(&mut Reader::new(&bytes)).expect("reads"),
            None
        );
        let bad = Writer::new().f64s(&[-1.0, 1.0]).finish();
        assert!(Release::read(&mut Reader::new(&bad)).is_err());
    }
}
