//! `privlogit dp fit --method dphtl`: dissertation Algorithm 4 on files. Each `--source` file is
//! one source organization: its first half of rows (file order) trains its DP hypothesis, the
//! second half its DP importance weights (disjoint, Theorem 4.3.1), and each source's data set
//! is charged epsilon once (by `dp fit`, which checks the ledger before and records after). The target's labelled rows are `--data`, its unlabelled rows
//! `--target-unlabelled` (default: `--data`'s rows without their labels).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use privlogit::data::{self, Dataset, LoadOptions};
use privlogit::dp::dphtl::transfer::Settings;
use privlogit::dp::noise::Randomness;
use privlogit::dp::plr::Privacy;
use privlogit::dp::release::{self, NamedSource};
use privlogit::dp::scaling::RowScaling;
use privlogit::dp::transfer::Labelled;
use privlogit::metrics;
use serde_json::{Value, json};

/// What the command reads (from `dp fit`'s arguments).
#[derive(Debug)]
pub struct DphtlArgs {
    pub sources: Vec<PathBuf>,
    pub public: Option<PathBuf>,
    pub data: PathBuf,
    pub target_unlabelled: Option<PathBuf>,
    pub options: LoadOptions,
    pub lambda: f64,
    pub lambda_iw: f64,
    pub prior_sd_floor: f64,
    pub seed: Option<u64>,
    pub test: Option<PathBuf>,
}

fn load(
    path: &std::path::Path,
    options: &LoadOptions,
    names: Option<&[String]>,
) -> Result<Dataset> {
    let d = data::load(path, options)?.data;
    if let Some(n) = names
        && d.names != n
    {
        bail!("{}: its columns differ from the target's", path.display());
    }
    Ok(d)
}

fn scaled(d: &Dataset) -> ndarray::Array2<f64> {
    RowScaling::Normalize.apply(d.x.view(), 1.0)
}

/// Runs Algorithm 4; the report names `spends`, each source file and its epsilon (the caller
/// checks and records them on the ledger).
pub fn run(args: &DphtlArgs, privacy: Privacy, spends: &[(PathBuf, f64)]) -> Result<Value> {
    if args.sources.len() < 2 {
        bail!(
            "--method dphtl needs at least two --source files (eq. 4.2 weighs hypotheses against each other)"
        );
    }
    let public_path = args
        .public
        .as_ref()
        .context("--method dphtl needs --public FILE")?;
    let epsilon = privacy.epsilon()?.context("--epsilon")?;
    let settings = Settings {
        epsilon: Some(epsilon),
        lambda_iw: args.lambda_iw,
        lambda_lr: args.lambda,
        sd_floor: args.prior_sd_floor,
    };
    let target = load(&args.data, &args.options, None)?;
    let names = target.names.clone();
    let public = load(public_path, &args.options, Some(&names))?;
    let unlabelled = match &args.target_unlabelled {
        Some(p) => load(p, &args.options, Some(&names))?,
        None => target.clone(),
    };
    let randomness = args.seed.map_or(Randomness::Os, Randomness::Seeded);
    let mut rng = randomness.rng();
    let tables = args
        .sources
        .iter()
        .map(|path| {
            Ok((
                path.display().to_string(),
                load(path, &args.options, Some(&names))?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let sources: Vec<NamedSource<'_>> = tables
        .iter()
        .map(|(name, d)| NamedSource {
            name,
            rows: Labelled {
                x: d.x.view(),
                y: d.y.view(),
            },
        })
        .collect();
    let fitted = release::dphtl(
        &sources,
        public.x.view(),
        unlabelled.x.view(),
        Labelled {
            x: target.x.view(),
            y: target.y.view(),
        },
        &settings,
        &mut rng,
    )?;
    let mut report = json!({
        "method": "dphtl",
        "features": names,
        "rows": "each scaled to norm 1 before the model applies",
        "epsilon_spent": crate::dp::spent_report(spends),
        "hypothesis_weights": fitted.hypothesis_weights.weights.to_vec(),
        "kkt_residual": fitted.hypothesis_weights.kkt_residual,
        "prior": {"mean": fitted.prior.mean.to_vec(), "sd": fitted.prior.sd.to_vec()},
        "coefficients": fitted.theta.to_vec(),
        "noise": match randomness {
            Randomness::Os => "OS CSPRNG".to_string(),
            Randomness::Seeded(s) => format!("seeded ChaCha20 (seed {s}): reproducible, NOT for private release"),
        },
    });
    if let Some(path) = &args.test {
        let test = load(path, &args.options, Some(&names))?;
        let scores = scaled(&test)
            .dot(&fitted.theta)
            .mapv(privlogit::protocols::objective::sigmoid);
        report["test"] = json!({
            "file": path.display().to_string(),
            "auc": metrics::auc(scores.view(), test.y.view()),
            "accuracy": metrics::accuracy(scores.view(), test.y.view()),
            "privacy": "NOT private: exact metrics on the test rows, not charged",
        });
    }
    Ok(report)
}
