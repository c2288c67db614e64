//! `predict`: a model file applied to the rows of a data file.

use std::path::Path;

use crate::data::{self, LoadOptions};
use crate::error::Error;
use crate::model::Model;

/// A model applied to the rows of a data file ([`score_file`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// `P(y = 1)` per row, in file order.
    pub probabilities: Vec<f64>,
    /// The rows' labels, when the file has the label column named.
    pub labels: Option<Vec<f64>>,
}

/// The model in the JSON file at `path` (`fit --json`, `study --json`, an aggregator's
/// `--out`; see [`Model::from_output`]).
pub fn read_model(path: &Path) -> Result<Model, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::setting(
            path.display().to_string(),
            format!("is not a model file (JSON): {e}"),
        )
    })?;
    Model::from_output(&v).map_err(|e| {
        Error::setting(
            path.display().to_string(),
            format!("is not a model file: {e}"),
        )
    })
}

/// `model` applied to the rows of `data` (CSV, binary table or Parquet): the model's features
/// are taken by name (other columns are left out); `label` names the label column if the file
/// has one (a CSV file without one is read unlabelled).
pub fn score_file(model: &Model, data: &Path, label: Option<&str>) -> Result<Scores, Error> {
    let options = match label {
        Some(l) => LoadOptions::new(l),
        None => LoadOptions::unlabelled(),
    };
    let table = data::load(data, &options)?.data;
    let mut columns = Vec::with_capacity(model.features.len());
    for name in &model.features {
        let j = table.names.iter().position(|n| n == name).ok_or_else(|| {
            Error::plan(format!(
                "{}: no column {name:?}, a feature of the model (its features: {})",
                data.display(),
                model.features.join(", ")
            ))
        })?;
        columns.push(j);
    }
    let x = table.x.select(ndarray::Axis(1), &columns);
    Ok(Scores {
        probabilities: model.predict_proba(x.view())?.to_vec(),
        labels: label.map(|_| table.y.to_vec()),
    })
}
