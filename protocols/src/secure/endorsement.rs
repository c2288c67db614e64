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

use super::{Refusal, SecureError, Unendorsement};

/// What the key holder signs.
fn message(study: &[u8; 32], session: u64, key: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(68 + key.len());
    m.extend_from_slice(b"privlogit key endorsement v1\0");
    m.extend_from_slice(study);
    m.extend_from_slice(&session.to_le_bytes());
    m.extend_from_slice(key);
    m
}

/// What a vertical study's Node signs: the X25519 key the labelling Node seals the PSI key to,
/// for this study (so that the aggregator, which relays the keys, cannot put in its own).
fn recipient_message(study: &[u8; 32], public: &[u8; 32]) -> Vec<u8> {
    let mut m = Vec::with_capacity(96);
    m.extend_from_slice(b"privlogit psi recipient v1\0");
    m.extend_from_slice(study);
    m.extend_from_slice(public);
    m
}

/// A signer: the key holder of the study's Paillier key, a vertical Node of its X25519 key.
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

impl Endorser {
    /// Signs a vertical study's Node's X25519 `public` key.
    pub fn endorse_recipient(&self, public: &[u8; 32]) -> Result<Endorsement, SecureError> {
        let signature = self
            .identity
            .sign(&recipient_message(&self.study, public))
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
        if endorsement.certificate.is_empty() {
            return Err(refuse(Unendorsement::Unsigned));
        }
        let got = Fingerprint::of(&endorsement.certificate);
        let der = rustls::pki_types::CertificateDer::from(endorsement.certificate.as_slice());
        match self.roster.identify(&der, &[], Side::Server) {
            Ok(m) if m.role == Role::KeyHolder => {}
            Ok(m) => {
                return Err(refuse(Unendorsement::OtherSigner {
                    certificate: got,
                    signer: m.role,
                    name: m.name.clone(),
                }));
            }
            Err(why) => {
                return Err(refuse(Unendorsement::UnknownSigner {
                    certificate: got,
                    why,
                }));
            }
        }
        crate::transport::identity::verify(
            &endorsement.certificate,
            &message(&self.study, session, key),
            &endorsement.signature,
        )
        .map_err(|why| refuse(Unendorsement::Signature(why)))
    }
}

impl KeyTrust {
    /// Checks the X25519 keys the aggregator relays to the labelling Node (whose certificate is
    /// `own`): one for each other Node the study file names, each signed for this study by a
    /// distinct Node's certificate; a key the aggregator added, left out, repeated or signed by
    /// another party is refused (a refusal is this Node's).
    pub fn check_recipients(
        &self,
        own: &[u8],
        keys: &[([u8; 32], Endorsement)],
    ) -> Result<(), SecureError> {
        let others = self.roster.nodes.len().saturating_sub(1);
        if keys.len() != others {
            return Err(refuse(Unendorsement::RecipientCount {
                relayed: keys.len(),
                expected: others,
            }));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (public, endorsement) in keys {
            if endorsement.certificate.is_empty() {
                return Err(refuse(Unendorsement::RecipientUnsigned));
            }
            if endorsement.certificate == own {
                return Err(refuse(Unendorsement::RecipientOwn));
            }
            let got = Fingerprint::of(&endorsement.certificate);
            let der = rustls::pki_types::CertificateDer::from(endorsement.certificate.as_slice());
            let member = match self.roster.identify(&der, &[], Side::Client) {
                Ok(m) if m.role == Role::Node => m,
                Ok(m) => {
                    return Err(refuse(Unendorsement::RecipientNotNode {
                        certificate: got,
                        signer: m.role,
                        name: m.name.clone(),
                    }));
                }
                Err(why) => {
                    return Err(refuse(Unendorsement::RecipientUnknown {
                        certificate: got,
                        why,
                    }));
                }
            };
            if !seen.insert(member.name.clone()) {
                return Err(refuse(Unendorsement::RecipientRepeated {
                    name: member.name.clone(),
                }));
            }
            crate::transport::identity::verify(
                &endorsement.certificate,
                &recipient_message(&self.study, public),
                &endorsement.signature,
            )
            .map_err(|why| {
                refuse(Unendorsement::RecipientSignature {
                    name: member.name.clone(),
                    why,
                })
            })?;
        }
        Ok(())
    }
}

/// This Node's refusal of an endorsement.
fn refuse(why: Unendorsement) -> SecureError {
    SecureError::Refused {
        party: Role::Node,
        reason: Refusal::Unendorsed(why),
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
                dealer: None,
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

    /// The labelling Node seals the PSI key only to the other Nodes' own keys: the genuine two
    /// pass; a key the aggregator adds (signed by itself, or unsigned), one left out, one
    /// repeated, one signed for another key or study, or its own are refused.
    #[test]
    fn relayed_psi_keys_must_be_the_other_nodes_own() {
        let ids: Vec<Arc<Identity>> = ["a", "b", "c", "aggregator"]
            .iter()
            .map(|n| Arc::new(Identity::generate(n).expect("identity")))
            .collect();
        let member = |role, name: &str, f: Fingerprint| crate::transport::Member {
            role,
            name: name.into(),
            address: None,
            fingerprint: Some(f),
        };
        let study = [3u8; 32];
        let trust = KeyTrust {
            roster: Arc::new(Roster {
                keyholder: member(Role::KeyHolder, "keyholder", Fingerprint([1; 32])),
                aggregator: member(Role::Aggregator, "aggregator", ids[3].fingerprint()),
                nodes: vec![
                    member(Role::Node, "a", ids[0].fingerprint()),
                    member(Role::Node, "b", ids[1].fingerprint()),
                    member(Role::Node, "c", ids[2].fingerprint()),
                ],
                dealer: None,
                ca: None,
            }),
            study,
        };
        let signed = |i: usize, public: [u8; 32], study: [u8; 32]| {
            let e = Endorser {
                identity: Arc::clone(&ids[i]),
                study,
            }
            .endorse_recipient(&public)
            .expect("signs");
            (public, e)
        };
        let own = ids[0].certificate().to_vec();
        let b = signed(1, [11; 32], study);
        let c = signed(2, [12; 32], study);
        trust
            .check_recipients(&own, &[b.clone(), c.clone()])
            .expect("the other two Nodes' keys");
        let refused = |keys: &[([u8; 32], Endorsement)], why: &str| {
            let e = trust.check_recipients(&own, keys).expect_err(why);
            assert!(e.to_string().contains(why), "{e}");
        };
        refused(
            &[b.clone(), c.clone(), signed(3, [13; 32], study)],
            "3 keys relayed",
        );
        refused(std::slice::from_ref(&b), "1 keys relayed");
        refused(&[b.clone(), signed(3, [13; 32], study)], "not a Node's");
        refused(
            &[b.clone(), ([13; 32], Endorsement::default())],
            "without a signature",
        );
        refused(&[b.clone(), b.clone()], "two keys signed by");
        refused(&[b.clone(), signed(0, [13; 32], study)], "own certificate");
        let mut swapped = c.clone();
        swapped.0 = [14; 32];
        refused(&[b.clone(), swapped], "does not verify");
        refused(&[b, signed(2, [12; 32], [4; 32])], "does not verify");
    }
}
