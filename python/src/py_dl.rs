//! `privlogit.dp.dpstgd` and `privlogit.dp.sparse_gaussian`'s Rust side: DPSTGD (dissertation
//! chapter 3, Algorithms 1-2) and the sparse Gaussian mechanism with every participant in this
//! process, as `privlogit dl train` runs them (the same seed, the same parameters), and the
//! trained network's probabilities.

use privlogit::dl::budget::{self, Accounting, Spend};
use privlogit::dl::network::Network;
use privlogit::dl::participant::Settings;
use privlogit::dl::server::{self, Rows, Schedule};
use privlogit::dp::accounting::EpsDelta;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::buffers::{matrix, vector};
use crate::errors::{PrivlogitError, error};

/// A trained network: its layer sizes and parameters, what the run spent, and each
/// participant's traffic.
#[pyclass(name = "DeepModel", frozen, module = "privlogit._native")]
pub struct PyDeepModel {
    network: Network,
    params: Vec<f64>,
    spend: Option<Spent>,
    traffic: Vec<(u64, u64)>,
}

/// What a run spent, by its mechanism.
enum Spent {
    Dpstgd(Spend),
    Sparse {
        total: EpsDelta,
        noise_multiplier: f64,
    },
}

#[pymethods]
impl PyDeepModel {
    /// The layer sizes, inputs first.
    #[getter]
    fn sizes(&self) -> Vec<usize> {
        self.network.sizes().to_vec()
    }

    /// Every weight and bias, in the order `privlogit dl` writes them.
    #[getter]
    fn parameters(&self) -> Vec<f64> {
        self.params.clone()
    }

    /// Bytes each participant received and sent over the run.
    #[getter]
    fn traffic(&self) -> Vec<(u64, u64)> {
        self.traffic.clone()
    }

    /// What the run spends: DPSTGD per iteration and in total, by the sound bound and by
    /// Theorem 3.3.2; the sparse Gaussian mechanism its total and noise multiplier; None for a
    /// run without noise.
    #[getter]
    fn spend<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let out = PyDict::new(py);
        let s = match &self.spend {
            None => return Ok(None),
            Some(Spent::Sparse {
                total,
                noise_multiplier,
            }) => {
                out.set_item("mechanism", "sparse-gaussian")?;
                out.set_item("total_sound", (total.epsilon, total.delta))?;
                out.set_item("noise_multiplier", *noise_multiplier)?;
                return Ok(Some(out));
            }
            Some(Spent::Dpstgd(s)) => s,
        };
        out.set_item("mechanism", "dpstgd")?;
        out.set_item("iteration_sound", s.iteration_sound)?;
        out.set_item("iteration_dissertation", s.iteration_dissertation)?;
        out.set_item("total_sound", (s.total_sound.epsilon, s.total_sound.delta))?;
        out.set_item(
            "total_dissertation",
            (s.total_dissertation.epsilon, s.total_dissertation.delta),
        )?;
        Ok(Some(out))
    }

    /// P(y = 1) for each row of `x`.
    fn predict_proba(&self, py: Python<'_>, x: PyBuffer<f64>) -> PyResult<Vec<f64>> {
        let x = matrix(&x, "X")?;
        if x.ncols() != self.network.inputs() {
            return Err(PrivlogitError::new_err(format!(
                "X: {} features, the network takes {}",
                x.ncols(),
                self.network.inputs()
            )));
        }
        Ok(py.allow_threads(|| {
            let mut work = self.network.workspace();
            x.outer_iter()
                .map(|row| {
                    let row = row.to_vec();
                    self.network
                        .positive_probability(&self.params, &row, &mut work)
                })
                .collect()
        }))
    }
}

/// Trains DPSTGD over `parties` (a list of `(X, y)`, one per participant) as `privlogit dl
/// train` does. `epsilon=None` needs `non_private=True` (the non-private baseline). With
/// `budget`, a run that would spend more (by `accounting`, "sound" or "dissertation") is
/// refused before anything is trained; the dissertation's figure, not a privacy bound, decides
/// only with `accept_unsound_accounting=True`.
#[pyfunction]
#[pyo3(signature = (parties, epsilon = None, non_private = false, q = privlogit::dl::DEFAULTS.q, upload_ratio = privlogit::dl::DEFAULTS.upload_ratio, iterations = privlogit::dl::DEFAULTS.iterations, bound = privlogit::dl::DEFAULTS.bound, learning_rate = privlogit::dl::DEFAULTS.learning_rate, exact_upload = false, hidden = privlogit::dl::DEFAULTS.hidden.to_vec(), seed = None, init = None, delta = privlogit::dl::DEFAULTS.delta, budget = None, accounting = privlogit::dl::DEFAULTS.accounting, accept_unsound_accounting = false))]
#[allow(clippy::too_many_arguments)]
pub fn dpstgd(
    py: Python<'_>,
    parties: Vec<(PyBuffer<f64>, PyBuffer<f64>)>,
    epsilon: Option<f64>,
    non_private: bool,
    q: f64,
    upload_ratio: f64,
    iterations: u64,
    bound: f64,
    learning_rate: f64,
    exact_upload: bool,
    hidden: Vec<usize>,
    seed: Option<u64>,
    init: Option<Vec<f64>>,
    delta: f64,
    budget: Option<f64>,
    accounting: &str,
    accept_unsound_accounting: bool,
) -> PyResult<PyDeepModel> {
    either_budget(epsilon, non_private)?;
    let accounting = match accounting {
        "sound" => Accounting::Sound,
        "dissertation" => Accounting::Dissertation,
        other => {
            return Err(PrivlogitError::new_err(format!(
                "accounting: `{other}` is not sound or dissertation"
            )));
        }
    };
    let settings = Settings {
        epsilon,
        q,
        upload_ratio,
        bound,
        ternary: !exact_upload,
        sparse: None,
    };
    settings.validate().map_err(error)?;
    let rows = rows_of(&parties)?;
    let inputs = rows[0].x.ncols();
    let network = Network::new(inputs, &hidden).map_err(error)?;
    let dim = network.parameter_count();
    let spend = match budget {
        Some(b) => Some(
            budget::check(
                &settings,
                dim,
                iterations,
                delta,
                accounting,
                accept_unsound_accounting,
                b,
            )
            .map_err(error)?,
        ),
        None => budget::spend(&settings, dim, iterations, delta).map_err(error)?,
    };
    let schedule = Schedule {
        iterations,
        learning_rate,
        settings,
    };
    let (params, traffic) = train(py, &network, &rows, schedule, seed, init)?;
    Ok(PyDeepModel {
        network,
        params,
        spend: spend.map(Spent::Dpstgd),
        traffic,
    })
}

