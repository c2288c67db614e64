//! What the garbler and the evaluator share about labels: their size, permute bits, decoding,
//! the scheduled-circuit runner and the role macro. A sibling of the two roles, so they import
//! it rather than reaching up into the module face.

use std::io;

use crate::backend::Bit;
use crate::channel::Channel;
use crate::circuit::{Circuit, Schedule};

/// What the garbler and the evaluator share but for the role: a `Debug` showing the gate count
/// only (never a label or `delta`), the accessors, and the [`Backend`](crate::Backend) on
/// labels, with its scheduled-circuit runner named and documented by the role. A role supplies
/// `one` (its label of the constant true, which NOT adds) and `and_into` (a batch of AND gates).
macro_rules! label_role {
    ($role:ident, $(#[$doc:meta])* $run:ident) => {
        impl<C: Channel> std::fmt::Debug for $role<C> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!(stringify!($role), " {{ ands: {} }}"), self.ands)
            }
        }

        impl<C: Channel> $role<C> {
            /// AND gates processed so far.
            pub fn and_gates(&self) -> u64 {
                self.ands
            }

            /// The channel.
            pub fn channel_mut(&mut self) -> &mut C {
                &mut self.channel
            }

            $(#[$doc])*
            pub fn $run(
                &mut self,
                circuit: &Circuit,
                schedule: &Schedule,
                inputs: &[u128],
            ) -> Vec<u128> {
                let one = self.one();
                $crate::garble::labels::run_scheduled(circuit, schedule, inputs, one, |pairs, outputs| {
                    self.and_into(pairs, outputs)
                })
            }
        }

        impl<C: Channel> Backend for $role<C> {
            type Wire = u128;

            fn xor(&mut self, a: &u128, b: &u128) -> u128 {
                a ^ b
            }

            fn not(&mut self, a: &u128) -> u128 {
                a ^ self.one()
            }

            fn and(&mut self, a: &u128, b: &u128) -> u128 {
                // A lone AND (a ripple carry) reuses a buffer rather than allocating one.
                let mut single = std::mem::take(&mut self.single);
                self.and_into(&[(*a, *b)], &mut single);
                let out = single[0];
                self.single = single;
                out
            }

            fn and_many(&mut self, pairs: &[(u128, u128)]) -> Vec<u128> {
                let mut outputs = Vec::new();
                self.and_into(pairs, &mut outputs);
                outputs
            }

            fn and_many_into(&mut self, pairs: &[(u128, u128)], out: &mut Vec<u128>) {
                self.and_into(pairs, out);
            }

            fn run_compiled(
                &mut self,
                circuit: &Circuit,
                schedule: &Schedule,
                inputs: &[u128],
            ) -> Option<Vec<u128>> {
                Some(self.$run(circuit, schedule, inputs))
            }

            fn runs_compiled(&self) -> bool {
                true
            }
        }
    };
}
pub(super) use label_role;

/// Bytes of a label.
pub const LABEL_BYTES: usize = 16;

/// The permute bit of a label.
#[inline(always)]
pub(crate) fn lsb(x: u128) -> u128 {
    x & 1
}

/// The permute bits of `word`'s active labels (0 for constants): what a role sends to reveal it.
pub(crate) fn permute_bits(word: &[Bit<u128>]) -> Vec<u8> {
    word.iter()
        .map(|b| match b {
            Bit::Const(_) => 0,
            Bit::Wire(label) => lsb(*label) as u8,
        })
        .collect()
}

/// Learns `word`: receives the other role's permute bits from `channel` and decodes them
/// against the own labels.
pub(crate) fn receive_decoded<C: Channel>(
    channel: &mut C,
    word: &[Bit<u128>],
) -> io::Result<Vec<bool>> {
    let mut bits = vec![0u8; word.len()];
    channel.recv(&mut bits)?;
    Ok(word
        .iter()
        .zip(bits)
        .map(|(b, p)| match b {
            Bit::Const(v) => *v,
            Bit::Wire(label) => (p & 1) as u128 != lsb(*label),
        })
        .collect())
}

/// All ones when `bit` is 1, else zero: for branch-free selection.
#[inline(always)]
pub(crate) fn mask(bit: u128) -> u128 {
    bit.wrapping_neg()
}

/// Runs the gates of a scheduled circuit over its slots, given the labels of the input wires,
/// and returns the labels of the output wires: `one` is the role's label of the constant true
/// (see [`Schedule`]), `and_batch` its AND gates (one call per stage, writing the output labels). Shared by the garbler's and the
/// evaluator's fast paths so both walk gates in the same order.
pub(crate) fn run_scheduled(
    circuit: &Circuit,
    schedule: &Schedule,
    inputs: &[u128],
    one: u128,
    mut and_batch: impl FnMut(&[(u128, u128)], &mut Vec<u128>),
) -> Vec<u128> {
    assert_eq!(
        inputs.len(),
        circuit.inputs().iter().sum::<usize>(),
        "one label per input wire"
    );
    let mut labels = vec![0u128; schedule.slots()];
    labels[..inputs.len()].copy_from_slice(inputs);
    labels[inputs.len() + Schedule::ONE] = one;
    let (mut pairs, mut outputs) = (Vec::new(), Vec::new());
    for (free, ands) in schedule.stages() {
        for &[a, b, out] in free {
            labels[out as usize] = labels[a as usize] ^ labels[b as usize];
        }
        if ands.is_empty() {
            continue;
        }
        pairs.clear();
        pairs.extend(
            ands.iter()
                .map(|&[a, b, _]| (labels[a as usize], labels[b as usize])),
        );
        and_batch(&pairs, &mut outputs);
        for (&[_, _, out], &label) in ands.iter().zip(&outputs) {
            labels[out as usize] = label;
        }
    }
    schedule
        .output_slots()
        .iter()
        .map(|&s| labels[s as usize])
        .collect()
}
