//! The aggregator's part of a vertical study ([`crate::secure::vertical_rounds`]): it holds its shares
//! of every party's columns (and what the parties dealt it), evaluates the logistic circuit each
//! round, and adds its integer shares to the key holder's encrypted ones, so that the bound,
//! gradient and objective reach the solver as `Enc(B/N)`, `Enc(g/N)`, `Enc(l/N)` like a
//! horizontal study's sums.

use ndarray::Array1;
use num_bigint::BigInt;
use privlogit_circuits::channel::Channel;

use super::vertical_state::Vertical;
use super::{AggregatorSetup, Protocol, SecureAggregation};
use crate::paillier::{EncryptedVector, PublicKey};
use crate::secure::solver::LinearAlgebra;
use crate::secure::vertical_rounds::{self as v, CircuitSide, KeyholderPart, Layout, send_ring};
use crate::secure::wire::{self, Reader, Step, Writer};
use crate::secure::{Breach, Overflow, SecureConfig, SecureError};
use crate::transport::Role;
use crate::vertical::ring::Side;
use crate::vertical::shares::ServerShares;

/// A vertical round's encrypted sums: `g/N`, `l/N` and (Newton) the information's lower
/// triangle.
pub(super) type VerticalSums = (EncryptedVector, EncryptedVector, Option<EncryptedVector>);

impl<C: Channel> SecureAggregation<C> {
    /// Connects a vertical study: base OTs with the key holder, then the setup (each party's
    /// encrypted seed and opened columns, forwarded). PrivLogit-Hessian is the protocol: the
    /// gradient is formed between the servers, so there are no Nodes to hand a local inverse.
    pub fn vertical(
        keyholder: C,
        key: PublicKey,
        config: SecureConfig,
        linear_algebra: LinearAlgebra,
        shares: ServerShares,
        layout: &Layout,
        parts: Vec<KeyholderPart>,
    ) -> Result<Self, SecureError> {
        let mut me = Self::base(AggregatorSetup {
            nodes: Vec::new(),
            keyholder,
            key,
            config,
            protocol: Protocol::Hessian,
            linear_algebra,
        })?;
        me.rows = shares.rows();
        let seeds: Vec<EncryptedVector> = parts.iter().map(|p| p.seed.clone()).collect();
        let payload = layout.write(&seeds, &me.key);
        let session = me.config.session;
        let at = |e| SecureError::io(Role::Aggregator, "the vertical setup", e);
        let ch = me.keyholder()?;
        wire::send(ch, session, Step::VerticalSetup, &payload).map_err(at)?;
        for part in &parts {
            send_ring(ch, session, &part.d).map_err(at)?;
        }
        me.vertical = Some(Vertical {
            columns: layout.columns.clone(),
            shares,
            next_round: 0,
            dealt: (layout.rounds, layout.hessian_rounds),
        });
        Ok(me)
    }

    /// `Enc(B/N)`'s lower triangle, without the penalty, formed between the servers.
    pub(super) fn vertical_bound(&mut self) -> Result<EncryptedVector, SecureError> {
        let state = self.vertical.take().expect("a vertical study");
        let result = self.vertical_bound_with(&state);
        self.vertical = Some(state);
        result
    }

    fn vertical_bound_with(&mut self, state: &Vertical) -> Result<EncryptedVector, SecureError> {
        let session = self.config.session;
        let (rows, p) = (state.shares.rows(), state.shares.features());
        let at = |e| SecureError::io(Role::Aggregator, "the vertical bound", e);
        wire::send(self.keyholder()?, session, Step::VerticalBound, &[]).map_err(at)?;
        let mut blocks = Vec::with_capacity(state.columns.len());
        for k in 0..state.columns.len() {
            let e = v::open(
                self.keyholder()?,
                session,
                state.shares.bound_opening(k),
                Side::Aggregator,
                "a bound opening",
            )?;
            blocks.push(state.shares.bound_block(k, &e));
        }
        let lower = v::lower_triangle(&blocks, &state.columns, p);
        let own = v::bound_shares(&lower, Side::Aggregator, rows, self.config.frac);
        let theirs = self.read_encrypted(1, "bound")?.remove(0);
        self.combine(&theirs, &own, self.config.frac)
    }

    /// `Enc(g/N)` and `Enc(l/N)` at `beta`, without the penalty: one logistic circuit and one
    /// Beaver product per party; with `newton` also the information's lower triangle
    /// `Enc(X^T diag(w) X / N)`.
    pub(super) fn vertical_round(
        &mut self,
        beta: &Array1<f64>,
        newton: bool,
    ) -> Result<VerticalSums, SecureError> {
        let mut state = self.vertical.take().expect("a vertical study");
        let result = self.vertical_round_with(&mut state, beta, newton);
        self.vertical = Some(state);
        result
    }

