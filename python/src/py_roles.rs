//! The fit, the in-process study and the three roles of a study between organizations, each a
//! call of the library's (`privlogit::fit::job`, `privlogit::study`) on the spec the Python
//! keywords and the study file make: the same plan, defaults and checks as the command line.
//! Results come back as the command line's JSON text (the Python layer parses it).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ndarray::{ArrayView1, ArrayView2};
use privlogit::data::DatasetView;
use privlogit::fit::job::FitJob;
use privlogit::protocols::Family;
use privlogit::protocols::rows::MemoryRows;
use privlogit::protocols::transport::Network;
use privlogit::settings::Reader;
use privlogit::study::{Aggregator, Dealer, InProcess, Keyholder, Node, NodeRows, StudyResult};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::buffers::{in_place, labelled_for, len1, shape2};
use crate::errors::{DataError, PrivlogitError, raise};
use crate::py_settings::spec;

/// A party's arrays: features, labels and the feature names.
type Party = (PyBuffer<f64>, PyBuffer<f64>, Vec<String>);

/// Progress lines on standard error, or none.
fn say(quiet: bool) -> impl Fn(&str) + Sync {
    move |m: &str| {
        if !quiet {
            eprintln!("{}", crate::errors::in_keywords(m));
        }
    }
}

/// Runs a role's `work` on its own thread while this one waits with the GIL released,
/// checking for signals every 50 ms: on Ctrl-C (or any signal whose handler raises) the role's
/// `network` is aborted, which tells its peers why and ends every wait of the role (a connect
/// retry, a recv), the thread is joined and the exception raised. Without it a Python Node
/// ignored Ctrl-C until the study ended, or the 10-minute connect window did.
fn interruptible<T: Send>(
    py: Python<'_>,
    network: Network,
    work: impl FnOnce() -> Result<T, privlogit::error::Error> + Send,
) -> PyResult<T> {
    std::thread::scope(|scope| {
        let worker = scope.spawn(work);
        while !worker.is_finished() {
            py.allow_threads(|| std::thread::sleep(Duration::from_millis(50)));
            if let Err(interrupt) = py.check_signals() {
                network.abort("interrupted (Ctrl-C in its Python process)");
                let _ = py.allow_threads(|| worker.join());
                return Err(interrupt);
            }
        }
        match py.allow_threads(|| worker.join()) {
            Ok(result) => result.map_err(raise),
            Err(_) => Err(PrivlogitError::new_err("the role's thread panicked")),
        }
    })
}

/// Plaintext distributed fit over `parties` (one `(X, y, names)` per party) with the settings
/// `given` (the keywords of `privlogit.fit`). Returns `fit --json`'s text.
#[pyfunction]
pub fn fit(py: Python<'_>, parties: Vec<Party>, given: &Bound<'_, PyDict>) -> PyResult<String> {
    let (spec, _) = spec(Reader::Fit, None, given)?;
    let sources: Vec<String> = (1..=parties.len()).map(|k| format!("party {k}")).collect();
    let mut views = Vec::with_capacity(parties.len());
    for ((x, y, names), source) in parties.iter().zip(&sources) {
        let (rows, cols) = shape2(x, &format!("{source}: X"))?;
        let labels = len1(y, &format!("{source}: y"))?;
        refuse_empty(rows, source)?;
        if labels != rows {
            return Err(PrivlogitError::new_err(format!(
                "{source}: {labels} labels for {rows} rows"
            )));
        }
        if names.len() != cols {
            return Err(PrivlogitError::new_err(format!(
                "{source}: {} names for {cols} columns",
                names.len()
            )));
        }
        views.push(DatasetView {
            source,
            names,
            x: ArrayView2::from_shape((rows, cols), in_place(x)).expect("checked shape"),
            y: ArrayView1::from(in_place(y)),
        });
    }
    // Prepared (copied) with the GIL held, so Python code cannot change the arrays meanwhile.
    let job = FitJob::from_views(&spec, &views).map_err(raise)?;
    let result = py.allow_threads(|| job.run(&mut |_| {})).map_err(raise)?;
    Ok(result.render(true))
}

