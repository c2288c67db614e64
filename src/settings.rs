//! The settings of fits and secure studies, defined once: every key (the study file's key, the
//! command line's long flag with `_` as `-`, Python's keyword), who reads it, its help, its one
//! default ([`Spec::default`]) and how its value is read, from a study file, a command line or
//! Python alike. The command line builds its flags from [`KEYS`] and hands over only what the
//! user gave; [`Spec`] applies a study file, then those, and the plans of
//! [`crate::study`] and [`crate::fit`] validate the result.

pub mod dp_keys;
pub mod words;

use std::collections::BTreeSet;
use std::path::PathBuf;

use privlogit_circuits::fixed_format::FixedFormat;
use privlogit_protocols::Optimizer;
use privlogit_protocols::optimizer::DEFAULT_ANDERSON_MEMORY;
use privlogit_protocols::secure::DEFAULT_FORMAT;
use privlogit_protocols::secure::aggregator::Protocol;
use privlogit_protocols::secure::solver::LinearAlgebra;
use toml::Value;

use crate::error::Error;

/// Who reads a setting: the plaintext fit or one of a secure study's roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reader {
    /// `privlogit fit` (plaintext, every party in one process).
    Fit,
    /// `privlogit study` (every role of a secure study in one process).
    Study,
    /// The key holder of a study between organizations.
    KeyHolder,
    /// The aggregator of a study between organizations.
    Aggregator,
    /// A Node of a study between organizations.
    Node,
    /// `privlogit dp fit` and Python's `privlogit.dp.fit` (a differentially private fit's
    /// options, [`dp_keys::DP_KEYS`]).
    DpFit,
}

impl Reader {
    /// The command that plays this part.
    pub fn command(self) -> &'static str {
        match self {
            Reader::Fit => "fit",
            Reader::Study => "study",
            Reader::KeyHolder => "keyholder",
            Reader::Aggregator => "aggregator",
            Reader::Node => "node",
            Reader::DpFit => "dp fit",
        }
    }

    /// A process that plays one part of a study between organizations (not the one-process
    /// `study`, nor `fit`).
    pub fn is_role(self) -> bool {
        matches!(self, Reader::KeyHolder | Reader::Aggregator | Reader::Node)
    }

    /// The roles of a secure study (every reader but the plaintext fit).
    pub const STUDY_ROLES: [Reader; 4] = [
        Reader::Study,
        Reader::KeyHolder,
        Reader::Aggregator,
        Reader::Node,
    ];
}

/// What a setting's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// On or off (a flag without a value on the command line).
    Switch,
    /// A real number (negative ones too, so that their check can name them).
    Number,
    /// A whole number.
    Count,
    /// Text (a column name, an address, a fixed-point format).
    Text,
    /// A file or directory.
    Path,
    /// One of the given names.
    Choice(&'static [&'static str]),
}

/// One setting.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The study file's key (`gradient_tol`); the long flag is the same with `-`.
    pub name: &'static str,
    /// Its kind.
    pub kind: Kind,
    /// The value's placeholder in help (`G`, `FILE`).
    pub value_name: &'static str,
    /// What it does, in a sentence or two.
    pub help: &'static str,
    /// Who reads it.
    pub readers: &'static [Reader],
    /// Part of a study's plan, which every party of a study agrees on (and which its id covers);
    /// otherwise a party sets it for itself (its files, identity, output, seeds).
    pub shared: bool,
    /// May be given several times (each adds to the list).
    pub many: bool,
    /// Left out of help (kept for older study files and scripts).
    pub hidden: bool,
    /// Its default.
    pub preset: Preset,
}

/// A setting's default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Preset {
    /// The study's and the fit's: [`Spec::default`] holds it.
    Spec,
    /// None: unset unless given (its use says what unset means).
    Unset,
    /// A number.
    Number(f64),
    /// A whole number.
    Count(u64),
    /// One of the key's choices.
    Choice(&'static str),
}

impl Preset {
    /// The default as a setting's value (`None` when unset or held by [`Spec`]).
    pub fn value(self) -> Option<Value> {
        match self {
            Preset::Spec | Preset::Unset => None,
            Preset::Number(x) => Some(Value::Float(x)),
            Preset::Count(n) => Some(Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))),
            Preset::Choice(c) => Some(Value::String(c.to_string())),
        }
    }
}

use Reader::{Aggregator as A, Fit as F, KeyHolder as K, Node as N, Study as S};

pub(super) const fn key(
    name: &'static str,
    kind: Kind,
    value_name: &'static str,
    readers: &'static [Reader],
    shared: bool,
    help: &'static str,
) -> Key {
    Key {
        name,
        kind,
        value_name,
        help,
        readers,
        shared,
        many: false,
        hidden: false,
        preset: Preset::Spec,
    }
}

pub(super) const fn many(mut k: Key) -> Key {
    k.many = true;
    k
}

const fn hidden(mut k: Key) -> Key {
    k.hidden = true;
    k
}

/// The names of [`Family`](privlogit_protocols::Family) values.
pub const FAMILIES: &[&str] = &["binomial", "gaussian", "poisson"];
/// The names of [`Protocol`]s.
pub const PROTOCOLS: &[&str] = &["auto", "local", "hessian", "newton"];
/// The names of [`Optimizer`]s.
pub const OPTIMIZERS: &[&str] = &["privlogit-accel", "privlogit", "newton"];
/// The names of [`LinearAlgebra`] methods.
pub const LINEAR_ALGEBRA: &[&str] = &["masked", "circuit"];

/// The settings that make a run repeat bit for bit: the aggregator's masks and the servers'
/// noise shares. Whoever knows them and one server's view unmasks the study or its noise, so a
/// role process between organizations refuses them: from a study file (which every party
/// holds) always, from its own command line unless [`TEST_SEEDS`] is set to 1.
pub const SEEDS: &[&str] = &["seed", "noise_seed"];

/// The environment variable that lets a role process take a seed on its command line, for the
/// tests that compare a deployed study with a one-process run bit for bit. Never in a study.
pub const TEST_SEEDS: &str = "PRIVLOGIT_INSECURE_TEST_SEEDS";

