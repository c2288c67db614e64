//! `privlogit dp experiment dpstgd`: dissertation Figures 3.3-3.6 on the MNIST substitute
//! (`crate::experiments::dpstgd`), as CSVs and SVG/PNG figures in `results/dpstgd/`.

use std::path::Path;
use std::time::Instant;

macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!($($arg)*)
    };
}

use crate::experiments::dpstgd::{self as experiment, Point, Task, Training};
use crate::figures::{Chart, Corner, Mark, Series};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use privlogit::dp::mnist::Digits;
use privlogit::output;

/// The digit that is the positive class.
const POSITIVE: u8 = 8;

/// Runs the experiment on the digits at `data` into `out_dir`.
pub fn run(data: &Path, out_dir: &Path, repeats: usize, seed: u64) -> Result<()> {
    let digits = Digits::load(data)?;
    let task = Task::digit_against_rest(&digits, POSITIVE);
    let training = Training::default();
    let runs = experiment::points().len() * repeats;
    say!(
        "DPSTGD experiment: digit {POSITIVE} against the rest ({} of {} rows positive), {} runs of {} iterations (seeded: reproducible, not for release)",
        task.y.sum(),
        task.y.len(),
        runs,
        training.iterations
    );
    let bar = ProgressBar::new(runs as u64).with_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} runs, eta {eta}")
            .expect("template")
            .progress_chars("=> "),
    );
    let started = Instant::now();
    let points = experiment::run(&task, training, repeats, seed, &|| bar.inc(1))?;
    bar.finish_and_clear();
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut summary = String::from(
        "figure,participants,epsilon,q,upload_ratio,mean_auc,sd_auc,repeats,epsilon_total_sound,epsilon_total_dissertation\n",
    );
    let mut each = String::from("figure,participants,epsilon,q,upload_ratio,repeat,seed,auc\n");
    for p in &points {
        let eps = p.epsilon.map_or("inf".to_string(), |e| e.to_string());
        let (sound, diss) = p.spend.map_or(("inf".into(), "inf".into()), |(s, d)| {
            (format!("{s:.6e}"), format!("{d:.6e}"))
        });
        summary += &format!(
            "{},{},{eps},{},{},{:.4},{:.4},{},{sound},{diss}\n",
            p.figure,
            p.participants,
            p.q,
            p.upload_ratio,
            p.mean(),
            p.sd(),
            p.aucs.len()
        );
        for (r, a) in p.aucs.iter().enumerate() {
            each += &format!(
                "{},{},{eps},{},{},{r},{},{a:.6}\n",
                p.figure,
                p.participants,
                p.q,
                p.upload_ratio,
                seed + r as u64
            );
        }
    }
    let write = |name: &str, text: &str| {
        let path = out_dir.join(name);
        output::write_text(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write("dpstgd.csv", &summary)?;
    write("dpstgd_repeats.csv", &each)?;
    for (figure, chart) in charts(&points, repeats, training) {
        chart.save(&out_dir.join(figure))?;
    }
    print!("{summary}");
    say!(
        "wrote {}/dpstgd.csv, dpstgd_repeats.csv and fig3_3 ... fig3_6 (.svg, .png) in {:.0} s",
        out_dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A figure's file stem, caption, x-axis title and x value of a point.
type FigureSpec = (&'static str, &'static str, &'static str, fn(&Point) -> f64);

/// One chart per figure: DPSTGD's mean test AUC (+-1 sd) against the figure's variable, and
/// the non-private network at the same settings.
fn charts(points: &[Point], repeats: usize, training: Training) -> Vec<(&'static str, Chart)> {
    let spec: [FigureSpec; 4] = [
        (
            "fig3_3",
            "5 participants, q = 0.01, 10 % uploaded",
            "epsilon (Algorithm 2)",
            |p| p.epsilon.unwrap_or(f64::NAN),
        ),
        (
            "fig3_4",
            "30 participants, q = 0.01, 10 % uploaded",
            "epsilon (Algorithm 2)",
            |p| p.epsilon.unwrap_or(f64::NAN),
        ),
        (
            "fig3_5",
            "5 participants, epsilon = 1, 10 % uploaded",
            "minibatch ratio q",
            |p| p.q,
        ),
        (
            "fig3_6",
            "5 participants, epsilon = 1, q = 0.01",
            "share of gradients uploaded",
            |p| p.upload_ratio,
        ),
    ];
    spec.iter()
        .map(|&(figure, caption, x_title, x_of)| {
            let private: Vec<&Point> = points
                .iter()
                .filter(|p| p.figure == figure && p.epsilon.is_some())
                .collect();
            let plain: Vec<&Point> = points
                .iter()
                .filter(|p| p.figure == figure && p.epsilon.is_none())
                .collect();
            let labels: Vec<String> = private.iter().map(|p| format!("{}", x_of(p))).collect();
            let dpstgd = Series {
                name: "DPSTGD".into(),
                points: private
                    .iter()
                    .enumerate()
                    .map(|(i, p)| (i as f64, p.mean()))
                    .collect(),
                errors: Some(private.iter().map(|p| p.sd()).collect()),
                mark: Mark::Line,
            };
            // The baseline at each x: the non-private point with the same q (Figure 3.5), or
            // the one non-private point.
            let baseline = Series {
                name: "non-private network".into(),
                points: private
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        let b = plain
                            .iter()
                            .find(|b| b.q == p.q)
                            .or(plain.first())
                            .expect("a baseline");
                        (i as f64, b.mean())
                    })
                    .collect(),
                errors: None,
                mark: Mark::Line,
            };
            let chart = Chart {
                title: format!(
                    "Figure {}: test AUC, {caption} (MNIST 8 vs rest, T = {}, {repeats} repeats)",
                    &figure[3..].replace('_', "."),
                    training.iterations
                ),
                x_title: x_title.into(),
                y_title: "test AUC".into(),
                x_labels: Some(labels),
                log_y: false,
                y_limits: Some((0.3, 1.0)),
                identity_line: false,
                legend: Corner::LowerRight,
                series: vec![dpstgd, baseline],
            };
            (figure, chart)
        })
        .collect()
}
