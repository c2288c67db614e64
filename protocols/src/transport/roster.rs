//! Who takes part in a study: every party by role and name, with the certificate fingerprint
//! the others accept from it and, for the servers, the address to reach it at. A connection is
//! attributed to a party by its certificate alone, never by connection order or a claimed name.

use std::fmt;

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
}

impl Role {
    /// The role's code on the wire.
    pub(crate) fn code(self) -> u8 {
        match self {
            Role::KeyHolder => 1,
            Role::Aggregator => 2,
            Role::Node => 3,
        }
    }

    /// The role of a wire code.
    pub(crate) fn from_code(code: u8) -> Option<Self> {
        [Role::KeyHolder, Role::Aggregator, Role::Node]
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
}

impl Roster {
    /// Checks names and fingerprints: every name and every fingerprint once, and either all
    /// parties named by certificate (a TLS study) or none (a plaintext study).
    pub fn validate(&self) -> Result<(), String> {
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
        if pinned != 0 && pinned != all.len() {
            let missing = all.iter().find(|m| m.fingerprint.is_none()).expect("one");
            return Err(format!(
                "{missing} has no certificate fingerprint while others do: name every party's"
            ));
        }
        Ok(())
    }

    /// Every party: key holder, aggregator, then the Nodes.
    pub fn members(&self) -> impl Iterator<Item = &Member> {
        [&self.keyholder, &self.aggregator]
            .into_iter()
            .chain(&self.nodes)
    }

    /// Whether the parties are named by certificate (a TLS study).
    pub fn pinned(&self) -> bool {
        self.keyholder.fingerprint.is_some()
    }

    /// The party whose certificate has `fingerprint`.
    pub fn by_fingerprint(&self, fingerprint: &Fingerprint) -> Option<&Member> {
        self.members()
            .find(|m| m.fingerprint.as_ref() == Some(fingerprint))
    }

    /// A study id that every party derives alike from the roster (and an optional label):
    /// SHA-256 over the label and every party's role, name and fingerprint. Both ends of every
    /// connection check it, so a party of one study cannot be drawn into another.
    pub fn study_id(&self, label: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(b"privlogit study v1\0");
        h.update((label.len() as u64).to_le_bytes());
        h.update(label.as_bytes());
        for m in self.members() {
            h.update([m.role.code()]);
            h.update((m.name.len() as u64).to_le_bytes());
            h.update(m.name.as_bytes());
            h.update(m.fingerprint.map_or([0u8; 32], |f| f.0));
        }
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
        assert_ne!(ok.study_id(""), other.study_id(""));
        assert_ne!(ok.study_id(""), ok.study_id("x"));
    }
}
