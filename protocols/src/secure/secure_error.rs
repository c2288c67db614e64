//! What can stop a secure study, as values a caller can match on.
//!
//! Every variant carries the facts a user needs (which party, which setting, ours and theirs)
//! and prints the sentence the study has always printed. Transport failures (a lost peer, a
//! refused certificate, an abort, a timeout) stay [`SecureError::Io`], whose cause is the
//! transport's `io::Error`; [`SecureError::transport`] tells them apart.

use std::fmt;
use std::path::PathBuf;

use super::gc::Comparison;
use super::wire::Step;
use crate::objective::Family;
use crate::optimizer::Optimizer;
use crate::paillier::PaillierError;
use crate::transport::{Fingerprint, Role, TransportError};
use crate::vertical::deal::DealError;
use crate::vertical::psi::PsiError;
use crate::vertical::sealed::SealError;

/// What can stop a secure study.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecureError {
    /// A party could not send or receive (it disconnected, or sent something malformed).
    /// [`SecureError::transport`] says whether the transport lost the peer, was refused, was
    /// aborted or timed out.
    #[error("{}", io_text(*party, activity, *what, *step, *node, cause))]
    Io {
        /// The party that was sending or receiving.
        party: Party,
        /// What it was doing (`reading a request`); with `node`, a phrase whose object is the
        /// Node (`sending to`, `welcoming`).
        activity: &'static str,
        /// What the activity was about, where the site names it (`gradient`).
        what: Option<&'static str>,
        /// The protocol step of the frame, where the site knows it.
        step: Option<Step>,
        /// The Node (1-based) at the other end, where the site knows it.
        node: Option<usize>,
        /// The underlying error (in the message, not chained, so it is printed once).
        cause: std::io::Error,
    },
    /// A Paillier operation was refused.
    #[error(transparent)]
    Paillier(#[from] PaillierError),
    /// A peer broke the protocol: a request out of place (before the setup, twice), a message
    /// whose contents contradict the study's public parameters, or an answer of the wrong
    /// shape.
    #[error("{}", violation_message(*node, breach))]
    Violation {
        /// The party that broke the protocol (as this party sees it).
        peer: Role,
        /// The Node (1-based) that broke it, where the site knows which.
        node: Option<usize>,
        /// What was wrong.
        breach: Breach,
    },
    /// An encrypted vector whose public shape (length, scale, declared bound, packing) is not
    /// the one the study's parameters fix.
    #[error(
        "protocol error: {} has {mismatch}: refused (every width must follow the study's public \
         parameters)",
        shape_sender(*from, *node, what)
    )]
    Shape {
        /// The sender.
        from: Role,
        /// The sending Node (1-based), when a Node sent it.
        node: Option<usize>,
        /// The vector (`gradient`).
        what: &'static str,
        /// The first difference.
        mismatch: ShapeMismatch,
    },
    /// Two parties hold different plans: a setting one derived differs from the other's.
    #[error("{setting} differs between this party and the {with}: {theirs} there, {ours} here")]
    PlanMismatch {
        /// The other party.
        with: Role,
        /// The setting.
        setting: &'static str,
        /// This party's value.
        ours: String,
        /// The other party's value.
        theirs: String,
    },
    /// A Node's feature columns differ from Node 1's (checked before any cryptography).
    #[error("{}", columns_message(*node, *column, node1, theirs, *counts))]
    ColumnsDiffer {
        /// The Node (1-based).
        node: usize,
        /// The first column (1-based) that differs, or that one of the two lacks.
        column: usize,
        /// Node 1's name for that column (`None`: Node 1 has no such column).
        node1: Option<String>,
        /// This Node's name for it (`None`: it has no such column).
        theirs: Option<String>,
        /// The numbers of columns (Node 1's, this Node's).
        counts: (usize, usize),
    },
    /// The study's plan is refused before anything runs ([`StudyPlan::validate`] and the
    /// checks of a plan's parts).
    ///
    /// [`StudyPlan::validate`]: super::study_protocol::StudyPlan::validate
    #[error("{reason}")]
    InvalidPlan {
        /// The setting refused (`lambda`, `optimizer`, `release`, ...).
        setting: &'static str,
        /// Why, with the values refused.
        reason: PlanReason,
    },
    /// A pivot of a secret curvature matrix fell below its public threshold: the column at
    /// `column` (0-based, the intercept first) is, at working precision, a linear combination of
    /// the columns before it. `name` is filled in where the names are known.
    #[error(
        "the design is singular at working precision: column {} ({}) is (nearly) a linear \
         combination of the columns before it, or has almost no variance of its own (a pivot of \
         the secret curvature matrix fell below its public threshold, or past its public bound); \
         remove it, standardise the columns (setting `standardize`), or fit with setting `lambda` > 0",
        column + 1,
        name.as_deref().unwrap_or("by position")
    )]
    Singular {
        /// The column's position in the model.
        column: usize,
        /// Its name.
        name: Option<String>,
    },
    /// An unpenalised study whose classes are separated: the final coefficients put every row
    /// strictly on its label's side (`complete`, one revealed bit), or the information lost rank
    /// after the start because the fitted probabilities went numerically to 0 or 1 (quasi-complete
    /// separation, R's warning). The likelihood has no maximum; no model is published.
    #[error(
        "the classes are {} separated: {}, so the likelihood has no maximum and the coefficients \
         run off to infinity; fit with setting `lambda` > 0, or remove the separating columns",
        if *complete { "completely" } else { "(quasi-completely)" },
        if *complete {
            format!(
                "after {iterations} iterations every one of the {rows} rows is on its label's \
                 side of the coefficients (checked securely: one revealed bit)"
            )
        } else {
            format!(
                "at iteration {iterations} the fitted probabilities went numerically to 0 or 1 \
                 (the information lost rank, though the columns are independent)"
            )
        }
    )]
    Separated {
        /// N.
        rows: usize,
        /// Iterations run.
        iterations: usize,
        /// Every row on its label's side (else quasi-complete: probabilities at 0 or 1).
        complete: bool,
    },
    /// A party refuses to take part, by its own policy.
    #[error("this {party} refuses the study: {reason}")]
    Refused {
        /// The refusing party (the one reporting the error).
        party: Role,
        /// Why.
        reason: Refusal,
    },
    /// A resumed study, or its checkpoint, does not belong with this one.
    #[error(transparent)]
    Resume(#[from] ResumeMismatch),
    /// A checkpoint that cannot be read (bad magic, another version, malformed, or values it
    /// cannot hold).
    #[error("{0}")]
    Checkpoint(CheckpointFault),
    /// The key holder's key file could not be written or read.
    #[error("the key file {}: {detail}", path.display())]
    KeyStore {
        /// The file.
        path: PathBuf,
        /// The cause.
        detail: String,
    },
    /// Bytes that are not a key file [`super::keyholder::encode_kept`] wrote.
    #[error("a malformed key file: {0}")]
    MalformedKeyFile(String),
    /// The study asks for a Paillier modulus size no key can be made of.
    #[error("the study asks for a {0}-bit key; 2048, 3072 or 4096 are supported")]
    UnsupportedKeySize(u32),
    /// The aggregator asked the key holder to decrypt outside circuits more than the study's
    /// public shape allows ([`super::keyholder::DecryptionBudget`]).
    #[error("{}", budget_message(*asked, *allowed, what))]
    DecryptionBudget {
        /// Values asked for.
        asked: usize,
        /// Values the next decryption may have (0: the budget is spent).
        allowed: usize,
        /// What the next decryption is for (`the row count`).
        what: &'static str,
    },
    /// A server's differentially private noise share could not be drawn.
    #[error("{party}, drawing its noise share: {cause}")]
    NoiseShare {
        /// The server.
        party: Role,
        /// Why.
        cause: String,
    },
    /// The key holder's identity could not sign the public key.
    #[error("cannot sign the public key: {0}")]
    Signing(std::io::Error),
    /// The Nodes hold no rows between them.
    #[error("the Nodes hold no rows")]
    NoRows,
    /// A column that is the same on every row of every Node cannot be standardised.
    #[error("column {column:?} is constant ({value}) over all Nodes and cannot be standardised")]
    ConstantColumn {
        /// The column's name.
        column: String,
        /// Its value.
        value: f64,
    },
    /// Values inconsistent with each other or with the study passed by this party's own code
    /// (or a user of this library): a matrix of the wrong shape, a factor that does not exist.
    /// A bug, not a peer's fault.
    #[error("inconsistent arguments: {0}")]
    Inconsistent(Inconsistency),
    /// A thread running a party panicked.
    #[error("the {0}'s thread panicked")]
    Panicked(Role),
    /// A value left the range its public bound or format allows (or a pivot fell below its
    /// threshold): the study stops rather than produce a wrong model.
    #[error("out of range: {0}")]
    Range(Overflow),
    /// A Node could not read its own rows.
    #[error("a Node's data: {0}")]
    Data(#[from] crate::rows::RowsError),
}

impl SecureError {
    /// True when the error only says that the other side went away.
    pub fn is_disconnection(&self) -> bool {
        use std::io::ErrorKind::*;
        matches!(self, Self::Io { cause, .. }
            if matches!(cause.kind(), BrokenPipe | UnexpectedEof | ConnectionReset | ConnectionAborted))
    }

    /// An I/O error: `party` failed to send or receive while doing `activity`.
    pub fn io(party: impl Into<Party>, activity: &'static str, cause: std::io::Error) -> Self {
        Self::Io {
            party: party.into(),
            activity,
            what: None,
            step: None,
            node: None,
            cause,
        }
    }

    /// The same error, naming the Node (1-based) at the other end of an I/O error or the Node
    /// that broke the protocol (other errors are returned unchanged).
    pub fn with_node(mut self, which: usize) -> Self {
        if let Self::Io { node, .. } | Self::Violation { node, .. } = &mut self {
            *node = Some(which);
        }
        self
    }

    /// The same error, naming the protocol step of an I/O error (others unchanged).
    pub fn with_step(mut self, frame: Step) -> Self {
        if let Self::Io { step, .. } = &mut self {
            *step = Some(frame);
        }
        self
    }

    /// The same error, naming what an I/O error's activity was about (others unchanged).
    pub fn with_what(mut self, about: &'static str) -> Self {
        if let Self::Io { what, .. } = &mut self {
            *what = Some(about);
        }
        self
    }

    /// What the transport says about an [`SecureError::Io`]: a lost peer, a refusal, an abort
    /// or a timeout (`None` for other errors, and for I/O errors of in-memory channels).
    pub fn transport(&self) -> Option<&TransportError> {
        match self {
            Self::Io { cause, .. } => TransportError::of(cause),
            _ => None,
        }
    }

    /// A protocol violation by `peer`.
    pub(crate) fn violation(peer: Role, breach: Breach) -> Self {
        Self::Violation {
            peer,
            node: None,
            breach,
        }
    }

    /// A protocol violation by Node `which` (1-based).
    pub(crate) fn node_violation(which: usize, breach: Breach) -> Self {
        Self::Violation {
            peer: Role::Node,
            node: Some(which),
            breach,
        }
    }

    /// An invalid plan.
    pub(crate) fn invalid_plan(setting: &'static str, reason: impl Into<PlanReason>) -> Self {
        Self::InvalidPlan {
            setting,
            reason: reason.into(),
        }
    }

    /// Inconsistent arguments.
    pub(crate) fn inconsistent(what: impl Into<Inconsistency>) -> Self {
        Self::Inconsistent(what.into())
    }

    /// A checkpoint that cannot be used.
    pub(crate) fn checkpoint(fault: CheckpointFault) -> Self {
        Self::Checkpoint(fault)
    }
}

/// Who was sending or receiving when an I/O error struck ([`SecureError::Io`]): a study role,
/// or one of the helpers that are not roles of the study file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Party {
    /// The key holder.
    KeyHolder,
    /// The aggregator.
    Aggregator,
    /// A Node.
    Node,
    /// The dealer of masked-arithmetic correlations.
    Dealer,
    /// The in-process launcher, connecting the parties of a local study.
    Launcher,
}

