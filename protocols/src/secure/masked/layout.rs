//! Where the entries of a cross term `Enc(X) R` (an `m x n` matrix) sit in its ciphertexts. Both
//! servers compute the same layout from public shapes: the aggregator to know which
//! multi-exponentiations to run, the key holder to read the decrypted slots back.
//!
//! - Tall columns (`m > slots / 2`) are cut into blocks of `slots` rows, as
//!   [`super::packed::PackedMatrix`] packs them.
//! - Short columns share ciphertexts: `q = slots / m` columns per block, column `t` of a group
//!   at slot offset `t m`. The aggregator raises `q` copies of `Enc(X)` encrypted at those
//!   offsets, so one decryption serves `q` columns instead of one (the recursion's small blocks
//!   would otherwise fill a ninth of each plaintext).
//! - Only the entries a product needs are laid out: all of them, or one triangle for a product
//!   known to be symmetric (its key holder mirrors the other).

/// Which entries of the output are wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Every entry.
    All,
    /// Entries on or below the diagonal (`row >= column`).
    Lower,
    /// Entries on or above the diagonal (`row <= column`).
    Upper,
}

impl Need {
    /// The rows of column `j` (of `m`) that are wanted.
    fn rows(self, j: usize, m: usize) -> std::ops::Range<usize> {
        match self {
            Need::All => 0..m,
            Need::Lower => j.min(m)..m,
            Need::Upper => 0..(j + 1).min(m),
        }
    }
}

/// Slots `offset .. offset + count` of a block hold rows `row .. row + count` of `column`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Output column.
    pub column: usize,
    /// First row.
    pub row: usize,
    /// Rows.
    pub count: usize,
    /// First slot.
    pub offset: usize,
}

/// The blocks of one cross term, in the order they travel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Rows of the output.
    pub rows: usize,
    /// Columns of the output.
    pub cols: usize,
    /// Copies of the operand the aggregator needs, at slot offsets `0, rows, 2 rows, ...`.
    pub copies: usize,
    /// Each ciphertext's segments.
    pub blocks: Vec<Vec<Segment>>,
}

/// The layout of an `rows x cols` output in plaintexts of `slots` slots.
pub fn layout(rows: usize, cols: usize, slots: usize, need: Need) -> Layout {
    assert!(rows > 0 && slots > 0, "a non-empty output and plaintext");
    let wanted = |j: usize| need.rows(j, rows);
    let columns: Vec<usize> = (0..cols).filter(|&j| !wanted(j).is_empty()).collect();
    if 2 * rows <= slots && columns.len() > 1 {
        // As many copies as columns can share a plaintext, and no more than there are columns.
        let groups = columns.len().div_ceil(slots / rows);
        let copies = columns.len().div_ceil(groups);
        let blocks = columns
            .chunks(copies)
            .map(|group| {
                group
                    .iter()
                    .enumerate()
                    .map(|(t, &column)| Segment {
                        column,
                        row: 0,
                        count: rows,
                        offset: t * rows,
                    })
                    .collect()
            })
            .collect();
        return Layout {
            rows,
            cols,
            copies,
            blocks,
        };
    }
    // Block-row by block-row, so consecutive blocks share their bases (the operand's blocks).
    let mut blocks = Vec::new();
    for b in 0..rows.div_ceil(slots) {
        let (start, end) = (b * slots, ((b + 1) * slots).min(rows));
        for j in 0..cols {
            let w = wanted(j);
            if w.start < end && start < w.end {
                blocks.push(vec![Segment {
                    column: j,
                    row: start,
                    count: end - start,
                    offset: 0,
                }]);
            }
        }
    }
    Layout {
        rows,
        cols,
        copies: 1,
        blocks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every wanted entry appears exactly once, in a slot inside its plaintext.
    fn covers(l: &Layout, slots: usize, need: Need) {
        let mut seen = vec![0u32; l.rows * l.cols];
        for block in &l.blocks {
            let mut used = vec![false; slots];
            for s in block {
                for i in 0..s.count {
                    assert!(
                        !std::mem::replace(&mut used[s.offset + i], true),
                        "slot reused"
                    );
                    seen[(s.row + i) * l.cols + s.column] += 1;
                }
            }
        }
        for i in 0..l.rows {
            for j in 0..l.cols {
                if need.rows(j, l.rows).contains(&i) {
                    assert_eq!(seen[i * l.cols + j], 1, "({i}, {j}) once");
                }
            }
        }
    }

    #[test]
    fn layouts_cover_what_is_wanted() {
        for (rows, cols, slots) in [
            (1, 1, 9),
            (3, 7, 9),
            (4, 4, 9),
            (5, 3, 9),
            (50, 50, 9),
            (13, 12, 9),
        ] {
            for need in [Need::All, Need::Lower, Need::Upper] {
                covers(&layout(rows, cols, slots, need), slots, need);
            }
        }
        // Short columns share: 3 rows in 9 slots is 3 columns per plaintext.
        assert_eq!(layout(3, 7, 9, Need::All).blocks.len(), 3);
        // A symmetric 50 x 50 product lays out under two thirds of its blocks (the diagonal
        // blocks are whole).
        let full = layout(50, 50, 9, Need::All).blocks.len();
        let lower = layout(50, 50, 9, Need::Lower).blocks.len();
        assert!(lower * 100 < full * 65, "{lower} of {full}");
    }
}
