//! One party's design block over the shared rows: its columns in the common order,
//! standardised over those rows when the study asks (each party its own columns, so nothing
//! leaves it but the statistics), else each column larger than the study's public bound divided
//! by the power of two that brings it within (the study is then fitted in raw units, see
//! `secure::vertical_roles`), the intercept leading the labelling party's block, every value
//! checked against the bound.

/// A party's columns over the rows it shares with the others, ready to deal.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// `rows x columns` by rows (the intercept first when the block leads).
    pub x: Vec<f64>,
    /// Its number of columns (with the intercept).
    pub columns: usize,
    /// Each feature column's mean and standard deviation over the shared rows (ddof 0, as the
    /// pooled standardiser), when standardised.
    pub standardization: Option<(Vec<f64>, Vec<f64>)>,
    /// Unstandardised: each feature column's divisor, a power of two (1 for a column within the
    /// bound); `None` when every column is within it.
    pub scales: Option<Vec<f64>>,
}

/// Why a party's columns cannot enter the study.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockError {
    /// A column with one value over the shared rows cannot be standardised.
    #[error(
        "column {name:?} is constant over the shared rows ({value}): it cannot be standardised; \
         leave it out with setting `exclude`"
    )]
    Constant {
        /// The column.
        name: String,
        /// Its value.
        value: f64,
    },
    /// A value that is not a finite number.
    #[error("column {name:?} holds {value} (on a shared row): not a number a study can fit")]
    NotFinite {
        /// The column.
        name: String,
        /// The value.
        value: f64,
    },
    /// A value beyond the public bound on features.
    #[error(
        "column {name:?} holds {value} (on a shared row): a vertical study's feature values must \
         stay below {limit} in magnitude{hint}"
    )]
    OutOfRange {
        /// The column.
        name: String,
        /// The value as the party's file holds it.
        value: f64,
        /// The bound.
        limit: f64,
        /// What to do about it.
        hint: &'static str,
    },
}

/// The block of a party whose file holds `x` (`held x names.len()` by rows), over its shared
/// `rows` (indices into `x`, in the common order): standardised when `standardize`, else each
/// column whose largest magnitude reaches `2^value_bits` divided by the least power of two that
/// brings it below; with an intercept column first when `intercept`; every value below
/// `2^value_bits` in magnitude, a value that is not finite refused.
pub fn block(
    x: &[f64],
    names: &[String],
    rows: &[usize],
    standardize: bool,
    intercept: bool,
    value_bits: u32,
) -> Result<Block, BlockError> {
    let w = names.len();
    let n = rows.len();
    let mut shared: Vec<f64> = Vec::with_capacity(n * w);
    for &r in rows {
        shared.extend_from_slice(&x[r * w..(r + 1) * w]);
    }
    if let Some(at) = shared.iter().position(|v| !v.is_finite()) {
        return Err(BlockError::NotFinite {
            name: names[at % w].clone(),
            value: shared[at],
        });
    }
    let mut scaled = shared.clone();
    let standardization = if standardize {
        let (mut means, mut scales) = (Vec::with_capacity(w), Vec::with_capacity(w));
        for (j, name) in names.iter().enumerate() {
            let column = (0..n).map(|i| shared[i * w + j]);
            let mean = column.clone().sum::<f64>() / n as f64;
            let var = column.map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            let sd = var.sqrt();
            if sd == 0.0 || sd <= 1e-12 * mean.abs() {
                return Err(BlockError::Constant {
                    name: name.clone(),
                    value: mean,
                });
            }
            for i in 0..n {
                scaled[i * w + j] = (shared[i * w + j] - mean) / sd;
            }
            means.push(mean);
            scales.push(sd);
        }
        Some((means, scales))
    } else {
        None
    };
    let limit = f64::from(value_bits).exp2();
    let scales = if standardize {
        None
    } else {
        raw_scales(&shared, w, limit)
    };
    if let Some(scales) = &scales {
        for (i, v) in scaled.iter_mut().enumerate() {
            *v /= scales[i % w];
        }
    }
    if let Some(at) = scaled
        .iter()
        .position(|v| !v.is_finite() || v.abs() >= limit)
    {
        // Only a standardised column can get here: a raw one was divided into the bound.
        return Err(BlockError::OutOfRange {
            name: names[at % w].clone(),
            value: shared[at],
            limit,
            hint: "",
        });
    }
    let columns = w + usize::from(intercept);
    let mut out = Vec::with_capacity(n * columns);
    for i in 0..n {
        if intercept {
            out.push(1.0);
        }
        out.extend_from_slice(&scaled[i * w..(i + 1) * w]);
    }
    Ok(Block {
        x: out,
        columns,
        standardization,
        scales,
    })
}

