//! Oblivious merging of sorted lists: Batcher's odd-even merge network (Batcher 1968, "Sorting
//! networks and their applications"; Knuth, TAOCP vol. 3, sec. 5.3.4), whose comparators are
//! fixed by the lists' public lengths alone, so a circuit running it reveals nothing of the
//! values.
//!
//! Lists of unequal length are padded with public "+infinity" slots, which need no gates: a
//! comparator meeting one moves it up in the clear, and only comparators between two real
//! items are built. Each layer of the network is one batch per bit position.
//! A comparator costs `2 n + t` ANDs for `n`-bit keys and `t` carried bits (compare, then swap
//! key and payload).

use crate::backend::{Backend, Bit, Builder, Word};

/// An item: an unsigned key and bits carried with it (a label, say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item<W> {
    /// The sort key, least significant bit first.
    pub key: Word<W>,
    /// Carried along, not compared.
    pub payload: Word<W>,
}

/// Comparators per batch: bounds the memory of one batch's labels (about `2^13 (2 n + t)`
/// pairs) without costing the garbler its pipelining.
const CHUNK: usize = 1 << 12;

/// The items of `lists` (each sorted ascending by key, of one key and payload width) merged
/// into one list sorted ascending; items with equal keys come out in an order that depends
/// only on the lengths. The two shortest lists are merged first, so `k` lists of `m` items
/// cost about `m k log2(m k) log2(k)` comparators (ties in length broken by position,
/// publicly).
///
/// # Panics
///
/// If a bit is a public constant: the items are secret inputs or values computed from them.
pub fn merge_sorted<B: Backend>(
    b: &mut Builder<B>,
    lists: Vec<Vec<Item<B::Wire>>>,
) -> Vec<Item<B::Wire>> {
    let key_bits = lists.iter().flatten().next().map_or(0, |i| i.key.len());
    let mut lists: Vec<Vec<Vec<B::Wire>>> = lists
        .into_iter()
        .filter(|l| !l.is_empty())
        .map(|l| l.into_iter().map(wires).collect())
        .collect();
    while lists.len() > 1 {
        // Stable: lists of one length keep their order, the same on both sides of a session.
        lists.sort_by_key(Vec::len);
        let first = lists.remove(0);
        let second = lists.remove(0);
        lists.push(merge_two(b.backend_mut(), key_bits, first, second));
    }
    lists
        .pop()
        .unwrap_or_default()
        .into_iter()
        .map(|mut bits| {
            let payload = bits
                .split_off(key_bits)
                .into_iter()
                .map(Bit::Wire)
                .collect();
            Item {
                key: bits.into_iter().map(Bit::Wire).collect(),
                payload,
            }
        })
        .collect()
}

/// An item's key and payload bits as one list of wires.
fn wires<W>(item: Item<W>) -> Vec<W> {
    item.key
        .into_iter()
        .chain(item.payload)
        .map(|bit| match bit {
            Bit::Wire(w) => w,
            Bit::Const(c) => panic!("merge_sorted takes wires, got the constant {c}"),
        })
        .collect()
}

/// The comparator pairs `(i, j)`, `i < j`, of Batcher's odd-even merge of two sorted halves of
/// `2 half` slots, layer by layer (pairs within a layer touch distinct slots).
pub fn merge_layers(half: usize) -> Vec<Vec<(usize, usize)>> {
    assert!(half.is_power_of_two(), "halves of a power-of-two length");
    let n = 2 * half;
    let mut layers = Vec::new();
    let mut k = half;
    while k >= 1 {
        let mut layer = Vec::new();
        let mut j = k % half;
        while j + k < n {
            for i in 0..k.min(n - j - k) {
                layer.push((i + j, i + j + k));
            }
            j += 2 * k;
        }
        layers.push(layer);
        k /= 2;
    }
    layers
}

