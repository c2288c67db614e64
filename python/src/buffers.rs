//! numpy arrays as Rust sees them: C-contiguous float64 buffers, checked, read in place or
//! copied.

use ndarray::{Array1, Array2, ArrayView2};
use privlogit::protocols::Family;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;

use crate::errors::{DataError, PrivlogitError};

/// A copy of a 2-D float64 buffer (for work that runs with the GIL released).
pub fn matrix(buffer: &PyBuffer<f64>, what: &str) -> PyResult<Array2<f64>> {
    let shape = shape2(buffer, what)?;
    Ok(ArrayView2::from_shape(shape, in_place(buffer))
        .expect("checked shape")
        .to_owned())
}

/// A copy of a 1-D float64 buffer.
pub fn vector(buffer: &PyBuffer<f64>, what: &str) -> PyResult<Array1<f64>> {
    len1(buffer, what)?;
    Ok(Array1::from(in_place(buffer).to_vec()))
}

/// Copies of a feature matrix and its 0/1 labels, refused with `DataError` (naming `what`, the
/// row and the column) when the lengths differ, a label is not 0 or 1 or a feature is not a
/// finite number, as a file with them would be.
pub fn labelled(
    x: &PyBuffer<f64>,
    y: &PyBuffer<f64>,
    what: &str,
) -> PyResult<(Array2<f64>, Array1<f64>)> {
    labelled_for(Family::Binomial, x, y, what, &[])
}

/// [`labelled`] for a model of `family` (its rule on labels: counts for Poisson, any finite
/// number for the Gaussian).
pub fn labelled_for(
    family: Family,
    x: &PyBuffer<f64>,
    y: &PyBuffer<f64>,
    what: &str,
    names: &[String],
) -> PyResult<(Array2<f64>, Array1<f64>)> {
    let (x, y) = (
        matrix(x, &format!("{what} X"))?,
        vector(y, &format!("{what} y"))?,
    );
    if x.nrows() != y.len() {
        return Err(DataError::new_err(format!(
            "{what}: {} labels for {} rows",
            y.len(),
            x.nrows()
        )));
    }
    // Columns named in messages when the names fit (a mismatch is reported by the caller).
    let names = if names.len() == x.ncols() { names } else { &[] };
    privlogit::data::check_values(family, what, names, x.view(), y.view())
        .map_err(|e| DataError::new_err(e.to_string()))?;
    Ok((x, y))
}

/// A copy of a feature matrix, refused with `DataError` when a value is not a finite number.
pub fn features(buffer: &PyBuffer<f64>, what: &str) -> PyResult<Array2<f64>> {
    let x = matrix(buffer, what)?;
    privlogit::data::check_values(
        Family::Binomial,
        what,
        &[],
        x.view(),
        Array1::<f64>::zeros(0).view(),
    )
    .map_err(|e| DataError::new_err(e.to_string()))?;
    Ok(x)
}

/// The rows and columns of a C-contiguous 2-D float64 buffer.
pub fn shape2(buffer: &PyBuffer<f64>, what: &str) -> PyResult<(usize, usize)> {
    match buffer.shape() {
        [rows, cols] if buffer.is_c_contiguous() => Ok((*rows, *cols)),
        [_, _] => Err(PrivlogitError::new_err(format!(
            "{what}: expected a C-contiguous array"
        ))),
        shape => Err(PrivlogitError::new_err(format!(
            "{what}: expected a 2-D array, got {} dimensions",
            shape.len()
        ))),
    }
}

/// The length of a C-contiguous 1-D float64 buffer.
pub fn len1(buffer: &PyBuffer<f64>, what: &str) -> PyResult<usize> {
    match buffer.shape() {
        [n] if buffer.is_c_contiguous() => Ok(*n),
        _ => Err(PrivlogitError::new_err(format!(
            "{what}: expected a C-contiguous 1-D array"
        ))),
    }
}

/// A checked (C-contiguous, aligned: `PyBuffer::get` checks alignment) buffer's values in
/// place, valid while the buffer is held and the GIL keeps Python code from writing to it.
pub fn in_place(buffer: &PyBuffer<f64>) -> &[f64] {
    debug_assert!(buffer.is_c_contiguous());
    // SAFETY: the buffer is C-contiguous float64 of `item_count` items and aligned (checked
    // by `PyBuffer::get`); the slice borrows `buffer`, which keeps the memory alive.
    unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<f64>(), buffer.item_count()) }
}
