//! Who takes part in a study: every party by role and name, with the certificate fingerprint
//! the others accept from it (or, in a study that names a consortium certificate authority, a
//! certificate that authority issued for the party's name) and, for the servers, the address to
//! reach it at. A connection is attributed to a party by its certificate alone, never by
//! connection order or a claimed name.

use std::fmt;

use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use sha2::{Digest, Sha256};

use super::identity::Fingerprint;

/// A party's role in a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Holds the Paillier secret key and evaluates garbled circuits.
    KeyHolder,
    /// Runs the optimiser over encrypted aggregates.
    Aggregator,
    /// Holds rows.
    Node,
    /// Optional: hands the aggregator one-use correlations for its masked products (colludes
    /// with neither server).
    Dealer,
}

impl Role {
    /// The role's code on the wire.
    pub(crate) fn code(self) -> u8 {
        match self {
            Role::KeyHolder => 1,
            Role::Aggregator => 2,
            Role::Node => 3,
            Role::Dealer => 4,
        }
    }

    /// The role of a wire code.
    pub(crate) fn from_code(code: u8) -> Option<Self> {
        [Role::KeyHolder, Role::Aggregator, Role::Node, Role::Dealer]
            .into_iter()
            .find(|r| r.code() == code)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::KeyHolder => "key holder",
            Role::Aggregator => "aggregator",
            Role::Node => "Node",
            Role::Dealer => "dealer",
        })
    }
}

/// One party of a study.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its role.
    pub role: Role,
    /// Its name (`hospital-a`; the servers default to `keyholder` and `aggregator`).
    pub name: String,
    /// Where it listens (the servers), if the study file says.
    pub address: Option<String>,
    /// The fingerprint of the certificate it presents; `None` only in plaintext studies.
    pub fingerprint: Option<Fingerprint>,
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.role {
            Role::Node => write!(f, "Node {}", self.name),
            role => write!(f, "the {role} ({})", self.name),
        }
    }
}

/// Every party of a study.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roster {
    /// The key holder.
    pub keyholder: Member,
    /// The aggregator.
    pub aggregator: Member,
    /// The Nodes, in the study's order (Node 1 first).
    pub nodes: Vec<Member>,
    /// The dealer of masked products, if the study has one.
    pub dealer: Option<Member>,
    /// A consortium's certificate authority (its certificate, DER): a party named without a
    /// fingerprint is known by a certificate this authority issued for its name.
    pub ca: Option<Vec<u8>>,
}

/// Which end of a connection a certificate authenticates (its extended key usage, when the
/// certificate states one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The connecting party.
    Client,
    /// The listening party.
    Server,
}

