//! The nested model of a likelihood-ratio test (`--drop COLUMN ...`): a second secure study on
//! the same rows without the dropped columns, run after the full one by the same parties (in
//! one process, or as separate processes that each read `drop` from the study file), and the
//! test from the two studies' revealed log-likelihoods.

use std::sync::Arc;

use privlogit_protocols::rows::RowSource;
use privlogit_protocols::rows::reordered::Reordered;
use privlogit_protocols::secure::study_protocol::StudyPlan;

use super::result::StudyResult;
use crate::error::{Error, PlanError, SettingProblem};

use crate::inference::{LikelihoodRatio, Reveal};

/// Refuses a plan the test does not hold for: a penalised fit (the chi-square law is for
/// maximum likelihood) or one that keeps the log-likelihood secret.
pub fn check_plan(plan: &StudyPlan) -> Result<(), Error> {
    if plan.options.lambda != 0.0 || plan.options.centre.is_some() {
        return Err(Error::bad("drop", SettingProblem::PenalisedLikelihoodRatio));
    }
    if plan.reveal == Reveal::Coefficients {
        return Err(Error::bad(
            "drop",
            SettingProblem::Refused {
                why: "the test needs both models' log-likelihoods, which setting `reveal` \
                      coefficients keeps secret: reveal standard-errors (the default)",
            },
        ));
    }
    Ok(())
}

/// The columns `drop` names, as indices into `features` with their names: each a feature,
/// once.
pub fn columns(drop: &[String], features: &[String]) -> Result<Vec<(usize, String)>, Error> {
    let mut out: Vec<(usize, String)> = Vec::with_capacity(drop.len());
    for column in drop {
        let Some(j) = features.iter().position(|f| f == column) else {
            return Err(Error::bad(
                "drop",
                SettingProblem::NotAFeature {
                    column: column.clone(),
                    features: features.to_vec(),
                },
            ));
        };
        if out.iter().any(|(k, _)| *k == j) {
            return Err(Error::bad(
                "drop",
                SettingProblem::Twice {
                    value: column.clone(),
                    why: " (each column counts once in the test's degrees of freedom)",
                },
            ));
        }
        out.push((j, column.clone()));
    }
    if out.len() == features.len() {
        // The secure study of a model without features (the intercept alone) is not built: its
        // setup has no columns to standardise or bound.
        return Err(Error::bad(
            "drop",
            SettingProblem::Refused {
                why: "drops every feature: a secure nested model needs at least one (a \
                      plaintext fit's test compares against the intercept-only model on pooled \
                      rows)",
            },
        ));
    }
    Ok(out)
}

/// A party's feature names and rows without the `dropped` columns.
pub fn without(
    names: &[String],
    rows: &Arc<dyn RowSource>,
    dropped: &[(usize, String)],
) -> (Vec<String>, Arc<dyn RowSource>) {
    let at: Vec<usize> = dropped.iter().map(|(j, _)| *j).collect();
    let names = (0..names.len())
        .filter(|j| !at.contains(j))
        .map(|j| names[j].clone())
        .collect();
    (names, Arc::new(Reordered::without(Arc::clone(rows), &at)))
}

/// The nested study's plan: the full one's, without the held-out evaluation.
pub fn plan(full: &StudyPlan) -> StudyPlan {
    StudyPlan {
        evaluate: false,
        ..full.clone()
    }
}

/// The test of `full` against `reduced`; refused unless both converged with their
/// log-likelihoods revealed.
pub fn test(
    full: &StudyResult,
    reduced: &StudyResult,
    dropped: Vec<String>,
) -> Result<LikelihoodRatio, Error> {
    let log_likelihood = |r: &StudyResult, which: &'static str| {
        r.inference().map(|(g, _)| g.log_likelihood).ok_or_else(|| {
            Error::from(PlanError::NotConverged {
                model: which,
                status: r.outcome.fit.status.name(),
            })
        })
    };
    Ok(LikelihoodRatio::new(
        dropped,
        log_likelihood(full, "full")?,
        log_likelihood(reduced, "nested")?,
    ))
}
