//! `privlogit._native`: the Rust side of the Python package. Arrays come in through the buffer
//! protocol (numpy arrays, read in place), the work runs with the GIL released, and results
//! go back as plain Python values (the Python layer wraps them as numpy arrays). Every call
//! is one of the library's: settings, defaults and checks are its own.

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;

mod buffers;
mod errors;
mod py_accounting;
mod py_cluster;
mod py_dl;
mod py_dp;
mod py_roles;
mod py_settings;

use errors::{DataError, PrivlogitError, error};

/// `P(y = 1)` for raw rows `x` under the model `coef` named `names` (intercept first when
/// fitted), found on features standardised by `mean` and `scale` when given: the model in
/// raw units (`privlogit::model::Model`), as the command line applies it.
/// `family` turns the linear predictor into the label's mean (binomial: `P(y = 1)`).
#[pyfunction]
#[pyo3(signature = (names, coef, x, mean = None, scale = None, family = "binomial"))]
fn predict_model(
    py: Python<'_>,
    names: Vec<String>,
    coef: Vec<f64>,
    x: PyBuffer<f64>,
    mean: Option<Vec<f64>>,
    scale: Option<Vec<f64>>,
    family: &str,
) -> PyResult<Vec<f64>> {
    use privlogit::model::{Model, Standardization};
    let features: Vec<String> = names
        .iter()
        .filter(|n| n.as_str() != privlogit::model::INTERCEPT)
        .cloned()
        .collect();
    let standardization = match (mean, scale) {
        (Some(means), Some(scales)) => Some(Standardization {
            names: features,
            means,
            scales,
        }),
        (None, None) => None,
        _ => {
            return Err(PrivlogitError::new_err(
                "give both mean and scale, or neither",
            ));
        }
    };
    let family = privlogit::protocols::Family::parse(family)
        .ok_or_else(|| PrivlogitError::new_err(format!("unknown family {family:?}")))?;
    let model = Model::from_fit(&names, &coef, standardization.as_ref())
        .map_err(error)?
        .with_family(family);
    let x = buffers::features(&x, "X")?;
    py.allow_threads(|| model.predict_mean(x.view()))
        .map(|p| p.to_vec())
        .map_err(error)
}

/// The model file at `path` (any kind `privlogit predict` reads): `("result", json_text)` for a
/// fit's or a study's output, `("dp", model, features)` for a DP release.
#[pyfunction]
fn load_model(py: Python<'_>, path: std::path::PathBuf) -> PyResult<PyObject> {
    use privlogit::jobs::prediction::{ModelFile, read_model};
    // A file that cannot be read is the data's fault (`DataError`); one that is not a model,
    // the generic error it always was.
    let read = read_model(&path).map_err(|e| {
        if e.is_data() {
            DataError::new_err(errors::in_keywords(&e.to_string()))
        } else {
            error(e)
        }
    })?;
    match read {
        ModelFile::Regression { output, .. } => Ok(("result", output.to_string())
            .into_pyobject(py)?
            .into_any()
            .unbind()),
        ModelFile::Released(r) => {
            let model = py_dp::PyDpModel::new(r.fitted, r.method);
            Ok(("dp", model, r.features)
                .into_pyobject(py)?
                .into_any()
                .unbind())
        }
    }
}

/// Float64 memory handed to numpy without a copy: numpy's array views it through the buffer
/// protocol and keeps this object alive as the array's base.
#[pyclass(frozen)]
struct Floats {
    /// The allocation of a `Box<[f64]>`, owned here and freed on drop. Kept as a raw pointer
    /// (not a Rust reference) because numpy may write through it.
    start: *mut f64,
    len: usize,
}

// SAFETY: `Floats` owns its allocation outright; the memory is only reached through the buffer
// protocol, whose readers and writers are Python code (which the GIL serialises).
unsafe impl Send for Floats {}
unsafe impl Sync for Floats {}

impl Floats {
    fn new(values: Vec<f64>) -> Self {
        let len = values.len();
        let start = Box::into_raw(values.into_boxed_slice()).cast::<f64>();
        Self { start, len }
    }
}