/// Two sorted lists (items as wires, the first `key_bits` the key) merged by the network on
/// their padded slots.
fn merge_two<B: Backend>(
    b: &mut B,
    key_bits: usize,
    first: Vec<Vec<B::Wire>>,
    second: Vec<Vec<B::Wire>>,
) -> Vec<Vec<B::Wire>> {
    let half = first.len().max(second.len()).next_power_of_two();
    let total = first.len() + second.len();
    let pad = |list: Vec<Vec<B::Wire>>| {
        let len = list.len();
        list.into_iter()
            .map(Some)
            .chain(std::iter::repeat_n(None, half - len))
    };
    let mut slots: Vec<Option<Vec<B::Wire>>> = pad(first).chain(pad(second)).collect();
    let mut scratch = Scratch::default();
    for layer in merge_layers(half) {
        let mut secret = Vec::new();
        for (i, j) in layer {
            match (&slots[i], &slots[j]) {
                // Infinity above a real item: the swap is public.
                (None, Some(_)) => slots.swap(i, j),
                (Some(_), Some(_)) => secret.push((i, j)),
                _ => {}
            }
        }
        for chunk in secret.chunks(CHUNK) {
            compare_exchange(b, key_bits, &mut slots, chunk, &mut scratch);
        }
    }
    let merged: Vec<Vec<B::Wire>> = slots.into_iter().take(total).flatten().collect();
    assert_eq!(merged.len(), total, "padding sorts last");
    merged
}

/// Buffers reused from batch to batch.
struct Scratch<W> {
    xs: Vec<W>,
    ys: Vec<W>,
    carries: Vec<W>,
    pairs: Vec<(W, W)>,
    products: Vec<W>,
}

impl<W> Default for Scratch<W> {
    fn default() -> Self {
        Self {
            xs: Vec::new(),
            ys: Vec::new(),
            carries: Vec::new(),
            pairs: Vec::new(),
            products: Vec::new(),
        }
    }
}

