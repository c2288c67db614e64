//! The `privlogit` command line: fit models on CSV or binary tables, simulate data, benchmark.

mod bench;
mod bench_circuits;
mod bench_dl;
mod bench_linalg;
mod bench_node;
mod bench_protocols;
mod centre;
mod circuit;
mod dl;
mod dl_experiment;
mod dp;
mod dp_account;
mod dphtl_experiment;
mod dphtl_fit;
mod fit;
mod identity;
mod log;
mod reproduce;
mod simulate;
mod stack;
mod study;
mod study_file;
mod study_state;
mod timing;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Privacy-preserving logistic regression across organizations.
#[derive(Debug, Parser)]
#[command(name = "privlogit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fit l2-regularised logistic regression over parties' data (plaintext distributed run).
    Fit(fit::FitArgs),
    /// Write a simulated data set (SimuX-style: Gaussian covariates, Bernoulli labels).
    Simulate(simulate::SimulateArgs),
    /// Time the cryptographic layers on this machine.
    Bench(bench::BenchArgs),
    /// Run Bristol Fashion circuits, in plaintext or garbled.
    Circuit(circuit::CircuitArgs),
    /// Run a secure study: key holder, aggregator and one Node per file in this process, over
    /// loopback TCP.
    Study(study::StudyArgs),
    /// Serve as the key holder of a secure study (Paillier keys, garbling).
    Keyholder(study::KeyholderArgs),
    /// Drive a secure study as the aggregator.
    Aggregator(study::AggregatorArgs),
    /// Take part in a secure study as a Node with one data file.
    Node(study::NodeArgs),
    /// Make or show a party's key pair and certificate for studies over mutual TLS.
    Identity(identity::IdentityArgs),
    /// Differentially private models: fit one, or run the papers' MNIST experiments.
    Dp(dp::DpArgs),
    /// Distributed differentially private deep learning (DPSTGD, dissertation chapter 3).
    Dl(dl::DlArgs),
    /// Cross-organization DP stacking: low-level models per organization, the high level by a
    /// secure PLR study.
    Stack(stack::StackArgs),
    /// Reproduce the dissertation's tables and figures (Table 5.1) at the paper's sizes.
    Reproduce(reproduce::ReproduceArgs),
}

/// Exit status when the fit ran but diverged.
const EXIT_DIVERGED: u8 = 3;

fn main() -> ExitCode {
    // `command` may name a nested subcommand ("stack publish").
    let accepts = |command: &str, flag: &str| {
        let cli = Cli::command();
        let mut names = command.split_whitespace();
        let Some(mut found) = names.next().and_then(|n| cli.find_subcommand(n)) else {
            return false;
        };
        for n in names {
            match found.find_subcommand(n) {
                Some(c) => found = c,
                None => return false,
            }
        }
        found.get_arguments().any(|a| a.get_long() == Some(flag))
    };
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match study_file::split_studies(&raw) {
        Ok(Some(studies)) => return run_studies(studies, &accepts),
        Ok(None) => {}
        Err(e) => {
            eprintln!("error: {}", log::message(&e));
            return ExitCode::FAILURE;
        }
    }
    let args = match study_file::expand(raw, &accepts) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("error: {}", log::message(&e));
            return ExitCode::FAILURE;
        }
    };
    exit_code(run(Cli::parse_from(args)))
}

/// A server with several studies: each on its own thread, with its own settings (its file's)
/// and its own listener, its lines prefixed with `[study]`. Succeeds when every study does.
fn run_studies(
    studies: Vec<study_file::StudyArgs>,
    accepts: &dyn Fn(&str, &str) -> bool,
) -> ExitCode {
    let mut parsed = Vec::new();
    for (label, argv) in studies {
        let cli = study_file::expand(argv, accepts)
            .and_then(|args| Cli::try_parse_from(args).map_err(anyhow::Error::from));
        match cli {
            Ok(cli) => parsed.push((label, cli)),
            Err(e) => {
                eprintln!("[{label}] error: {}", log::message(&e));
                return ExitCode::FAILURE;
            }
        }
    }
    if let Err(e) = refuse_repeated_studies(&parsed) {
        eprintln!("error: {}", log::message(&e));
        return ExitCode::FAILURE;
    }
    let total = parsed.len();
    let failed = std::thread::scope(|scope| {
        let handles: Vec<_> = parsed
            .into_iter()
            .map(|(label, cli)| {
                scope.spawn(move || {
                    log::set_study(&label);
                    exit_code(run(cli)) == ExitCode::SUCCESS
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
        ExitCode::SUCCESS
    } else {
        eprintln!("error: {failed} of {total} studies failed");
        ExitCode::FAILURE
    }
}

/// Refuses two studies of one server that are one study (the same id: same parties,
/// addresses and settings), which would share their parties and their state files.
fn refuse_repeated_studies(studies: &[(String, Cli)]) -> anyhow::Result<()> {
    let mut seen: Vec<([u8; 32], &str)> = Vec::new();
    for (label, cli) in studies {
        let file = match &cli.command {
            Command::Keyholder(a) => a.study_file(),
            Command::Aggregator(a) => a.study_file(),
            _ => None,
        };
        let Some(id) = file.map(study_file::study_id).transpose()?.flatten() else {
            continue;
        };
        if let Some((_, first)) = seen.iter().find(|(s, _)| *s == id) {
            anyhow::bail!(
                "the studies [{first}] and [{label}] are one study (the same parties, addresses \
                 and settings, so the same study id): give each its own study_id label or \
                 addresses"
            );
        }
        seen.push((id, label));
    }
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Fit(args) => fit::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Circuit(args) => circuit::run(args),
        Command::Study(args) => study::run_study(args),
        Command::Keyholder(args) => study::run_keyholder(args),
        Command::Aggregator(args) => study::run_aggregator(args),
        Command::Node(args) => study::run_node(args),
        Command::Identity(args) => identity::run(args),
        Command::Dp(args) => dp::run(args),
        Command::Dl(args) => dl::run(args),
        Command::Reproduce(args) => reproduce::run(args),
        Command::Stack(args) => stack::run(args),
    }
}

/// The exit status of a command's result (its error printed).
fn exit_code(result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Diverged) => ExitCode::from(EXIT_DIVERGED),
        Err(e) => {
            log::line(&format!("error: {}", log::message(&e)));
            ExitCode::FAILURE
        }
    }
}

/// How a command that did not fail outright ended.
enum Outcome {
    Success,
    Diverged,
}
