//! The key holder's part of a vertical study ([`crate::secure::vertical_rounds`]): it holds its
//! seeded shares of every party's columns, garbles the logistic circuit each round and sends
//! its shares of the bound, gradient and objective encrypted under its own key.

use std::ops::Range;

use privlogit_circuits::channel::Channel;
use rand::CryptoRng;

use super::super::gc::KeyholderGc;
use super::super::vertical_rounds::{self as v, CircuitSide, Layout, RoundMasks, recv_ring};
use super::super::wire::{self, Reader, Step, Writer};
use super::super::{Breach, SecureConfig, SecureError};
use crate::paillier::{DjnNoise, SecretKey};
use crate::transport::Role;
use crate::vertical::ring::{self, Side};
use crate::vertical::shares::{PartyShares, Products, ServerShares, label};

/// The key holder's state in a vertical study.
pub struct KeyholderVertical {
    shares: ServerShares,
    columns: Vec<Range<usize>>,
    /// The next round index: each is used once (a repeated index would open two residual
    /// vectors under one mask).
    next_round: u64,
    bound_formed: bool,
}

fn channel<C: Channel, R: CryptoRng>(party: &mut KeyholderGc<C, R>) -> Result<&mut C, SecureError> {
    party
        .session
        .channel()
        .map_err(|e| SecureError::io(Role::KeyHolder, "a vertical request", e))
}

/// What the key holder serves a vertical request with: its end of the circuits, its key, the
/// study's numbers and its encryption noise.
pub struct Serving<'a, C: Channel, R: CryptoRng> {
    /// Its end of the circuits (and the channel).
    pub party: &'a mut KeyholderGc<C, R>,
    /// The study's key.
    pub secret: &'a SecretKey,
    /// The study's public numbers.
    pub config: &'a SecureConfig,
    /// Encryption noise.
    pub noise: &'a DjnNoise,
}

impl KeyholderVertical {
    /// Reads the setup: decrypts each party's seed, receives its opened columns.
    pub fn setup<C: Channel, R: CryptoRng>(
        payload: &[u8],
        party: &mut KeyholderGc<C, R>,
        secret: &SecretKey,
        config: &SecureConfig,
    ) -> Result<Self, SecureError> {
        let key = secret.public_key();
        let (layout, seeds) = Layout::read(payload, key, config)?;
        let rows = layout.rows;
        let mut parties = Vec::with_capacity(seeds.len());
        let mut labels = Vec::new();
        for (k, (columns, seed)) in layout.columns.iter().zip(&seeds).enumerate() {
            let seed = v::decrypt_seed(seed, secret)?;
            let d = recv_ring(
                channel(party)?,
                config.session,
                rows * columns.len(),
                Role::Aggregator,
            )?;
            if k == layout.label_party {
                labels = ring::bit_stream(&seed, label::Y, 0, rows);
            }
            parties.push(PartyShares::new(
                rows,
                columns.clone(),
                d,
                *seed,
                Products {
                    rounds: layout.rounds,
                    hessian_rounds: layout.hessian_rounds,
                    ..Products::default()
                },
            ));
        }
        Ok(Self {
            shares: ServerShares::new(Side::KeyHolder, rows, parties, labels),
            columns: layout.columns,
            next_round: 0,
            bound_formed: false,
        })
    }

