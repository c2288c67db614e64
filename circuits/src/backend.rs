//! Circuits written once, run anywhere: a [`Backend`] executes gates as a circuit function issues
//! them, and the [`Builder`] in front of it folds public constants so that gates with a known
//! input cost nothing on any backend.
//!
//! Backends here: [`Plain`] evaluates in the clear (the reference), [`Counter`] only counts, and
//! [`Recorder`] writes the gates down as a [`Circuit`] (for Bristol export). The garbler and the
//! evaluator are backends too, so a circuit function never materialises its gates or tables:
//! each gate is executed, counted or garbled the moment it is built.

use std::collections::HashMap;
use std::sync::Arc;

use crate::circuit::{Circuit, CircuitError, Gate, GateCounts, Schedule};

/// Executes gates on wires of some representation.
pub trait Backend {
    /// A wire whose value is not a public constant (a bool, a label, a wire index, ...).
    type Wire: Clone;

    /// `a ^ b`.
    fn xor(&mut self, a: &Self::Wire, b: &Self::Wire) -> Self::Wire;

    /// `!a`.
    fn not(&mut self, a: &Self::Wire) -> Self::Wire;

    /// `a & b`.
    fn and(&mut self, a: &Self::Wire, b: &Self::Wire) -> Self::Wire;

    /// Many independent ANDs at once (no pair may depend on another's output), so that
    /// backends which hash per AND can batch the hashing.
    fn and_many(&mut self, pairs: &[(Self::Wire, Self::Wire)]) -> Vec<Self::Wire> {
        pairs.iter().map(|(a, b)| self.and(a, b)).collect()
    }

    /// [`Backend::and_many`] into a buffer the caller reuses (replacing its contents), which
    /// spares an allocation per batch on the garbling backends.
    fn and_many_into(&mut self, pairs: &[(Self::Wire, Self::Wire)], out: &mut Vec<Self::Wire>) {
        out.clear();
        out.extend(self.and_many(pairs));
    }

    /// Runs a compiled gate-list circuit on the wires of its inputs (all groups, in order),
    /// returning the wires of its outputs, when this backend has a faster path for gate lists
    /// than gate-by-gate building (the garbler and the evaluator do); `None` otherwise.
    fn run_compiled(
        &mut self,
        _circuit: &Circuit,
        _schedule: &Schedule,
        _inputs: &[Self::Wire],
    ) -> Option<Vec<Self::Wire>> {
        None
    }

    /// True when [`Backend::run_compiled`] is worth compiling gadgets for.
    fn runs_compiled(&self) -> bool {
        false
    }
}

/// A gadget compiled once into a scheduled gate list, with its output bits that are public
/// constants (kept constant for the gates downstream to fold).
type Compiled = Arc<(Circuit, Schedule, Vec<Option<bool>>)>;

/// A bit in a circuit: a public constant, or a wire of the backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bit<W> {
    /// Known to both parties; gates on it are folded away.
    Const(bool),
    /// A wire.
    Wire(W),
}

impl<W> Bit<W> {
    /// The constant, if this bit is one.
    pub fn as_const(&self) -> Option<bool> {
        match self {
            Bit::Const(v) => Some(*v),
            Bit::Wire(_) => None,
        }
    }
}

/// A word: bits, least significant first.
pub type Word<W> = Vec<Bit<W>>;

/// The two inputs of an AND gate.
pub type BitPair<W> = (Bit<W>, Bit<W>);

/// The front of every backend: constant folding, then the backend's gates.
#[derive(Debug)]
pub struct Builder<B: Backend> {
    backend: B,
    /// Reused buffers of AND batches: the live pairs and their outputs.
    live: Vec<(B::Wire, B::Wire)>,
    outputs: Vec<B::Wire>,
    /// Gadgets compiled so far, by name and shape.
    compiled: HashMap<String, Compiled>,
}

impl<B: Backend> Builder<B> {
    /// A builder over `backend`.
    pub fn new(backend: B) -> Self {
        Self {
            backend,
            live: Vec::new(),
            outputs: Vec::new(),
            compiled: HashMap::new(),
        }
    }

