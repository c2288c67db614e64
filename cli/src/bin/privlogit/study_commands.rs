//! `fit`, `study`, `keyholder`, `aggregator`, `node` and `dealer`: the settings the user gave, over the
//! study file's, handed to the library's roles; the result printed.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use privlogit::output;
use privlogit::settings::{Reader, Spec};
use privlogit::study::file::{self, StudyFile};
use privlogit::study::{self, Ending, StudyResult};

use crate::log::{line, say};
use crate::outcome::Outcome;
use crate::settings_args::Given;

/// Settings only a single study's command line may give (each study file names its own).
const PER_STUDY: [&str; 4] = ["listen", "keyholder", "out", "parties"];

/// `privlogit fit`.
pub fn run_fit(given: Given) -> Result<Outcome> {
    let spec = file::spec(Reader::Fit, None, &given.settings)?;
    let job = privlogit::fit::job::FitJob::new(&spec)?;
    let quiet = spec.quiet;
    if !quiet {
        line(&job.describe());
    }
    let mut progress = |r: &privlogit::protocols::IterationRecord| {
        if !quiet {
            line(&privlogit::fit::job::progress_line(r));
        }
    };
    let result = job.run(&mut progress)?;
    write_out(spec.out.as_deref(), &result.render(spec.json))?;
    if let Some(note) = result.ending_note() {
        line(&note);
    }
    Ok(if result.diverged() {
        Outcome::Diverged
    } else {
        Outcome::Success
    })
}

/// `privlogit study`: every role in this process.
pub fn run_study(given: Given) -> Result<Outcome> {
    let (_, spec) = one_study(&given, Reader::Study)?;
    let quiet = spec.quiet;
    let print = |m: &str| line(m);
    if spec.vertical {
        let result = privlogit::vertical_study::run_study(&spec, (!quiet).then_some(&print))?;
        deliver(&result, spec.json, spec.out.as_deref(), None)?;
        return Ok(ending(&result));
    }
    let study = study::InProcess::new(&spec, None)?;
    let result = study.run((!quiet).then_some(&print))?;
    deliver(
        &result,
        spec.json,
        spec.out.as_deref(),
        spec.cost.as_deref(),
    )?;
    Ok(ending(&result))
}

/// `privlogit keyholder`, for each study file given (several: one thread each).
pub fn run_keyholder(given: Given) -> Result<Outcome> {
    servers(given, Reader::KeyHolder)
}

/// `privlogit aggregator`, for each study file given (several: one thread each).
pub fn run_aggregator(given: Given) -> Result<Outcome> {
    servers(given, Reader::Aggregator)
}

/// `privlogit node`.
pub fn run_node(given: Given) -> Result<Outcome> {
    let (file, spec) = one_study(&given, Reader::Node)?;
    let print = |m: &str| line(m);
    if spec.vertical {
        let outcome = privlogit::vertical_study::column_node::VerticalNode::new(
            &spec,
            file.as_ref(),
            &print,
        )?
        .run(&print)?;
        // The model the study handed every Node: the command's output, on standard output.
        for (name, b) in outcome.names.iter().zip(&outcome.beta) {
            println!("{name:<24} {b:>14.8}");
        }
        return Ok(Outcome::Success);
    }
    study::Node::new(&spec, file.as_ref(), None, &print)?.run(&print)?;
    Ok(Outcome::Success)
}

/// `privlogit dealer`: one study's dealer of masked products.
pub fn run_dealer(given: Given) -> Result<Outcome> {
    if given.studies.len() > 1 {
        anyhow::bail!("--study: a dealer serves one study (run one dealer per study file)");
    }
    let (file, spec) = one_study(&given, Reader::Dealer)?;
    let print = |m: &str| line(m);
    study::Dealer::new(&spec, file.as_ref(), &print)?.run(&print)?;
    Ok(Outcome::Success)
}

/// One server role per study file, each on its own thread with its lines prefixed by the
/// file's stem when there are several; succeeds when every study does.
/// The study file a command of one study reads (the first given, if any) and its settings for
/// `reader`, the command line's over the file's.
fn one_study(given: &Given, reader: Reader) -> Result<(Option<StudyFile>, Spec)> {
    let file = given
        .studies
        .first()
        .map(|p| StudyFile::read(p))
        .transpose()?;
    let spec = file::spec(reader, file.as_ref(), &given.settings)?;
    Ok((file, spec))
}