impl From<Role> for Party {
    fn from(role: Role) -> Self {
        match role {
            Role::KeyHolder => Self::KeyHolder,
            Role::Aggregator => Self::Aggregator,
            Role::Node => Self::Node,
            Role::Dealer => Self::Dealer,
        }
    }
}

impl fmt::Display for Party {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::KeyHolder => "key holder",
            Self::Aggregator => "aggregator",
            Self::Node => "Node",
            Self::Dealer => "the dealer",
            Self::Launcher => "the in-process launcher",
        })
    }
}

/// How a peer broke the protocol ([`SecureError::Violation`]). `what` names the message or
/// value in the words of the site (`a gradient`, `mask width (bits)`); the numbers are the
/// peer's and the study's.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Breach {
    /// A request out of its place: repeated, before its setup, or after its time.
    OutOfOrder {
        /// The request (`a second vertical setup`).
        what: &'static str,
    },
    /// Something the study's plan or configuration does not allow.
    NotInPlan {
        /// What was asked or sent.
        what: &'static str,
    },
    /// A Node joined in the other mode than the study's (vertical or horizontal).
    WrongMode {
        /// Whether the study is vertical (the Node joined as a horizontal party).
        vertical_study: bool,
    },
    /// A vector or list of the wrong length.
    WrongLength {
        /// The vector.
        what: &'static str,
        /// Its length.
        got: u64,
        /// The length the study fixes.
        expected: u64,
    },
    /// A declared number that contradicts the study's (a dimension, a round, a count).
    Mismatch {
        /// The number.
        what: &'static str,
        /// The peer's value.
        got: u64,
        /// The study's value.
        expected: u64,
    },
    /// A matrix of the wrong shape (the one the request fixes expected).
    WrongShape(MatrixShapes),
    /// A number outside its allowed range (`min..=max`).
    OutOfRange {
        /// The number.
        what: &'static str,
        /// The peer's value.
        value: u64,
        /// The least allowed.
        min: u64,
        /// The most allowed.
        max: u64,
    },
    /// More of something than allowed.
    TooMany {
        /// What is counted.
        what: &'static str,
        /// How many were sent or asked for.
        count: u64,
        /// The most allowed.
        limit: u64,
    },
    /// A mask too narrow for the bound it hides (it would leak the value).
    NarrowMask {
        /// The masked value.
        what: &'static str,
        /// The mask's width in bits.
        mask: u32,
        /// The value's bound in bits.
        bound: u32,
    },
    /// A frame or list whose byte length is not a whole number of its items.
    Misaligned {
        /// The frame or list.
        what: &'static str,
        /// Its length in bytes.
        bytes: u64,
        /// The size of one item in bytes.
        unit: u64,
    },
    /// A vertical study's welcome that does not fit the Node reading it.
    VerticalWelcome {
        /// The columns it assigns the Node.
        columns: u64,
        /// The first of them (0-based).
        start: u64,
        /// The study's dimension.
        dimension: u64,
        /// The rows it says the parties share.
        rows: u64,
        /// The rows the Node found shared.
        shared: u64,
        /// The gradient and Hessian rounds it deals.
        rounds: (u64, u64),
    },
    /// A reference to something this party does not hold (a factor, a view).
    Unknown {
        /// What is referred to.
        what: &'static str,
        /// Its number.
        id: u64,
    },
    /// Bytes or contents that are not what they claim (a key of the wrong size, overlapping
    /// blocks, an empty frame).
    Malformed {
        /// What was malformed.
        what: &'static str,
    },
    /// Tags or an intersection answer the private set intersection refuses.
    Psi(PsiError),
    /// A sealed key that does not open, or a recipient key it cannot be sealed for.
    Sealing(SealError),
}