impl Roster {
    /// Checks names and fingerprints: every name and every fingerprint once, and either all
    /// parties named by certificate (a TLS study: by fingerprint, or through the consortium
    /// authority) or none (a plaintext study).
    pub fn validate(&self) -> Result<(), String> {
        if let Some(ca) = &self.ca {
            webpki::anchor_from_trusted_cert(&CertificateDer::from(ca.as_slice()))
                .map_err(|e| format!("the consortium CA's certificate does not parse ({e:?})"))?;
            for m in self.members().filter(|m| m.fingerprint.is_none()) {
                ServerName::try_from(m.name.as_str()).map_err(|_| {
                    format!(
                        "{m}: a name the consortium CA certifies must be a DNS name (letters, \
                         digits, '-' and '.')"
                    )
                })?;
            }
        }
        if self.nodes.is_empty() {
            return Err("the study names no Node".into());
        }
        let all: Vec<&Member> = self.members().collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                if a.name == b.name {
                    return Err(format!("two parties are named {:?}", a.name));
                }
                if let Some(f) = a.fingerprint.filter(|f| b.fingerprint == Some(*f)) {
                    return Err(format!(
                        "{a} and {b} have the same certificate ({f}); every party needs its own"
                    ));
                }
            }
        }
        let pinned = all.iter().filter(|m| m.fingerprint.is_some()).count();
        if self.ca.is_none() && pinned != 0 && pinned != all.len() {
            let missing = all.iter().find(|m| m.fingerprint.is_none()).expect("one");
            return Err(format!(
                "{missing} has no certificate fingerprint while others do: name every party's"
            ));
        }
        Ok(())
    }

    /// Every party: key holder, aggregator, the Nodes, then the dealer if there is one.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        [&self.keyholder, &self.aggregator]
            .into_iter()
            .chain(&self.nodes)
            .chain(&self.dealer)
    }

    /// Whether the parties are named by certificate (a TLS study: fingerprints, or a
    /// consortium authority).
    pub fn pinned(&self) -> bool {
        self.keyholder.fingerprint.is_some() || self.ca.is_some()
    }

    /// The party a certificate (with the chain the peer sent) belongs to: the one whose
    /// fingerprint it has or, failing that, the one without a fingerprint for whose name the
    /// consortium authority issued it (valid now, for `side`). The error says why not.
    pub fn identify(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        side: Side,
    ) -> Result<&Member, String> {
        let fingerprint = Fingerprint::of(end_entity);
        if let Some(m) = self.by_fingerprint(&fingerprint) {
            return Ok(m);
        }
        let Some(ca) = &self.ca else {
            return Err(format!(
                "certificate {fingerprint} is not one of this study's parties"
            ));
        };
        let ca = CertificateDer::from(ca.as_slice());
        let anchor = webpki::anchor_from_trusted_cert(&ca)
            .map_err(|e| format!("the consortium CA's certificate does not parse ({e:?})"))?;
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|e| format!("certificate {fingerprint} does not parse ({e:?})"))?;
        let usage = match side {
            Side::Client => webpki::KeyUsage::client_auth(),
            Side::Server => webpki::KeyUsage::server_auth(),
        };
        cert.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            intermediates,
            UnixTime::now(),
            usage,
            None,
            None,
        )
        .map_err(|e| {
            format!(
                "certificate {fingerprint} is not one of this study's parties, nor issued by \
                 its consortium CA ({e:?})"
            )
        })?;
        let named: Vec<&Member> = self
            .members()
            .filter(|m| m.fingerprint.is_none())
            .filter(|m| {
                ServerName::try_from(m.name.as_str())
                    .is_ok_and(|n| cert.verify_is_valid_for_subject_name(&n).is_ok())
            })
            .collect();
        match named.as_slice() {
            [m] => Ok(m),
            [] => Err(format!(
                "certificate {fingerprint} was issued by the consortium CA, but for none of \
                 this study's parties"
            )),
            _ => Err(format!(
                "certificate {fingerprint} names several of this study's parties"
            )),
        }
    }

    /// The party whose certificate has `fingerprint`.
    pub fn by_fingerprint(&self, fingerprint: &Fingerprint) -> Option<&Member> {
        self.members()
            .find(|m| m.fingerprint.as_ref() == Some(fingerprint))
    }

    /// A study id that every party derives alike from its study file: SHA-256 over `label`
    /// (the file's `study_id` text, not the label column),
    /// every party's role, name, address and fingerprint, the consortium CA, and `settings`
    /// (the study's shared settings in a canonical text). Both ends of every connection check
    /// it, so a party of one study cannot be drawn into another, not even into one with the
    /// same parties and other settings or addresses.
    pub fn study_id(&self, label: &str, settings: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"privlogit study v2\0");
        let mut text = |t: &str| {
            h.update((t.len() as u64).to_le_bytes());
            h.update(t.as_bytes());
        };
        text(label);
        text(settings);
        for m in self.members() {
            h.update([m.role.code()]);
            h.update((m.name.len() as u64).to_le_bytes());
            h.update(m.name.as_bytes());
            let address = m.address.as_deref().unwrap_or("");
            h.update((address.len() as u64).to_le_bytes());
            h.update(address.as_bytes());
            h.update(m.fingerprint.map_or([0u8; 32], |f| f.0));
        }
        h.update(
            self.ca
                .as_deref()
                .map_or([0u8; 32], |c| Fingerprint::of(c).0),
        );
        h.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(role: Role, name: &str, f: Option<u8>) -> Member {
        Member {
            role,
            name: name.into(),
            address: None,
            fingerprint: f.map(|b| Fingerprint([b; 32])),
        }
    }

    /// Duplicate names or certificates and a half-pinned roster are refused.
    #[test]
    fn validation() {
        let ok = Roster {
            keyholder: member(Role::KeyHolder, "keyholder", Some(1)),
            aggregator: member(Role::Aggregator, "aggregator", Some(2)),
            nodes: vec![
                member(Role::Node, "a", Some(3)),
                member(Role::Node, "b", Some(4)),
            ],
            dealer: None,
            ca: None,
        };
        ok.validate().expect("valid");
        let mut same = ok.clone();
        same.nodes[1].fingerprint = Some(Fingerprint([3; 32]));
        assert!(
            same.validate()
                .expect_err("refused")
                .contains("same certificate")
        );
        let mut name = ok.clone();
        name.nodes[1].name = "a".into();
        assert!(name.validate().expect_err("refused").contains("named"));
        let mut half = ok.clone();
        half.nodes[0].fingerprint = None;
        assert!(half.validate().expect_err("refused").contains("Node a"));
        let mut other = ok.clone();
        other.nodes.swap(0, 1);
        assert_ne!(ok.study_id("", ""), other.study_id("", ""));
        assert_ne!(ok.study_id("", ""), ok.study_id("x", ""));
        // Same parties, other settings or another address: another study.
        assert_ne!(ok.study_id("", ""), ok.study_id("", "lambda=0.5"));
        let mut moved = ok.clone();
        moved.aggregator.address = Some("10.0.0.2:7101".into());
        assert_ne!(ok.study_id("", ""), moved.study_id("", ""));
        // Label and settings cannot trade bytes.
        assert_ne!(ok.study_id("ab", ""), ok.study_id("a", "b"));
    }

    /// With a consortium authority, a certificate it issued for a party's name identifies that
    /// party; one issued by another authority, one issued for a name the study does not list,
    /// and a self-signed one with a party's name are refused; a pinned party is still known by
    /// its fingerprint; the authority changes the study id.
    #[test]
    fn consortium_authority() {
        use super::super::identity::Identity;
        let ca = Identity::generate_authority().expect("authority");
        let other_ca = Identity::generate_authority().expect("authority");
        let pinned = Identity::generate("aggregator").expect("identity");
        let named = |role, name: &str| Member {
            role,
            name: name.into(),
            address: None,
            fingerprint: None,
        };
        let roster = Roster {
            keyholder: named(Role::KeyHolder, "keyholder"),
            aggregator: Member {
                fingerprint: Some(pinned.fingerprint()),
                ..named(Role::Aggregator, "aggregator")
            },
            nodes: vec![
                named(Role::Node, "hospital-a"),
                named(Role::Node, "hospital-b"),
            ],
            dealer: None,
            ca: Some(ca.certificate().to_vec()),
        };
        roster.validate().expect("valid");
        let who = |id: &Identity| roster.identify(id.certificate(), &[], Side::Client);
        let b = ca.issue("hospital-b").expect("issued");
        assert_eq!(who(&b).expect("known").name, "hospital-b");
        assert_eq!(
            who(&ca.issue("keyholder").expect("issued"))
                .expect("known")
                .role,
            Role::KeyHolder
        );
        assert_eq!(who(&pinned).expect("pinned").role, Role::Aggregator);
        let e = who(&other_ca.issue("hospital-b").expect("issued")).expect_err("another CA");
        assert!(e.contains("nor issued by its consortium CA"), "{e}");
        let e = who(&ca.issue("hospital-z").expect("issued")).expect_err("not listed");
        assert!(e.contains("for none of this study's parties"), "{e}");
        let e = who(&Identity::generate("hospital-a").expect("identity")).expect_err("self-signed");
        assert!(e.contains("not one of this study's parties"), "{e}");
        let mut without = roster.clone();
        without.ca = Some(other_ca.certificate().to_vec());
        assert_ne!(roster.study_id("", ""), without.study_id("", ""));
        let mut no_ca = roster.clone();
        no_ca.ca = None;
        assert!(
            no_ca.validate().is_err(),
            "unnamed parties need the authority"
        );
        let mut bad_name = roster.clone();
        bad_name.nodes[0].name = "hospital a".into();
        assert!(
            bad_name
                .validate()
                .expect_err("refused")
                .contains("DNS name")
        );
    }
}
