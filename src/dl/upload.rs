//! What a participant sends the server each step, and its encoding.
//!
//! A ternary upload (Algorithm 2's `G~ in {-B, 0, B}^d`) carries signs only, since `B` is a
//! public setting: either the selected indices with the sign in the top bit (4 bytes each) or
//! two bits per coordinate, whichever is shorter. An exact upload (no ternarization: noisy
//! values on the noise's grid, see [`crate::dp::noise::laplace_mechanism`], or the non-private
//! baseline's plain values) carries `f64` values, sparse or dense. A grid upload (the sparse
//! Gaussian mechanism) carries its step and whole counts as zig-zag varints, its indices being
//! the public selection. Decoding checks every length, index and value against the public
//! dimension before it is used.

/// One participant's step.
#[derive(Debug, Clone, PartialEq)]
pub enum Upload {
    /// `B sign` at each index (signs are +1 or -1; zero signs are not sent).
    Ternary {
        /// Parameters of the network.
        dim: usize,
        /// Increasing indices with their signs.
        entries: Vec<(u32, i8)>,
    },
    /// Values at each index.
    Values {
        /// Parameters of the network.
        dim: usize,
        /// Increasing indices with their values.
        entries: Vec<(u32, f64)>,
    },
    /// Whole counts of a grid step at the coordinates of a public selection (the sparse
    /// Gaussian mechanism: the indices are implied, [`super::sparse::selection`]).
    Grid {
        /// Parameters of the network.
        dim: usize,
        /// The value of one count.
        step: f64,
        /// Counts, one per selected coordinate in increasing index order.
        counts: Vec<i64>,
    },
}

const TERNARY_SPARSE: u8 = 1;
const TERNARY_DENSE: u8 = 2;
const VALUES_SPARSE: u8 = 3;
const VALUES_DENSE: u8 = 4;
const GRID: u8 = 5;
const SIGN_BIT: u32 = 1 << 31;

impl Upload {
    /// Parameters of the network it updates.
    pub fn dim(&self) -> usize {
        match self {
            Upload::Ternary { dim, .. } | Upload::Values { dim, .. } | Upload::Grid { dim, .. } => {
                *dim
            }
        }
    }

    /// Coordinates it changes.
    pub fn len(&self) -> usize {
        match self {
            Upload::Ternary { entries, .. } => entries.len(),
            Upload::Values { entries, .. } => entries.len(),
            Upload::Grid { counts, .. } => counts.len(),
        }
    }

    /// Its kind, for messages: `ternary`, `valued` or `grid`.
    pub fn kind(&self) -> &'static str {
        match self {
            Upload::Ternary { .. } => "ternary",
            Upload::Values { .. } => "valued",
            Upload::Grid { .. } => "grid",
        }
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Algorithm 1, eq. (3.1): `W := W - rate G~`, where a ternary sign stands for `bound` times
    /// itself and a grid count for its step at the coordinates `selection` (the caller checks
    /// that it has one index per count).
    pub fn apply(&self, params: &mut [f64], rate: f64, bound: f64, selection: &[u32]) {
        match self {
            Upload::Ternary { entries, .. } => {
                for &(j, s) in entries {
                    params[j as usize] -= rate * bound * f64::from(s);
                }
            }
            Upload::Values { entries, .. } => {
                for &(j, v) in entries {
                    params[j as usize] -= rate * v;
                }
            }
            Upload::Grid { step, counts, .. } => {
                for (&j, &c) in selection.iter().zip(counts) {
                    params[j as usize] -= rate * step * c as f64;
                }
            }
        }
    }

