//! What the application layer ([`crate::study`], [`crate::fit`], [`crate::jobs`])
//! can fail with: one enum whose variants a caller can match (the command
//! line maps them to messages and exit codes, Python to exception classes), each carrying the
//! facts a user needs to fix the problem.

use std::path::PathBuf;

use privlogit_protocols::FitError;
use privlogit_protocols::secure::SecureError;
use privlogit_protocols::secure::study_protocol::StudyError;

use crate::data::DataError;
use crate::dl::DlError;
use crate::dp::DpError;
use crate::dp::ledger::LedgerError;
use crate::dp::release::{Method, ReleaseError};
use crate::model::ModelError;

/// Why a fit, a study or a release could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting's value is malformed or out of range, or the setting is refused here.
    #[error("{} {problem}", origin.naming(key))]
    Setting {
        /// The setting's name (`lambda`).
        key: &'static str,
        /// Where it was given.
        origin: Origin,
        /// What is wrong with it.
        problem: SettingProblem,
    },
    /// A name that is no setting of the command reading it.
    #[error("{} is not {what}{}", origin.naming(name), suggest(*.suggestion))]
    UnknownSetting {
        /// The name as given.
        name: String,
        /// Where it was given.
        origin: Origin,
        /// "a setting of any study command", "an option of a DP fit".
        what: &'static str,
        /// The closest setting, when one is close.
        suggestion: Option<&'static str>,
    },
    /// Settings that cannot go together, or a setting a plan needs that is missing.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A study file that cannot be read as one (its line and column when known).
    #[error("{path}{at}: {why}", at = at(*.line, *.column))]
    StudyFile {
        /// The file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong.
        why: String,
    },
    /// A file that could not be read or written.
    #[error("{what} {path}: {source}")]
    Io {
        /// "cannot read", "cannot write".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A party's data.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The optimiser's settings or run.
    #[error(transparent)]
    Fit(#[from] FitError),
    /// A secure study's party failed or refused.
    #[error(transparent)]
    Study(#[from] StudyError),
    /// A secure role failed.
    #[error(transparent)]
    Secure(#[from] SecureError),
    /// The privacy ledger refused a release (over budget) or could not be used.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// A DP method's parameters or data.
    #[error(transparent)]
    Release(#[from] ReleaseError),
    /// A DP parameter.
    #[error(transparent)]
    Dp(#[from] DpError),
    /// A design an unpenalised fit cannot estimate (collinear columns, separated classes).
    #[error(transparent)]
    Design(#[from] crate::inference::estimability::DesignError),
    /// Inference at the optimum.
    #[error(transparent)]
    Inference(#[from] crate::inference::InferenceError),
    /// Distributed DP deep learning.
    #[error(transparent)]
    Dl(#[from] DlError),
    /// A model file or the rows it is applied to.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A connection (listening, connecting, admitting the parties).
    #[error("{0}")]
    Network(std::io::Error),
}

impl Error {
    /// A refusal of the setting `key` given by the caller (not a study file).
    pub fn bad(key: &'static str, problem: SettingProblem) -> Self {
        Error::Setting {
            key,
            origin: Origin::Given,
            problem,
        }
    }

    /// A plan refused for a reason fixed in the code (no facts of the run to carry).
    pub fn refused(why: &'static str) -> Self {
        Error::Plan(PlanError::Refused { why })
    }

    /// A file that could not be read.
    pub fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            what: "cannot read",
            path: path.into(),
            source,
        }
    }

    /// A file that could not be written.
    pub fn write(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            what: "cannot write",
            path: path.into(),
            source,
        }
    }

    /// Whether the privacy ledger refused: a release over budget.
    pub fn is_over_budget(&self) -> bool {
        matches!(self, Error::Ledger(LedgerError::Exceeded { .. }))
    }

    /// Whether a party or the network failed during a secure study (a lost peer, a refused
    /// certificate, an abort, a timeout): the study may succeed when run again or resumed,
    /// where a bad input will not.
    pub fn is_network(&self) -> bool {
        let lost = |e: &SecureError| e.transport().is_some();
        // The optimiser prints its backend's error in its own message, not as a source.
        let fit_lost = |f: &FitError| match f {
            FitError::Aggregation(backend) => {
                backend.downcast_ref::<SecureError>().is_some_and(lost)
            }
            _ => false,
        };
        match self {
            Error::Secure(e) | Error::Study(StudyError::Secure(e) | StudyError::Party(_, e)) => {
                lost(e)
            }
            Error::Fit(f) | Error::Study(StudyError::Fit(f)) => fit_lost(f),
            _ => false,
        }
    }

    /// Whether a setting or the plan it makes was refused (a value out of range, settings that
    /// do not go together), for callers that report them apart (Python's `SettingError`).
    pub fn is_setting(&self) -> bool {
        let fit = |f: &FitError| {
            matches!(
                f,
                FitError::InvalidParameter { .. }
                    | FitError::InitialLength { .. }
                    | FitError::CentreLength { .. }
            )
        };
        match self {
            Error::Setting { .. } | Error::UnknownSetting { .. } | Error::Plan(_) => true,
            Error::Fit(f) | Error::Study(StudyError::Fit(f)) => fit(f),
            _ => false,
        }
    }

    /// Whether the model cannot be estimated from these data (separated classes, collinear or
    /// constant columns), found before or during the fit: no model is published, and the fix
    /// is in the design or the penalty, not a rerun (Python's `EstimationError`).
    pub fn is_estimation(&self) -> bool {
        let secure = |e: &SecureError| {
            matches!(
                e,
                SecureError::Separated { .. } | SecureError::Singular { .. }
            )
        };
        match self {
            Error::Design(_)
            | Error::Fit(FitError::BoundNotPositiveDefinite)
            | Error::Study(StudyError::Fit(FitError::BoundNotPositiveDefinite)) => true,
            Error::Secure(e) | Error::Study(StudyError::Secure(e) | StudyError::Party(_, e)) => {
                secure(e)
            }
            _ => false,
        }
    }

    /// Whether it is about the data (a file, a row, a value), for callers that report data
    /// errors apart (Python's `DataError`): a file that cannot be read is one too.
    pub fn is_data(&self) -> bool {
        matches!(
            self,
            Error::Data(_)
                | Error::StudyFile { .. }
                | Error::Io {
                    what: "cannot read",
                    ..
                }
        )
    }
}

fn at(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// Where a setting was given, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// The command line, a Python keyword or a library caller: "setting `x`".
    Given,
    /// A study file: "study.toml: x".
    File(PathBuf),
}

impl Origin {
    /// "setting `x`" or "study.toml: x": the front ends find the name in backticks.
    fn naming(&self, key: &str) -> String {
        match self {
            Origin::Given => format!("setting `{key}`"),
            Origin::File(path) => format!("{}: {key}", path.display()),
        }
    }
}

fn suggest(suggestion: Option<&str>) -> String {
    suggestion.map_or(String::new(), |s| format!("; did you mean `{s}`?"))
}

fn list(names: &[String]) -> String {
    names.join(", ")
}

fn paths(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// What is wrong with one setting's value (printed after the setting's name).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingProblem {
    /// A number outside its range; `closed` when the ends are allowed.
    #[error("{}", range(*.value, *.low, *.high, *.closed))]
    OutOfRange {
        /// The value given.
        value: f64,
        /// The least end.
        low: f64,
        /// The greatest end.
        high: f64,
        /// Whether the ends are allowed.
        closed: bool,
    },
    /// A number below the least it may be.
    #[error("{value} must be at least {least}{note}")]
    BelowLeast {
        /// The value given.
        value: f64,
        /// The least allowed.
        least: f64,
        /// More on the rule (" (0 turns the rule off)"), or "".
        note: &'static str,
    },
    /// A count too large for this machine.
    #[error("{value} is too large")]
    TooLarge {
        /// The value given.
        value: u64,
    },
    /// More of something than is taken.
    #[error("{given} {what}: at most {most} are taken{why}")]
    TooMany {
        /// How many were given.
        given: u64,
        /// The most taken.
        most: u64,
        /// "held-out rows".
        what: &'static str,
        /// Why (" for a study's AUC"), or "".
        why: &'static str,
    },
    /// A value that is not one of the choices.
    #[error("`{given}` is not one of {}", choices.join(", "))]
    NotAChoice {
        /// The value given.
        given: String,
        /// The values taken.
        choices: &'static [&'static str],
    },
    /// The same value given twice.
    #[error("{value:?} is given twice{why}")]
    Twice {
        /// The value.
        value: String,
        /// Why once (" (each column counts once...)"), or "".
        why: &'static str,
    },
    /// A value the setting's reader refused, in the reader's words.
    #[error("{why}")]
    Invalid {
        /// Why, from the value's parser.
        why: String,
    },
    /// A likelihood-ratio test (setting `drop`) asked of a penalised fit or study.
    #[error(
        "is refused: a likelihood-ratio test compares maximum-likelihood fits: give setting `lambda` 0 (the \
         chi-square law does not hold for penalised fits)"
    )]
    PenalisedLikelihoodRatio,
    /// Refused where it is given, for a reason fixed in the code.
    #[error("{why}")]
    Refused {
        /// A clause following the setting's name ("needs the intercept").
        why: &'static str,
    },
    /// Not a setting of the command reading it.
    #[error("is not a setting of `{command}` (it is read by {})", readers.iter().map(|r| format!("`{r}`")).collect::<Vec<_>>().join(", "))]
    NotRead {
        /// The command reading it.
        command: &'static str,
        /// The commands that read it.
        readers: Vec<&'static str>,
    },
    /// A seed refused by a role process.
    #[error(
        "refused by `{command}`: it would seed {seeds}. Seeds are for one-process runs \
         (`privlogit study`) and tests only"
    )]
    RoleSeed {
        /// The role's command.
        command: &'static str,
        /// What the seed would seed.
        seeds: &'static str,
    },
    /// A column that is not a feature of the model.
    #[error(
        "{column:?} is not a feature of the model; the features are {}",
        list(features)
    )]
    NotAFeature {
        /// The column named.
        column: String,
        /// The model's features.
        features: Vec<String>,
    },
    /// A column missing from a file (or from every party's file when `path` is `None`).
    #[error("{}", match path { Some(p) => format!("{}: no column {column:?}", p.display()), None => format!("{column:?} is a column of no party's file") })]
    NoColumn {
        /// The column named.
        column: String,
        /// The file, when one.
        path: Option<PathBuf>,
    },
    /// A column of the data named as a column the setting adds.
    #[error("the data already has a column {column:?}: rename it")]
    ColumnClash {
        /// The column.
        column: String,
    },
    /// Not exactly one party's file holds the label column.
    #[error(
        "exactly one party's file must have the label column {label:?}; {} {}",
        if files.is_empty() { "none".to_string() } else { paths(files) },
        if files.len() == 1 { "does" } else { "do" }
    )]
    LabelParties {
        /// The label column.
        label: String,
        /// The files that have it.
        files: Vec<PathBuf>,
    },
    /// Files given per party, in a number other than the parties'.
    #[error("{given} held-out files for {parties} {of}: give one per setting `party`, in order")]
    PerParty {
        /// How many were given.
        given: usize,
        /// How many parties.
        parties: usize,
        /// "Nodes", "parties".
        of: &'static str,
    },
    /// A value for a family other than the binomial.
    #[error("{}", match given { Some(g) => format!("{g} does not fit the {family} family{why}"), None => format!("is not for the {family} family{why}") })]
    Family {
        /// The value given, when the setting has one.
        given: Option<&'static str>,
        /// The model's family.
        family: privlogit_protocols::Family,
        /// Why (" (... binomial only): give newton or leave it out"), or "".
        why: &'static str,
    },
    /// A key size that is not one of the supported.
    #[error("{}", if *bits < 2048 { format!("{bits} is below 2048, which is not secure") } else { format!("{bits}: 2048, 3072 or 4096 are supported") })]
    KeyBits {
        /// The size given.
        bits: u64,
    },
    /// Output the study does not reveal.
    #[error(
        "prints the covariance matrix, which this study does not reveal (setting `reveal` \
         {reveal}): add setting `reveal` covariance"
    )]
    NotRevealed {
        /// What the study reveals.
        reveal: &'static str,
    },
    /// A Node not named in the study file.
    #[error("this Node ({name:?}) is not among the study file's [[node]] tables")]
    NotInRoster {
        /// The Node's name.
        name: String,
    },
    /// Pooled output that two Nodes would each learn the other's sums from.
    #[error(
        "with two Nodes, {what} would let each Node learn the other's sums by subtracting its \
         own: to publish it, every party's study file says two_node_disclosure = true (setting \
         `two_node_disclosure` in one process, two_node_disclosure=True from Python)"
    )]
    TwoNodes {
        /// What would be published ("a held-out evaluation").
        what: &'static str,
    },
    /// A DP parameter out of its range (the setting is named before it: its value and why).
    #[error("{} {}", .0.value, .0.reason)]
    Dp(#[from] DpError),
}