impl Breach {
    /// [`Breach::WrongShape`].
    pub(crate) fn wrong_shape(
        what: &'static str,
        got: (usize, usize),
        expected: (usize, usize),
    ) -> Self {
        Self::WrongShape(MatrixShapes {
            what,
            got,
            expected,
        })
    }

    /// [`Breach::WrongLength`] of lengths counted here.
    pub(crate) fn wrong_length(what: &'static str, got: usize, expected: usize) -> Self {
        Self::WrongLength {
            what,
            got: got as u64,
            expected: expected as u64,
        }
    }
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutOfOrder { what } | Self::NotInPlan { what } | Self::Malformed { what } => {
                f.write_str(what)
            }
            Self::WrongMode {
                vertical_study: true,
            } => f.write_str(
                "joined a vertical study as a horizontal one: give every party the study file's \
                 `vertical = true` and `id` (or setting `vertical` setting `id` COLUMN)",
            ),
            Self::WrongMode {
                vertical_study: false,
            } => f.write_str(
                "joined as a vertical party (node setting `vertical`) a study that is not \
                 vertical: give every party the study file's `vertical = true`, or none",
            ),
            Self::WrongLength {
                what,
                got,
                expected,
            } => write!(f, "{what} of length {got}, expected {expected}"),
            Self::Mismatch {
                what,
                got,
                expected,
            } => write!(f, "{what}: {got}, expected {expected}"),
            Self::WrongShape(shapes) => shapes.describe(f, "of shape"),
            Self::OutOfRange {
                what,
                value,
                min,
                max,
            } => write!(f, "{what} {value}, outside {min} to {max}"),
            Self::TooMany { what, count, limit } => {
                write!(f, "{count} {what}, above the {limit} allowed")
            }
            Self::NarrowMask { what, mask, bound } => write!(
                f,
                "{what}: a mask of {mask} bits for a bound of {bound} bits (sigma = {})",
                super::gc::SIGMA
            ),
            Self::Misaligned { what, bytes, unit } => write!(
                f,
                "{what} of {bytes} bytes, not a whole number of {unit}-byte items"
            ),
            Self::VerticalWelcome {
                columns,
                start,
                dimension,
                rows,
                shared,
                rounds,
            } => write!(
                f,
                "a vertical welcome that does not fit this Node ({columns} columns from {start} \
                 of {dimension}, {rows} rows where {shared} are shared, {} and {} rounds)",
                rounds.0, rounds.1
            ),
            Self::Unknown { what, id } => write!(f, "no {what} {id} is known here"),
            Self::Psi(e) => write!(f, "{e}"),
            Self::Sealing(e) => write!(f, "{e}"),
        }
    }
}

/// A matrix's shape against the one expected, as (rows, columns): a peer's
/// ([`Breach::WrongShape`]) or this party's own ([`Inconsistency::Shape`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatrixShapes {
    /// The matrix (`the matrix of a quadratic form`).
    pub what: &'static str,
    /// Its shape.
    pub got: (usize, usize),
    /// The shape expected.
    pub expected: (usize, usize),
}

impl MatrixShapes {
    /// `{what} {of} r x c, expected r' x c'`.
    fn describe(&self, f: &mut fmt::Formatter<'_>, of: &str) -> fmt::Result {
        let (what, got, expected) = (self.what, self.got, self.expected);
        write!(
            f,
            "{what} {of} {} x {}, expected {} x {}",
            got.0, got.1, expected.0, expected.1
        )
    }
}

/// What this party's own code passed that does not fit together ([`SecureError::Inconsistent`]).
/// A bug, not a peer's fault: the kinds carry the numbers a report needs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inconsistency {
    /// A rule of the code, in a sentence that needs no value.
    Rule(&'static str),
    /// A count that differs from the one expected.
    Count {
        /// What is counted (`weights (of one scale) for the gradient`).
        what: &'static str,
        /// How many there are.
        got: usize,
        /// How many there should be.
        expected: usize,
    },
    /// A vertical table whose values are not its rows times its columns.
    VerticalTable {
        /// Its rows.
        rows: usize,
        /// Its columns.
        columns: usize,
        /// Its values.
        values: usize,
    },
    /// A lower triangle of the wrong size for the study's coefficients.
    Triangle {
        /// Its entries.
        entries: usize,
        /// The coefficients.
        dimension: usize,
    },
    /// More of something than allowed.
    TooMany {
        /// What is counted.
        what: &'static str,
        /// How many.
        count: usize,
        /// The most allowed.
        limit: usize,
    },
    /// A reference to something not held here.
    Unknown {
        /// What is referred to (`factor`).
        what: &'static str,
        /// Its number.
        id: usize,
    },
    /// A matrix of the wrong shape.
    Shape(MatrixShapes),
    /// A block that does not lie inside its matrix.
    Block {
        /// The block's shape.
        shape: (usize, usize),
        /// Its first row and column.
        at: (usize, usize),
        /// The matrix's shape.
        of: (usize, usize),
    },
    /// A product of matrices whose inner sides differ.
    Product {
        /// The left factor's shape.
        left: (usize, usize),
        /// The right one's.
        right: (usize, usize),
    },
    /// A width in bits beyond the one allowed.
    Bits {
        /// What is measured (`a range check's bound`).
        what: &'static str,
        /// Its bits.
        bits: u64,
        /// The most allowed.
        limit: u64,
    },
    /// Identifiers the private set intersection refuses.
    Psi(PsiError),
    /// A block circuit's shape refused by its own check.
    BlockShape(BlockFault),
}

