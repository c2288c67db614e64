//! The exact AUC over held-out rows held by several Nodes, revealing only the AUC (and, as the
//! other held-out figures do, the count of positives).
//!
//! 1. Each Node scores its test rows with the final model, sorts them by predicted probability
//!    and secret-shares every (score, label) between the two servers: the key holder's shares
//!    are a ChaCha20 stream under a fresh 256-bit seed the Node sends encrypted under the
//!    study's Paillier key (one ciphertext, forwarded by the aggregator), the aggregator's are
//!    `score - share mod 2^62` and `label ^ share`, which it cannot tell from random.
//! 2. In one garbled circuit the key holder inputs its shares (the garbler), the aggregator its
//!    own (by oblivious transfer); the circuit adds them, merges the Nodes' sorted lists with
//!    Batcher's odd-even merge network ([`privlogit_circuits::merge`]), and scans the merged
//!    list for the Mann-Whitney statistic with ties counted one half
//!    ([`privlogit_circuits::rank_sum`]). Only `D` and `P` are revealed, to the aggregator;
//!    `AUC = (D + P N) / (2 P N)`.
//!
//! The scores are IEEE doubles in `[0, 1]`, whose bit patterns order as the numbers do, so the
//! comparisons are exact, ties included, and the AUC equals scikit-learn's `roc_auc_score` on
//! the same probabilities. The servers learn each Node's count of test rows (the circuit's
//! shape).

use std::io;

use num_bigint::{BigInt, BigUint, Sign};
use privlogit_circuits::backend::{Bit, Word};
use privlogit_circuits::lanes;
use privlogit_circuits::merge::{Item, merge_sorted};
use privlogit_circuits::rank_sum::{rank_sum, signed_value};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use zeroize::Zeroizing;

use super::gc::GcParty;
use super::wire::{Reader, Writer};
use super::{Breach, Overflow, SecureError};
use crate::paillier::{DjnNoise, EncryptedVector, Fixed, Packing, PublicKey, SecretKey};
use crate::transport::Role;

/// Bits of a score key: a probability's IEEE bit pattern is below `2^62`.
pub const KEY_BITS: usize = 62;

/// Bytes of a Node's seed.
const SEED_BYTES: usize = 32;

/// Test rows a ranking takes over all Nodes: bounds each server's wire labels (about 2 kB a
/// row, and the merge's copies) and the circuit; a study of both servers in one process
/// peaked at 0.77 GB with 100,000 held-out rows.
pub const MAX_RANKED_ROWS: usize = 1 << 20;

/// Rows input to the circuit at a time (bounds the input and OT buffers).
const INPUT_CHUNK: usize = 1 << 13;

/// The order-preserving key of a probability: its bit pattern (`-0` as `+0`).
pub fn score_key(probability: f64) -> u64 {
    debug_assert!((0.0..=1.0).contains(&probability), "a probability");
    (probability + 0.0).to_bits()
}

/// A share: the low [`KEY_BITS`] bits a key share, the next bit a label share.
fn split(share: u64) -> (u64, bool) {
    (share & ((1 << KEY_BITS) - 1), share >> KEY_BITS & 1 == 1)
}

/// The key holder's shares of `rows` rows, expanded from a Node's seed.
fn keyholder_shares(seed: &[u8; SEED_BYTES], rows: usize) -> Vec<u64> {
    let mut stream = ChaCha20Rng::from_seed(*seed);
    (0..rows)
        .map(|_| stream.next_u64() & ((1 << (KEY_BITS + 1)) - 1))
        .collect()
}

/// What a Node sends for the ranking: its row count, its encrypted seed (none without rows)
/// and the aggregator's shares of its rows in ascending order of score.
#[derive(Debug, Clone)]
pub struct NodeShares {
    /// The encrypted seed of the key holder's shares.
    pub seed: Option<EncryptedVector>,
    /// The aggregator's shares, one a row.
    pub shares: Vec<u64>,
}

