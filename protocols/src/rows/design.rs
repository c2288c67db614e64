//! The design matrix a study fits: a Node's raw features, standardised with the pooled means and
//! scales when the study asks, and an intercept column first when it asks for one; or, in a
//! secure PLR study, each row scaled onto the unit sphere by its own norm. Applied to each chunk
//! as it is read, so nothing the size of the data is ever held.

use std::sync::Arc;

use ndarray::{Array2, Axis};

use super::row_source::{ChunkVisitor, RowSource};
use super::rows_error::{RowsError, RowsProblem};
use super::unit_norm;

/// Name of the intercept column.
pub const INTERCEPT: &str = "intercept";

/// Raw rows turned into design rows on the fly.
#[derive(Debug, Clone)]
pub struct DesignRows {
    raw: Arc<dyn RowSource>,
    intercept: bool,
    standardize: Option<(Vec<f64>, Vec<f64>)>,
    unit_norm: bool,
    /// Raw columns at the end that are not features (a model's offset and weight): passed
    /// through unchanged.
    trailing: usize,
}

impl DesignRows {
    /// `raw`'s rows, with an intercept column first if `intercept`.
    pub fn new(raw: Arc<dyn RowSource>, intercept: bool) -> Self {
        Self {
            raw,
            intercept,
            standardize: None,
            unit_norm: false,
            trailing: 0,
        }
    }

    /// The last `k` raw columns pass through untouched (not standardised): a generalised
    /// linear model's offset and weight. Panics if the source has fewer columns.
    pub fn with_trailing(mut self, k: usize) -> Self {
        assert!(
            k <= self.raw.columns(),
            "more trailing columns than columns"
        );
        self.trailing = k;
        self
    }

    /// Raw columns that are features.
    fn features(&self) -> usize {
        self.raw.columns() - self.trailing
    }

    /// Every design row divided by its own norm (objective perturbation's public row rule,
    /// stacking paper Algorithm 1 step 7), after any other transformation; a row with an entry
    /// that is not finite is refused by its number.
    pub fn unit_norm(mut self) -> Self {
        self.unit_norm = true;
        self
    }

    /// Replaces each feature `x_j` by `(x_j - means[j]) / scales[j]`. Refuses statistics of the
    /// wrong length or scales that are not finite and positive.
    pub fn standardized(mut self, means: Vec<f64>, scales: Vec<f64>) -> Result<Self, RowsError> {
        let p = self.features();
        if means.len() != p
            || scales.len() != p
            || means.iter().any(|m| !m.is_finite())
            || scales.iter().any(|s| !(s.is_finite() && *s > 0.0))
        {
            return Err(RowsError::new(
                self.raw.describe(),
                RowsProblem::Standardization { features: p },
            ));
        }
        self.standardize = Some((means, scales));
        Ok(self)
    }

    fn not_finite(&self, row: usize) -> RowsError {
        RowsError::new(
            self.raw.describe(),
            RowsProblem::RowNotFinite { row: row + 1 },
        )
    }

    /// The raw source underneath.
    pub fn raw(&self) -> &Arc<dyn RowSource> {
        &self.raw
    }
}

impl RowSource for DesignRows {
    fn describe(&self) -> String {
        self.raw.describe()
    }

    fn rows(&self) -> usize {
        self.raw.rows()
    }

    fn columns(&self) -> usize {
        self.raw.columns() + usize::from(self.intercept)
    }

    fn names(&self) -> Vec<String> {
        let mut names = Vec::with_capacity(self.columns());
        if self.intercept {
            names.push(INTERCEPT.to_string());
        }
        names.extend(self.raw.names());
        names
    }

    fn random_access(&self) -> bool {
        self.raw.random_access()
    }

    fn partitioned(&self) -> Option<super::cluster_layers::Partitioned> {
        let inner = self.raw.partitioned()?;
        let layer = super::cluster_layers::Layer::Design(super::cluster_layers::DesignLayer {
            intercept: self.intercept,
            trailing: self.trailing,
            standardize: self.standardize.clone(),
            unit_norm: self.unit_norm,
        });
        Some(inner.with(layer))
    }

    /// Reads the raw rows into the front of `x`, then widens them in place from the last row
    /// back (each design row ends at or after where its raw row ends), so no scratch is needed.
    fn read_rows(&self, start: usize, x: &mut [f64], y: &mut [f64]) -> Result<(), RowsError> {
        let n = y.len();
        let (raw_p, first) = (self.raw.columns(), usize::from(self.intercept));
        let p = raw_p + first;
        self.raw.read_rows(start, &mut x[..n * raw_p], y)?;
        for i in (0..n).rev() {
            x.copy_within(i * raw_p..(i + 1) * raw_p, i * p + first);
            let row = &mut x[i * p..(i + 1) * p];
            if self.intercept {
                row[0] = 1.0;
            }
            if let Some((means, scales)) = &self.standardize {
                for ((v, m), s) in row[first..].iter_mut().zip(means).zip(scales) {
                    *v = (*v - m) / s;
                }
            }
            let width = p - self.trailing;
            if self.unit_norm && !unit_norm::scale_onto(&mut row[..width], 1.0) {
                return Err(self.not_finite(start + i));
            }
        }
        Ok(())
    }

    fn scan(&self, visit: &mut ChunkVisitor<'_>) -> Result<(), RowsError> {
        if !self.intercept && self.standardize.is_none() && !self.unit_norm {
            return self.raw.scan(visit);
        }
        let first = usize::from(self.intercept);
        let mut seen = 0;
        self.raw.scan(&mut |x, y| {
            let mut design = Array2::ones((x.nrows(), x.ncols() + first));
            design.slice_mut(ndarray::s![.., first..]).assign(&x);
            if let Some((means, scales)) = &self.standardize {
                for mut row in design.axis_iter_mut(Axis(0)) {
                    for ((v, m), s) in row.iter_mut().skip(first).zip(means).zip(scales) {
                        *v = (*v - m) / s;
                    }
                }
            }
            if self.unit_norm {
                for (i, mut row) in design.axis_iter_mut(Axis(0)).enumerate() {
                    let row = row
                        .as_slice_mut()
                        .expect("a fresh array's rows are contiguous");
                    let width = row.len() - self.trailing;
                    if !unit_norm::scale_onto(&mut row[..width], 1.0) {
                        return Err(self.not_finite(seen + i));
                    }
                }
            }
            seen += x.nrows();
            visit(design.view(), y)
        })
    }
}
