//! `privlogit.dp`'s Rust side: every method of `privlogit dp fit` through the library's
//! `dp::release` (so the same seed draws the same noise as the command line), and the privacy
//! ledger the command line keeps, checked before a fit and charged after it.

use std::path::{Path, PathBuf};

use ndarray::{ArrayView1, ArrayView2};
use privlogit::dp::dphtl::end_to_end::Settings as DphtlSettings;
use privlogit::dp::ledger::{self, Charge, Guarantee, Ledger};
use privlogit::dp::noise::Randomness;
use privlogit::dp::plr::Privacy;
use privlogit::dp::release::{
    self, Cost, DEFAULT_LAMBDA_IW, DEFAULT_PRIOR_SD_FLOOR, Fitted, Method, NamedSource,
};
use privlogit::dp::transfer::Labelled;
use privlogit::jobs::dp_fit::Request;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::buffers::{features, labelled};
use crate::errors::{BudgetExceeded, PrivlogitError, error, raise};

/// A fitted DP model: its JSON form (as `privlogit dp fit` writes it) and its probabilities.
#[pyclass(name = "DpModel", frozen, module = "privlogit._native")]
pub struct PyDpModel {
    fitted: Fitted,
    method: String,
}

impl PyDpModel {
    /// A model read back from a release file (its method as the file names it).
    pub fn new(fitted: Fitted, method: String) -> Self {
        Self { fitted, method }
    }
}

#[pymethods]
impl PyDpModel {
    /// The method's name (`plr`, `pst-s`, ...).
    #[getter]
    fn method(&self) -> &str {
        &self.method
    }

    /// The coefficients of a single linear model (PLR, output perturbation, SimComb's
    /// target), else None.
    #[getter]
    fn w(&self) -> Option<Vec<f64>> {
        match &self.fitted {
            Fitted::Linear(m) => Some(m.w.to_vec()),
            Fitted::Transfer { target, .. } => match target.as_ref() {
                Fitted::Linear(m) => Some(m.w.to_vec()),
                _ => None,
            },
            _ => None,
        }
    }

    /// The model as JSON text (the `model` of `privlogit dp fit`'s output).
    fn to_json(&self) -> String {
        self.fitted.json().to_string()
    }

    /// P(y = 1) for the rows of `x` (unscaled: each part scales rows as it was fitted).
    fn predict_proba(&self, py: Python<'_>, x: PyBuffer<f64>) -> PyResult<Vec<f64>> {
        let x = features(&x, "X")?;
        let want = self.fitted.features();
        if x.ncols() != want {
            return Err(crate::errors::DataError::new_err(format!(
                "X: the rows have {} columns, the model reads {want} features",
                x.ncols()
            )));
        }
        Ok(py.allow_threads(|| self.fitted.scores(x.view()).to_vec()))
    }
}

/// The ledger a fit charges, checked before any noise is drawn and recorded after the fit.
/// Each data set is known by its rows (the arrays given), as the command line knows a file.
struct Spending<'a> {
    path: Option<&'a Path>,
    budget: Option<f64>,
    ledger: Option<Ledger>,
    charges: Vec<Charge>,
}

impl<'a> Spending<'a> {
    fn new(path: Option<&'a Path>, budget: Option<f64>) -> PyResult<Self> {
        let ledger = match path {
            Some(p) => Some(Ledger::load(p, budget).map_err(ledger_error)?),
            None => None,
        };
        Ok(Self {
            path,
            budget,
            ledger,
            charges: Vec::new(),
        })
    }

    /// Charges the rows `(x, y)`, called `name` in messages, `epsilon` (with a ledger).
    fn add(&mut self, x: ArrayView2<'_, f64>, y: ArrayView1<'_, f64>, name: &str, epsilon: f64) {
        if let Some(ledger) = &self.ledger {
            self.charges.push(Charge::new(
                ledger.key().print_rows(x, y),
                name,
                Guarantee::pure(epsilon),
            ));
        }
    }

    fn check(&self, py: Python<'_>) -> PyResult<()> {
        match &self.ledger {
            Some(ledger) => warn(py, ledger.check(&self.charges).map_err(ledger_error)?),
            None => Ok(()),
        }
    }

    fn record(&self, py: Python<'_>) -> PyResult<()> {
        match self.path {
            Some(path) => warn(
                py,
                Ledger::record(path, self.budget, &self.charges).map_err(ledger_error)?,
            ),
            None => Ok(()),
        }
    }
}

/// The ledger's notes (a data set charged as another it shares most rows with) as warnings.
fn warn(py: Python<'_>, notes: Vec<String>) -> PyResult<()> {
    let warnings = py.import("warnings")?;
    for note in notes {
        warnings.call_method1("warn", (format!("privacy ledger: {note}"),))?;
    }
    Ok(())
}

