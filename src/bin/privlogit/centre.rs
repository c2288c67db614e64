//! `--penalty-centre FILE`: the public vector the l2 penalty is centred at (hypothesis
//! transfer), one coefficient per line in the model's order (the intercept first when one is
//! added; standardised coordinates with `--standardize`); blank lines and `#` comments skipped.

use std::path::Path;

use anyhow::{Context, Result, bail};
use ndarray::Array1;

/// The centre in `path`, every entry a finite number.
pub fn read(path: &Path) -> Result<Array1<f64>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the penalty centre {}", path.display()))?;
    let mut values = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("");
        let value = content.trim();
        if value.is_empty() {
            continue;
        }
        let column = line.find(value).unwrap_or(0) + 1;
        match value.parse::<f64>() {
            Ok(v) if v.is_finite() => values.push(v),
            _ => bail!(
                "{}:{}:{column}: `{value}` is not a finite number",
                path.display(),
                number + 1
            ),
        }
    }
    if values.is_empty() {
        bail!("{}: the penalty centre has no values", path.display());
    }
    Ok(Array1::from(values))
}
