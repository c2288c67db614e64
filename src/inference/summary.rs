//! The inference table as text, laid out like statsmodels' `summary()`: a header of fit
//! measures in two columns, then one row per coefficient (estimate, standard error, z, p,
//! interval) and the odds ratios with their intervals. It is rendered from a result's JSON
//! (`fit --json`, `study --json`: the same field names), so the command line and Python's
//! `summary()` print the same text.

use std::fmt::Write as _;

use serde::Deserialize;

use super::LikelihoodRatio;

const WIDTH: usize = 78;

/// The fields of a result the summary reads (every other field is ignored).
#[derive(Debug, Deserialize)]
struct Fields {
    names: Vec<String>,
    coefficients: Vec<f64>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    family: Option<String>,
    #[serde(default)]
    dispersion: Option<f64>,
    #[serde(default)]
    optimizer: Option<String>,
    #[serde(default)]
    protocol: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    lambda: Option<f64>,
    #[serde(default)]
    two_nodes_learn: Option<String>,
    #[serde(default, alias = "rows")]
    n: Option<usize>,
    #[serde(default)]
    iterations: Option<usize>,
    #[serde(default)]
    reveal: Option<String>,
    #[serde(default)]
    ci_level: Option<f64>,
    #[serde(flatten)]
    wald: WaldFields,
    #[serde(default)]
    raw_units: Option<RawFields>,
    #[serde(default)]
    df_resid: Option<f64>,
    #[serde(default)]
    estimator: Option<String>,
    #[serde(default)]
    log_likelihood: Option<f64>,
    #[serde(default)]
    deviance: Option<f64>,
    #[serde(default)]
    null_deviance: Option<f64>,
    #[serde(default)]
    aic: Option<f64>,
    #[serde(default)]
    bic: Option<f64>,
    #[serde(default)]
    likelihood_ratio: Option<LikelihoodRatio>,
    #[serde(default)]
    inference_error: Option<String>,
    #[serde(default)]
    covariance: Option<Vec<Vec<f64>>>,
    #[serde(default, flatten)]
    evaluation: Option<crate::evaluation::Evaluation>,
}

/// A Wald table's columns as a result carries them.
#[derive(Debug, Default, Deserialize)]
struct WaldFields {
    #[serde(default)]
    standard_errors: Option<Vec<f64>>,
    #[serde(default)]
    z_values: Option<Vec<f64>>,
    #[serde(default)]
    p_values: Option<Vec<f64>>,
    #[serde(default)]
    conf_int: Option<Vec<[f64; 2]>>,
    // A ratio past f64's range (exp of a large raw coefficient) is written as null.
    #[serde(default, deserialize_with = "ratios")]
    odds_ratios: Option<Vec<f64>>,
    #[serde(default, deserialize_with = "intervals")]
    odds_ratio_conf_int: Option<Vec<[f64; 2]>>,
    #[serde(default, deserialize_with = "ratios")]
    rate_ratios: Option<Vec<f64>>,
    #[serde(default, deserialize_with = "intervals")]
    rate_ratio_conf_int: Option<Vec<[f64; 2]>>,
    #[serde(default)]
    statistic: Option<String>,
}

/// Ratios, a null (JSON's rendering of an infinite one) read as infinity.
fn ratios<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<f64>>, D::Error> {
    let v: Option<Vec<Option<f64>>> = Deserialize::deserialize(d)?;
    Ok(v.map(|v| v.into_iter().map(|x| x.unwrap_or(f64::INFINITY)).collect()))
}

/// Ratio intervals, nulls read as infinity.
#[allow(clippy::type_complexity)]
fn intervals<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<[f64; 2]>>, D::Error> {
    let v: Option<Vec<[Option<f64>; 2]>> = Deserialize::deserialize(d)?;
    Ok(v.map(|v| {
        v.into_iter()
            .map(|[a, b]| [a.unwrap_or(f64::INFINITY), b.unwrap_or(f64::INFINITY)])
            .collect()
    }))
}

/// A standardised fit's table in raw units (`raw_units`).
#[derive(Debug, Deserialize)]
struct RawFields {
    coefficients: Vec<f64>,
    #[serde(flatten)]
    wald: WaldFields,
}

/// A ratio's name with its values and intervals.
type Ratios<'a> = (&'static str, &'a [f64], &'a [[f64; 2]]);

