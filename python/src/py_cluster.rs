//! A Node whose rows live in a Spark or Dask cluster: the Python front end
//! (`privlogit.cluster`) runs each request on the DataFrame's partitions, where
//! [`partition_answer`] computes the sums with the library's kernels; this process keeps the
//! protocol and combines the answers ([`privlogit::protocols::rows::partitioned`]).

use std::sync::Arc;

use privlogit::protocols::objective::row_kernel;
use privlogit::protocols::rows::RowSource;
use privlogit::protocols::rows::RowsError;
use privlogit::protocols::rows::partitioned::{ClusterRows, PartitionEngine};
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::buffers::{in_place, len1, vector};
use crate::errors::DataError;
use ndarray::Array2;

/// A partition's answer to `request` (run on a Spark executor or a Dask worker): its raw
/// feature `columns` (one float64 array each, named `names`, as the DataFrame holds them) and
/// labels `y`, its first row being row `offset` of the DataFrame, `source` naming the partition
/// in errors. The columns are interleaved into rows once, here; the GIL is released while it
/// sums.
#[pyfunction]
pub fn partition_answer<'py>(
    py: Python<'py>,
    request: &[u8],
    offset: u64,
    columns: Vec<PyBuffer<f64>>,
    y: PyBuffer<f64>,
    names: Vec<String>,
    source: String,
) -> PyResult<Bound<'py, PyBytes>> {
    let y = vector(&y, &source)?;
    let n = y.len();
    let mut x = Array2::<f64>::zeros((n, columns.len()));
    for (j, column) in columns.iter().enumerate() {
        if len1(column, &source)? != n {
            return Err(DataError::new_err(format!(
                "{source}: column {j} has {} values for {n} labels",
                column.item_count()
            )));
        }
        for (cell, value) in x.column_mut(j).iter_mut().zip(in_place(column)) {
            *cell = *value;
        }
    }
    let request = request.to_vec();
    let answer = py
        .allow_threads(|| row_kernel::answer(&request, offset, x, y, names, &source))
        .map_err(|e| DataError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &answer))
}

/// The Python object that runs requests on a DataFrame's partitions: `run(bytes) -> list of
/// bytes` (one answer per partition, in partition order), with `rows`, `names` and `describe`
/// read once.
#[derive(Debug)]
struct PythonEngine {
    engine: Py<PyAny>,
    rows: usize,
    names: Vec<String>,
    describe: String,
}

impl PartitionEngine for PythonEngine {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn rows(&self) -> usize {
        self.rows
    }

    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn run(&self, request: &[u8]) -> Result<Vec<Vec<u8>>, RowsError> {
        Python::with_gil(|py| {
            let answers = self
                .engine
                .call_method1(py, "run", (PyBytes::new(py, request),))
                .and_then(|a| a.extract::<Vec<Vec<u8>>>(py));
            answers.map_err(|e| RowsError::new(self.describe.clone(), e.value(py).to_string()))
        })
    }
}

/// Whether `data` is a cluster DataFrame's front end (`privlogit.cluster`'s partitions).
pub fn is_cluster(data: &Bound<'_, PyAny>) -> bool {
    data.hasattr("_privlogit_partitions").unwrap_or(false)
}

/// A cluster front end's rows as a Node's source.
pub fn cluster_rows(data: &Bound<'_, PyAny>) -> PyResult<Arc<dyn RowSource>> {
    let engine = PythonEngine {
        engine: data.clone().unbind(),
        rows: data.getattr("rows")?.extract()?,
        names: data.getattr("names")?.extract()?,
        describe: data.getattr("describe")?.extract()?,
    };
    Ok(Arc::new(ClusterRows::new(Arc::new(engine))))
}

/// One kind of per-row sum over a Node's raw rows (no intercept, no standardisation): a cluster
/// DataFrame's front end or a data file with its `label` column. `kind` is "gradient" and
/// "information" (at `beta`, one coefficient per feature), "bound", "moments" or "classes".
/// What a benchmark times as one round of a Node, and what a test compares across partitions.
#[pyfunction]
#[pyo3(signature = (data, kind, beta = None, label = None))]
pub fn row_sums(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    kind: &str,
    beta: Option<Vec<f64>>,
    label: Option<String>,
) -> PyResult<Vec<f64>> {
    use privlogit::protocols::objective::{Glm, RowJob, RowKernel};
    let rows: Arc<dyn RowSource> = if is_cluster(data) {
        cluster_rows(data)?
    } else {
        let path: std::path::PathBuf = data.extract()?;
        let label = label.ok_or_else(|| {
            crate::errors::SettingError::new_err(
                "a data file's sums need label= (its label column)",
            )
        })?;
        let options = privlogit::data::LoadOptions::new(label);
        privlogit::data::stream::open(&path, &options)
            .map_err(|e| DataError::new_err(e.to_string()))?
    };
    let p = rows.columns();
    let coefficients = || match &beta {
        Some(b) if b.len() == p => Ok(b.clone()),
        _ => Err(crate::errors::SettingError::new_err(format!(
            "{kind} needs beta= with one coefficient per feature ({p})"
        ))),
    };
    let kernel = match kind {
        "gradient" => RowKernel::Gradient(coefficients()?),
        "information" => RowKernel::Information(coefficients()?),
        "bound" => RowKernel::Bound,
        "moments" => RowKernel::Moments(None),
        "classes" => RowKernel::Classes,
        other => {
            return Err(crate::errors::SettingError::new_err(format!(
                "unknown kind {other:?}: gradient, information, bound, moments or classes"
            )));
        }
    };
    let job = RowJob::new(Glm::logistic(), kernel);
    let sums = py
        .allow_threads(|| job.fold(rows.as_ref()))
        .map_err(|e| DataError::new_err(e.to_string()))?;
    Ok(sums.values())
}