/// Refuses a seed (one of [`SEEDS`]) where `reader` is a role process: named `origin`, with
/// the reason.
pub fn refuse_role_seed(reader: Reader, name: &str, origin: Origin<'_>) -> Result<(), Error> {
    if !reader.is_role() || !SEEDS.contains(&name) {
        return Ok(());
    }
    let allowed =
        matches!(origin, Origin::Given) && std::env::var(TEST_SEEDS).is_ok_and(|v| v == "1");
    if allowed {
        return Ok(());
    }
    let what = if name == "seed" {
        "the aggregator's masks: with it the key holder regenerates them and unmasks everything"
    } else {
        "both servers' noise shares: with it each server knows the other's noise"
    };
    Err(Error::Setting {
        origin: origin_text(origin, name),
        why: format!(
            "refused by `{}`: it would seed {what}. Seeds are for one-process runs \
             (`privlogit study`) and tests only",
            reader.command()
        ),
    })
}

/// Every setting of `fit`, `study`, `keyholder`, `aggregator` and `node`.
pub const KEYS: &[Key] = &[
    // What a party reads and writes.
    many(key(
        "party",
        Kind::Path,
        "FILE",
        &[F, S, N],
        false,
        "A data file (CSV, privlogit binary table or Parquet), one per Node; repeat the flag (a Node \
         takes one). Each has a header row and the 0/1 label column.",
    )),
    key(
        "label",
        Kind::Text,
        "COLUMN",
        &[F, S, N, A],
        false,
        "Name of the label column (0/1 for the binomial family, counts for Poisson, numbers for \
         the Gaussian). The aggregator, which sees no rows, only names it in the result.",
    ),
    key(
        "data",
        Kind::Path,
        "FILE",
        &[F],
        false,
        "One file holding every party's rows (see setting `split` and setting `group_by`), instead of setting `party`.",
    ),
    key(
        "split",
        Kind::Count,
        "K",
        &[F],
        false,
        "Split setting `data` into K parties of contiguous rows.",
    ),
    key(
        "shuffle_seed",
        Kind::Count,
        "SEED",
        &[F],
        false,
        "Shuffle setting `data`'s rows with this seed before setting `split`.",
    ),
    key(
        "group_by",
        Kind::Text,
        "COLUMN",
        &[F],
        false,
        "Make one party per value of this column of setting `data`.",
    ),
    many(key(
        "exclude",
        Kind::Text,
        "COLUMN",
        &[F, S, N],
        false,
        "Leave this column out; repeat for several.",
    )),
    // The model and how it is fitted (a study's plan).
    key(
        "protocol",
        Kind::Choice(PROTOCOLS),
        "NAME",
        &[S, A],
        true,
        "The secure protocol (dissertation chapter 5): local (PrivLogit-Local: the Nodes multiply \
         the encrypted inverse of the Hessian bound into their gradients), hessian \
         (PrivLogit-Hessian: the Center keeps the bound's inverse shared between the two servers \
         and solves each step), newton (secure distributed Newton, the baseline; implies \
         setting `optimizer` newton), or auto: `study` (every party in this process) runs hessian, \
         whose masked solve is cheaper there than Local's encrypted step at every Node, and \
         the roles run local, whose rounds need no masked product between the servers (a \
         differentially private study, or the circuit method, runs local; the newton optimizer \
         runs newton). The choice is printed and recorded as the result's `protocol`.",
    ),
    key(
        "optimizer",
        Kind::Choice(OPTIMIZERS),
        "NAME",
        &[F, S, A],
        true,
        "privlogit-accel (PrivLogit with safeguarded Anderson acceleration), privlogit (the \
         paper's PrivLogit, eq. 5.4-5.6) or newton (eq. 2.11; in a study, the newton protocol).",
    ),
    hidden(key(
        "accelerate",
        Kind::Switch,
        "",
        &[S, A],
        true,
        "The same as setting `optimizer` privlogit-accel (older study files).",
    )),
    key(
        "memory",
        Kind::Count,
        "M",
        &[F, S, A],
        true,
        "Anderson memory of privlogit-accel (past iterate differences it extrapolates from).",
    ),
    key(
        "no_newton_finish",
        Kind::Switch,
        "",
        &[F, S, A],
        true,
        "Keep privlogit-accel on the bound throughout: no Newton finish (by default, after as \
         many iterations as a secure Newton system costs in rounds, about 7 + 0.4 p, with the \
         step between 1e-6 and 2e-3, it forms Newton systems at the current coefficients and \
         iterates with them to the optimum).",
    ),
    // Disclosure controls (DataSHIELD's nfilter defaults), checked by each Node on its own
    // counts before it sends anything.
    key(
        "min_rows",
        Kind::Count,
        "N",
        &[S, A, N],
        true,
        "Fewest training rows (and held-out rows, when the study evaluates) a Node takes part \
         with; DataSHIELD's nfilter.subset.",
    ),
    key(
        "max_parameter_share",
        Kind::Number,
        "SHARE",
        &[S, A, N],
        true,
        "Most coefficients per training row of a Node (p <= SHARE x N_k, the intercept counted); \
         DataSHIELD's nfilter.glm.",
    ),
    key(
        "min_cell",
        Kind::Count,
        "N",
        &[S, A, N],
        true,
        "Fewest rows of a class at a Node (positives and negatives, 0 allowed) and in a \
         published cell (a calibration bin; each class behind the AUC); DataSHIELD's nfilter.tab.",
    ),
    key(
        "two_node_disclosure",
        Kind::Switch,
        "",
        &[S, A, N],
        true,
        "With two Nodes, publish more than the coefficients (standardisation, standard errors, \
         likelihoods, held-out figures), each of which tells a Node the other's sums.",
    ),
    key(
        "standardize",
        Kind::Switch,
        "",
        &[F, S, A],
        true,
        "Z-score the features with their pooled mean and standard deviation (ddof 0); in a study \
         these are computed under encryption and become public. The model is reported in the \
         data's own units as well.",
    ),
    key(
        "no_intercept",
        Kind::Switch,
        "",
        &[F, S, A],
        true,
        "Do not add the intercept column.",
    ),
    key(
        "free_intercept",
        Kind::Switch,
        "",
        &[F],
        false,
        "Leave the intercept out of the penalty, as scikit-learn's LogisticRegression and R's glm \
         fit it (the dissertation's eq. 2.10 penalises it).",
    ),
    key(
        "lambda",
        Kind::Number,
        "L",
        &[F, S, A],
        true,
        "l2 penalty lambda of eq. 2.10 (every coefficient, the intercept too unless \
         setting `free_intercept`).",
    ),
    key(
        "penalty_centre",
        Kind::Path,
        "FILE",
        &[F, S, A],
        true,
        "Centre the penalty at this public vector, lambda/2 ||beta - c||^2 (hypothesis \
         transfer): a file with one coefficient per line in the model's order (intercept first, \
         standardised coordinates with setting `standardize`).",
    ),
    key(
        "tol",
        Kind::Number,
        "T",
        &[F, S, A],
        true,
        "Also stop when the relative change of the penalised log-likelihood falls below T, the \
         dissertation's rule (section 5.4: 1e-6); 0 turns it off. It can stop PrivLogit far from \
         the optimum, so the default relies on the gradient.",
    ),
    key(
        "gradient_tol",
        Kind::Number,
        "G",
        &[F, S, A],
        true,
        "Stop when the Euclidean norm of the penalised gradient falls below G (the coefficients \
         are then within G / lambda of the optimum); 0 turns it off. In a study the norm is \
         formed in masked arithmetic and compared in a circuit: one revealed bit.",
    ),
    key(
        "max_iter",
        Kind::Count,
        "N",
        &[F, S, A],
        true,
        "Give up after N iterations (a warning, exit status 0).",
    ),
    key(
        "init",
        Kind::Number,
        "V",
        &[F],
        false,
        "Start with every coefficient equal to V (default: all zero).",
    ),
    key(
        "key_bits",
        Kind::Count,
        "BITS",
        &[S, A],
        true,
        "Paillier modulus bits: 2048, 3072 or 4096.",
    ),
    key(
        "fixed",
        Kind::Text,
        "W/F",
        &[S, A],
        true,
        "Fixed-point format of the garbled circuits, WIDTH/FRACTION bits (more fraction: closer \
         to the plaintext run; more integer bits: room for larger values).",
    ),
    key(
        "linear_algebra",
        Kind::Choice(LINEAR_ALGEBRA),
        "METHOD",
        &[S, A],
        true,
        "How the Center factors and solves on secret matrices: masked (Paillier-assisted masked \
         arithmetic, pivots in small garbled circuits) or circuit (all in garbled circuits; it \
         stops by the relative-change rule).",
    ),
    key(
        "dp_epsilon",
        Kind::Number,
        "E",
        &[S, A],
        true,
        "Publish an epsilon-differentially private model (secure PLR, stacking paper Algorithm 1): \
         the Nodes scale each row to norm 1, both servers add a PLR noise vector under \
         encryption, the study stops on the gradient norm alone (default within 1e-8 of the \
         minimiser). No intercept; setting `standardize`, setting `lambda` and setting `tol` do not apply.",
    ),
    key(
        "dp_lambda",
        Kind::Number,
        "L",
        &[S, A],
        true,
        "PLR's lambda (per row; the study's penalty becomes N (lambda + Delta)).",
    ),
    key(
        "transfer_from",
        Kind::Path,
        "FILE",
        &[S, A],
        true,
        "Hypothesis transfer: centre the DP study's penalty at a source organization's published \
         model (a `dp fit` of method plr with setting `out`, or `stack publish`), lambda (eta/2 ||w||^2 + \
         (1 - eta)/2 ||w - w_src||^2).",
    ),
    key(
        "eta",
        Kind::Number,
        "ETA",
        &[S, A],
        true,
        "With setting `transfer_from`: the weight of plain l2 against closeness to the source model.",
    ),
    // Generalised linear models.
    key(
        "family",
        Kind::Choice(FAMILIES),
        "FAMILY",
        &[F, S, A, N],
        true,
        "The label's distribution: binomial (logistic regression), gaussian (identity link, \
         residual variance estimated) or poisson (log link). Gaussian and Poisson fit by Newton's \
         method (no constant bound on their information exists for PrivLogit).",
    ),
    key(
        "offset",
        Kind::Text,
        "COLUMN",
        &[F, S, A, N],
        true,
        "A column added to the linear predictor with coefficient 1 (R's offset(); for Poisson \
         rates, the log of the exposure). Not a feature.",
    ),
    key(
        "weights",
        Kind::Text,
        "COLUMN",
        &[F, S, A, N],
        true,
        "A column of prior weights (> 0) multiplying each row's log-likelihood (R's glm weights, \
         statsmodels' var_weights). Not a feature.",
    ),
    key(
        "site_intercepts",
        Kind::Switch,
        "",
        &[F, S, N],
        true,
        "Each party its own baseline: indicator columns site_2 ... site_K (1 on party k's rows) \
         beside the intercept, the first party the reference (a Node between organizations takes \
         its k from its place among the study file's [[node]] tables).",
    ),
    // Vertically partitioned data.
    key(
        "vertical",
        Kind::Switch,
        "",
        &[F, S, A, N],
        true,
        "The parties hold different columns about the same people: their rows are matched by \
         setting `id` (private set intersection) and the model is fitted over the joined columns; \
         exactly one party's file has the setting `label` column.",
    ),
    key(
        "id",
        Kind::Text,
        "COLUMN",
        &[F, S, N],
        true,
        "The column that identifies a person in every party's file (a vertical study's \
         matching key; compared as text, exactly).",
    ),
    // Evaluation on held-out rows.
    many(key(
        "test_party",
        Kind::Path,
        "FILE",
        &[F, S, N],
        false,
        "Held-out rows (the training files' columns) to evaluate the final model on: AUC, \
         log-loss, accuracy, Brier score and a calibration table. A study takes one per setting `party`, \
         in order (evaluated securely: only the pooled figures are revealed, the AUC ranked in a \
         garbled circuit); a Node its own.",
    )),
    key(
        "evaluate",
        Kind::Switch,
        "",
        &[A, S],
        true,
        "Ask the Nodes to evaluate the final model on their held-out rows (setting `test_party`); Nodes \
         without any count none. A study in one process evaluates whenever setting `test_party` is \
         given.",
    ),
    // Inference at the optimum.
    key(
        "reveal",
        Kind::Choice(crate::inference::Reveal::NAMES),
        "WHAT",
        &[S, A],
        true,
        "What a study reveals beyond the coefficients: standard-errors (the diagonal of the \
         inverse information at the optimum: standard errors, z, p-values, intervals), covariance \
         (the whole matrix) or coefficients (nothing more). The fit reveals everything (it is \
         plaintext).",
    ),
    key(
        "ci_level",
        Kind::Number,
        "LEVEL",
        &[F, S, A],
        false,
        "Level of the confidence intervals of the coefficients and odds ratios.",
    ),
    key(
        "covariance",
        Kind::Switch,
        "",
        &[F, S, A],
        false,
        "Print the covariance matrix of the coefficients (the inverse information; a study must \
         reveal covariance).",
    ),
    many(key(
        "drop",
        Kind::Text,
        "COLUMN",
        &[F, S, K, A, N],
        false,
        "Likelihood-ratio test against the model without this column (repeat for several): the \
         nested model is fitted too, in a study as a second secure study (unpenalised fits \
         only); between organizations every party reads it from the study file and serves both \
         studies.",
    )),
    // Output.
    key(
        "json",
        Kind::Switch,
        "",
        &[F, S, A],
        false,
        "Print one JSON object instead of a table.",
    ),
    key(
        "out",
        Kind::Path,
        "FILE",
        &[F, S, A],
        false,
        "Write the result to FILE (atomically) instead of standard output.",
    ),
    key(
        "cost",
        Kind::Path,
        "FILE",
        &[S, A],
        false,
        "A differentially private study: write its cost report (iterations, rounds, timings, \
         traffic: not covered by epsilon) to FILE instead of standard error.",
    ),
    key(
        "quiet",
        Kind::Switch,
        "",
        &[F, S],
        false,
        "No progress on standard error.",
    ),
    // A Node's privacy ledger.
    key(
        "ledger",
        Kind::Path,
        "FILE",
        &[S, N],
        false,
        "The privacy ledger (as `dp fit` keeps with setting `ledger`): a differentially private study charges each \
         Node's data set (known by its rows) its epsilon when it starts, refused past the total.",
    ),
    key(
        "budget",
        Kind::Number,
        "TOTAL",
        &[S, N],
        false,
        "Total epsilon each data set may spend (needed to create the ledger).",
    ),
    // Seeds (reproducible runs only).
    key(
        "seed",
        Kind::Count,
        "SEED",
        &[S, A],
        false,
        "Reproducible runs (tests, benchmarks): the aggregator's masks from SEED, so a run repeats \
         another's rounding bit for bit. Whoever knows SEED and the key holder's view can unmask \
         everything, so the aggregator refuses it (in a study file always).",
    ),
    key(
        "noise_seed",
        Kind::Count,
        "SEED",
        &[S, K, A],
        false,
        "Reproducible differentially private runs (tests): the servers' noise shares from SEED. \
         Whoever knows SEED knows the noise, so the key holder and the aggregator refuse it \
         (in a study file always).",
    ),
    // How a party of a study between organizations connects.
    key(
        "identity",
        Kind::Path,
        "PREFIX",
        &[K, A, N],
        false,
        "This party's identity: PREFIX.crt and PREFIX.key, from `privlogit identity new`.",
    ),
    key(
        "insecure_plaintext",
        Kind::Switch,
        "",
        &[K, A, N],
        false,
        "Connect over plain TCP: anyone on the path reads the traffic and anyone may claim a \
         party's place. Refused when the study file names certificates.",
    ),
    key(
        "deadline",
        Kind::Number,
        "SECONDS",
        &[K, A, N],
        false,
        "Seconds without any sign of life (data or heartbeat) after which a peer counts as lost \
         and the study stops.",
    ),
    key(
        "listen",
        Kind::Text,
        "ADDR",
        &[K, A],
        false,
        "Address to listen on, e.g. 0.0.0.0:7000 (default: the study file's address of this \
         party).",
    ),
    key(
        "state",
        Kind::Path,
        "DIR",
        &[K, A],
        false,
        "Directory for this server's state: the aggregator's checkpoint, the key holder's key file \
         (secret, mode 0600). Created if missing.",
    ),
    key(
        "resume",
        Kind::Switch,
        "",
        &[K, A],
        false,
        "Continue the study from the state a lost run left (restart every party; the Nodes need \
         nothing more than a restart).",
    ),
    key(
        "keyholder",
        Kind::Text,
        "ADDR",
        &[A],
        false,
        "The key holder's address (default: the study file's).",
    ),
    key(
        "parties",
        Kind::Count,
        "N",
        &[A],
        false,
        "Number of Nodes to wait for (default: the study file's Nodes).",
    ),
    key(
        "aggregator",
        Kind::Text,
        "ADDR",
        &[N],
        false,
        "The aggregator's address (default: the study file's).",
    ),
    key(
        "name",
        Kind::Text,
        "NAME",
        &[N],
        false,
        "This Node's name in a plaintext study (with TLS the name comes from the certificate).",
    ),
];

