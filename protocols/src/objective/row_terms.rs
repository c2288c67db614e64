//! Per-row arithmetic shared by every family and kernel: the fixed-order dot product, the
//! overflow-free logistic and softplus, and one row's logistic log-likelihood term.

/// Dot product of one row with the coefficients in a fixed order: eight interleaved partial
/// sums (so the compiler can vectorise it) added pairwise, then the tail.
#[inline]
pub fn dot(row: &[f64], beta: &[f64]) -> f64 {
    const LANES: usize = 8;
    let mut lanes = [0.0; LANES];
    let split = row.len() - row.len() % LANES;
    for (r, b) in row[..split]
        .chunks_exact(LANES)
        .zip(beta[..split].chunks_exact(LANES))
    {
        for k in 0..LANES {
            lanes[k] += r[k] * b[k];
        }
    }
    let mut total = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5]))
        + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (r, b) in row[split..].iter().zip(&beta[split..]) {
        total += r * b;
    }
    total
}

/// One row's log-likelihood `y z - log(1 + e^z)` at linear predictor `z` (eq. 2.9).
#[inline]
pub fn log_likelihood_term(z: f64, y: f64) -> f64 {
    y * z - softplus(z)
}

/// The logistic function `1 / (1 + e^{-z})`, evaluated without overflow for any finite `z`.
pub fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// `log(1 + e^z)`, stable for large `|z|`: `max(z, 0) + ln_1p(exp(-|z|))` never overflows.
pub fn softplus(z: f64) -> f64 {
    z.max(0.0) + (-z.abs()).exp().ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stable_scalar_functions() {
        assert_eq!(sigmoid(0.0), 0.5);
        assert!((sigmoid(800.0) - 1.0).abs() < 1e-300);
        assert!(sigmoid(-800.0) >= 0.0);
        assert!((softplus(0.0) - 2f64.ln()).abs() < 1e-15);
        assert_eq!(softplus(800.0), 800.0);
        assert!(softplus(-800.0) >= 0.0);
    }
}