/// A party without rows is refused, as an empty data file is: it would take part in every
/// round and contribute nothing, so the study would silently be over fewer rows than meant.
fn refuse_empty(rows: usize, source: &str) -> PyResult<()> {
    if rows == 0 {
        return Err(DataError::new_err(format!(
            "{source} has no rows (an empty party is refused, as an empty data file is)"
        )));
    }
    Ok(())
}

/// Each party's rows as a Node's: a cluster DataFrame's front end (`privlogit.cluster`), or
/// `(X, y, names)` arrays checked (labels, finite values) as a file's would be.
fn node_rows(parties: &[Bound<'_, PyAny>], family: Family) -> PyResult<Vec<NodeRows>> {
    parties
        .iter()
        .enumerate()
        .map(|(k, party)| {
            let source = format!("party {}", k + 1);
            if crate::py_cluster::is_cluster(party) {
                let rows = crate::py_cluster::cluster_rows(party)?;
                refuse_empty(rows.rows(), &source)?;
                return Ok(NodeRows::Rows {
                    source: rows.describe(),
                    rows,
                });
            }
            let (x, y, names): Party = party.extract()?;
            let (x, y) = labelled_for(family, &x, &y, &source, &names)?;
            refuse_empty(x.nrows(), &source)?;
            if names.len() != x.ncols() {
                return Err(PrivlogitError::new_err(format!(
                    "{source}: {} names for {} columns",
                    names.len(),
                    x.ncols()
                )));
            }
            let rows = MemoryRows::new(x, y).with_names(names);
            Ok(NodeRows::Rows {
                source,
                rows: Arc::new(rows),
            })
        })
        .collect()
}

/// The secure study in this process over `parties` (one `(X, y, names)` per Node, or none:
/// the settings' `party` files), with the settings `given` (`privlogit.study`'s keywords) over
/// the study file's. Returns `study --json`'s text.
#[pyfunction]
#[pyo3(signature = (parties, given, study = None))]
pub fn study(
    py: Python<'_>,
    parties: Option<Vec<Bound<'_, PyAny>>>,
    given: &Bound<'_, PyDict>,
    study: Option<PathBuf>,
) -> PyResult<String> {
    let (spec, _) = spec(Reader::Study, study, given)?;
    if spec.vertical {
        if parties.is_some() {
            return Err(raise(privlogit::error::Error::refused(
                "a vertical study reads each party's file (its --id column matches the rows): \
                 give the parties as file paths",
            )));
        }
        let quiet = spec.quiet;
        let say = say(quiet);
        let result = py
            .allow_threads(|| privlogit::vertical_study::run_study(&spec, (!quiet).then_some(&say)))
            .map_err(raise)?;
        return json(&result);
    }
    let nodes = parties
        .as_deref()
        .map(|p| node_rows(p, spec.family))
        .transpose()?;
    let study = InProcess::new(&spec, nodes).map_err(raise)?;
    let quiet = spec.quiet;
    let result = py
        .allow_threads(|| study.run((!quiet).then_some(&say(false))))
        .map_err(raise)?;
    json(&result)
}

fn json(result: &StudyResult) -> PyResult<String> {
    let v = result.json().map_err(raise)?;
    Ok(serde_json::to_string(&v).unwrap_or_default())
}

/// The key holder of the study in the study file `study`, with the settings `given`; serves
/// until the study ends. Returns its counters.
#[pyfunction]
#[pyo3(signature = (study, given))]
pub fn keyholder<'py>(
    py: Python<'py>,
    study: PathBuf,
    given: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let (spec, file) = spec(Reader::KeyHolder, Some(study), given)?;
    let say = say(false);
    let role = Keyholder::new(&spec, file.as_ref(), &say).map_err(raise)?;
    let network = role.network();
    let stats = interruptible(py, network, || role.run(&say))?;
    let out = PyDict::new(py);
    out.set_item("and_gates", stats.and_gates)?;
    out.set_item("garbling_seconds", stats.gc_seconds)?;
    out.set_item("paillier_seconds", stats.paillier_seconds)?;
    out.set_item("bytes_sent", stats.bytes_sent)?;
    Ok(out)
}

