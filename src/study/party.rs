//! How a party of a study between organizations connects: its network (mutual TLS with the
//! identity the study file names, or plain TCP when asked), its roster and its own entry,
//! checked before anything is sent.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use privlogit_protocols::secure::endorsement::{Endorser, KeyTrust};
use privlogit_protocols::transport::roster::Side;
use privlogit_protocols::transport::{
    Identity, Link, Member, Network, Role, Roster, Security, Timing,
};

use super::file::StudyFile;
use crate::error::{Error, PlanError, SettingProblem};
use crate::progress::Say;

/// How long a party waits for the others to connect.
pub const PATIENCE: Duration = Duration::from_secs(600);

/// A party's network, its roster (when the study file names the parties) and its identity.
pub struct Party {
    /// Its network (listen, connect, abort).
    pub network: Network,
    /// The study's parties, when the file names them.
    pub roster: Option<Arc<Roster>>,
    /// This party's identity (TLS studies).
    identity: Option<Arc<Identity>>,
}

impl std::fmt::Debug for Party {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Party")
            .field("study", &self.network.study())
            .field("tls", &self.identity.is_some())
            .finish_non_exhaustive()
    }
}

/// What a party is told about how to connect.
#[derive(Debug, Clone)]
pub struct Connection<'a> {
    /// The study file, if any.
    pub file: Option<&'a StudyFile>,
    /// Its identity's prefix (TLS).
    pub identity: Option<&'a Path>,
    /// Plain TCP, asked for.
    pub insecure_plaintext: bool,
    /// Seconds without a sign of life before a peer counts as lost.
    pub deadline: f64,
}

impl Party {
    /// This party's network in `role`; `name` is its name in a plaintext study without a
    /// roster. Refuses a deadline out of range, plain TCP when the file names certificates, a
    /// TLS study without an identity, and an identity the file does not name in `role`.
    pub fn new(
        connection: &Connection<'_>,
        role: Role,
        name: &str,
        say: Say<'_>,
    ) -> Result<Self, Error> {
        let deadline = connection.deadline;
        if !(deadline.is_finite() && (0.5..=3600.0).contains(&deadline)) {
            return Err(Error::bad(
                "deadline",
                SettingProblem::OutOfRange {
                    value: deadline,
                    low: 0.5,
                    high: 3600.0,
                    closed: true,
                },
            ));
        }
        let timing = Timing::with_deadline(Duration::from_secs_f64(deadline));
        let parties = connection.file.and_then(|f| f.parties.clone());
        let study_id = parties.as_ref().map_or([0u8; 32], |f| f.id);
        let roster = parties.map(|f| Arc::new(f.roster));
        if connection.insecure_plaintext {
            if roster.as_ref().is_some_and(|r| r.pinned()) {
                return Err(Error::refused(
                    "setting `insecure_plaintext` is refused: the study file names certificates for its \
                     parties, so they connect over TLS (drop the flag)",
                ));
            }
            let name = roster
                .as_ref()
                .and_then(|r| match role {
                    Role::KeyHolder => Some(r.keyholder.name.clone()),
                    Role::Aggregator => Some(r.aggregator.name.clone()),
                    Role::Dealer => r.dealer.as_ref().map(|d| d.name.clone()),
                    Role::Node => None,
                })
                .unwrap_or_else(|| name.to_string());
            say(
                "warning: plain TCP (setting `insecure_plaintext`): the traffic is readable on the path and parties are not authenticated",
            );
            let security = Security::InsecurePlaintext {
                roster: roster.clone(),
            };
            return Ok(Party {
                network: Network::new(security, role, &name, study_id, timing),
                roster,
                identity: None,
            });
        }
        let Some(roster) = roster.filter(|r| r.pinned()) else {
            return Err(Error::refused(
                "no party certificates: name every party in the study file ([keyholder], \
                 [aggregator] and [[node]] tables with fingerprint = \"sha256:...\", see \
                 `privlogit identity new`) and pass setting `study` FILE setting `identity` PREFIX, or pass \
                 setting `insecure_plaintext` for plain TCP",
            ));
        };
        let prefix = connection.identity.ok_or_else(|| {
            Error::from(PlanError::Missing {
                setting: "identity",
                value: "PREFIX",
                why: "this party's PREFIX.crt and PREFIX.key",
            })
        })?;
        let identity = Identity::load(prefix).map_err(|e| Error::Io {
            what: "cannot load the identity",
            path: prefix.to_path_buf(),
            source: e,
        })?;
        let fingerprint = identity.fingerprint();
        let me = roster
            .identify(identity.certificate(), &[], Side::Client)
            .map_err(|why| PlanError::Unnamed { why })?;
        if me.role != role {
            return Err(PlanError::OtherRole {
                fingerprint: fingerprint.to_string(),
                named: me.to_string(),
                role,
            }
            .into());
        }
        let name = me.name.clone();
        let identity = Arc::new(identity);
        let security = Security::Tls {
            identity: Arc::clone(&identity),
            roster: Arc::clone(&roster),
        };
        Ok(Party {
            network: Network::new(security, role, &name, study_id, timing),
            roster: Some(roster),
            identity: Some(identity),
        })
    }

