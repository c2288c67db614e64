//! `privlogit dp account`: what a sequence of releases spends, and dissertation Table 3.1.

use anyhow::{Result, bail};
use clap::Args;
use privlogit::dl::budget::{self, TABLE_3_1_DELTA};
use privlogit::dp::accounting::{self, EpsDelta, Rdp, Zcdp};

/// Appends a formatted line to a `String`.
macro_rules! put {
    ($out:expr, $($format:tt)*) => {{
        $out.push_str(&format!($($format)*));
        $out.push('\n');
    }};
}

/// Arguments of `privlogit dp account`.
#[derive(Debug, Args)]
pub struct AccountArgs {
    /// Print dissertation Table 3.1 recomputed (Theorem 3.3.2), and the sound per-iteration
    /// bound beside each row.
    #[arg(long = "table-3.1", conflicts_with_all = ["epsilon", "gaussian"])]
    table_3_1: bool,
    /// epsilon of one pure-DP release (a Laplace mechanism, say): composition of --releases.
    #[arg(long, conflicts_with = "gaussian")]
    epsilon: Option<f64>,
    /// Noise multiplier sigma (noise standard deviation over L2 sensitivity) of one Gaussian
    /// release: RDP (and zCDP without sampling) over --releases.
    #[arg(long, value_name = "SIGMA")]
    gaussian: Option<f64>,
    /// Each release runs on a Poisson sample keeping every record with probability Q.
    #[arg(long, value_name = "Q", default_value_t = 1.0)]
    sampling: f64,
    /// How many releases are composed (at least 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    releases: u64,
    /// delta of the (epsilon, delta) answer (advanced composition's delta', or the RDP
    /// conversion's delta). 0 with --epsilon: basic composition only.
    #[arg(long, default_value_t = 1e-5)]
    delta: f64,
}

/// What `dp account` prints for `args`.
pub fn run(args: &AccountArgs) -> Result<String> {
    let mut out = String::new();
    // A sample that keeps nothing releases nothing: refused rather than accounted as free.
    if !(args.sampling > 0.0 && args.sampling <= 1.0) {
        bail!("--sampling {} must lie in (0, 1]", args.sampling);
    }
    let releases = match args.releases {
        1 => "1 release".to_string(),
        n => format!("{n} releases"),
    };
    if args.table_3_1 {
        table_3_1(&mut out);
    } else if let Some(epsilon) = args.epsilon {
        let one = EpsDelta::pure(epsilon)?.amplified(args.sampling)?;
        let basic = one.basic(args.releases);
        // Advanced composition needs delta' > 0; basic composition none.
        let advanced = if args.delta == 0.0 {
            None
        } else {
            Some(one.advanced(args.releases, args.delta)?)
        };
        put!(
            out,
            "{releases} of an epsilon = {epsilon} mechanism on Poisson samples q = {}",
            args.sampling
        );
        put!(
            out,
            "  per release (Lemma 3.3.1):  epsilon {:.6}",
            one.epsilon
        );
        put!(
            out,
            "  basic composition:          epsilon {:.6}, delta 0",
            basic.epsilon
        );
        let best = match advanced {
            Some(advanced) => {
                put!(
                    out,
                    "  advanced composition:       epsilon {:.6}, delta {:e}",
                    advanced.epsilon,
                    advanced.delta
                );
                basic.epsilon.min(advanced.epsilon)
            }
            None => basic.epsilon,
        };
        put!(out, "  best:                       epsilon {best:.6}");
    } else if let Some(sigma) = args.gaussian {
        let orders = accounting::default_orders();
        let rdp = Rdp::subsampled_gaussian(args.sampling, sigma, &orders)?.repeated(args.releases);
        let (epsilon, order) = rdp.epsilon(args.delta)?;
        put!(
            out,
            "{releases} of a Gaussian mechanism, noise multiplier {sigma}, on Poisson samples q = {}",
            args.sampling
        );
        put!(
            out,
            "  RDP (integer orders 2..1024): epsilon {epsilon:.6} at delta {:e} (order {order})",
            args.delta
        );
        if args.sampling == 1.0 {
            let z = Zcdp::gaussian(sigma)?.repeated(args.releases);
            put!(
                out,
                "  zCDP: rho {:.6}, epsilon {:.6} at delta {:e} (every real order)",
                z.rho,
                z.epsilon(args.delta)?,
                args.delta
            );
        }
    } else {
        bail!("say what to account: --table-3.1, --epsilon E or --gaussian SIGMA (see --help)");
    }
    Ok(out)
}

fn table_3_1(out: &mut String) {
    put!(
        out,
        "Dissertation Table 3.1: privacy budget of one iteration of Algorithm 2 (Theorem 3.3.2;"
    );
    put!(
        out,
        "advanced composition at delta = 2^-30). Thesis as printed in [brackets]."
    );
    put!(out, "");
    put!(
        out,
        "{:>5} {:>5} {:>6} | {:>20} {:>18} | {:>12} {:>20}",
        "eps",
        "q",
        "n",
        "basic [thesis]",
        "advanced [thesis]",
        "sound basic",
        "sound advanced"
    );
    for row in budget::table_3_1() {
        let (basic_places, adv_places) = (places(row.printed.0), places(row.printed.1));
        let basic = format!("{:.*}", basic_places, row.basic);
        let advanced = format!("{:.*}", adv_places, row.advanced);
        let mark = |ours: &str, printed: &str| if ours == printed { " " } else { "*" };
        put!(
            out,
            "{:>5} {:>5} {:>6} | {:>9} [{:>7}]{} {:>8} [{:>6}]{} | {:>12.2} {:>10.2} (q 2^-30)",
            row.epsilon,
            row.q,
            row.n,
            basic,
            row.printed.0,
            mark(&basic, row.printed.0),
            advanced,
            row.printed.1,
            mark(&advanced, row.printed.1),
            row.sound_basic,
            row.sound_advanced.epsilon,
        );
    }
    let delta = TABLE_3_1_DELTA;
    put!(out, "");
    put!(
        out,
        "* the thesis prints another figure: 1.88, 18.50, 3.39, 91.35 and 13.97 are the exact values"
    );
    put!(
        out,
        "  truncated, not rounded (1.8884, 18.5064, 3.3951, 91.3582, 13.9762); 14312.4 is 2 n eps ="
    );
    put!(
        out,
        "  14312.0 with the .4 of the row above; 9830.1 is 9830.035 (no rounding gives .1)."
    );
    put!(out, "");
    put!(
        out,
        "Sound bound (what `dl` charges): an iteration releases 2n Report-Noisy-Top-N scores and"
    );
    put!(
        out,
        "the n signs of eq. (3.6), each a Laplace mechanism of eps that Theorem 3.3.2 leaves out;"
    );
    put!(
        out,
        "all 3n read the same minibatch, so the sample is drawn once and amplification (Lemma"
    );
    put!(
        out,
        "3.3.1) applies once, to their composition: sound basic = ln(1 + q (e^(3 n eps) - 1));"
    );
    put!(
        out,
        "sound advanced = the amplified advanced composition (3n releases of eps, delta' = 2^-30"
    );
    put!(
        out,
        "= {delta:e}), with delta q 2^-30. The table amplifies every release as if each drew its"
    );
    put!(
        out,
        "own sample, which holds only for independent samples, and leaves the signs out: its"
    );
    put!(out, "figures are not privacy bounds.");
}

/// Decimal places of a printed number.
fn places(printed: &str) -> usize {
    printed.split_once('.').map_or(0, |(_, f)| f.len())
}
