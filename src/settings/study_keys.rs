//! The settings of fits and secure studies, each declared once: its study-file key (the field's
//! name; the long flag is the same with `-`, Python's keyword the same), its type (which says how
//! a value is read and written, [`super::values`]), its default, its value's placeholder in help,
//! who reads it, whether every party of a study must agree on it, and its help. From this one
//! list come [`KEYS`], the fields of [`Spec`], [`Spec::default`] and the reading and writing of
//! every setting by name; adding a setting is one entry here plus the code that uses it.
//!
//! An entry: `name: Type = default, "PLACEHOLDER", [readers], shared | own [+ hidden], "help";`
//! (`shared`: part of a study's plan, which every party agrees on and its id covers; `own`: a
//! party sets it for itself; `hidden`: left out of help, kept for older study files).

use std::collections::BTreeSet;
use std::path::PathBuf;

use privlogit_circuits::fixed_format::FixedFormat;
use privlogit_protocols::Optimizer;
use privlogit_protocols::disclosure::Disclosure;
use privlogit_protocols::optimizer::DEFAULT_ANDERSON_MEMORY;
use privlogit_protocols::secure::DEFAULT_FORMAT;
use privlogit_protocols::secure::aggregator::Protocol;
use privlogit_protocols::secure::solver::LinearAlgebra;
use toml::Value;

use super::setting_key::{Key, Preset, Reader};
use super::values::{SettingValue, Share};
use Reader::{Aggregator as A, Dealer as D, Fit as F, KeyHolder as K, Node as N, Study as S};

/// The most Newton steps a plaintext fit's separation probe takes by default (breast_cancer's
/// Newton separates its classes in 13 from zero; `crate::fit::job`).
pub const SEPARATION_PROBE: usize = 50;

/// Declares the settings: see the module's documentation.
macro_rules! settings {
    ($(
        $name:ident : $ty:ty = $default:expr, $value_name:literal, [$($reader:ident),*],
        $scope:ident $(+ $hidden:ident)?, $help:literal;
    )*) => {
        /// Every setting of `fit`, `study`, `keyholder`, `aggregator` and `node`, in the order
        /// help lists them.
        pub const KEYS: &[Key] = &[$(
            Key {
                name: stringify!($name),
                kind: <$ty as SettingValue>::KIND,
                value_name: $value_name,
                help: $help,
                readers: &[$($reader),*],
                shared: settings!(@shared $scope),
                many: <$ty as SettingValue>::MANY,
                hidden: settings!(@hidden $($hidden)?),
                preset: Preset::Spec,
            },
        )*];

        /// Everything a fit or a study may be told, each setting at its default until a study
        /// file, the command line or a caller sets it. Reading it is the plans' work
        /// ([`crate::study`], [`crate::fit`]); setting it checks each value's form.
        #[derive(Debug, Clone)]
        pub struct Spec {
            /// Who this spec is for (which keys it accepts).
            pub reader: Reader,
            /// Keys set explicitly (by the file or the caller), for rules that depend on whether
            /// a default was chosen (the Newton protocol implies the Newton optimiser).
            pub explicit: BTreeSet<&'static str>,
            /// Keys the caller (command line, Python) set, which override the study file's.
            pub from_caller: BTreeSet<&'static str>,
            /// The study file each key left to a file came from, for errors that name it there.
            pub from_file: std::collections::BTreeMap<&'static str, PathBuf>,
            $(
                #[doc = $help]
                pub $name: $ty,
            )*
        }

        impl Default for Spec {
            /// The defaults of every front end: the command line's flags show them, Python's
            /// keywords take them. They stop near the optimum (the gradient-norm rule with
            /// accelerated PrivLogit); `privlogit reproduce` sets the paper's rule itself.
            fn default() -> Self {
                Self {
                    reader: Reader::Study,
                    explicit: BTreeSet::new(),
                    from_caller: BTreeSet::new(),
                    from_file: std::collections::BTreeMap::new(),
                    $($name: $default,)*
                }
            }
        }

        impl Spec {
            /// Takes one value of the setting `name` (one of [`KEYS`]; a list's item is added).
            pub(super) fn assign(&mut self, name: &str, value: &Value) -> Result<(), String> {
                match name {
                    $(stringify!($name) => SettingValue::assign(&mut self.$name, value),)*
                    other => Err(format!("{other} is not a setting")),
                }
            }

            /// Puts the setting `name` back to its default (unknown names are left alone).
            pub(super) fn reset(&mut self, name: &str) {
                match name {
                    $(stringify!($name) => self.$name = $default,)*
                    _ => {}
                }
            }

            /// The setting `name` as a study file writes it (`None` when unset or unknown).
            pub(super) fn value_of(&self, name: &str) -> Option<Value> {
                match name {
                    $(stringify!($name) => SettingValue::value(&self.$name),)*
                    _ => None,
                }
            }
        }
    };
    (@shared shared) => { true };
    (@shared own) => { false };
    (@hidden hidden) => { true };
    (@hidden) => { false };
}