/// The setting named `name` of a fit or a study.
pub fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

/// Every setting `reader` takes, in the order help lists them: the registry is [`KEYS`] (fits
/// and studies) and [`dp_keys::DP_KEYS`] (DP fits), one [`Key`] type read by the same code in
/// every front end.
pub fn keys_of(reader: Reader) -> impl Iterator<Item = &'static Key> {
    KEYS.iter()
        .chain(dp_keys::DP_KEYS)
        .filter(move |k| k.readers.contains(&reader))
}

/// The default of `key` as help shows it (`None` for switches, lists and unset options).
pub fn default_text(key: &Key) -> Option<String> {
    if key.kind == Kind::Switch || key.many {
        return None;
    }
    let value = match key.preset {
        Preset::Spec => Spec::default().get(key.name)?,
        preset => preset.value()?,
    };
    Some(match value {
        Value::String(s) => s,
        Value::Float(f) => format_number(f),
        Value::Integer(i) => i.to_string(),
        Value::Boolean(b) => b.to_string(),
        other => format!("{other:?}"),
    })
}

/// `value` read as `key` takes it (one item of a list key), or why not: the one check of a
/// value's form for every reader.
pub fn read_as(key: &Key, value: &Value) -> Result<Value, String> {
    Ok(match key.kind {
        Kind::Switch => Value::Boolean(read_switch(value)?),
        Kind::Number => Value::Float(read_number(value)?),
        Kind::Count => {
            let n = read_count(value)?;
            Value::Integer(i64::try_from(n).map_err(|_| format!("{n} is too large"))?)
        }
        Kind::Text | Kind::Path => Value::String(read_text(value)?),
        Kind::Choice(names) => {
            let got = read_text(value)?;
            if !names.contains(&got.as_str()) {
                return Err(choice_error(&got, names));
            }
            Value::String(got)
        }
    })
}

