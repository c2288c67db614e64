//! Server-aided private set intersection (Kamara, Mohassel, Raykova and Sadeghian, "Scaling
//! private set intersection to billion-element sets", FC 2014, the semi-honest server-aided
//! protocol): the parties share a 256-bit key no server holds; each sends the aggregator its
//! identifiers' keyed hashes (HMAC-SHA256, 128-bit tags), sorted; the aggregator intersects the
//! tag lists and tells each party which of its own tags are in the intersection. The common row
//! order is the tags' ascending order, which every party computes itself.
//!
//! What each side learns (docs/src/security-model.md, "Vertical studies"): a party, its own rows
//! in the intersection and its size; the aggregator, the number of identifiers each party holds
//! and how the tag sets overlap (every subset's intersection size), never an identifier or a
//! tag it can compute (it has no key); the key holder, nothing. A party that colludes with the
//! aggregator can test guesses of identifiers against every party's tags: the protocol relies on
//! the aggregator colluding with no party, as the secure fit does.
//!
//! Why not ECDH-PSI over Ristretto255: measured on this project's machine type (2 cores, Xeon
//! 2.5 GHz, curve25519-dalek 5), hashing to the group costs 13-15 us and a variable-base
//! multiplication with compression 57-67 us, so two parties' 1,000,000 identifiers each (one
//! hash and two multiplications per identifier and party) take about 130 s; the keyed hashes
//! take about one second.

use std::cmp::Ordering;

use hmac::{Hmac, Mac};
use rand::CryptoRng;
use rayon::prelude::*;
use sha2::Sha256;
use zeroize::Zeroizing;

/// Bytes of a tag: 128 bits, so that two of 2^32 identifiers collide with probability about
/// 2^-65.
pub const TAG_BYTES: usize = 16;

/// One identifier's keyed hash.
pub type Tag = [u8; TAG_BYTES];

/// The key every party holds and no server does.
pub struct PsiKey(Zeroizing<[u8; 32]>);

impl PsiKey {
    /// A fresh key (the leading party draws it).
    pub fn generate<R: CryptoRng>(rng: &mut R) -> Self {
        let mut key = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(key.as_mut());
        Self(key)
    }

    /// A key received from the leading party.
    pub fn from_bytes(bytes: &[u8; 32]) -> Self {
        Self(Zeroizing::new(*bytes))
    }

    /// The key's bytes, to seal for another party.
    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The tag of one identifier.
    pub fn tag(&self, id: &[u8]) -> Tag {
        self.keyed().tag(id)
    }

    fn keyed(&self) -> Keyed {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(self.0.as_ref()).expect("HMAC takes any key");
        mac.update(b"privlogit psi v1\0");
        Keyed(mac)
    }
}

/// HMAC with the key and the domain label absorbed, cloned per identifier.
#[derive(Clone)]
struct Keyed(Hmac<Sha256>);

impl Keyed {
    fn tag(&self, id: &[u8]) -> Tag {
        let mut mac = self.0.clone();
        mac.update(id);
        let full = mac.finalize().into_bytes();
        full[..TAG_BYTES].try_into().expect("16 of 32 bytes")
    }
}

/// Why an intersection could not be formed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PsiError {
    /// One identifier twice in a party's file (rows numbered from 0 here; the loader names the
    /// lines).
    #[error("the identifier {id:?} appears twice, in rows {first} and {second}")]
    Duplicate {
        /// The identifier.
        id: String,
        /// Its first row.
        first: usize,
        /// The repeated row.
        second: usize,
    },
    /// A tag list that is not strictly ascending (a party must sort and deduplicate).
    #[error("party {party}'s tags are not strictly ascending at position {at}")]
    Unsorted {
        /// The party, from 1.
        party: usize,
        /// The first position out of order.
        at: usize,
    },
    /// A membership answer that does not fit the party's list.
    #[error("an intersection answer for {got} tags, this party sent {expected}")]
    Answer {
        /// The party's list length.
        expected: usize,
        /// What the answer covers.
        got: usize,
    },
}

