//! The garbler: a circuit backend whose wires are zero-labels. Each AND gate is garbled with
//! half-gates as it is built and its two ciphertexts go to the channel.
//!
//! For an AND of wires with zero-labels `A`, `B` (permute bits `pa`, `pb`) and tweaks `j`, `j'`:
//!
//! ```text
//! T_G = H(A, j) ^ H(A ^ delta, j) ^ pb delta        W_G = H(A, j) ^ pa T_G
//! T_E = H(B, j') ^ H(B ^ delta, j') ^ A             W_E = H(B, j') ^ pb (T_E ^ A)
//! output zero-label W_G ^ W_E; send T_G, T_E.
//! ```
//!
//! Channel errors cannot be returned from a gate, so the first one is kept and reported by
//! [`Garbler::finish`]; gates after it still produce (meaningless) labels.

use std::io;

use rand::CryptoRng;
use zeroize::Zeroizing;

use super::hash::{Hash, sigma};
use super::labels::{LABEL_BYTES, label_role, lsb, mask, permute_bits, receive_decoded};
use crate::backend::{Backend, Bit, Builder, Word};
use crate::channel::Channel;
use crate::circuit::{Circuit, Schedule};

/// AND gates whose ciphertexts are collected before one write to the channel.
const FLUSH_GATES: usize = 2048;

/// The garbler's state.
pub struct Garbler<C: Channel> {
    channel: C,
    hash: Hash,
    /// The global offset, wiped on drop.
    delta: Zeroizing<u128>,
    gate: u128,
    ands: u64,
    out: Vec<u8>,
    /// Reused buffer for the four hashes of every gate in a batch.
    scratch: Vec<u128>,
    /// Reused output buffer of lone ANDs.
    single: Vec<u128>,
    error: Option<io::Error>,
}

label_role! {
    Garbler,
    /// Garbles a gate-list circuit stage by stage (its AND gates batched) given the zero-labels
    /// of its input wires; returns the zero-labels of its output wires. Constant wires get the
    /// zero-label `value * delta`, so their active label is 0 for the evaluator.
    garble_circuit
}

impl<C: Channel> Garbler<C> {
    /// A garbler with a fresh `delta` (lowest bit set) from `rng`.
    pub fn new<R: CryptoRng + ?Sized>(channel: C, rng: &mut R) -> Self {
        let delta = (u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64())) | 1;
        Self::with_delta(channel, delta)
    }

    /// A garbler with a given `delta` (its lowest bit must be set): oblivious transfer needs the
    /// same offset as the garbling.
    pub fn with_delta(channel: C, delta: u128) -> Self {
        assert_eq!(delta & 1, 1, "delta's permute bit must be 1");
        Self {
            channel,
            hash: Hash::new(),
            delta: Zeroizing::new(delta),
            gate: 0,
            ands: 0,
            out: Vec::with_capacity(FLUSH_GATES * 2 * LABEL_BYTES),
            scratch: Vec::new(),
            single: Vec::new(),
            error: None,
        }
    }

    /// The global offset (secret).
    pub fn delta(&self) -> u128 {
        *self.delta
    }

    /// Fresh zero-labels for `width` wires from `rng`.
    pub fn fresh_labels<R: CryptoRng + ?Sized>(&self, width: usize, rng: &mut R) -> Vec<u128> {
        (0..width)
            .map(|_| u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64()))
            .collect()
    }

    /// Flushes pending ciphertexts and reports the first channel error, if any.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_out();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.channel.flush()
    }

    /// Ends garbling: flushes, reports errors, and returns the channel.
    pub fn finish(mut self) -> io::Result<C> {
        self.flush()?;
        Ok(self.channel)
    }

    fn write_out(&mut self) {
        if !self.out.is_empty()
            && self.error.is_none()
            && let Err(e) = self.channel.send(&self.out)
        {
            self.error = Some(e);
        }
        self.out.clear();
    }
}

impl<C: Channel> Garbler<C> {
    /// The zero-label of the constant true, which NOT adds.
    fn one(&self) -> u128 {
        *self.delta
    }

