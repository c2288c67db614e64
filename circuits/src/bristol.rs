//! Bristol Fashion circuits (Archer, Bogdanov, Lindell, Smart et al., "Bristol Fashion MPC
//! circuits"): read and write.
//!
//! ```text
//! <gates> <wires>
//! <input groups> <size> ...
//! <output groups> <size> ...
//!
//! <ins> <outs> <in wires ...> <out wires ...> <XOR|AND|INV|EQ|EQW|MAND>
//! ```
//!
//! `EQ` sets its output to the literal 0 or 1 given as its input; `EQW` copies a wire; `MAND`
//! is `k` ANDs at once (`2k` inputs, `k` outputs) and is read as `k` separate ANDs. Files are
//! written with one gate per line and no MAND.

use std::fmt::Write as _;

use thiserror::Error;

use crate::circuit::{Circuit, CircuitError, Gate};

/// A Bristol file that cannot be read, with the 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BristolError {
    /// A line does not parse.
    #[error("line {line}: {message}")]
    Syntax {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The gates parse but do not form a valid circuit.
    #[error("invalid circuit: {0}")]
    Circuit(#[from] CircuitError),
}

/// Largest wire count accepted (wire numbers are `u32`).
const MAX_WIRES: usize = u32::MAX as usize;

/// Parses Bristol Fashion text.
pub fn parse(text: &str) -> Result<Circuit, BristolError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let mut next_line = |what: &str| {
        lines.next().ok_or_else(|| BristolError::Syntax {
            line: 0,
            message: format!("file ends before the {what}"),
        })
    };
    let (line, header) = next_line("header")?;
    let header = numbers(line, header)?;
    let [gates, wires] = header[..] else {
        return Err(syntax(line, "the first line must be '<gates> <wires>'"));
    };
    if wires > MAX_WIRES {
        return Err(syntax(line, &format!("{wires} wires is too many")));
    }
    let (line, inputs) = next_line("input line")?;
    let inputs = groups(line, &numbers(line, inputs)?)?;
    let (line, outputs) = next_line("output line")?;
    let outputs = groups(line, &numbers(line, outputs)?)?;

    let mut list = Vec::with_capacity(gates.min(text.len() / 8 + 1));
    // The line each gate came from, to place circuit errors.
    let mut line_of = Vec::with_capacity(list.capacity());
    let mut read = 0;
    for (line, text) in lines {
        read += 1;
        let tokens: Vec<&str> = text.split_whitespace().collect();
        let kind = *tokens.last().expect("non-empty line");
        let fields = numbers(line, &tokens[..tokens.len() - 1].join(" "))?;
        if fields.len() < 2 {
            return Err(syntax(line, "a gate needs input and output counts"));
        }
        let (ins, outs) = (fields[0], fields[1]);
        if fields.len() != 2 + ins + outs {
            return Err(syntax(
                line,
                &format!(
                    "{ins} inputs and {outs} outputs need {} numbers",
                    2 + ins + outs
                ),
            ));
        }
        let wire = |k: usize| -> Result<u32, BristolError> {
            u32::try_from(fields[k]).map_err(|_| syntax(line, "wire number too large"))
        };
        let shape = |i: usize, o: usize| {
            if ins == i && outs == o {
                Ok(())
            } else {
                Err(syntax(
                    line,
                    &format!("{kind} takes {i} inputs and {o} outputs"),
                ))
            }
        };
        match kind {
            "XOR" | "AND" => {
                shape(2, 1)?;
                let (a, b, out) = (wire(2)?, wire(3)?, wire(4)?);
                list.push(if kind == "XOR" {
                    Gate::Xor { a, b, out }
                } else {
                    Gate::And { a, b, out }
                });
            }
            "INV" | "NOT" => {
                shape(1, 1)?;
                list.push(Gate::Not {
                    a: wire(2)?,
                    out: wire(3)?,
                });
            }
            "EQW" => {
                shape(1, 1)?;
                list.push(Gate::Copy {
                    a: wire(2)?,
                    out: wire(3)?,
                });
            }
            "EQ" => {
                shape(1, 1)?;
                let value = match fields[2] {
                    0 => false,
                    1 => true,
                    other => {
                        return Err(syntax(
                            line,
                            &format!("EQ constant must be 0 or 1, not {other}"),
                        ));
                    }
                };
                list.push(Gate::Const {
                    value,
                    out: wire(3)?,
                });
            }
            "MAND" => {
                if ins != 2 * outs || outs == 0 {
                    return Err(syntax(line, "MAND takes 2k inputs and k outputs"));
                }
                for k in 0..outs {
                    list.push(Gate::And {
                        a: wire(2 + k)?,
                        b: wire(2 + outs + k)?,
                        out: wire(2 + ins + k)?,
                    });
                }
            }
            other => return Err(syntax(line, &format!("unknown gate type {other:?}"))),
        }
        line_of.resize(list.len(), line);
    }
    if read != gates {
        return Err(syntax(
            0,
            &format!("header promises {gates} gates, file has {read}"),
        ));
    }
    Circuit::new(wires, inputs, outputs, list).map_err(|e| {
        let gate = match e {
            CircuitError::WireOutOfRange { gate, .. }
            | CircuitError::ReadBeforeWrite { gate, .. }
            | CircuitError::Rewritten { gate, .. } => Some(gate),
            _ => None,
        };
        match gate {
            Some(g) => syntax(line_of[g], &e.to_string()),
            None => BristolError::Circuit(e),
        }
    })
}

