//! A fitted logistic model in the units of the user's data, so that it applies to raw rows.
//!
//! A fit with pooled standardisation (`--standardize`) finds coefficients `beta` for z-scored
//! features `z_j = (x_j - m_j) / s_j`. Its log-odds are
//! `beta_0 + sum_j beta_j z_j = (beta_0 - sum_j beta_j m_j / s_j) + sum_j (beta_j / s_j) x_j`,
//! so the same model in raw units has weights `beta_j / s_j` and intercept
//! `beta_0 - sum_j beta_j m_j / s_j` (with `beta_0 = 0` when no intercept was fitted). The
//! means and scales are public by design in a standardised study; a model without them could
//! only be applied to rows standardised the same way, which the user cannot do.

use ndarray::{Array1, ArrayView2};
use privlogit_protocols::objective::Family;
use serde::{Deserialize, Serialize};

pub use crate::data::standardize::INTERCEPT;

/// The pooled statistics a standardised fit used, as its outputs carry them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standardization {
    /// Feature names, in column order.
    pub names: Vec<String>,
    /// Pooled means.
    pub means: Vec<f64>,
    /// Pooled population standard deviations.
    pub scales: Vec<f64>,
}

/// A generalised linear model in raw units: the mean of the label is the family's inverse link
/// of `intercept + weights . x` (for logistic regression `P(y = 1 | x) = sigmoid(...)`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Feature names, in the order a row's values are read.
    pub features: Vec<String>,
    /// The linear predictor at `x = 0` (0 when neither an intercept nor standardisation was
    /// used).
    pub intercept: f64,
    /// One weight per feature.
    pub weights: Vec<f64>,
    /// The label's distribution (its link turns the linear predictor into the mean). Outputs
    /// carry it beside the model as `"family"`; binomial when absent.
    #[serde(skip)]
    pub family: Family,
}