    /// Garbles a batch of AND gates, their output zero-labels replacing `outputs` (a buffer the
    /// gate-list path reuses from stage to stage).
    fn and_into(&mut self, pairs: &[(u128, u128)], outputs: &mut Vec<u128>) {
        let n = pairs.len();
        let d = *self.delta;
        let sd = sigma(d);
        let first = self.gate;
        self.gate += n as u128;
        // Blocks sigma(x) ^ tweak for A, A ^ delta (tweak 2g) and B, B ^ delta (tweak 2g + 1);
        // sigma is linear, so sigma(x ^ delta) = sigma(x) ^ sigma(delta).
        let mut blocks = std::mem::take(&mut self.scratch);
        // Every entry is overwritten below: grow (zero-filling) only when short.
        blocks.resize(4 * n, 0);
        for (k, (&(a, b), q)) in pairs.iter().zip(blocks.chunks_exact_mut(4)).enumerate() {
            let j = 2 * (first + k as u128);
            let (sa, sb) = (sigma(a), sigma(b));
            q.copy_from_slice(&[sa ^ j, sa ^ sd ^ j, sb ^ j ^ 1, sb ^ sd ^ j ^ 1]);
        }
        self.hash.permute(&mut blocks);
        // Written in place into pre-sized buffers: no per-gate capacity checks.
        let start = self.out.len();
        self.out.resize(start + n * 2 * LABEL_BYTES, 0);
        let tables = self.out[start..].chunks_exact_mut(2 * LABEL_BYTES);
        outputs.resize(n, 0);
        for (((&(a, b), h), table), output) in pairs
            .iter()
            .zip(blocks.chunks_exact(4))
            .zip(tables)
            .zip(outputs.iter_mut())
        {
            let (sa, sb) = (sigma(a), sigma(b));
            let ha0 = h[0] ^ sa;
            let ha1 = h[1] ^ sa ^ sd;
            let hb0 = h[2] ^ sb;
            let hb1 = h[3] ^ sb ^ sd;
            let (pa, pb) = (lsb(a), lsb(b));
            let tg = ha0 ^ ha1 ^ (mask(pb) & d);
            let wg = ha0 ^ (mask(pa) & tg);
            let te = hb0 ^ hb1 ^ a;
            let we = hb0 ^ (mask(pb) & (te ^ a));
            table[..LABEL_BYTES].copy_from_slice(&tg.to_le_bytes());
            table[LABEL_BYTES..].copy_from_slice(&te.to_le_bytes());
            *output = wg ^ we;
        }
        self.ands += n as u64;
        self.scratch = blocks;
        if self.out.len() >= FLUSH_GATES * 2 * LABEL_BYTES {
            self.write_out();
        }
    }
}

impl<C: Channel> Builder<Garbler<C>> {
    /// Input wires the garbler knows the value of: fresh zero-labels, and the active labels
    /// (`zero ^ bit * delta`) sent to the evaluator.
    pub fn garbler_input<R: CryptoRng + ?Sized>(
        &mut self,
        bits: &[bool],
        rng: &mut R,
    ) -> io::Result<Word<u128>> {
        let g = self.backend_mut();
        let zeros = g.fresh_labels(bits.len(), rng);
        let mut bytes = Vec::with_capacity(bits.len() * LABEL_BYTES);
        for (z, &bit) in zeros.iter().zip(bits) {
            bytes.extend_from_slice(&(z ^ (mask(u128::from(bit)) & *g.delta)).to_le_bytes());
        }
        g.write_out();
        g.channel.send(&bytes)?;
        Ok(zeros.into_iter().map(Bit::Wire).collect())
    }

    /// Reveals `word` to the evaluator: sends the permute bit of every zero-label.
    pub fn reveal_to_evaluator(&mut self, word: &[Bit<u128>]) -> io::Result<()> {
        let bits = permute_bits(word);
        let g = self.backend_mut();
        g.write_out();
        g.channel.send(&bits)?;
        g.flush()
    }

    /// Learns `word`: receives the evaluator's permute bits and decodes them.
    pub fn reveal_to_garbler(&mut self, word: &[Bit<u128>]) -> io::Result<Vec<bool>> {
        let g = self.backend_mut();
        g.flush()?;
        receive_decoded(&mut g.channel, word)
    }
}
