//! The evaluator: a circuit backend whose wires are the active labels. Each AND gate reads its
//! two ciphertexts from the channel, in the order the garbler wrote them:
//!
//! ```text
//! W_G = H(A, j) ^ sa T_G,    W_E = H(B, j') ^ sb (T_E ^ A),    output W_G ^ W_E
//! ```
//!
//! where `sa`, `sb` are the permute bits of the active labels.

use std::io;

use super::hash::{Hash, sigma};
use super::labels::{LABEL_BYTES, label_role, lsb, mask, permute_bits, receive_decoded};
use crate::backend::{Backend, Bit, Builder, Word};
use crate::channel::Channel;
use crate::circuit::{Circuit, Schedule};

/// AND gates read from the channel at a time.
const READ_GATES: usize = 2048;

/// The evaluator's state.
pub struct Evaluator<C: Channel> {
    channel: C,
    hash: Hash,
    gate: u128,
    ands: u64,
    tables: Vec<u8>,
    position: usize,
    /// Reused buffer for the two hashes of every gate in a batch.
    scratch: Vec<u128>,
    /// Reused output buffer of lone ANDs.
    single: Vec<u128>,
    error: Option<io::Error>,
}

label_role! {
    Evaluator,
    /// Evaluates a gate-list circuit stage by stage given the active labels of its input wires
    /// (constants have active label 0); returns the active labels of its output wires.
    evaluate_circuit
}

impl<C: Channel> Evaluator<C> {
    /// An evaluator reading tables from `channel`.
    pub fn new(channel: C) -> Self {
        Self {
            channel,
            hash: Hash::new(),
            gate: 0,
            ands: 0,
            tables: Vec::new(),
            position: 0,
            scratch: Vec::new(),
            single: Vec::new(),
            error: None,
        }
    }

    /// Reports the first channel error, if any.
    pub fn check(&mut self) -> io::Result<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Ends evaluation: reports errors and returns the channel.
    pub fn finish(mut self) -> io::Result<C> {
        self.check()?;
        Ok(self.channel)
    }

    /// The next `n` ciphertext pairs. The garbler flushes in chunks of whole gates and before
    /// every exchange, so reading exactly what is needed never waits for more than was sent.
    fn tables(&mut self, n: usize) -> Vec<(u128, u128)> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if self.position == self.tables.len() {
                let want = (n - out.len()).min(READ_GATES) * 2 * LABEL_BYTES;
                self.tables.resize(want, 0);
                if self.error.is_none()
                    && let Err(e) = self.channel.recv(&mut self.tables)
                {
                    self.error = Some(e);
                }
                self.position = 0;
            }
            let t = &self.tables[self.position..self.position + 2 * LABEL_BYTES];
            let tg = u128::from_le_bytes(t[..16].try_into().expect("16 bytes"));
            let te = u128::from_le_bytes(t[16..].try_into().expect("16 bytes"));
            out.push((tg, te));
            self.position += 2 * LABEL_BYTES;
        }
        out
    }
}

impl<C: Channel> Evaluator<C> {
    /// The active label of the constant true: NOT is free and changes no label.
    fn one(&self) -> u128 {
        0
    }

    /// Evaluates a batch of AND gates, their active labels replacing `out`.
    fn and_into(&mut self, pairs: &[(u128, u128)], out: &mut Vec<u128>) {
        let first = self.gate;
        self.gate += pairs.len() as u128;
        let mut h = std::mem::take(&mut self.scratch);
        h.clear();
        h.reserve(2 * pairs.len());
        for (k, &(a, b)) in pairs.iter().enumerate() {
            let j = 2 * (first + k as u128);
            h.extend_from_slice(&[sigma(a) ^ j, sigma(b) ^ j ^ 1]);
        }
        self.hash.permute(&mut h);
        for (k, &(a, b)) in pairs.iter().enumerate() {
            h[2 * k] ^= sigma(a);
            h[2 * k + 1] ^= sigma(b);
        }
        let tables = self.tables(pairs.len());
        self.ands += pairs.len() as u64;
        out.clear();
        out.extend(
            pairs
                .iter()
                .zip(tables)
                .enumerate()
                .map(|(k, (&(a, b), (tg, te)))| {
                    let wg = h[2 * k] ^ (mask(lsb(a)) & tg);
                    let we = h[2 * k + 1] ^ (mask(lsb(b)) & (te ^ a));
                    wg ^ we
                }),
        );
        self.scratch = h;
    }
}

impl<C: Channel> Builder<Evaluator<C>> {
    /// Input wires whose labels the garbler sends (the garbler's inputs).
    pub fn garbler_input(&mut self, width: usize) -> io::Result<Word<u128>> {
        let mut bytes = vec![0u8; width * LABEL_BYTES];
        self.backend_mut().channel.recv(&mut bytes)?;
        Ok(bytes
            .chunks_exact(LABEL_BYTES)
            .map(|c| Bit::Wire(u128::from_le_bytes(c.try_into().expect("16 bytes"))))
            .collect())
    }

    /// Learns `word`: receives the garbler's permute bits and decodes the active labels.
    pub fn reveal_to_evaluator(&mut self, word: &[Bit<u128>]) -> io::Result<Vec<bool>> {
        let e = self.backend_mut();
        e.check()?;
        receive_decoded(&mut e.channel, word)
    }

    /// Reveals `word` to the garbler: sends the permute bits of the active labels.
    pub fn reveal_to_garbler(&mut self, word: &[Bit<u128>]) -> io::Result<()> {
        let bits = permute_bits(word);
        let e = self.backend_mut();
        e.check()?;
        e.channel.send(&bits)?;
        e.channel.flush()
    }
}