/// `"; did you mean `lambda`?"` for a name that is not a setting but close to one of `also`
/// or of the settings (at most two edits, or a third of its length), else "".
pub fn did_you_mean(name: &str, also: &[&str]) -> String {
    let settings = KEYS.iter().filter(|k| !k.hidden).map(|k| k.name);
    closest(name, settings.chain(also.iter().copied()))
}

/// `"; did you mean `x`?"` for the candidate closest to `name` (at most two edits, or a third
/// of its length), else "".
pub fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let limit = (name.len() / 3).max(2);
    let wanted = name.replace('-', "_");
    candidates
        .map(|k| (strsim::damerau_levenshtein(&wanted, k), k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map_or(String::new(), |(_, k)| format!("; did you mean `{k}`?"))
}

/// Everything a fit or a study may be told, each setting at its default until a study file, the
/// command line or a caller sets it. Reading it is the plans' work ([`crate::study`],
/// [`crate::fit`]); setting it checks only each value's form.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Who this spec is for (which keys it accepts).
    pub reader: Reader,
    /// Keys set explicitly (by the file or the caller), for rules that depend on whether a
    /// default was chosen (the Newton protocol implies the Newton optimiser).
    pub explicit: BTreeSet<&'static str>,
    /// Keys the caller (command line, Python) set, which override the study file's.
    pub from_caller: BTreeSet<&'static str>,
    /// Data files, one per party.
    pub party: Vec<PathBuf>,
    /// Label column.
    pub label: Option<String>,
    /// One file for every party (fit).
    pub data: Option<PathBuf>,
    /// Parties of contiguous rows of `data`.
    pub split: Option<usize>,
    /// Shuffle before `split`.
    pub shuffle_seed: Option<u64>,
    /// One party per value of this column.
    pub group_by: Option<String>,
    /// Columns left out.
    pub exclude: Vec<String>,
    /// The secure protocol.
    pub protocol: Protocol,
    /// The optimiser (its Anderson memory is [`Self::memory`]).
    pub optimizer: Optimizer,
    /// Anderson memory.
    pub memory: usize,
    /// No Newton finish for privlogit-accel.
    pub no_newton_finish: bool,
    /// The disclosure controls.
    pub disclosure: privlogit_protocols::disclosure::Disclosure,
    /// Pooled standardisation.
    pub standardize: bool,
    /// An intercept column.
    pub intercept: bool,
    /// The intercept left out of the penalty.
    pub free_intercept: bool,
    /// l2 penalty.
    pub lambda: f64,
    /// The penalty's centre.
    pub penalty_centre: Option<PathBuf>,
    /// Relative-change rule (0: off).
    pub tol: f64,
    /// Gradient-norm rule (0: off).
    pub gradient_tol: f64,
    /// Iteration limit.
    pub max_iter: usize,
    /// Constant start.
    pub init: Option<f64>,
    /// Paillier modulus bits.
    pub key_bits: u32,
    /// Circuit word format.
    pub fixed: FixedFormat,
    /// The Center's linear algebra.
    pub linear_algebra: LinearAlgebra,
    /// Secure PLR's epsilon.
    pub dp_epsilon: Option<f64>,
    /// Secure PLR's lambda.
    pub dp_lambda: f64,
    /// Source model of a DP transfer.
    pub transfer_from: Option<PathBuf>,
    /// Weight of plain l2 in a transfer.
    pub eta: f64,
    /// Per-party intercepts.
    pub site_intercepts: bool,
    /// Held-out rows to evaluate on.
    pub test_party: Vec<PathBuf>,
    /// The aggregator asks the Nodes for an evaluation on held-out rows.
    pub evaluate: bool,
    /// The label's distribution.
    pub family: privlogit_protocols::Family,
    /// The offset column.
    pub offset: Option<String>,
    /// Parties hold columns, not rows.
    pub vertical: bool,
    /// A vertical study's identifier column.
    pub id: Option<String>,
    /// The prior-weight column.
    pub weights: Option<String>,
    /// What a study reveals beyond the coefficients.
    pub reveal: crate::inference::Reveal,
    /// Level of the confidence intervals.
    pub ci_level: f64,
    /// Print the covariance matrix.
    pub covariance: bool,
    /// Columns of a nested model to test against.
    pub drop: Vec<String>,
    /// JSON output.
    pub json: bool,
    /// Output file.
    pub out: Option<PathBuf>,
    /// A DP study's cost report file.
    pub cost: Option<PathBuf>,
    /// No progress lines.
    pub quiet: bool,
    /// Privacy ledger.
    pub ledger: Option<PathBuf>,
    /// The ledger's total.
    pub budget: Option<f64>,
    /// Mask seed (tests).
    pub seed: Option<u64>,
    /// Noise seed (tests).
    pub noise_seed: Option<u64>,
    /// Identity prefix.
    pub identity: Option<PathBuf>,
    /// Plain TCP.
    pub insecure_plaintext: bool,
    /// Seconds of silence before a peer counts as lost.
    pub deadline: f64,
    /// Listening address.
    pub listen: Option<String>,
    /// State directory.
    pub state: PathBuf,
    /// Continue from kept state.
    pub resume: bool,
    /// The key holder's address.
    pub keyholder: Option<String>,
    /// Nodes to wait for.
    pub parties: Option<usize>,
    /// The aggregator's address.
    pub aggregator: Option<String>,
    /// A plaintext Node's name.
    pub name: String,
}