fn range(value: f64, low: f64, high: f64, closed: bool) -> String {
    if closed {
        format!("{value} is outside [{low}, {high}]")
    } else {
        format!("{value} must lie in ({low}, {high})")
    }
}

/// Settings that do not make a plan together, or a plan that cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// Two settings that cannot go together.
    #[error("setting `{first}` and setting `{second}` cannot go together{why}")]
    Conflict {
        /// One setting.
        first: &'static str,
        /// The other.
        second: &'static str,
        /// Why, or what to do (": give one of them"), or "".
        why: &'static str,
    },
    /// A setting the plan needs.
    #[error("setting `{setting}`{}{value} is needed: {why}", if value.is_empty() { "" } else { " " })]
    Missing {
        /// The setting.
        setting: &'static str,
        /// What its value is ("COLUMN", "FILE"), or "".
        value: &'static str,
        /// What it gives.
        why: &'static str,
    },
    /// Refused for a reason fixed in the code (the sentence names its settings).
    #[error("{why}")]
    Refused {
        /// The sentence.
        why: &'static str,
    },
    /// A setting refused with a value of another setting.
    #[error("setting `{setting}` {value} does not go with setting `{other}` {other_value}{why}")]
    NotWith {
        /// The setting refused.
        setting: &'static str,
        /// Its value.
        value: &'static str,
        /// The setting it does not go with.
        other: &'static str,
        /// The other's value.
        other_value: &'static str,
        /// Why (" (Newton is its own protocol)"), or "".
        why: &'static str,
    },
    /// A list setting with a number of values other than what it describes.
    #[error("setting `{setting}` has {given} values for {expected} {of}")]
    Values {
        /// The setting.
        setting: &'static str,
        /// Its number of values.
        given: usize,
        /// The number needed.
        expected: usize,
        /// What it has one value per ("features").
        of: &'static str,
    },
    /// Too few of something.
    #[error("{what} needs at least {} {of}", words(*.least))]
    TooFew {
        /// What needs them ("a vertical study").
        what: &'static str,
        /// The least.
        least: usize,
        /// Of what ("setting `party` files").
        of: &'static str,
    },
    /// A number of parties other than the study file names.
    #[error("setting `parties` {given} but the study file names {named} Nodes")]
    Parties {
        /// The number given.
        given: usize,
        /// The number of [[node]] tables.
        named: usize,
    },
    /// More features than a study takes.
    #[error(
        "{source_name}: {features} feature columns; a study takes at most {most} coefficients, \
         the intercept counted"
    )]
    TooManyFeatures {
        /// The data's source.
        source_name: String,
        /// Its feature columns.
        features: usize,
        /// The most coefficients.
        most: usize,
    },
    /// Held-out rows with other features than the training rows.
    #[error(
        "{source_name}: the held-out rows' features differ from the training rows': {}",
        crate::data::partition::difference(found, expected).unwrap_or_default()
    )]
    HeldOutFeatures {
        /// The held-out rows' source.
        source_name: String,
        /// Their features.
        found: Vec<String>,
        /// The training features.
        expected: Vec<String>,
    },
    /// A file whose columns differ from another's.
    #[error("{}: columns differ from {}", path.display(), reference.display())]
    ColumnsDiffer {
        /// The file.
        path: PathBuf,
        /// The file it should match.
        reference: PathBuf,
    },
    /// A source model whose features differ from the target data's.
    #[error(
        "{}: the source model's features differ from {target}'s (the centre must be in the \
         target's coordinates)",
        model.display()
    )]
    CentreFeatures {
        /// The model file.
        model: PathBuf,
        /// The target data's source.
        target: String,
    },
    /// Data without a feature of the model.
    #[error("{}: no column {column:?}, a feature of the model (its features: {})", path.display(), list(features))]
    MissingFeature {
        /// The data file.
        path: PathBuf,
        /// The feature.
        column: String,
        /// The model's features.
        features: Vec<String>,
    },
    /// A model that did not converge where its log-likelihood was needed.
    #[error(
        "the {model} model did not converge with its log-likelihood known ({status}): raise \
         setting `max_iter`"
    )]
    NotConverged {
        /// "full", "nested".
        model: &'static str,
        /// The optimiser's ending.
        status: &'static str,
    },
    /// A report that could not be rendered as JSON.
    #[error("cannot render the {what}: {source}")]
    Render {
        /// "result", "model".
        what: &'static str,
        /// The cause.
        source: serde_json::Error,
    },
    /// A file that is not JSON, or not a published model.
    #[error("{} is not {what}: {source}", path.display())]
    NotJson {
        /// The file.
        path: PathBuf,
        /// "JSON", "a published model".
        what: &'static str,
        /// The cause.
        source: serde_json::Error,
    },
    /// A model file that does not fit its use, in the model's words.
    #[error("{}{what}: {why}", path.display())]
    Model {
        /// The model file.
        path: PathBuf,
        /// " is not a model file", or "".
        what: &'static str,
        /// Why, from the model's check.
        why: String,
    },
    /// A step of a pipeline that failed, in its own words.
    #[error("{step} {name}{what}: {source}")]
    Step {
        /// "splitting", "fitting".
        step: &'static str,
        /// The data or organization.
        name: String,
        /// What of it ("'s low-level model"), or "".
        what: &'static str,
        /// The cause.
        source: DpError,
    },
    /// A file that cannot be used, for a reason fixed in the code.
    #[error("{}: {why}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        why: &'static str,
    },
    /// A value of a penalty centre that is not a finite number.
    #[error("{}:{line}:{column}: `{given}` is not a finite number", path.display())]
    CentreValue {
        /// The centre's file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The text given.
        given: String,
    },
    /// A source model with a number of coefficients other than its features', or one not
    /// finite.
    #[error("{}: {coefficients} coefficients for {features} features", path.display())]
    Coefficients {
        /// The model file.
        path: PathBuf,
        /// Its coefficients.
        coefficients: usize,
        /// Its features.
        features: usize,
    },
    /// A checkpoint that cannot be read.
    #[error("{}: {source}", path.display())]
    Checkpoint {
        /// The checkpoint.
        path: PathBuf,
        /// The cause.
        source: SecureError,
    },
    /// A sealed checkpoint refused.
    #[error("{}: {why}; refused (remove it and start the study over)", path.display())]
    Sealed {
        /// The checkpoint.
        path: PathBuf,
        /// Why.
        why: &'static str,
    },
    /// A checkpoint left by an earlier run.
    #[error(
        "a checkpoint of this study exists ({}, after iteration {iterations}): pass setting \
         `resume` to continue it (restarting every party), or remove the file to start the \
         study over",
        path.display()
    )]
    CheckpointExists {
        /// The checkpoint.
        path: PathBuf,
        /// Its iterations.
        iterations: usize,
    },
    /// The key holder's key of an interrupted run, which a fresh start would replace.
    #[error(
        "the key of an interrupted run of this study is kept in {}: pass setting `resume` to \
         continue it (restarting every party), or remove the file to start the study over",
        path.display()
    )]
    KeyExists {
        /// The key file.
        path: PathBuf,
    },
    /// An output that could not take the result, kept elsewhere.
    #[error("{source} (the result is kept at {})", kept.display())]
    Kept {
        /// Why the output failed.
        source: Box<Error>,
        /// Where the result is.
        kept: PathBuf,
    },
    /// An output that could not take the result, and keeping it failed too.
    #[error("{source}; keeping the result failed too: {also}")]
    NotKept {
        /// Why the output failed.
        source: Box<Error>,
        /// Why keeping it failed.
        also: Box<Error>,
    },
    /// A certificate the study file does not name.
    #[error("this party's certificate is not named in the study file: {why}")]
    Unnamed {
        /// Why, from the roster.
        why: String,
    },
    /// A certificate named for another role.
    #[error(
        "this party's certificate {fingerprint} is {named}'s in the study file, not a {role}'s"
    )]
    OtherRole {
        /// The certificate's fingerprint.
        fingerprint: String,
        /// The member it names.
        named: String,
        /// The role this party plays.
        role: privlogit_protocols::transport::Role,
    },
    /// An address missing.
    #[error("{naming} ADDR is needed (or an address for it in the study file)")]
    Address {
        /// The setting as its front end names it ("setting `listen`", a command-line flag).
        naming: &'static str,
    },
    /// Rows in memory where the ledger needs files.
    #[error("{source_name}: the ledger knows data sets by their files here{why}")]
    LedgerRows {
        /// The rows' source.
        source_name: String,
        /// What to do instead, or "".
        why: &'static str,
    },
    /// Two studies of one id.
    #[error(
        "the studies [{first}] and [{second}] are one study (the same parties, addresses and \
         settings, so the same study id): give each its own study_id label or addresses"
    )]
    SameStudy {
        /// The first study's label.
        first: String,
        /// The second's.
        second: String,
    },
    /// A spec read for one command run as another.
    #[error("a spec read for `{read}` cannot run as `{run}`")]
    Reader {
        /// The command that read it.
        read: &'static str,
        /// The command running it.
        run: &'static str,
    },
    /// An identifier given twice in one file.
    #[error(
        "{}:{line}: the identifier {person:?} in column {column:?} appears again (first on line \
         {first}): every person once per file",
        path.display()
    )]
    Identifier {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// The identifier.
        person: String,
        /// The identifier column.
        column: String,
        /// Its first line.
        first: usize,
    },
    /// The private set intersection of the parties' identifiers failed.
    #[error(transparent)]
    Intersection(#[from] privlogit_protocols::vertical::psi::PsiError),
    /// Parties' files that share no identifier.
    #[error("the parties' files share no {column:?}: the intersection is empty")]
    NoIntersection {
        /// The identifier column.
        column: String,
    },
    /// A test file whose rows are the training file's.
    #[error(
        "setting `test` {}: about {:.0} % of its rows are rows of the training file {}: exact \
         metrics on training rows are not private; test on rows the model was not fitted on",
        test.display(),
        100.0 * share,
        training.display()
    )]
    TestOnTraining {
        /// The test file.
        test: PathBuf,
        /// The training file.
        training: PathBuf,
        /// The share of rows in both.
        share: f64,
    },
    /// An option the DP method does not take.
    #[error("setting `{option}` does not apply to setting `method` {}: {why}", method_name(*.method))]
    MethodOption {
        /// The option.
        option: &'static str,
        /// The method.
        method: Method,
        /// Why.
        why: &'static str,
    },
    /// A DP method given a number of source files it does not take.
    #[error("setting `method` {} {} setting `source`", method_name(*.method), sources_rule(*.method, *.given))]
    Sources {
        /// The method.
        method: Method,
        /// How many source files were given.
        given: usize,
    },
    /// An output step that failed, in its own words (a summary's renderer, a front end's
    /// delivery).
    #[error("{why}")]
    Output {
        /// Why.
        why: String,
    },
}

