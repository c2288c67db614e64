//! `privlogit circuit run`: run a Bristol Fashion circuit in plaintext or garbled.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use num_bigint::BigUint;
use privlogit_circuits::backend::Word;
use privlogit_circuits::bristol;
use privlogit_circuits::channel::{Channel, MemoryChannel};
use privlogit_circuits::circuit::Circuit;
use privlogit_circuits::session::{EvaluatorSession, GarblerSession};

use crate::outcome::Outcome;

/// Arguments of `privlogit circuit`.
#[derive(Debug, Args)]
pub struct CircuitArgs {
    #[command(subcommand)]
    what: CircuitCommand,
}

#[derive(Debug, Subcommand)]
enum CircuitCommand {
    /// Evaluate a Bristol Fashion circuit; print each output group as a hex integer, one per line.
    Run(RunArgs),
}

/// Arguments of `privlogit circuit run`.
#[derive(Debug, Args)]
struct RunArgs {
    /// The Bristol Fashion file.
    file: PathBuf,
    /// One value per input group, in hex (`0x` optional); bit j of the value goes on the
    /// group's j-th wire.
    #[arg(long = "input", value_name = "HEX")]
    inputs: Vec<String>,
    /// Run a full garbled two-party execution (garbler and evaluator on two threads over an
    /// in-memory channel): the first input group is the garbler's, the others reach the
    /// evaluator's side by oblivious transfer, and the evaluator learns the outputs.
    #[arg(long)]
    garbled: bool,
    /// Gate counts, time, AND gates per second and bytes on standard error.
    #[arg(long)]
    stats: bool,
}

pub fn run(args: CircuitArgs) -> Result<Outcome> {
    let CircuitCommand::Run(args) = args.what;
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let circuit =
        bristol::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    if args.inputs.len() != circuit.inputs().len() {
        bail!(
            "{} has {} input groups (of {:?} bits); give one --input per group",
            args.file.display(),
            circuit.inputs().len(),
            circuit.inputs()
        );
    }
    let inputs = args
        .inputs
        .iter()
        .zip(circuit.inputs())
        .enumerate()
        .map(|(k, (hex, &width))| {
            parse_hex(hex, width).with_context(|| format!("--input {} (group {k})", hex))
        })
        .collect::<Result<Vec<_>>>()?;

    let start = Instant::now();
    let (outputs, bytes) = if args.garbled {
        garbled(&circuit, &inputs)?
    } else {
        (circuit.evaluate(&inputs)?, None)
    };
    let elapsed = start.elapsed().as_secs_f64();
    for bits in &outputs {
        println!("0x{}", to_hex(bits));
    }
    if args.stats {
        let c = circuit.counts();
        eprintln!(
            "gates: {} AND, {} XOR, {} NOT, {} other; {} wires",
            c.and,
            c.xor,
            c.not,
            c.other,
            circuit.wires()
        );
        let mode = if args.garbled {
            "garbled (two parties)"
        } else {
            "plaintext"
        };
        eprintln!(
            "{mode}: {:.3} ms, {:.1} M AND gates/s",
            elapsed * 1e3,
            c.and as f64 / elapsed / 1e6
        );
        if let Some((garbler, evaluator)) = bytes {
            eprintln!("bytes sent: garbler {garbler}, evaluator {evaluator}");
        }
    }
    Ok(Outcome::Success)
}

type Traffic = Option<(u64, u64)>;

/// Both roles on two threads; the garbler owns input group 0.
fn garbled(circuit: &Circuit, inputs: &[Vec<bool>]) -> Result<(Vec<Vec<bool>>, Traffic)> {
    let (gc, ec) = MemoryChannel::pair();
    let garbler_circuit = circuit.clone();
    let garbler_bits = inputs[0].clone();
    let evaluator_widths: Vec<usize> = circuit.inputs()[1..].to_vec();
    let garbler = std::thread::spawn(move || -> std::io::Result<u64> {
        let mut rng = rand::rng();
        let mut s = GarblerSession::new(gc, &mut rng)?;
        let mut words: Vec<Word<u128>> = vec![s.garbler_input(&garbler_bits, &mut rng)?];
        for &w in &evaluator_widths {
            words.push(s.evaluator_input(w)?);
        }
        let outputs = s.builder().run_circuit(&garbler_circuit, &words);
        for o in &outputs {
            s.reveal_to_evaluator(o)?;
        }
        Ok(s.finish()?.bytes_sent())
    });
    let mut rng = rand::rng();
    let mut s = EvaluatorSession::new(ec, &mut rng)?;
    let mut words: Vec<Word<u128>> = vec![s.garbler_input(inputs[0].len())?];
    for bits in &inputs[1..] {
        words.push(s.evaluator_input(bits)?);
    }
    let outputs = s.builder().run_circuit(circuit, &words);
    let values = outputs
        .iter()
        .map(|o| s.reveal_to_evaluator(o))
        .collect::<std::io::Result<Vec<_>>>()?;
    let evaluator_sent = s.finish()?.bytes_sent();
    let garbler_sent = garbler
        .join()
        .map_err(|_| anyhow::anyhow!("the garbler thread panicked"))??;
    Ok((values, Some((garbler_sent, evaluator_sent))))
}

/// The low `width` bits of a hex number, least significant first; refuses values that do not
/// fit.
fn parse_hex(text: &str, width: usize) -> Result<Vec<bool>> {
    let digits = text
        .trim()
        .trim_start_matches("0x")
        .trim_start_matches("0X");
    let value = BigUint::parse_bytes(digits.as_bytes(), 16)
        .with_context(|| format!("{text:?} is not a hexadecimal number"))?;
    if value.bits() > width as u64 {
        bail!("{text} needs {} bits, the group has {width}", value.bits());
    }
    Ok((0..width as u64).map(|i| value.bit(i)).collect())
}

/// Hex digits of the number whose bits (least significant first) are `bits`.
fn to_hex(bits: &[bool]) -> String {
    let mut value = BigUint::ZERO;
    for (i, &b) in bits.iter().enumerate() {
        value.set_bit(i as u64, b);
    }
    format!("{value:x}")
}
