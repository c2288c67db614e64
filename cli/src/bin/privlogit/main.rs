//! The `privlogit` command line: parses arguments, calls the library, prints, and maps errors
//! to exit statuses. Everything else (settings and their defaults, study files, plans, roles,
//! releases and their costs) is the library's.

mod circuit_command;
mod dp_command;
mod identity_command;
mod log;
mod outcome;
mod predict_command;
mod settings_args;
mod simulate;
mod stack;
mod study_commands;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use outcome::Outcome;
use privlogit_protocols::transport::shape;

/// Privacy-preserving logistic regression across organizations.
#[derive(Debug, Parser)]
#[command(name = "privlogit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Delay every message this process sends by this one-way latency (25ms: a 50 ms round
    /// trip between processes that all use it), to run a study as if far apart. Also
    /// PRIVLOGIT_LATENCY.
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_latency)]
    latency: Option<std::time::Duration>,
    /// Limit every connection of this process to this many bits per second (100mbit, 1gbit).
    /// Also PRIVLOGIT_BANDWIDTH.
    #[arg(long, global = true, value_name = "BITS", value_parser = parse_bandwidth)]
    bandwidth: Option<u64>,
}

fn parse_latency(text: &str) -> Result<std::time::Duration, String> {
    shape::parse_latency(text).map_err(|e| e.to_string())
}

/// Bits per second; 0 for `off`.
fn parse_bandwidth(text: &str) -> Result<u64, String> {
    shape::parse_bandwidth(text)
        .map(|b| b.unwrap_or(0))
        .map_err(|e| e.to_string())
}

/// The network shape the flags and the environment ask for: flags first.
fn link_shape(cli: &Cli) -> Result<shape::LinkShape, shape::ShapeError> {
    let environment = shape::from_environment()?;
    Ok(shape::LinkShape {
        latency: cli.latency.unwrap_or(environment.latency),
        bandwidth: cli
            .bandwidth
            .map_or(environment.bandwidth, |b| Some(b).filter(|&b| b > 0)),
    })
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fit l2-regularised logistic regression over parties' data (plaintext distributed run).
    Fit(settings_args::FitArgs),
    /// Apply a model file (from `fit --json`, `study --json` or an aggregator's --out) to rows.
    Predict(predict_command::PredictArgs),
    /// Write a simulated data set (SimuX-style: uniform covariates of variance 1, Bernoulli labels).
    Simulate(simulate::SimulateArgs),
    /// Time the cryptographic layers, the protocols and the Nodes on this machine.
    Bench(privlogit_cli::bench::BenchArgs),
    /// Run Bristol Fashion circuits, in plaintext or garbled.
    Circuit(circuit_command::CircuitArgs),
    /// Run a secure study: key holder, aggregator and one Node per file in this process, over
    /// loopback TCP.
    Study(settings_args::StudyArgs),
    /// Serve as the key holder of a secure study (Paillier keys, garbling).
    Keyholder(settings_args::KeyholderArgs),
    /// Drive a secure study as the aggregator.
    Aggregator(settings_args::AggregatorArgs),
    /// Take part in a secure study as a Node with one data file.
    Node(settings_args::NodeArgs),
    /// Serve as a study's optional dealer of masked products (a third server the study file's
    /// [dealer] table names, trusted to collude with neither the key holder nor the aggregator).
    Dealer(settings_args::DealerArgs),
    /// Make or show a party's key pair and certificate for studies over mutual TLS.
    Identity(identity_command::IdentityArgs),
    /// Differentially private models: fit one, or run the papers' experiments.
    Dp(dp_command::DpArgs),
    /// Distributed differentially private deep learning (DPSTGD, dissertation chapter 3).
    Dl(privlogit_cli::dl_runs::DlArgs),
    /// Cross-organization DP stacking: low-level models per organization, the high level by a
    /// secure PLR study.
    Stack(stack::StackArgs),
    /// Reproduce the dissertation's tables and figures (Table 5.1) at the paper's sizes.
    Reproduce(privlogit_cli::reproduce::ReproduceArgs),
}

/// Exit status when the fit ran but diverged.
const EXIT_DIVERGED: u8 = 3;
/// Exit status when a privacy ledger refused the release (it would pass the data set's total).
const EXIT_OVER_BUDGET: u8 = 4;
/// Exit status when a party or the network failed during a study (run it again, or resume).
const EXIT_NETWORK: u8 = 5;