    /// Runs a gadget through its compiled gate list: on backends with a gate-list fast path
    /// (garbling, evaluating) and inputs that are all wires, `build` is recorded once per `key`
    /// (which must name the gadget and every parameter its gates depend on) and every call runs
    /// the scheduled list, batches and all, at gate-list speed; otherwise `None`, and the caller
    /// builds the gadget directly. The circuit is the same either way: recording folds the same
    /// constants as direct building, as every input is a wire. Both parties of a garbled
    /// session take the same path (it depends only on public facts).
    pub fn compiled(
        &mut self,
        key: impl FnOnce() -> String,
        inputs: &[&[Bit<B::Wire>]],
        build: impl FnOnce(&mut Builder<Recorder>, &[Word<u32>]) -> Vec<Word<u32>>,
    ) -> Option<Vec<Word<B::Wire>>> {
        if !self.backend.runs_compiled() {
            return None;
        }
        let mut wires = Vec::with_capacity(inputs.iter().map(|i| i.len()).sum());
        for input in inputs {
            for bit in input.iter() {
                match bit {
                    Bit::Wire(w) => wires.push(w.clone()),
                    Bit::Const(_) => return None,
                }
            }
        }
        let key = key();
        let compiled = match self.compiled.get(&key) {
            Some(c) => c.clone(),
            None => {
                let mut r = Builder::recorder();
                let words: Vec<Word<u32>> = inputs.iter().map(|i| r.input(i.len())).collect();
                let outputs = build(&mut r, &words);
                let constants = outputs.iter().flatten().map(Bit::as_const).collect();
                let circuit = r
                    .finish(&outputs)
                    .expect("a recorded gadget is well formed");
                let schedule = Schedule::new(&circuit);
                let c = Arc::new((circuit, schedule, constants));
                self.compiled.insert(key, c.clone());
                c
            }
        };
        let (circuit, schedule, constants) = &*compiled;
        let out = self.backend.run_compiled(circuit, schedule, &wires)?;
        let mut bits = out
            .into_iter()
            .zip(constants)
            .map(|(wire, constant)| match constant {
                Some(v) => Bit::Const(*v),
                None => Bit::Wire(wire),
            });
        Some(
            circuit
                .outputs()
                .iter()
                .map(|&width| bits.by_ref().take(width).collect())
                .collect(),
        )
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, mutably (for inputs and outputs, which are backend-specific).
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// Gives the backend back.
    pub fn into_backend(self) -> B {
        self.backend
    }

    /// `a ^ b`.
    pub fn xor(&mut self, a: &Bit<B::Wire>, b: &Bit<B::Wire>) -> Bit<B::Wire> {
        match (a, b) {
            (Bit::Const(x), Bit::Const(y)) => Bit::Const(x ^ y),
            (Bit::Const(false), w) | (w, Bit::Const(false)) => w.clone(),
            (Bit::Const(true), Bit::Wire(w)) | (Bit::Wire(w), Bit::Const(true)) => {
                Bit::Wire(self.backend.not(w))
            }
            (Bit::Wire(x), Bit::Wire(y)) => Bit::Wire(self.backend.xor(x, y)),
        }
    }

    /// `!a`.
    pub fn not(&mut self, a: &Bit<B::Wire>) -> Bit<B::Wire> {
        match a {
            Bit::Const(v) => Bit::Const(!v),
            Bit::Wire(w) => Bit::Wire(self.backend.not(w)),
        }
    }

    /// `a & b`.
    pub fn and(&mut self, a: &Bit<B::Wire>, b: &Bit<B::Wire>) -> Bit<B::Wire> {
        match (a, b) {
            (Bit::Const(false), _) | (_, Bit::Const(false)) => Bit::Const(false),
            (Bit::Const(true), w) | (w, Bit::Const(true)) => w.clone(),
            (Bit::Wire(x), Bit::Wire(y)) => Bit::Wire(self.backend.and(x, y)),
        }
    }

    /// `a | b` (one AND).
    pub fn or(&mut self, a: &Bit<B::Wire>, b: &Bit<B::Wire>) -> Bit<B::Wire> {
        let (na, nb) = (self.not(a), self.not(b));
        let both = self.and(&na, &nb);
        self.not(&both)
    }

    /// Independent ANDs, constants folded and the rest batched.
    pub fn and_many(&mut self, pairs: &[BitPair<B::Wire>]) -> Vec<Bit<B::Wire>> {
        let mut out = Vec::with_capacity(pairs.len());
        self.and_many_into(pairs, &mut out);
        out
    }

    /// [`Self::and_many`] appending to `out` (no allocation once the buffers have grown).
    pub fn and_many_into(&mut self, pairs: &[BitPair<B::Wire>], out: &mut Vec<Bit<B::Wire>>) {
        let mut live = std::mem::take(&mut self.live);
        let mut outputs = std::mem::take(&mut self.outputs);
        live.clear();
        for (a, b) in pairs {
            if let (Bit::Wire(x), Bit::Wire(y)) = (a, b) {
                live.push((x.clone(), y.clone()));
            }
        }
        if live.len() == pairs.len() {
            self.backend.and_many_into(&live, &mut outputs);
            out.extend(outputs.drain(..).map(Bit::Wire));
        } else {
            if !live.is_empty() {
                self.backend.and_many_into(&live, &mut outputs);
            }
            let mut computed = outputs.drain(..);
            for (a, b) in pairs {
                out.push(match (a, b) {
                    (Bit::Wire(_), Bit::Wire(_)) => {
                        Bit::Wire(computed.next().expect("one output per live pair"))
                    }
                    _ => self.and(a, b),
                });
            }
        }
        self.live = live;
        self.outputs = outputs;
    }
}

impl<B: Backend> Builder<B> {
    /// Runs a gate-list circuit on this backend: `inputs` per input group, outputs per output
    /// group. Consecutive AND gates that do not depend on each other are handed to the backend
    /// as one batch.
    pub fn run_circuit(
        &mut self,
        circuit: &Circuit,
        inputs: &[Word<B::Wire>],
    ) -> Vec<Word<B::Wire>> {
        assert_eq!(
            inputs.len(),
            circuit.inputs().len(),
            "one word per input group"
        );
        let mut wires: Vec<Option<Bit<B::Wire>>> = vec![None; circuit.wires()];
        for (k, word) in inputs.iter().enumerate() {
            assert_eq!(word.len(), circuit.inputs()[k], "input group {k} width");
            for (w, bit) in circuit.input_wires(k).zip(word) {
                wires[w] = Some(bit.clone());
            }
        }
        let mut pending: Vec<(u32, u32, u32)> = Vec::new();
        let mut is_pending = vec![false; circuit.wires()];
        let get = |wires: &[Option<Bit<B::Wire>>], w: u32| -> Bit<B::Wire> {
            wires[w as usize]
                .clone()
                .expect("circuit checked: wire set before use")
        };
        let flush = |b: &mut Self,
                     wires: &mut Vec<Option<Bit<B::Wire>>>,
                     pending: &mut Vec<(u32, u32, u32)>,
                     is_pending: &mut Vec<bool>| {
            let pairs: Vec<_> = pending
                .iter()
                .map(|&(a, c, _)| (get(wires, a), get(wires, c)))
                .collect();
            for (&(_, _, out), bit) in pending.iter().zip(b.and_many(&pairs)) {
                wires[out as usize] = Some(bit);
                is_pending[out as usize] = false;
            }
            pending.clear();
        };
        for gate in circuit.gates() {
            if gate.inputs().any(|w| is_pending[w as usize]) {
                flush(self, &mut wires, &mut pending, &mut is_pending);
            }
            match *gate {
                Gate::And { a, b: c, out } => {
                    pending.push((a, c, out));
                    is_pending[out as usize] = true;
                }
                Gate::Xor { a, b: c, out } => {
                    let v = self.xor(&get(&wires, a), &get(&wires, c));
                    wires[out as usize] = Some(v);
                }
                Gate::Not { a, out } => {
                    let v = self.not(&get(&wires, a));
                    wires[out as usize] = Some(v);
                }
                Gate::Const { value, out } => wires[out as usize] = Some(Bit::Const(value)),
                Gate::Copy { a, out } => wires[out as usize] = Some(get(&wires, a)),
            }
        }
        flush(self, &mut wires, &mut pending, &mut is_pending);
        (0..circuit.outputs().len())
            .map(|k| {
                circuit
                    .output_wires(k)
                    .map(|w| get(&wires, w as u32))
                    .collect()
            })
            .collect()
    }
}

/// Plaintext evaluation: wires are bools.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Backend for Plain {
    type Wire = bool;

