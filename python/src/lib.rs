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

/// The secure study in this process (key holder, aggregator and one Node per party, 2048-bit
/// Paillier key, masked linear algebra): `protocol` is `local`, `hessian` or `newton`. Returns
/// the coefficients and the study's cost as a dict.
#[pyfunction]
#[pyo3(signature = (parties, protocol = "hessian", optimizer = "privlogit-accel", lam = 1.0, standardize = true, intercept = true, tol = 1e-10, max_iter = 10_000))]
#[allow(clippy::too_many_arguments)]
fn study_parties<'py>(
    py: Python<'py>,
    parties: Vec<(PyBuffer<f64>, PyBuffer<f64>)>,
    protocol: &str,
    optimizer: &str,
    lam: f64,
    standardize: bool,
    intercept: bool,
    tol: f64,
    max_iter: usize,
) -> PyResult<Bound<'py, PyDict>> {
    use privlogit::protocols::paillier::{KeyPair, KeySize};
    use privlogit::protocols::secure::aggregator::Protocol;
    use privlogit::protocols::secure::inprocess;
    use privlogit::protocols::secure::solver::LinearAlgebra;
    let optimizer: Optimizer = optimizer.parse().map_err(|e| PyValueError::new_err(format!("optimizer: {e}")))?;
    let protocol = match protocol {
        "local" => Protocol::Local,
        "hessian" => Protocol::Hessian,
        "newton" => Protocol::Newton,
        other => return Err(PyValueError::new_err(format!("protocol: `{other}` is not local, hessian or newton"))),
    };
    let datasets = datasets(py, &parties)?;
    let options = FitOptions::new().lambda(lam).relative_tolerance(tol).max_iterations(max_iter);
    let (prepared, report) = py
        .allow_threads(|| -> Result<_, String> {
            let prepared = fit::prepare(datasets, Preparation { standardize, intercept }).map_err(|e| e.to_string())?;
            let key = KeyPair::generate(KeySize::Bits2048, &mut rand::rng());
            let report = inprocess::run(
                &prepared.parties,
                &key.secret,
                // The demo study's fixed-point format (64 bits, 46 fractional).
                privlogit_circuits::fixed::FixedFormat::new(64, 46).map_err(|e| e.to_string())?,
                LinearAlgebra::Masked,
                protocol,
                optimizer,
                &options,
                &mut |_| {},
                None,
            )
            .map_err(|e| e.to_string())?;
            Ok((prepared, report))
        })
        .map_err(PyValueError::new_err)?;
    let out = PyDict::new(py);
    out.set_item("coef", report.fit.beta.to_vec())?;
    out.set_item("names", prepared.names.clone())?;
    out.set_item("n_iter", report.fit.iterations)?;
    out.set_item("status", format!("{:?}", report.fit.status))?;
    out.set_item("seconds", report.seconds)?;
    out.set_item("and_gates", report.aggregator.and_gates)?;
    Ok(out)
}

/// Each party's `(X, y)` buffers as a data set.
fn datasets(py: Python<'_>, parties: &[(PyBuffer<f64>, PyBuffer<f64>)]) -> PyResult<Vec<Dataset>> {
    let mut out = Vec::with_capacity(parties.len());
    for (k, (x, y)) in parties.iter().enumerate() {
        let x = matrix(py, x, &format!("party {k}: X"))?;
        let y = vector(py, y, &format!("party {k}: y"))?;
        if y.len() != x.nrows() {
            return Err(PyValueError::new_err(format!("party {k}: {} labels for {} rows", y.len(), x.nrows())));
        }
        let names = (1..=x.ncols()).map(|j| format!("x{j}")).collect();
        out.push(Dataset { source: format!("party {k}"), names, x, y });
    }
    Ok(out)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_parties, m)?)?;
    m.add_function(wrap_pyfunction!(study_parties, m)?)?;
    Ok(())
}