fn ledger_error(e: ledger::LedgerError) -> PyErr {
    match e {
        ledger::LedgerError::Exceeded { .. } => {
            BudgetExceeded::new_err(crate::errors::in_keywords(&e.to_string()))
        }
        other => PrivlogitError::new_err(crate::errors::in_keywords(&other.to_string())),
    }
}

fn privacy(epsilon: f64) -> PyResult<Privacy> {
    let p = if epsilon.is_infinite() && epsilon > 0.0 {
        Privacy::Off
    } else {
        Privacy::Epsilon(epsilon)
    };
    p.epsilon().map_err(error)?;
    Ok(p)
}

/// Fits `method` (as `privlogit dp fit --method`) on `(x, y)`, and on `source` for a
/// transfer method, with the options `options` (the library's registry of DP options, by
/// Python keyword: `lam` for `lambda`, `source_lam` for `source_lambda`; unknown or ill-formed
/// ones, and those the method would ignore, are refused by name). With `ledger`, the data sets
/// (known by their rows; `dataset` and `source_dataset` name them in messages) are refused
/// past the ledger's total before any noise is drawn, and charged what the release cost after
/// the fit.
#[pyfunction]
#[pyo3(signature = (method_name, x, y, epsilon, source = None, ledger = None, budget = None, dataset = None, source_dataset = None, **options))]
#[allow(clippy::too_many_arguments)]
pub fn dp_fit(
    py: Python<'_>,
    method_name: &str,
    x: PyBuffer<f64>,
    y: PyBuffer<f64>,
    epsilon: f64,
    source: Option<(PyBuffer<f64>, PyBuffer<f64>)>,
    ledger: Option<PathBuf>,
    budget: Option<f64>,
    dataset: Option<&str>,
    source_dataset: Option<&str>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyDpModel> {
    let method =
        Method::parse(method_name).map_err(|e| PrivlogitError::new_err(format!("method: {e}")))?;
    if method == Method::Dphtl {
        return Err(PrivlogitError::new_err(
            "method: dphtl learns from several sources and a public set: use privlogit.dp.dphtl",
        ));
    }
    // An infinite epsilon is the non-private reference (Python's only).
    let off = epsilon.is_infinite() && epsilon > 0.0;
    let mut request = Request::new(method, if off { 1.0 } else { epsilon });
    for (keyword, value) in options.into_iter().flat_map(|o| o.iter()) {
        let keyword: String = keyword.extract()?;
        if let Some(value) = crate::py_settings::value(&value)? {
            let name = crate::errors::setting(&keyword);
            request.set(name, &value).map_err(raise)?;
        }
    }
    let source_epsilon = request.given().any(|name| name == "source_epsilon");
    let mut settings = request.settings(false, false).map_err(raise)?;
    if off {
        settings.privacy = Privacy::Off;
        if !source_epsilon {
            settings.source_privacy = Privacy::Off;
        }
    }
    let (x, y) = labelled(&x, &y, "X, y")?;
    let source = match &source {
        Some((sx, sy)) => Some(labelled(sx, sy, "source")?),
        None => None,
    };
    let cost = Cost::of(method, &settings, usize::from(source.is_some()));
    let mut spending = Spending::new(ledger.as_deref(), budget)?;
    spending.add(x.view(), y.view(), dataset.unwrap_or("X"), cost.target);
    if let (Some((sx, sy)), Some(spent)) = (&source, cost.sources.first()) {
        spending.add(
            sx.view(),
            sy.view(),
            source_dataset.unwrap_or("source X"),
            *spent,
        );
    }
    spending.check(py)?;
    let released = py
        .allow_threads(|| {
            let mut rng = request.randomness().rng();
            release::fit(
                method,
                &settings,
                Labelled {
                    x: x.view(),
                    y: y.view(),
                },
                source.as_ref().map(|(sx, sy)| Labelled {
                    x: sx.view(),
                    y: sy.view(),
                }),
                &mut rng,
            )
        })
        .map_err(error)?;
    spending.record(py)?;
    Ok(PyDpModel {
        fitted: released.fitted,
        method: method.name().to_string(),
    })
}

/// DPHTL (dissertation Algorithm 4) as `privlogit dp fit --method dphtl` runs it: `sources`
/// a list of `(X, y)` (first half of each one's rows trains its hypothesis, second half its
/// importance weights), `public` the public rows, `(x, y)` the target's labelled rows,
/// `unlabelled` its unlabelled rows (default: `x`). Returns a dict of what the command writes.
#[pyfunction]
#[pyo3(signature = (sources, public, x, y, epsilon, unlabelled = None, lam = None, lambda_iw = None, sd_floor = None, seed = None, ledger = None, budget = None, source_datasets = None))]
#[allow(clippy::too_many_arguments)]
pub fn dp_dphtl<'py>(
    py: Python<'py>,
    sources: Vec<(PyBuffer<f64>, PyBuffer<f64>)>,
    public: PyBuffer<f64>,
    x: PyBuffer<f64>,
    y: PyBuffer<f64>,
    epsilon: f64,
    unlabelled: Option<PyBuffer<f64>>,
    lam: Option<f64>,
    lambda_iw: Option<f64>,
    sd_floor: Option<f64>,
    seed: Option<u64>,
    ledger: Option<PathBuf>,
    budget: Option<f64>,
    source_datasets: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyDict>> {
    let epsilon = privacy(epsilon)?.epsilon().map_err(error)?;
    let settings = DphtlSettings {
        epsilon,
        lambda_iw: lambda_iw.unwrap_or(DEFAULT_LAMBDA_IW),
        lambda_lr: lam.unwrap_or(release::DEFAULT_LAMBDA),
        sd_floor: sd_floor.unwrap_or(DEFAULT_PRIOR_SD_FLOOR),
    };
    let tables = sources
        .iter()
        .enumerate()
        .map(|(k, (sx, sy))| {
            let (x, y) = labelled(sx, sy, &format!("source {k}"))?;
            Ok((format!("source {k}"), x, y))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let public = features(&public, "public")?;
    let (x, y) = labelled(&x, &y, "X, y")?;
    let unlabelled = match &unlabelled {
        Some(u) => Some(features(u, "unlabelled")?),
        None => None,
    };
    if let Some(names) = source_datasets.as_ref().filter(|n| n.len() != tables.len()) {
        return Err(PrivlogitError::new_err(format!(
            "source_datasets: {} names for {} sources",
            names.len(),
            tables.len()
        )));
    }
    // Each source spends epsilon once (Theorem 4.3.1: disjoint rows).
    let mut spending = Spending::new(ledger.as_deref(), budget)?;
    for (k, (name, sx, sy)) in tables.iter().enumerate() {
        let name = source_datasets.as_ref().map_or(name.as_str(), |n| &n[k]);
        spending.add(sx.view(), sy.view(), name, epsilon.unwrap_or(f64::INFINITY));
    }
    spending.check(py)?;
    let released = py
        .allow_threads(|| {
            let named: Vec<NamedSource<'_>> = tables
                .iter()
                .map(|(name, sx, sy)| NamedSource {
                    name,
                    rows: Labelled {
                        x: sx.view(),
                        y: sy.view(),
                    },
                })
                .collect();
            let mut rng = seed.map_or(Randomness::Os, Randomness::Seeded).rng();
            release::dphtl(
                &named,
                public.view(),
                unlabelled.as_ref().unwrap_or(&x).view(),
                Labelled {
                    x: x.view(),
                    y: y.view(),
                },
                &settings,
                &mut rng,
            )
        })
        .map_err(error)?;
    spending.record(py)?;
    let fitted = &released.fitted;
    let out = PyDict::new(py);
    out.set_item(
        "hypothesis_weights",
        fitted.hypothesis_weights.weights.to_vec(),
    )?;
    out.set_item("kkt_residual", fitted.hypothesis_weights.kkt_residual)?;
    out.set_item("prior_mean", fitted.prior.mean.to_vec())?;
    out.set_item("prior_sd", fitted.prior.sd.to_vec())?;
    out.set_item("coef", fitted.theta.to_vec())?;
    Ok(out)
}

/// `(total, spent)` of the ledger at `path` for the data set of rows `(x, y)` (epsilon, exact
/// to 1e-6): its own account's, or the account it shares most of its rows with.
#[pyfunction]
pub fn ledger_spent(path: PathBuf, x: PyBuffer<f64>, y: PyBuffer<f64>) -> PyResult<(f64, f64)> {
    let ledger = Ledger::load(&path, None).map_err(ledger_error)?;
    let (x, y) = labelled(&x, &y, "X, y")?;
    let print = ledger.key().print_rows(x.view(), y.view());
    let micro = |e: ledger::Epsilon| e.micros() as f64 / 1e6;
    Ok((micro(ledger.total()), micro(ledger.spent_by(&print))))
}

/// The total each data set of the ledger at `path` may spend.
#[pyfunction]
pub fn ledger_total(path: PathBuf) -> PyResult<f64> {
    let ledger = Ledger::load(&path, None).map_err(ledger_error)?;
    Ok(ledger.total().micros() as f64 / 1e6)
}
