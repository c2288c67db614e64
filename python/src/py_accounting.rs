//! `privlogit.dp.accounting`'s Rust side: the accountant of `privlogit dp account`
//! (composition, amplification by sampling, RDP and zCDP of Gaussian mechanisms).

use privlogit::dp::accounting::{EpsDelta, Rdp, Zcdp, default_orders};
use pyo3::prelude::*;

use crate::errors::error;

/// `(epsilon, delta)` of `k` runs of an `(epsilon, delta)` mechanism by basic composition.
#[pyfunction]
pub fn basic_composition(epsilon: f64, delta: f64, k: u64) -> PyResult<(f64, f64)> {
    let r = EpsDelta::new(epsilon, delta).map_err(error)?.basic(k);
    Ok((r.epsilon, r.delta))
}

/// `(epsilon, delta)` of `k` runs by advanced composition with slack `delta'`.
#[pyfunction]
pub fn advanced_composition(epsilon: f64, delta: f64, k: u64, slack: f64) -> PyResult<(f64, f64)> {
    let r = EpsDelta::new(epsilon, delta)
        .and_then(|e| e.advanced(k, slack))
        .map_err(error)?;
    Ok((r.epsilon, r.delta))
}

/// `(epsilon, delta)` of the mechanism run on a Poisson sample of ratio `q`.
#[pyfunction]
pub fn amplified(epsilon: f64, delta: f64, q: f64) -> PyResult<(f64, f64)> {
    let r = EpsDelta::new(epsilon, delta)
        .and_then(|e| e.amplified(q))
        .map_err(error)?;
    Ok((r.epsilon, r.delta))
}

/// `(epsilon, order)`: `steps` Poisson-subsampled (ratio `q`) Gaussian mechanisms of noise
/// multiplier `sigma`, composed in RDP at `orders` (default: 2..=64 and powers of two to
/// 1024) and converted at `delta`.
#[pyfunction]
#[pyo3(signature = (sigma, q, steps, delta, orders = None))]
pub fn gaussian_rdp(
    sigma: f64,
    q: f64,
    steps: u64,
    delta: f64,
    orders: Option<Vec<u32>>,
) -> PyResult<(f64, u32)> {
    let orders = orders.unwrap_or_else(default_orders);
    Rdp::subsampled_gaussian(q, sigma, &orders)
        .map(|r| r.repeated(steps))
        .and_then(|r| r.epsilon(delta))
        .map_err(error)
}

/// epsilon at `delta` of `steps` Gaussian mechanisms of noise multiplier `sigma` by zCDP.
#[pyfunction]
pub fn gaussian_zcdp(sigma: f64, steps: u64, delta: f64) -> PyResult<f64> {
    Zcdp::gaussian(sigma)
        .map(|z| z.repeated(steps))
        .and_then(|z| z.epsilon(delta))
        .map_err(error)
}