    fn vertical_round_with(
        &mut self,
        state: &mut Vertical,
        beta: &Array1<f64>,
        newton: bool,
    ) -> Result<VerticalSums, SecureError> {
        let session = self.config.session;
        let rows = state.shares.rows();
        let beta = beta.as_slice().expect("contiguous");
        let fixed = v::fixed_beta(beta)?;
        let round = state.next_round;
        let (dealt, newton_dealt) = state.dealt;
        if round >= dealt || (newton && round >= newton_dealt) {
            return Err(SecureError::Range(Overflow::Undealt {
                round: round + 1,
                dealt,
                newton: newton_dealt,
            }));
        }
        state.next_round += 1;
        let at = |e| SecureError::io(Role::Aggregator, "a vertical round", e);
        let payload = Writer::new()
            .u64(round)
            .u64(u64::from(newton))
            .f64s(beta)
            .finish();
        wire::send(self.keyholder()?, session, Step::VerticalRound, &payload).map_err(at)?;
        let words = v::circuit_words(&state.shares.linear_predictor(&fixed));
        let start = std::time::Instant::now();
        let shares = &state.shares;
        let labels = |i: usize| shares.label(i);
        let (residual, weights, objective) = v::logistic_round(
            &mut self.gc,
            rows,
            None,
            Some(CircuitSide {
                z: &words,
                labels: &labels,
            }),
            newton,
        )
        .map_err(at)?
        .expect("the aggregator learns its shares");
        self.gc_seconds += start.elapsed().as_secs_f64();
        let mut gradient = vec![0u128; self.config.dimension];
        for (k, columns) in state.columns.iter().enumerate() {
            let e = v::open(
                self.keyholder()?,
                session,
                state.shares.gradient_opening(k, round, &residual),
                Side::Aggregator,
                "a gradient opening",
            )?;
            let block = state
                .shares
                .gradient_block(k, round, &e)
                .ok_or(SecureError::Range(Overflow::BeyondDeal {
                    round,
                    newton: false,
                }))?;
            gradient[columns.clone()].copy_from_slice(&block);
        }
        let frac = self.config.frac;
        let own_g = v::gradient_shares(&gradient, Side::Aggregator, rows, frac);
        let own_l = v::objective_share(&objective, rows, frac);
        let own_h = if newton {
            let lower = v::information(
                self.keyholder()?,
                session,
                &state.shares,
                round,
                &weights,
                Side::Aggregator,
            )?;
            Some(v::information_shares(&lower, Side::Aggregator, rows, frac))
        } else {
            None
        };
        let mut theirs = self.read_encrypted(2 + usize::from(newton), "round")?;
        let h = match own_h {
            Some(own) => {
                let h = theirs.pop().expect("three vectors");
                Some(self.combine(&h, &own, frac)?)
            }
            None => None,
        };
        let l = theirs.pop().expect("two vectors");
        let g = theirs.pop().expect("two vectors");
        Ok((
            self.combine(&g, &own_g, frac)?,
            self.combine(&l, &[own_l], 2 * frac)?,
            h,
        ))
    }

    /// The key holder's encrypted shares: `count` vectors in one frame.
    fn read_encrypted(
        &mut self,
        count: usize,
        what: &'static str,
    ) -> Result<Vec<EncryptedVector>, SecureError> {
        let session = self.config.session;
        let (_, payload) = wire::recv(self.keyholder()?, session, &[Step::VerticalShares])
            .map_err(|e| {
                SecureError::io(Role::Aggregator, "receiving the key holder's shares", e)
                    .with_what(what)
            })?;
        let mut r = Reader::new(&payload);
        let bad = |e| {
            SecureError::io(Role::Aggregator, "reading the key holder's shares", e).with_what(what)
        };
        let out = (0..count)
            .map(|_| {
                Ok(EncryptedVector::from_bytes(
                    &self.key,
                    r.bytes().map_err(bad)?,
                )?)
            })
            .collect::<Result<Vec<_>, SecureError>>()?;
        r.end().map_err(bad)?;
        Ok(out)
    }

    /// The key holder's encrypted integer shares plus the aggregator's: the value itself, whose
    /// public bound is the study's (the integer shares' sum is the value, `|v| < 2^value_bits`).
    fn combine(
        &self,
        theirs: &EncryptedVector,
        own: &[BigInt],
        scale: u32,
    ) -> Result<EncryptedVector, SecureError> {
        if theirs.len() != own.len() {
            return Err(SecureError::violation(
                Role::KeyHolder,
                Breach::wrong_length("vertical shares", theirs.len(), own.len()),
            ));
        }
        if theirs.scale() != scale {
            return Err(SecureError::violation(
                Role::KeyHolder,
                Breach::Mismatch {
                    what: "the scale of vertical shares",
                    got: u64::from(theirs.scale()),
                    expected: u64::from(scale),
                },
            ));
        }
        let sum = theirs.add_plain(&self.key, own)?;
        Ok(sum.assume_slot_bound(self.config.value_bound(scale)))
    }
}