/// Trains with the sparse Gaussian mechanism over `parties` (a list of `(X, y)`) as `privlogit
/// dl train --mechanism sparse-gaussian` does: the noise set from each participant's budget
/// `(epsilon, delta)` by the library's accountant. `epsilon=None` needs `non_private=True`.
/// With `budget`, a run whose epsilon would pass it is refused.
#[pyfunction]
#[pyo3(signature = (parties, epsilon = None, non_private = false, delta = privlogit::dl::SPARSE_DEFAULTS.delta, q = privlogit::dl::SPARSE_DEFAULTS.q, upload_ratio = privlogit::dl::DEFAULTS.upload_ratio, iterations = None, bound = privlogit::dl::SPARSE_DEFAULTS.bound, learning_rate = privlogit::dl::SPARSE_DEFAULTS.learning_rate, hidden = privlogit::dl::DEFAULTS.hidden.to_vec(), seed = None, init = None, budget = None))]
#[allow(clippy::too_many_arguments)]
pub fn sparse_gaussian(
    py: Python<'_>,
    parties: Vec<(PyBuffer<f64>, PyBuffer<f64>)>,
    epsilon: Option<f64>,
    non_private: bool,
    delta: f64,
    q: f64,
    upload_ratio: f64,
    iterations: Option<u64>,
    bound: f64,
    learning_rate: f64,
    hidden: Vec<usize>,
    seed: Option<u64>,
    init: Option<Vec<f64>>,
    budget: Option<f64>,
) -> PyResult<PyDeepModel> {
    either_budget(epsilon, non_private)?;
    let rows = rows_of(&parties)?;
    let network = Network::new(rows[0].x.ncols(), &hidden).map_err(error)?;
    let request = privlogit::dl::participant::SparseRequest {
        budget: epsilon.map(|e| (e, delta)),
        q,
        upload_ratio,
        clip: bound,
        iterations: iterations.unwrap_or(privlogit::dl::sparse_iterations(epsilon)),
    };
    let (settings, total) = request.settings(&network, seed).map_err(error)?;
    if let Some(t) = total {
        privlogit::dl::sparse::check_budget(t, request.iterations, budget).map_err(error)?;
    }
    let schedule = Schedule {
        iterations: request.iterations,
        learning_rate,
        settings,
    };
    let (params, traffic) = train(py, &network, &rows, schedule, seed, init)?;
    let spend = total.map(|total| Spent::Sparse {
        total,
        noise_multiplier: settings
            .sparse
            .and_then(|s| s.noise_multiplier)
            .unwrap_or(f64::NAN),
    });
    Ok(PyDeepModel {
        network,
        params,
        spend,
        traffic,
    })
}

/// Refuses a run given both a budget and `non_private=True`, or neither.
fn either_budget(epsilon: Option<f64>, non_private: bool) -> PyResult<()> {
    if epsilon.is_some() == non_private {
        return Err(PrivlogitError::new_err(
            "give epsilon, or non_private=True for the non-private baseline (not both)",
        ));
    }
    Ok(())
}

/// Trains `network` with every participant in this process (the GIL released), from `init`
/// once checked against the network.
fn train(
    py: Python<'_>,
    network: &Network,
    rows: &[Rows],
    schedule: Schedule,
    seed: Option<u64>,
    init: Option<Vec<f64>>,
) -> PyResult<(Vec<f64>, Vec<server::Traffic>)> {
    if let Some(p) = &init {
        network.check_parameters(p).map_err(error)?;
    }
    py.allow_threads(|| {
        server::train_in_process(network, rows, schedule, seed, init, &mut |_, _| Ok(()))
    })
    .map_err(error)
}

/// The participants' rows, each checked, all with the first one's features.
fn rows_of(parties: &[(PyBuffer<f64>, PyBuffer<f64>)]) -> PyResult<Vec<Rows>> {
    let rows = parties
        .iter()
        .enumerate()
        .map(|(k, (x, y))| {
            Ok(Rows {
                name: format!("participant {k}"),
                x: matrix(x, &format!("participant {k}: X"))?,
                y: vector(y, &format!("participant {k}: y"))?,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let Some(first) = rows.first() else {
        return Err(PrivlogitError::new_err("no participants given"));
    };
    let inputs = first.x.ncols();
    if let Some(r) = rows.iter().find(|r| r.x.ncols() != inputs) {
        return Err(PrivlogitError::new_err(format!(
            "{}: {} features, participant 0 has {inputs}",
            r.name,
            r.x.ncols()
        )));
    }
    for r in &rows {
        if r.x.nrows() != r.y.len() {
            return Err(PrivlogitError::new_err(format!(
                "{}: {} rows of X, {} labels",
                r.name,
                r.x.nrows(),
                r.y.len()
            )));
        }
    }
    Ok(rows)
}
