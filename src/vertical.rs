//! Vertically partitioned studies as an application: every party's file has an identifier
//! column (`--id`), one party's file the label; the rows the parties share are found by private
//! set intersection ([`privlogit_protocols::vertical::psi`]) and put in one common order, each
//! party standardises its own columns over them, and the model is fitted over the joined
//! columns, securely (`study --vertical`, [`run_study`]) or in the clear as the reference
//! (`fit --vertical`, through [`Joined::dataset`]).
//!
//! Coefficients are in the parties' order with the labelling party first (its intercept, then
//! its columns), so the secure and the plaintext designs are the same.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ndarray::{Array1, Array2};
use privlogit_protocols::Optimizer;
use privlogit_protocols::paillier::{KeyPair, KeySize};
use privlogit_protocols::secure::aggregator::Protocol;
use privlogit_protocols::secure::vertical::{self as secure, VerticalParty, VerticalReport};
use privlogit_protocols::vertical::psi::{self, PsiError};
use serde_json::json;

use crate::data::{self, Dataset, LoadOptions};
use crate::error::Error;
use crate::model::INTERCEPT;
use crate::settings::{Reader, Spec};

/// One party's columns over the common rows.
#[derive(Debug, Clone)]
pub struct Block {
    /// Its file.
    pub path: PathBuf,
    /// Its column names.
    pub names: Vec<String>,
    /// `rows x names.len()` by rows, in the common order.
    pub x: Vec<f64>,
    /// Rows in its file.
    pub held: usize,
}

/// The parties' columns joined on the intersection, labelling party first.
#[derive(Debug, Clone)]
pub struct Joined {
    /// The blocks, the labelling party's first.
    pub blocks: Vec<Block>,
    /// The labels over the common rows.
    pub labels: Vec<f64>,
    /// The label column.
    pub label: String,
}

impl Joined {
    /// Rows in the intersection.
    pub fn rows(&self) -> usize {
        self.labels.len()
    }

    /// All feature names, in the blocks' order.
    pub fn names(&self) -> Vec<String> {
        self.blocks.iter().flat_map(|b| b.names.clone()).collect()
    }

