//! Boolean circuits as gate lists in topological order, with plaintext evaluation.
//!
//! Wires are numbered; the first wires are the inputs, group after group, and the last wires
//! are the outputs (the Bristol Fashion convention of the reference circuits): bit `j` of an
//! input or output value sits on its group's `j`-th wire, least significant bit first. Every
//! wire other than an input is written by exactly one gate, before any gate reads it.

use thiserror::Error;

/// One gate. XOR, NOT and constants are free in garbling (free-XOR); AND costs two ciphertexts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gate {
    /// `out = a ^ b`.
    Xor {
        /// First input wire.
        a: u32,
        /// Second input wire.
        b: u32,
        /// Output wire.
        out: u32,
    },
    /// `out = a & b`.
    And {
        /// First input wire.
        a: u32,
        /// Second input wire.
        b: u32,
        /// Output wire.
        out: u32,
    },
    /// `out = !a`.
    Not {
        /// Input wire.
        a: u32,
        /// Output wire.
        out: u32,
    },
    /// `out = value` (Bristol EQ with a literal).
    Const {
        /// The constant.
        value: bool,
        /// Output wire.
        out: u32,
    },
    /// `out = a` (Bristol EQW).
    Copy {
        /// Input wire.
        a: u32,
        /// Output wire.
        out: u32,
    },
}

impl Gate {
    /// The wire this gate writes.
    pub fn output(&self) -> u32 {
        match *self {
            Gate::Xor { out, .. }
            | Gate::And { out, .. }
            | Gate::Not { out, .. }
            | Gate::Const { out, .. }
            | Gate::Copy { out, .. } => out,
        }
    }

    /// The wires this gate reads.
    pub fn inputs(&self) -> impl Iterator<Item = u32> {
        let (first, second) = match *self {
            Gate::Xor { a, b, .. } | Gate::And { a, b, .. } => (Some(a), Some(b)),
            Gate::Not { a, .. } | Gate::Copy { a, .. } => (Some(a), None),
            Gate::Const { .. } => (None, None),
        };
        first.into_iter().chain(second)
    }
}

/// Problems with a circuit's structure.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CircuitError {
    /// A gate refers to a wire beyond the circuit's wire count.
    #[error("gate {gate} refers to wire {wire}, but the circuit has {wires} wires")]
    WireOutOfRange {
        /// 0-based gate index.
        gate: usize,
        /// The wire.
        wire: u32,
        /// Wire count.
        wires: usize,
    },
    /// A gate reads a wire no earlier gate or input has set.
    #[error("gate {gate} reads wire {wire} before anything writes it")]
    ReadBeforeWrite {
        /// 0-based gate index.
        gate: usize,
        /// The wire.
        wire: u32,
    },
    /// Two gates (or an input and a gate) write the same wire.
    #[error("gate {gate} writes wire {wire}, which is already set")]
    Rewritten {
        /// 0-based gate index.
        gate: usize,
        /// The wire.
        wire: u32,
    },
    /// Input and output groups do not fit the wires.
    #[error("{what}: groups of {total} wires do not fit a circuit of {wires} wires")]
    Groups {
        /// Inputs or outputs.
        what: &'static str,
        /// Wires the groups need.
        total: usize,
        /// Wire count.
        wires: usize,
    },
    /// An output wire is never set.
    #[error("output wire {wire} is never set")]
    UnsetOutput {
        /// The wire.
        wire: u32,
    },
    /// Evaluation got the wrong inputs.
    #[error("expected {expected} input groups of sizes {sizes:?}, got {got:?}")]
    Inputs {
        /// Number of groups expected.
        expected: usize,
        /// Their sizes.
        sizes: Vec<usize>,
        /// Sizes given.
        got: Vec<usize>,
    },
}

/// Gate counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GateCounts {
    /// AND gates (the ones garbling pays for).
    pub and: u64,
    /// XOR gates.
    pub xor: u64,
    /// NOT gates.
    pub not: u64,
    /// Constants and copies.
    pub other: u64,
}

impl GateCounts {
    /// All gates.
    pub fn total(&self) -> u64 {
        self.and + self.xor + self.not + self.other
    }
}

