//! Table 5.1 as CSV and markdown: our runs beside the paper's numbers, with the ratios.

use std::fmt::Write as _;

use super::paper::{Row, Source};
use super::record::{Record, Run};

/// The records of one row, by run.
pub struct RowResults<'a> {
    pub row: &'a Row,
    pub records: Vec<Record>,
}

impl RowResults<'_> {
    fn get(&self, run: Run) -> Option<&Record> {
        self.records.iter().find(|r| r.run == run)
    }

    fn size(&self) -> Option<(usize, usize)> {
        self.records.first().map(|r| (r.rows, r.features))
    }
}

fn seconds(r: Option<&Record>) -> Option<f64> {
    r.map(|r| r.seconds)
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or(String::new(), |v| format!("{v:.digits$}"))
}

/// Paper seconds over ours: how many times faster we are.
fn speedup(paper: Option<f64>, ours: Option<f64>) -> Option<f64> {
    Some(paper? / ours?)
}

/// The CSV (one line per row, empty cells where a run is missing or the paper has N/A).
pub fn csv(results: &[RowResults<'_>]) -> String {
    let mut s = String::from(
        "data_set,paper_data_set,rows,features,newton_iterations,privlogit_iterations,accelerated_iterations,\
paper_newton_iterations,paper_privlogit_iterations,secure_newton_seconds,secure_hessian_seconds,\
secure_local_seconds,paper_newton_seconds,paper_hessian_seconds,paper_local_seconds,\
newton_speedup_vs_paper,hessian_speedup_vs_paper,local_speedup_vs_paper,plaintext_newton_seconds,\
plaintext_privlogit_seconds,max_abs_diff_secure_vs_plaintext,note\n",
    );
    for r in results {
        let paper = r.row.paper.map(|(_, p)| p);
        let (rows, features) = r.size().map_or((String::new(), String::new()), |(n, p)| {
            (n.to_string(), p.to_string())
        });
        let iterations = |run| {
            r.get(run)
                .map_or(String::new(), |x| x.iterations.to_string())
        };
        let secure = |run| seconds(r.get(run));
        let diff = [Run::SecureNewton, Run::SecureHessian, Run::SecureLocal]
            .iter()
            .filter_map(|&run| r.get(run).and_then(|x| x.max_abs_diff_to_plaintext))
            .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.max(d))));
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"",
            r.row.name,
            r.row.paper.map_or("", |(n, _)| n),
            rows,
            features,
            iterations(Run::PlaintextNewton),
            iterations(Run::PlaintextPrivlogit),
            iterations(Run::PlaintextAccelerated),
            paper.map_or(String::new(), |p| p.newton_iterations.to_string()),
            paper.map_or(String::new(), |p| p.privlogit_iterations.to_string()),
            fmt_opt(secure(Run::SecureNewton), 2),
            fmt_opt(secure(Run::SecureHessian), 2),
            fmt_opt(secure(Run::SecureLocal), 2),
            fmt_opt(paper.and_then(|p| p.newton_seconds), 0),
            fmt_opt(paper.and_then(|p| p.hessian_seconds), 0),
            fmt_opt(paper.and_then(|p| p.local_seconds), 0),
            fmt_opt(
                speedup(
                    paper.and_then(|p| p.newton_seconds),
                    secure(Run::SecureNewton)
                ),
                2
            ),
            fmt_opt(
                speedup(
                    paper.and_then(|p| p.hessian_seconds),
                    secure(Run::SecureHessian)
                ),
                2
            ),
            fmt_opt(
                speedup(
                    paper.and_then(|p| p.local_seconds),
                    secure(Run::SecureLocal)
                ),
                2
            ),
            fmt_opt(seconds(r.get(Run::PlaintextNewton)), 2),
            fmt_opt(seconds(r.get(Run::PlaintextPrivlogit)), 2),
            diff.map_or(String::new(), |d| format!("{d:.1e}")),
            r.row.note.unwrap_or("").replace('"', "'"),
        );
    }
    s
}

/// A cell "ours (paper)", with "-" for a run not done and "N/A" where the paper has none;
/// just ours on a row the paper does not have.
fn cell(row: &Row, ours: Option<String>, paper: Option<String>) -> String {
    let ours = ours.unwrap_or_else(|| "-".into());
    if row.paper.is_none() {
        return ours;
    }
    format!("{ours} ({})", paper.unwrap_or_else(|| "N/A".into()))
}