impl NodeShares {
    /// Sorts `scored` (probability, label) and shares it; `noise` encrypts the seed.
    pub fn new(
        key: &PublicKey,
        mut scored: Vec<(f64, bool)>,
        noise: &DjnNoise,
    ) -> Result<Self, SecureError> {
        if scored.is_empty() {
            return Ok(Self {
                seed: None,
                shares: Vec::new(),
            });
        }
        if let Some((p, _)) = scored.iter().find(|(p, _)| !(0.0..=1.0).contains(p)) {
            return Err(SecureError::Range(Overflow::Probability(*p)));
        }
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut seed = Zeroizing::new([0u8; SEED_BYTES]);
        rand::rng().fill_bytes(&mut seed[..]);
        let theirs = keyholder_shares(&seed, scored.len());
        let shares = scored
            .iter()
            .zip(theirs)
            .map(|(&(p, label), share)| {
                let (key_share, label_share) = split(share);
                let key = score_key(p).wrapping_sub(key_share) & ((1 << KEY_BITS) - 1);
                key | u64::from(label ^ label_share) << KEY_BITS
            })
            .collect();
        // The seed's integer form is not wiped (num-bigint cannot: docs/src/security-model.md);
        // it lives until the encryption below.
        let fixed = Fixed::integer(BigInt::from_biguint(
            Sign::Plus,
            BigUint::from_bytes_le(&seed[..]),
        ));
        let seed = EncryptedVector::encrypt(
            key,
            &[fixed],
            &(BigUint::from(1u8) << (8 * SEED_BYTES)),
            Packing::unpacked(key),
            noise,
        )?;
        Ok(Self {
            seed: Some(seed),
            shares,
        })
    }

    /// Test rows shared.
    pub fn rows(&self) -> usize {
        self.shares.len()
    }

    /// Appends the message to `w`.
    pub fn write(&self, w: Writer, key: &PublicKey) -> Writer {
        let seed = self
            .seed
            .as_ref()
            .map(|s| s.to_bytes(key))
            .unwrap_or_default();
        let shares: Vec<u8> = self.shares.iter().flat_map(|s| s.to_le_bytes()).collect();
        w.u64(self.shares.len() as u64).bytes(&seed).bytes(&shares)
    }

    /// Reads what [`Self::write`] wrote, from Node `node`: refuses a row count past
    /// `max_rows`, shares that are not one a row or outside their bits, a seed that is missing
    /// or not one value.
    pub fn read(
        r: &mut Reader<'_>,
        key: &PublicKey,
        node: usize,
        max_rows: usize,
    ) -> Result<Self, SecureError> {
        let at = |e| {
            SecureError::io(Role::Aggregator, "reading the ranking shares of", e).with_node(node)
        };
        let bad = |breach| SecureError::node_violation(node, breach);
        let rows = r.u64().map_err(at)?;
        let rows = usize::try_from(rows)
            .ok()
            .filter(|&n| n <= max_rows)
            .ok_or_else(|| {
                bad(Breach::TooMany {
                    what: "held-out rows to rank",
                    count: rows,
                    limit: max_rows as u64,
                })
            })?;
        let seed = r.bytes().map_err(at)?;
        let shares = r.bytes().map_err(at)?;
        if shares.len() != 8 * rows {
            return Err(bad(Breach::wrong_length(
                "ranking shares in bytes",
                shares.len(),
                8 * rows,
            )));
        }
        let shares: Vec<u64> = shares
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        if shares.iter().any(|&s| s >> (KEY_BITS + 1) != 0) {
            return Err(bad(Breach::Malformed {
                what: "a ranking share wider than its bits",
            }));
        }
        let seed = match (rows, seed.is_empty()) {
            (0, true) => None,
            (0, false) | (_, true) => {
                return Err(bad(Breach::Malformed {
                    what: "a seed that does not match its rows",
                }));
            }
            _ => {
                let v = EncryptedVector::from_bytes(key, seed)?;
                if v.len() != 1 {
                    return Err(bad(Breach::Malformed {
                        what: "a seed of more than one value",
                    }));
                }
                Some(v)
            }
        };
        Ok(Self { seed, shares })
    }
}

/// The key holder's shares of every Node's rows, from their decrypted seeds (`None` for a Node
/// without rows). A plaintext is taken modulo `2^256` rather than refused, so that an
/// aggregator that passed off another ciphertext as a seed does not learn its range from an
/// error.
pub fn expand_seeds(
    seeds: &[Option<EncryptedVector>],
    counts: &[usize],
    secret: &SecretKey,
) -> Result<Vec<Vec<u64>>, SecureError> {
    seeds
        .iter()
        .zip(counts)
        .map(|(seed, &rows)| {
            let Some(seed) = seed else {
                return Ok(Vec::new());
            };
            let value = seed.decrypt(secret)?.remove(0).value;
            let modulus = BigInt::from(1u8) << (8 * SEED_BYTES);
            let (_, bytes) = ((value % &modulus + &modulus) % &modulus).to_bytes_le();
            let bytes = Zeroizing::new(bytes);
            let mut seed = Zeroizing::new([0u8; SEED_BYTES]);
            seed[..bytes.len()].copy_from_slice(&bytes);
            Ok(keyholder_shares(&seed, rows))
        })
        .collect()
}