settings! {
    // What a party reads and writes.
    party: Vec<PathBuf> = Vec::new(), "FILE", [F, S, N], own,
        "A data file (CSV, privlogit binary table or Parquet), one per Node; repeat the flag (a Node \
        takes one). Each has a header row and the 0/1 label column.";
    label: Option<String> = None, "COLUMN", [F, S, N, A], own,
        "Name of the label column (0/1 for the binomial family, counts for Poisson, numbers for \
        the Gaussian). The aggregator, which sees no rows, only names it in the result.";
    data: Option<PathBuf> = None, "FILE", [F], own,
        "One file holding every party's rows (see setting `split` and setting `group_by`), instead of setting `party`.";
    split: Option<usize> = None, "K", [F], own,
        "Split setting `data` into K parties of contiguous rows.";
    shuffle_seed: Option<u64> = None, "SEED", [F], own,
        "Shuffle setting `data`'s rows with this seed before setting `split`.";
    group_by: Option<String> = None, "COLUMN", [F], own,
        "Make one party per value of this column of setting `data`.";
    exclude: Vec<String> = Vec::new(), "COLUMN", [F, S, N], own,
        "Leave this column out; repeat for several.";
    // The model and how it is fitted (a study's plan).
    protocol: Protocol = Protocol::Local, "NAME", [S, A], shared,
        "The secure protocol (dissertation chapter 5): local (PrivLogit-Local: the Nodes multiply \
        the encrypted inverse of the Hessian bound into their gradients), hessian \
        (PrivLogit-Hessian: the Center keeps the bound's inverse shared between the two servers \
        and solves each step), newton (secure distributed Newton, the baseline; implies \
        setting `optimizer` newton), or auto (the default): local, in one process and between \
        organizations alike (Local's rounds need no masked product between the servers; measured \
        faster than hessian at every size and network tried), newton with the newton optimizer. \
        The choice is printed and recorded as the result's `protocol`.";
    optimizer: Optimizer = Optimizer::AcceleratedPrivLogit { memory: DEFAULT_ANDERSON_MEMORY, }, "NAME", [F, S, A], shared,
        "privlogit-accel (PrivLogit with safeguarded Anderson acceleration), privlogit (the \
        paper's PrivLogit, eq. 5.4-5.6) or newton (eq. 2.11; in a study, the newton protocol).";
    accelerate: bool = false, "", [S, A], shared + hidden,
        "The same as setting `optimizer` privlogit-accel (older study files).";
    memory: usize = DEFAULT_ANDERSON_MEMORY, "M", [F, S, A], shared,
        "Anderson memory of privlogit-accel (past iterate differences it extrapolates from).";
    no_newton_finish: bool = false, "", [F, S, A], shared,
        "Keep privlogit-accel on the bound throughout: no Newton finish (by default, after as \
        many iterations as a secure Newton system costs in rounds, about 7 + 0.4 p, with the \
        step between 1e-6 and 2e-3, it forms Newton systems at the current coefficients and \
        iterates with them to the optimum).";
    // Disclosure controls (DataSHIELD's nfilter defaults), checked by each Node on its own
    // counts before it sends anything.
    min_rows: u64 = Disclosure::DATASHIELD.min_rows, "N", [S, A, N], shared,
        "Fewest training rows (and held-out rows, when the study evaluates) a Node takes part \
        with; DataSHIELD's nfilter.subset.";
    max_parameter_share: Share = Share(Disclosure::DATASHIELD.max_parameter_share), "SHARE", [S, A, N], shared,
        "Most coefficients per training row of a Node (p <= SHARE x N_k, the intercept counted); \
        DataSHIELD's nfilter.glm.";
    min_cell: u64 = Disclosure::DATASHIELD.min_cell, "N", [S, A, N], shared,
        "Fewest rows of a class at a Node (positives and negatives, 0 allowed) and in a \
        published cell (a calibration bin; each class behind the AUC); DataSHIELD's nfilter.tab.";
    two_node_disclosure: bool = Disclosure::DATASHIELD.two_nodes, "", [S, A, N], shared,
        "With two Nodes, publish more than the coefficients (standardisation, standard errors, \
        likelihoods, held-out figures), each of which tells a Node the other's sums.";
    standardize: bool = false, "", [F, S, A], shared,
        "Z-score the features with their pooled mean and standard deviation (ddof 0); in a study \
        these are computed under encryption and become public. The model is reported in the \
        data's own units as well.";
    no_intercept: bool = false, "", [F, S, A], shared,
        "Do not add the intercept column.";
    free_intercept: bool = false, "", [F], own,
        "Leave the intercept out of the penalty, as scikit-learn's LogisticRegression and R's glm \
        fit it (the dissertation's eq. 2.10 penalises it).";
    lambda: f64 = 1.0, "L", [F, S, A], shared,
        "l2 penalty lambda of eq. 2.10 (every coefficient, the intercept too; a plaintext fit \
        can leave the intercept out with setting `free_intercept`, a secure study cannot).";
    penalty_centre: Option<PathBuf> = None, "FILE", [F, S, A], shared,
        "Centre the penalty at this public vector, lambda/2 ||beta - c||^2 (hypothesis \
        transfer): a file with one coefficient per line in the model's order (intercept first, \
        standardised coordinates with setting `standardize`).";
    tol: f64 = 0.0, "T", [F, S, A], shared,
        "Also stop when the relative change of the penalised log-likelihood falls below T, the \
        dissertation's rule (section 5.4: 1e-6); 0 turns it off. It can stop PrivLogit far from \
        the optimum, so the default relies on the gradient.";
    gradient_tol: f64 = 1e-6, "G", [F, S, A], shared,
        "Stop when the Euclidean norm of the penalised gradient falls below G (the coefficients \
        are then within G / lambda of the optimum); 0 turns it off. In a study the norm is \
        formed in masked arithmetic and compared in a circuit: one revealed bit.";
    max_iter: usize = 1000, "N", [F, S, A], shared,
        "Give up after N iterations (a warning, exit status 0).";
    separation_probe: usize = SEPARATION_PROBE, "N", [F], own,
        "Newton steps an unpenalised logistic fit that ran out of iterations takes from where it \
        stopped to tell separated classes (it is refused as separated when they separate the \
        rows); 0 reports the fit as it stopped.";
    init: Option<f64> = None, "V", [F], own,
        "Start with every coefficient equal to V (default: all zero).";
    key_bits: u32 = 2048, "BITS", [S, A, D], shared,
        "Paillier modulus bits: 2048, 3072 or 4096.";
    fixed: FixedFormat = DEFAULT_FORMAT, "W/F", [S, A], shared,
        "Fixed-point format of the garbled circuits, WIDTH/FRACTION bits (more fraction: closer \
        to the plaintext run; more integer bits: room for larger values).";
    linear_algebra: LinearAlgebra = LinearAlgebra::Masked, "METHOD", [S, A], shared,
        "How the Center factors and solves on secret matrices: masked (Paillier-assisted masked \
        arithmetic, pivots in small garbled circuits) or circuit (all in garbled circuits; it \
        stops by the relative-change rule).";
    circuit_block: usize = privlogit_protocols::secure::masked::engine::DEFAULT_BLOCK, "K",
        [S, A], own,
        "Side of the blocks of pivots the masked inverse computes in one garbled circuit, 1 to \
        8: 4 waits for a quarter of the round trips between the two servers that 1 does and \
        sends about ten times the garbled tables (a 31 x 31 inverse: 38 round trips and 120 MB \
        against 153 and 12 MB). At 50 ms round trips, below about 300 Mbit/s between the \
        servers 2 is faster (the demo at 100 Mbit/s: 32 s against 45 s).";
    dp_epsilon: Option<f64> = None, "E", [S, A], shared,
        "Publish an epsilon-differentially private model (secure PLR, stacking paper Algorithm 1): \
        the Nodes scale each row to norm 1, both servers add a PLR noise vector under \
        encryption, the study stops on the gradient norm alone (default within 1e-8 of the \
        minimiser). No intercept; setting `standardize`, setting `lambda` and setting `tol` do not apply.";
    dp_lambda: f64 = 0.01, "L", [S, A], shared,
        "PLR's lambda (per row; the study's penalty becomes N (lambda + Delta)).";
    transfer_from: Option<PathBuf> = None, "FILE", [S, A], shared,
        "Hypothesis transfer: centre the DP study's penalty at a source organization's published \
        model (a `dp fit` of method plr with setting `out`, or `stack publish`), lambda (eta/2 ||w||^2 + \
        (1 - eta)/2 ||w - w_src||^2).";
    eta: f64 = crate::dp::release::DEFAULT_ETA, "ETA", [S, A], shared,
        "With setting `transfer_from`: the weight of plain l2 against closeness to the source model.";
    // Generalised linear models.
    family: privlogit_protocols::Family = privlogit_protocols::Family::Binomial, "FAMILY", [F, S, A, N], shared,
        "The label's distribution: binomial (logistic regression), gaussian (identity link, \
        residual variance estimated) or poisson (log link). Gaussian and Poisson fit by Newton's \
        method (no constant bound on their information exists for PrivLogit).";
    offset: Option<String> = None, "COLUMN", [F, S, A, N], shared,
        "A column added to the linear predictor with coefficient 1 (R's offset(); for Poisson \
        rates, the log of the exposure). Not a feature.";
    weights: Option<String> = None, "COLUMN", [F, S, A, N], shared,
        "A column of prior weights (> 0) multiplying each row's log-likelihood (R's glm weights, \
        statsmodels' var_weights). Not a feature.";
    site_intercepts: bool = false, "", [F, S, N], shared,
        "Each party its own baseline: indicator columns site_2 ... site_K (1 on party k's rows) \
        beside the intercept, the first party the reference (a Node between organizations takes \
        its k from its place among the study file's `[[node]]` tables).";
    // Vertically partitioned data.
    vertical: bool = false, "", [F, S, A, N], shared,
        "The parties hold different columns about the same people: their rows are matched by \
        setting `id` (private set intersection) and the model is fitted over the joined columns; \
        exactly one party's file has the setting `label` column.";
    id: Option<String> = None, "COLUMN", [F, S, N], shared,
        "The column that identifies a person in every party's file (a vertical study's \
        matching key; compared as text, exactly).";
    // Evaluation on held-out rows.
    test_party: Vec<PathBuf> = Vec::new(), "FILE", [F, S, N], own,
        "Held-out rows (the training files' columns) to evaluate the final model on: AUC, \
        log-loss, accuracy, Brier score and a calibration table. A study takes one per setting `party`, \
        in order (evaluated securely: only the pooled figures are revealed, the AUC ranked in a \
        garbled circuit); a Node its own.";
    evaluate: bool = false, "", [A, S], shared,
        "Ask the Nodes to evaluate the final model on their held-out rows (setting `test_party`); Nodes \
        without any count none. A study in one process evaluates whenever setting `test_party` is \
        given.";
    // Inference at the optimum.
    reveal: crate::inference::Reveal = crate::inference::Reveal::StandardErrors, "WHAT", [S, A], shared,
        "What a study reveals beyond the coefficients: standard-errors (the diagonal of the \
        inverse information at the optimum: standard errors, z, p-values, intervals), covariance \
        (the whole matrix) or coefficients (nothing more). The fit reveals everything (it is \
        plaintext).";
    ci_level: f64 = 0.95, "LEVEL", [F, S, A], own,
        "Level of the confidence intervals of the coefficients and odds ratios.";
    covariance: bool = false, "", [F, S, A], own,
        "Print the covariance matrix of the coefficients (the inverse information; a study must \
        reveal covariance).";
    drop: Vec<String> = Vec::new(), "COLUMN", [F, S, K, A, N], own,
        "Likelihood-ratio test against the model without this column (repeat for several): the \
        nested model is fitted too, in a study as a second secure study (unpenalised fits \
        only); between organizations every party reads it from the study file and serves both \
        studies.";
    dealer_thread: bool = false, "", [S], own,
        "Take the masked products' cross terms from a dealer thread (a party colluding with \
        neither server, as `privlogit dealer` is between organizations) instead of Paillier \
        ciphertexts; the Nodes then pack their gradients. Faster, under a third party's trust.";
    // Output.
    json: bool = false, "", [F, S, A], own,
        "Print one JSON object instead of a table.";
    out: Option<PathBuf> = None, "FILE", [F, S, A], own,
        "Write the result to FILE (atomically) instead of standard output.";
    cost: Option<PathBuf> = None, "FILE", [S, A], own,
        "A differentially private study: write its cost report (iterations, rounds, timings, \
        traffic: not covered by epsilon) to FILE instead of standard error.";
    quiet: bool = false, "", [F, S], own,
        "No progress on standard error.";
    // A Node's privacy ledger.
    ledger: Option<PathBuf> = None, "FILE", [S, N], own,
        "The privacy ledger (as `dp fit` keeps with setting `ledger`): a differentially private study charges each \
        Node's data set (known by its rows) its epsilon when it starts, refused past the total.";
    budget: Option<f64> = None, "TOTAL", [S, N], own,
        "Total epsilon each data set may spend (needed to create the ledger).";
    // Seeds (reproducible runs only).
    seed: Option<u64> = None, "SEED", [S, A, D], own,
        "Reproducible runs (tests, benchmarks): the aggregator's masks (and a dealer's \
        correlations) from SEED, so a run repeats another's rounding bit for bit. Whoever knows \
        SEED and the key holder's view can unmask everything, so the aggregator and the dealer \
        refuse it (in a study file always).";
    noise_seed: Option<u64> = None, "SEED", [S, K, A], own,
        "Reproducible differentially private runs (tests): the servers' noise shares from SEED. \
        Whoever knows SEED knows the noise, so the key holder and the aggregator refuse it \
        (in a study file always).";
    // How a party of a study between organizations connects.
    identity: Option<PathBuf> = None, "PREFIX", [K, A, N, D], own,
        "This party's identity: PREFIX.crt and PREFIX.key, from `privlogit identity new`.";
    insecure_plaintext: bool = false, "", [K, A, N, D], own,
        "Connect over plain TCP: anyone on the path reads the traffic and anyone may claim a \
        party's place. Refused when the study file names certificates.";
    deadline: f64 = 6.0, "SECONDS", [K, A, N, D], own,
        "Seconds without any sign of life (data or heartbeat) after which a peer counts as lost \
        and the study stops.";
    listen: Option<String> = None, "ADDR", [K, A, D], own,
        "Address to listen on, e.g. 0.0.0.0:7000 (default: the study file's address of this \
        party).";
    state: PathBuf = PathBuf::from("privlogit-state"), "DIR", [K, A], own,
        "Directory for this server's state: the aggregator's checkpoint, the key holder's key file \
        (secret, mode 0600). Created if missing.";
    resume: bool = false, "", [K, A], own,
        "Continue the study from the state a lost run left (restart every party; the Nodes need \
        nothing more than a restart).";
    keyholder: Option<String> = None, "ADDR", [A], own,
        "The key holder's address (default: the study file's).";
    parties: Option<usize> = None, "N", [A], own,
        "Number of Nodes to wait for (default: the study file's Nodes).";
    aggregator: Option<String> = None, "ADDR", [N], own,
        "The aggregator's address (default: the study file's).";
    name: String = "node".into(), "NAME", [N], own,
        "This Node's name in a plaintext study (with TLS the name comes from the certificate).";
}
