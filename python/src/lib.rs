//! `privlogit._native`: the Rust side of the Python package. Arrays come in through the buffer
//! protocol (numpy arrays, read in place), the work runs with the GIL released, and results
//! go back as plain Python values (the Python layer wraps them as numpy arrays).

use ndarray::{Array1, Array2};
use privlogit::data::Dataset;
use privlogit::fit::{self, Preparation};
use privlogit::protocols::{FitOptions, Optimizer};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A 2-D float64 buffer as rows x columns (copied into the fit's own layout).
fn matrix(py: Python<'_>, buffer: &PyBuffer<f64>, what: &str) -> PyResult<Array2<f64>> {
    let shape = buffer.shape();
    if shape.len() != 2 {
        return Err(PyValueError::new_err(format!(
            "{what}: expected a 2-D array, got {} dimensions",
            shape.len()
        )));
    }
    let values = buffer.to_vec(py)?;
    Array2::from_shape_vec((shape[0], shape[1]), values)
        .map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

fn vector(py: Python<'_>, buffer: &PyBuffer<f64>, what: &str) -> PyResult<Array1<f64>> {
    if buffer.shape().len() != 1 {
        return Err(PyValueError::new_err(format!(
            "{what}: expected a 1-D array"
        )));
    }
    Ok(Array1::from(buffer.to_vec(py)?))
}

/// Plaintext distributed fit over `parties`, a list of `(X, y)` float64 arrays (one per party).
/// Returns a dict with `coef` (intercept first when `intercept`), `names`, `n_iter`, `status`,
/// `objective`, `log_likelihood`.
#[pyfunction]
#[pyo3(signature = (parties, optimizer = "privlogit-accel", lam = 1.0, standardize = true, intercept = true, tol = 1e-10, max_iter = 10_000))]
#[allow(clippy::too_many_arguments)]
fn fit_parties<'py>(
    py: Python<'py>,
    parties: Vec<(PyBuffer<f64>, PyBuffer<f64>)>,
    optimizer: &str,
    lam: f64,
    standardize: bool,
    intercept: bool,
    tol: f64,
    max_iter: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let optimizer: Optimizer = optimizer
        .parse()
        .map_err(|e| PyValueError::new_err(format!("optimizer: {e}")))?;
    let mut datasets = Vec::with_capacity(parties.len());
    for (k, (x, y)) in parties.iter().enumerate() {
        let x = matrix(py, x, &format!("party {k}: X"))?;
        let y = vector(py, y, &format!("party {k}: y"))?;
        let names = (1..=x.ncols()).map(|j| format!("x{j}")).collect();
        datasets.push(Dataset {
            source: format!("party {k}"),
            names,
            x,
            y,
        });
    }
    let options = FitOptions::new()
        .lambda(lam)
        .relative_tolerance(tol)
        .max_iterations(max_iter);
    let (prepared, fitted) = py
        .allow_threads(|| -> Result<_, String> {
            let prepared = fit::prepare(
                datasets,
                Preparation {
                    standardize,
                    intercept,
                },
            )
            .map_err(|e| e.to_string())?;
            let fitted =
                fit::fit(&prepared, optimizer, &options, &mut |_| {}).map_err(|e| e.to_string())?;
            Ok((prepared, fitted))
        })
        .map_err(PyValueError::new_err)?;
    let out = PyDict::new(py);
    out.set_item("coef", fitted.report.beta.to_vec())?;
    out.set_item("names", prepared.names.clone())?;
    out.set_item("n_iter", fitted.report.iterations)?;
    out.set_item("status", format!("{:?}", fitted.report.status))?;
    out.set_item("objective", fitted.objective)?;
    out.set_item("log_likelihood", fitted.log_likelihood)?;
    if let Some(s) = &prepared.standardizer {
        out.set_item("mean", s.means.to_vec())?;
        out.set_item("scale", s.scales.to_vec())?;
    }
    Ok(out)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_parties, m)?)?;
    Ok(())
}
