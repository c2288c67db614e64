//! Fixed blocks of rows, whatever chunks a source hands over.
//!
//! Every per-row sum a Node computes is formed block by block: a block's partial result is
//! computed on its own (in parallel with the other blocks of the chunk) and the partials are
//! merged strictly in block order. Blocks are counted from the source's first row, so the
//! grouping of every floating-point operation depends on row indices only: a file read in
//! chunks of any size, the same rows in memory and a regenerated simulation give bit-identical
//! sums. A block that straddles two chunks is copied into a small carry buffer.

use ndarray::{ArrayView1, ArrayView2};
use rayon::prelude::*;

use super::row_source::RowSource;
use super::rows_error::{RowsError, RowsProblem};

/// Rows per block: large enough that a block's `p x p` product runs at matrix-multiply speed
/// and merging its partial into the running sums costs little beside it.
pub const BLOCK_ROWS: usize = 1024;

/// Computes `partial` on every block of [`BLOCK_ROWS`] consecutive rows of `source` (the last
/// block may be shorter) and hands the results to `merge` in block order. Blocks of one chunk
/// run in parallel on rayon.
pub fn for_each_block<T, P, M>(
    source: &dyn RowSource,
    partial: P,
    mut merge: M,
) -> Result<(), RowsError>
where
    T: Send,
    P: Fn(ArrayView2<'_, f64>, ArrayView1<'_, f64>) -> T + Sync,
    M: FnMut(T),
{
    if source.random_access() {
        return for_each_block_at_random(source, &partial, &mut merge);
    }
    let p = source.columns();
    let mut carry_x: Vec<f64> = Vec::with_capacity(BLOCK_ROWS * p);
    let mut carry_y: Vec<f64> = Vec::with_capacity(BLOCK_ROWS);
    let carried = |x: &[f64], y: &[f64]| {
        let x = ArrayView2::from_shape((y.len(), p), x).expect("carry holds whole rows");
        partial(x, ArrayView1::from(y))
    };
    source.scan(&mut |x, y| {
        if x.ncols() != p || x.nrows() != y.len() {
            return Err(RowsError::new(
                source.describe(),
                RowsProblem::ChunkShape {
                    rows: x.nrows(),
                    columns: x.ncols(),
                    labels: y.len(),
                    expected: p,
                },
            ));
        }
        let x = x.as_standard_layout();
        let y = y.as_standard_layout();
        let xs = x.as_slice().expect("standard layout");
        let ys = y.as_slice().expect("standard layout");
        let n = ys.len();
        let mut offset = 0;
        if !carry_y.is_empty() {
            let take = (BLOCK_ROWS - carry_y.len()).min(n);
            carry_x.extend_from_slice(&xs[..take * p]);
            carry_y.extend_from_slice(&ys[..take]);
            offset = take;
            if carry_y.len() == BLOCK_ROWS {
                merge(carried(&carry_x, &carry_y));
                carry_x.clear();
                carry_y.clear();
            }
        }
        let full = (n - offset) / BLOCK_ROWS;
        let partials: Vec<T> = (0..full)
            .into_par_iter()
            .map(|b| {
                let start = offset + b * BLOCK_ROWS;
                let end = start + BLOCK_ROWS;
                let xb = ArrayView2::from_shape((BLOCK_ROWS, p), &xs[start * p..end * p])
                    .expect("whole rows");
                partial(xb, ArrayView1::from(&ys[start..end]))
            })
            .collect();
        partials.into_iter().for_each(&mut merge);
        offset += full * BLOCK_ROWS;
        carry_x.extend_from_slice(&xs[offset * p..]);
        carry_y.extend_from_slice(&ys[offset..]);
        Ok(())
    })?;
    if !carry_y.is_empty() {
        merge(carried(&carry_x, &carry_y));
    }
    Ok(())
}

/// A block's partial result from its rows and labels.
type Partial<'a, T> = dyn Fn(ArrayView2<'_, f64>, ArrayView1<'_, f64>) -> T + Sync + 'a;

/// Blocks a batch at a time: read (or regenerated) and summed in the same task, in parallel,
/// merged in order. The closures go by reference: one dynamic call per block costs nothing.
fn for_each_block_at_random<T: Send>(
    source: &dyn RowSource,
    partial: &Partial<'_, T>,
    merge: &mut dyn FnMut(T),
) -> Result<(), RowsError> {
    let (n, p) = (source.rows(), source.columns());
    let blocks = n.div_ceil(BLOCK_ROWS);
    let batch = 16 * rayon::current_num_threads().max(1);
    for first in (0..blocks).step_by(batch) {
        let last = (first + batch).min(blocks);
        let partials: Vec<Result<T, RowsError>> = (first..last)
            .into_par_iter()
            .map_init(
                || (Vec::new(), Vec::new()),
                |(xb, yb): &mut (Vec<f64>, Vec<f64>), b| {
                    let start = b * BLOCK_ROWS;
                    let len = BLOCK_ROWS.min(n - start);
                    xb.resize(len * p, 0.0);
                    yb.resize(len, 0.0);
                    source.read_rows(start, xb, yb)?;
                    let x = ArrayView2::from_shape((len, p), &xb[..]).expect("whole rows");
                    Ok(partial(x, ArrayView1::from(&yb[..])))
                },
            )
            .collect();
        for result in partials {
            merge(result?);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::memory::MemoryRows;
    use crate::rows::row_source::ChunkVisitor;
    use ndarray::{Array1, Array2, s};

    /// The same rows handed over in ragged chunks.
    #[derive(Debug)]
    struct Ragged(MemoryRows, Vec<usize>);

    impl RowSource for Ragged {
        fn describe(&self) -> String {
            "ragged".into()
        }
        fn rows(&self) -> usize {
            self.0.rows()
        }
        fn columns(&self) -> usize {
            self.0.columns()
        }
        fn names(&self) -> Vec<String> {
            self.0.names()
        }
        fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
            let mut start = 0;
            for &len in self.1.iter().cycle() {
                if start >= self.rows() {
                    break;
                }
                let end = (start + len).min(self.rows());
                visit(
                    self.0.x().slice(s![start..end, ..]),
                    self.0.y().slice(s![start..end]),
                )?;
                start = end;
            }
            Ok(())
        }
    }

    /// Blocks start at multiples of BLOCK_ROWS whatever the chunks, and arrive in order.
    #[test]
    fn blocks_follow_row_indices_not_chunks() {
        let n = 3 * BLOCK_ROWS + 17;
        let x = Array2::from_shape_fn((n, 2), |(i, j)| (i * 2 + j) as f64);
        let y = Array1::from_shape_fn(n, |i| (i % 2) as f64);
        let memory = MemoryRows::new(x, y);
        let starts = |source: &dyn RowSource| {
            let mut seen = Vec::new();
            for_each_block(
                source,
                |xb, _| (xb[(0, 0)] / 2.0, xb.nrows()),
                |b| seen.push(b),
            )
            .expect("in memory");
            seen
        };
        let expected: Vec<(f64, usize)> = (0..4)
            .map(|b| ((b * BLOCK_ROWS) as f64, BLOCK_ROWS.min(n - b * BLOCK_ROWS)))
            .collect();
        assert_eq!(starts(&memory), expected);
        for chunks in [vec![1], vec![5, 1000, 333], vec![BLOCK_ROWS + 1]] {
            assert_eq!(starts(&Ragged(memory.clone(), chunks)), expected);
        }
    }
}
