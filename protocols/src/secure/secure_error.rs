//! What can stop a secure study, as values a caller can match on.
//!
//! Every variant carries the facts a user needs (which party, which setting, ours and theirs)
//! and prints the sentence the study has always printed. Transport failures (a lost peer, a
//! refused certificate, an abort, a timeout) stay [`SecureError::Io`], whose cause is the
//! transport's `io::Error`; [`SecureError::transport`] tells them apart.

use std::fmt;
use std::path::PathBuf;

use crate::paillier::PaillierError;
use crate::transport::{Role, TransportError};

/// What can stop a secure study.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecureError {
    /// A party could not send or receive (it disconnected, or sent something malformed).
    /// [`SecureError::transport`] says whether the transport lost the peer, was refused, was
    /// aborted or timed out.
    #[error("{context}: {cause}")]
    Io {
        /// Who was doing what.
        context: String,
        /// The underlying error (in the message, not chained, so it is printed once).
        cause: std::io::Error,
    },
    /// A Paillier operation was refused.
    #[error(transparent)]
    Paillier(#[from] PaillierError),
    /// A peer broke the protocol: a request out of place (before the setup, twice), a message
    /// whose contents contradict the study's public parameters, or an answer of the wrong
    /// shape.
    #[error("protocol error: {detail}")]
    Violation {
        /// The party that broke the protocol (as this party sees it).
        peer: Role,
        /// What was wrong.
        detail: String,
    },
    /// An encrypted vector whose public shape (length, scale, declared bound, packing) is not
    /// the one the study's parameters fix.
    #[error(
        "protocol error: {what} has {mismatch}: refused (every width must follow the study's \
         public parameters)"
    )]
    Shape {
        /// The vector and its sender (`Node 2's gradient`).
        what: String,
        /// The first difference (`a declared bound of 4 bits, the study's is 9 bits`).
        mismatch: String,
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
        /// Why, in a sentence that names the value.
        reason: String,
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
    #[error("{detail}")]
    Checkpoint {
        /// What was wrong, in a sentence.
        detail: String,
    },
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
    Inconsistent(String),
    /// A thread running a party panicked.
    #[error("the {0}'s thread panicked")]
    Panicked(Role),
    /// A value left the range its public bound or format allows (or a pivot fell below its
    /// threshold): the study stops rather than produce a wrong model.
    #[error("out of range: {0}")]
    Range(String),
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

    /// An I/O error with who was doing what.
    pub fn io(context: String, cause: std::io::Error) -> Self {
        Self::Io { context, cause }
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
    pub(crate) fn violation(peer: Role, detail: impl Into<String>) -> Self {
        Self::Violation {
            peer,
            detail: detail.into(),
        }
    }

    /// An invalid plan.
    pub(crate) fn invalid_plan(setting: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidPlan {
            setting,
            reason: reason.into(),
        }
    }

    /// Inconsistent arguments.
    pub(crate) fn inconsistent(detail: impl Into<String>) -> Self {
        Self::Inconsistent(detail.into())
    }

    /// A checkpoint that cannot be used.
    pub(crate) fn checkpoint(detail: impl Into<String>) -> Self {
        Self::Checkpoint {
            detail: detail.into(),
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
    /// session.
    Unendorsed(String),
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
}