fn thousands(v: f64) -> String {
    let whole = v.round() as u64;
    let digits = whole.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn secs(v: f64) -> String {
    if v < 100.0 {
        format!("{v:.1}")
    } else {
        thousands(v)
    }
}

/// The markdown table: each cell is ours with the paper's in brackets, then our speed-up over
/// the paper for each secure protocol.
pub fn markdown(results: &[RowResults<'_>], machine: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| data set | N x p | iterations Newton | iterations PrivLogit | accelerated | Newton s | Hessian s | Local s | speed-up vs paper (Newton / Hessian / Local) | Local s per iteration (speed-up) | max diff |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|");
    for r in results {
        let paper = r.row.paper.map(|(_, p)| p);
        if r.row.source == Source::Unavailable {
            let p = paper.expect("unavailable rows are the paper's");
            let _ = writeln!(
                s,
                "| {} | not available | - ({}) | - ({}) | - | - ({}) | - ({}) | - ({}) | | | |",
                r.row.name,
                p.newton_iterations,
                p.privlogit_iterations,
                p.newton_seconds.map_or("N/A".into(), thousands),
                p.hessian_seconds.map_or("N/A".into(), thousands),
                p.local_seconds.map_or("N/A".into(), thousands),
            );
            continue;
        }
        let iterations = |run| r.get(run).map(|x| x.iterations.to_string());
        let secure = |run| seconds(r.get(run));
        let speedups = [
            (
                paper.and_then(|p| p.newton_seconds),
                secure(Run::SecureNewton),
            ),
            (
                paper.and_then(|p| p.hessian_seconds),
                secure(Run::SecureHessian),
            ),
            (
                paper.and_then(|p| p.local_seconds),
                secure(Run::SecureLocal),
            ),
        ]
        .map(|(p, o)| speedup(p, o).map_or("-".to_string(), |v| format!("{v:.1}x")))
        .join(" / ");
        let diff = [Run::SecureNewton, Run::SecureHessian, Run::SecureLocal]
            .iter()
            .filter_map(|&run| r.get(run).and_then(|x| x.max_abs_diff_to_plaintext))
            .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.max(d))));
        // Our iteration counts differ from the paper's (the book's `simulate` guide), so the
        // fair per-protocol comparison is also made per iteration.
        let per_iteration = r
            .get(Run::SecureLocal)
            .map(|x| x.seconds / x.iterations.max(1) as f64);
        let paper_per_iteration =
            paper.and_then(|p| Some(p.local_seconds? / p.privlogit_iterations.max(1) as f64));
        let per_iteration = match (per_iteration, paper_per_iteration) {
            (Some(o), Some(p)) => format!("{o:.2} ({p:.1}) {:.0}x", p / o),
            (Some(o), None) => format!("{o:.2}"),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.row.name,
            r.size().map_or("-".into(), |(n, p)| format!(
                "{} x {p}",
                thousands(n as f64)
            )),
            cell(
                r.row,
                iterations(Run::PlaintextNewton),
                paper.map(|p| p.newton_iterations.to_string())
            ),
            cell(
                r.row,
                iterations(Run::PlaintextPrivlogit),
                paper.map(|p| p.privlogit_iterations.to_string())
            ),
            iterations(Run::PlaintextAccelerated).unwrap_or_else(|| "-".into()),
            cell(
                r.row,
                secure(Run::SecureNewton).map(secs),
                paper.and_then(|p| p.newton_seconds).map(thousands)
            ),
            cell(
                r.row,
                secure(Run::SecureHessian).map(secs),
                paper.and_then(|p| p.hessian_seconds).map(thousands)
            ),
            cell(
                r.row,
                secure(Run::SecureLocal).map(secs),
                paper.and_then(|p| p.local_seconds).map(thousands)
            ),
            speedups,
            per_iteration,
            diff.map_or("-".into(), |d| format!("{d:.1e}")),
        );
    }
    let _ = writeln!(
        s,
        "\nEach cell: ours (the paper's). Seconds are whole secure studies end to end, all parties in \
one process on {machine}, 5 Nodes, 2048-bit Paillier, masked linear algebra; \"-\" is a run not \
done yet, N/A is the paper's. Max diff: largest coefficient difference between a secure run and \
the plaintext run of the same optimiser."
    );
    for r in results.iter().filter(|r| r.row.note.is_some()) {
        let _ = writeln!(s, "- {}: {}", r.row.name, r.row.note.unwrap_or_default());
    }
    s
}