/// The ranking circuit on either side: `counts` rows per Node (public), the key holder's
/// shares on its side and the aggregator's on its own (`None` on the other). Returns `D` and
/// `P` to the aggregator ([`privlogit_circuits::rank_sum`]).
pub fn rank_circuit<P: GcParty>(
    party: &mut P,
    counts: &[usize],
    keyholder: Option<&[Vec<u64>]>,
    aggregator: Option<&[Vec<u64>]>,
) -> io::Result<Option<(i128, u64)>> {
    let width = KEY_BITS + 1;
    let bits = |shares: &[u64]| -> Vec<bool> {
        shares
            .iter()
            .flat_map(|&s| (0..width).map(move |i| s >> i & 1 == 1))
            .collect()
    };
    let mut lists = Vec::with_capacity(counts.len());
    for (k, &rows) in counts.iter().enumerate() {
        let mut list = Vec::with_capacity(rows);
        for start in (0..rows).step_by(INPUT_CHUNK) {
            let end = (start + INPUT_CHUNK).min(rows);
            let own = |s: Option<&[Vec<u64>]>| s.map(|s| bits(&s[k][start..end]));
            let n = (end - start) * width;
            // The aggregator's input first (one round trip a chunk, not two).
            let ours = party.aggregator_input(own(aggregator).as_deref(), n)?;
            let theirs = party.keyholder_input(own(keyholder).as_deref(), n)?;
            let words = |w: &Word<u128>| -> Vec<Word<u128>> {
                w.chunks_exact(width).map(<[Bit<u128>]>::to_vec).collect()
            };
            let (a, b) = (words(&theirs), words(&ours));
            let keys_a: Vec<Word<u128>> = a.iter().map(|w| w[..KEY_BITS].to_vec()).collect();
            let keys_b: Vec<Word<u128>> = b.iter().map(|w| w[..KEY_BITS].to_vec()).collect();
            let builder = party.builder();
            let keys = lanes::add(builder, &keys_a, &keys_b);
            for ((key, x), y) in keys.into_iter().zip(&a).zip(&b) {
                let label = builder.xor(&x[KEY_BITS], &y[KEY_BITS]);
                list.push(Item {
                    key,
                    payload: vec![label],
                });
            }
        }
        lists.push(list);
    }
    let builder = party.builder();
    let merged = merge_sorted(builder, lists);
    let (d, p) = rank_sum(builder, &merged);
    let d = party.reveal_to_aggregator(&d)?;
    let p = party.reveal_to_aggregator(&p)?;
    Ok(d.zip(p).map(|(d, p)| {
        let p = p.iter().enumerate().map(|(i, &b)| u64::from(b) << i).sum();
        (signed_value(&d), p)
    }))
}

