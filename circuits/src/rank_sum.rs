//! The Mann-Whitney statistic of a labelled list sorted by score, ties counted one half, as a
//! circuit: what an exact AUC needs once the scores are in order ([`crate::merge`]).
//!
//! With `P` positives and `N` negatives, the AUC is `U / (P N)` with
//! `U = #{(i, j): s_i > s_j} + #{(i, j): s_i = s_j} / 2` over positive `i` and negative `j`.
//! Scanning in ascending order with `below_neg(i)`, the negatives in tie groups strictly below
//! item `i` (and `below_pos` likewise),
//! `2 U = sum_pos below_neg + sum_pos (below_neg + ties) = D + P N` where
//! `D = sum_pos below_neg(i) - sum_neg below_pos(j)`
//! (the pairs with the negative not strictly below are `P N - sum_neg below_pos`). The circuit
//! returns `D` and `P`; `N` is the public row count less `P`.

use crate::backend::{Backend, Bit, Builder, Word};
use crate::lanes;
use crate::word::{add_with_carry, constant, select};

/// `D` (two's complement) and `P` of `sorted` (ascending by key; payload bit 0 the label),
/// as words of [`rank_sum_widths`] bits.
pub fn rank_sum<B: Backend>(
    b: &mut Builder<B>,
    sorted: &[crate::merge::Item<B::Wire>],
) -> (Word<B::Wire>, Word<B::Wire>) {
    let n = sorted.len();
    let (count_bits, d_bits) = rank_sum_widths(n);
    // Item k starts a new tie group unless its key equals item k-1's (one batch per level).
    let mut starts = vec![Bit::Const(true)];
    for chunk in (1..n).collect::<Vec<_>>().chunks(1 << 13) {
        let xs: Vec<&[Bit<B::Wire>]> = chunk.iter().map(|&k| sorted[k].key.as_slice()).collect();
        let ys: Vec<&[Bit<B::Wire>]> = chunk
            .iter()
            .map(|&k| sorted[k - 1].key.as_slice())
            .collect();
        starts.extend(lanes::equal(b, &xs, &ys).iter().map(|e| b.not(e)));
    }
    let zero = constant(0, count_bits);
    let (mut pos_seen, mut neg_seen) = (zero.clone(), zero.clone());
    let (mut pos_below, mut neg_below) = (zero.clone(), zero);
    let mut d = constant(0, d_bits);
    for (item, start) in sorted.iter().zip(&starts) {
        pos_below = select(b, start, &pos_seen, &pos_below);
        neg_below = select(b, start, &neg_seen, &neg_below);
        let label = item.payload[0].clone();
        let unlabelled = b.not(&label);
        // D += label ? neg_below : -pos_below, the negation as !pos_below + 1 (the carry in).
        let not_pos: Word<B::Wire> = pos_below.iter().map(|v| b.not(v)).collect();
        let mut term = select(b, &label, &neg_below, &not_pos);
        term.resize(d_bits, unlabelled.clone());
        d = add_with_carry(b, &d, &term, unlabelled.clone()).0;
        pos_seen = add_with_carry(b, &pos_seen, &constant(0, count_bits), label).0;
        neg_seen = add_with_carry(b, &neg_seen, &constant(0, count_bits), unlabelled).0;
    }
    (d, pos_seen)
}

/// Widths of the counts and of `D` for `n` items: counts up to `n`, `|D| <= n^2 / 4`.
pub fn rank_sum_widths(n: usize) -> (usize, usize) {
    let count_bits = (usize::BITS - n.leading_zeros()) as usize + 1;
    (count_bits, 2 * count_bits + 1)
}

/// `D` as an integer from its revealed bits.
pub fn signed_value(bits: &[bool]) -> i128 {
    let mut v: i128 = 0;
    for (i, &bit) in bits.iter().enumerate() {
        if bit {
            v |= 1 << i;
        }
    }
    if bits.last() == Some(&true) {
        v -= 1 << bits.len();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::Item;
    use proptest::prelude::*;

    /// `U` by its definition, over all pairs.
    fn u_by_pairs(rows: &[(u64, bool)]) -> f64 {
        let mut u = 0.0;
        for &(si, pi) in rows.iter().filter(|r| r.1) {
            let _ = pi;
            for &(sj, _) in rows.iter().filter(|r| !r.1) {
                u += if si > sj {
                    1.0
                } else if si == sj {
                    0.5
                } else {
                    0.0
                };
            }
        }
        u
    }

    proptest! {
        /// `(D + P N) / 2` is `U` by its definition, ties included (keys from a small range).
        #[test]
        fn u_from_the_scan(mut rows in prop::collection::vec((0u64..12, any::<bool>()), 1..60)) {
            rows.sort_by_key(|r| r.0);
            let mut b = Builder::plain();
            let items: Vec<Item<bool>> = rows
                .iter()
                .map(|&(k, l)| Item { key: b.input_u128(u128::from(k), 8), payload: vec![Bit::Wire(l)] })
                .collect();
            let (d, p) = rank_sum(&mut b, &items);
            let d_bits: Vec<bool> = d.iter().map(|x| matches!(x, Bit::Wire(true) | Bit::Const(true))).collect();
            let d = signed_value(&d_bits);
            let p = Builder::value(&p) as i128;
            let positives = rows.iter().filter(|r| r.1).count() as i128;
            prop_assert_eq!(p, positives);
            let negatives = rows.len() as i128 - p;
            prop_assert_eq!((d + p * negatives) as f64 / 2.0, u_by_pairs(&rows));
        }
    }

    #[test]
    fn signed_values() {
        assert_eq!(signed_value(&[true, false, true]), -3);
        assert_eq!(signed_value(&[true, true, false]), 3);
        assert_eq!(signed_value(&[]), 0);
    }
}