    fn xor(&mut self, a: &bool, b: &bool) -> bool {
        a ^ b
    }

    fn not(&mut self, a: &bool) -> bool {
        !a
    }

    fn and(&mut self, a: &bool, b: &bool) -> bool {
        a & b
    }
}

impl Builder<Plain> {
    /// A plaintext builder.
    pub fn plain() -> Self {
        Self::new(Plain)
    }

    /// The low `width` bits of `x` as input wires.
    pub fn input_u128(&mut self, x: u128, width: usize) -> Word<bool> {
        (0..width)
            .map(|i| Bit::Wire(i < 128 && (x >> i) & 1 == 1))
            .collect()
    }

    /// The value of a word (at most 128 bits).
    pub fn value(word: &[Bit<bool>]) -> u128 {
        word.iter().enumerate().fold(0, |acc, (i, b)| {
            let set = match b {
                Bit::Const(v) | Bit::Wire(v) => *v,
            };
            acc | (u128::from(set) << i)
        })
    }
}

/// Gate counting: wires carry nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counter {
    /// The counts so far.
    pub counts: GateCounts,
}

impl Backend for Counter {
    type Wire = ();

    fn xor(&mut self, _: &(), _: &()) {
        self.counts.xor += 1;
    }

    fn not(&mut self, _: &()) {
        self.counts.not += 1;
    }

