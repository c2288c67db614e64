//! `privlogit bench dl`: DPSTGD against plain distributed SGD of the same network, side by
//! side: the server and every participant in this process, each participant on its own thread
//! behind a loopback TCP connection of the project's transport. Reports the median wall time per
//! iteration and the bytes per participant per iteration, measured on the server's connections.

use std::path::PathBuf;
use std::time::Instant;

macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!($($arg)*)
    };
}

use crate::experiments::dpstgd::Task;
use anyhow::{Context, Result};
use clap::Args;
use ndarray::Axis;
use privlogit::dl::network::Network;
use privlogit::dl::participant::Settings;
use privlogit::dl::remote::{self, Plan, RemoteParticipant};
use privlogit::dl::server::{self, Participant, Schedule};
use privlogit::dp::mnist::Digits;
use privlogit::protocols::transport;

/// Arguments of `privlogit bench dl`.
#[derive(Debug, Args)]
pub struct DlBenchArgs {
    /// The MNIST digits CSV (digit 8 against the rest, as `dp experiment dpstgd`).
    #[arg(long, value_name = "FILE")]
    data: PathBuf,
    /// Participants.
    #[arg(long, default_value_t = 5)]
    participants: usize,
    /// Iterations per timed run.
    #[arg(long, default_value_t = 50)]
    iterations: u64,
    /// Timed runs of each (alternated; the median is reported).
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// DPSTGD's epsilon.
    #[arg(long, default_value_t = 1.0)]
    epsilon: f64,
    /// Minibatch ratio (both).
    #[arg(long, default_value_t = 0.01)]
    q: f64,
    /// DPSTGD's upload ratio.
    #[arg(long, default_value_t = 0.1)]
    upload_ratio: f64,
}

/// One timed run: seconds per iteration, bytes down and up per participant per iteration.
fn timed(
    parties: &[(ndarray::Array2<f64>, ndarray::Array1<f64>)],
    settings: Settings,
    iterations: u64,
    seed: u64,
) -> Result<(f64, f64, f64)> {
    let network = Network::paper(parties[0].0.ncols())?;
    let learning_rate = if settings.ternary { 0.05 } else { 0.5 };
    let plan = Plan {
        settings,
        iterations,
        hidden: privlogit::dl::network::PAPER_HIDDEN.to_vec(),
        learning_rate,
    };
    std::thread::scope(|scope| -> Result<(f64, f64, f64)> {
        let mut participants: Vec<Box<dyn Participant + Send>> = Vec::new();
        let mut workers = Vec::new();
        for (k, (x, y)) in parties.iter().enumerate() {
            let (mut near, mut far) = transport::loopback_pair().context("loopback")?;
            workers.push(scope.spawn(move || {
                remote::serve(
                    &mut far,
                    &format!("participant {}", k + 1),
                    x.clone(),
                    y.view(),
                    server::generator(Some(seed), k as u64 + 1),
                    &mut |_, _| Ok(()),
                    &mut |_| {},
                )
            }));
            let joined = remote::read_join(&mut near, "participant")?;
            participants.push(Box::new(RemoteParticipant::welcome(
                near, joined, &network, &plan, k,
            )?));
        }
        let before: Vec<(u64, u64)> = participants.iter().map(|p| p.traffic()).collect();
        let initial = network.initial_parameters(&mut server::generator(Some(seed), 0));
        let schedule = Schedule {
            iterations,
            learning_rate,
            settings,
        };
        let started = Instant::now();
        server::train(
            &network,
            initial,
            &mut participants,
            schedule,
            &mut |_, _| Ok(()),
        )?;
        let seconds = started.elapsed().as_secs_f64();
        // Leave out the final parameters (Done: frame header, length, 8 bytes each).
        let done = 26 + 8 + 8 * network.parameter_count() as u64;
        let (mut down, mut up) = (0.0, 0.0);
        for (p, (d0, u0)) in participants.iter().zip(&before) {
            let (d, u) = p.traffic();
            down += (d - d0 - done) as f64;
            up += (u - u0) as f64;
        }
        drop(participants);
        for w in workers {
            w.join().expect("participant thread")?;
        }
        let per = (iterations * parties.len() as u64) as f64;
        Ok((seconds / iterations as f64, down / per, up / per))
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the benchmark.
pub fn run(args: DlBenchArgs) -> Result<()> {
    let digits = Digits::load(&args.data)?;
    let task = Task::digit_against_rest(&digits, 8);
    let k = args.participants.max(1);
    let part = task.x.nrows() / (k + 1);
    let parties: Vec<_> = (0..k)
        .map(|i| {
            let rows: Vec<usize> = (i * part..(i + 1) * part).collect();
            (task.x.select(Axis(0), &rows), task.y.select(Axis(0), &rows))
        })
        .collect();
    let dpstgd = Settings {
        epsilon: Some(args.epsilon),
        q: args.q,
        upload_ratio: args.upload_ratio,
        bound: 0.1,
        ternary: true,
        sparse: None,
    };
    let plain = Settings {
        epsilon: None,
        upload_ratio: 1.0,
        ternary: false,
        sparse: None,
        ..dpstgd
    };
    say!(
        "bench dl: {k} participants of {part} rows, network {:?}, {} iterations x {} runs each, alternated",
        Network::paper(task.x.ncols())?.sizes(),
        args.iterations,
        args.repeats
    );
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for r in 0..args.repeats {
        a.push(timed(&parties, dpstgd, args.iterations, r as u64 + 1)?);
        b.push(timed(&parties, plain, args.iterations, r as u64 + 1)?);
    }
    println!(
        "method,ms_per_iteration,bytes_down_per_participant_iteration,bytes_up_per_participant_iteration"
    );
    for (name, runs) in [("dpstgd", &a), ("plain_sgd", &b)] {
        println!(
            "{name},{:.2},{:.0},{:.0}",
            1e3 * median(runs.iter().map(|r| r.0).collect()),
            median(runs.iter().map(|r| r.1).collect()),
            median(runs.iter().map(|r| r.2).collect())
        );
    }
    let ratio = median(a.iter().zip(&b).map(|(x, y)| x.0 / y.0).collect());
    println!("time ratio dpstgd/plain (median of paired runs): {ratio:.3}");
    Ok(())
}
