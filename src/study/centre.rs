//! `penalty_centre`: the public vector the l2 penalty is centred at (hypothesis transfer), one
//! coefficient per line in the model's order (the intercept first when one is added;
//! standardised coordinates with `standardize`); blank lines and `#` comments skipped. And
//! `transfer_from`: a source organization's published DP model as that centre.

use std::path::Path;

use ndarray::Array1;

use crate::error::{Error, PlanError, SettingProblem};

type Result<T> = std::result::Result<T, Error>;

/// A refusal of the file `path` for a reason fixed in the code.
fn refuse<T>(path: &Path, why: &'static str) -> Result<T> {
    Err(PlanError::File {
        path: path.to_path_buf(),
        why,
    }
    .into())
}

/// The centre in `path`, every entry a finite number.
pub fn read(path: &Path) -> Result<Array1<f64>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        what: "cannot read the penalty centre",
        path: path.to_path_buf(),
        source: e,
    })?;
    let mut values = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("");
        let value = content.trim();
        if value.is_empty() {
            continue;
        }
        let column = line.find(value).unwrap_or(0) + 1;
        match value.parse::<f64>() {
            Ok(v) if v.is_finite() => values.push(v),
            _ => {
                return Err(PlanError::CentreValue {
                    path: path.to_path_buf(),
                    line: number + 1,
                    column,
                    given: value.to_string(),
                }
                .into());
            }
        }
    }
    if values.is_empty() {
        return refuse(path, "the penalty centre has no values");
    }
    Ok(Array1::from(values))
}

/// A source organization's published DP model as the target study's penalty centre
/// (hypothesis transfer: `eta/2 ||w||^2 + (1 - eta)/2 ||w - w_src||^2` is `1/2 ||w - (1 - eta)
/// w_src||^2` plus a constant): the file of `dp fit --method plr --out` (rows normalised) or of
/// `stack publish`. Returns `(1 - eta) w_src` and the source's feature names.
pub fn transfer_centre(path: &Path, eta: f64) -> Result<(Array1<f64>, Vec<String>)> {
    if !(0.0..=1.0).contains(&eta) {
        return Err(Error::bad(
            "eta",
            SettingProblem::OutOfRange {
                value: eta,
                low: 0.0,
                high: 1.0,
                closed: true,
            },
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        what: "cannot read the source model",
        path: path.to_path_buf(),
        source: e,
    })?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| PlanError::NotJson {
            path: path.to_path_buf(),
            what: "JSON",
            source,
        })?;
    let strings = |v: &serde_json::Value| -> Option<Vec<String>> {
        v.as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let numbers = |v: &serde_json::Value| -> Option<Vec<f64>> {
        v.as_array()?
            .iter()
            .map(serde_json::Value::as_f64)
            .collect()
    };
    let (w, names) = if v["format"] == crate::hybrid::stacking_pipeline::PUBLISHED_FORMAT {
        let model: crate::hybrid::stacking_pipeline::Published = serde_json::from_value(v.clone())
            .map_err(|source| PlanError::NotJson {
                path: path.to_path_buf(),
                what: "a published model",
                source,
            })?;
        let Some(w) = model.single() else {
            return refuse(
                path,
                "a model over feature groups (PLR-FS) has no single coefficient vector to \
                 centre a study at; publish a plain PLR (setting `groups` 1)",
            );
        };
        (Some(w.to_vec()), Some(model.names.clone()))
    } else if v["method"] == "plr" {
        if v["model"]["row_scaling"] != "normalize" || v["model"]["row_norm"] != 1.0 {
            return refuse(
                path,
                "the source model was fitted on rows scaled otherwise than to norm 1 (a \
                 secure PLR study's rows); refit it without setting `row_bound`",
            );
        }
        (numbers(&v["model"]["w"]), strings(&v["features"]))
    } else {
        return refuse(
            path,
            "not a source model (the output of a `dp fit` of method plr with setting `out`, or \
             of `stack publish`)",
        );
    };
    let (Some(w), Some(names)) = (w, names) else {
        return refuse(
            path,
            "the model's coefficients or feature names are missing",
        );
    };
    if w.len() != names.len() || w.iter().any(|x| !x.is_finite()) {
        return Err(PlanError::Coefficients {
            path: path.to_path_buf(),
            coefficients: w.len(),
            features: names.len(),
        }
        .into());
    }
    Ok((Array1::from(w) * (1.0 - eta), names))
}