/// A checked circuit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circuit {
    wires: usize,
    inputs: Vec<usize>,
    outputs: Vec<usize>,
    gates: Vec<Gate>,
}

impl Circuit {
    /// Checks and wraps a gate list: wires in range, inputs first, every wire written once
    /// before it is read, outputs set.
    pub fn new(
        wires: usize,
        inputs: Vec<usize>,
        outputs: Vec<usize>,
        gates: Vec<Gate>,
    ) -> Result<Self, CircuitError> {
        let input_wires: usize = inputs.iter().sum();
        let output_wires: usize = outputs.iter().sum();
        if input_wires > wires {
            return Err(CircuitError::Groups {
                what: "inputs",
                total: input_wires,
                wires,
            });
        }
        if output_wires > wires {
            return Err(CircuitError::Groups {
                what: "outputs",
                total: output_wires,
                wires,
            });
        }
        let mut set = vec![false; wires];
        set[..input_wires].iter_mut().for_each(|s| *s = true);
        for (index, gate) in gates.iter().enumerate() {
            for wire in gate.inputs().chain(std::iter::once(gate.output())) {
                if wire as usize >= wires {
                    return Err(CircuitError::WireOutOfRange {
                        gate: index,
                        wire,
                        wires,
                    });
                }
            }
            if let Some(wire) = gate.inputs().find(|&w| !set[w as usize]) {
                return Err(CircuitError::ReadBeforeWrite { gate: index, wire });
            }
            let out = gate.output();
            if set[out as usize] {
                return Err(CircuitError::Rewritten {
                    gate: index,
                    wire: out,
                });
            }
            set[out as usize] = true;
        }
        if let Some(wire) = (wires - output_wires..wires).find(|&w| !set[w]) {
            return Err(CircuitError::UnsetOutput { wire: wire as u32 });
        }
        Ok(Self {
            wires,
            inputs,
            outputs,
            gates,
        })
    }

    /// Number of wires.
    pub fn wires(&self) -> usize {
        self.wires
    }

    /// Sizes of the input groups.
    pub fn inputs(&self) -> &[usize] {
        &self.inputs
    }

    /// Sizes of the output groups.
    pub fn outputs(&self) -> &[usize] {
        &self.outputs
    }

    /// The gates, in order.
    pub fn gates(&self) -> &[Gate] {
        &self.gates
    }

    /// The wires of output group `k`.
    pub fn output_wires(&self, k: usize) -> std::ops::Range<usize> {
        let total: usize = self.outputs.iter().sum();
        let start = self.wires - total + self.outputs[..k].iter().sum::<usize>();
        start..start + self.outputs[k]
    }

    /// The wires of input group `k`.
    pub fn input_wires(&self, k: usize) -> std::ops::Range<usize> {
        let start: usize = self.inputs[..k].iter().sum();
        start..start + self.inputs[k]
    }

    /// Gate counts by kind.
    pub fn counts(&self) -> GateCounts {
        let mut c = GateCounts::default();
        for g in &self.gates {
            match g {
                Gate::And { .. } => c.and += 1,
                Gate::Xor { .. } => c.xor += 1,
                Gate::Not { .. } => c.not += 1,
                Gate::Const { .. } | Gate::Copy { .. } => c.other += 1,
            }
        }
        c
    }

    /// Evaluates in the clear: one bit vector per input group, one per output group.
    pub fn evaluate(&self, inputs: &[Vec<bool>]) -> Result<Vec<Vec<bool>>, CircuitError> {
        let got: Vec<usize> = inputs.iter().map(Vec::len).collect();
        if got != self.inputs {
            return Err(CircuitError::Inputs {
                expected: self.inputs.len(),
                sizes: self.inputs.clone(),
                got,
            });
        }
        let mut value = vec![false; self.wires];
        let mut next = 0;
        for group in inputs {
            value[next..next + group.len()].copy_from_slice(group);
            next += group.len();
        }
        for g in &self.gates {
            match *g {
                Gate::Xor { a, b, out } => {
                    value[out as usize] = value[a as usize] ^ value[b as usize]
                }
                Gate::And { a, b, out } => {
                    value[out as usize] = value[a as usize] & value[b as usize]
                }
                Gate::Not { a, out } => value[out as usize] = !value[a as usize],
                Gate::Const { value: v, out } => value[out as usize] = v,
                Gate::Copy { a, out } => value[out as usize] = value[a as usize],
            }
        }
        Ok((0..self.outputs.len())
            .map(|k| value[self.output_wires(k)].to_vec())
            .collect())
    }
}

