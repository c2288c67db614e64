//! Python's keywords as the library's settings: one registry of keys and one default for the
//! command line and Python alike (`privlogit::settings`). The Python layer passes the keywords
//! the user gave; the library applies them over the study file's, checks them and fills in
//! its defaults.

use privlogit::settings::{Preset, Reader, Spec, keys_of};
use privlogit::study::StudyFile;
use privlogit::study::file;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};

use crate::errors::raise;

/// A Python value as a setting's value (`None`: not given).
pub fn value(v: &Bound<'_, PyAny>) -> PyResult<Option<toml::Value>> {
    if v.is_none() {
        return Ok(None);
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(Some(toml::Value::Boolean(v.extract()?)));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(Some(toml::Value::Integer(v.extract()?)));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Some(toml::Value::Float(v.extract()?)));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Some(toml::Value::String(v.extract()?)));
    }
    if let Ok(path) = v.extract::<std::path::PathBuf>() {
        return Ok(Some(toml::Value::String(path.display().to_string())));
    }
    if let Ok(items) = v.downcast::<PyList>() {
        let mut out = Vec::new();
        for item in items.iter() {
            if let Some(x) = value(&item)? {
                out.push(x);
            }
        }
        return Ok(Some(toml::Value::Array(out)));
    }
    // numpy arrays and other sequences of numbers.
    if let Ok(items) = v.extract::<Vec<f64>>() {
        return Ok(Some(toml::Value::Array(
            items.into_iter().map(toml::Value::Float).collect(),
        )));
    }
    // numpy integers (through `__index__`), then numpy floats and other numbers.
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Some(toml::Value::Integer(i)));
    }
    if let Ok(x) = v.extract::<f64>() {
        return Ok(Some(toml::Value::Float(x)));
    }
    Err(crate::errors::PrivlogitError::new_err(format!(
        "a setting of type {} (expected a number, text, a path or a list)",
        v.get_type().name()?
    )))
}

/// The spec of `reader` from the study file at `study` (if any) and the keywords `given`, with
/// the file.
pub fn spec(
    reader: Reader,
    study: Option<std::path::PathBuf>,
    given: &Bound<'_, PyDict>,
) -> PyResult<(Spec, Option<StudyFile>)> {
    let file = study
        .map(|p| StudyFile::read(&p))
        .transpose()
        .map_err(raise)?;
    let mut settings = Vec::new();
    for (k, v) in given.iter() {
        let key: String = k.extract()?;
        if let Some(v) = value(&v)? {
            settings.push((key, v));
        }
    }
    let spec = file::spec(reader, file.as_ref(), &settings).map_err(raise)?;
    Ok((spec, file))
}

/// A setting's value as Python's.
fn to_python<'py>(py: Python<'py>, v: &toml::Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        toml::Value::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any(),
        toml::Value::Integer(i) => i.into_pyobject(py)?.into_any(),
        toml::Value::Float(f) => f.into_pyobject(py)?.into_any(),
        toml::Value::String(s) => s.into_pyobject(py)?.into_any(),
        toml::Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        other => format!("{other:?}").into_pyobject(py)?.into_any(),
    })
}

/// `{key: default}` of every setting `reader` (`fit`, `study`, `keyholder`, `aggregator`,
/// `node`; `dp` for a DP fit's options; `dl` for DPSTGD's) takes: the library's defaults, which the Python functions' keywords show and the
/// command line's flags too (a key without a default maps to None).
#[pyfunction]
pub fn defaults<'py>(py: Python<'py>, reader: &str) -> PyResult<Bound<'py, PyDict>> {
    if reader == "dl" {
        let d = privlogit::dl::DEFAULTS;
        let out = PyDict::new(py);
        out.set_item("q", d.q)?;
        out.set_item("upload_ratio", d.upload_ratio)?;
        out.set_item("iterations", d.iterations)?;
        out.set_item("bound", d.bound)?;
        out.set_item("learning_rate", d.learning_rate)?;
        out.set_item("hidden", d.hidden.to_vec())?;
        out.set_item("delta", d.delta)?;
        out.set_item("accounting", d.accounting)?;
        return Ok(out);
    }
    if reader == "dl-sparse" {
        let d = privlogit::dl::SPARSE_DEFAULTS;
        let out = PyDict::new(py);
        out.set_item("q", d.q)?;
        out.set_item("bound", d.bound)?;
        out.set_item("learning_rate", d.learning_rate)?;
        out.set_item("delta", d.delta)?;
        return Ok(out);
    }
    let reader = match reader {
        "fit" => Reader::Fit,
        "study" => Reader::Study,
        "keyholder" => Reader::KeyHolder,
        "aggregator" => Reader::Aggregator,
        "node" => Reader::Node,
        "dealer" => Reader::Dealer,
        "dp" => Reader::DpFit,
        other => {
            return Err(crate::errors::PrivlogitError::new_err(format!(
                "`{other}` is not fit, study, keyholder, aggregator, node or dp"
            )));
        }
    };
    let spec = Spec::default();
    let out = PyDict::new(py);
    for key in keys_of(reader) {
        let default = match key.preset {
            Preset::Spec => spec.get(key.name),
            preset => preset.value(),
        };
        // A DP fit's options are Python keywords (`lam`); the study's keys stay the library's
        // names, which the Python layer maps from its own keywords.
        let name = if reader == Reader::DpFit {
            crate::errors::keyword(key.name)
        } else {
            key.name
        };
        match default {
            Some(v) => out.set_item(name, to_python(py, &v)?)?,
            None => out.set_item(name, py.None())?,
        }
    }
    Ok(out)
}
