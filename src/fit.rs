//! The plaintext distributed fit, end to end: prepare the parties (agreement check, pooled
//! standardisation, intercept), run an optimiser over [`PlaintextAggregation`], and score the
//! result on the pooled rows.

pub mod job;

use ndarray::Array1;
use privlogit_protocols::{
    FitError, FitOptions, FitReport, IterationRecord, Optimizer, PartyData, PlaintextAggregation,
};

use crate::data::partition::check_agreement;
use crate::data::standardize::{Standardizer, design_matrix, design_names};
use crate::data::{DataError, Dataset, DatasetView};
use crate::inference::design;
use crate::inference::{Goodness, InferenceError, Wald, spd_inverse};
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
    /// Total rows N.
    pub fn rows(&self) -> usize {
        self.parties.iter().map(PartyData::rows).sum()
    }
}

/// Checks feature agreement, standardises and adds the intercept. Each party's loaded matrix
/// is freed as soon as its design matrix is built, so the peak is the data plus one party.
pub fn prepare(parties: Vec<Dataset>, how: Preparation) -> Result<Prepared, DataError> {
    let views: Vec<DatasetView<'_>> = parties.iter().map(Dataset::view).collect();
    let plan = Plan::new(&views, how)?;
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
        })
        .collect();
    Ok(plan.finish(designs))
}

/// [`prepare`] for rows the caller keeps (read in place, copied once into the design matrix).
pub fn prepare_views(parties: &[DatasetView<'_>], how: Preparation) -> Result<Prepared, DataError> {
    let plan = Plan::new(parties, how)?;
    let designs = parties.iter().map(|p| plan.design(*p)).collect();
    Ok(plan.finish(designs))
}

/// What preparing the parties decides before any design matrix is built.
struct Plan {
    how: Preparation,
    names: Vec<String>,
    sources: Vec<String>,
    standardizer: Option<Standardizer>,
}

impl Plan {
    fn new(parties: &[DatasetView<'_>], how: Preparation) -> Result<Self, DataError> {
        check_parties(parties)?;
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
fn check_parties(parties: &[DatasetView<'_>]) -> Result<(), DataError> {
    if parties.is_empty() {
        return Err(DataError::Partition {
            source_name: "the study".to_string(),
            reason: "no parties given".to_string(),
        });
    }
    check_agreement(parties)?;
    parties.iter().try_for_each(DatasetView::check_values)
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
    /// ROC AUC on the training rows (`None` if only one class is present).
    pub auc: Option<f64>,
    /// Accuracy at threshold 0.5 on the training rows.
    pub accuracy: f64,
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
    let Some(covariance) = spd_inverse(&information) else {
        return Ok(Err(InferenceError::Variance {
            name: "(the information matrix)".into(),
            value: f64::NAN,
        }));
    };
    let beta = beta.as_slice().expect("contiguous");
    Ok(Wald::from_covariance(
        &prepared.names,
        beta,
        &covariance,
        level,
        keep_covariance,
    ))
}

/// The fit measures at the fitted coefficients (log-likelihood, deviances, AIC, BIC).
pub fn goodness(prepared: &Prepared, fitted: &Fitted) -> Goodness {
    let intercept = prepared.names.first().map(String::as_str) == Some(crate::model::INTERCEPT);
    Goodness::binomial(
        fitted.log_likelihood,
        prepared.names.len(),
        prepared.rows(),
        fitted.positives,
        intercept,
    )
}

/// Refuses a design an unpenalised fit cannot estimate: a zero or collinear column (from the
/// pooled `X^T X`, named).
pub fn check_design(prepared: &Prepared) -> Result<(), crate::error::Error> {
    let aggregation = PlaintextAggregation::new(&prepared.parties);
    let gram = aggregation
        .bound()
        .map_err(|e| FitError::Aggregation(Box::new(e)))?;
    Ok(design::check_gram(&gram, &prepared.names)?)
}

/// Runs `optimizer` on the prepared parties in the clear.
pub fn fit(
    prepared: &Prepared,
    optimizer: Optimizer,
    options: &FitOptions,
    observer: &mut dyn FnMut(&IterationRecord),
) -> Result<Fitted, FitError> {
    let mut aggregation = PlaintextAggregation::new(&prepared.parties);
    let report = optimizer.fit(&mut aggregation, options, observer)?;
    let beta = &report.beta;
    // The same compensated sums and penalty as the optimiser's, so `objective` equals the
    // report's last objective exactly.
    let read_failed = |e| FitError::Aggregation(Box::new(e));
    let log_likelihood = aggregation.log_likelihood(beta).map_err(read_failed)?;
    let mut probabilities = Vec::with_capacity(prepared.rows());
    let mut labels = Vec::with_capacity(prepared.rows());
    for party in &prepared.parties {
        party
            .source()
            .scan(&mut |x, y| {
                probabilities.extend(metrics::predict(x, beta));
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
        objective: log_likelihood + options.penalty().objective(beta),
        positives: labels.sum(),
        separated,
        log_likelihood,
        auc: metrics::auc(probabilities.view(), labels.view()),
        accuracy: metrics::accuracy(probabilities.view(), labels.view()),
        report,
    })
}
