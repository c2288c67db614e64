//! A two-party garbled-circuit session: the garbler and the evaluator, each over its end of a
//! [`Channel`], run the same circuit functions on their [`Builder`]s.
//!
//! - Inputs from either party: the garbler's go over the channel as active labels; the
//!   evaluator's through correlated OT ([`crate::ot`]) with the garbler's offset.
//! - Outputs revealed to the evaluator, to the garbler, or (by construction in the circuit) masked
//!   by the other party's random input: add or XOR a random word input by one party, and reveal
//!   the result to the other, so that neither learns the value.
//! - Wires live as long as the session: a word computed by one circuit (a Cholesky factor in a
//!   setup phase) is used by later circuits without being input again.
//!
//! Both parties must issue the same sequence of inputs, gates and reveals; the garbler side is
//! [`GarblerSession`], the evaluator side [`EvaluatorSession`].

use std::io;

use rand::CryptoRng;
use zeroize::Zeroizing;

use crate::backend::{Bit, Builder, Word};
use crate::channel::Channel;
use crate::garble::{Evaluator, Garbler};
use crate::ot::{CotReceiver, CotSender};

/// The garbler's side of a session.
#[derive(Debug)]
pub struct GarblerSession<C: Channel> {
    builder: Builder<Garbler<C>>,
    ot: CotSender,
}

impl<C: Channel> GarblerSession<C> {
    /// Starts a session: draws the offset and runs the base OTs.
    pub fn new<R: CryptoRng + ?Sized>(mut channel: C, rng: &mut R) -> io::Result<Self> {
        // The offset lives on in wiped memory only (the garbler's and the OT sender's); this
        // copy is wiped before it goes out of scope, on error too.
        let delta =
            Zeroizing::new((u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64())) | 1);
        let ot = CotSender::setup(&mut channel, *delta, rng)?;
        Ok(Self {
            builder: Builder::new(Garbler::with_delta(channel, *delta)),
            ot,
        })
    }

    /// The builder to run circuit functions on.
    pub fn builder(&mut self) -> &mut Builder<Garbler<C>> {
        &mut self.builder
    }

    /// An input the garbler knows.
    pub fn garbler_input<R: CryptoRng + ?Sized>(
        &mut self,
        bits: &[bool],
        rng: &mut R,
    ) -> io::Result<Word<u128>> {
        self.builder.garbler_input(bits, rng)
    }

    /// An input the evaluator knows (`width` bits), through oblivious transfer.
    pub fn evaluator_input(&mut self, width: usize) -> io::Result<Word<u128>> {
        let g = self.builder.backend_mut();
        g.flush()?;
        let zeros = self.ot.extend(g.channel_mut(), width)?;
        Ok(zeros.into_iter().map(Bit::Wire).collect())
    }

    /// Reveals `word` to the evaluator.
    pub fn reveal_to_evaluator(&mut self, word: &[Bit<u128>]) -> io::Result<()> {
        self.builder.reveal_to_evaluator(word)
    }

    /// Learns `word`.
    pub fn reveal_to_garbler(&mut self, word: &[Bit<u128>]) -> io::Result<Vec<bool>> {
        self.builder.reveal_to_garbler(word)
    }

    /// AND gates garbled so far.
    pub fn and_gates(&self) -> u64 {
        self.builder.backend().and_gates()
    }

    /// The channel, every pending table flushed first: for messages between circuits.
    pub fn channel(&mut self) -> io::Result<&mut C> {
        let g = self.builder.backend_mut();
        g.flush()?;
        Ok(g.channel_mut())
    }

    /// Ends the session: flushes and returns the channel.
    pub fn finish(self) -> io::Result<C> {
        self.builder.into_backend().finish()
    }
}

/// The evaluator's side of a session.
#[derive(Debug)]
pub struct EvaluatorSession<C: Channel> {
    builder: Builder<Evaluator<C>>,
    ot: CotReceiver,
}

impl<C: Channel> EvaluatorSession<C> {
    /// Starts a session: runs the base OTs.
    pub fn new<R: CryptoRng + ?Sized>(mut channel: C, rng: &mut R) -> io::Result<Self> {
        let ot = CotReceiver::setup(&mut channel, rng)?;
        Ok(Self {
            builder: Builder::new(Evaluator::new(channel)),
            ot,
        })
    }

    /// The builder to run circuit functions on.
    pub fn builder(&mut self) -> &mut Builder<Evaluator<C>> {
        &mut self.builder
    }

    /// An input the garbler knows (`width` bits).
    pub fn garbler_input(&mut self, width: usize) -> io::Result<Word<u128>> {
        self.builder.garbler_input(width)
    }

    /// An input the evaluator knows, through oblivious transfer.
    pub fn evaluator_input(&mut self, bits: &[bool]) -> io::Result<Word<u128>> {
        let e = self.builder.backend_mut();
        e.check()?;
        let labels = self.ot.extend(e.channel_mut(), bits)?;
        Ok(labels.into_iter().map(Bit::Wire).collect())
    }

    /// Learns `word`.
    pub fn reveal_to_evaluator(&mut self, word: &[Bit<u128>]) -> io::Result<Vec<bool>> {
        self.builder.reveal_to_evaluator(word)
    }

    /// Reveals `word` to the garbler.
    pub fn reveal_to_garbler(&mut self, word: &[Bit<u128>]) -> io::Result<()> {
        self.builder.reveal_to_garbler(word)
    }

    /// AND gates evaluated so far.
    pub fn and_gates(&self) -> u64 {
        self.builder.backend().and_gates()
    }

    /// The channel, after reporting any error met while reading tables: for messages between
    /// circuits.
    pub fn channel(&mut self) -> io::Result<&mut C> {
        let e = self.builder.backend_mut();
        e.check()?;
        Ok(e.channel_mut())
    }

    /// Ends the session and returns the channel.
    pub fn finish(self) -> io::Result<C> {
        self.builder.into_backend().finish()
    }
}
