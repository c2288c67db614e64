//! Algorithm 1 step 7 (and Algorithm 3 step 5): rows scaled to norm at most a target.
//!
//! Each row is scaled using only itself and public constants, so neighbouring data sets stay
//! neighbouring and the privacy proofs apply unchanged. Scaling by the data's own largest norm
//! would leak that norm (and through it one record), so it is not offered.

use ndarray::{Array2, ArrayView2};

/// How rows are brought to norm at most the target (1 in PLR, `q_k` in a feature group).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowScaling {
    /// Every row divided by its own norm (then multiplied by the target): all rows land on the
    /// sphere. Assumes the direction of a row carries the signal (true for PCA features and
    /// pixels); a zero row stays zero.
    Normalize,
    /// Rows divided by a public bound `R` on their norm; rows longer than `R` are shrunk onto
    /// it (clipped), as diffprivlib's `data_norm` does. Assumes `R` is known without looking
    /// at the data (a range from the data dictionary, e.g. 255 sqrt(784) for MNIST pixels).
    Clip {
        /// The public norm bound `R`.
        bound: f64,
    },
}

impl RowScaling {
    /// A clip bound must be positive and finite.
    pub fn validate(self) -> Result<Self, super::DpError> {
        if let RowScaling::Clip { bound } = self {
            super::positive("row norm bound", bound)?;
        }
        Ok(self)
    }

    /// `x` with every row scaled to norm at most `target`.
    pub fn apply(self, x: ArrayView2<'_, f64>, target: f64) -> Array2<f64> {
        let mut out = x.to_owned();
        for mut row in out.rows_mut() {
            let norm = row.dot(&row).sqrt();
            let factor = match self {
                RowScaling::Normalize if norm > 0.0 => target / norm,
                RowScaling::Normalize => 0.0,
                RowScaling::Clip { bound } => target / bound.max(norm),
            };
            row *= factor;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn rows_end_within_the_target() {
        let x = array![[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]];
        let close = |a: ndarray::Array2<f64>, b: ndarray::Array2<f64>| {
            assert!((&a - &b).iter().all(|d| d.abs() < 1e-15), "{a} vs {b}");
        };
        close(
            RowScaling::Normalize.apply(x.view(), 0.5),
            array![[0.3, 0.4], [0.3, 0.4], [0.0, 0.0]],
        );
        // Row 1 (norm 5 > 2) is clipped onto the unit sphere; row 2 (norm 0.5) is divided by 2.
        close(
            RowScaling::Clip { bound: 2.0 }.apply(x.view(), 1.0),
            array![[0.6, 0.8], [0.15, 0.2], [0.0, 0.0]],
        );
    }
}
