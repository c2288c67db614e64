//! What the server sends a participant each visit: the whole parameter vector, or, when the
//! uploads are grid counts (the sparse Gaussian mechanism), only what changed since the
//! participant's last visit - its own last upload and the uploads applied after it, which the
//! participant replays on its copy of the parameters.
//!
//! A replay is exact: the server and the participant apply the same uploads at the same public
//! selections in the same order with the same expression (`w -= rate * step * count`), so
//! their copies agree bit for bit; a checksum of the server's parameters (FNV-1a over the
//! `f64` bit patterns) travels with each delta and a participant refuses a mismatch. At the
//! experiment's settings (5 participants, 10 % of 40,312 parameters a visit) a visit downloads
//! four uploads of about 4 KB instead of 322 KB of parameters.

use super::sparse;
use super::upload::Upload;
use super::{DlError, ServerProblem};

/// A grid upload the server applied: when, whose, and its bytes as they came.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The iteration (1-based).
    pub iteration: u64,
    /// The round-robin position of the participant that sent it.
    pub position: usize,
    /// The encoded upload.
    pub bytes: Vec<u8>,
}

/// FNV-1a over the bit patterns of `params`.
pub fn checksum(params: &[f64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in params {
        for b in v.to_bits().to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Where a participant's copy of the parameters stands, on the server's side: the log index
/// of its own last upload, once it has one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen(Option<usize>);

/// The grid uploads the server applied that some participant has yet to replay: entries
/// before every participant's own last upload are dropped, so the log holds about one
/// iteration's uploads however long the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Log {
    /// Index (counted from the run's first upload) of `entries[0]`.
    base: usize,
    entries: Vec<Applied>,
}

impl Log {
    /// Appends an applied upload, returning its index.
    pub fn push(&mut self, applied: Applied) -> usize {
        self.entries.push(applied);
        self.base + self.entries.len() - 1
    }

    /// The uploads to send a participant at `seen` (its own last one first), or `None` for the
    /// whole vector (its first visit, or uploads that are not grid counts).
    pub fn since(&self, seen: Seen) -> Option<&[Applied]> {
        seen.0.map(|own| &self.entries[own - self.base..])
    }

    /// Drops what every participant in `seen` has replayed or sent.
    pub fn trim(&mut self, seen: &[Seen]) {
        if let Some(oldest) = seen.iter().map(|s| s.0).collect::<Option<Vec<_>>>()
            && let Some(&oldest) = oldest.iter().min()
        {
            self.entries.drain(..oldest - self.base);
            self.base = oldest;
        }
    }

    /// Uploads held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Seen {
    /// Records that the participant's upload of this visit has index `index` in the log.
    pub fn uploaded(&mut self, index: usize) {
        self.0 = Some(index);
    }
}

/// Bytes of a delta download of `entries` (what [`super::remote`] writes after the
/// iteration: kind, checksum, count, then each entry's iteration, position and bytes).
pub fn delta_bytes(entries: &[Applied]) -> u64 {
    8 * 3
        + entries
            .iter()
            .map(|e| 8 * 3 + e.bytes.len() as u64)
            .sum::<u64>()
}

/// What a participant needs to replay uploads: the public plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Replay {
    /// The selection seed.
    pub seed: u64,
    /// Parameters of the network.
    pub dim: usize,
    /// Coordinates an upload carries.
    pub n: usize,
    /// The network's head (see [`sparse::selection`]).
    pub head: usize,
    /// The server's learning rate.
    pub rate: f64,
    /// The clipping bound (unused by grid uploads, passed as the server passes it).
    pub bound: f64,
}

impl Replay {
    /// Applies `entries` (encoded grid uploads) to `params` as the server did, then checks the
    /// result against the server's `expected` checksum.
    pub fn apply(
        &self,
        params: &mut [f64],
        entries: &[(u64, usize, Vec<u8>)],
        expected: u64,
    ) -> Result<(), DlError> {
        for (iteration, position, bytes) in entries {
            let upload = Upload::decode(bytes, self.dim)
                .map_err(|why| DlError::Server(ServerProblem::ReplayUpload(why)))?;
            if !matches!(upload, Upload::Grid { .. }) || upload.len() != self.n {
                return Err(DlError::Server(ServerProblem::ReplayKind {
                    len: upload.len(),
                    kind: upload.kind(),
                    n: self.n,
                }));
            }
            let selection = sparse::selection(
                self.seed, self.dim, self.n, self.head, *iteration, *position,
            );
            upload.apply(params, self.rate, self.bound, &selection);
        }
        let got = checksum(params);
        if got != expected {
            return Err(DlError::Server(ServerProblem::Checksum { got, expected }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log keeps only what some participant still has to replay: after each round, from
    /// the oldest participant's own upload on.
    #[test]
    fn the_log_keeps_about_one_round() {
        let mut log = Log::default();
        let mut seen = vec![Seen::default(); 3];
        let entry = |t, k| Applied {
            iteration: t,
            position: k,
            bytes: vec![t as u8, k as u8],
        };
        for t in 1..=50u64 {
            for (k, s) in seen.iter_mut().enumerate() {
                if t > 1 {
                    let since = log.since(*s).expect("a delta after the first visit");
                    // Its own last upload, then the two others'.
                    assert_eq!(since.len(), 3);
                    assert_eq!((since[0].iteration, since[0].position), (t - 1, k));
                }
                s.uploaded(log.push(entry(t, k)));
            }
            log.trim(&seen);
            assert!(log.len() <= 3, "{} entries", log.len());
        }
        assert!(log.since(Seen::default()).is_none());
    }

    #[test]
    fn checksums_see_every_bit() {
        let a = [1.0, -0.0, 3.5];
        let mut b = a;
        b[1] = 0.0;
        assert_ne!(checksum(&a), checksum(&b));
        assert_eq!(checksum(&a), checksum(&[1.0, -0.0, 3.5]));
    }

    /// A replay of the server's uploads lands on the server's parameters bit for bit; a
    /// tampered one is refused by the checksum.
    #[test]
    fn a_replay_equals_the_server_and_a_tampered_one_is_refused() {
        let (dim, n, head, rate) = (40, 8, 3, 0.3);
        let replay = Replay {
            seed: 9,
            dim,
            n,
            head,
            rate,
            bound: 1.0,
        };
        let start: Vec<f64> = (0..dim).map(|j| (j as f64 * 0.37).sin()).collect();
        let mut server = start.clone();
        let mut entries = Vec::new();
        for (t, k) in [(1u64, 0usize), (1, 1), (2, 0), (2, 1)] {
            let upload = Upload::Grid {
                dim,
                step: 0.01 * (t as f64 + 1.0),
                counts: (0..n as i64).map(|c| c * 3 - 7 + k as i64).collect(),
            };
            let selection = sparse::selection(9, dim, n, head, t, k);
            upload.apply(&mut server, rate, 1.0, &selection);
            entries.push((t, k, upload.encode()));
        }
        let mut copy = start.clone();
        replay
            .apply(&mut copy, &entries, checksum(&server))
            .expect("replays");
        assert_eq!(copy, server);
        let mut copy = start;
        entries[2].2[20] ^= 1;
        let e = replay
            .apply(&mut copy, &entries, checksum(&server))
            .expect_err("refused");
        assert!(e.to_string().contains("checksum"), "{e}");
        assert!(
            matches!(e, DlError::Server(ServerProblem::Checksum { .. })),
            "{e:?}"
        );
    }
}