    /// The bytes on the wire.
    pub fn encode(&self) -> Vec<u8> {
        let dim = self.dim();
        let mut out = Vec::new();
        match self {
            Upload::Ternary { entries, .. } => {
                let sparse = 4 * entries.len();
                let dense = dim.div_ceil(4);
                if sparse <= dense {
                    header(&mut out, TERNARY_SPARSE, dim, entries.len());
                    for &(j, s) in entries {
                        let word = j | if s < 0 { SIGN_BIT } else { 0 };
                        out.extend_from_slice(&word.to_le_bytes());
                    }
                } else {
                    header(&mut out, TERNARY_DENSE, dim, entries.len());
                    let start = out.len();
                    out.resize(start + dense, 0);
                    for &(j, s) in entries {
                        let code: u8 = if s < 0 { 2 } else { 1 };
                        out[start + j as usize / 4] |= code << (2 * (j % 4));
                    }
                }
            }
            Upload::Values { entries, .. } => {
                if entries.len() == dim {
                    header(&mut out, VALUES_DENSE, dim, dim);
                    for &(_, v) in entries {
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                } else {
                    header(&mut out, VALUES_SPARSE, dim, entries.len());
                    for &(j, v) in entries {
                        out.extend_from_slice(&j.to_le_bytes());
                        out.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
            Upload::Grid { step, counts, .. } => {
                header(&mut out, GRID, dim, counts.len());
                out.extend_from_slice(&step.to_le_bytes());
                for &c in counts {
                    // Zig-zag, then LEB128: small counts of either sign take one byte.
                    let mut v = ((c << 1) ^ (c >> 63)) as u64;
                    while v >= 0x80 {
                        out.push((v as u8) | 0x80);
                        v >>= 7;
                    }
                    out.push(v as u8);
                }
            }
        }
        out
    }

    /// Reads an upload for a network of `dim` parameters; anything malformed is refused with
    /// what is wrong.
    pub fn decode(bytes: &[u8], dim: usize) -> Result<Self, String> {
        if bytes.len() < 9 {
            return Err(format!(
                "an upload of {} bytes is shorter than its header",
                bytes.len()
            ));
        }
        let tag = bytes[0];
        let got_dim = u32::from_le_bytes(bytes[1..5].try_into().expect("4 bytes")) as usize;
        let count = u32::from_le_bytes(bytes[5..9].try_into().expect("4 bytes")) as usize;
        if got_dim != dim {
            return Err(format!(
                "an upload for {got_dim} parameters, the network has {dim}"
            ));
        }
        if count > dim {
            return Err(format!(
                "an upload of {count} coordinates, more than the {dim} parameters"
            ));
        }
        let body = &bytes[9..];
        let expect_len = |len: usize| {
            if body.len() == len {
                Ok(())
            } else {
                Err(format!(
                    "an upload body of {} bytes, expected {len}",
                    body.len()
                ))
            }
        };
        let check_index = |j: usize, last: Option<usize>| {
            if j >= dim || last.is_some_and(|l| j <= l) {
                Err(format!(
                    "upload index {j} out of order or beyond {dim} parameters"
                ))
            } else {
                Ok(())
            }
        };
        match tag {
            TERNARY_SPARSE => {
                expect_len(4 * count)?;
                let mut entries = Vec::with_capacity(count);
                let mut last = None;
                for word in body.chunks_exact(4) {
                    let word = u32::from_le_bytes(word.try_into().expect("4 bytes"));
                    let j = (word & !SIGN_BIT) as usize;
                    check_index(j, last)?;
                    last = Some(j);
                    entries.push((j as u32, if word & SIGN_BIT != 0 { -1 } else { 1 }));
                }
                Ok(Upload::Ternary { dim, entries })
            }
            TERNARY_DENSE => {
                expect_len(dim.div_ceil(4))?;
                let mut entries = Vec::with_capacity(count);
                for j in 0..4 * body.len() {
                    match ((body[j / 4] >> (2 * (j % 4))) & 3, j < dim) {
                        (0, _) => {}
                        (_, false) => {
                            return Err("an upload with bits set past the last parameter".into());
                        }
                        (1, true) => entries.push((j as u32, 1)),
                        (2, true) => entries.push((j as u32, -1)),
                        _ => return Err(format!("upload coordinate {j} has an invalid code")),
                    }
                }
                if entries.len() != count {
                    return Err(format!(
                        "an upload claiming {count} coordinates carries {}",
                        entries.len()
                    ));
                }
                Ok(Upload::Ternary { dim, entries })
            }
            VALUES_SPARSE | VALUES_DENSE => {
                let dense = tag == VALUES_DENSE;
                if dense && count != dim {
                    return Err(format!(
                        "a dense upload of {count} values for {dim} parameters"
                    ));
                }
                expect_len(if dense { 8 * dim } else { 12 * count })?;
                let step = if dense { 8 } else { 12 };
                let mut entries = Vec::with_capacity(count);
                let mut last = None;
                for (k, piece) in body.chunks_exact(step).enumerate() {
                    let (j, value) = if dense {
                        (k, &piece[..8])
                    } else {
                        (
                            u32::from_le_bytes(piece[..4].try_into().expect("4 bytes")) as usize,
                            &piece[4..],
                        )
                    };
                    check_index(j, last)?;
                    last = Some(j);
                    let v = f64::from_le_bytes(value.try_into().expect("8 bytes"));
                    if !v.is_finite() {
                        return Err(format!("upload value at {j} is not finite"));
                    }
                    entries.push((j as u32, v));
                }
                Ok(Upload::Values { dim, entries })
            }
            GRID => {
                if body.len() < 8 {
                    return Err("a grid upload without its step".into());
                }
                let step = f64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
                if !(step.is_finite() && step > 0.0) {
                    return Err(format!("a grid step of {step}"));
                }
                let mut counts = Vec::with_capacity(count);
                let mut bytes = body[8..].iter();
                for k in 0..count {
                    let mut v: u64 = 0;
                    let mut shift = 0;
                    loop {
                        let Some(&b) = bytes.next() else {
                            return Err(format!("a grid upload cut short at count {k} of {count}"));
                        };
                        if shift > 63 {
                            return Err(format!("grid count {k} is longer than 64 bits"));
                        }
                        v |= u64::from(b & 0x7f) << shift;
                        shift += 7;
                        if b & 0x80 == 0 {
                            break;
                        }
                    }
                    counts.push(((v >> 1) as i64) ^ -((v & 1) as i64));
                }
                if bytes.next().is_some() {
                    return Err(format!("a grid upload with bytes past its {count} counts"));
                }
                Ok(Upload::Grid { dim, step, counts })
            }
            other => Err(format!("an upload of unknown kind {other}")),
        }
    }
}

fn header(out: &mut Vec<u8>, tag: u8, dim: usize, count: usize) {
    out.push(tag);
    out.extend_from_slice(&(dim as u32).to_le_bytes());
    out.extend_from_slice(&(count as u32).to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_and_the_shorter_ternary_form_is_chosen() {
        let dim = 37;
        let few = Upload::Ternary {
            dim,
            entries: vec![(3, 1), (20, -1)],
        };
        let many = Upload::Ternary {
            dim,
            entries: (0..30)
                .map(|j| (j, if j % 3 == 0 { -1 } else { 1 }))
                .collect(),
        };
        let sparse = Upload::Values {
            dim,
            entries: vec![(0, 0.5), (36, -2.25)],
        };
        let dense = Upload::Values {
            dim,
            entries: (0..37).map(|j| (j, j as f64 * 0.1)).collect(),
        };
        let grid = Upload::Grid {
            dim,
            step: 0.125,
            counts: vec![0, -1, 63, -64, 64, 1 << 40, i64::MIN, i64::MAX],
        };
        for u in [&few, &many, &sparse, &dense, &grid] {
            assert_eq!(&Upload::decode(&u.encode(), dim).expect("valid"), u);
        }
        assert_eq!(few.encode()[0], TERNARY_SPARSE);
        assert_eq!(many.encode()[0], TERNARY_DENSE);
        assert_eq!(many.encode().len(), 9 + 10);
        // Counts within -64..=63 take one byte each.
        let small = Upload::Grid {
            dim,
            step: 1.0,
            counts: (-64..64).collect(),
        };
        assert_eq!(small.encode().len(), 9 + 8 + 128);
        let mut cut = grid.encode();
        cut.pop();
        assert!(
            Upload::decode(&cut, dim)
                .expect_err("refused")
                .contains("cut short")
        );
        let mut long = grid.encode();
        long.push(0);
        assert!(
            Upload::decode(&long, dim)
                .expect_err("refused")
                .contains("past")
        );
    }

    #[test]
    fn malformed_uploads_are_refused() {
        let dim = 100;
        let good = Upload::Ternary {
            dim,
            entries: vec![(1, 1), (4, -1)],
        }
        .encode();
        assert_eq!(good[0], TERNARY_SPARSE);
        assert!(Upload::decode(&good, 101).is_err());
        assert!(Upload::decode(&good[..good.len() - 1], dim).is_err());
        let mut backwards = good.clone();
        backwards[9..13].copy_from_slice(&5u32.to_le_bytes());
        assert!(
            Upload::decode(&backwards, dim)
                .expect_err("refused")
                .contains("out of order")
        );
        let mut beyond = good.clone();
        beyond[13..17].copy_from_slice(&100u32.to_le_bytes());
        assert!(Upload::decode(&beyond, dim).is_err());
        let nan = Upload::Values {
            dim,
            entries: vec![(2, f64::NAN)],
        }
        .encode();
        assert!(
            Upload::decode(&nan, dim)
                .expect_err("refused")
                .contains("not finite")
        );
        assert!(Upload::decode(&[9, 100, 0, 0, 0, 0, 0, 0, 0], dim).is_err());
        // Two bits per coordinate: a set bit past the 10th coordinate of a 10-parameter net.
        let mut dense = Upload::Ternary {
            dim: 10,
            entries: (0..10).map(|j| (j, 1)).collect(),
        }
        .encode();
        assert_eq!(dense[0], TERNARY_DENSE);
        *dense.last_mut().expect("a byte") |= 1 << 6;
        assert!(
            Upload::decode(&dense, 10)
                .expect_err("refused")
                .contains("past the last")
        );
    }
}