/// Writes a circuit in Bristol Fashion (one gate per line, no MAND).
pub fn write(circuit: &Circuit) -> String {
    let mut out = String::new();
    let group_line = |sizes: &[usize]| {
        let mut s = sizes.len().to_string();
        for size in sizes {
            let _ = write!(s, " {size}");
        }
        s
    };
    let _ = writeln!(out, "{} {}", circuit.gates().len(), circuit.wires());
    let _ = writeln!(out, "{}", group_line(circuit.inputs()));
    let _ = writeln!(out, "{}", group_line(circuit.outputs()));
    out.push('\n');
    for gate in circuit.gates() {
        let _ = match *gate {
            Gate::Xor { a, b, out: o } => writeln!(out, "2 1 {a} {b} {o} XOR"),
            Gate::And { a, b, out: o } => writeln!(out, "2 1 {a} {b} {o} AND"),
            Gate::Not { a, out: o } => writeln!(out, "1 1 {a} {o} INV"),
            Gate::Copy { a, out: o } => writeln!(out, "1 1 {a} {o} EQW"),
            Gate::Const { value, out: o } => writeln!(out, "1 1 {} {o} EQ", u8::from(value)),
        };
    }
    out
}

fn syntax(line: usize, message: &str) -> BristolError {
    BristolError::Syntax {
        line,
        message: message.to_string(),
    }
}

fn numbers(line: usize, text: &str) -> Result<Vec<usize>, BristolError> {
    text.split_whitespace()
        .map(|t| {
            t.parse::<usize>()
                .map_err(|_| syntax(line, &format!("{t:?} is not a number")))
        })
        .collect()
}

/// `<count> <size> ...` into the sizes.
fn groups(line: usize, fields: &[usize]) -> Result<Vec<usize>, BristolError> {
    match fields.split_first() {
        Some((&count, sizes)) if sizes.len() == count => Ok(sizes.to_vec()),
        _ => Err(syntax(
            line,
            "expected '<count> <size> ...' with count sizes",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_gate_kind_and_writes_back() {
        let text = "6 10\n2 2 2\n1 3\n\n2 1 0 2 4 XOR\n1 1 1 5 INV\n1 1 1 6 EQ\n1 1 3 7 EQW\n4 2 0 1 2 3 8 9 MAND\n";
        // MAND expands to two ANDs, so the header's 6 gate lines hold... 5 lines here.
        assert!(
            parse(text).is_err(),
            "header/line count mismatch is refused"
        );
        let text = text.replacen("6 10", "5 10", 1);
        let c = parse(&text).expect("valid");
        assert_eq!(c.gates().len(), 6);
        assert_eq!(c.counts().and, 2);
        let out = c
            .evaluate(&[vec![true, false], vec![true, true]])
            .expect("evaluates");
        // wires: 4 = 0^2 = 0, 5 = !1 = 1... outputs are the last 3 wires: 7, 8, 9.
        assert_eq!(out, vec![vec![true, true, false]]);
        let again = parse(&write(&c)).expect("round trip");
        assert_eq!(again, c);
    }

    #[test]
    fn errors_name_the_line() {
        for (text, line) in [
            ("1 3\n1 1\n1 1\n\n2 1 0 1 2 XOR\n", 5),
            ("1 3\n1 2\n1 1\n\n2 1 0 x 2 XOR\n", 5),
            ("1 3\n1 2\n1 1\n\n2 1 0 1 2 NAND\n", 5),
            ("1 3\n1 2\n1 1\n\n2 1 0 1 XOR\n", 5),
            ("1 3\n1 2 3\n1 1\n\n2 1 0 1 2 XOR\n", 2),
        ] {
            match parse(text) {
                Err(BristolError::Syntax { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
        let err = parse("1 3\n1 2\n1 1\n\n2 1 0 5 2 XOR\n").expect_err("out of range");
        assert_eq!(
            err.to_string(),
            "line 5: gate 0 refers to wire 5, but the circuit has 3 wires"
        );
    }
}
