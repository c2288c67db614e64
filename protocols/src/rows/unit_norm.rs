//! Rows brought to norm at most a target using only themselves (objective perturbation's row
//! rule: stacking paper Algorithm 1 step 7). Shared by `dp fit` and by a Node of a secure PLR
//! study, so that both scale a row to the same bits.

/// The Euclidean norm without overflow or underflow (largest magnitude factored out, as
/// LAPACK's `dnrm2` does).
pub fn norm_of(row: &[f64]) -> f64 {
    let largest = row.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return largest;
    }
    largest
        * row
            .iter()
            .map(|v| (v / largest).powi(2))
            .sum::<f64>()
            .sqrt()
}

/// Scales `row` in place onto the sphere of radius `target` (a zero row stays zero); false for
/// a non-finite entry. The row is scaled as `(v / largest) * (target / unit)` with `norm =
/// largest * unit`, so no factor `target / norm` that a subnormal norm would make infinite.
pub fn scale_onto(row: &mut [f64], target: f64) -> bool {
    if row.iter().any(|v| !v.is_finite()) {
        return false;
    }
    let largest = row.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    if largest == 0.0 {
        return true;
    }
    let unit = row
        .iter()
        .map(|v| (v / largest).powi(2))
        .sum::<f64>()
        .sqrt();
    let factor = target / unit;
    row.iter_mut().for_each(|v| *v = *v / largest * factor);
    pull_inside(row, target)
}

/// Rounding can leave a scaled row's norm an ulp or two past `target`: shrinks it inside (each
/// pass takes off one relative ulp; a few passes always suffice, the bound is a guard). True
/// when the row ends with norm at most `target`.
pub fn pull_inside(row: &mut [f64], target: f64) -> bool {
    for _ in 0..64 {
        if norm_of(row) <= target {
            return true;
        }
        row.iter_mut().for_each(|v| *v *= 1.0 - f64::EPSILON);
    }
    norm_of(row) <= target
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_land_on_the_sphere() {
        let mut r = [3.0, 4.0];
        assert!(scale_onto(&mut r, 1.0));
        assert!(
            (r[0] - 0.6).abs() < 1e-15 && (r[1] - 0.8).abs() < 1e-15,
            "{r:?}"
        );
        let mut zero = [0.0, 0.0];
        assert!(scale_onto(&mut zero, 1.0));
        assert_eq!(zero, [0.0, 0.0]);
        assert!(!scale_onto(&mut [1.0, f64::NAN], 1.0));
        let mut tiny = [5e-324, 5e-324, 1.5e-323];
        assert!(scale_onto(&mut tiny, 1.0));
        assert!(norm_of(&tiny) <= 1.0 && norm_of(&tiny) > 0.999);
    }
}
