//! The options of a differentially private fit (`privlogit dp fit`, Python's
//! `privlogit.dp.fit`) in the settings registry: each is one [`Key`] whose name, kind, default
//! and help the command line's flags and Python's keywords are made from, and whose values
//! [`crate::jobs::dp_fit::Request::set`] checks. Which methods take an option is the method's
//! business ([`crate::dp::release::Method::takes`]); what it does is the code that reads it.
//!
//! The method, the target's epsilon and the files (data, sources, public set, ledger, output)
//! are not options: every DP fit has them, as arguments of its own.

use super::setting_key::{Key, Kind, Preset, Reader, key, many};
use crate::dp::release::{
    DEFAULT_ETA, DEFAULT_HIGH_LAMBDA, DEFAULT_K, DEFAULT_LAMBDA, DEFAULT_LAMBDA_IW,
    DEFAULT_LOW_FRACTION, DEFAULT_PRIOR_SD_FLOOR,
};

/// The names of PST-S's and PST-F's combiners ([`crate::jobs::dp_fit::CombinerChoice`]).
pub const COMBINERS: &[&str] = &["stacking", "majority-vote", "weighted-vote"];

/// An option of `dp fit`: a registry key read by DP fits only, for each party itself, with
/// its own default.
const fn option(
    name: &'static str,
    kind: Kind,
    value_name: &'static str,
    preset: Preset,
    help: &'static str,
) -> Key {
    let mut k = key(name, kind, value_name, &[Reader::DpFit], false, help);
    k.preset = preset;
    k
}

/// Every option of a DP fit.
pub const DP_KEYS: &[Key] = &[
    option(
        "source_epsilon",
        Kind::Number,
        "E",
        Preset::Unset,
        "Budget spent on each source data set [default: setting `epsilon`].",
    ),
    option(
        "lambda",
        Kind::Number,
        "L",
        Preset::Number(DEFAULT_LAMBDA),
        "Penalty lambda of eq. (1) (the low level's, the target's).",
    ),
    option(
        "source_lambda",
        Kind::Number,
        "L",
        Preset::Unset,
        "Penalty of the source models [default: setting `lambda`].",
    ),
    option(
        "high_lambda",
        Kind::Number,
        "L",
        Preset::Number(DEFAULT_HIGH_LAMBDA),
        "Penalty of the high-level (level-1) model.",
    ),
    option(
        "eta",
        Kind::Number,
        "ETA",
        Preset::Number(DEFAULT_ETA),
        "eta of the transfer regulariser eta/2 ||w||^2 + (1 - eta)/2 ||w - w_src||^2 (simcomb, \
         pptl-fs; pst-h fixes it at 0).",
    ),
    option(
        "k",
        Kind::Count,
        "K",
        Preset::Count(DEFAULT_K as u64),
        "Number of groups K (feature groups or row subsets).",
    ),
    many(option(
        "group_importance",
        Kind::Number,
        "Q,...",
        Preset::Unset,
        "Importance q_k of each group of consecutive columns (comma-separated, sums to 1).",
    )),
    many(option(
        "feature_scores",
        Kind::Number,
        "S,...",
        Preset::Unset,
        "A public importance score per feature (comma-separated): features sorted by score \
         into K groups, q_k by eq. (6). Without this or setting `group_importance` the split \
         is random, q = 1/K.",
    )),
    option(
        "combiner",
        Kind::Choice(COMBINERS),
        "COMBINER",
        Preset::Choice("stacking"),
        "How the low level is combined (pst-s, pst-f; pst-h and pptl-fs always stack): a PLR \
         on the held-out rows' meta features (stacking), the share of low-level models \
         predicting 1 (majority-vote), or that share weighted by importance (weighted-vote).",
    ),
    option(
        "low_fraction",
        Kind::Number,
        "F",
        Preset::Number(DEFAULT_LOW_FRACTION),
        "Share of rows used by the low level (the rest trains the combiner).",
    ),
    option(
        "row_bound",
        Kind::Number,
        "R",
        Preset::Unset,
        "Scale rows by this public norm bound (clipping longer rows) instead of normalising \
         each.",
    ),
    option(
        "plr_as_printed",
        Kind::Switch,
        "",
        Preset::Unset,
        "PLR's eps' and Delta exactly as Algorithm 1 prints them (switch at eps' = 0, with the \
         cliff the book's Limitations describe) instead of the least Delta that keeps \
         eps' >= 0.9 eps.",
    ),
    option(
        "noise_share",
        Kind::Number,
        "S",
        Preset::Number(crate::dp::plr::NOISE_SHARE),
        "The least share of epsilon PLR's noise is drawn with, in (0, 1), for every PLR on \
         whole rows: the extra penalty Delta pays for the rest (a larger share, less noise \
         and more shrinkage; 0.5 is the stacking paper's switch at eps/2).",
    ),
    option(
        "lambda_iw",
        Kind::Number,
        "L",
        Preset::Number(DEFAULT_LAMBDA_IW),
        "DPHTL: DPIW's penalty lambda_IW (Algorithm 5).",
    ),
    option(
        "prior_sd_floor",
        Kind::Number,
        "SD",
        Preset::Number(DEFAULT_PRIOR_SD_FLOOR),
        "DPHTL: the floor of the prior's standard deviations (eq. 4.2).",
    ),
    option(
        "seed",
        Kind::Count,
        "SEED",
        Preset::Unset,
        "Seeded noise, for reproducible experiments only (the output says so); unset, the \
         noise comes from the operating system's CSPRNG.",
    ),
];

/// The DP option named `name`.
pub fn find(name: &str) -> Option<&'static Key> {
    DP_KEYS.iter().find(|k| k.name == name)
}
