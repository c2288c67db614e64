//! The plaintext distributed fit, end to end: prepare the parties (agreement check, pooled
//! standardisation, intercept), run an optimiser over [`PlaintextAggregation`], and score the
//! result on the pooled rows.

pub mod job;
pub mod sites;
pub mod vertical_join;

use std::sync::Arc;

use ndarray::{Array1, Array2, Axis};
use privlogit_protocols::optimizer::Initial;
use privlogit_protocols::rows::reordered::Reordered;
use privlogit_protocols::rows::{RowSource, RowsError, RowsProblem};
use privlogit_protocols::secure::study_protocol::poisson_start;
use privlogit_protocols::{
    Family, FitError, FitOptions, FitReport, Glm, IterationRecord, Optimizer, PartyData,
    PlaintextAggregation,
};

use crate::data::partition::check_agreement;
use crate::data::standardize::{Standardizer, design_matrix, design_names};
use crate::data::{DataError, Dataset, DatasetView};
use crate::inference::estimability;
use crate::inference::{GlmSums, Goodness, InferenceError, Wald, spd_inverse};
use crate::metrics;

/// How to turn raw parties into model inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preparation {
    /// Z-score every feature with the pooled mean and standard deviation (ddof = 0).
    pub standardize: bool,
    /// Prepend a column of ones named `intercept`.
    pub intercept: bool,
}

impl Default for Preparation {
    fn default() -> Self {
        Self {
            standardize: false,
            intercept: true,
        }
    }
}

/// The largest offset a Poisson model takes: `exp(700)` is about 1e304, near the largest f64.
const MAX_LOG_OFFSET: f64 = 700.0;

/// The model's family and the columns carrying its offset and prior weights (taken out of the
/// features; they travel after the design columns, [`Glm`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GlmColumns {
    /// The label's distribution.
    pub family: Family,
    /// The offset column's name.
    pub offset: Option<String>,
    /// The prior-weight column's name.
    pub weights: Option<String>,
}

impl GlmColumns {
    /// The model a fit's or a study's settings name; an offset or weight column that is the
    /// label or an excluded column is refused by name (the table would not have it, and the
    /// message said "not found").
    pub fn of(spec: &crate::settings::Spec) -> Result<Self, crate::error::Error> {
        use crate::error::{Error, SettingProblem};
        for (key, column) in [("offset", &spec.offset), ("weights", &spec.weights)] {
            let Some(column) = column else { continue };
            let why = if spec.label.as_ref() == Some(column) {
                "names the label column: a model's offset and weights are columns of their own"
            } else if spec.exclude.contains(column) {
                "names a column setting `exclude` leaves out"
            } else {
                continue;
            };
            return Err(Error::bad(key, SettingProblem::Refused { why }));
        }
        Ok(Self {
            family: spec.family,
            offset: spec.offset.clone(),
            weights: spec.weights.clone(),
        })
    }

    /// What the rows carry.
    pub fn glm(&self) -> Glm {
        Glm {
            family: self.family,
            offset: self.offset.is_some(),
            weights: self.weights.is_some(),
        }
    }

    /// Where the offset and weight columns are among `names` (offset first; empty when the
    /// model has neither). Refuses a column `source` lacks and one named for both.
    fn indices(&self, names: &[String], source: &str) -> Result<Vec<usize>, DataError> {
        let wanted = [("offset", &self.offset), ("weights", &self.weights)]
            .into_iter()
            .filter_map(|(role, c)| c.as_ref().map(|c| (role, c)));
        let mut columns = Vec::with_capacity(2);
        for (role, name) in wanted {
            let j =
                names
                    .iter()
                    .position(|n| n == name)
                    .ok_or_else(|| DataError::UnknownColumn {
                        path: source.into(),
                        line: 1,
                        role,
                        name: name.clone(),
                        available: names.join(", "),
                    })?;
            if columns.contains(&j) {
                return Err(DataError::Partition {
                    source_name: source.to_string(),
                    reason: format!("column {name:?} is given as both the offset and the weights"),
                });
            }
            columns.push(j);
        }
        Ok(columns)
    }

