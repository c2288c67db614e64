//! Pooled z-scores (ddof = 0) and the intercept column.
//!
//! The statistics are those of the pooled rows, formed the way a distributed study forms them,
//! in two aggregation rounds (the textbook two-pass algorithm, which avoids the cancellation of
//! `sum x^2 - N mean^2`): each party sums its columns, the sums give the pooled mean; then each
//! party sums its squared deviations from that mean. All sums are compensated
//! ([`CompensatedSum`]), so the statistics, and therefore the standardised data, do not depend on
//! how the rows are partitioned. The row count, means and standard deviations are public by
//! design (docs/src/security-model.md).

use ndarray::{Array1, Array2, ArrayView2};
use privlogit_protocols::compensated::CompensatedSum;

use super::table::{DataError, DatasetView};

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
    pub fn fit(parties: &[DatasetView<'_>]) -> Result<Self, DataError> {
        let first = parties.first().expect("at least one party");
        let p = first.names.len();
        let count: usize = parties.iter().map(|d| d.x.nrows()).sum();
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
            if !(m.is_finite() && s.is_finite()) {
                return Err(DataError::Overflow {
                    name: first.names[j].to_string(),
                    what: if m.is_finite() {
                        "standard deviation"
                    } else {
                        "mean"
                    },
                });
            }
            if s <= 1e-12 * m.abs() || s == 0.0 {
                return Err(DataError::ConstantColumn {
                    name: first.names[j].to_string(),
                    value: m,
                });
            }
        }
        Ok(Self {
            names: first.names.to_vec(),
            means: mean,
            scales,
        })
    }
}

/// The design matrix of `x` in one pass: a leading column of ones when `intercept`, then each
/// feature, as `(x - mean) / sd` when `standardizer` is given. Returns new memory, so the
/// caller's rows (a loaded table, or a numpy array read in place) are never changed.
pub fn design_matrix(
    x: ArrayView2<'_, f64>,
    standardizer: Option<&Standardizer>,
    intercept: bool,
) -> Array2<f64> {
    let offset = usize::from(intercept);
    let mut out = Array2::zeros((x.nrows(), x.ncols() + offset));
    for (mut target, row) in out.outer_iter_mut().zip(x.outer_iter()) {
        if intercept {
            target[0] = 1.0;
        }
        let features = target.iter_mut().skip(offset).zip(row.iter());
        match standardizer {
            Some(s) => {
                for ((t, &v), (&m, &sd)) in features.zip(s.means.iter().zip(s.scales.iter())) {
                    *t = (v - m) / sd;
                }
            }
            None => features.for_each(|(t, &v)| *t = v),
        }
    }
    out
}

/// The coefficient names of [`design_matrix`]'s columns; refuses a feature named like the
/// intercept.
pub fn design_names(names: &[String], intercept: bool) -> Result<Vec<String>, DataError> {
    if !intercept {
        return Ok(names.to_vec());
    }
    if names.iter().any(|n| n == INTERCEPT) {
        return Err(DataError::InterceptClash);
    }
    Ok(std::iter::once(INTERCEPT.to_string())
        .chain(names.iter().cloned())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Dataset;
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
        let s = Standardizer::fit(&[party(a).view(), party(b).view()]).expect("varied columns");
        // numpy.mean([1,2,4,8,16]) = 6.2, numpy.std(...) = 5.455272678794343
        // numpy.mean([10,20,25,5,0]) = 12.0, numpy.std(...) = 9.273618495495704
        assert!((s.means[0] - 6.2).abs() < 1e-14);
        assert!((s.scales[0] - 5.455272678794343).abs() < 1e-14);
        assert!((s.means[1] - 12.0).abs() < 1e-14);
        assert!((s.scales[1] - 9.273618495495704).abs() < 1e-14);
    }

    #[test]
    fn constant_column_is_refused() {
        let err = Standardizer::fit(&[party(array![[0.1, 1.0], [0.1, 2.0], [0.1, 3.0]]).view()])
            .expect_err("constant column");
        assert!(err.to_string().contains("\"a\""));
    }

    #[test]
    fn intercept_goes_first() {
        let d = party(array![[3.0, 4.0]]);
        assert_eq!(
            design_matrix(d.x.view(), None, true),
            array![[1.0, 3.0, 4.0]]
        );
        assert_eq!(
            design_names(&d.names, true).expect("no clash"),
            vec!["intercept", "a", "b"]
        );
        assert!(design_names(&["intercept".to_string()], true).is_err());
    }

    /// The fused pass gives the same bits as subtracting the means and then dividing by the
    /// standard deviations over the whole matrix.
    #[test]
    fn design_matrix_standardises_like_whole_matrix_arithmetic() {
        let a = party(array![[1.0, 10.0], [2.0, 20.0], [4.0, 25.3]]);
        let s = Standardizer::fit(&[a.view()]).expect("varied columns");
        let expected = (&a.x - &s.means) / &s.scales;
        let got = design_matrix(a.x.view(), Some(&s), false);
        assert_eq!(got, expected);
        let with_ones = design_matrix(a.x.view(), Some(&s), true);
        assert_eq!(with_ones.column(0).to_vec(), vec![1.0; 3]);
        assert_eq!(with_ones.slice(ndarray::s![.., 1..]), expected);
    }
}
