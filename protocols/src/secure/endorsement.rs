//! The key holder's signature on the study's Paillier public key, so that a Node encrypts only
//! under the key of the key holder its study file names, even though the key reaches it through
//! the aggregator: without it, an aggregator (or whoever took its place) could hand the Nodes a
//! key of its own and decrypt their sums.
//!
//! The key holder signs `"privlogit key endorsement v1"`, the study id, the session id and the
//! key's bytes with its certificate's key (ECDSA P-256, SHA-256); the aggregator forwards the
//! certificate and the signature with the key; every Node (and the aggregator) checks that the
//! certificate is the key holder's as the study file names it (by fingerprint, or issued by the
//! consortium authority for the key holder's name) and that the signature holds.

use std::sync::Arc;

use crate::transport::roster::Side;
use crate::transport::{Fingerprint, Identity, Role, Roster};

use super::{Refusal, SecureError};

/// What the key holder signs.
fn message(study: &[u8; 32], session: u64, key: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(68 + key.len());
    m.extend_from_slice(b"privlogit key endorsement v1\0");
    m.extend_from_slice(study);
    m.extend_from_slice(&session.to_le_bytes());
    m.extend_from_slice(key);
    m
}

/// The key holder's side: its identity and the study.
#[derive(Debug, Clone)]
pub struct Endorser {
    /// The key holder's identity.
    pub identity: Arc<Identity>,
    /// The study id (see `Roster::study_id`).
    pub study: [u8; 32],
}

/// A certificate and a signature over a public key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endorsement {
    /// The signer's certificate, DER (empty when there is none: plaintext studies).
    pub certificate: Vec<u8>,
    /// The signature.
    pub signature: Vec<u8>,
}

impl Endorser {
    /// Signs `key` (its bytes) for `session`.
    pub fn endorse(&self, session: u64, key: &[u8]) -> Result<Endorsement, SecureError> {
        let signature = self
            .identity
            .sign(&message(&self.study, session, key))
            .map_err(SecureError::Signing)?;
        Ok(Endorsement {
            certificate: self.identity.certificate().to_vec(),
            signature,
        })
    }
}

/// A Node's (or the aggregator's) side: whose signature it requires.
#[derive(Debug, Clone)]
pub struct KeyTrust {
    /// The study's parties, the key holder among them.
    pub roster: Arc<Roster>,
    /// The study id.
    pub study: [u8; 32],
}

impl KeyTrust {
    /// Checks that `endorsement` is the named key holder's signature on `key` for `session`
    /// (a refusal is this Node's).
    pub fn check(
        &self,
        session: u64,
        key: &[u8],
        endorsement: &Endorsement,
    ) -> Result<(), SecureError> {
        let refuse = |why: String| SecureError::Refused {
            party: Role::Node,
            reason: Refusal::Unendorsed(why),
        };
        if endorsement.certificate.is_empty() {
            return Err(refuse("it comes without a signature".into()));
        }
        let got = Fingerprint::of(&endorsement.certificate);
        let der = rustls::pki_types::CertificateDer::from(endorsement.certificate.as_slice());
        match self.roster.identify(&der, &[], Side::Server) {
            Ok(m) if m.role == Role::KeyHolder => {}
            Ok(m) => {
                return Err(refuse(format!(
                    "signed with certificate {got}, which is {m}'s, expected the key holder's"
                )));
            }
            Err(why) => {
                return Err(refuse(format!(
                    "signed with certificate {got}, expected the key holder's: {why}"
                )));
            }
        }
        crate::transport::identity::verify(
            &endorsement.certificate,
            &message(&self.study, session, key),
            &endorsement.signature,
        )
        .map_err(refuse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A genuine endorsement passes; another key, session, study or signer is refused.
    #[test]
    fn endorsement_binds_key_session_study_and_signer() {
        let keyholder = Arc::new(Identity::generate("keyholder").expect("identity"));
        let stranger = Arc::new(Identity::generate("stranger").expect("identity"));
        let study = [7u8; 32];
        let e = Endorser {
            identity: Arc::clone(&keyholder),
            study,
        }
        .endorse(42, b"key bytes")
        .expect("signs");
        let member = |role, name: &str, f: Fingerprint| crate::transport::Member {
            role,
            name: name.into(),
            address: None,
            fingerprint: Some(f),
        };
        let trust = KeyTrust {
            roster: Arc::new(Roster {
                keyholder: member(Role::KeyHolder, "keyholder", keyholder.fingerprint()),
                aggregator: member(Role::Aggregator, "aggregator", Fingerprint([1; 32])),
                nodes: vec![member(Role::Node, "a", stranger.fingerprint())],
                ca: None,
            }),
            study,
        };
        trust.check(42, b"key bytes", &e).expect("genuine");
        assert!(trust.check(42, b"other key", &e).is_err());
        assert!(trust.check(43, b"key bytes", &e).is_err());
        let other_study = KeyTrust {
            study: [8u8; 32],
            ..trust.clone()
        };
        assert!(other_study.check(42, b"key bytes", &e).is_err());
        let forged = Endorser {
            identity: stranger,
            study,
        }
        .endorse(42, b"key bytes")
        .expect("signs");
        let err = trust
            .check(42, b"key bytes", &forged)
            .expect_err("wrong signer");
        assert!(err.to_string().contains("expected"), "{err}");
        let mut tampered = e.clone();
        let last = tampered.signature.len() - 1;
        tampered.signature[last] ^= 1;
        assert!(trust.check(42, b"key bytes", &tampered).is_err());
        assert!(
            trust
                .check(42, b"key bytes", &Endorsement::default())
                .is_err()
        );
    }
}