impl Drop for Floats {
    fn drop(&mut self) {
        // SAFETY: `start` and `len` came from `Box::into_raw` of a `Box<[f64]>` in `new`.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.start, self.len)) });
    }
}

#[pymethods]
impl Floats {
    /// The values as a writable 1-D byte buffer (numpy: `frombuffer(..., dtype=float64)`).
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(pyo3::exceptions::PyBufferError::new_err("no view to fill"));
        }
        let (start, bytes) = {
            let me = slf.get();
            (me.start, me.len * std::mem::size_of::<f64>())
        };
        // SAFETY: `view` is a Py_buffer the caller owns; every field is set as the buffer
        // protocol requires for a contiguous 1-D byte buffer, and `obj` keeps `slf` alive for
        // as long as the view is held.
        unsafe {
            (*view).obj = slf.into_any().into_ptr();
            (*view).buf = start.cast();
            (*view).len = bytes as isize;
            (*view).readonly = 0;
            (*view).itemsize = 1;
            (*view).format = if flags & pyo3::ffi::PyBUF_FORMAT != 0 {
                c"B".as_ptr().cast_mut()
            } else {
                std::ptr::null_mut()
            };
            (*view).ndim = 1;
            (*view).shape = if flags & pyo3::ffi::PyBUF_ND != 0 {
                &raw mut (*view).len
            } else {
                std::ptr::null_mut()
            };
            (*view).strides = if flags & pyo3::ffi::PyBUF_STRIDES == pyo3::ffi::PyBUF_STRIDES {
                &raw mut (*view).itemsize
            } else {
                std::ptr::null_mut()
            };
            (*view).suboffsets = std::ptr::null_mut();
            (*view).internal = std::ptr::null_mut();
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut pyo3::ffi::Py_buffer) {}
}

/// A loaded table: features (row-major float64), shape, labels, names.
type Loaded = (Floats, (usize, usize), Floats, Vec<String>);

/// Reads a data file (CSV, privlogit binary table or Parquet) with privlogit's loader: returns
/// the features (rows x columns, row-major) and labels as buffers numpy views in place, the
/// shape and the feature names.
/// The inference table of a result given as its JSON text (`fit --json`, `study --json`), as
/// the command line prints it.
#[pyfunction]
fn summary(result: &str) -> PyResult<String> {
    let value: serde_json::Value =
        serde_json::from_str(result).map_err(|e| error(format!("not a result: {e}")))?;
    privlogit::inference::summary::render(&value).map_err(error)
}

#[pyfunction]
#[pyo3(signature = (path, label, family = "binomial"))]
fn load_table(
    py: Python<'_>,
    path: std::path::PathBuf,
    label: &str,
    family: &str,
) -> PyResult<Loaded> {
    let family = privlogit::protocols::Family::parse(family).ok_or_else(|| {
        error(format!(
            "family {family:?} is not one of binomial, gaussian, poisson"
        ))
    })?;
    let options = privlogit::data::LoadOptions {
        family,
        ..privlogit::data::LoadOptions::new(label)
    };
    let table = py
        .allow_threads(|| privlogit::data::load(&path, &options))
        .map_err(|e| DataError::new_err(e.to_string()))?;
    let d = table.data;
    let shape = d.x.dim();
    let x = if d.x.is_standard_layout() {
        d.x
    } else {
        d.x.as_standard_layout().into_owned()
    };
    let (values, offset) = x.into_raw_vec_and_offset();
    debug_assert!(
        offset.unwrap_or(0) == 0,
        "an owned standard-layout array starts at 0"
    );
    Ok((
        Floats::new(values),
        shape,
        Floats::new(d.y.to_vec()),
        d.names,
    ))
}

/// A Paillier key pair (the secret key inside; never printed). Numbers cross to Python as
/// python-paillier's representation: the ciphertext as a decimal string and a base-16 exponent,
/// with a public bound on the magnitude (this crate's arithmetic checks it; phe has none).
#[pyclass(name = "Keypair")]
struct PyKeypair {
    pair: privlogit::protocols::paillier::KeyPair,
    noise: privlogit::protocols::paillier::DjnNoise,
}

