//! Calling privlogit from research code: load three hospitals' files, fit with every optimiser,
//! compare iterations and coefficients.
//!
//! Run with: cargo run --release --example fit_library

use privlogit::data::{self, LoadOptions};
use privlogit::fit::{self, Preparation};
use privlogit::protocols::{FitOptions, Optimizer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = LoadOptions::new("label");
    let parties = ["hospital_a", "hospital_b", "hospital_c"]
        .iter()
        .map(|h| {
            let path = format!("{}/data/demo/{h}.csv", env!("CARGO_MANIFEST_DIR"));
            Ok(data::load(path.as_ref(), &options)?.data)
        })
        .collect::<Result<Vec<_>, data::DataError>>()?;
    let prepared = fit::prepare(
        parties,
        Preparation {
            standardize: true,
            intercept: true,
        },
    )?;

    let fit_options = FitOptions::new()
        .lambda(1.0)
        .relative_tolerance(1e-10)
        .max_iterations(20_000);
    let mut newton_beta = None;
    for optimizer in [
        Optimizer::Newton,
        Optimizer::PrivLogit,
        Optimizer::AcceleratedPrivLogit { memory: 5 },
    ] {
        let fitted = fit::fit(&prepared, optimizer, &fit_options, &mut |_| {})?;
        let report = &fitted.report;
        let reference = newton_beta.get_or_insert_with(|| report.beta.clone());
        let gap = (&report.beta - &*reference)
            .iter()
            .fold(0.0f64, |m, d| m.max(d.abs()));
        println!(
            "{:<16} {:>5} iterations {:>5} rounds  AUC {:.4}  max |beta - beta_newton| {gap:.1e}",
            optimizer.name(),
            report.iterations,
            report.rounds,
            fitted.auc.unwrap_or(f64::NAN),
        );
    }
    Ok(())
}