    /// A party's table without its offset and weight columns, and those columns (offset first)
    /// to append after the design; `None` when there are none. Refuses a column the table lacks,
    /// one named twice, and a weight that is not a positive finite number.
    fn split(&self, party: DatasetView<'_>) -> Result<Option<(Dataset, Array2<f64>)>, DataError> {
        let columns = self.indices(party.names, party.source)?;
        if columns.is_empty() {
            return Ok(None);
        }
        let extras = party.x.select(Axis(1), &columns);
        if let (Some(name), Family::Poisson) = (&self.offset, self.family) {
            // The log link's mean is exp(eta): an offset past this overflows at any
            // coefficients (the fit then fails with no word on why).
            let o = extras.column(0);
            if let Some((i, v)) = o.iter().enumerate().find(|(_, v)| **v > MAX_LOG_OFFSET) {
                return Err(DataError::BadValue {
                    source_name: party.source.to_string(),
                    row: i + 1,
                    what: format!(
                        "offset {v} in column {name:?} is past {MAX_LOG_OFFSET}: its exp \
                         overflows (an offset is the log of the exposure)"
                    ),
                });
            }
        }
        if self.weights.is_some() {
            let w = extras.column(extras.ncols() - 1);
            if let Some((i, v)) = w
                .iter()
                .enumerate()
                .find(|(_, v)| !(v.is_finite() && **v > 0.0))
            {
                return Err(DataError::BadValue {
                    source_name: party.source.to_string(),
                    row: i + 1,
                    what: format!(
                        "weight {v} in column {:?} is not a positive number",
                        self.weights.as_deref().unwrap_or_default()
                    ),
                });
            }
        }
        let keep: Vec<usize> = (0..party.names.len())
            .filter(|j| !columns.contains(j))
            .collect();
        let features = Dataset {
            source: party.source.to_string(),
            names: keep.iter().map(|&j| party.names[j].clone()).collect(),
            x: party.x.select(Axis(1), &keep),
            y: party.y.to_owned(),
        };
        Ok(Some((features, extras)))
    }
}

/// A Node's rows (streamed) read for the model `columns` names: the offset and weight columns
/// found by name and moved after the features ([`Reordered`]), the weights checked positive (one
/// pass over the rows). Returns the rows and the feature names.
pub fn model_rows(
    rows: Arc<dyn RowSource>,
    source: &str,
    columns: &GlmColumns,
) -> Result<(Arc<dyn RowSource>, Vec<String>), DataError> {
    let names = rows.names();
    let moved = columns.indices(&names, source)?;
    if moved.is_empty() {
        return Ok((rows, names));
    }
    let trailing: Arc<dyn RowSource> = Arc::new(Reordered::trailing(rows, &moved));
    // Rows in a cluster count their bad weights where they are; only a count above 0 brings
    // them here, to name the first one's row.
    let clean_in_cluster = || -> Result<bool, RowsError> {
        if trailing.partitioned().is_none() {
            return Ok(false);
        }
        let job = privlogit_protocols::objective::RowJob::new(
            privlogit_protocols::objective::Glm::logistic(),
            privlogit_protocols::objective::RowKernel::BadWeights,
        );
        Ok(job.fold(trailing.as_ref())?.values()[0] == 0.0)
    };
    let weights = match &columns.weights {
        Some(w) if !clean_in_cluster()? => Some(w),
        _ => None,
    };
    // A log-link offset past exp's range, checked where the rows are read here (a cluster's
    // rows meet it as a Node's non-finite sums, named as such).
    let offset = columns
        .offset
        .as_ref()
        .filter(|_| columns.family == Family::Poisson && trailing.partitioned().is_none());
    if weights.is_some() || offset.is_some() {
        let mut row = 0;
        trailing
            .scan(&mut |x, _| {
                let at = x.ncols() - moved.len();
                for r in x.rows() {
                    row += 1;
                    if let Some(column) = offset
                        && r[at] > MAX_LOG_OFFSET
                    {
                        return Err(RowsError::new(
                            source,
                            RowsProblem::Offset {
                                column: column.clone(),
                                value: r[at],
                                limit: MAX_LOG_OFFSET,
                            },
                        ));
                    }
                    let w = r[r.len() - 1];
                    if let Some(column) = weights
                        && !(w.is_finite() && w > 0.0)
                    {
                        return Err(RowsError::new(
                            source,
                            RowsProblem::Weight {
                                column: column.clone(),
                                value: w,
                            },
                        ));
                    }
                }
                Ok(())
            })
            .map_err(|e| DataError::BadValue {
                source_name: e.source_name,
                row,
                what: e.problem.to_string(),
            })?;
    }
    let features = trailing.names()[..names.len() - moved.len()].to_vec();
    Ok((trailing, features))
}