/// Each column's least power-of-two divisor that brings its largest magnitude below `limit`
/// (`shared` by rows, `w` columns, every value finite), or `None` when every column is within
/// it.
fn raw_scales(shared: &[f64], w: usize, limit: f64) -> Option<Vec<f64>> {
    let mut largest = vec![0.0f64; w];
    for (i, v) in shared.iter().enumerate() {
        largest[i % w] = largest[i % w].max(v.abs());
    }
    let scales: Vec<f64> = largest
        .iter()
        .map(|&m| {
            // Doubling and halving are exact: the power that puts the largest magnitude in
            // [limit / 2, limit) (1 for a column of zeros).
            let mut s = 1.0f64;
            if m == 0.0 {
                return s;
            }
            while m / s >= limit {
                s *= 2.0;
            }
            while m / s < limit / 2.0 {
                s /= 2.0;
            }
            s
        })
        .collect();
    scales.iter().any(|&s| s != 1.0).then_some(scales)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(k: usize) -> Vec<String> {
        (0..k).map(|j| format!("c{j}")).collect()
    }

    #[test]
    fn standardises_the_shared_rows_only_and_leads_with_the_intercept() {
        // Rows 0..4 of a 2-column file; rows 3 and 1 shared, in that order.
        let x = [1.0, 10.0, 2.0, 20.0, 100.0, -5.0, 4.0, 40.0];
        let b = block(&x, &names(2), &[3, 1], true, true, 6).expect("a block");
        // Means 3 and 30, standard deviations 1 and 10 (ddof 0) over the two shared rows.
        assert_eq!(b.standardization, Some((vec![3.0, 30.0], vec![1.0, 10.0])));
        assert_eq!(b.columns, 3);
        assert_eq!(b.x, vec![1.0, 1.0, 1.0, 1.0, -1.0, -1.0]);
    }

    #[test]
    fn refuses_a_constant_column_and_a_value_that_is_not_finite() {
        let x = [1.0, 5.0, 2.0, 5.0];
        assert_eq!(
            block(&x, &names(2), &[0, 1], true, false, 6),
            Err(BlockError::Constant {
                name: "c1".into(),
                value: 5.0
            })
        );
        for standardize in [false, true] {
            let x = [1.0, f64::NAN, 2.0, 3.0];
            let err = block(&x, &names(2), &[0, 1], standardize, false, 6).expect_err("NaN");
            assert!(
                matches!(err, BlockError::NotFinite { ref name, .. } if name == "c1"),
                "{err}"
            );
        }
    }

    /// Unstandardised, each column is divided by the power of two that puts its largest
    /// magnitude in [32, 64): 2 by 2^-4, 64 by 2, 138.1 by 4, 1e9 by 2^24; a block whose columns
    /// are all there is left as it is.
    #[test]
    fn divides_raw_columns_into_the_bound_by_powers_of_two() {
        let x = [1.0, 64.0, -138.1, 1e9, 2.0, -3.0, 5.0, -1.0];
        let b = block(&x, &names(4), &[0, 1], false, true, 6).expect("a block");
        assert_eq!(b.standardization, None);
        assert_eq!(b.scales, Some(vec![0.0625, 2.0, 4.0, 16_777_216.0]));
        assert_eq!(
            b.x,
            vec![
                1.0,
                16.0,
                32.0,
                -34.525,
                1e9 / 16_777_216.0,
                1.0,
                32.0,
                -1.5,
                1.25,
                -1.0 / 16_777_216.0
            ]
        );
        let b = block(&[40.0, -63.9], &names(2), &[0], false, false, 6).expect("a block");
        assert_eq!((b.scales, b.x), (None, vec![40.0, -63.9]));
    }
}