    /// The key holder's signer of the public key (TLS studies).
    pub fn endorser(&self) -> Option<Endorser> {
        self.identity.as_ref().map(|identity| Endorser {
            identity: Arc::clone(identity),
            study: self.network.study(),
        })
    }

    /// The signature a Node requires on the public key (TLS studies).
    pub fn key_trust(&self) -> Option<KeyTrust> {
        let roster = self.roster.as_ref().filter(|r| r.pinned())?;
        self.identity.as_ref()?;
        Some(KeyTrust {
            roster: Arc::clone(roster),
            study: self.network.study(),
        })
    }

    /// This party's identity (TLS studies).
    pub fn identity(&self) -> Option<&Identity> {
        self.identity.as_deref()
    }

    /// The roster, if the study file names the parties.
    pub fn roster(&self) -> Option<&Roster> {
        self.roster.as_deref()
    }

    /// Runs `work`; on failure every peer is told why before the error is returned.
    pub fn stop_peers_on_error<T, E: std::fmt::Display>(
        &self,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let result = work();
        if let Err(e) = &result {
            self.network.abort(&e.to_string());
        }
        result
    }

    /// Dials the aggregator at `address`, waiting up to [`PATIENCE`] for it (and saying so).
    pub fn dial_aggregator(&self, address: &str, say: Say<'_>) -> Result<Link, Error> {
        self.network
            .connect_reporting(
                address,
                &self.server(Role::Aggregator),
                PATIENCE,
                &mut |m| say(m),
            )
            .map_err(Error::Network)
    }

    /// Dials the aggregator at `address` and says that `who` joined it.
    pub fn join_aggregator(&self, address: &str, who: &str, say: Say<'_>) -> Result<Link, Error> {
        let channel = self.dial_aggregator(address, say)?;
        say(&format!(
            "{who} joined {} at {}",
            channel.pipe().peer(),
            channel.pipe().peer_address()
        ));
        Ok(channel)
    }

    /// The server this party dials in `role`: from the roster, or an anonymous one in
    /// plaintext.
    pub fn server(&self, role: Role) -> Member {
        let from_roster = self.roster().and_then(|r| match role {
            Role::KeyHolder => Some(r.keyholder.clone()),
            Role::Dealer => r.dealer.clone(),
            _ => Some(r.aggregator.clone()),
        });
        from_roster.unwrap_or_else(|| Member {
            role,
            name: match role {
                Role::KeyHolder => "keyholder",
                Role::Dealer => "dealer",
                _ => "aggregator",
            }
            .into(),
            address: None,
            fingerprint: None,
        })
    }
}

/// The address of `member` given by the caller or else the study file's.
pub fn address_of(
    given: Option<&String>,
    member: Option<&Member>,
    flag: &'static str,
) -> Result<String, Error> {
    given
        .cloned()
        .or_else(|| member.and_then(|m| m.address.clone()))
        .ok_or_else(|| PlanError::Address { naming: flag }.into())
}
