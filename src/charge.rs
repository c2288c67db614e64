//! Charging a release's privacy cost to the ledger: every front end and every release (a DP fit,
//! a secure PLR study, a stacking stage) goes through here, so a data set is known, checked
//! and charged alike. The cost comes from the release ([`crate::jobs::dp_fit::Cost`]); this module only
//! records it: checked before any noise is drawn, recorded once the result is safe.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::data::LoadOptions;
use crate::dp::ledger::{Charge, Guarantee, Ledger};
use crate::error::{Error, PlanError};
use crate::output;
use crate::progress::Say;

/// What a release spends on each data file: the file and its epsilon.
pub type Spends = Vec<(PathBuf, f64)>;

/// The ledger's charges for `spends`, each data set known by its rows (every column but
/// `label` a feature, whatever a fit leaves out), checked against the ledger at `path`
/// (created with the total `budget`): refused, before any noise is drawn, past its total.
pub fn check(
    path: &Path,
    budget: Option<f64>,
    spends: &[(PathBuf, f64)],
    label: &str,
    say: Say<'_>,
) -> Result<Vec<Charge>, Error> {
    let ledger = Ledger::load(path, budget)?;
    let options = LoadOptions::new(label);
    let charges = spends
        .iter()
        .map(|(file, epsilon)| {
            Ok(Charge::new(
                ledger.key().print_file(file, &options)?,
                file.display().to_string(),
                Guarantee::pure(*epsilon),
            ))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    for note in ledger.check(&charges)? {
        say(&format!("ledger {}: {note}", path.display()));
    }
    Ok(charges)
}

/// Records `charges` on the ledger at `path` (refused if a concurrent release used the room).
pub fn record(
    path: &Path,
    budget: Option<f64>,
    charges: &[Charge],
    say: Say<'_>,
) -> Result<(), Error> {
    for note in Ledger::record(path, budget, charges)? {
        say(&format!("ledger {}: {note}", path.display()));
    }
    Ok(())
}

/// Charges each of `files` (read with the label column `label`) `cost` on the ledger at
/// `path`, or refuses naming the file that would pass the total: what a release charges when it
/// starts (a secure PLR study, whose participants see noisy iterates from then on).
pub fn files(
    path: &Path,
    budget: Option<f64>,
    files: &[PathBuf],
    label: &str,
    cost: Guarantee,
    say: Say<'_>,
) -> Result<(), Error> {
    let spends: Spends = files.iter().map(|f| (f.clone(), cost.epsilon)).collect();
    // The check and the record each match the files to the ledger's accounts: what they note
    // ("opens a new account") is said once.
    let said = std::sync::Mutex::new(std::collections::HashSet::new());
    let once = |m: &str| {
        if said.lock().is_ok_and(|mut s| s.insert(m.to_string())) {
            say(m);
        }
    };
    let say: Say<'_> = &once;
    let charges: Vec<Charge> = check(path, budget, &spends, label, say)?
        .into_iter()
        .map(|c| Charge {
            delta: cost.delta,
            relation: cost.relation,
            ..c
        })
        .collect();
    record(path, budget, &charges, say)?;
    let delta = if cost.delta > 0.0 {
        format!(", delta {:e}", cost.delta)
    } else {
        String::new()
    };
    say(&format!(
        "ledger {}: charged epsilon {}{delta} ({}) to each of {} data set(s)",
        path.display(),
        cost.epsilon,
        cost.relation.name(),
        files.len()
    ));
    Ok(())
}

/// What a published result says it spent: each file and its epsilon (the data sets' ledger
/// prints stay in the ledger: a digest of the rows would tell neighbouring data sets apart).
pub fn spent_report(spends: &[(PathBuf, f64)]) -> Value {
    Value::Array(
        spends
            .iter()
            .map(
                |(file, epsilon)| json!({ "file": file.display().to_string(), "epsilon": epsilon }),
            )
            .collect(),
    )
}

/// Writes `report` (to the file `out`, or else to `elsewhere`, the front end's choice: the command
/// line's standard output) and charges `charges` on the ledger: the
/// result is written in full first (to a temporary file), the release is charged, and only then
/// is the result put in place, so a result that cannot be written is not charged and no result
/// appears uncharged.
pub fn publish_charged(
    report: &Value,
    out: Option<&Path>,
    elsewhere: &mut dyn std::io::Write,
    ledger: Option<(&Path, Option<f64>)>,
    charges: &[Charge],
    say: Say<'_>,
) -> Result<(), Error> {
    let rendered = serde_json::to_string_pretty(report).map_err(|source| PlanError::Render {
        what: "result",
        source,
    })? + "\n";
    let staged = match out {
        Some(path) => Some(
            output::Staged::write(path, |o| o.write_all(rendered.as_bytes()))
                .map_err(|e| Error::write(path, e))?,
        ),
        None => None,
    };
    if let Some((path, budget)) = ledger {
        record(path, budget, charges, say)?;
    }
    match (staged, out) {
        (Some(staged), Some(path)) => staged.commit().map_err(|e| Error::write(path, e))?,
        _ => elsewhere
            .write_all(rendered.as_bytes())
            .and_then(|()| elsewhere.flush())
            .map_err(|e| Error::write("the result's output", e))?,
    }
    Ok(())
}