impl From<&'static str> for Inconsistency {
    fn from(rule: &'static str) -> Self {
        Self::Rule(rule)
    }
}

impl fmt::Display for Inconsistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rule(rule) => f.write_str(rule),
            Self::Count {
                what,
                got,
                expected,
            } => write!(f, "{got} {what}, expected {expected}"),
            Self::VerticalTable {
                rows,
                columns,
                values,
            } => write!(
                f,
                "a vertical table of {rows} rows and {columns} columns with {values} values"
            ),
            Self::Triangle { entries, dimension } => write!(
                f,
                "a lower triangle of {entries} entries for {dimension} coefficients"
            ),
            Self::TooMany { what, count, limit } => {
                write!(f, "{count} {what}, at most {limit} allowed")
            }
            Self::Unknown { what, id } => write!(f, "no {what} {id}"),
            Self::Shape(shapes) => shapes.describe(f, "of"),
            Self::Block { shape, at, of } => write!(
                f,
                "a {} x {} block at ({}, {}) of a {} x {} matrix",
                shape.0, shape.1, at.0, at.1, of.0, of.1
            ),
            Self::Product { left, right } => write!(
                f,
                "a {} x {} matrix times a {} x {} one",
                left.0, left.1, right.0, right.1
            ),
            Self::Bits { what, bits, limit } => {
                write!(f, "{what} of {bits} bits, beyond the {limit} allowed")
            }
            Self::Psi(e) => write!(f, "{e}"),
            Self::BlockShape(fault) => write!(f, "{fault}"),
        }
    }
}

/// `Node 2's gradient`, `the key holder's noise share`.
fn shape_sender(from: Role, node: Option<usize>, what: &str) -> String {
    match node {
        Some(node) => format!("Node {node}'s {what}"),
        None => format!("the {from}'s {what}"),
    }
}

/// The first way an encrypted vector differs from its public shape ([`SecureError::Shape`]),
/// as the vector's value and the study's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeMismatch {
    /// Its number of values.
    #[error("{got} values, expected {expected}")]
    Length {
        /// The vector's.
        got: usize,
        /// The study's.
        expected: usize,
    },
    /// Its fractional bits.
    #[error("{got} fractional bits, expected {expected}")]
    Scale {
        /// The vector's.
        got: u32,
        /// The study's.
        expected: u32,
    },
    /// Its declared bound, in bits.
    #[error("a declared bound of {got} bits, the study's is {expected} bits")]
    Bound {
        /// The vector's.
        got: u64,
        /// The study's.
        expected: u64,
    },
    /// Its slot width, in bits.
    #[error("slots of {got} bits, the study's are {expected} bits")]
    Slots {
        /// The vector's.
        got: u32,
        /// The study's.
        expected: u32,
    },
}

/// Why a checkpoint cannot be used ([`SecureError::Checkpoint`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum CheckpointFault {
    /// Bytes that do not start with a checkpoint's magic.
    Magic,
    /// A checkpoint of another format version.
    Version {
        /// Its version.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    /// A flag or kind tag the format does not define.
    Tag {
        /// The tag (`factor kind`).
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// Contents that cannot be what the format says (`bound bits`).
    Malformed {
        /// What was wrong.
        what: &'static str,
    },
    /// An iteration recorded out of its place.
    Order {
        /// The iteration recorded.
        iteration: u64,
        /// Its place (1-based).
        place: usize,
    },
    /// More of something than a checkpoint holds.
    TooMany {
        /// What is counted (`feature names`).
        what: &'static str,
        /// How many it declares.
        count: u64,
        /// The most allowed.
        limit: usize,
    },
    /// An identifier of the wrong length.
    Id {
        /// Its bytes.
        bytes: usize,
    },
    /// The reader's failure (truncated or invalid bytes), kept as it came.
    Read(std::io::Error),
    /// A row count the study cannot have.
    Rows {
        /// The N it records.
        rows: u64,
    },
    /// Standardisation constants that do not match the features.
    Standardization {
        /// The means.
        means: usize,
        /// The scales.
        scales: usize,
        /// The features.
        features: usize,
    },
    /// A saved inverse of the wrong shape.
    SavedInverse {
        /// Its shape.
        shape: (usize, usize),
        /// The coefficients.
        dimension: usize,
    },
    /// A saved factor made by the other linear-algebra method.
    FactorMethod {
        /// This study's method (`masked`; the solver's `LinearAlgebra` is a layer above).
        method: &'static str,
    },
}

impl fmt::Display for CheckpointFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MALFORMED: &str = "a malformed checkpoint: ";
        match self {
            Self::Magic => f.write_str("not a privlogit checkpoint (bad magic)"),
            Self::Version { found, supported } => write!(
                f,
                "a checkpoint of version {found}, this privlogit reads version {supported}"
            ),
            Self::Tag { what, value } => write!(f, "{MALFORMED}{what} {value}"),
            Self::Malformed { what } => write!(f, "{MALFORMED}{what}"),
            Self::Order { iteration, place } => {
                write!(
                    f,
                    "{MALFORMED}iteration {iteration} recorded in place {place}"
                )
            }
            Self::TooMany { what, count, limit } => {
                write!(f, "{MALFORMED}{count} {what} (at most {limit})")
            }
            Self::Id { bytes } => write!(f, "{MALFORMED}an id of {bytes} bytes"),
            Self::Read(e) => write!(f, "{MALFORMED}{e}"),
            Self::Rows { rows } => write!(f, "a checkpoint with N = {rows}"),
            Self::Standardization {
                means,
                scales,
                features,
            } => write!(
                f,
                "a checkpoint's standardisation ({means} means, {scales} scales) does not match \
                 the {features} features"
            ),
            Self::SavedInverse { shape, dimension } => write!(
                f,
                "a saved inverse of {} x {} for {dimension} coefficients",
                shape.0, shape.1
            ),
            Self::FactorMethod { method } => write!(
                f,
                "the saved factor was made by the other linear-algebra method than {method}"
            ),
        }
    }
}

/// Why a plan is refused ([`SecureError::InvalidPlan`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PlanReason {
    /// A rule of the protocol, in a sentence that needs no value.
    Rule(&'static str),
    /// A value the setting does not take.
    Value {
        /// The value's name (`lambda`).
        what: &'static str,
        /// The value.
        value: f64,
        /// What the setting needs.
        rule: &'static str,
    },
    /// More of something than a study takes.
    TooMany {
        /// What is counted (`iterations`).
        what: &'static str,
        /// How many the plan has.
        count: u64,
        /// The most a study takes.
        limit: u64,
    },
    /// Paillier values with too few fractional bits for a method.
    Frac {
        /// The method (`the circuit method`).
        method: &'static str,
        /// The bits it needs.
        need: u32,
        /// Whether more bits would do.
        at_least: bool,
        /// The study's.
        have: u32,
    },
    /// An optimiser that does not go with the protocol.
    Optimizer {
        /// The optimiser.
        optimizer: Optimizer,
        /// The protocol's name (`Local`): the aggregator's `Protocol` is a layer above.
        protocol: &'static str,
    },
    /// A family PrivLogit's constant bound does not cover.
    Family(Family),
    /// A `reveal` setting the study cannot honour.
    Reveal {
        /// The setting's value (`covariance`).
        reveal: &'static str,
        /// Why not.
        why: &'static str,
    },
    /// The Nodes (1-based) holding the label column of a vertical study, other than one.
    LabelHolders(Vec<usize>),
    /// A Node (1-based) of a vertical study with no columns.
    NoColumns(usize),
    /// A column name that two parties (or one, twice) bring to a vertical study.
    RepeatedColumn(String),
    /// Masked linear algebra's bounds, refused when not positive.
    SpdBounds {
        /// The entry bound.
        entry: f64,
        /// The smallest eigenvalue.
        min_eigenvalue: f64,
    },
}