/// One party's identifiers, tagged: the sorted tags with the rows they came from.
pub struct TaggedRows {
    sorted: Vec<(Tag, usize)>,
}

impl TaggedRows {
    /// Tags every identifier (in parallel) and sorts them; a repeated identifier is an error
    /// naming both rows.
    pub fn new<S: AsRef<[u8]> + Sync>(key: &PsiKey, ids: &[S]) -> Result<Self, PsiError> {
        let keyed = key.keyed();
        let mut sorted: Vec<(Tag, usize)> = ids
            .par_iter()
            .enumerate()
            .map(|(row, id)| (keyed.tag(id.as_ref()), row))
            .collect();
        sorted.par_sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            let (first, second) = (w[0].1.min(w[1].1), w[0].1.max(w[1].1));
            return Err(PsiError::Duplicate {
                id: String::from_utf8_lossy(ids[first].as_ref()).into_owned(),
                first,
                second,
            });
        }
        Ok(Self { sorted })
    }

    /// What the party sends the aggregator: its tags in ascending order (nothing of its row
    /// order).
    pub fn tags(&self) -> Vec<Tag> {
        self.sorted.iter().map(|(t, _)| *t).collect()
    }

    /// How many identifiers the party holds.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Whether the party holds none.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The party's rows in the intersection, in the common order (ascending tag).
    pub fn rows_in_common_order(&self, answer: &Membership) -> Result<Vec<usize>, PsiError> {
        if answer.len != self.sorted.len() {
            return Err(PsiError::Answer {
                expected: self.sorted.len(),
                got: answer.len,
            });
        }
        Ok(self
            .sorted
            .iter()
            .enumerate()
            .filter(|(i, _)| answer.contains(*i))
            .map(|(_, (_, row))| *row)
            .collect())
    }
}

/// The aggregator's answer to one party: which positions of its sorted tag list are in the
/// intersection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    bits: Vec<u64>,
    len: usize,
}

impl Membership {
    fn new(len: usize) -> Self {
        Self {
            bits: vec![0; len.div_ceil(64)],
            len,
        }
    }

    fn insert(&mut self, i: usize) {
        self.bits[i / 64] |= 1 << (i % 64);
    }

    /// Whether position `i` is in the intersection.
    pub fn contains(&self, i: usize) -> bool {
        i < self.len && self.bits[i / 64] >> (i % 64) & 1 == 1
    }

    /// The intersection's size.
    pub fn count(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The answer as bytes (length, then the bitmap's words), for the wire.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 8 * self.bits.len());
        out.extend_from_slice(&(self.len as u64).to_le_bytes());
        for w in &self.bits {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// An answer read back; `None` when the bytes are not one (or claim more than `max` tags).
    pub fn from_bytes(bytes: &[u8], max: usize) -> Option<Self> {
        let len = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
        if len > max || bytes.len() != 8 + 8 * len.div_ceil(64) {
            return None;
        }
        let bits: Vec<u64> = bytes[8..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let me = Self { bits, len };
        // No bit beyond the length.
        (me.count() == (0..len).filter(|&i| me.contains(i)).count()).then_some(me)
    }
}

/// The aggregator's step: the intersection of every party's sorted tag list, as one answer per
/// party. Lists must be strictly ascending (a party's own check against repeated identifiers,
/// enforced again here so a list cannot claim a tag twice).
pub fn intersect(lists: &[Vec<Tag>]) -> Result<Vec<Membership>, PsiError> {
    for (p, list) in lists.iter().enumerate() {
        if let Some(at) = list.windows(2).position(|w| w[0] >= w[1]) {
            return Err(PsiError::Unsorted {
                party: p + 1,
                at: at + 1,
            });
        }
    }
    let Some((first, rest)) = lists.split_first() else {
        return Ok(Vec::new());
    };
    let mut common: Vec<Tag> = first.clone();
    for list in rest {
        common = merge_common(&common, list);
    }
    Ok(lists
        .iter()
        .map(|list| {
            let mut answer = Membership::new(list.len());
            for_each_shared(list, &common, |i| answer.insert(i));
            answer
        })
        .collect())
}

/// The tags two ascending lists share.
fn merge_common(a: &[Tag], b: &[Tag]) -> Vec<Tag> {
    let mut out = Vec::new();
    for_each_shared(a, b, |i| out.push(a[i]));
    out
}

/// Calls `found(i)` for every position `i` of `a` whose tag `b` also holds (both ascending).
fn for_each_shared(a: &[Tag], b: &[Tag], mut found: impl FnMut(usize)) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                found(i);
                i += 1;
                j += 1;
            }
        }
    }
}