/// The bits of a little-endian byte string, least significant first, `width` of them.
pub fn bits_of(bytes_le: &[u8], width: usize) -> Vec<bool> {
    (0..width)
        .map(|i| bytes_le.get(i / 8).is_some_and(|b| (b >> (i % 8)) & 1 == 1))
        .collect()
}

/// Little-endian bytes of a bit vector (least significant bit first).
pub fn bytes_of(bits: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; bits.len().div_ceil(8)];
    for (i, &b) in bits.iter().enumerate() {
        if b {
            out[i / 8] |= 1 << (i % 8);
        }
    }
    out
}

/// An order for executing a circuit that exposes independent AND gates: stage `s` holds the
/// free gates (XOR, NOT, constants, copies) of AND-depth `s`, in circuit order, then every AND
/// gate of AND-depth `s + 1`, which depend only on earlier stages and so form one batch.
///
/// Every free gate becomes an XOR `[a, b, out]` of slots, so running a stage is a tight loop
/// with no dispatch: two constant slots follow the inputs, [`Schedule::ZERO`] holding the label
/// of false and [`Schedule::ONE`] the label of true (for the garbler the offset `delta`, for the
/// evaluator 0; in plaintext `true`). Then NOT a = a ^ ONE, a constant is ZERO ^ ZERO or
/// ONE ^ ZERO and a copy is a ^ ZERO.
///
/// Gates are compiled onto slots rather than wires: a wire's slot is reused once its last reader
/// has run, so executing needs only as many labels as are live at once (a few thousand for the
/// reference multiplier instead of 28,000), which keeps them in cache. Inputs occupy the first
/// slots in order, then the two constant slots; [`Schedule::output_slots`] says where the outputs
/// end up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Per stage: the end of its free gates in `free`, and of its ANDs in `ands`.
    bounds: Vec<(u32, u32)>,
    free: Vec<[u32; 3]>,
    ands: Vec<[u32; 3]>,
    slots: usize,
    outputs: Vec<u32>,
}

impl Schedule {
    /// Offset from the number of input wires of the slot holding the label of false.
    pub const ZERO: usize = 0;
    /// Offset from the number of input wires of the slot holding the label of true.
    pub const ONE: usize = 1;

