//! Oblivious transfer for the evaluator's input labels, semi-honest: 128 base OTs (Chou and
//! Orlandi, "The simplest protocol for oblivious transfer", LATINCRYPT 2015, over Ristretto) and
//! their extension to any number of correlated OTs (Ishai, Kilian, Nissim and Petrank,
//! "Extending oblivious transfers efficiently", CRYPTO 2003).
//!
//! The extension is run with the roles of the garbling: the garbler is the OT sender and its
//! secret offset is IKNP's `s`, so the extension hands it `q_j` and the evaluator
//! `t_j = q_j ^ r_j delta` for the evaluator's choice bit `r_j`. Taking `q_j` as the zero-label
//! of the evaluator's `j`-th input wire, the evaluator ends up holding exactly its active label
//! and learns nothing about the other (correlated OT, as used for garbled-circuit inputs by
//! EMP-toolkit; the garbling hash is correlation robust).
//!
//! Base OT, for each `i`: the sender (here the evaluator) sends `A = aG`; the receiver (here the
//! garbler, choice `c`) sends `B = bG + cA`; keys are `H(i, A, B, bA)` for the receiver and
//! `H(i, A, B, aB)`, `H(i, A, B, a(B - A))` for the sender (the transcript points in the hash, as
//! the paper's random-oracle proof has them). A point that decodes to the identity is refused
//! (with `A` the identity every key would be public). Extension matrices are expanded from the
//! base-OT keys by ChaCha20 and transposed 128 x m; the keys (the PRG seeds) and the offset are
//! held in wiped memory, each PRG rebuilt from its seed and position for one extension and
//! dropped after it.

use std::io;

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::Identity;
use rand::{CryptoRng, Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

use crate::channel::Channel;

/// Base OTs run once per session: one per bit of the garbler's offset.
pub const BASE_OTS: usize = 128;

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

fn random_scalar<R: CryptoRng + ?Sized>(rng: &mut R) -> Scalar {
    let mut wide = [0u8; 64];
    rng.fill_bytes(&mut wide);
    let s = Scalar::from_bytes_mod_order_wide(&wide);
    wide.zeroize();
    s
}

/// `H(i, A, B, P)`: a 32-byte seed for the extension's PRG.
fn key(index: usize, a: &RistrettoPoint, b: &RistrettoPoint, point: &RistrettoPoint) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"privlogit base OT v2");
    h.update((index as u64).to_le_bytes());
    h.update(a.compress().as_bytes());
    h.update(b.compress().as_bytes());
    h.update(point.compress().as_bytes());
    h.finalize().into()
}

/// A PRG kept as its seed (wiped on drop) and the number of words drawn from it.
struct Prg {
    seed: Zeroizing<[u8; 32]>,
    words: u128,
}

impl Prg {
    fn new(seed: [u8; 32]) -> Self {
        Self {
            seed: Zeroizing::new(seed),
            words: 0,
        }
    }

    /// The next `n` u64 words of ChaCha20 keyed by the seed.
    fn draw(&mut self, n: usize, mut each: impl FnMut(usize, u64)) {
        let mut rng = ChaCha20Rng::from_seed(*self.seed);
        rng.set_word_pos(self.words);
        for k in 0..n {
            each(k, rng.next_u64());
        }
        // u32 words: two per u64.
        self.words += 2 * n as u128;
    }
}

fn read_point<C: Channel>(channel: &mut C) -> io::Result<RistrettoPoint> {
    let mut bytes = [0u8; 32];
    channel.recv(&mut bytes)?;
    let point = CompressedRistretto(bytes)
        .decompress()
        .ok_or_else(|| invalid("base OT: not a Ristretto point"))?;
    if point == RistrettoPoint::identity() {
        return Err(invalid("base OT: the identity point"));
    }
    Ok(point)
}

/// The extension's sender side: the garbler, holding `delta`.
pub struct CotSender {
    delta: Zeroizing<u128>,
    /// PRGs seeded by the base-OT keys the garbler chose (`k_{s_i}`).
    prgs: Vec<Prg>,
}

impl std::fmt::Debug for CotSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CotSender { .. }")
    }
}