/// Parties ready for fitting.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Coefficient names, intercept first when there is one.
    pub names: Vec<String>,
    /// Where each party's rows came from.
    pub sources: Vec<String>,
    /// Each party's design matrix and labels.
    pub parties: Vec<PartyData>,
    /// The pooled statistics, when standardising.
    pub standardizer: Option<Standardizer>,
}

impl Prepared {
    /// The same parties with only the design columns `keep` (trailing offset and weight
    /// columns kept; the rows are copied into memory).
    pub fn with_columns(
        &self,
        keep: &[usize],
    ) -> Result<Prepared, privlogit_protocols::rows::RowsError> {
        let glm = self.glm();
        let p = self.names.len();
        let columns: Vec<usize> = keep.iter().copied().chain(p..p + glm.trailing()).collect();
        let parties = self
            .parties
            .iter()
            .map(|party| {
                let (x, y) = party.collect()?;
                Ok(PartyData::new(x.select(Axis(1), &columns), y).with_glm(glm))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Prepared {
            names: keep.iter().map(|&j| self.names[j].clone()).collect(),
            sources: self.sources.clone(),
            parties,
            standardizer: None,
        })
    }

    /// The model the rows are read as (the parties agree).
    pub fn glm(&self) -> Glm {
        self.parties.first().map(PartyData::glm).unwrap_or_default()
    }

    /// Total rows N.
    pub fn rows(&self) -> usize {
        self.parties.iter().map(PartyData::rows).sum()
    }
}

/// Checks feature agreement, standardises and adds the intercept. Each party's loaded matrix
/// is freed as soon as its design matrix is built, so the peak is the data plus one party.
pub fn prepare(parties: Vec<Dataset>, how: Preparation) -> Result<Prepared, DataError> {
    prepare_glm(parties, how, &GlmColumns::default())
}

/// [`prepare`] for a generalised linear model: labels checked against the family, the offset
/// and weight columns taken out of the features and carried after the design columns.
pub fn prepare_glm(
    parties: Vec<Dataset>,
    how: Preparation,
    glm: &GlmColumns,
) -> Result<Prepared, DataError> {
    if glm.offset.is_some() || glm.weights.is_some() {
        let views: Vec<DatasetView<'_>> = parties.iter().map(Dataset::view).collect();
        return prepare_views_glm(&views, how, glm);
    }
    let views: Vec<DatasetView<'_>> = parties.iter().map(Dataset::view).collect();
    let plan = Plan::new(&views, how, glm.family)?;
    drop(views);
    let designs = parties
        .into_iter()
        .map(|p| {
            if how.standardize || how.intercept {
                plan.design(p.view())
            } else {
                // Nothing to change: the loaded matrix becomes the model input without a copy.
                PartyData::new(p.x, p.y)
            }
            .with_glm(glm.glm())
        })
        .collect();
    Ok(plan.finish(designs))
}

/// [`prepare`] for rows the caller keeps (read in place, copied once into the design matrix).
pub fn prepare_views(parties: &[DatasetView<'_>], how: Preparation) -> Result<Prepared, DataError> {
    prepare_views_glm(parties, how, &GlmColumns::default())
}

/// [`prepare_glm`] for rows the caller keeps.
pub fn prepare_views_glm(
    parties: &[DatasetView<'_>],
    how: Preparation,
    glm: &GlmColumns,
) -> Result<Prepared, DataError> {
    parties
        .iter()
        .try_for_each(|p| p.check_values(glm.family))?;
    let split = parties
        .iter()
        .map(|p| glm.split(*p))
        .collect::<Result<Vec<_>, _>>()?;
    if split.iter().any(Option::is_none) {
        let plan = Plan::new(parties, how, glm.family)?;
        let designs = parties
            .iter()
            .map(|p| plan.design(*p).with_glm(glm.glm()))
            .collect();
        return Ok(plan.finish(designs));
    }
    let (features, extras): (Vec<Dataset>, Vec<Array2<f64>>) = split.into_iter().flatten().unzip();
    let views: Vec<DatasetView<'_>> = features.iter().map(Dataset::view).collect();
    let plan = Plan::new(&views, how, glm.family)?;
    let designs = views
        .iter()
        .zip(&extras)
        .map(|(p, extra)| with_extras(p, Some(extra), plan.standardizer.as_ref(), how, glm))
        .collect();
    Ok(plan.finish(designs))
}

/// A party's design matrix (standardised with `standardizer`, intercept first when asked)
/// with the offset and weight columns `extra` appended, read as `glm`'s model.
fn with_extras(
    party: &DatasetView<'_>,
    extra: Option<&Array2<f64>>,
    standardizer: Option<&Standardizer>,
    how: Preparation,
    glm: &GlmColumns,
) -> PartyData {
    let x = design_matrix(party.x, standardizer, how.intercept);
    let x = match extra {
        Some(extra) => ndarray::concatenate(Axis(1), &[x.view(), extra.view()])
            .expect("one extra row per design row"),
        None => x,
    };
    PartyData::new(x, party.y.to_owned()).with_glm(glm.glm())
}

/// Held-out rows made into the design `prepared` was fitted on: the same features (checked by
/// name), the training rows' standardisation and intercept, the offset and weight columns.
pub fn prepare_held_out(
    parties: &[Dataset],
    prepared: &Prepared,
    how: Preparation,
    glm: &GlmColumns,
) -> Result<Vec<PartyData>, DataError> {
    let features = &prepared.names[usize::from(how.intercept)..];
    parties
        .iter()
        .map(|party| {
            party.view().check_values(glm.family)?;
            let split = glm.split(party.view())?;
            let (view, extra) = match &split {
                Some((d, e)) => (d.view(), Some(e)),
                None => (party.view(), None),
            };
            if let Some(difference) = crate::data::partition::difference(view.names, features) {
                return Err(DataError::FeatureMismatch {
                    party: party.source.clone(),
                    reference: "the model".into(),
                    difference,
                });
            }
            Ok(with_extras(
                &view,
                extra,
                prepared.standardizer.as_ref(),
                how,
                glm,
            ))
        })
        .collect()
}

/// What preparing the parties decides before any design matrix is built.
struct Plan {
    how: Preparation,
    names: Vec<String>,
    sources: Vec<String>,
    standardizer: Option<Standardizer>,
}

impl Plan {
    fn new(
        parties: &[DatasetView<'_>],
        how: Preparation,
        family: Family,
    ) -> Result<Self, DataError> {
        check_parties(parties, family)?;
        Ok(Self {
            how,
            names: design_names(parties[0].names, how.intercept)?,
            sources: parties.iter().map(|p| p.source.to_string()).collect(),
            standardizer: if how.standardize {
                Some(Standardizer::fit(parties)?)
            } else {
                None
            },
        })
    }

    /// One party's model input: a new design matrix.
    fn design(&self, party: DatasetView<'_>) -> PartyData {
        let x = design_matrix(party.x, self.standardizer.as_ref(), self.how.intercept);
        PartyData::new(x, party.y.to_owned())
    }

    fn finish(self, parties: Vec<PartyData>) -> Prepared {
        Prepared {
            names: self.names,
            sources: self.sources,
            parties,
            standardizer: self.standardizer,
        }
    }
}

/// At least one party, all with the same features.
fn check_parties(parties: &[DatasetView<'_>], family: Family) -> Result<(), DataError> {
    if parties.is_empty() {
        return Err(DataError::Partition {
            source_name: "the study".to_string(),
            reason: "no parties given".to_string(),
        });
    }
    check_agreement(parties)?;
    parties.iter().try_for_each(|p| p.check_values(family))
}

/// A fit with its scores on the pooled training rows.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// What the optimiser returned.
    pub report: FitReport,
    /// Unpenalised log-likelihood at the final coefficients (eq. 2.9).
    pub log_likelihood: f64,
    /// Penalised objective at the final coefficients (eq. 2.10).
    pub objective: f64,
    /// ROC AUC on the training rows (`None` if only one class is present, or the model is not
    /// a logistic regression).
    pub auc: Option<f64>,
    /// Accuracy at threshold 0.5 on the training rows (logistic regression only).
    pub accuracy: Option<f64>,
    /// Rows labelled 1.
    pub positives: f64,
    /// Every row strictly on its label's side of the final coefficients' boundary (complete
    /// separation when the fit is unpenalised: the likelihood has no maximum).
    pub separated: bool,
}

/// The Wald table at the fitted coefficients: the inverse of the pooled information
/// `X^T A X` plus the penalty's diagonal (eq. 2.11's Hessian, negated), in the clear.
/// `keep_covariance` keeps the matrix in the table. The outer error is reading the rows; the
/// inner one a matrix that is not positive definite at working precision (the fit stands
/// without its table).
pub fn wald(
    prepared: &Prepared,
    fitted: &Fitted,
    options: &FitOptions,
    level: f64,
    keep_covariance: bool,
) -> Result<Result<Wald, InferenceError>, crate::error::Error> {
    let aggregation = PlaintextAggregation::new(&prepared.parties);
    let beta = &fitted.report.beta;
    let read_failed = |e| FitError::Aggregation(Box::new(e));
    let mut information = aggregation.information(beta).map_err(read_failed)?;
    let d = information.nrows();
    information
        .diag_mut()
        .scaled_add(1.0, &options.penalty().diagonal(d));
    let Some(mut covariance) = spd_inverse(&information) else {
        return Ok(Err(InferenceError::Variance {
            name: "(the information matrix)".into(),
            value: f64::NAN,
        }));
    };
    // The Gaussian's information is X^T W X / sigma^2: its covariance scales by the estimate.
    let family = prepared.glm().family;
    if family.estimates_scale() {
        let rss = -2.0 * fitted.log_likelihood;
        covariance *= rss / (prepared.rows() as f64 - d as f64);
    }
    let beta = beta.as_slice().expect("contiguous");
    let (n, k) = (prepared.rows(), d);
    let table = Wald::from_covariance(&prepared.names, beta, &covariance, level, keep_covariance)
        .map(|w| w.for_family(family, n, k));
    // A standardised fit's table in raw units too (the covariance transforms exactly).
    Ok(match &prepared.standardizer {
        Some(s) => table.and_then(|w| {
            let raw = crate::inference::RawInputs {
                means: s.means.as_slice().unwrap_or(&[]),
                scales: s.scales.as_slice().unwrap_or(&[]),
                covariance: Some(&covariance),
                intercept_variance: None,
            };
            let variances = covariance.diag().to_vec();
            w.with_raw_units(&prepared.names, beta, &variances, raw, (family, n))
        }),
        None => table,
    })
}

/// The fit measures at the fitted coefficients (log-likelihood, deviances, AIC, BIC). A
/// logistic model's null model is closed-form; another family's (or one with an offset) is
/// fitted: the intercept alone by Newton's method, or nothing but the offset without one.
pub fn goodness(
    prepared: &Prepared,
    fitted: &Fitted,
    options: &FitOptions,
) -> Result<Goodness, crate::error::Error> {
    let intercept = prepared.names.first().map(String::as_str) == Some(crate::model::INTERCEPT);
    let glm = prepared.glm();
    let (k, n) = (prepared.names.len(), prepared.rows());
    if glm == Glm::logistic() {
        return Ok(Goodness::binomial(
            fitted.log_likelihood,
            k,
            n,
            fitted.positives,
            intercept,
        ));
    }
    let read_failed = |e| FitError::Aggregation(Box::new(e));
    let null = if intercept {
        let null_model = prepared.with_columns(&[0]).map_err(read_failed)?;
        let unpenalised = FitOptions {
            lambda: 0.0,
            centre: None,
            ..options.clone()
        };
        // A null model that does not converge costs the null deviance (NaN), not the fit.
        match fit(&null_model, Optimizer::Newton, &unpenalised, &mut |_| {}) {
            Ok(null) if null.report.converged() => null.log_likelihood,
            _ => f64::NAN,
        }
    } else {
        PlaintextAggregation::new(&prepared.parties)
            .log_likelihood(&Array1::zeros(k))
            .map_err(read_failed)?
    };
    let mut constants = [0.0; 2];
    for party in &prepared.parties {
        let sums = party.constant_sums().map_err(read_failed)?;
        constants[0] += sums[3];
        constants[1] += sums[4];
    }
    Ok(Goodness::glm(
        GlmSums {
            family: glm.family,
            fitted: fitted.log_likelihood,
            null,
            saturated: constants[0],
            log_weights: constants[1],
        },
        k,
        n,
    ))
}

/// Refuses a design an unpenalised fit cannot estimate: a zero or collinear column (from the
/// pooled `X^T X`, named).
pub fn check_design(prepared: &Prepared) -> Result<(), crate::error::Error> {
    let aggregation = PlaintextAggregation::new(&prepared.parties);
    let gram = aggregation
        .bound()
        .map_err(|e| FitError::Aggregation(Box::new(e)))?;
    Ok(estimability::check_gram(&gram, &prepared.names)?)
}

/// Runs `optimizer` on the prepared parties in the clear.
pub fn fit(
    prepared: &Prepared,
    optimizer: Optimizer,
    options: &FitOptions,
    observer: &mut dyn FnMut(&IterationRecord),
) -> Result<Fitted, FitError> {
    let mut aggregation = PlaintextAggregation::new(&prepared.parties);
    let intercept = prepared.names.first().map(String::as_str) == Some(crate::model::INTERCEPT);
    // Poisson starts where a secure study starts: at the null model's intercept.
    let poisson = prepared.glm().family == Family::Poisson;
    let start;
    let options = if poisson && intercept && options.initial == Initial::Zeros {
        let mut sums = [0.0; privlogit_protocols::objective::CONSTANT_SUMS];
        for party in &prepared.parties {
            let s = party
                .constant_sums()
                .map_err(|e| FitError::Aggregation(Box::new(e)))?;
            sums.iter_mut().zip(s).for_each(|(t, v)| *t += v);
        }
        start = FitOptions {
            initial: Initial::Vector(poisson_start(sums, prepared.names.len())),
            ..options.clone()
        };
        &start
    } else {
        options
    };
    let report = optimizer.fit(&mut aggregation, options, observer)?;
    let beta = &report.beta;
    // The same compensated sums and penalty as the optimiser's, so `objective` equals the
    // report's last objective exactly.
    let read_failed = |e| FitError::Aggregation(Box::new(e));
    let log_likelihood = aggregation.log_likelihood(beta).map_err(read_failed)?;
    let glm = prepared.glm();
    let objective = log_likelihood + options.penalty().objective(beta);
    if glm.family != Family::Binomial {
        return Ok(Fitted {
            objective,
            positives: f64::NAN,
            separated: false,
            log_likelihood,
            auc: None,
            accuracy: None,
            report,
        });
    }
    let mut probabilities = Vec::with_capacity(prepared.rows());
    let mut labels = Vec::with_capacity(prepared.rows());
    let p = beta.len();
    let beta_slice = beta.as_slice().expect("contiguous");
    for party in &prepared.parties {
        party
            .source()
            .scan(&mut |x, y| {
                if glm.trailing() == 0 {
                    probabilities.extend(metrics::predict(x, beta));
                } else {
                    probabilities.extend(x.rows().into_iter().map(|row| {
                        let row = row.to_slice().expect("standard layout");
                        let (offset, _) = glm.offset_and_weight(row, p);
                        glm.family.mean(
                            privlogit_protocols::objective::dot(&row[..p], beta_slice) + offset,
                        )
                    }));
                }
                labels.extend(y.iter().copied());
                Ok(())
            })
            .map_err(read_failed)?;
    }
    let separated = probabilities
        .iter()
        .zip(&labels)
        .all(|(&p, &y)| if y == 1.0 { p > 0.5 } else { p < 0.5 });
    let probabilities = Array1::from(probabilities);
    let labels = Array1::from(labels);
    Ok(Fitted {
        objective,
        positives: labels.sum(),
        separated,
        log_likelihood,
        auc: metrics::auc(probabilities.view(), labels.view()),
        accuracy: Some(metrics::accuracy(probabilities.view(), labels.view())),
        report,
    })
}
