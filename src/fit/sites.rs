//! Per-site intercepts (`--site-intercepts`): each party gets its own baseline through
//! indicator columns `site_2` ... `site_K` (1 on the rows of party k, 0 elsewhere; party 1 is the
//! reference, its baseline the intercept), added to every party's features before anything
//! else, so the secure protocols, the standardisation and the model treat them as features.
//! This is DataSHIELD's recommendation for heterogeneous studies (study dummies beside the
//! intercept) in R's treatment coding.

use std::sync::Arc;

use ndarray::{Array2, Axis};
use privlogit_protocols::rows::RowSource;
use privlogit_protocols::rows::constant::WithConstants;

use crate::data::{Dataset, DatasetView};
use crate::error::{Error, SettingProblem};

/// The indicator columns' names for `parties` parties.
pub fn names(parties: usize) -> Vec<String> {
    (2..=parties).map(|k| format!("site_{k}")).collect()
}

/// Party `k`'s (0-based) values of the indicators.
pub fn indicators(k: usize, parties: usize) -> Vec<f64> {
    (2..=parties)
        .map(|j| f64::from(u8::from(j == k + 1)))
        .collect()
}

/// Refuses site intercepts that cannot be estimated: one party, no intercept, or a feature that
/// already bears an indicator's name.
pub fn check(parties: usize, intercept: bool, features: &[String]) -> Result<(), Error> {
    if parties < 2 {
        return Err(Error::bad(
            "site_intercepts",
            SettingProblem::Refused {
                why: "needs at least two parties (one party has one baseline: the intercept)",
            },
        ));
    }
    if !intercept {
        return Err(Error::bad(
            "site_intercepts",
            SettingProblem::Refused {
                why: "needs the intercept (the first party's baseline; the others are \
                      differences from it)",
            },
        ));
    }
    if let Some(clash) = names(parties).iter().find(|n| features.contains(n)) {
        return Err(Error::bad(
            "site_intercepts",
            SettingProblem::ColumnClash {
                column: clash.clone(),
            },
        ));
    }
    Ok(())
}

/// Party `k`'s table with the indicator columns appended (a copy).
pub fn table(party: DatasetView<'_>, k: usize, parties: usize) -> Dataset {
    let values = indicators(k, parties);
    let extra = Array2::from_shape_fn((party.x.nrows(), values.len()), |(_, j)| values[j]);
    let mut names = party.names.to_vec();
    names.extend(self::names(parties));
    Dataset {
        source: party.source.to_string(),
        names,
        x: ndarray::concatenate(Axis(1), &[party.x, extra.view()]).expect("one row each"),
        y: party.y.to_owned(),
    }
}

/// Party `k`'s streamed rows with the indicator columns appended.
pub fn rows(rows: Arc<dyn RowSource>, k: usize, parties: usize) -> Arc<dyn RowSource> {
    Arc::new(WithConstants::new(
        rows,
        names(parties),
        indicators(k, parties),
    ))
}

/// `parties` with the indicators appended, checked.
pub fn tables(parties: &[DatasetView<'_>], intercept: bool) -> Result<Vec<Dataset>, Error> {
    check(
        parties.len(),
        intercept,
        parties.first().map_or(&[], |p| p.names),
    )?;
    Ok(parties
        .iter()
        .enumerate()
        .map(|(k, p)| table(*p, k, parties.len()))
        .collect())
}
