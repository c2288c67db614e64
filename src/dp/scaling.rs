//! Algorithm 1 step 7 (and Algorithm 3 step 5): rows scaled to norm at most a target.
//!
//! Each row is scaled using only itself and public constants, so neighbouring data sets stay
//! neighbouring and the privacy proofs apply unchanged. Scaling by the data's own largest norm
//! would leak that norm (and through it one record), so it is not offered.

use ndarray::{Array2, ArrayView2};

use privlogit_protocols::rows::unit_norm;
pub use privlogit_protocols::rows::unit_norm::norm_of;

use super::DpError;

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
    pub fn validate(self) -> Result<Self, DpError> {
        if let RowScaling::Clip { bound } = self {
            super::positive("row norm bound", bound)?;
        }
        Ok(self)
    }

    /// `x` with every row scaled to norm at most `target`, for training: a row with an entry
    /// that is not finite is refused by its number (scaling it would give a zero or a NaN row
    /// silently, and the privacy proof needs every row inside the ball).
    pub fn apply_checked(
        self,
        x: ArrayView2<'_, f64>,
        target: f64,
    ) -> Result<Array2<f64>, DpError> {
        let mut out = x.to_owned();
        let mut buffer = Vec::with_capacity(x.ncols());
        for (i, mut row) in out.rows_mut().into_iter().enumerate() {
            buffer.clear();
            buffer.extend(row.iter());
            if !self.scale_row(&mut buffer, target) {
                return Err(DpError {
                    name: "row",
                    value: i as f64,
                    reason: "has an entry that is not finite (counted from 0)",
                });
            }
            row.iter_mut().zip(&buffer).for_each(|(v, b)| *v = *b);
        }
        Ok(out)
    }

    /// `x` with every row scaled to norm at most `target`, for prediction: a row with an entry
    /// that is not finite becomes NaN (its probability is then NaN, not a guess).
    pub fn apply(self, x: ArrayView2<'_, f64>, target: f64) -> Array2<f64> {
        let mut out = x.to_owned();
        let mut buffer = Vec::with_capacity(x.ncols());
        for mut row in out.rows_mut() {
            buffer.clear();
            buffer.extend(row.iter());
            if !self.scale_row(&mut buffer, target) {
                buffer.fill(f64::NAN);
            }
            row.iter_mut().zip(&buffer).for_each(|(v, b)| *v = *b);
        }
        out
    }

    /// Scales `row` in place to norm at most `target`; false for a non-finite entry. The norm
    /// is taken after dividing by the largest magnitude (as LAPACK's `dnrm2` avoids overflow
    /// and underflow), and a result that rounding left a few ulps past `target` is pulled back
    /// inside: every scaled row has norm at most `target` ([`unit_norm`] holds the arithmetic,
    /// shared with a secure PLR study's Nodes).
    fn scale_row(self, row: &mut [f64], target: f64) -> bool {
        if row.iter().any(|v| !v.is_finite()) {
            return false;
        }
        match self {
            RowScaling::Normalize => unit_norm::scale_onto(row, target),
            RowScaling::Clip { bound } if norm_of(row) > bound => {
                unit_norm::scale_onto(row, target)
            }
            // |v| <= norm <= bound, so v / bound cannot overflow (target / bound could).
            RowScaling::Clip { bound } => {
                row.iter_mut().for_each(|v| *v = *v / bound * target);
                unit_norm::pull_inside(row, target)
            }
        }
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

    /// Rows of subnormal entries (whose naive norm `sqrt(row . row)` underflows: the row was
    /// scaled past the target, to norm 1.0000000000000002 or worse), of huge entries (whose
    /// naive norm overflows: the row became zero) and of ordinary ones all end with norm at
    /// most the target, measured by an overflow-free norm; the direction is kept.
    #[test]
    fn extreme_rows_end_within_the_target() {
        let tiny = 5e-324_f64;
        let rows = [
            vec![tiny, tiny, 3.0 * tiny],
            vec![1e-310, -2e-310, 3e-311],
            vec![1e300, 1e300, -1e300],
            vec![0.1, 0.2, 0.3],
            vec![1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0],
        ];
        for scaling in [RowScaling::Normalize, RowScaling::Clip { bound: 1e-320 }] {
            for r in &rows {
                let x = ndarray::Array2::from_shape_vec((1, 3), r.clone()).expect("row");
                let out = scaling.apply_checked(x.view(), 1.0).expect("finite");
                let got = out.row(0).to_vec();
                let want = match scaling {
                    RowScaling::Normalize => 1.0,
                    // norm / bound, with the norm kept as largest * unit (a subnormal norm
                    // itself has few significant bits).
                    RowScaling::Clip { bound } => {
                        let largest = r.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
                        let unit = r.iter().map(|v| (v / largest).powi(2)).sum::<f64>().sqrt();
                        (largest / bound * unit).min(1.0)
                    }
                };
                assert!(norm_of(&got) <= 1.0, "{scaling:?} {r:?}: {got:?}");
                assert!(
                    (norm_of(&got) - want).abs() <= 1e-6 * want,
                    "{scaling:?} {r:?}: {got:?}, norm {} not {want}",
                    norm_of(&got)
                );
                // Same direction: the sign pattern and the order of magnitudes kept.
                for (a, b) in got.iter().zip(r) {
                    assert_eq!(a.signum(), b.signum());
                }
            }
        }
        let bad = array![[1.0, f64::INFINITY], [0.0, 1.0]];
        let e = RowScaling::Normalize
            .apply_checked(bad.view(), 1.0)
            .expect_err("refused");
        assert_eq!((e.name, e.value), ("row", 0.0));
        assert!(RowScaling::Normalize.apply(bad.view(), 1.0)[[0, 0]].is_nan());
    }
}