impl Default for Spec {
    /// The defaults of every front end: the command line's flags show them, Python's keywords
    /// take them. They stop near the optimum (the gradient-norm rule with accelerated
    /// PrivLogit); `privlogit reproduce` sets the paper's rule itself.
    fn default() -> Self {
        Self {
            reader: Reader::Study,
            explicit: BTreeSet::new(),
            from_caller: BTreeSet::new(),
            party: Vec::new(),
            label: None,
            data: None,
            split: None,
            shuffle_seed: None,
            group_by: None,
            exclude: Vec::new(),
            protocol: Protocol::Local,
            optimizer: Optimizer::AcceleratedPrivLogit {
                memory: DEFAULT_ANDERSON_MEMORY,
            },
            memory: DEFAULT_ANDERSON_MEMORY,
            no_newton_finish: false,
            disclosure: privlogit_protocols::disclosure::Disclosure::DATASHIELD,
            standardize: false,
            intercept: true,
            free_intercept: false,
            lambda: 1.0,
            penalty_centre: None,
            tol: 0.0,
            gradient_tol: 1e-6,
            max_iter: 1000,
            init: None,
            key_bits: 2048,
            fixed: DEFAULT_FORMAT,
            linear_algebra: LinearAlgebra::Masked,
            dp_epsilon: None,
            dp_lambda: 0.01,
            transfer_from: None,
            eta: crate::dp::release::DEFAULT_ETA,
            reveal: crate::inference::Reveal::StandardErrors,
            site_intercepts: false,
            test_party: Vec::new(),
            evaluate: false,
            family: privlogit_protocols::Family::Binomial,
            offset: None,
            vertical: false,
            id: None,
            weights: None,
            ci_level: 0.95,
            covariance: false,
            drop: Vec::new(),
            json: false,
            out: None,
            cost: None,
            quiet: false,
            ledger: None,
            budget: None,
            seed: None,
            noise_seed: None,
            identity: None,
            insecure_plaintext: false,
            deadline: 6.0,
            listen: None,
            state: PathBuf::from("privlogit-state"),
            resume: false,
            keyholder: None,
            parties: None,
            aggregator: None,
            name: "node".into(),
        }
    }
}