impl CotSender {
    /// Runs the base OTs as their receiver, with choice bits the bits of `delta`.
    pub fn setup<C: Channel, R: CryptoRng + ?Sized>(
        channel: &mut C,
        delta: u128,
        rng: &mut R,
    ) -> io::Result<Self> {
        let a = read_point(channel)?;
        let mut bs = Vec::with_capacity(BASE_OTS);
        let mut out = Vec::with_capacity(32 * BASE_OTS);
        for i in 0..BASE_OTS {
            let b = random_scalar(rng);
            let mut point = &b * RISTRETTO_BASEPOINT_TABLE;
            if (delta >> i) & 1 == 1 {
                point += a;
            }
            out.extend_from_slice(point.compress().as_bytes());
            bs.push(b);
        }
        channel.send(&out)?;
        channel.flush()?;
        let prgs = bs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| {
                let sent: [u8; 32] = out[32 * i..32 * (i + 1)].try_into().expect("32 bytes");
                let big_b = CompressedRistretto(sent)
                    .decompress()
                    .expect("our own point");
                let mut shared = *b * a;
                let seed = key(i, &a, &big_b, &shared);
                b.zeroize();
                shared.zeroize();
                Prg::new(seed)
            })
            .collect();
        out.zeroize();
        Ok(Self {
            delta: Zeroizing::new(delta),
            prgs,
        })
    }

    /// Extends to `m` correlated OTs: returns the zero-labels `q_j` (the one-labels are
    /// `q_j ^ delta`).
    pub fn extend<C: Channel>(&mut self, channel: &mut C, m: usize) -> io::Result<Vec<u128>> {
        let words = m.div_ceil(64);
        let mut u = vec![0u8; BASE_OTS * words * 8];
        channel.recv(&mut u)?;
        let mut columns = vec![0u64; BASE_OTS * words];
        for i in 0..BASE_OTS {
            let column = &mut columns[i * words..(i + 1) * words];
            self.prgs[i].draw(words, |k, w| column[k] = w);
            if (*self.delta >> i) & 1 == 1 {
                for (k, w) in column.iter_mut().enumerate() {
                    let at = (i * words + k) * 8;
                    *w ^= u64::from_le_bytes(u[at..at + 8].try_into().expect("8 bytes"));
                }
            }
        }
        Ok(transpose(&columns, words, m))
    }
}

/// The extension's receiver side: the evaluator.
pub struct CotReceiver {
    /// PRGs seeded by both base-OT keys (`k0_i`, `k1_i`).
    prgs: Vec<(Prg, Prg)>,
}

impl std::fmt::Debug for CotReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CotReceiver { .. }")
    }
}

impl CotReceiver {
    /// Runs the base OTs as their sender.
    pub fn setup<C: Channel, R: CryptoRng + ?Sized>(
        channel: &mut C,
        rng: &mut R,
    ) -> io::Result<Self> {
        let mut a = random_scalar(rng);
        let big_a = &a * RISTRETTO_BASEPOINT_TABLE;
        channel.send(big_a.compress().as_bytes())?;
        channel.flush()?;
        let mut prgs = Vec::with_capacity(BASE_OTS);
        for i in 0..BASE_OTS {
            let b = read_point(channel)?;
            let (mut s0, mut s1) = (a * b, a * (b - big_a));
            let k0 = key(i, &big_a, &b, &s0);
            let k1 = key(i, &big_a, &b, &s1);
            s0.zeroize();
            s1.zeroize();
            prgs.push((Prg::new(k0), Prg::new(k1)));
        }
        a.zeroize();
        Ok(Self { prgs })
    }

    /// Extends to one correlated OT per choice bit: returns `t_j = q_j ^ r_j delta`, the
    /// garbler's label for value `r_j`.
    pub fn extend<C: Channel>(
        &mut self,
        channel: &mut C,
        choices: &[bool],
    ) -> io::Result<Vec<u128>> {
        let m = choices.len();
        let words = m.div_ceil(64);
        let mut r = vec![0u64; words];
        for (j, &c) in choices.iter().enumerate() {
            r[j / 64] |= u64::from(c) << (j % 64);
        }
        let mut t = vec![0u64; BASE_OTS * words];
        let mut u = Vec::with_capacity(BASE_OTS * words * 8);
        let mut t1 = vec![0u64; words];
        for i in 0..BASE_OTS {
            let (p0, p1) = &mut self.prgs[i];
            p0.draw(words, |k, w| t[i * words + k] = w);
            p1.draw(words, |k, w| t1[k] = w);
            for (k, rk) in r.iter().enumerate() {
                u.extend_from_slice(&(t[i * words + k] ^ t1[k] ^ rk).to_le_bytes());
            }
        }
        t1.zeroize();
        channel.send(&u)?;
        channel.flush()?;
        Ok(transpose(&t, words, m))
    }
}

/// Rows `j < m` of a 128 x m bit matrix given as 128 columns of `words` u64 each: row `j` has
/// bit `i` equal to bit `j` of column `i`. Done as 64 x 64 bit blocks, each transposed in six
/// rounds of masked swaps (Warren, Hacker's Delight, 2nd ed., sec. 7-3), not bit by bit.
fn transpose(columns: &[u64], words: usize, m: usize) -> Vec<u128> {
    let mut rows = vec![0u128; m];
    let mut block = [0u64; 64];
    for w in 0..words {
        for half in 0..2 {
            for (i, b) in block.iter_mut().enumerate() {
                *b = columns[(64 * half + i) * words + w];
            }
            transpose64(&mut block);
            for (k, &bits) in block.iter().enumerate() {
                if let Some(row) = rows.get_mut(64 * w + k) {
                    *row |= u128::from(bits) << (64 * half);
                }
            }
        }
    }
    rows
}

