//! Word gadgets over many independent lanes at once: the same operation on `k` pairs of words,
//! issued bit position by bit position so that each position is one batch of `k` ANDs. A
//! garbling backend hashes a batch together (the fixed-key AES pipelines), which a gate-by-gate
//! ripple over one word at a time cannot do; the gates, and so the circuit, are the same.

use crate::backend::{Backend, Bit, Builder, Word};

/// `x_k + y_k` modulo `2^n` for every lane (`n - 1` ANDs a lane, `n - 1` batches).
pub fn add<B: Backend>(
    b: &mut Builder<B>,
    xs: &[Word<B::Wire>],
    ys: &[Word<B::Wire>],
) -> Vec<Word<B::Wire>> {
    assert_eq!(xs.len(), ys.len(), "one y per x");
    let n = xs.first().map_or(0, Vec::len);
    assert!(
        xs.iter().chain(ys).all(|w| w.len() == n),
        "operands of one width"
    );
    let mut carries = vec![Bit::Const(false); xs.len()];
    let mut sums: Vec<Word<B::Wire>> = xs.iter().map(|_| Vec::with_capacity(n)).collect();
    let mut pairs = Vec::with_capacity(xs.len());
    let mut products = Vec::with_capacity(xs.len());
    for i in 0..n {
        pairs.clear();
        for ((x, y), c) in xs.iter().zip(ys).zip(&carries) {
            pairs.push((b.xor(&x[i], c), b.xor(&y[i], c)));
        }
        for (((x, y), c), sum) in xs.iter().zip(ys).zip(&carries).zip(&mut sums) {
            let xy = b.xor(&x[i], &y[i]);
            sum.push(b.xor(&xy, c));
        }
        if i + 1 == n {
            break;
        }
        products.clear();
        b.and_many_into(&pairs, &mut products);
        for (c, t) in carries.iter_mut().zip(&products) {
            *c = b.xor(t, c);
        }
    }
    sums
}

/// `x_k == y_k` for every lane (`n - 1` ANDs a lane in a balanced tree, one batch a level).
pub fn equal<B: Backend>(
    b: &mut Builder<B>,
    xs: &[&[Bit<B::Wire>]],
    ys: &[&[Bit<B::Wire>]],
) -> Vec<Bit<B::Wire>> {
    assert_eq!(xs.len(), ys.len(), "one y per x");
    let mut levels: Vec<Vec<Bit<B::Wire>>> = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| {
            assert_eq!(x.len(), y.len(), "operands of one width");
            x.iter()
                .zip(y.iter())
                .map(|(a, c)| {
                    let d = b.xor(a, c);
                    b.not(&d)
                })
                .collect()
        })
        .collect();
    let mut pairs = Vec::new();
    let mut products = Vec::new();
    while levels.iter().any(|l| l.len() > 1) {
        pairs.clear();
        for level in &levels {
            for c in level.chunks_exact(2) {
                pairs.push((c[0].clone(), c[1].clone()));
            }
        }
        products.clear();
        b.and_many_into(&pairs, &mut products);
        let mut next = products.drain(..);
        for level in &mut levels {
            let odd = (level.len() % 2 == 1).then(|| level[level.len() - 1].clone());
            let halves = level.len() / 2;
            level.clear();
            level.extend(next.by_ref().take(halves));
            level.extend(odd);
        }
    }
    levels
        .into_iter()
        .map(|mut l| l.pop().unwrap_or(Bit::Const(true)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(b: &mut Builder<crate::backend::Plain>, v: &[u64], n: usize) -> Vec<Word<bool>> {
        v.iter().map(|&x| b.input_u128(u128::from(x), n)).collect()
    }

    proptest! {
        /// Each lane equals the integer operation (the one-word gadgets' semantics).
        #[test]
        fn lanes_match_integers(pairs in prop::collection::vec((0u64..1 << 20, 0u64..1 << 20), 1..20)) {
            let n = 20;
            let mut b = Builder::plain();
            let (xv, yv): (Vec<u64>, Vec<u64>) = pairs.iter().copied().unzip();
            let (xs, ys) = (words(&mut b, &xv, n), words(&mut b, &yv, n));
            let sums = add(&mut b, &xs, &ys);
            let xr: Vec<&[Bit<bool>]> = xs.iter().map(Vec::as_slice).collect();
            let yr: Vec<&[Bit<bool>]> = ys.iter().map(Vec::as_slice).collect();
            let eq = equal(&mut b, &xr, &yr);
            for (k, (x, y)) in pairs.iter().enumerate() {
                prop_assert_eq!(Builder::value(&sums[k]) as u64, (x + y) % (1 << n));
                prop_assert_eq!(eq[k].as_const().unwrap_or_else(|| matches!(eq[k], Bit::Wire(true))), x == y);
            }
        }
    }

    /// The AND counts the module promises.
    #[test]
    fn and_counts() {
        let mut b = Builder::counter();
        let xs: Vec<Word<()>> = (0..5).map(|_| b.input(16)).collect();
        let ys: Vec<Word<()>> = (0..5).map(|_| b.input(16)).collect();
        add(&mut b, &xs, &ys);
        assert_eq!(b.counts().and, 5 * 15);
        let xr: Vec<&[Bit<()>]> = xs.iter().map(Vec::as_slice).collect();
        let yr: Vec<&[Bit<()>]> = ys.iter().map(Vec::as_slice).collect();
        equal(&mut b, &xr, &yr);
        assert_eq!(b.counts().and, 5 * 15 + 5 * 15);
    }
}
