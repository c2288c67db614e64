//! Vertically partitioned studies as an application: every party's file has an identifier
//! column (`--id`), one party's file the label. Each file becomes a party's table
//! ([`table`]); the secure study runs the parties' messages
//! ([`privlogit_protocols::secure::vertical_roles`]) in one process (`study --vertical`,
//! [`run_study`]) or between organizations (`node --vertical` and `aggregator` with a
//! vertical study file, [`column_node`]); the plaintext reference joins the files in the
//! clear (`fit --vertical`, [`join`]).
//!
//! Coefficients are in the parties' order with the labelling party first (its intercept, then
//! its columns), so the secure and the plaintext designs are the same.

pub mod column_node;

use privlogit_protocols::secure::vertical_roles;
use privlogit_protocols::secure::vertical_rounds::gradient_floor;

use crate::error::Error;
pub use crate::fit::vertical_join::{Block, Joined, join, table, tables};
use crate::settings::{Reader, Spec};
use crate::study::StudyResult;
use crate::study::result::Shown;

/// A secure vertical study with every role in this process (`study --vertical`): the parties'
/// tables from their files, then the messages of a study between organizations over memory
/// channels.
pub fn run_study(spec: &Spec, say: Option<&dyn Fn(&str)>) -> Result<StudyResult, Error> {
    if spec.reader != Reader::Study {
        return Err(Error::refused(
            "a vertical study runs as a `study` with setting `vertical`",
        ));
    }
    if spec.dealer_thread {
        return Err(Error::refused(
            "setting `dealer_thread` applies to horizontal studies: a vertical study's Nodes deal \
             its products themselves",
        ));
    }
    let tables = tables(spec)?;
    let plan = spec.vertical_plan(tables.len())?;
    let shown = Shown::of(spec)?;
    let mut observer = |r: &privlogit_protocols::IterationRecord| {
        if let Some(say) = say {
            say(&crate::study::roles::progress_line(r));
        }
    };
    let outcome = vertical_roles::run_in_process(
        &tables,
        &plan,
        crate::study::roles::make_key,
        &mut observer,
    )?;
    if let (Some(say), Some(v)) = (say, &outcome.outcome.vertical) {
        let asked = plan.options.stopping.gradient_tolerance;
        if let (Some(asked), Some(used)) = (asked, v.gradient_tolerance)
            && used > asked
        {
            say(&format!(
                "the gradient tolerance was raised from {asked:e} to {used:.2e} (floor {:.2e}): below it \
                 the logistic circuit's rounding (2^-30 a row) over {} rows decides the test",
                gradient_floor(outcome.outcome.rows, outcome.outcome.names.len()),
                outcome.outcome.rows
            ));
        }
    }
    Ok(StudyResult {
        outcome: outcome.outcome,
        plan,
        keyholder: Some(outcome.keyholder),
        nodes: None,
        shown,
        likelihood_ratio: None,
    })
}