    fn and(&mut self, _: &(), _: &()) {
        self.counts.and += 1;
    }

    fn and_many(&mut self, pairs: &[((), ())]) -> Vec<()> {
        self.counts.and += pairs.len() as u64;
        vec![(); pairs.len()]
    }
}

impl Builder<Counter> {
    /// A counting builder.
    pub fn counter() -> Self {
        Self::new(Counter::default())
    }

    /// `width` input wires.
    pub fn input(&mut self, width: usize) -> Word<()> {
        vec![Bit::Wire(()); width]
    }

    /// The counts so far.
    pub fn counts(&self) -> GateCounts {
        self.backend().counts
    }
}

/// Writes gates down as a [`Circuit`]: wires are wire numbers.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    wires: u32,
    inputs: Vec<usize>,
    gates: Vec<Gate>,
}

impl Backend for Recorder {
    type Wire = u32;

    fn xor(&mut self, a: &u32, b: &u32) -> u32 {
        let out = self.fresh();
        self.gates.push(Gate::Xor { a: *a, b: *b, out });
        out
    }

    fn not(&mut self, a: &u32) -> u32 {
        let out = self.fresh();
        self.gates.push(Gate::Not { a: *a, out });
        out
    }

    fn and(&mut self, a: &u32, b: &u32) -> u32 {
        let out = self.fresh();
        self.gates.push(Gate::And { a: *a, b: *b, out });
        out
    }
}

impl Recorder {
    fn fresh(&mut self) -> u32 {
        let w = self.wires;
        self.wires += 1;
        w
    }
}

impl Builder<Recorder> {
    /// A recording builder.
    pub fn recorder() -> Self {
        Self::new(Recorder::default())
    }

    /// An input group of `width` wires; all inputs must come before the first gate.
    pub fn input(&mut self, width: usize) -> Word<u32> {
        let r = self.backend_mut();
        assert!(r.gates.is_empty(), "inputs come before gates");
        r.inputs.push(width);
        (0..width).map(|_| Bit::Wire(r.fresh())).collect()
    }

    /// The circuit with `outputs` as its output groups (copied onto the last wires, as Bristol
    /// Fashion wants them).
    pub fn finish(self, outputs: &[Word<u32>]) -> Result<Circuit, CircuitError> {
        let mut r = self.into_backend();
        for word in outputs {
            for bit in word {
                let out = r.fresh();
                r.gates.push(match bit {
                    Bit::Const(value) => Gate::Const { value: *value, out },
                    Bit::Wire(a) => Gate::Copy { a: *a, out },
                });
            }
        }
        Circuit::new(
            r.wires as usize,
            r.inputs,
            outputs.iter().map(Vec::len).collect(),
            r.gates,
        )
    }
}