/// The dealer of masked products of the study in the study file `study` (its `[dealer]`
/// table), with the settings `given`: waits for the aggregator and deals until the study ends.
#[pyfunction]
#[pyo3(signature = (study, given))]
pub fn dealer(py: Python<'_>, study: PathBuf, given: &Bound<'_, PyDict>) -> PyResult<()> {
    let (spec, file) = spec(Reader::Dealer, Some(study), given)?;
    let say = say(false);
    let role = Dealer::new(&spec, file.as_ref(), &say).map_err(raise)?;
    let network = role.network();
    interruptible(py, network, || role.run(&say))
}

/// The aggregator of the study in the study file `study`, with the settings `given`: waits for
/// the Nodes, drives the study, writes the result to `out` when given. Returns `aggregator
/// --json`'s text.
#[pyfunction]
#[pyo3(signature = (study, given))]
pub fn aggregator(py: Python<'_>, study: PathBuf, given: &Bound<'_, PyDict>) -> PyResult<String> {
    let (spec, file) = spec(Reader::Aggregator, Some(study), given)?;
    let say = say(false);
    let role = Aggregator::new(&spec, file.as_ref(), &say).map_err(raise)?;
    let out = spec.out.clone();
    let network = role.network();
    let result = interruptible(py, network, || {
        role.run(&say, &mut |r: &StudyResult| match &out {
            Some(path) => {
                let text = r.render(true)?.release;
                privlogit::output::write_text(path, &text)
                    .map_err(|e| privlogit::error::Error::write(path, e))
            }
            None => Ok(()),
        })
    })?;
    json(&result)
}

/// A Node of the study in the study file `study` with the settings `given`, over `data`: its
/// `(X, y, names)` arrays, a cluster DataFrame's front end (`privlogit.cluster`), or None for
/// the settings' `party` file. Serves until the study ends;
/// returns its counters.
#[pyfunction]
#[pyo3(signature = (study, given, data = None))]
pub fn node<'py>(
    py: Python<'py>,
    study: PathBuf,
    given: &Bound<'py, PyDict>,
    data: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (spec, file) = spec(Reader::Node, Some(study), given)?;
    if spec.vertical {
        if data.is_some() {
            return Err(raise(privlogit::error::Error::refused(
                "a vertical Node reads its file (its id column matches the rows): give data as \
                 a file path",
            )));
        }
        let say = say(false);
        let role =
            privlogit::vertical_study::column_node::VerticalNode::new(&spec, file.as_ref(), &say)
                .map_err(raise)?;
        let network = role.network();
        let outcome = interruptible(py, network, || role.run(&say))?;
        let out = PyDict::new(py);
        out.set_item("rows", outcome.rows)?;
        out.set_item("names", outcome.names)?;
        out.set_item("coefficients", outcome.beta)?;
        out.set_item("status", outcome.status)?;
        out.set_item("bytes_sent", outcome.bytes_sent)?;
        return Ok(out);
    }
    let rows = match data {
        Some(party) => Some(node_rows(std::slice::from_ref(&party), spec.family)?.remove(0)),
        None => None,
    };
    let say = say(false);
    let role = Node::new(&spec, file.as_ref(), rows, &say).map_err(raise)?;
    let network = role.network();
    let stats = interruptible(py, network, || role.run(&say))?;
    let out = PyDict::new(py);
    out.set_item("local_seconds", stats.local_seconds)?;
    out.set_item("paillier_seconds", stats.paillier_seconds)?;
    out.set_item("bytes_sent", stats.bytes_sent)?;
    Ok(out)
}