/// Where a value came from, for messages: a study file or the command line / caller.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// A study file (named).
    File(&'a std::path::Path),
    /// The command line or a library caller.
    Given,
}

impl Spec {
    /// The defaults, for `reader`.
    pub fn new(reader: Reader) -> Self {
        Self {
            reader,
            ..Self::default()
        }
    }

    /// The protocol's name.
    pub fn protocol_name(p: Protocol) -> &'static str {
        match p {
            Protocol::Local => "local",
            Protocol::Hessian => "hessian",
            Protocol::Newton => "newton",
        }
    }

    /// Sets `name` to `value` (a list appends to a setting taken several times), checking the
    /// value's form; `origin` names where it came from in errors.
    pub fn set(&mut self, name: &str, value: &Value, origin: Origin<'_>) -> Result<(), Error> {
        let Some(key) = find(name) else {
            return Err(self.unknown(name, origin));
        };
        refuse_role_seed(self.reader, key.name, origin)?;
        if !key.readers.contains(&self.reader) {
            return Err(Error::Setting {
                origin: origin_text(origin, name),
                why: format!(
                    "is not a setting of `{}` (it is read by {})",
                    self.reader.command(),
                    key.readers
                        .iter()
                        .map(|r| format!("`{}`", r.command()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        let at = |why: String| Error::Setting {
            origin: origin_text(origin, name),
            why,
        };
        if let Value::Array(items) = value {
            if !key.many {
                return Err(at("takes one value, not a list".into()));
            }
            for item in items {
                self.set(name, item, origin)?;
            }
            return Ok(());
        }
        let text = || read_text(value).map_err(&at);
        let number = || read_number(value).map_err(&at);
        let count = || read_count(value).map_err(&at);
        let switch = || read_switch(value).map_err(&at);
        let path = || read_text(value).map(PathBuf::from).map_err(&at);
        match key.name {
            "party" => self.party.push(path()?),
            "label" => self.label = Some(text()?),
            "data" => self.data = Some(path()?),
            "split" => self.split = Some(count()? as usize),
            "shuffle_seed" => self.shuffle_seed = Some(count()?),
            "group_by" => self.group_by = Some(text()?),
            "exclude" => self.exclude.push(text()?),
            "protocol" => {
                self.protocol = match text()?.as_str() {
                    "auto" => {
                        // As if left out: the plan chooses (a file's choice is overridden).
                        self.protocol = Protocol::Local;
                        self.explicit.remove("protocol");
                        self.from_caller.remove("protocol");
                        return Ok(());
                    }
                    "local" => Protocol::Local,
                    "hessian" => Protocol::Hessian,
                    "newton" => Protocol::Newton,
                    other => return Err(at(choice_error(other, PROTOCOLS))),
                }
            }
            "optimizer" => {
                let name = text()?;
                self.optimizer = name
                    .parse()
                    .map_err(|_| at(choice_error(&name, OPTIMIZERS)))?;
            }
            "accelerate" => {
                if switch()? {
                    self.optimizer = Optimizer::AcceleratedPrivLogit {
                        memory: self.memory,
                    };
                    self.explicit.insert("optimizer");
                    if matches!(origin, Origin::Given) {
                        self.from_caller.insert("optimizer");
                    }
                }
            }
            "memory" => self.memory = count()? as usize,
            "no_newton_finish" => self.no_newton_finish = switch()?,
            "min_rows" => self.disclosure.min_rows = count()?.max(1),
            "max_parameter_share" => {
                let share = number()?;
                if share.is_nan() || share <= 0.0 {
                    return Err(at(format!("{share} is not a share above 0")));
                }
                self.disclosure.max_parameter_share = share;
            }
            "min_cell" => self.disclosure.min_cell = count()?,
            "two_node_disclosure" => self.disclosure.two_nodes = switch()?,
            "standardize" => self.standardize = switch()?,
            "no_intercept" => self.intercept = !switch()?,
            "free_intercept" => self.free_intercept = switch()?,
            "lambda" => self.lambda = number()?,
            "penalty_centre" => self.penalty_centre = Some(path()?),
            "tol" => self.tol = number()?,
            "gradient_tol" => self.gradient_tol = number()?,
            "max_iter" => self.max_iter = count()? as usize,
            "init" => self.init = Some(number()?),
            "key_bits" => {
                self.key_bits = u32::try_from(count()?).map_err(|_| at("is too large".into()))?
            }
            "fixed" => self.fixed = parse_format(&text()?).map_err(at)?,
            "linear_algebra" => {
                let name = text()?;
                self.linear_algebra = name
                    .parse()
                    .map_err(|_| at(choice_error(&name, LINEAR_ALGEBRA)))?;
            }
            "dp_epsilon" => self.dp_epsilon = Some(number()?),
            "dp_lambda" => self.dp_lambda = number()?,
            "transfer_from" => self.transfer_from = Some(path()?),
            "eta" => self.eta = number()?,
            "reveal" => {
                let name = text()?;
                self.reveal = name
                    .parse()
                    .map_err(|_| at(choice_error(&name, crate::inference::Reveal::NAMES)))?;
            }
            "family" => {
                let name = text()?;
                self.family = privlogit_protocols::Family::parse(&name)
                    .ok_or_else(|| at(choice_error(&name, FAMILIES)))?;
            }
            "offset" => self.offset = Some(text()?),
            "vertical" => self.vertical = switch()?,
            "id" => self.id = Some(text()?),
            "test_party" => self.test_party.push(path()?),
            "site_intercepts" => self.site_intercepts = switch()?,
            "evaluate" => self.evaluate = switch()?,
            "weights" => self.weights = Some(text()?),
            "ci_level" => self.ci_level = number()?,
            "covariance" => self.covariance = switch()?,
            "drop" => self.drop.push(text()?),
            "json" => self.json = switch()?,
            "out" => self.out = Some(path()?),
            "cost" => self.cost = Some(path()?),
            "quiet" => self.quiet = switch()?,
            "ledger" => self.ledger = Some(path()?),
            "budget" => self.budget = Some(number()?),
            "seed" => self.seed = Some(count()?),
            "noise_seed" => self.noise_seed = Some(count()?),
            "identity" => self.identity = Some(path()?),
            "insecure_plaintext" => self.insecure_plaintext = switch()?,
            "deadline" => self.deadline = number()?,
            "listen" => self.listen = Some(text()?),
            "state" => self.state = path()?,
            "resume" => self.resume = switch()?,
            "keyholder" => self.keyholder = Some(text()?),
            "parties" => self.parties = Some(count()? as usize),
            "aggregator" => self.aggregator = Some(text()?),
            "name" => self.name = text()?,
            other => unreachable!("setting {other} is in KEYS but not read"),
        }
        self.explicit.insert(key.name);
        if matches!(origin, Origin::Given) {
            self.from_caller.insert(key.name);
        }
        Ok(())
    }

    fn unknown(&self, name: &str, origin: Origin<'_>) -> Error {
        Error::Setting {
            origin: origin_text(origin, name),
            why: format!(
                "is not a setting of any study command{}",
                did_you_mean(name, &[])
            ),
        }
    }

    /// Refuses, before any work, an output (`out`, `cost`) that could not be written when the
    /// work ends: a missing or read-only directory, a full disk, a directory named as a file
    /// ([`crate::output::check_writable`]).
    pub fn check_outputs(&self) -> Result<(), Error> {
        for path in [&self.out, &self.cost].into_iter().flatten() {
            crate::output::check_writable(path).map_err(|e| Error::write(path, e))?;
        }
        Ok(())
    }

    /// Whether `name` was set by a file or the caller (not left at its default).
    pub fn given(&self, name: &str) -> bool {
        self.explicit.contains(name)
    }

    /// How firmly `name` was set: 0 its default, 1 by the study file, 2 by the caller.
    pub fn rank(&self, name: &str) -> u8 {
        u8::from(self.explicit.contains(name)) + u8::from(self.from_caller.contains(name))
    }

    /// The value of `name` as a study file would write it (`None` when unset), for help texts,
    /// Python's keyword defaults and the test that they agree.
    pub fn get(&self, name: &str) -> Option<Value> {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| Value::String(p.display().to_string()));
        let text = |s: &Option<String>| s.clone().map(Value::String);
        let float = |x: f64| Some(Value::Float(x));
        let int = |x: u64| Some(Value::Integer(i64::try_from(x).unwrap_or(i64::MAX)));
        match name {
            "party" => Some(Value::Array(
                self.party
                    .iter()
                    .map(|p| Value::String(p.display().to_string()))
                    .collect(),
            )),
            "label" => text(&self.label),
            "data" => path(&self.data),
            "split" => self.split.and_then(|k| int(k as u64)),
            "shuffle_seed" => self.shuffle_seed.and_then(int),
            "group_by" => text(&self.group_by),
            "exclude" => Some(Value::Array(
                self.exclude.iter().cloned().map(Value::String).collect(),
            )),
            "protocol" => Some(Value::String(if self.given("protocol") {
                Self::protocol_name(self.protocol).into()
            } else {
                "auto".into()
            })),
            "optimizer" => Some(Value::String(self.optimizer.name().into())),
            "accelerate" => Some(Value::Boolean(matches!(
                self.optimizer,
                Optimizer::AcceleratedPrivLogit { .. }
            ))),
            "memory" => int(self.memory as u64),
            "no_newton_finish" => Some(Value::Boolean(self.no_newton_finish)),
            "min_rows" => int(self.disclosure.min_rows),
            "max_parameter_share" => float(self.disclosure.max_parameter_share),
            "min_cell" => int(self.disclosure.min_cell),
            "two_node_disclosure" => Some(Value::Boolean(self.disclosure.two_nodes)),
            "standardize" => Some(Value::Boolean(self.standardize)),
            "no_intercept" => Some(Value::Boolean(!self.intercept)),
            "free_intercept" => Some(Value::Boolean(self.free_intercept)),
            "lambda" => float(self.lambda),
            "penalty_centre" => path(&self.penalty_centre),
            "tol" => float(self.tol),
            "gradient_tol" => float(self.gradient_tol),
            "max_iter" => int(self.max_iter as u64),
            "init" => self.init.and_then(float),
            "key_bits" => int(u64::from(self.key_bits)),
            "fixed" => Some(Value::String(format!(
                "{}/{}",
                self.fixed.width(),
                self.fixed.frac()
            ))),
            "linear_algebra" => Some(Value::String(self.linear_algebra.name().into())),
            "dp_epsilon" => self.dp_epsilon.and_then(float),
            "dp_lambda" => float(self.dp_lambda),
            "transfer_from" => path(&self.transfer_from),
            "eta" => float(self.eta),
            "reveal" => Some(Value::String(self.reveal.name().into())),
            "family" => Some(Value::String(self.family.name().into())),
            "offset" => self.offset.clone().map(Value::String),
            "vertical" => Some(Value::Boolean(self.vertical)),
            "id" => self.id.clone().map(Value::String),
            "test_party" => Some(Value::Array(
                self.test_party
                    .iter()
                    .map(|p| Value::String(p.display().to_string()))
                    .collect(),
            )),
            "evaluate" => Some(Value::Boolean(self.evaluate)),
            "site_intercepts" => Some(Value::Boolean(self.site_intercepts)),
            "weights" => self.weights.clone().map(Value::String),
            "ci_level" => float(self.ci_level),
            "covariance" => Some(Value::Boolean(self.covariance)),
            "drop" => Some(Value::Array(
                self.drop.iter().cloned().map(Value::String).collect(),
            )),
            "json" => Some(Value::Boolean(self.json)),
            "out" => path(&self.out),
            "cost" => path(&self.cost),
            "quiet" => Some(Value::Boolean(self.quiet)),
            "ledger" => path(&self.ledger),
            "budget" => self.budget.and_then(float),
            "seed" => self.seed.and_then(int),
            "noise_seed" => self.noise_seed.and_then(int),
            "identity" => path(&self.identity),
            "insecure_plaintext" => Some(Value::Boolean(self.insecure_plaintext)),
            "deadline" => float(self.deadline),
            "listen" => text(&self.listen),
            "state" => Some(Value::String(self.state.display().to_string())),
            "resume" => Some(Value::Boolean(self.resume)),
            "keyholder" => text(&self.keyholder),
            "parties" => self.parties.and_then(|n| int(n as u64)),
            "aggregator" => text(&self.aggregator),
            "name" => Some(Value::String(self.name.clone())),
            _ => None,
        }
    }

    /// The default of `name` as help shows it (`None` for switches and unset options).
    pub fn default_text(name: &str) -> Option<String> {
        default_text(find(name)?)
    }
}

/// A number as a person writes it (`1`, `0.01`, `1e-6`).
pub fn format_number(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e6) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

fn origin_text(origin: Origin<'_>, name: &str) -> String {
    match origin {
        Origin::File(path) => format!("{}: {name}", path.display()),
        Origin::Given => format!("setting `{name}`"),
    }
}

fn choice_error(got: &str, choices: &[&str]) -> String {
    format!("`{got}` is not one of {}", choices.join(", "))
}

fn read_text(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        other => Err(format!("is a {}, expected text", other.type_str())),
    }
}

fn read_number(value: &Value) -> Result<f64, String> {
    match value {
        Value::Float(f) => Ok(*f),
        Value::Integer(i) => Ok(*i as f64),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a number")),
        other => Err(format!("is a {}, expected a number", other.type_str())),
    }
}

fn read_count(value: &Value) -> Result<u64, String> {
    match value {
        Value::Integer(i) => u64::try_from(*i).map_err(|_| format!("{i} is negative")),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a whole number")),
        other => Err(format!(
            "is a {}, expected a whole number",
            other.type_str()
        )),
    }
}

fn read_switch(value: &Value) -> Result<bool, String> {
    match value {
        Value::Boolean(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(format!("is a {}, expected true or false", other.type_str())),
    }
}

/// A fixed-point format written `WIDTH/FRACTION`.
pub fn parse_format(s: &str) -> Result<FixedFormat, String> {
    let (w, f) = s
        .split_once('/')
        .ok_or_else(|| format!("{s:?} is not WIDTH/FRACTION, e.g. 64/46"))?;
    let w: u32 = w
        .trim()
        .parse()
        .map_err(|_| format!("bad width in {s:?}"))?;
    let f: u32 = f
        .trim()
        .parse()
        .map_err(|_| format!("bad fraction in {s:?}"))?;
    FixedFormat::new(w, f).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_and_writes_its_default() {
        let defaults = Spec::default();
        for key in KEYS {
            let mut spec = Spec::new(key.readers[0]);
            if let Some(v) = defaults.get(key.name) {
                let v = match v {
                    Value::Array(items) if items.is_empty() => continue,
                    v => v,
                };
                spec.set(key.name, &v, Origin::Given)
                    .unwrap_or_else(|e| panic!("{}: {e}", key.name));
                assert_eq!(spec.get(key.name), Some(v), "{}", key.name);
            }
        }
    }

    /// `protocol = "auto"` is the protocol left out: a study in one process plans what the
    /// roles do (Local), and the command line's auto overrides a file's choice.
    #[test]
    fn auto_protocol_is_the_protocol_left_out() {
        let file = Origin::File(std::path::Path::new("study.toml"));
        let mut spec = Spec::new(Reader::Study);
        spec.set("protocol", &Value::String("local".into()), file)
            .expect("a protocol");
        assert_eq!(
            spec.in_process_plan(3).expect("plan").protocol,
            Protocol::Local
        );
        spec.set("protocol", &Value::String("auto".into()), Origin::Given)
            .expect("auto");
        assert!(!spec.given("protocol"));
        assert_eq!(spec.get("protocol"), Some(Value::String("auto".into())));
        assert_eq!(
            spec.in_process_plan(3).expect("plan").protocol,
            Protocol::Local
        );
        assert_eq!(spec.study_plan(3).expect("plan").protocol, Protocol::Local);
        spec.set("optimizer", &Value::String("newton".into()), Origin::Given)
            .expect("an optimizer");
        assert_eq!(
            spec.in_process_plan(3).expect("plan").protocol,
            Protocol::Newton
        );
    }

    #[test]
    fn values_from_files_and_command_lines_agree() {
        let mut a = Spec::new(Reader::Study);
        let mut b = Spec::new(Reader::Study);
        a.set("lambda", &Value::Float(0.5), Origin::Given)
            .expect("a number");
        b.set("lambda", &Value::String("0.5".into()), Origin::Given)
            .expect("a number as text");
        assert_eq!(a.lambda, b.lambda);
        let e = a
            .set("lambda", &Value::Boolean(true), Origin::Given)
            .expect_err("a switch is not a number");
        assert!(e.to_string().contains("setting `lambda`"), "{e}");
        let e = a
            .set("listen", &Value::String("x".into()), Origin::Given)
            .expect_err("a study has no listen address");
        assert!(e.to_string().contains("keyholder"), "{e}");
    }
}