/// An encrypted number: `(ciphertext, exponent)` in phe's form.
type Phe = (String, i32);

impl PyKeypair {
    fn key(&self) -> &privlogit::protocols::paillier::PublicKey {
        self.pair.public_key()
    }

    /// A number from phe's form with `bound` vouched for by the caller.
    fn number(
        &self,
        c: &Phe,
        bound: f64,
    ) -> PyResult<privlogit::protocols::paillier::EncryptedNumber> {
        use privlogit::protocols::paillier::{EncryptedNumber, Fixed};
        let value: num_bigint::BigUint =
            c.0.parse()
                .map_err(|_| PrivlogitError::new_err("ciphertext: not a decimal integer"))?;
        let e = EncryptedNumber::from_phe(self.key(), &value, c.1).map_err(error)?;
        let b = Fixed::bound_for(bound, e.scale()).map_err(error)?;
        e.assume_bound(self.key(), b).map_err(error)
    }

    fn phe(&self, e: &privlogit::protocols::paillier::EncryptedNumber) -> PyResult<Phe> {
        let exponent = e.phe_exponent().ok_or_else(|| {
            PrivlogitError::new_err("a scale that is not a multiple of 4 has no phe exponent")
        })?;
        Ok((e.ciphertext().value(self.key()).to_string(), exponent))
    }
}

/// `x` exactly, at a scale rounded up to a multiple of 4 (phe's base-16 exponents).
fn phe_fixed(x: f64) -> PyResult<privlogit::protocols::paillier::Fixed> {
    let exact = privlogit::protocols::paillier::Fixed::from_f64_exact(x).map_err(error)?;
    exact.rescaled(exact.scale.div_ceil(4) * 4).map_err(error)
}

#[pymethods]
impl PyKeypair {
    /// A fresh key pair of `bits` (2048, 3072 or 4096) from the OS CSPRNG.
    #[new]
    #[pyo3(signature = (bits = 2048))]
    fn new(py: Python<'_>, bits: u32) -> PyResult<Self> {
        use privlogit::protocols::paillier::{DjnNoise, KeyPair, KeySize};
        let size = match bits {
            2048 => KeySize::Bits2048,
            3072 => KeySize::Bits3072,
            4096 => KeySize::Bits4096,
            _ => {
                return Err(PrivlogitError::new_err(format!(
                    "bits: {bits} is not 2048, 3072 or 4096"
                )));
            }
        };
        Ok(py.allow_threads(|| {
            let pair = KeyPair::generate(size, &mut rand::rng());
            let noise = DjnNoise::new(pair.public_key(), &mut rand::rng());
            PyKeypair { pair, noise }
        }))
    }

    /// The public modulus n (decimal).
    #[getter]
    fn n(&self) -> String {
        self.key().n().to_string()
    }

    /// The secret primes (p, q), decimal: whoever holds them decrypts everything (for handing
    /// the key to python-paillier).
    fn export_primes(&self) -> (String, String) {
        let bytes = self.pair.secret.export_secret();
        let mut rest = &bytes[6..];
        let mut read = || {
            let len = u32::from_be_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
            let value = num_bigint::BigUint::from_bytes_be(&rest[4..4 + len]);
            rest = &rest[4 + len..];
            value
        };
        let p = read();
        let q = read();
        (p.to_string(), q.to_string())
    }

    /// Encrypts `x` (exactly, in phe's encoding), declaring `|x| <= bound`.
    #[pyo3(signature = (x, bound = 1e12))]
    fn encrypt(&self, x: f64, bound: f64) -> PyResult<Phe> {
        use privlogit::protocols::paillier::{EncryptedNumber, Fixed};
        let f = phe_fixed(x)?;
        let b = Fixed::bound_for(bound, f.scale).map_err(error)?;
        let e = EncryptedNumber::encrypt(self.key(), &f, &b, &self.noise, &mut rand::rng())
            .map_err(error)?;
        self.phe(&e)
    }

    /// Decrypts a number in phe's form whose magnitude is at most `bound`.
    #[pyo3(signature = (number, bound = 1e12))]
    fn decrypt(&self, number: Phe, bound: f64) -> PyResult<f64> {
        self.number(&number, bound)?
            .decrypt_f64(&self.pair.secret)
            .map_err(error)
    }