/// The AUC from the circuit's `D` and `P` over `n` rows: `None` when one class is absent.
pub fn auc(d: i128, positives: u64, n: u64) -> Option<f64> {
    let negatives = n.checked_sub(positives)?;
    if positives == 0 || negatives == 0 {
        return None;
    }
    let pairs = i128::from(positives) * i128::from(negatives);
    Some((d + pairs) as f64 / (2 * pairs) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paillier::KeyPair;
    use crate::secure::gc::{AggregatorGc, KeyholderGc};
    use privlogit_circuits::channel::MemoryChannel;
    use privlogit_circuits::session::{EvaluatorSession, GarblerSession};

    /// The AUC by its definition: over every (positive, negative) pair, 1 when the positive
    /// scores higher, 1/2 on a tie (scikit-learn's `roc_auc_score` counts ties so).
    fn auc_by_pairs(rows: &[(f64, bool)]) -> f64 {
        let (mut u, mut pairs) = (0.0, 0.0);
        for &(s, _) in rows.iter().filter(|r| r.1) {
            for &(t, _) in rows.iter().filter(|r| !r.1) {
                pairs += 1.0;
                u += if s > t {
                    1.0
                } else if s == t {
                    0.5
                } else {
                    0.0
                };
            }
        }
        u / pairs
    }

    /// Nodes' rows through the whole protocol: shares and encrypted seeds as the Nodes make
    /// them, the key holder's decryption and expansion, the garbled ranking circuit on two
    /// threads; returns the aggregator's AUC.
    fn secure_auc(nodes: &[Vec<(f64, bool)>]) -> Option<f64> {
        let pair = KeyPair::generate_insecure_for_tests(512, &mut rand::rng());
        let key = pair.secret.public_key().clone();
        let noise = DjnNoise::new(&key, &mut rand::rng());
        let shares: Vec<NodeShares> = nodes
            .iter()
            .map(|rows| NodeShares::new(&key, rows.clone(), &noise).expect("shares"))
            .collect();
        let counts: Vec<usize> = shares.iter().map(NodeShares::rows).collect();
        let seeds: Vec<Option<EncryptedVector>> = shares.iter().map(|s| s.seed.clone()).collect();
        let theirs = expand_seeds(&seeds, &counts, &pair.secret).expect("seeds");
        let (k, e) = MemoryChannel::pair();
        let garbler_counts = counts.clone();
        let garbler = std::thread::spawn(move || {
            let session = GarblerSession::new(k, &mut rand::rng()).expect("base OT");
            let mut party = KeyholderGc {
                session,
                rng: rand::rng(),
            };
            rank_circuit(&mut party, &garbler_counts, Some(&theirs), None).expect("garble");
            party.session.channel().expect("flush");
        });
        let session = EvaluatorSession::new(e, &mut rand::rng()).expect("base OT");
        let mut party = AggregatorGc::new(session, &key);
        let own: Vec<Vec<u64>> = shares.into_iter().map(|s| s.shares).collect();
        let (d, p) = rank_circuit(&mut party, &counts, None, Some(&own))
            .expect("evaluate")
            .expect("the aggregator learns D and P");
        garbler.join().expect("garbler");
        auc(d, p, counts.iter().sum::<usize>() as u64)
    }

    /// Ties within a Node and across Nodes (scores from a coarse grid), a Node without rows,
    /// probabilities 0 and 1, and uneven list lengths: the secure AUC is the pairwise one.
    #[test]
    fn secure_auc_equals_the_pairwise_definition_with_ties() {
        use rand::RngExt;
        let mut rng = rand::rng();
        let mut row = || {
            let s = f64::from(rng.random_range(0..=8u8)) / 8.0;
            (s, rng.random_bool(0.3 + 0.5 * s))
        };
        let nodes: Vec<Vec<(f64, bool)>> = [37, 0, 20, 5]
            .iter()
            .map(|&m| (0..m).map(|_| row()).collect())
            .collect();
        let all: Vec<(f64, bool)> = nodes.concat();
        let expected = auc_by_pairs(&all);
        let ours = secure_auc(&nodes).expect("both classes");
        assert!(
            (ours - expected).abs() < 1e-12,
            "ours {ours}, pairs {expected}"
        );
        // One class only: no AUC (scikit-learn raises).
        assert_eq!(secure_auc(&[vec![(0.5, true)], vec![(0.25, true)]]), None);
    }

    /// The shares recombine to the key and label, and the key order is the probability order.
    #[test]
    fn shares_recombine() {
        let seed = [7u8; SEED_BYTES];
        let theirs = keyholder_shares(&seed, 3);
        let rows = [(0.25, true), (1.0, false), (0.0, true)];
        for ((p, l), t) in rows.iter().zip(&theirs) {
            let (tk, tl) = split(*t);
            let mine = score_key(*p).wrapping_sub(tk) & ((1 << KEY_BITS) - 1);
            assert_eq!((mine + tk) & ((1 << KEY_BITS) - 1), score_key(*p));
            assert_eq!(l ^ tl ^ tl, *l);
        }
        assert!(score_key(1.0) < 1 << KEY_BITS);
        assert!(score_key(0.1) < score_key(0.1 + 1e-17 + 1e-16));
        assert_eq!(score_key(-0.0), score_key(0.0));
        assert_eq!(auc(0, 2, 4), Some(0.5));
        assert_eq!(auc(4, 2, 4), Some(1.0));
        assert_eq!(auc(0, 0, 4), None);
    }
}