fn servers(given: Given, reader: Reader) -> Result<Outcome> {
    let files = given
        .studies
        .iter()
        .map(|p| StudyFile::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    if files.len() < 2 {
        return serve(reader, files.first(), &given, &|m: &str| line(m));
    }
    if let Some((key, _)) = given
        .settings
        .iter()
        .find(|(k, _)| PER_STUDY.contains(&k.as_str()))
    {
        anyhow::bail!(
            "--{} with several studies: each study file names its own addresses (the \
             [keyholder] and [aggregator] tables) and output (out = \"FILE\"), so it is refused \
             on the command line",
            key.replace('_', "-")
        );
    }
    let labelled: Vec<(String, &StudyFile)> = files
        .iter()
        .map(|f| {
            let label = Path::new(&f.path)
                .file_stem()
                .map_or_else(|| "study".into(), |s| s.to_string_lossy().into_owned());
            (label, f)
        })
        .collect();
    let named: Vec<(&str, &StudyFile)> = labelled.iter().map(|(l, f)| (l.as_str(), *f)).collect();
    study::roles::refuse_repeated(&named)?;
    let total = labelled.len();
    let failed = std::thread::scope(|scope| {
        let handles: Vec<_> = labelled
            .iter()
            .map(|(label, file)| {
                let given = &given;
                scope.spawn(move || {
                    let prefixed = |m: &str| line(&format!("[{label}] {m}"));
                    match serve(reader, Some(file), given, &prefixed) {
                        Ok(Outcome::Success) => true,
                        Ok(Outcome::Diverged) => false,
                        Err(e) => {
                            prefixed(&format!("error: {}", crate::log::message(&e)));
                            false
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(false))
            .filter(|ok| !ok)
            .count()
    });
    if failed == 0 {
        Ok(Outcome::Success)
    } else {
        anyhow::bail!("{failed} of {total} studies failed")
    }
}

/// One server role of one study.
fn serve(
    reader: Reader,
    file: Option<&StudyFile>,
    given: &Given,
    say: &(dyn Fn(&str) + Sync),
) -> Result<Outcome> {
    let spec = file::spec(reader, file, &given.settings)?;
    if reader == Reader::KeyHolder {
        study::Keyholder::new(&spec, file, say)?.run(say)?;
        return Ok(Outcome::Success);
    }
    let aggregator = study::Aggregator::new(&spec, file, say)?;
    let (json, out, cost) = (spec.json, spec.out.clone(), spec.cost.clone());
    let mut write = |r: &StudyResult| {
        deliver(r, json, out.as_deref(), cost.as_deref()).map_err(|e| {
            privlogit::error::Error::from(privlogit::error::PlanError::Output {
                why: crate::log::message(&e),
            })
        })
    };
    let result = aggregator.run(say, &mut write)?;
    Ok(ending(&result))
}

/// Prints or writes a study's result (a DP study's cost report apart) and its ending's note.
fn deliver(
    result: &StudyResult,
    json: bool,
    out: Option<&Path>,
    cost: Option<&Path>,
) -> Result<()> {
    let rendered = result.render(json)?;
    if let Some(report) = &rendered.cost {
        match cost {
            Some(path) => output::write_text(path, report)
                .with_context(|| format!("cannot write {}", path.display()))?,
            None => eprint!("{}", crate::log::in_flags(report)),
        }
    } else if cost.is_some() {
        say!("--cost applies to a differentially private study; the report is in the result");
    }
    write_out(out, &rendered.release)?;
    if let Some(note) = result.ending_note() {
        say!("{note}");
    }
    Ok(())
}

fn ending(result: &StudyResult) -> Outcome {
    match result.ending() {
        Ending::Diverged => Outcome::Diverged,
        Ending::Converged | Ending::MaxIterations => Outcome::Success,
    }
}

/// `text` to `out` (atomically) or standard output, with the library's mentions of settings
/// as flags.
pub fn write_out(out: Option<&Path>, text: &str) -> Result<()> {
    let text = &crate::log::in_flags(text);
    match out {
        Some(path) => output::write_text(path, text)
            .with_context(|| format!("cannot write {}", path.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .context("cannot write to standard output")
        }
    }
}
