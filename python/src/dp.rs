//! `privlogit.dp`'s Rust side: every method of `privlogit dp fit` through the library's
//! `dp::release` (so the same seed draws the same noise as the command line), and the privacy
//! ledger the command line keeps, checked before a fit and charged after it.

use std::path::{Path, PathBuf};

use privlogit::dp::dphtl::transfer::Settings as DphtlSettings;
use privlogit::dp::ledger::{self, Charge, Ledger};
use privlogit::dp::noise::Randomness;
use privlogit::dp::plr::Privacy;
use privlogit::dp::release::{self, Fitted, Method, MethodSettings, NamedSource, SplitChoice};
use privlogit::dp::scaling::RowScaling;
use privlogit::dp::stacking::Combiner;
use privlogit::dp::transfer::Labelled;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::buffers::{matrix, vector};
use crate::errors::{BudgetExceeded, PrivlogitError, error};

/// A fitted DP model: its JSON form (as `privlogit dp fit` writes it) and its probabilities.
#[pyclass(name = "DpModel", frozen, module = "privlogit._native")]
pub struct PyDpModel {
    fitted: Fitted,
    method: &'static str,
}

#[pymethods]
impl PyDpModel {
    /// The method's name (`plr`, `pst-s`, ...).
    #[getter]
    fn method(&self) -> &'static str {
        self.method
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
        let x = matrix(&x, "X")?;
        Ok(py.allow_threads(|| self.fitted.scores(x.view()).to_vec()))
    }
}

/// A data set's ledger charge: its name, the file (or what the caller calls it), epsilon.
fn charge(dataset: &str, epsilon: f64) -> Charge {
    Charge {
        dataset: dataset.to_string(),
        file: dataset.to_string(),
        epsilon,
    }
}

/// The ledger a fit charges, checked before any noise is drawn and recorded after the fit.
struct Spending<'a> {
    path: Option<&'a Path>,
    budget: Option<f64>,
    charges: Vec<Charge>,
}

impl Spending<'_> {
    fn check(&self) -> PyResult<()> {
        match self.path {
            Some(path) => Ledger::load(path, self.budget)
                .and_then(|l| l.check(&self.charges))
                .map_err(ledger_error),
            None => Ok(()),
        }
    }

    fn record(&self) -> PyResult<()> {
        match self.path {
            Some(path) => Ledger::record(path, self.budget, &self.charges).map_err(ledger_error),
            None => Ok(()),
        }
    }
}

fn ledger_error(e: ledger::LedgerError) -> PyErr {
    match e {
        ledger::LedgerError::Exceeded { .. } => BudgetExceeded::new_err(e.to_string()),
        other => PrivlogitError::new_err(other.to_string()),
    }
}

/// The name a data set needs on a ledger: given, or refused.
fn named<'a>(name: Option<&'a str>, what: &str) -> PyResult<&'a str> {
    name.ok_or_else(|| {
        PrivlogitError::new_err(format!(
            "a ledger needs the {what}'s name (`privlogit.dp.dataset_name(path)` gives the \
             command line's name for a file)"
        ))
    })
}

fn method(name: &str) -> PyResult<Method> {
    Ok(match name {
        "plr" => Method::Plr,
        "output" => Method::Output,
        "pst-s" => Method::PstS,
        "pst-f" => Method::PstF,
        "plr-fs" => Method::PlrFs,
        "pst-h" => Method::PstH,
        "pptl-fs" => Method::PptlFs,
        "simcomb" => Method::Simcomb,
        other => {
            return Err(PrivlogitError::new_err(format!(
                "method: `{other}` is not plr, output, pst-s, pst-f, plr-fs, pst-h, pptl-fs or simcomb"
            )));
        }
    })
}