/// Everything one in-process intersection produced, with the aggregator's view kept for tests
/// and the benchmark.
pub struct Intersection {
    /// Per party, its rows in the intersection in the common order.
    pub rows: Vec<Vec<usize>>,
    /// What the aggregator received: every party's tags, and the sealed keys it relayed.
    pub aggregator_view: AggregatorView,
}

/// The bytes the aggregator saw.
pub struct AggregatorView {
    /// Each party's tag list.
    pub tags: Vec<Vec<Tag>>,
    /// The recipients' public keys and the sealed PSI keys it relayed.
    pub relayed: Vec<Vec<u8>>,
}

/// Runs the whole protocol for parties in one process, with the messages the roles exchange:
/// party 1 draws the key and seals it for every other party's X25519 public key (both relayed
/// by the aggregator), every party sends its sorted tags, the aggregator answers.
pub fn intersect_in_process<S: AsRef<[u8]> + Sync, R: CryptoRng>(
    ids: &[Vec<S>],
    rng: &mut R,
) -> Result<Intersection, PsiError> {
    use super::sealed::{Recipient, seal};
    let mut relayed = Vec::new();
    let leader_key = PsiKey::generate(rng);
    let mut keys = vec![PsiKey::from_bytes(leader_key.bytes())];
    for _ in 1..ids.len() {
        let recipient = Recipient::generate(rng);
        let public = recipient.public();
        let sealed =
            seal(leader_key.bytes(), &public, rng).expect("a fresh key is not of low order");
        relayed.push(public.to_vec());
        relayed.push(sealed.to_vec());
        let opened = recipient.open(&sealed).expect("sealed for this recipient");
        keys.push(PsiKey::from_bytes(&opened));
    }
    let tagged = ids
        .iter()
        .zip(&keys)
        .map(|(ids, key)| TaggedRows::new(key, ids))
        .collect::<Result<Vec<_>, _>>()?;
    let tags: Vec<Vec<Tag>> = tagged.iter().map(TaggedRows::tags).collect();
    let answers = intersect(&tags)?;
    let rows = tagged
        .iter()
        .zip(&answers)
        .map(|(t, a)| t.rows_in_common_order(a))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Intersection {
        rows,
        aggregator_view: AggregatorView { tags, relayed },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    use rand_chacha::ChaCha20Rng;

    fn ids(range: std::ops::Range<u32>) -> Vec<String> {
        range.map(|i| format!("person-{i:07}")).collect()
    }

    #[test]
    fn three_parties_find_their_common_rows_in_one_order() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let mut a = ids(0..1000);
        let mut b = ids(100..1100);
        let mut c = ids(50..950);
        a.shuffle(&mut rng);
        b.shuffle(&mut rng);
        c.shuffle(&mut rng);
        let out =
            intersect_in_process(&[a.clone(), b.clone(), c.clone()], &mut rng).expect("a value");
        // The intersection is persons 100..950, and every party lists them in the same order.
        let named = |ids: &[String], rows: &[usize]| -> Vec<String> {
            rows.iter().map(|&r| ids[r].clone()).collect()
        };
        let order_a = named(&a, &out.rows[0]);
        assert_eq!(order_a.len(), 850);
        assert_eq!(order_a, named(&b, &out.rows[1]));
        assert_eq!(order_a, named(&c, &out.rows[2]));
        let mut sorted = order_a.clone();
        sorted.sort();
        assert_eq!(sorted, ids(100..950));
    }

    #[test]
    fn the_aggregator_sees_keyed_tags_only() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let a = ids(0..500);
        let b = ids(250..750);
        let out = intersect_in_process(&[a.clone(), b.clone()], &mut rng).expect("a value");
        let view = &out.aggregator_view;
        // No identifier's bytes, nor any 16-byte window of them, nor an unkeyed hash of them,
        // appears in what the aggregator received.
        let mut seen: Vec<u8> = view.tags.iter().flatten().flatten().copied().collect();
        seen.extend(view.relayed.iter().flatten());
        for id in a.iter().chain(&b) {
            let bytes = id.as_bytes();
            assert!(!seen.windows(bytes.len()).any(|w| w == bytes));
            let unkeyed = <sha2::Sha256 as sha2::Digest>::digest(bytes);
            assert!(!seen.windows(TAG_BYTES).any(|w| w == &unkeyed[..TAG_BYTES]));
        }
        // The tags are those of a key the aggregator never saw in the clear: another key gives
        // other tags.
        let other = PsiKey::generate(&mut rng);
        let other_tags = TaggedRows::new(&other, &a).expect("a value").tags();
        assert!(other_tags.iter().all(|t| !view.tags[0].contains(t)));
    }

    #[test]
    fn a_party_learns_nothing_outside_the_intersection() {
        // Its answer is a bitmap over its own sorted tags: it depends on the other parties'
        // identifiers only through which of its own are shared. Two worlds whose other party
        // differs only outside the intersection give the same answer, bit for bit.
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let key = PsiKey::generate(&mut rng);
        let mine = TaggedRows::new(&key, &ids(0..300)).expect("a value");
        let world_one = TaggedRows::new(&key, &ids(200..400)).expect("a value");
        let mut other: Vec<String> = ids(200..300);
        other.extend(ids(5000..5100));
        let world_two = TaggedRows::new(&key, &other).expect("a value");
        let one = intersect(&[mine.tags(), world_one.tags()]).expect("a value");
        let two = intersect(&[mine.tags(), world_two.tags()]).expect("a value");
        assert_eq!(one[0], two[0]);
        assert_eq!(one[0].to_bytes(), two[0].to_bytes());
        assert_eq!(one[0].count(), 100);
    }

    #[test]
    fn a_repeated_identifier_names_both_rows() {
        let key = PsiKey::from_bytes(&[9; 32]);
        let err = TaggedRows::new(&key, &["a", "b", "c", "b"])
            .err()
            .expect("an error");
        assert_eq!(
            err,
            PsiError::Duplicate {
                id: "b".into(),
                first: 1,
                second: 3
            }
        );
    }

    #[test]
    fn an_unsorted_list_is_refused_and_answers_round_trip() {
        let t = |b: u8| [b; TAG_BYTES];
        let err = intersect(&[vec![t(1), t(3)], vec![t(2), t(2)]]).expect_err("an error");
        assert_eq!(err, PsiError::Unsorted { party: 2, at: 1 });
        let answers =
            intersect(&[vec![t(1), t(3), t(5)], vec![t(3), t(4), t(5)]]).expect("a value");
        let bytes = answers[0].to_bytes();
        assert_eq!(Membership::from_bytes(&bytes, 3), Some(answers[0].clone()));
        assert_eq!(Membership::from_bytes(&bytes, 2), None);
        assert_eq!(Membership::from_bytes(&bytes[..bytes.len() - 1], 3), None);
        assert!(answers[0].contains(1) && answers[0].contains(2) && !answers[0].contains(0));
    }
}