impl PlanReason {
    /// [`PlanReason::TooMany`] of a count kept here.
    pub(crate) fn too_many(what: &'static str, count: usize, limit: usize) -> Self {
        Self::TooMany {
            what,
            count: count as u64,
            limit: limit as u64,
        }
    }
}

impl From<&'static str> for PlanReason {
    fn from(rule: &'static str) -> Self {
        Self::Rule(rule)
    }
}

impl fmt::Display for PlanReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rule(rule) => f.write_str(rule),
            Self::Value { what, value, rule } => write!(f, "{what} = {value}: {rule}"),
            Self::TooMany { what, count, limit } => {
                write!(f, "{count} {what}, at most {limit} in a secure study")
            }
            Self::Frac {
                method,
                need,
                at_least,
                have,
            } => write!(
                f,
                "{method} needs Paillier values at {need} fractional bits{}, the study has {have}",
                if *at_least { " or more" } else { "" }
            ),
            Self::Optimizer {
                optimizer,
                protocol,
            } => write!(
                f,
                "optimizer {optimizer} does not go with protocol {protocol}"
            ),
            Self::Family(family) => write!(
                f,
                "the {family} family is fitted by secure Newton: PrivLogit's constant bound on \
                 the information exists for the binomial only"
            ),
            Self::Reveal { reveal, why } => write!(
                f,
                "setting `reveal` {reveal}: {why}, or setting `reveal` coefficients"
            ),
            Self::LabelHolders(nodes) if nodes.is_empty() => f.write_str(
                "a vertical study needs exactly one Node with the label column; none has it",
            ),
            Self::LabelHolders(nodes) => {
                f.write_str("a vertical study needs exactly one Node with the label column; ")?;
                for (k, node) in nodes.iter().enumerate() {
                    if k > 0 {
                        f.write_str(" and ")?;
                    }
                    write!(f, "Node {node}")?;
                }
                f.write_str(" have it")
            }
            Self::NoColumns(node) => write!(f, "Node {node} brings no columns"),
            Self::RepeatedColumn(name) => write!(
                f,
                "the column {name:?} comes from two parties (or twice): a vertical study's \
                 columns need distinct names"
            ),
            Self::SpdBounds {
                entry,
                min_eigenvalue,
            } => write!(
                f,
                "masked linear algebra needs a positive entry bound and a positive smallest \
                 eigenvalue (lambda > 0); got {entry} and {min_eigenvalue}"
            ),
        }
    }
}

/// A value that left the range its public bound or format allows ([`SecureError::Range`]).
/// Bounds are powers of two, given by their exponent in bits.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Overflow {
    /// A value past a public bound, in a sentence that needs no number.
    Bound(&'static str),
    /// The curvature matrix's inverse is too large for the step to be accurate at `frac` bits.
    IllConditioned {
        /// The fractional bits.
        frac: u32,
        /// The largest trace of the inverse the accuracy allows.
        norm: f64,
        /// The step's accuracy.
        tolerance: f64,
    },
    /// A value of the circuit method's solve left the circuit format.
    CircuitStep {
        /// The format's width in bits.
        width: u32,
        /// Its fractional bits.
        frac: u32,
    },
    /// A value of the circuit method's factorisation left the format, or a pivot fell below
    /// its threshold.
    CircuitFactor {
        /// The format's width in bits.
        width: u32,
        /// Its fractional bits.
        frac: u32,
        /// The least pivot.
        threshold: f64,
    },
    /// A Node holds more rows than the study allows.
    Rows {
        /// Its rows.
        rows: u64,
        /// The study's limit.
        limit: u64,
    },
    /// A column's mean or variance is too large for the standardisation's sums.
    Moment {
        /// The Node's data (a file, as the Node describes it).
        source: String,
        /// The column's name, or `None` where only its position (1-based) is known.
        name: Option<String>,
        /// The column's position (1-based).
        column: usize,
        /// A variance (else a mean).
        variance: bool,
        /// The value.
        value: f64,
        /// The bound's bits.
        bits: u32,
    },
    /// A Node's value (a sum over its rows divided by N) past the study's value bound.
    NodeValue {
        /// The value.
        value: f64,
        /// The bound's bits.
        bits: u32,
    },
    /// The objective's DP noise does not fit the value bound.
    Noise {
        /// The noise's norm.
        norm: f64,
        /// The rows it is spread over.
        rows: usize,
        /// The bound's bits.
        bits: u32,
    },
    /// A summed gradient's bound leaves no room for its mask in its slots.
    GradientMask {
        /// The bound's bits.
        bound: u32,
        /// The slots' bits.
        slot_bits: u32,
    },
    /// A step entry reached the acceptance test's public bound.
    StepEntry {
        /// The bound's bits.
        bits: u32,
    },
    /// A value entering a comparison circuit did not fit its word.
    Comparison {
        /// The comparison.
        kind: Comparison,
        /// The word's bits.
        width: usize,
    },
    /// A held-out row's predicted probability outside 0 to 1.
    Probability(f64),
    /// A vertical round needs products the parties did not deal.
    Undealt {
        /// The round (1-based).
        round: u64,
        /// The rounds dealt.
        dealt: u64,
        /// Of which secure Newton's.
        newton: u64,
    },
    /// A vertical round past the rounds dealt.
    BeyondDeal {
        /// The round.
        round: u64,
        /// A secure Newton round.
        newton: bool,
    },
    /// A pivot of masked linear algebra fell below its threshold or past its bound.
    Pivot {
        /// The threshold.
        threshold: f64,
        /// The bound.
        bound: f64,
    },
    /// A masked value outside the range its public bound allows.
    Masked {
        /// The value (`a product`).
        what: &'static str,
        /// The bound's bits.
        bits: u32,
    },
    /// The coefficients' absolute sum could overflow the vertical circuit's linear predictor.
    Predictor {
        /// The sum.
        l1: f64,
        /// Its limit.
        limit: f64,
    },
    /// A vertical deal refused.
    Deal(DealError),
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bound(what) => f.write_str(what),
            Self::IllConditioned {
                frac,
                norm,
                tolerance,
            } => write!(
                f,
                "the curvature matrix is too ill-conditioned for {frac} fractional bits: the \
                 trace of its inverse exceeds {norm:.3e}, so the secure step would be off by more \
                 than {tolerance:e} (raise lambda, or remove collinear columns)"
            ),
            Self::CircuitStep { width, frac } => write!(
                f,
                "a value of the step left the {width}/{frac} circuit format's range (the \
                 curvature matrix is too ill-conditioned for the circuit: raise lambda or use \
                 setting `linear_algebra` masked)"
            ),
            Self::CircuitFactor {
                width,
                frac,
                threshold,
            } => write!(
                f,
                "a value left the {width}/{frac} circuit format's range, or a pivot fell below \
                 {threshold:.3e}: the curvature matrix is too ill-conditioned for the circuit \
                 (raise lambda, remove collinear columns, or use setting `linear_algebra` masked)"
            ),
            Self::Rows { rows, limit } => write!(
                f,
                "a Node holds {rows} rows, above the study's limit {limit}"
            ),
            Self::Moment {
                source,
                name,
                column,
                variance,
                value,
                bits,
            } => {
                write!(f, "{source}: column ")?;
                match name {
                    Some(name) => write!(f, "{name:?}")?,
                    None => write!(f, "{column}")?,
                }
                write!(
                    f,
                    ": its {} over the study's rows is {value:e}, beyond 2^{bits}: a value there \
                     is far too large; rescale the column",
                    if *variance { "variance" } else { "mean" }
                )
            }
            Self::NodeValue { value, .. } if !value.is_finite() => write!(
                f,
                "a Node's value is {value} (a sum over its rows divided by N): its linear \
                 predictor overflowed at these coefficients (exp of a value past 709 under the \
                 log link: an offset or a column far too large; check the offset column's values)"
            ),
            Self::NodeValue { value, bits } => write!(
                f,
                "a Node's value {value} (a sum over its rows divided by N) is outside the study's \
                 public bound 2^{bits}: standardise the features (setting `standardize`) or \
                 rescale the large columns"
            ),
            Self::Noise { norm, rows, bits } => write!(
                f,
                "the objective's noise (norm {norm:.3e} over {rows} rows) does not fit the \
                 study's public value bound 2^{bits}: epsilon is too small for this study"
            ),
            Self::GradientMask { bound, slot_bits } => write!(
                f,
                "the summed gradient's bound 2^{bound} leaves no room for its mask in \
                 {slot_bits}-bit slots (the penalty's gradient term is too large: lower lambda or \
                 standardise the features)"
            ),
            Self::StepEntry { bits } => write!(
                f,
                "a step entry of 2^{bits} or more (the public bound of the acceptance test's dot \
                 product): the coefficients diverge; standardise the features or raise lambda"
            ),
            Self::Comparison { kind, width } => write!(
                f,
                "a value entering the {kind:?} comparison did not fit its {width}-bit word"
            ),
            Self::Probability(p) => write!(
                f,
                "a held-out row's predicted probability {p} is not a probability"
            ),
            Self::Undealt {
                round,
                dealt,
                newton,
            } => write!(
                f,
                "round {round} needs products the parties did not deal: they dealt {dealt} \
                 rounds, {newton} of them secure Newton's"
            ),
            Self::BeyondDeal { round, newton } => write!(
                f,
                "{}round {round} is beyond the rounds the parties dealt",
                if *newton { "Newton " } else { "" }
            ),
            Self::Pivot { threshold, bound } => write!(
                f,
                "a pivot fell below its public threshold {threshold:.3e} or past its bound \
                 {bound:.3e}: the matrix is not positive definite at working precision (raise \
                 lambda, or remove collinear columns)"
            ),
            Self::Masked { what, bits } => write!(
                f,
                "{what}: a masked value is outside the range its public bound 2^{bits} allows (a \
                 value outgrew the bound its format assumes)"
            ),
            Self::Predictor { l1, limit } => write!(
                f,
                "the coefficients' absolute sum {l1:.3e} reaches {limit}: the vertical circuit's \
                 linear predictor could overflow (standardise the columns, or raise lambda)"
            ),
            Self::Deal(e) => write!(f, "{e}"),
        }
    }
}