    /// The joined rows as one table (the plaintext reference: pooling what a vertical study
    /// never pools).
    pub fn dataset(&self) -> Dataset {
        let names = self.names();
        let rows = self.rows();
        let mut x = Array2::<f64>::zeros((rows, names.len()));
        let mut at = 0;
        for b in &self.blocks {
            let w = b.names.len();
            for i in 0..rows {
                for j in 0..w {
                    x[[i, at + j]] = b.x[i * w + j];
                }
            }
            at += w;
        }
        Dataset {
            source: format!(
                "the intersection of {}",
                self.blocks
                    .iter()
                    .map(|b| b.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            names,
            x,
            y: Array1::from(self.labels.clone()),
        }
    }
}

/// Reads every party's file, intersects the identifiers privately (every role in this
/// process) and returns the parties' columns over the common rows.
pub fn join(spec: &Spec) -> Result<Joined, Error> {
    let id = spec
        .id
        .clone()
        .ok_or_else(|| Error::setting("--id", "a vertical study needs the identifier column"))?;
    let label = spec
        .label
        .clone()
        .ok_or_else(|| Error::setting("--label", "a vertical study needs the label column"))?;
    if spec.party.len() < 2 {
        return Err(Error::plan(
            "a vertical study joins the columns of at least two parties: give --party FILE for each",
        ));
    }
    let headers = spec
        .party
        .iter()
        .map(|p| header(p))
        .collect::<Result<Vec<_>, _>>()?;
    // `--exclude` names columns of any party's file (each file drops its own).
    if let Some(missing) = spec
        .exclude
        .iter()
        .find(|c| !headers.iter().any(|h| h.contains(*c)))
    {
        return Err(Error::setting(
            "--exclude",
            format!("{missing:?} is a column of no party's file"),
        ));
    }
    let mut tables = Vec::with_capacity(spec.party.len());
    for (path, columns) in spec.party.iter().zip(&headers) {
        let has_label = columns.contains(&label);
        let mut options = if has_label {
            LoadOptions::new(label.clone())
        } else {
            LoadOptions::unlabelled()
        };
        options.group = Some(id.clone());
        options.exclude = spec
            .exclude
            .iter()
            .filter(|c| columns.contains(*c))
            .cloned()
            .collect();
        let table = data::load(path, &options)?;
        tables.push((path.clone(), has_label, table));
    }
    let labelled: Vec<usize> = (0..tables.len()).filter(|&k| tables[k].1).collect();
    let [label_party] = labelled[..] else {
        return Err(Error::setting(
            "--label",
            format!(
                "exactly one party's file must have the label column {label:?}; {} {}",
                if labelled.is_empty() {
                    "none".to_string()
                } else {
                    labelled
                        .iter()
                        .map(|&k| tables[k].0.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" and ")
                },
                if labelled.len() == 1 { "does" } else { "do" }
            ),
        ));
    };
    let ids: Vec<Vec<String>> = tables
        .iter()
        .map(|(_, _, t)| t.groups.clone().unwrap_or_default())
        .collect();
    let mut rng = rand::rng();
    let intersection = psi::intersect_in_process(&ids, &mut rng).map_err(|e| match e {
        PsiError::Duplicate { id, first, second } => {
            let k = ids
                .iter()
                .position(|list| {
                    list.get(first).is_some_and(|v| *v == id)
                        && list.get(second).is_some_and(|v| *v == id)
                })
                .unwrap_or(0);
            Error::plan(format!(
                "{}:{}: the identifier {id:?} in column {:?} appears again (first on line {}): \
                 every person once per file",
                tables[k].0.display(),
                second + 2,
                spec.id.as_deref().unwrap_or(""),
                first + 2
            ))
        }
        other => Error::plan(other.to_string()),
    })?;
    let rows = intersection.rows[0].len();
    if rows == 0 {
        return Err(Error::plan(format!(
            "the parties' files share no {id:?}: the intersection is empty"
        )));
    }
    let mut order: Vec<usize> = vec![label_party];
    order.extend((0..tables.len()).filter(|&k| k != label_party));
    let blocks = order
        .iter()
        .map(|&k| {
            let (path, _, table) = &tables[k];
            let data = &table.data;
            let w = data.names.len();
            let mut x = Vec::with_capacity(rows * w);
            for &r in &intersection.rows[k] {
                x.extend(data.x.row(r).iter());
            }
            Block {
                path: path.clone(),
                names: data.names.clone(),
                x,
                held: data.rows(),
            }
        })
        .collect();
    let labels = intersection.rows[label_party]
        .iter()
        .map(|&r| tables[label_party].2.data.y[r])
        .collect();
    Ok(Joined {
        blocks,
        labels,
        label,
    })
}

/// The header row of a CSV file.
fn header(path: &Path) -> Result<Vec<String>, Error> {
    let mut reader = ::csv::Reader::from_path(path).map_err(|e| Error::Io {
        what: "cannot read",
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(reader
        .headers()
        .map_err(|e| Error::Io {
            what: "cannot read the header of",
            path: path.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?
        .iter()
        .map(str::to_string)
        .collect())
}

/// A finished vertical study.
#[derive(Debug)]
pub struct VerticalResult {
    /// Coefficient names (intercept first when there is one).
    pub names: Vec<String>,
    /// The secure study's report.
    pub report: VerticalReport,
    /// Rows each party's file held, and the intersection's size.
    pub held: Vec<(PathBuf, usize)>,
    /// Seconds for the intersection.
    pub psi_seconds: f64,
    /// Each column's mean and standard deviation over the common rows, when standardised.
    pub standardization: Option<(Vec<f64>, Vec<f64>)>,
}

impl VerticalResult {
    /// The result as JSON (coefficients by name, N, iterations, status, timings).
    pub fn json(&self) -> serde_json::Value {
        let fit = &self.report.fit;
        json!({
            "vertical": true,
            "n": self.report.rows,
            "names": self.names,
            "coefficients": fit.beta.to_vec(),
            "iterations": fit.iterations,
            "rounds": fit.rounds,
            "status": fit.status.name(),
            "optimizer": format!("{:?}", fit.optimizer),
            "parties": self.held.iter().map(|(p, n)| json!({"file": p.display().to_string(), "rows": n})).collect::<Vec<_>>(),
            "seconds": self.report.seconds,
            "psi_seconds": self.psi_seconds,
            "gradient_tolerance": self.report.gradient_tolerance,
            "and_gates": self.report.aggregator.and_gates,
            "bytes_to_keyholder": self.report.aggregator.bytes_to_keyholder,
            "bytes_from_keyholder": self.report.keyholder.bytes_sent,
            "standardization": self.standardization.as_ref().map(|(m, s)| json!({"means": m, "scales": s})),
        })
    }

    /// The result as a short text report.
    pub fn text(&self) -> String {
        let fit = &self.report.fit;
        let mut out = format!(
            "vertical study: N = {} rows shared by {} parties ({}), {} after {} iterations, \
             {:.1} s (intersection {:.2} s)\n",
            self.report.rows,
            self.held.len(),
            self.held
                .iter()
                .map(|(p, n)| format!("{}: {n} rows", p.display()))
                .collect::<Vec<_>>()
                .join(", "),
            fit.status.name(),
            fit.iterations,
            self.report.seconds,
            self.psi_seconds
        );
        let width = self.names.iter().map(String::len).max().unwrap_or(0);
        for (name, b) in self.names.iter().zip(fit.beta.iter()) {
            out.push_str(&format!("  {name:<width$}  {b:>14.8}\n"));
        }
        out
    }
}

/// A secure vertical study with every role in this process (`study --vertical`).
pub fn run_study(spec: &Spec, say: Option<&dyn Fn(&str)>) -> Result<VerticalResult, Error> {
    if spec.reader != Reader::Study {
        return Err(Error::plan(
            "a vertical study runs as `privlogit study --vertical`",
        ));
    }
    if spec.given("protocol") && spec.protocol != Protocol::Hessian {
        return Err(Error::setting(
            "--protocol",
            "a vertical study runs PrivLogit-Hessian (the gradient is formed between the two \
             servers); secure Newton and PrivLogit-Local are not built for it",
        ));
    }
    let optimizer = match spec.optimizer {
        Optimizer::Newton => {
            return Err(Error::setting(
                "--optimizer",
                "a vertical study runs PrivLogit, plain or accelerated (Newton would need the \
                 Hessian's cross-party blocks every iteration)",
            ));
        }
        Optimizer::PrivLogit => Optimizer::PrivLogit,
        Optimizer::AcceleratedPrivLogit { .. } => Optimizer::AcceleratedPrivLogit {
            memory: spec.memory,
        },
    };
    let options = spec.fit_options(true)?;
    let start = Instant::now();
    let joined = join(spec)?;
    let psi_seconds = start.elapsed().as_secs_f64();
    if let Some(say) = say {
        say(&format!(
            "intersection: {} rows shared ({:.2} s)",
            joined.rows(),
            psi_seconds
        ));
    }
    let (parties, names, standardization) = design(&joined, spec.standardize, spec.intercept)?;
    let key = match spec.key_bits {
        2048 => KeyPair::generate(KeySize::Bits2048, &mut rand::rng()),
        3072 => KeyPair::generate(KeySize::Bits3072, &mut rand::rng()),
        4096 => KeyPair::generate(KeySize::Bits4096, &mut rand::rng()),
        bits => {
            return Err(Error::setting(
                "--key-bits",
                format!("{bits} (a vertical study takes 2048, 3072 or 4096)"),
            ));
        }
    };
    let mut observer = |r: &privlogit_protocols::IterationRecord| {
        if let Some(say) = say {
            say(&crate::fit::job::progress_line(r));
        }
    };
    if let (Some(asked), Some(say)) = (options.stopping.gradient_tolerance, say) {
        let floor = secure::gradient_floor(joined.rows(), names.len());
        if asked < floor {
            say(&format!(
                "gradient tolerance raised from {asked:e} to {floor:.2e}: below it the logistic \
                 circuit's rounding (2^-30 a row) over {} rows decides the test",
                joined.rows()
            ));
        }
    }
    let report = secure::run_in_process(&parties, &key.secret, optimizer, &options, &mut observer)?;
    Ok(VerticalResult {
        names,
        held: joined
            .blocks
            .iter()
            .map(|b| (b.path.clone(), b.held))
            .collect(),
        report,
        psi_seconds,
        standardization,
    })
}

/// The parties' design blocks: standardised over the common rows when asked (each party its
/// own columns, ddof 0 as the pooled standardiser), the intercept leading the labelling
/// party's block.
#[allow(clippy::type_complexity)]
fn design(
    joined: &Joined,
    standardize: bool,
    intercept: bool,
) -> Result<
    (
        Vec<VerticalParty>,
        Vec<String>,
        Option<(Vec<f64>, Vec<f64>)>,
    ),
    Error,
> {
    let rows = joined.rows();
    let mut parties = Vec::with_capacity(joined.blocks.len());
    let mut names = Vec::new();
    let (mut means, mut scales) = (Vec::new(), Vec::new());
    for (k, block) in joined.blocks.iter().enumerate() {
        let w = block.names.len();
        let mut x = block.x.clone();
        if standardize {
            for j in 0..w {
                let column = (0..rows).map(|i| block.x[i * w + j]);
                let mean = column.clone().sum::<f64>() / rows as f64;
                let var = column.map(|v| (v - mean).powi(2)).sum::<f64>() / rows as f64;
                let sd = var.sqrt();
                if sd == 0.0 || sd <= 1e-12 * mean.abs() {
                    return Err(Error::plan(format!(
                        "{}: column {:?} is constant over the shared rows ({mean}): it cannot be \
                         standardised; leave it out with --exclude",
                        block.path.display(),
                        block.names[j]
                    )));
                }
                for i in 0..rows {
                    x[i * w + j] = (block.x[i * w + j] - mean) / sd;
                }
                means.push(mean);
                scales.push(sd);
            }
        }
        let limit = f64::from(secure::FEATURE_BITS).exp2();
        if let Some(at) = x.iter().position(|v| v.is_nan() || v.abs() >= limit) {
            return Err(Error::plan(format!(
                "{}: column {:?} holds {} (on a shared row): a vertical study's feature values \
                 must stay below {limit} in magnitude{}",
                block.path.display(),
                block.names[at % w],
                block.x[at],
                if standardize {
                    ""
                } else {
                    "; standardise with --standardize"
                }
            )));
        }
        let lead = k == 0 && intercept;
        let columns = w + usize::from(lead);
        let mut full = Vec::with_capacity(rows * columns);
        for i in 0..rows {
            if lead {
                full.push(1.0);
            }
            full.extend_from_slice(&x[i * w..(i + 1) * w]);
        }
        if lead {
            names.push(INTERCEPT.to_string());
        }
        names.extend(block.names.iter().cloned());
        parties.push(VerticalParty {
            x: full,
            columns,
            labels: (k == 0).then(|| joined.labels.iter().map(|&y| y == 1.0).collect()),
        });
    }
    Ok((parties, names, standardize.then_some((means, scales))))
}