    /// `a + b` under encryption (each of magnitude at most `bound`).
    #[pyo3(signature = (a, b, bound = 1e12))]
    fn add(&self, a: Phe, b: Phe, bound: f64) -> PyResult<Phe> {
        let sum = self
            .number(&a, bound)?
            .add(self.key(), &self.number(&b, bound)?)
            .map_err(error)?;
        self.phe(&sum)
    }

    /// `a * k` under encryption, `k` a plaintext float.
    #[pyo3(signature = (a, k, bound = 1e12))]
    fn mul(&self, a: Phe, k: f64, bound: f64) -> PyResult<Phe> {
        let product = self
            .number(&a, bound)?
            .mul_plain(self.key(), &phe_fixed(k)?)
            .map_err(error)?;
        self.phe(&product)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // A network shape asked for in the environment that cannot be read is refused now, as the
    // command line refuses it at its start (the library ignores it, printing nothing).
    if let Err(e) = privlogit::protocols::transport::shape::from_environment() {
        return Err(errors::SettingError::new_err(e.to_string()));
    }
    m.add_function(wrap_pyfunction!(py_settings::defaults, m)?)?;
    m.add_function(wrap_pyfunction!(py_roles::fit, m)?)?;
    m.add_function(wrap_pyfunction!(py_roles::study, m)?)?;
    m.add_function(wrap_pyfunction!(py_roles::keyholder, m)?)?;
    m.add_function(wrap_pyfunction!(py_roles::dealer, m)?)?;
    m.add_function(wrap_pyfunction!(py_roles::aggregator, m)?)?;
    m.add_function(wrap_pyfunction!(py_roles::node, m)?)?;
    m.add_function(wrap_pyfunction!(py_cluster::partition_answer, m)?)?;
    m.add_function(wrap_pyfunction!(py_cluster::row_sums, m)?)?;
    m.add_function(wrap_pyfunction!(predict_model, m)?)?;
    m.add_function(wrap_pyfunction!(load_model, m)?)?;
    m.add_class::<PyKeypair>()?;
    m.add_class::<Floats>()?;
    m.add_function(wrap_pyfunction!(load_table, m)?)?;
    m.add_function(wrap_pyfunction!(summary, m)?)?;
    m.add_function(wrap_pyfunction!(py_dp::dp_fit, m)?)?;
    m.add_function(wrap_pyfunction!(py_dp::dp_dphtl, m)?)?;
    m.add_function(wrap_pyfunction!(py_dp::ledger_spent, m)?)?;
    m.add_function(wrap_pyfunction!(py_dp::ledger_total, m)?)?;
    m.add_class::<py_dp::PyDpModel>()?;
    m.add_function(wrap_pyfunction!(py_dl::dpstgd, m)?)?;
    m.add_function(wrap_pyfunction!(py_dl::sparse_gaussian, m)?)?;
    m.add_function(wrap_pyfunction!(py_accounting::basic_composition, m)?)?;
    m.add_function(wrap_pyfunction!(py_accounting::advanced_composition, m)?)?;
    m.add_function(wrap_pyfunction!(py_accounting::amplified, m)?)?;
    m.add_function(wrap_pyfunction!(py_accounting::gaussian_rdp, m)?)?;
    m.add_function(wrap_pyfunction!(py_accounting::gaussian_zcdp, m)?)?;
    m.add_class::<py_dl::PyDeepModel>()?;
    m.add("PrivlogitError", m.py().get_type::<PrivlogitError>())?;
    m.add("DataError", m.py().get_type::<DataError>())?;
    m.add("SettingError", m.py().get_type::<errors::SettingError>())?;
    m.add("NetworkError", m.py().get_type::<errors::NetworkError>())?;
    m.add(
        "EstimationError",
        m.py().get_type::<errors::EstimationError>(),
    )?;
    m.add(
        "BudgetExceeded",
        m.py().get_type::<errors::BudgetExceeded>(),
    )?;
    Ok(())
}