/// The method as the command line names it (`pst-h`).
fn method_name(method: Method) -> &'static str {
    method.name()
}

fn sources_rule(method: Method, given: usize) -> &'static str {
    if given > 1 {
        "takes one"
    } else if method.is_transfer() {
        "needs"
    } else {
        "does not take"
    }
}

/// A small count in words, as messages have said it ("at least two").
fn words(n: usize) -> String {
    match n {
        1 => "one".into(),
        2 => "two".into(),
        3 => "three".into(),
        n => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_named_in_backticks_or_by_its_file() {
        let given = Error::bad(
            "noise_share",
            SettingProblem::OutOfRange {
                value: 1.0,
                low: 0.0,
                high: 1.0,
                closed: false,
            },
        );
        assert_eq!(
            given.to_string(),
            "setting `noise_share` 1 must lie in (0, 1)"
        );
        assert!(given.is_setting());
        let filed = Error::Setting {
            key: "lambda",
            origin: Origin::File("study.toml".into()),
            problem: SettingProblem::Invalid {
                why: "`x` is not a number".into(),
            },
        };
        assert_eq!(filed.to_string(), "study.toml: lambda `x` is not a number");
        let unknown = Error::UnknownSetting {
            name: "lamda".into(),
            origin: Origin::Given,
            what: "a setting of any study command",
            suggestion: Some("lambda"),
        };
        assert_eq!(
            unknown.to_string(),
            "setting `lamda` is not a setting of any study command; did you mean `lambda`?"
        );
        assert!(unknown.is_setting());
    }

    #[test]
    fn plan_errors_carry_their_facts() {
        let e = Error::from(PlanError::Missing {
            setting: "label",
            value: "COLUMN",
            why: "the name of the label column",
        });
        assert_eq!(
            e.to_string(),
            "setting `label` COLUMN is needed: the name of the label column"
        );
        assert!(e.is_setting());
        let e = Error::from(PlanError::TooFew {
            what: "a vertical study",
            least: 2,
            of: "parties",
        });
        assert_eq!(e.to_string(), "a vertical study needs at least two parties");
        assert!(matches!(e, Error::Plan(PlanError::TooFew { least: 2, .. })));
    }
}