/// A complete table: every column of one length.
struct Table<'a> {
    coefficients: &'a [f64],
    se: &'a [f64],
    z: &'a [f64],
    p: &'a [f64],
    ci: &'a [[f64; 2]],
    level: f64,
    law: &'a str,
    ratios: Vec<Ratios<'a>>,
}

impl<'a> Table<'a> {
    fn of(coefficients: &'a [f64], w: &'a WaldFields, level: Option<f64>) -> Option<Self> {
        let k = coefficients.len();
        let (se, z, p, ci, level) = match (
            &w.standard_errors,
            &w.z_values,
            &w.p_values,
            &w.conf_int,
            level,
        ) {
            (Some(se), Some(z), Some(p), Some(ci), Some(level))
                if se.len() == k && z.len() == k && p.len() == k && ci.len() == k =>
            {
                (se, z, p, ci, level)
            }
            _ => return None,
        };
        let ratios = [
            ("odds ratio", &w.odds_ratios, &w.odds_ratio_conf_int),
            ("rate ratio", &w.rate_ratios, &w.rate_ratio_conf_int),
        ]
        .into_iter()
        .filter_map(|(what, r, i)| match (r, i) {
            (Some(r), Some(i)) if r.len() == k && i.len() == k => {
                Some((what, r.as_slice(), i.as_slice()))
            }
            _ => None,
        })
        .collect();
        Some(Self {
            coefficients,
            se,
            z,
            p,
            ci,
            level,
            law: w.statistic.as_deref().unwrap_or("z"),
            ratios,
        })
    }
}

/// The coefficient rows (estimate, standard error, statistic, p, interval) and the ratios.
fn write_table(s: &mut String, names: &[String], t: &Table<'_>, width: usize, line: usize) {
    let (lo, hi) = quantile_names(t.level);
    let law = t.law;
    let _ = writeln!(
        s,
        "{:<width$} {:>12} {:>10} {:>9} {:>7} {:>11} {:>11}",
        "",
        "coef",
        "std err",
        law,
        format!("P>|{law}|"),
        lo,
        hi
    );
    let _ = writeln!(s, "{}", "-".repeat(line));
    for (j, name) in names.iter().enumerate().take(t.coefficients.len()) {
        let _ = writeln!(
            s,
            "{:<width$} {:>12} {:>10} {:>9.3} {:>7.3} {:>11} {:>11}",
            name,
            number(t.coefficients[j]),
            number(t.se[j]),
            t.z[j],
            t.p[j],
            number(t.ci[j][0]),
            number(t.ci[j][1])
        );
    }
    for (what, ratios, intervals) in &t.ratios {
        let _ = writeln!(s, "{}", "-".repeat(line));
        let _ = writeln!(s, "{:<width$} {:>12} {:>11} {:>11}", "", what, lo, hi);
        for (j, name) in names.iter().enumerate().take(t.coefficients.len()) {
            let _ = writeln!(
                s,
                "{:<width$} {:>12} {:>11} {:>11}",
                name,
                number(ratios[j]),
                number(intervals[j][0]),
                number(intervals[j][1])
            );
        }
    }
}

/// The held-out rows' figures and calibration table.
fn held_out(s: &mut String, e: &crate::evaluation::Evaluation) {
    let withheld = e.suppressed.iter().any(|w| w.starts_with("AUC"));
    let auc = e.test_auc.map_or_else(
        || {
            if withheld {
                "- (withheld, below)".to_string()
            } else {
                "- (one class only)".to_string()
            }
        },
        |a| format!("{a:.6}"),
    );
    let _ = writeln!(
        s,
        "Held-out rows: {}   AUC {auc}   log-loss {:.6}   accuracy {:.6}   Brier {:.6}",
        e.test_n, e.test_log_loss, e.test_accuracy, e.test_brier
    );
    let c = &e.calibration;
    let p = c
        .p_value
        .map_or_else(|| "-".to_string(), |p| format!("{p:.4}"));
    let _ = writeln!(
        s,
        "Calibration (bins of predicted risk): Hosmer-Lemeshow H = {:.4}, df = {}, p = {p}",
        c.hosmer_lemeshow, c.df
    );
    let _ = writeln!(
        s,
        "{:>12} {:>8} {:>10} {:>12}",
        "risk", "rows", "observed", "expected"
    );
    for b in c.bins.iter().filter(|b| b.n > 0) {
        let _ = writeln!(
            s,
            "{:>12} {:>8} {:>10} {:>12.3}",
            format!("{:.1}-{:.1}", b.low, b.high),
            b.n,
            b.observed,
            b.expected
        );
    }
    for note in &e.suppressed {
        let _ = writeln!(s, "Disclosure control: {note}");
    }
}

