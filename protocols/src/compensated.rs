//! Compensated summation: sums whose value does not depend on how the terms are grouped.
//!
//! Each accumulator keeps a running sum `hi` and the exact rounding error of every addition in
//! `lo` (Knuth's TwoSum), i.e. Ogita, Rump and Oishi's `Sum2` (SIAM J. Sci. Comput. 26(6),
//! 2005, Algorithm 4.4). The result `hi + lo` is as accurate as if it had been computed in twice
//! the working precision and then rounded: its error is at most `eps |sum| + gamma_{n-1}^2
//! sum |t_i|` with `eps = 2^-53`, `gamma_n ~ n eps`.
//!
//! Why the optimisers need this: a Node sums its own rows and the Center sums the Nodes, so the
//! grouping of the terms follows the partition of the rows. With plain f64 sums the iterates
//! then depend on the partition at the 1e-16 level, which an extrapolating optimiser amplifies
//! (we measured 1e-10 after 35 accelerated iterations). With these sums the grouping only enters
//! through the second-order term `gamma^2 sum |t_i|`, so different partitions give the same
//! rounded value unless cancellation is extreme (`sum |t_i| / |sum t_i|` beyond ~1e10), and even
//! then differ by one rounding.

/// A vector of compensated accumulators.
#[derive(Debug, Clone, PartialEq)]
pub struct CompensatedSum {
    hi: Vec<f64>,
    lo: Vec<f64>,
}

impl CompensatedSum {
    /// `len` accumulators, all zero.
    pub fn zeros(len: usize) -> Self {
        Self {
            hi: vec![0.0; len],
            lo: vec![0.0; len],
        }
    }

    /// Number of accumulators.
    pub fn len(&self) -> usize {
        self.hi.len()
    }

    /// True when there are no accumulators.
    pub fn is_empty(&self) -> bool {
        self.hi.is_empty()
    }

    /// Adds `term` to accumulator `i`.
    #[inline]
    pub fn add(&mut self, i: usize, term: f64) {
        let (s, e) = two_sum(self.hi[i], term);
        self.hi[i] = s;
        self.lo[i] += e;
    }

    /// Adds `scale * row[j]` to accumulator `offset + j` for every `j`.
    #[inline]
    pub fn add_scaled(&mut self, offset: usize, row: &[f64], scale: f64) {
        let hi = &mut self.hi[offset..offset + row.len()];
        let lo = &mut self.lo[offset..offset + row.len()];
        for ((h, l), &x) in hi.iter_mut().zip(lo.iter_mut()).zip(row) {
            let (s, e) = two_sum(*h, scale * x);
            *h = s;
            *l += e;
        }
    }

    /// Adds the lower triangle of `weight * row row^T`, packed row by row
    /// (`(0,0), (1,0), (1,1), (2,0), ...`), to the accumulators from 0.
    #[inline]
    pub fn add_outer_lower(&mut self, row: &[f64], weight: f64) {
        let mut offset = 0;
        for (j, &xj) in row.iter().enumerate() {
            self.add_scaled(offset, &row[..=j], weight * xj);
            offset += j + 1;
        }
    }

    /// Adds another set of accumulators of the same length, term by term.
    pub fn merge(&mut self, other: &CompensatedSum) {
        assert_eq!(self.len(), other.len(), "accumulators differ in length");
        for i in 0..self.len() {
            let (s, e) = two_sum(self.hi[i], other.hi[i]);
            self.hi[i] = s;
            self.lo[i] += e + other.lo[i];
        }
    }

    /// The running sums and their compensations, as [`Self::from_parts`] takes them.
    pub fn parts(&self) -> (&[f64], &[f64]) {
        (&self.hi, &self.lo)
    }

    /// Accumulators with running sums `hi` and compensations `lo` (what [`Self::parts`] gave).
    /// Panics if the lengths differ.
    pub fn from_parts(hi: Vec<f64>, lo: Vec<f64>) -> Self {
        assert_eq!(hi.len(), lo.len(), "one compensation per sum");
        Self { hi, lo }
    }

    /// The sums, each rounded once to f64.
    pub fn values(&self) -> Vec<f64> {
        self.hi.iter().zip(&self.lo).map(|(h, l)| h + l).collect()
    }
}

/// Knuth's TwoSum: `a + b = s + e` exactly, with `s = fl(a + b)`.
#[inline]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1e16 + 1 - 1e16 loses the 1 in f64; the compensated sum keeps it.
    #[test]
    fn recovers_cancelled_terms() {
        let mut acc = CompensatedSum::zeros(1);
        for t in [1e16, 1.0, -1e16, 1e-3] {
            acc.add(0, t);
        }
        assert_eq!(acc.values(), vec![1.001]);
    }

    /// Any grouping of the same terms gives the same value.
    #[test]
    fn grouping_does_not_matter() {
        let terms: Vec<f64> = (0..10_000)
            .map(|i| ((i as f64) * 0.7368).sin() * 10f64.powi((i % 17) - 8))
            .collect();
        let mut whole = CompensatedSum::zeros(1);
        terms.iter().for_each(|&t| whole.add(0, t));
        for parts in [3, 7, 64] {
            let mut total = CompensatedSum::zeros(1);
            for chunk in terms.chunks(terms.len().div_ceil(parts)) {
                let mut part = CompensatedSum::zeros(1);
                chunk.iter().for_each(|&t| part.add(0, t));
                total.merge(&part);
            }
            assert_eq!(total.values(), whole.values(), "{parts} parts");
        }
    }

    #[test]
    fn packed_outer_product() {
        let mut acc = CompensatedSum::zeros(6);
        acc.add_outer_lower(&[1.0, 2.0, 3.0], 0.5);
        assert_eq!(acc.values(), vec![0.5, 1.0, 2.0, 1.5, 3.0, 4.5]);
    }
}