/// Why a party refuses a study by its own policy ([`SecureError::Refused`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The key holder's public key is shorter than this party accepts.
    ShortKey {
        /// The key's modulus size.
        bits: u64,
        /// The least this party accepts.
        required: u32,
    },
    /// The public key is not signed by the key holder the study file names, for this study and
    /// session (or the PSI key's recipients are not the study's Nodes).
    Unendorsed(Unendorsement),
    /// The study is differentially private and this server has no noise share to draw.
    NoNoiseShare,
    /// The party's own rule (a Node's privacy ledger, ...), in its words.
    Policy(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ShortKey { bits, required } => write!(
                f,
                "the key holder's key has {bits} bits, at least {required} are required"
            ),
            Self::Unendorsed(why) => write!(
                f,
                "the study's public key is not endorsed by the key holder the study file names: \
                 {why}"
            ),
            Self::NoNoiseShare => f.write_str(
                "the study is differentially private, and this party has no noise share to \
                 draw (configure it for DP studies)",
            ),
            Self::Policy(why) => f.write_str(why),
        }
    }
}

/// How an endorsement fails ([`Refusal::Unendorsed`]): of the study's public key, or of the
/// keys relayed as the PSI key's recipients. The transport's own reasons (an unknown
/// certificate, a signature that does not verify) stay in its words.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unendorsement {
    /// The public key comes without a signature.
    Unsigned,
    /// Signed with the certificate of another member than the key holder.
    OtherSigner {
        /// The certificate's fingerprint.
        certificate: Fingerprint,
        /// The role of the member whose it is.
        signer: Role,
        /// That member's name in the study file.
        name: String,
    },
    /// Signed with a certificate the study file does not name.
    UnknownSigner {
        /// The certificate's fingerprint.
        certificate: Fingerprint,
        /// Why the roster does not know it (the transport's words).
        why: String,
    },
    /// A signature that does not verify (the transport's words).
    Signature(String),
    /// Not one relayed recipient key for each other Node.
    RecipientCount {
        /// Keys relayed.
        relayed: usize,
        /// Other Nodes the study file names.
        expected: usize,
    },
    /// A recipient key without a signature.
    RecipientUnsigned,
    /// A recipient key signed with the checking Node's own certificate.
    RecipientOwn,
    /// A recipient key signed by a member that is not a Node.
    RecipientNotNode {
        /// The certificate's fingerprint.
        certificate: Fingerprint,
        /// The role of the member whose it is.
        signer: Role,
        /// That member's name in the study file.
        name: String,
    },
    /// A recipient key signed with a certificate the study file does not name.
    RecipientUnknown {
        /// The certificate's fingerprint.
        certificate: Fingerprint,
        /// Why the roster does not know it (the transport's words).
        why: String,
    },
    /// Two recipient keys signed by one Node.
    RecipientRepeated {
        /// The Node's name in the study file.
        name: String,
    },
    /// A recipient key whose signature does not verify.
    RecipientSignature {
        /// The name of the Node that signed it.
        name: String,
        /// Why (the transport's words).
        why: String,
    },
}