/// The summary of a result given as its JSON value.
pub fn render(result: &serde_json::Value) -> Result<String, String> {
    let f: Fields = serde_json::from_value(result.clone())
        .map_err(|e| format!("not a fit or study result: {e}"))?;
    if f.names.len() != f.coefficients.len() {
        return Err(format!(
            "{} names for {} coefficients",
            f.names.len(),
            f.coefficients.len()
        ));
    }
    let mut s = String::new();
    let width = f.names.iter().map(String::len).max().unwrap_or(0).max(9);
    let line = WIDTH.max(width + 67);
    let model = match f.family.as_deref() {
        Some("gaussian") => "Gaussian GLM (identity link)",
        Some("poisson") => "Poisson GLM (log link)",
        _ => "Logistic regression",
    };
    let title = match &f.protocol {
        Some(p) => format!("{model}: secure study ({p})"),
        None => format!("{model}: plaintext fit"),
    };
    let _ = writeln!(s, "{title:^line$}");
    if let Some(e) = &f.estimator {
        let estimator = format!("Estimator: {e}");
        let _ = writeln!(s, "{estimator:^line$}");
    }
    let _ = writeln!(s, "{}", "=".repeat(line));
    let opt = |x: Option<f64>, digits: usize| match x {
        Some(v) => format!("{v:.digits$}"),
        None => "-".into(),
    };
    let k = f.coefficients.len();
    let logistic = matches!(f.family.as_deref(), None | Some("binomial"));
    let pseudo_r2 = match (f.deviance, f.null_deviance) {
        (Some(d), Some(n)) if n > 0.0 && logistic => Some(1.0 - d / n),
        _ => None,
    };
    let left = [
        (
            "Dep. Variable:",
            f.label.clone().unwrap_or_else(|| "-".into()),
        ),
        ("Method:", f.optimizer.clone().unwrap_or_else(|| "-".into())),
        ("Status:", f.status.clone().unwrap_or_else(|| "-".into())),
        (
            "Iterations:",
            f.iterations.map_or("-".into(), |i| i.to_string()),
        ),
        ("Lambda:", f.lambda.map_or("-".into(), format_number)),
        (
            "Revealed:",
            f.reveal.clone().unwrap_or_else(|| match f.protocol {
                Some(_) => "coefficients".into(),
                None => "all (plaintext)".into(),
            }),
        ),
    ];
    let right = [
        (
            "No. Observations:",
            f.n.map_or("-".into(), |n| n.to_string()),
        ),
        (
            "Df Residuals:",
            f.n.map_or("-".into(), |n| (n as i64 - k as i64).to_string()),
        ),
        ("Log-Likelihood:", opt(f.log_likelihood, 4)),
        ("Deviance:", opt(f.deviance, 4)),
        ("Null Deviance:", opt(f.null_deviance, 4)),
        if logistic {
            ("Pseudo R-squ.:", opt(pseudo_r2, 4))
        } else {
            ("Dispersion:", opt(f.dispersion.or(Some(1.0)), 4))
        },
    ];
    for ((lk, lv), (rk, rv)) in left.iter().zip(&right) {
        let _ = writeln!(s, "{lk:<17}{lv:>21}   {rk:<18}{rv:>19}");
    }
    let _ = writeln!(
        s,
        "{:<17}{:>21}   {:<18}{:>19}",
        "AIC:",
        opt(f.aic, 4),
        "BIC:",
        opt(f.bic, 4)
    );
    let _ = writeln!(s, "{}", "=".repeat(line));
    let table = Table::of(&f.coefficients, &f.wald, f.ci_level);
    match &table {
        Some(t) => {
            if f.raw_units.is_some() {
                let _ = writeln!(
                    s,
                    "Standardised: per pooled standard deviation of each feature (ddof 0)"
                );
            }
            write_table(&mut s, &f.names, t, width, line);
            if let Some(raw) = f
                .raw_units
                .as_ref()
                .and_then(|r| Table::of(&r.coefficients, &r.wald, f.ci_level))
            {
                let _ = writeln!(s, "{}", "=".repeat(line));
                let _ = writeln!(
                    s,
                    "Raw units: per unit of each feature (the intercept where every feature is 0)"
                );
                write_table(&mut s, &f.names, &raw, width, line);
            }
        }
        None => {
            let _ = writeln!(s, "{:<width$} {:>12}", "", "coef");
            let _ = writeln!(s, "{}", "-".repeat(line));
            for (name, b) in f.names.iter().zip(&f.coefficients) {
                let _ = writeln!(s, "{name:<width$} {:>12}", number(*b));
            }
            let why = match (&f.status, &f.inference_error) {
                (Some(st), _) if st != "converged" => "the fit did not converge".to_string(),
                (_, Some(e)) => format!("the inference round failed: {e}"),
                _ => "the study revealed the coefficients only".to_string(),
            };
            let _ = writeln!(s, "(no standard errors: {why})");
        }
    }
    let _ = writeln!(s, "{}", "=".repeat(line));
    if let Some(cov) = f.covariance.as_ref().filter(|c| c.len() == k) {
        let _ = writeln!(
            s,
            "Covariance of the coefficients (row by row, in the order above):"
        );
        for (name, row) in f.names.iter().zip(cov) {
            let cells: Vec<String> = row.iter().map(|v| format!("{v:>11.4e}")).collect();
            let _ = writeln!(s, "{name:<width$} {}", cells.join(" "));
        }
        let _ = writeln!(s, "{}", "=".repeat(line));
    }
    if let Some(lr) = &f.likelihood_ratio {
        let _ = writeln!(
            s,
            "Likelihood-ratio test against the model without {}: LR = {:.4}, df = {}, p = {:.4e}",
            lr.dropped.join(", "),
            lr.statistic,
            lr.df,
            lr.p_value
        );
    }
    if let Some(e) = &f.evaluation {
        held_out(&mut s, e);
    }
    if f.lambda.is_some_and(|l| l > 0.0) && table.is_some() {
        let _ = writeln!(
            s,
            "Penalised fit: the standard errors invert the penalised information X^T A X + lambda I,"
        );
        let _ = writeln!(
            s,
            "so this is not the maximum-likelihood table: refit with setting `lambda` 0 for that."
        );
    }
    if let (Some("t"), Some(df)) = (f.wald.statistic.as_deref(), f.df_resid) {
        let _ = writeln!(
            s,
            "t statistics: the dispersion is estimated, so p-values and intervals use Student's t with {} df.",
            format_number(df)
        );
    }
    if let Some(note) = &f.two_nodes_learn {
        let _ = writeln!(s, "Disclosure: {note}.");
    }
    Ok(s)
}

