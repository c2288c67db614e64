//! `predict`: a model file applied to the rows of a data file.

use std::path::Path;

use ndarray::{Array1, ArrayView2};
use privlogit_protocols::objective::Family;

use crate::data::{self, LoadOptions};
use crate::dp::release_file::{self, Released};
use crate::error::{Error, PlanError};
use crate::model::Model;

/// A model applied to the rows of a data file ([`score_file`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// The label's mean per row, in file order: `P(y = 1)` for a logistic model or a DP
    /// release, the expected count or value for Poisson and Gaussian.
    pub probabilities: Vec<f64>,
    /// The rows' labels, when the file has the label column named.
    pub labels: Option<Vec<f64>>,
    /// What `probabilities` holds: "probability" (0/1 labels) or "mean".
    pub kind: &'static str,
}

/// A model file of any kind the project writes: a fit's or a study's JSON (`fit --json`,
/// `study --json`, an aggregator's `--out`), or a DP release (`dp fit --out`).
#[derive(Debug, Clone)]
pub enum ModelFile {
    /// A (generalised) linear model in raw units, with the whole output it came from.
    Regression {
        /// The model.
        model: Model,
        /// The file's JSON.
        output: serde_json::Value,
    },
    /// A DP release.
    Released(Released),
}

impl ModelFile {
    /// The features the model reads, by name, in order.
    pub fn features(&self) -> &[String] {
        match self {
            ModelFile::Regression { model, .. } => &model.features,
            ModelFile::Released(r) => &r.features,
        }
    }

    /// The label's mean for every row of `x` (columns in [`Self::features`] order, raw units).
    pub fn predict_mean(&self, x: ArrayView2<'_, f64>) -> Result<Array1<f64>, Error> {
        match self {
            ModelFile::Regression { model, .. } => Ok(model.predict_mean(x)?),
            ModelFile::Released(r) => {
                if x.ncols() != r.features.len() {
                    return Err(Error::from(crate::model::ModelError::Columns {
                        rows: x.ncols(),
                        model: r.features.len(),
                        names: r.features.join(", "),
                    }));
                }
                Ok(r.fitted.scores(x))
            }
        }
    }

    /// Why the model may not be one to apply, from its file's `status`: a fit that diverged
    /// or stopped at its iteration limit (`None` for a converged fit and a DP release).
    pub fn caution(&self) -> Option<String> {
        let ModelFile::Regression { output, .. } = self else {
            return None;
        };
        match output.get("status").and_then(|s| s.as_str()) {
            Some("diverged") => Some(
                "the model's fit diverged (status \"diverged\"): its coefficients are not an \
                 estimate"
                    .to_string(),
            ),
            Some("max_iterations") => Some(
                "the model's fit stopped at its iteration limit (status \"max_iterations\"): \
                 its coefficients may be far from the optimum"
                    .to_string(),
            ),
            _ => None,
        }
    }

    /// "probability" when the model's label is 0/1, "mean" otherwise.
    pub fn kind(&self) -> &'static str {
        match self {
            ModelFile::Regression { model, .. } if model.family != Family::Binomial => "mean",
            _ => "probability",
        }
    }
}

/// The model in the JSON file at `path` (see [`ModelFile`]).
pub fn read_model(path: &Path) -> Result<ModelFile, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::read(path, e))?;
    parse_model(&text).map_err(|why| {
        PlanError::Model {
            path: path.to_path_buf(),
            what: " is not a model file",
            why,
        }
        .into()
    })
}

/// The model in a model file's text (see [`ModelFile`]).
pub fn parse_model(text: &str) -> Result<ModelFile, String> {
    let output: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if release_file::is_release(&output) {
        return Ok(ModelFile::Released(release_file::read(&output)?));
    }
    let model = Model::from_output(&output).map_err(|e| e.to_string())?;
    Ok(ModelFile::Regression { model, output })
}

/// `model` applied to the rows of `data` (CSV, binary table or Parquet): the model's features
/// are taken by name (other columns are left out); `label` names the label column if the file
/// has one (a CSV file without one is read unlabelled).
pub fn score_file(model: &ModelFile, data: &Path, label: Option<&str>) -> Result<Scores, Error> {
    let mut options = match label {
        Some(l) => LoadOptions::new(l),
        None => LoadOptions::unlabelled(),
    };
    let features = model.features();
    // Only the model's columns (and the label) are read: a CSV's other columns, an id in
    // text or a cell left empty there, are left out as the help says. (A binary table or
    // Parquet file holds typed numbers; its columns are read whole.)
    if matches!(data::stream::sniff(data)?, data::stream::Format::Csv) {
        let header = data::csv::RecordReader::open(data, &LoadOptions::unlabelled())?.names;
        options.exclude = header
            .into_iter()
            .filter(|n| !features.contains(n) && Some(n.as_str()) != label)
            .collect();
    }
    let table = data::load(data, &options)?.data;
    let mut columns = Vec::with_capacity(features.len());
    for name in features {
        let j = table.names.iter().position(|n| n == name).ok_or_else(|| {
            PlanError::MissingFeature {
                path: data.to_path_buf(),
                column: name.clone(),
                features: features.to_vec(),
            }
        })?;
        columns.push(j);
    }
    let x = table.x.select(ndarray::Axis(1), &columns);
    Ok(Scores {
        probabilities: model.predict_mean(x.view())?.to_vec(),
        labels: label.map(|_| table.y.to_vec()),
        kind: model.kind(),
    })
}