impl fmt::Display for Unendorsement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const RECIPIENTS: &str = "the PSI key's recipients: ";
        match self {
            Self::Unsigned => f.write_str("it comes without a signature"),
            Self::OtherSigner {
                certificate,
                signer,
                name,
            } => write!(
                f,
                "signed with certificate {certificate}, which is {}'s, expected the key holder's",
                Signer(*signer, name)
            ),
            Self::UnknownSigner { certificate, why } => write!(
                f,
                "signed with certificate {certificate}, expected the key holder's: {why}"
            ),
            Self::Signature(why) => f.write_str(why),
            Self::RecipientCount { relayed, expected } => write!(
                f,
                "{RECIPIENTS}{relayed} keys relayed where the study file names {expected} other \
                 Nodes"
            ),
            Self::RecipientUnsigned => write!(f, "{RECIPIENTS}a key comes without a signature"),
            Self::RecipientOwn => write!(
                f,
                "{RECIPIENTS}a key signed with this Node's own certificate"
            ),
            Self::RecipientNotNode {
                certificate,
                signer,
                name,
            } => write!(
                f,
                "{RECIPIENTS}a key signed with certificate {certificate}, which is {}'s, not a \
                 Node's",
                Signer(*signer, name)
            ),
            Self::RecipientUnknown { certificate, why } => write!(
                f,
                "{RECIPIENTS}a key signed with certificate {certificate}, no Node's: {why}"
            ),
            Self::RecipientRepeated { name } => {
                write!(f, "{RECIPIENTS}two keys signed by Node {name}")
            }
            Self::RecipientSignature { name, why } => {
                write!(f, "{RECIPIENTS}Node {name}'s key: {why}")
            }
        }
    }
}

/// A member of the study file as the roster prints it (`Node a`, `the aggregator (agg)`).
struct Signer<'a>(Role, &'a str);

impl fmt::Display for Signer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Role::Node => write!(f, "Node {}", self.1),
            role => write!(f, "the {role} ({})", self.1),
        }
    }
}

/// A resumed study that does not continue this one ([`SecureError::Resume`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeMismatch {
    /// The checkpoint's study id is not this study's.
    #[error("the checkpoint belongs to another study (its study id differs)")]
    OtherStudy,
    /// The checkpoint's plan digest is not this plan's.
    #[error(
        "the checkpoint was written for another plan (protocol, optimiser, lambda, stopping \
         rule, formats or parties differ): resume with the first run's settings"
    )]
    OtherPlan,
    /// The checkpoint names another public key than the one it is read with.
    #[error("the checkpoint was written under another public key")]
    CheckpointKey,
    /// The key holder keeps no key for the session the aggregator resumes.
    #[error(
        "the aggregator resumes study session {session:#x}, but this key holder keeps no key \
         for it (start it with setting `resume` and the setting `state` directory of the first run)"
    )]
    NoKeptKey {
        /// The session.
        session: u64,
    },
    /// The aggregator resumes under another public key than the key holder kept.
    #[error(
        "the aggregator resumes the study under another public key than the one this key \
         holder kept"
    )]
    KeptKeyDiffers,
    /// The key holder answered a resumed study with another public key than the checkpoint's.
    #[error("the key holder answered a resumed study with another public key")]
    AnsweredWithAnotherKey,
    /// The Nodes' rows are not the first run's: another N, or other pooled means.
    #[error(
        "the Nodes' rows are not the checkpointed run's ({what}): resume with every Node's \
         first data file, or remove the checkpoint to start the study over"
    )]
    OtherRows {
        /// What differs (`N 479, the checkpoint's 569`).
        what: String,
    },
}

fn columns_message(
    node: usize,
    column: usize,
    node1: &Option<String>,
    theirs: &Option<String>,
    (first, these): (usize, usize),
) -> String {
    match (node1, theirs) {
        (Some(a), Some(b)) => {
            format!("Node {node}'s column {column} is {b:?} where Node 1 has {a:?}")
        }
        _ => {
            let (extra, who) = match (node1, theirs) {
                (None, Some(b)) => (b, node),
                (Some(a), None) => (a, 1),
                _ => {
                    return format!(
                        "Node {node} has {these} feature columns and Node 1 has {first}"
                    );
                }
            };
            format!(
                "Node {node} has {these} feature columns and Node 1 has {first}: column {extra:?} \
                 of Node {who} has no counterpart"
            )
        }
    }
}

/// An I/O error's text: what the party was doing, then why. When another connection's loss
/// stopped this one, the lost party leads and the link read at the time follows in brackets
/// (it read `receiving from Node 1: the key holder hung up`, as if Node 1 were at fault).
fn io_text(
    party: Party,
    activity: &str,
    what: Option<&str>,
    step: Option<Step>,
    node: Option<usize>,
    cause: &std::io::Error,
) -> String {
    let doing = io_message(party, activity, what, step, node);
    match TransportError::of(cause) {
        Some(TransportError::Aborted {
            lost_peer: Some(_), ..
        }) => format!(
            "{party}: {cause} (noticed while {})",
            doing.strip_prefix(&format!("{party}, ")).unwrap_or(&doing)
        ),
        _ => format!("{doing}: {cause}"),
    }
}

fn io_message(
    party: Party,
    activity: &str,
    what: Option<&str>,
    step: Option<Step>,
    node: Option<usize>,
) -> String {
    let mut out = format!("{party}, {activity}");
    if let Some(node) = node {
        out.push_str(&format!(" Node {node}"));
    }
    if let Some(what) = what {
        out.push_str(&format!(": {what}"));
    }
    if let Some(step) = step {
        out.push_str(&format!(" (step {step:?})"));
    }
    out
}

fn violation_message(node: Option<usize>, breach: &Breach) -> String {
    match node {
        Some(node) => format!("protocol error by Node {node}: {breach}"),
        None => format!("protocol error: {breach}"),
    }
}

fn budget_message(asked: usize, allowed: usize, what: &str) -> String {
    let allows = if allowed == 0 {
        "nothing more".to_string()
    } else {
        format!("{allowed} ({what})")
    };
    format!(
        "the aggregator asked the key holder to decrypt {asked} values where the study's budget \
         allows {allows} (refused: outside the decryption budget)"
    )
}