/// For every pair `(i, j)`: the smaller key into slot `i`, the larger into `j` (equal keys
/// stay put), with their payloads. Works on the backend's wires directly: every bit here is a
/// wire, so the builder's constant folding would only cost time.
fn compare_exchange<B: Backend>(
    b: &mut B,
    key_bits: usize,
    slots: &mut [Option<Vec<B::Wire>>],
    pairs: &[(usize, usize)],
    s: &mut Scratch<B::Wire>,
) {
    let item = |k: usize| slots[k].as_ref().expect("a real item");
    let m = pairs.len();
    let Some(&(i0, _)) = pairs.first() else {
        return;
    };
    // The keys bit-major (`[bit * m + c]`), read item by item: the carry chain below walks
    // each bit position across the batch, and items scattered over the heap would make every
    // step of that walk a cache miss.
    let fill = item(i0)[0].clone();
    s.xs.clear();
    s.xs.resize(key_bits * m, fill.clone());
    s.ys.clear();
    s.ys.resize(key_bits * m, fill);
    for (c, &(i, j)) in pairs.iter().enumerate() {
        for (bit, (x, y)) in item(i).iter().zip(item(j)).take(key_bits).enumerate() {
            s.xs[bit * m + c] = x.clone();
            s.ys[bit * m + c] = y.clone();
        }
    }
    // y >= x as the carry out of y + !x + 1; the first position, with carry 1, is
    // !(x_0 & !y_0).
    s.pairs.clear();
    for (x, y) in s.xs[..m].iter().zip(&s.ys[..m]) {
        s.pairs.push((x.clone(), b.not(y)));
    }
    b.and_many_into(&s.pairs, &mut s.products);
    s.carries.clear();
    for t in &s.products {
        s.carries.push(b.not(t));
    }
    for bit in 1..key_bits {
        s.pairs.clear();
        let row = bit * m..(bit + 1) * m;
        for ((x, y), c) in s.xs[row.clone()].iter().zip(&s.ys[row]).zip(&s.carries) {
            let not_x = b.not(x);
            s.pairs.push((b.xor(y, c), b.xor(&not_x, c)));
        }
        b.and_many_into(&s.pairs, &mut s.products);
        for (c, t) in s.carries.iter_mut().zip(&s.products) {
            *c = b.xor(t, c);
        }
    }
    // Swap when x > y, i.e. not (y >= x): d = (x ^ y) & swap, then x ^= d and y ^= d.
    s.pairs.clear();
    for (&(i, j), c) in pairs.iter().zip(&s.carries) {
        let swap = b.not(c);
        let (x, y) = (item(i), item(j));
        for (a, e) in x.iter().zip(y) {
            s.pairs.push((swap.clone(), b.xor(a, e)));
        }
    }
    b.and_many_into(&s.pairs, &mut s.products);
    let mut diffs = s.products.iter();
    for &(i, j) in pairs {
        let (low, high) = slots.split_at_mut(j);
        let (x, y) = (
            low[i].as_mut().expect("a real item"),
            high[0].as_mut().expect("a real item"),
        );
        for (a, e) in x.iter_mut().zip(y.iter_mut()) {
            let d = diffs.next().expect("one difference per bit");
            *a = b.xor(a, d);
            *e = b.xor(e, d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Plain;
    use proptest::prelude::*;

    fn items(b: &mut Builder<Plain>, list: &[(u64, bool)]) -> Vec<Item<bool>> {
        list.iter()
            .map(|&(k, t)| Item {
                key: b.input_u128(u128::from(k), 12),
                payload: vec![Bit::Wire(t)],
            })
            .collect()
    }

    fn read(list: &[Item<bool>]) -> Vec<(u64, bool)> {
        list.iter()
            .map(|i| {
                (
                    Builder::value(&i.key) as u64,
                    Builder::value(&i.payload) == 1,
                )
            })
            .collect()
    }

    proptest! {
        /// Any number of sorted lists of any lengths merge into the sorted multiset of their
        /// items, payloads travelling with their keys (keys from a small range, so ties occur).
        #[test]
        fn merges_like_sorting(
            lists in prop::collection::vec(prop::collection::vec((0u64..40, any::<bool>()), 0..45), 0..5)
        ) {
            let mut b = Builder::plain();
            let mut sorted_lists = lists.clone();
            for l in &mut sorted_lists {
                l.sort_by_key(|&(k, _)| k);
            }
            let inputs: Vec<Vec<Item<bool>>> = sorted_lists.iter().map(|l| items(&mut b, l)).collect();
            let merged = read(&merge_sorted(&mut b, inputs));
            let mut expected: Vec<(u64, bool)> = lists.concat();
            expected.sort();
            let keys: Vec<u64> = merged.iter().map(|m| m.0).collect();
            prop_assert!(keys.windows(2).all(|w| w[0] <= w[1]), "sorted: {:?}", keys);
            let mut as_multiset = merged.clone();
            as_multiset.sort();
            prop_assert_eq!(as_multiset, expected);
        }
    }

    /// The network's size: Batcher's merge of two halves of `2^k` has `k 2^k + 1` comparators
    /// (Knuth 5.3.4, eq. (5)); no slot appears twice in one layer.
    #[test]
    fn network_size() {
        for k in 0..10 {
            let layers = merge_layers(1 << k);
            let count: usize = layers.iter().map(Vec::len).sum();
            assert_eq!(count, (k << k) + 1, "half 2^{k}");
            for layer in &layers {
                let mut seen = std::collections::HashSet::new();
                assert!(
                    layer
                        .iter()
                        .all(|&(i, j)| i < j && seen.insert(i) && seen.insert(j))
                );
            }
        }
    }

    /// Padding costs no gates: merging 3 + 1 items costs the comparators between real items
    /// only, each `2 n + t` ANDs (here `n = 12`, `t = 1`).
    #[test]
    fn padding_is_free() {
        let mut b = Builder::counter();
        let item = |b: &mut Builder<crate::backend::Counter>| Item {
            key: b.input(12),
            payload: b.input(1),
        };
        let first: Vec<_> = (0..3).map(|_| item(&mut b)).collect();
        let second = vec![item(&mut b)];
        merge_sorted(&mut b, vec![first, second]);
        let ands = b.counts().and;
        assert_eq!(ands % 25, 0, "{ands}");
        // Two halves of 4: the full network has 9 comparators; those touching the 3 padded
        // slots of the second half are free.
        assert!(ands / 25 < 9, "{ands}");
    }
}