/// Why a fit's output does not make a model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The output lacks a field or has one of the wrong type or length.
    #[error("not a model: {0}")]
    Malformed(#[source] Malformed),
    /// A probability asked of a model whose label is not 0/1.
    #[error("a {0} model predicts a mean, not a probability: ask for its mean (predict)")]
    NotBinomial(&'static str),
    /// Rows to score do not have the model's columns.
    #[error("the rows have {rows} columns, the model {model} features ({names})")]
    Columns {
        /// Columns of the rows.
        rows: usize,
        /// Features of the model.
        model: usize,
        /// The model's feature names.
        names: String,
    },
}

/// What is wrong with an output that does not make a model: typed, so a caller can tell a
/// missing field from a mismatch without reading the message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Malformed {
    /// A field the model needs is absent.
    #[error("no {0:?} field")]
    MissingField(&'static str),
    /// A field that does not decode as the model needs.
    #[error("{field:?}: {source}")]
    Field {
        /// The field.
        field: &'static str,
        /// The decoder's error.
        #[source]
        source: JsonError,
    },
    /// Names and coefficients of different lengths.
    #[error("{names} names for {coefficients} coefficients")]
    Lengths {
        /// Names given.
        names: usize,
        /// Coefficients given.
        coefficients: usize,
    },
    /// Standardisation statistics that do not match the model's features.
    #[error("the standardisation's {columns} columns do not match the model's {features} features")]
    Standardization {
        /// Columns of the standardisation.
        columns: usize,
        /// Features of the model.
        features: usize,
    },
    /// A family the model does not know (the JSON value, as written).
    #[error("unknown \"family\" {0}")]
    Family(serde_json::Value),
}

impl Malformed {
    fn field(field: &'static str) -> impl Fn(serde_json::Error) -> ModelError {
        move |e| {
            ModelError::Malformed(Malformed::Field {
                field,
                source: JsonError(std::sync::Arc::new(e)),
            })
        }
    }
}

/// A `serde_json` error, shared so that [`ModelError`] stays `Clone`; equal when the messages
/// are (`serde_json::Error` is neither `Clone` nor `PartialEq`).
#[derive(Debug, Clone)]
pub struct JsonError(pub std::sync::Arc<serde_json::Error>);

impl PartialEq for JsonError {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

impl Model {
    /// The model of coefficients `beta` named `names` (the intercept first, named
    /// [`INTERCEPT`], when one was fitted), found on features standardised by `standardization`
    /// when given.
    pub fn from_fit(
        names: &[String],
        beta: &[f64],
        standardization: Option<&Standardization>,
    ) -> Result<Self, ModelError> {
        if names.len() != beta.len() {
            return Err(ModelError::Malformed(Malformed::Lengths {
                names: names.len(),
                coefficients: beta.len(),
            }));
        }
        let has_intercept = names.first().is_some_and(|n| n == INTERCEPT);
        let skip = usize::from(has_intercept);
        let features: Vec<String> = names[skip..].to_vec();
        let mut intercept = if has_intercept { beta[0] } else { 0.0 };
        let mut weights: Vec<f64> = beta[skip..].to_vec();
        if let Some(s) = standardization {
            if s.names != features
                || s.means.len() != features.len()
                || s.scales.len() != features.len()
            {
                return Err(ModelError::Malformed(Malformed::Standardization {
                    columns: s.names.len(),
                    features: features.len(),
                }));
            }
            for ((w, m), sd) in weights.iter_mut().zip(&s.means).zip(&s.scales) {
                *w /= sd;
                intercept -= *w * m;
            }
        }
        Ok(Self {
            features,
            intercept,
            weights,
            family: Family::Binomial,
        })
    }

    /// The same model for labels of `family`.
    pub fn with_family(self, family: Family) -> Self {
        Self { family, ..self }
    }

    /// The model in a fit's or a study's JSON output (`privlogit fit --json`, `privlogit study
    /// --json`, the aggregator's `--out` file, Python's result dict as JSON): `names`,
    /// `coefficients` and, when standardised, `standardization`.
    pub fn from_output(output: &serde_json::Value) -> Result<Self, ModelError> {
        let field = |name: &'static str| {
            output
                .get(name)
                .ok_or(ModelError::Malformed(Malformed::MissingField(name)))
        };
        let names: Vec<String> =
            serde_json::from_value(field("names")?.clone()).map_err(Malformed::field("names"))?;
        let beta: Vec<f64> = serde_json::from_value(field("coefficients")?.clone())
            .map_err(Malformed::field("coefficients"))?;
        let standardization: Option<Standardization> = match output.get("standardization") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => Some(
                serde_json::from_value(v.clone()).map_err(Malformed::field("standardization"))?,
            ),
        };
        let family = match output.get("family") {
            None | Some(serde_json::Value::Null) => Family::Binomial,
            Some(v) => v
                .as_str()
                .and_then(Family::parse)
                .ok_or_else(|| ModelError::Malformed(Malformed::Family(v.clone())))?,
        };
        Ok(Self::from_fit(&names, &beta, standardization.as_ref())?.with_family(family))
    }

    /// The mean of the label for each row of `x` (columns in [`Self::features`] order, raw
    /// units): `P(y = 1)` for logistic regression, the expected count for Poisson, the
    /// expected value for Gaussian.
    pub fn predict_mean(&self, x: ArrayView2<'_, f64>) -> Result<Array1<f64>, ModelError> {
        if x.ncols() != self.weights.len() {
            return Err(ModelError::Columns {
                rows: x.ncols(),
                model: self.weights.len(),
                names: self.features.join(", "),
            });
        }
        let w = Array1::from(self.weights.clone());
        let family = self.family;
        Ok(x.dot(&w).mapv(|z| family.mean(z + self.intercept)))
    }

    /// `P(y = 1)` for each row of `x` (columns in [`Self::features`] order, raw units); refused
    /// for a model whose label is not 0/1.
    pub fn predict_proba(&self, x: ArrayView2<'_, f64>) -> Result<Array1<f64>, ModelError> {
        if self.family != Family::Binomial {
            return Err(ModelError::NotBinomial(self.family.name()));
        }
        self.predict_mean(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    /// The raw-unit model gives the standardised model's probabilities on the same rows
    /// (worked by hand: z = (x - m) / s).
    #[test]
    fn raw_units_give_the_standardised_probabilities() {
        let names: Vec<String> = ["intercept", "a", "b"].map(String::from).to_vec();
        let beta = [0.3, -1.2, 0.7];
        let s = Standardization {
            names: names[1..].to_vec(),
            means: vec![2.0, -5.0],
            scales: vec![4.0, 0.5],
        };
        let model = Model::from_fit(&names, &beta, Some(&s)).expect("model");
        let x = array![[2.0, -5.0], [6.0, -4.5], [-1.0, 3.0]];
        let got = model.predict_proba(x.view()).expect("scores");
        for (row, p) in x.rows().into_iter().zip(got) {
            let z = [(row[0] - 2.0) / 4.0, (row[1] + 5.0) / 0.5];
            let logit = 0.3 - 1.2 * z[0] + 0.7 * z[1];
            assert!((p - 1.0 / (1.0 + (-logit).exp())).abs() < 1e-15);
        }
        assert!(matches!(
            model.predict_proba(array![[1.0]].view()),
            Err(ModelError::Columns {
                rows: 1,
                model: 2,
                ..
            })
        ));
    }
}