/// Transposes a 64 x 64 bit matrix in place: afterwards bit `i` of `a[k]` is what bit `k` of
/// `a[i]` was.
fn transpose64(a: &mut [u64; 64]) {
    let mut width = 32;
    let mut mask: u64 = 0x0000_0000_FFFF_FFFF;
    while width != 0 {
        let mut k = 0;
        while k < 64 {
            // Swap the high `width` bits of the low rows' blocks with the low bits of the rows
            // `width` further on.
            let t = ((a[k] >> width) ^ a[k + width]) & mask;
            a[k] ^= t << width;
            a[k + width] ^= t;
            k = (k + width + 1) & !width;
        }
        width >>= 1;
        mask ^= mask << width;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::MemoryChannel;

    /// The identity point is refused where a base-OT point is read (with `A` the identity,
    /// both of the sender's keys would be `H(i, A, B, 0)`, known to anyone).
    #[test]
    fn identity_point_is_refused() {
        let (mut a, mut b) = MemoryChannel::pair();
        a.send(RistrettoPoint::identity().compress().as_bytes())
            .expect("send");
        a.flush().expect("flush");
        let e = read_point(&mut b).expect_err("identity");
        assert!(e.to_string().contains("identity"), "{e}");
        drop(a);
        let mut rng = rand::rng();
        let e = CotSender::setup(&mut b, 1, &mut rng)
            .map(|_| ())
            .expect_err("no point");
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{e}");
    }

    /// The block transpose equals the definition, bit by bit, for lengths that do and do not
    /// fill their last word.
    #[test]
    fn transpose_is_the_definition() {
        let mut rng = rand::rng();
        for m in [1usize, 63, 64, 65, 200] {
            let words = m.div_ceil(64);
            let columns: Vec<u64> = (0..BASE_OTS * words).map(|_| rng.next_u64()).collect();
            let rows = transpose(&columns, words, m);
            for (j, row) in rows.iter().enumerate() {
                for i in 0..BASE_OTS {
                    let bit = (columns[i * words + j / 64] >> (j % 64)) & 1;
                    assert_eq!((row >> i) & 1, u128::from(bit), "row {j} bit {i}");
                }
            }
        }
    }

    /// The keys depend on the transcript points, not only on the shared point.
    #[test]
    fn keys_bind_the_transcript() {
        let g = RISTRETTO_BASEPOINT_TABLE.basepoint();
        let (p, q) = (g + g, g + g + g);
        assert_ne!(key(0, &g, &p, &q), key(0, &p, &p, &q));
        assert_ne!(key(0, &g, &p, &q), key(0, &g, &q, &q));
        assert_ne!(key(0, &g, &p, &q), key(1, &g, &p, &q));
    }

    /// Drawing in pieces gives the same words as one ChaCha20 stream.
    #[test]
    fn prg_pieces_continue_the_stream() {
        let seed = [9u8; 32];
        let mut whole = ChaCha20Rng::from_seed(seed);
        let want: Vec<u64> = (0..10).map(|_| whole.next_u64()).collect();
        let mut prg = Prg::new(seed);
        let mut got = vec![0u64; 10];
        prg.draw(3, |k, w| got[k] = w);
        prg.draw(7, |k, w| got[3 + k] = w);
        assert_eq!(got, want);
    }

    /// For random choices, the receiver's labels are the sender's zero-labels XOR choice * delta,
    /// over two extensions (the PRG streams continue).
    #[test]
    fn correlated_ots_are_correct() {
        let (mut a, mut b) = MemoryChannel::pair();
        let delta = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3211u128;
        let sender = std::thread::spawn(move || {
            let mut rng = ChaCha20Rng::seed_from_u64(1);
            let mut s = CotSender::setup(&mut a, delta, &mut rng).expect("base OT");
            let first = s.extend(&mut a, 1000).expect("extend");
            let second = s.extend(&mut a, 70).expect("extend");
            (first, second)
        });
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let mut r = CotReceiver::setup(&mut b, &mut rng).expect("base OT");
        let choices: Vec<bool> = (0..1000).map(|j| (j * 7 + j / 3) % 5 < 2).collect();
        let got = r.extend(&mut b, &choices).expect("extend");
        let choices2: Vec<bool> = (0..70).map(|j| j % 3 == 0).collect();
        let got2 = r.extend(&mut b, &choices2).expect("extend");
        let (first, second) = sender.join().expect("sender");
        for (j, &c) in choices.iter().enumerate() {
            assert_eq!(got[j], first[j] ^ if c { delta } else { 0 }, "ot {j}");
        }
        for (j, &c) in choices2.iter().enumerate() {
            assert_eq!(
                got2[j],
                second[j] ^ if c { delta } else { 0 },
                "second ot {j}"
            );
        }
        // The zero-labels look random: no two equal, none equal to delta.
        let mut sorted = first.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), first.len());
    }
}
