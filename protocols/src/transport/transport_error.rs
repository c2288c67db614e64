//! What the transport says about a failed connection, carried inside the `io::Error`s it
//! returns (same kind, same message), so that a caller can tell a lost peer from a refused
//! certificate, another study, an abort or a timeout without reading the message.

use std::io;

/// Why a connection failed, as the payload of the transport's `io::Error`s
/// ([`TransportError::of`] finds it; [`crate::secure::SecureError::transport`] through a study's
/// errors). Nothing of it goes on the wire: the peers' messages are what they always were.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The peer hung up, ended the connection, sent something that is not a record, or gave no
    /// sign of life within the deadline.
    #[error("{message}")]
    PeerLost {
        /// The peer (`Node hospital-a`, `the key holder (keyholder)`).
        peer: String,
        /// What happened, as printed.
        message: String,
    },
    /// This party's connections were stopped: a peer sent an abort, this party aborted, or
    /// another of its connections lost its peer (then named in `lost_peer`).
    #[error("{message}")]
    Aborted {
        /// The reason, as printed.
        message: String,
        /// The peer whose loss stopped the connections, when that is why.
        lost_peer: Option<String>,
    },
    /// The listener at `address` does not accept this party's certificate in its role.
    #[error("{message}")]
    CertificateRefused {
        /// The server connected to.
        peer: String,
        /// Its address.
        address: String,
        /// The refusal, as printed.
        message: String,
    },
    /// The listener at `address` belongs to another study (its study file differs).
    #[error("{message}")]
    OtherStudy {
        /// The server connected to.
        peer: String,
        /// Its address.
        address: String,
        /// The refusal, as printed.
        message: String,
    },
    /// The listener at `address` refused this party for another reason (its role or name).
    #[error("{message}")]
    Refused {
        /// The server connected to.
        peer: String,
        /// Its address.
        address: String,
        /// The refusal, as printed.
        message: String,
    },
    /// Nobody answered at the server's address within the patience.
    #[error("{message}")]
    Unreachable {
        /// The server connected to.
        peer: String,
        /// Its address.
        address: String,
        /// What happened, as printed.
        message: String,
    },
    /// A connection, handshake, admission or closing did not finish within its deadline.
    #[error("{message}")]
    TimedOut {
        /// What did not finish, as printed.
        message: String,
    },
}

impl TransportError {
    /// The transport's account of `e`, if the transport made it.
    pub fn of(e: &io::Error) -> Option<&TransportError> {
        e.get_ref()?.downcast_ref()
    }

    /// As an `io::Error` of `kind` (its message is this error's).
    pub(crate) fn into_io(self, kind: io::ErrorKind) -> io::Error {
        io::Error::new(kind, self)
    }
}
