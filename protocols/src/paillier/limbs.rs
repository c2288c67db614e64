//! Little-endian `u64` limb helpers shared by the arithmetic modules.

/// Pads little-endian limbs with zeros to `len`.
pub(crate) fn pad(mut limbs: Vec<u64>, len: usize) -> Vec<u64> {
    limbs.resize(len.max(limbs.len()), 0);
    limbs
}

/// Splits u64 limbs into u32 digits for `BigUint::from_slice`.
pub(crate) fn u32_digits(limbs: &[u64]) -> Vec<u32> {
    limbs
        .iter()
        .flat_map(|&d| [d as u32, (d >> 32) as u32])
        .collect()
}

/// Number of significant bits.
pub(crate) fn bit_length(x: &[u64]) -> usize {
    x.iter()
        .rposition(|&d| d != 0)
        .map_or(0, |i| 64 * i + 64 - x[i].leading_zeros() as usize)
}
