//! A DP release read back: the `model` object `privlogit dp fit --out` writes
//! ([`super::release::Fitted::json`]), or DPHTL's `coefficients`, into a model that scores
//! rows exactly as the fitted one did. So a published release can be applied later (`privlogit
//! predict`, Python's `privlogit.load_model`) without refitting, which would spend epsilon again.

use ndarray::Array1;
use serde_json::Value;

use super::feature_split::{FeatureSplit, SplitModel};
use super::plr::LinearModel;
use super::release::{Fitted, Method};
use super::scaling::RowScaling;
use super::stacking::{Combiner, LowLevel, Stacked};

/// A DP release file's model and the feature names it reads (by name, in this order).
#[derive(Debug, Clone)]
pub struct Released {
    /// The method that wrote it (`plr`, `pst-s`, `dphtl`, ...).
    pub method: String,
    /// The features, in the order the model reads a row's values.
    pub features: Vec<String>,
    /// The model.
    pub fitted: Fitted,
}

/// Whether `output` looks like a DP release (`privlogit dp fit`'s report) rather than a fit's.
pub fn is_release(output: &Value) -> bool {
    output.get("method").is_some() && output.get("epsilon_spent").is_some()
}

/// The model of a DP release report.
pub fn read(output: &Value) -> Result<Released, String> {
    let written = output
        .get("method")
        .and_then(Value::as_str)
        .ok_or("no \"method\" field")?;
    // The method's own name (`pst-s`); files written before it carried `psts`.
    let method = Method::ALL
        .into_iter()
        .find(|m| m.name() == written || format!("{m:?}").eq_ignore_ascii_case(written))
        .map_or_else(|| written.to_string(), |m| m.name().to_string());
    let features: Vec<String> = serde_json::from_value(
        output
            .get("features")
            .cloned()
            .ok_or("no \"features\" field")?,
    )
    .map_err(|e| format!("\"features\": {e}"))?;
    let d = features.len();
    let fitted = if method == "dphtl" {
        // DPHTL's report carries its target coefficients on rows scaled to norm 1.
        let w = floats(output.get("coefficients"), "coefficients")?;
        Fitted::Linear(LinearModel {
            w: Array1::from(w),
            scaling: RowScaling::Normalize,
            target: 1.0,
        })
    } else {
        fitted(output.get("model").ok_or("no \"model\" field")?, d)?
    };
    check_width(&fitted, d)?;
    Ok(Released {
        method,
        features,
        fitted,
    })
}

/// The inverse of [`Fitted::json`] for `d` features.
fn fitted(v: &Value, d: usize) -> Result<Fitted, String> {
    if let Some(target) = v.get("target") {
        return Ok(Fitted::Transfer {
            source: v.get("source").cloned().unwrap_or(Value::Null),
            target: Box::new(fitted(target, d)?),
        });
    }
    if let Some(groups) = v.get("groups") {
        return Ok(Fitted::Split(split(groups, d)?));
    }
    if let Some(low) = v.get("low_level") {
        let low = if low
            .as_array()
            .and_then(|a| a.first())
            .is_some_and(|m| m.get("features").is_some())
        {
            LowLevel::Features(split(low, d)?)
        } else {
            LowLevel::Samples(
                low.as_array()
                    .ok_or("\"low_level\" is not a list")?
                    .iter()
                    .map(linear)
                    .collect::<Result<_, _>>()?,
            )
        };
        let combiner = match v.get("combiner").and_then(Value::as_str) {
            // The high level's penalty mattered when it was fitted, not when it scores.
            Some("stacking") => Combiner::Stacking { lambda: 0.0 },
            Some("majority-vote") => Combiner::MajorityVote,
            Some("weighted-vote") => Combiner::WeightedVote,
            other => return Err(format!("unknown combiner {other:?}")),
        };
        let high = match v.get("high_level") {
            None | Some(Value::Null) => None,
            Some(m) => Some(linear(m)?),
        };
        if matches!(combiner, Combiner::Stacking { .. }) && high.is_none() {
            return Err("a stacking combiner without its \"high_level\" model".into());
        }
        return Ok(Fitted::Stacked(Stacked {
            low,
            high,
            combiner,
        }));
    }
    Ok(Fitted::Linear(linear(v)?))
}

fn split(groups: &Value, d: usize) -> Result<SplitModel, String> {
    let groups = groups.as_array().ok_or("feature groups are not a list")?;
    let mut columns = Vec::with_capacity(groups.len());
    let mut importance = Vec::with_capacity(groups.len());
    let mut models = Vec::with_capacity(groups.len());
    for g in groups {
        let features: Vec<usize> = serde_json::from_value(
            g.get("features")
                .cloned()
                .ok_or("a group without \"features\"")?,
        )
        .map_err(|e| format!("a group's \"features\": {e}"))?;
        importance.push(
            g.get("importance")
                .and_then(Value::as_f64)
                .ok_or("a group without \"importance\"")?,
        );
        columns.push(features);
        models.push(linear(g)?);
    }
    let split = FeatureSplit::new(columns, importance, d).map_err(|e| e.to_string())?;
    Ok(SplitModel { split, models })
}

fn linear(v: &Value) -> Result<LinearModel, String> {
    let w = floats(v.get("w"), "w")?;
    let scaling = match v.get("row_scaling") {
        Some(Value::String(s)) if s == "normalize" => RowScaling::Normalize,
        Some(Value::Object(o)) => RowScaling::Clip {
            bound: o
                .get("clip")
                .and_then(Value::as_f64)
                .ok_or("\"row_scaling\" without its \"clip\" bound")?,
        },
        other => return Err(format!("unknown \"row_scaling\" {other:?}")),
    };
    let target = v
        .get("row_norm")
        .and_then(Value::as_f64)
        .ok_or("no \"row_norm\"")?;
    Ok(LinearModel {
        w: Array1::from(w),
        scaling,
        target,
    })
}

fn floats(v: Option<&Value>, name: &str) -> Result<Vec<f64>, String> {
    serde_json::from_value(v.cloned().ok_or(format!("no \"{name}\" field"))?)
        .map_err(|e| format!("\"{name}\": {e}"))
}

/// Every linear model reads as many values as it has weights: refuse a file whose widths do
/// not add up, rather than panic on the first row.
fn check_width(fitted: &Fitted, d: usize) -> Result<(), String> {
    let width = |m: &LinearModel, want: usize| {
        if m.w.len() == want {
            Ok(())
        } else {
            Err(format!(
                "a model of {} weights for {want} features",
                m.w.len()
            ))
        }
    };
    match fitted {
        Fitted::Linear(m) => width(m, d),
        Fitted::Split(s) => {
            (0..s.split.k()).try_for_each(|k| width(&s.models[k], s.split.groups()[k].len()))
        }
        Fitted::Stacked(st) => {
            match &st.low {
                LowLevel::Samples(models) => models.iter().try_for_each(|m| width(m, d))?,
                LowLevel::Features(s) => check_width(&Fitted::Split(s.clone()), d)?,
            }
            let k = match &st.low {
                LowLevel::Samples(models) => models.len(),
                LowLevel::Features(s) => s.split.k(),
            };
            // The high level reads the K low-level scores and a constant 1.
            st.high.as_ref().map_or(Ok(()), |h| width(h, k + 1))
        }
        Fitted::Transfer { target, .. } => check_width(target, d),
    }
}