/// `[0.025` and `0.975]`, statsmodels' interval headers.
/// Four decimals, or as many more as it takes for the two ends to differ from each other and
/// from 0 and 1 (`--ci-level 0.0001` read `[0.5 0.5]`, `0.999999999999` read `[0 1]`).
fn quantile_names(level: f64) -> (String, String) {
    let a = (1.0 - level) / 2.0;
    let ends = |digits| (trim(a, digits), trim(1.0 - a, digits));
    let (lo, hi) = (4..=15)
        .map(ends)
        .find(|(lo, hi)| lo != hi && lo != "0" && hi != "1")
        .unwrap_or_else(|| ends(15));
    (format!("[{lo}"), format!("{hi}]"))
}

fn trim(x: f64, digits: usize) -> String {
    let s = format!("{x:.digits$}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Four significant decimals in a fixed column, switching to exponent form for very large or
/// small magnitudes.
fn number(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && !(1e-4..1e6).contains(&a) {
        format!("{x:.3e}")
    } else {
        format!("{x:.4}")
    }
}

/// A number as a person writes it (`1`, `0.01`, `1e-6`): in the tables and in the settings'
/// defaults alike.
pub fn format_number(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::quantile_names;

    /// The interval headers keep statsmodels' form and stay apart at any level.
    #[test]
    fn interval_headers_tell_their_ends_apart() {
        assert_eq!(quantile_names(0.95), ("[0.025".into(), "0.975]".into()));
        assert_eq!(
            quantile_names(0.0001),
            ("[0.49995".into(), "0.50005]".into())
        );
        assert_eq!(
            quantile_names(0.999999999999),
            ("[0.0000000000005".into(), "0.9999999999995]".into())
        );
    }
}