/// Why no block circuit can be built for a block shape (`masked::msgs::BlockShape`), with its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockFault {
    /// A side of 0 or above the largest a circuit inverts.
    #[error("a block of side {size} (at most {max})")]
    Side {
        /// The side.
        size: usize,
        /// The largest.
        max: usize,
    },
    /// Words too narrow or too wide for the fractional bits.
    #[error("a block circuit of {width}-bit words at {frac} fractional bits")]
    Words {
        /// The word width.
        width: u32,
        /// The fractional bits.
        frac: u32,
    },
    /// Words too narrow for the block's bounds.
    #[error("{width}-bit words below the block's bounds ({entry}, {input}, {output})")]
    Bounds {
        /// The word width.
        width: u32,
        /// Bits of the entry bound.
        entry: u32,
        /// Bits of the input bound.
        input: u32,
        /// Bits of the output bound.
        output: u32,
    },
    /// A mask narrower than the bound it hides.
    #[error("a mask narrower than its bound")]
    NarrowMask,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sentences callers (and the command-line tests) look for.
    #[test]
    fn messages_are_the_studys_sentences() {
        let differs = SecureError::ColumnsDiffer {
            node: 3,
            column: 2,
            node1: Some("bmi".into()),
            theirs: Some("weight".into()),
            counts: (4, 4),
        };
        assert_eq!(
            differs.to_string(),
            "Node 3's column 2 is \"weight\" where Node 1 has \"bmi\""
        );
        let shorter = SecureError::ColumnsDiffer {
            node: 2,
            column: 3,
            node1: Some("age".into()),
            theirs: None,
            counts: (3, 2),
        };
        assert_eq!(
            shorter.to_string(),
            "Node 2 has 2 feature columns and Node 1 has 3: column \"age\" of Node 1 has no \
             counterpart"
        );
        let spent = SecureError::DecryptionBudget {
            asked: 3,
            allowed: 0,
            what: "the row count",
        };
        assert!(spent.to_string().contains("allows nothing more"), "{spent}");
        let refused = SecureError::Refused {
            party: Role::Node,
            reason: Refusal::Policy("budget exceeded".into()),
        };
        assert_eq!(
            refused.to_string(),
            "this Node refuses the study: budget exceeded"
        );
        let share = SecureError::NoiseShare {
            party: Role::KeyHolder,
            cause: "no".into(),
        };
        assert_eq!(share.to_string(), "key holder, drawing its noise share: no");
        assert!(
            SecureError::from(ResumeMismatch::OtherPlan)
                .to_string()
                .contains("another plan")
        );
    }

    /// An I/O error names the party, its activity, the step and the Node, and still tells a
    /// lost peer apart.
    #[test]
    fn io_errors_carry_who_and_what() {
        let lost = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let e = SecureError::io(Role::Aggregator, "sending to", lost)
            .with_step(Step::Gradient)
            .with_node(2);
        assert!(e.is_disconnection());
        assert!(e.transport().is_none());
        assert!(
            matches!(
                e,
                SecureError::Io {
                    party: Party::Aggregator,
                    activity: "sending to",
                    step: Some(Step::Gradient),
                    node: Some(2),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .starts_with("aggregator, sending to Node 2 (step Gradient): "),
            "{e}"
        );
        let dealer =
            SecureError::io(Party::Dealer, "serving the aggregator", eof()).with_what("a deal");
        assert!(
            dealer
                .to_string()
                .starts_with("the dealer, serving the aggregator: a deal: "),
            "{dealer}"
        );
    }

    fn eof() -> std::io::Error {
        std::io::Error::from(std::io::ErrorKind::UnexpectedEof)
    }

    /// A violation is matched by kind and prints the facts of the old sentences.
    #[test]
    fn violations_are_typed_sentences() {
        let e = SecureError::node_violation(
            3,
            Breach::TooMany {
                what: "columns declared",
                count: 5000,
                limit: 4096,
            },
        );
        assert!(matches!(
            e,
            SecureError::Violation {
                peer: Role::Node,
                node: Some(3),
                breach: Breach::TooMany { count: 5000, .. },
            }
        ));
        assert_eq!(
            e.to_string(),
            "protocol error by Node 3: 5000 columns declared, above the 4096 allowed"
        );
        let wrong = SecureError::violation(
            Role::Aggregator,
            Breach::WrongLength {
                what: "malformed request",
                got: 3,
                expected: 6,
            },
        );
        assert_eq!(
            wrong.to_string(),
            "protocol error: malformed request of length 3, expected 6"
        );
        let mode = SecureError::node_violation(
            2,
            Breach::WrongMode {
                vertical_study: true,
            },
        );
        assert!(
            mode.to_string()
                .contains("Node 2: joined a vertical study as a horizontal one"),
            "{mode}"
        );
        let range = Breach::OutOfRange {
            what: "malformed request: mask width (bits)",
            value: 9,
            min: 64,
            max: 4096,
        };
        assert_eq!(
            range.to_string(),
            "malformed request: mask width (bits) 9, outside 64 to 4096"
        );
        let shape = Breach::wrong_shape("an inverse", (2, 3), (3, 3));
        assert_eq!(
            shape.to_string(),
            "an inverse of shape 2 x 3, expected 3 x 3"
        );
        let order = SecureError::violation(
            Role::Aggregator,
            Breach::OutOfOrder {
                what: "a second vertical setup",
            },
        );
        assert_eq!(order.to_string(), "protocol error: a second vertical setup");
    }

    /// A refused plan and a value out of range print their values.
    #[test]
    fn plans_and_ranges_print_their_values() {
        let labels = SecureError::invalid_plan("label", PlanReason::LabelHolders(vec![1, 3]));
        assert_eq!(
            labels.to_string(),
            "a vertical study needs exactly one Node with the label column; Node 1 and Node 3 \
             have it"
        );
        let none = PlanReason::LabelHolders(Vec::new());
        assert!(none.to_string().ends_with("none has it"), "{none}");
        let many = PlanReason::TooMany {
            what: "iterations",
            count: 20_000,
            limit: 10_000,
        };
        assert_eq!(
            many.to_string(),
            "20000 iterations, at most 10000 in a secure study"
        );
        let beyond = SecureError::Range(Overflow::BeyondDeal {
            round: 7,
            newton: true,
        });
        assert_eq!(
            beyond.to_string(),
            "out of range: Newton round 7 is beyond the rounds the parties dealt"
        );
    }

    /// Inconsistent arguments, checkpoints and shapes print the numbers they carry.
    #[test]
    fn inconsistencies_checkpoints_and_shapes_print_their_facts() {
        let triangle = SecureError::inconsistent(Inconsistency::Triangle {
            entries: 5,
            dimension: 3,
        });
        assert_eq!(
            triangle.to_string(),
            "inconsistent arguments: a lower triangle of 5 entries for 3 coefficients"
        );
        assert!(matches!(
            triangle,
            SecureError::Inconsistent(Inconsistency::Triangle { dimension: 3, .. })
        ));
        let rule = SecureError::inconsistent("an empty inverse");
        assert_eq!(rule.to_string(), "inconsistent arguments: an empty inverse");
        let product = Inconsistency::Product {
            left: (2, 3),
            right: (4, 5),
        };
        assert_eq!(product.to_string(), "a 2 x 3 matrix times a 4 x 5 one");
        let version = SecureError::checkpoint(CheckpointFault::Version {
            found: 9,
            supported: 2,
        });
        assert_eq!(
            version.to_string(),
            "a checkpoint of version 9, this privlogit reads version 2"
        );
        let many = CheckpointFault::TooMany {
            what: "feature names",
            count: 5000,
            limit: 4096,
        };
        assert_eq!(
            many.to_string(),
            "a malformed checkpoint: 5000 feature names (at most 4096)"
        );
        let shape = SecureError::Shape {
            from: Role::KeyHolder,
            node: None,
            what: "noise share",
            mismatch: ShapeMismatch::Length {
                got: 3,
                expected: 4,
            },
        };
        assert!(
            shape.to_string().starts_with(
                "protocol error: the key holder's noise share has 3 values, expected 4"
            ),
            "{shape}"
        );
        let count = Unendorsement::RecipientCount {
            relayed: 1,
            expected: 2,
        };
        assert_eq!(
            count.to_string(),
            "the PSI key's recipients: 1 keys relayed where the study file names 2 other Nodes"
        );
    }
}