    /// Its shares of `B / N`, encrypted (once a study).
    pub fn bound<C: Channel, R: CryptoRng>(
        &mut self,
        payload: &[u8],
        at: Serving<'_, C, R>,
    ) -> Result<(), SecureError> {
        if !payload.is_empty() || std::mem::replace(&mut self.bound_formed, true) {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::OutOfOrder {
                    what: "a second vertical bound, or one with a payload (each party's mask is \
                           opened once)",
                },
            ));
        }
        let (rows, p) = (self.shares.rows(), self.shares.features());
        let mut blocks = Vec::with_capacity(self.columns.len());
        for k in 0..self.columns.len() {
            let e = v::open(
                channel(at.party)?,
                at.config.session,
                self.shares.bound_opening(k),
                Side::KeyHolder,
                "a bound opening",
            )?;
            blocks.push(self.shares.bound_block(k, &e));
        }
        let lower = v::lower_triangle(&blocks, &self.columns, p);
        let ints = v::bound_shares(&lower, Side::KeyHolder, rows, at.config.frac);
        let encrypted = v::encrypt_shares(at.secret.public_key(), &ints, at.config.frac, at.noise)?;
        let payload = Writer::new()
            .bytes(&encrypted.to_bytes(at.secret.public_key()))
            .finish();
        wire::send(
            channel(at.party)?,
            at.config.session,
            Step::VerticalShares,
            &payload,
        )
        .map_err(|e| SecureError::io(Role::KeyHolder, "its bound shares", e))
    }

    /// One round at the coefficients in `payload`: the circuit, the openings, its encrypted
    /// shares of `g / N` and `l / N`, and in a Newton round of the information `H / N`.
    pub fn round<C: Channel, R: CryptoRng>(
        &mut self,
        payload: &[u8],
        at: Serving<'_, C, R>,
    ) -> Result<(), SecureError> {
        let io = |e| SecureError::io(Role::KeyHolder, "a vertical round", e);
        let mut r = Reader::new(payload);
        let round = r.u64().map_err(io)?;
        let newton = r.u64().map_err(io)? == 1;
        let beta = r.f64s().map_err(io)?;
        r.end().map_err(io)?;
        if round != self.next_round {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::Mismatch {
                    what: "vertical round",
                    got: round,
                    expected: self.next_round,
                },
            ));
        }
        if beta.len() != at.config.dimension {
            return Err(SecureError::violation(
                Role::Aggregator,
                Breach::wrong_length(
                    "a vertical round's coefficients",
                    beta.len(),
                    at.config.dimension,
                ),
            ));
        }
        self.next_round += 1;
        let rows = self.shares.rows();
        let fixed = v::fixed_beta(&beta)?;
        let words = v::circuit_words(&self.shares.linear_predictor(&fixed));
        let masks = RoundMasks::draw(rows, newton, &mut at.party.rng);
        let shares = &self.shares;
        let labels = |i: usize| shares.label(i);
        v::logistic_round(
            at.party,
            rows,
            Some((
                CircuitSide {
                    z: &words,
                    labels: &labels,
                },
                &masks,
            )),
            None,
            newton,
        )
        .map_err(|e| SecureError::io(Role::KeyHolder, "the logistic circuit", e))?;
        let (residual, weights, objective) = masks.shares();
        let mut gradient = vec![0u128; at.config.dimension];
        for (k, columns) in self.columns.iter().enumerate() {
            let e = v::open(
                channel(at.party)?,
                at.config.session,
                self.shares.gradient_opening(k, round, &residual),
                Side::KeyHolder,
                "a gradient opening",
            )?;
            let block = self.shares.gradient_block(k, round, &e).ok_or_else(|| {
                SecureError::violation(
                    Role::Aggregator,
                    Breach::Unknown {
                        what: "dealt vertical round",
                        id: round,
                    },
                )
            })?;
            gradient[columns.clone()].copy_from_slice(&block);
        }
        let key = at.secret.public_key();
        let g = v::gradient_shares(&gradient, Side::KeyHolder, rows, at.config.frac);
        let l = v::objective_share(&objective, rows, at.config.frac);
        let g = v::encrypt_shares(key, &g, at.config.frac, at.noise)?;
        let l = v::encrypt_shares(key, &[l], 2 * at.config.frac, at.noise)?;
        let mut payload = Writer::new()
            .bytes(&g.to_bytes(key))
            .bytes(&l.to_bytes(key));
        if newton {
            let lower = v::information(
                channel(at.party)?,
                at.config.session,
                &self.shares,
                round,
                &weights,
                Side::KeyHolder,
            )?;
            let h = v::information_shares(&lower, Side::KeyHolder, rows, at.config.frac);
            let h = v::encrypt_shares(key, &h, at.config.frac, at.noise)?;
            payload = payload.bytes(&h.to_bytes(key));
        }
        let payload = payload.finish();
        wire::send(
            channel(at.party)?,
            at.config.session,
            Step::VerticalShares,
            &payload,
        )
        .map_err(|e| SecureError::io(Role::KeyHolder, "its round shares", e))
    }
}