/// The exit status of a command that failed with `e` (1: bad input or options; clap exits 2
/// for a usage error before anything runs).
fn failure_status(e: &anyhow::Error) -> ExitCode {
    let library = e
        .chain()
        .find_map(|cause| cause.downcast_ref::<privlogit::error::Error>());
    let ledger_refused = e.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<privlogit::dp::ledger::LedgerError>(),
            Some(privlogit::dp::ledger::LedgerError::Exceeded { .. })
        )
    });
    // A lost party or network in `dl server`/`participant` (their own error type) or as a
    // transport's I/O error anywhere in the chain.
    let transport = e.chain().any(|cause| {
        cause
            .downcast_ref::<privlogit::dl::DlError>()
            .is_some_and(privlogit::dl::DlError::is_network)
            || cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| privlogit_protocols::transport::TransportError::of(io).is_some())
    });
    match library {
        Some(l) if l.is_over_budget() => ExitCode::from(EXIT_OVER_BUDGET),
        Some(l) if l.is_network() => ExitCode::from(EXIT_NETWORK),
        None if transport => ExitCode::from(EXIT_NETWORK),
        _ if ledger_refused => ExitCode::from(EXIT_OVER_BUDGET),
        _ => ExitCode::FAILURE,
    }
}

/// The commands that open no network connection (their work stays in memory): `--latency` and
/// `--bandwidth`, global so that every command that talks over TCP takes them, are hidden from
/// these commands' help and refused on their command lines rather than ignored.
const OFFLINE: [&str; 5] = ["fit", "predict", "simulate", "circuit", "identity"];

/// The command line as parsed: the derived one, where each offline command has hidden flags of
/// its own under the network's names (clap then propagates the global ones past it), so that
/// its help lists none and [`parse`] can refuse them.
fn command() -> clap::Command {
    let offline_flag = |id: &'static str| clap::Arg::new(id).long(id).hide(true).num_args(1);
    OFFLINE.into_iter().fold(Cli::command(), |command, name| {
        command.mut_subcommand(name, |sub| {
            sub.arg(offline_flag("latency"))
                .arg(offline_flag("bandwidth"))
        })
    })
}

/// Parses `args`, refusing the network's flags on an offline command (clap's usage error).
fn parse(args: Vec<std::ffi::OsString>) -> Cli {
    let matches = command().get_matches_from(args);
    if let Some((name, sub)) = matches.subcommand()
        && OFFLINE.contains(&name)
        && let Some(flag) = ["latency", "bandwidth"]
            .into_iter()
            .find(|id| sub.contains_id(id))
    {
        command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!("--{flag} shapes network connections, and `privlogit {name}` opens none"),
            )
            .exit();
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

fn main() -> ExitCode {
    let cli = match stack::expand_study_file(std::env::args_os().collect(), command) {
        Ok(args) => parse(args),
        Err(e) => {
            eprintln!("error: {}", log::message(&e));
            return ExitCode::FAILURE;
        }
    };
    match link_shape(&cli) {
        Ok(s) => shape::set_link_shape(s),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    let result = match cli.command {
        Command::Fit(a) => study_commands::run_fit(a.0),
        Command::Predict(a) => predict_command::run(a),
        Command::Simulate(a) => simulate::run(a),
        Command::Bench(a) => privlogit_cli::bench::run(a).map(|()| Outcome::Success),
        Command::Circuit(a) => circuit_command::run(a),
        Command::Study(a) => study_commands::run_study(a.0),
        Command::Keyholder(a) => study_commands::run_keyholder(a.0),
        Command::Aggregator(a) => study_commands::run_aggregator(a.0),
        Command::Dealer(a) => study_commands::run_dealer(a.0),
        Command::Node(a) => study_commands::run_node(a.0),
        Command::Identity(a) => identity_command::run(a),
        Command::Dp(a) => dp_command::run(a),
        Command::Dl(a) => privlogit_cli::dl_runs::run(a).map(|()| Outcome::Success),
        Command::Stack(a) => stack::run(a),
        Command::Reproduce(a) => privlogit_cli::reproduce::run(a).map(|()| Outcome::Success),
    };
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Diverged) => ExitCode::from(EXIT_DIVERGED),
        Err(e) => {
            log::line(&format!("error: {}", log::message(&e)));
            failure_status(&e)
        }
    }
}