    /// The schedule of `circuit`.
    pub fn new(circuit: &Circuit) -> Self {
        // Stages by AND-depth, as gate indices in circuit order.
        let mut depth = vec![0u32; circuit.wires()];
        let mut stages: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
        for (index, gate) in circuit.gates().iter().enumerate() {
            let inputs = gate.inputs().map(|w| depth[w as usize]).max().unwrap_or(0);
            let is_and = matches!(gate, Gate::And { .. });
            let d = inputs + u32::from(is_and);
            depth[gate.output() as usize] = d;
            let stage = if is_and { d - 1 } else { d } as usize;
            if stages.len() <= stage {
                stages.resize(stage + 1, (Vec::new(), Vec::new()));
            }
            let slot = if is_and {
                &mut stages[stage].1
            } else {
                &mut stages[stage].0
            };
            slot.push(index as u32);
        }
        // Execution order: position of each gate; a wire's last use is its last reader's position
        // (outputs are used "at the end").
        let gates = circuit.gates();
        let order: Vec<u32> = stages
            .iter()
            .flat_map(|(f, a)| f.iter().chain(a))
            .copied()
            .collect();
        let end = order.len() as u32;
        let mut last_use = vec![0u32; circuit.wires()];
        for (position, &g) in order.iter().enumerate() {
            for w in gates[g as usize].inputs() {
                last_use[w as usize] = position as u32;
            }
        }
        let outputs_start = circuit.wires() - circuit.outputs().iter().sum::<usize>();
        last_use[outputs_start..].iter_mut().for_each(|u| *u = end);
        // Slot assignment: inputs first, then reuse freed slots.
        let inputs: usize = circuit.inputs().iter().sum();
        let mut slot_of = vec![u32::MAX; circuit.wires()];
        for (w, s) in slot_of.iter_mut().enumerate().take(inputs) {
            *s = w as u32;
        }
        let (zero, one) = ((inputs + Self::ZERO) as u32, (inputs + Self::ONE) as u32);
        let mut slots = inputs as u32 + 2;
        let mut free_slots: Vec<u32> = Vec::new();
        let mut allocate = |free_slots: &mut Vec<u32>| {
            free_slots.pop().unwrap_or_else(|| {
                slots += 1;
                slots - 1
            })
        };
        let mut schedule = Self {
            bounds: Vec::with_capacity(stages.len()),
            free: Vec::new(),
            ands: Vec::new(),
            slots: 0,
            outputs: Vec::new(),
        };
        let mut position = 0u32;
        // Frees the slots of `gate`'s inputs that are read for the last time at `position`.
        let release = |gate: &Gate, position: u32, slot_of: &[u32], free_slots: &mut Vec<u32>| {
            let mut seen = [u32::MAX; 2];
            for (k, w) in gate.inputs().enumerate() {
                if last_use[w as usize] == position && !seen.contains(&w) {
                    free_slots.push(slot_of[w as usize]);
                }
                seen[k] = w;
            }
        };
        for (free, ands) in &stages {
            for &g in free {
                let gate = &gates[g as usize];
                let (a, b) = match *gate {
                    Gate::Xor { a, b, .. } => (slot_of[a as usize], slot_of[b as usize]),
                    Gate::Not { a, .. } => (slot_of[a as usize], one),
                    Gate::Const { value, .. } => (if value { one } else { zero }, zero),
                    Gate::Copy { a, .. } => (slot_of[a as usize], zero),
                    Gate::And { .. } => unreachable!("free gates only"),
                };
                release(gate, position, &slot_of, &mut free_slots);
                let out = allocate(&mut free_slots);
                slot_of[gate.output() as usize] = out;
                schedule.free.push([a, b, out]);
                position += 1;
            }
            // The batch reads all its inputs before writing, so inputs freed here may be reused
            // by the batch's outputs.
            let reads: Vec<[u32; 2]> = ands
                .iter()
                .map(|&g| match gates[g as usize] {
                    Gate::And { a, b, .. } => [slot_of[a as usize], slot_of[b as usize]],
                    _ => unreachable!("AND gates only"),
                })
                .collect();
            for (k, &g) in ands.iter().enumerate() {
                release(
                    &gates[g as usize],
                    position + k as u32,
                    &slot_of,
                    &mut free_slots,
                );
            }
            for (&g, [a, b]) in ands.iter().zip(reads) {
                let out = allocate(&mut free_slots);
                slot_of[gates[g as usize].output() as usize] = out;
                schedule.ands.push([a, b, out]);
            }
            position += ands.len() as u32;
            schedule
                .bounds
                .push((schedule.free.len() as u32, schedule.ands.len() as u32));
        }
        schedule.slots = slots as usize;
        schedule.outputs = (outputs_start..circuit.wires())
            .map(|w| slot_of[w])
            .collect();
        schedule
    }

    /// The stages: each one's free gates as XORs `[a, b, out]`, then its independent AND gates
    /// `[a, b, out]`, all on slots.
    pub fn stages(&self) -> impl Iterator<Item = (&[[u32; 3]], &[[u32; 3]])> {
        let mut previous = (0usize, 0usize);
        self.bounds.iter().map(move |&(f, a)| {
            let (f, a) = (f as usize, a as usize);
            let stage = (&self.free[previous.0..f], &self.ands[previous.1..a]);
            previous = (f, a);
            stage
        })
    }

    /// Slots needed (the most labels live at once, inputs and the two constants included).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The slot of each output wire, in output order.
    pub fn output_slots(&self) -> &[u32] {
        &self.outputs
    }

    /// AND-depth of the circuit.
    pub fn and_depth(&self) -> usize {
        self.stages().filter(|(_, ands)| !ands.is_empty()).count()
    }
}
