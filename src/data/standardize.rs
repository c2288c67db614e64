//! Pooled z-scores (ddof = 0) and the intercept column.
//!
//! The statistics are those of the pooled rows, formed the way a distributed study forms them,
//! in two aggregation rounds (the textbook two-pass algorithm, which avoids the cancellation of
//! `sum x^2 - N mean^2`): each party sums its columns, the sums give the pooled mean; then each
//! party sums its squared deviations from that mean. All sums are compensated
//! ([`CompensatedSum`]), so the statistics, and therefore the standardised data, do not depend on
//! how the rows are partitioned. The row count, means and standard deviations are public by
//! design (ARCHITECTURE.md, "Parties and trust").

use ndarray::{Array1, Array2, Axis, concatenate};
use privlogit_protocols::compensated::CompensatedSum;

use super::{DataError, Dataset};

/// Name of the intercept column, always first.
pub const INTERCEPT: &str = "intercept";

/// Per-feature pooled mean and standard deviation.
#[derive(Debug, Clone, PartialEq)]
pub struct Standardizer {
    /// Feature names, in column order.
    pub names: Vec<String>,
    /// Pooled means.
    pub means: Array1<f64>,
    /// Pooled population standard deviations (ddof = 0).
    pub scales: Array1<f64>,
}

impl Standardizer {
    /// Pools the statistics of `parties` (which must agree on their features).
    pub fn fit(parties: &[Dataset]) -> Result<Self, DataError> {
        let first = parties.first().expect("at least one party");
        let p = first.names.len();
        let count: usize = parties.iter().map(Dataset::rows).sum();
        let pooled = |term: &dyn Fn(&[f64], &mut [f64])| -> Array1<f64> {
            let mut total = CompensatedSum::zeros(p);
            let mut row_terms = vec![0.0; p];
            for party in parties {
                let mut local = CompensatedSum::zeros(p);
                for row in party.x.as_standard_layout().outer_iter() {
                    term(row.as_slice().expect("standard layout"), &mut row_terms);
                    local.add_scaled(0, &row_terms, 1.0);
                }
                total.merge(&local);
            }
            Array1::from(total.values()) / count as f64
        };
        let mean = pooled(&|row, out| out.copy_from_slice(row));
        let means = mean.as_slice().expect("contiguous");
        let variance = pooled(&|row, out| {
            for ((o, x), m) in out.iter_mut().zip(row).zip(means) {
                *o = (x - m) * (x - m);
            }
        });
        let scales = variance.mapv(f64::sqrt);
        for (j, (&s, &m)) in scales.iter().zip(mean.iter()).enumerate() {
            if s <= 1e-12 * m.abs() || s == 0.0 {
                return Err(DataError::ConstantColumn {
                    name: first.names[j].clone(),
                    value: m,
                });
            }
        }
        Ok(Self {
            names: first.names.clone(),
            means: mean,
            scales,
        })
    }

    /// Replaces each feature `x` by `(x - mean) / sd`.
    pub fn apply(&self, data: &mut Dataset) {
        data.x -= &self.means;
        data.x /= &self.scales;
    }
}

/// Prepends a column of ones named [`INTERCEPT`].
pub fn add_intercept(data: &mut Dataset) -> Result<(), DataError> {
    if data.names.iter().any(|n| n == INTERCEPT) {
        return Err(DataError::InterceptClash);
    }
    let ones = Array2::ones((data.rows(), 1));
    data.x = concatenate(Axis(1), &[ones.view(), data.x.view()]).expect("same row count");
    data.names.insert(0, INTERCEPT.to_string());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn party(x: Array2<f64>) -> Dataset {
        let n = x.nrows();
        Dataset {
            source: "p".into(),
            names: vec!["a".into(), "b".into()],
            x,
            y: Array1::zeros(n),
        }
    }

    /// Pooled statistics equal those of the concatenated rows (numpy: mean, std with ddof=0).
    #[test]
    fn pooled_equals_concatenated() {
        let a = array![[1.0, 10.0], [2.0, 20.0], [4.0, 25.0]];
        let b = array![[8.0, 5.0], [16.0, 0.0]];
        let s = Standardizer::fit(&[party(a), party(b)]).expect("varied columns");
        // numpy.mean([1,2,4,8,16]) = 6.2, numpy.std(...) = 5.455272678794343
        // numpy.mean([10,20,25,5,0]) = 12.0, numpy.std(...) = 9.273618495495704
        assert!((s.means[0] - 6.2).abs() < 1e-14);
        assert!((s.scales[0] - 5.455272678794343).abs() < 1e-14);
        assert!((s.means[1] - 12.0).abs() < 1e-14);
        assert!((s.scales[1] - 9.273618495495704).abs() < 1e-14);
    }

    #[test]
    fn constant_column_is_refused() {
        let err = Standardizer::fit(&[party(array![[0.1, 1.0], [0.1, 2.0], [0.1, 3.0]])])
            .expect_err("constant column");
        assert!(err.to_string().contains("\"a\""));
    }

    #[test]
    fn intercept_goes_first() {
        let mut d = party(array![[3.0, 4.0]]);
        add_intercept(&mut d).expect("no clash");
        assert_eq!(d.names, vec!["intercept", "a", "b"]);
        assert_eq!(d.x, array![[1.0, 3.0, 4.0]]);
        assert!(add_intercept(&mut d).is_err());
    }
}