fn privacy(epsilon: f64, as_printed: bool) -> PyResult<Privacy> {
    let p = if epsilon.is_infinite() && epsilon > 0.0 {
        Privacy::Off
    } else if as_printed {
        Privacy::EpsilonAsPrinted(epsilon)
    } else {
        Privacy::Epsilon(epsilon)
    };
    p.epsilon().map_err(error)?;
    Ok(p)
}

/// Fits `method` (as `privlogit dp fit --method`) on `(x, y)`, and on `source` for a
/// transfer method. With `ledger`, the data sets named `dataset` (and `source_dataset`) are
/// refused past the ledger's total before any noise is drawn, and charged after the fit.
#[pyfunction]
#[pyo3(signature = (method_name, x, y, epsilon, source = None, source_epsilon = None, lam = None, source_lam = None, high_lambda = None, eta = None, k = None, feature_scores = None, group_importance = None, combiner = "stacking", low_fraction = None, row_bound = None, plr_as_printed = false, seed = None, ledger = None, budget = None, dataset = None, source_dataset = None))]
#[allow(clippy::too_many_arguments)]
pub fn dp_fit(
    py: Python<'_>,
    method_name: &str,
    x: PyBuffer<f64>,
    y: PyBuffer<f64>,
    epsilon: f64,
    source: Option<(PyBuffer<f64>, PyBuffer<f64>)>,
    source_epsilon: Option<f64>,
    lam: Option<f64>,
    source_lam: Option<f64>,
    high_lambda: Option<f64>,
    eta: Option<f64>,
    k: Option<usize>,
    feature_scores: Option<Vec<f64>>,
    group_importance: Option<Vec<f64>>,
    combiner: &str,
    low_fraction: Option<f64>,
    row_bound: Option<f64>,
    plr_as_printed: bool,
    seed: Option<u64>,
    ledger: Option<PathBuf>,
    budget: Option<f64>,
    dataset: Option<&str>,
    source_dataset: Option<&str>,
) -> PyResult<PyDpModel> {
    // Unset options take the command line's defaults (one definition, in `dp::release`).
    let lam = lam.unwrap_or(release::DEFAULT_LAMBDA);
    let high_lambda = high_lambda.unwrap_or(release::DEFAULT_HIGH_LAMBDA);
    let method = method(method_name)?;
    let target_privacy = privacy(epsilon, plr_as_printed)?;
    let source_privacy = privacy(source_epsilon.unwrap_or(epsilon), plr_as_printed)?;
    let scaling = match row_bound {
        Some(bound) => RowScaling::Clip {
            bound: privlogit::dp::DpError::check_positive("row_bound", bound).map_err(error)?,
        },
        None => RowScaling::Normalize,
    };
    let split = match (feature_scores, group_importance) {
        (Some(_), Some(_)) => {
            return Err(PrivlogitError::new_err(
                "feature_scores and group_importance: give one of them",
            ));
        }
        (Some(scores), None) => SplitChoice::Scores(scores),
        (None, Some(importance)) => SplitChoice::GroupImportance(importance),
        (None, None) => SplitChoice::Random,
    };
    let combiner = match combiner {
        "stacking" => Combiner::Stacking {
            lambda: high_lambda,
        },
        "majority-vote" => Combiner::MajorityVote,
        "weighted-vote" => Combiner::WeightedVote,
        other => {
            return Err(PrivlogitError::new_err(format!(
                "combiner: `{other}` is not stacking, majority-vote or weighted-vote"
            )));
        }
    };
    let settings = MethodSettings {
        privacy: target_privacy,
        source_privacy,
        lambda: lam,
        source_lambda: source_lam.unwrap_or(lam),
        high_lambda,
        eta: eta.unwrap_or(release::DEFAULT_ETA),
        k: k.unwrap_or(release::DEFAULT_K),
        split,
        combiner,
        low_fraction: low_fraction.unwrap_or(release::DEFAULT_LOW_FRACTION),
        scaling,
    };
    let mut spending = Spending {
        path: ledger.as_deref(),
        budget,
        charges: Vec::new(),
    };
    if ledger.is_some() {
        spending
            .charges
            .push(charge(named(dataset, "data set")?, epsilon));
        if source.is_some() {
            spending.charges.push(charge(
                named(source_dataset, "source data set")?,
                source_privacy.spent(),
            ));
        }
    }
    let (x, y) = (matrix(&x, "X")?, vector(&y, "y")?);
    let source = match &source {
        Some((sx, sy)) => Some((matrix(sx, "source X")?, vector(sy, "source y")?)),
        None => None,
    };
    spending.check()?;
    let fitted = py
        .allow_threads(|| {
            let mut rng = seed.map_or(Randomness::Os, Randomness::Seeded).rng();
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
    spending.record()?;
    Ok(PyDpModel {
        fitted,
        method: method.name(),
    })
}

/// DPHTL (dissertation Algorithm 4) as `privlogit dp fit --method dphtl` runs it: `sources`
/// a list of `(X, y)` (first half of each one's rows trains its hypothesis, second half its
/// importance weights), `public` the public rows, `(x, y)` the target's labelled rows,
/// `unlabelled` its unlabelled rows (default: `x`). Returns a dict of what the command writes.
#[pyfunction]
#[pyo3(signature = (sources, public, x, y, epsilon, unlabelled = None, lam = None, lambda_iw = 0.001, sd_floor = 0.1, seed = None, ledger = None, budget = None, source_datasets = None))]
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
    lambda_iw: f64,
    sd_floor: f64,
    seed: Option<u64>,
    ledger: Option<PathBuf>,
    budget: Option<f64>,
    source_datasets: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyDict>> {
    let epsilon = privacy(epsilon, false)?.epsilon().map_err(error)?;
    let settings = DphtlSettings {
        epsilon,
        lambda_iw,
        lambda_lr: lam.unwrap_or(release::DEFAULT_LAMBDA),
        sd_floor,
    };
    let mut spending = Spending {
        path: ledger.as_deref(),
        budget,
        charges: Vec::new(),
    };
    if ledger.is_some() {
        let names = source_datasets.as_deref().unwrap_or_default();
        if names.len() != sources.len() {
            return Err(PrivlogitError::new_err(format!(
                "a ledger needs one name per source: {} names for {} sources",
                names.len(),
                sources.len()
            )));
        }
        // Each source spends epsilon once (Theorem 4.3.1: disjoint rows).
        spending.charges = names
            .iter()
            .map(|n| charge(n, epsilon.unwrap_or(f64::INFINITY)))
            .collect();
    }
    let tables = sources
        .iter()
        .enumerate()
        .map(|(k, (sx, sy))| {
            Ok((
                format!("source {k}"),
                matrix(sx, &format!("source {k}: X"))?,
                vector(sy, &format!("source {k}: y"))?,
            ))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let public = matrix(&public, "public")?;
    let (x, y) = (matrix(&x, "X")?, vector(&y, "y")?);
    let unlabelled = match &unlabelled {
        Some(u) => Some(matrix(u, "unlabelled")?),
        None => None,
    };
    spending.check()?;
    let fitted = py
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
    spending.record()?;
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

/// The command line's ledger name for a data file (`sha256:` and its bytes' hash).
#[pyfunction]
pub fn dataset_name(path: PathBuf) -> PyResult<String> {
    ledger::dataset_name(&path)
        .map_err(|e| PrivlogitError::new_err(format!("cannot read {}: {e}", path.display())))
}

/// `(total, spent)` of the ledger at `path` for `dataset` (epsilon, exact to 1e-6).
#[pyfunction]
pub fn ledger_spent(path: PathBuf, dataset: &str) -> PyResult<(f64, f64)> {
    let ledger = Ledger::load(&path, None).map_err(ledger_error)?;
    let micro = |e: ledger::Epsilon| e.micros() as f64 / 1e6;
    Ok((micro(ledger.total()), micro(ledger.spent(dataset))))
}
