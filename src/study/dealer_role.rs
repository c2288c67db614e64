//! The dealer of a study between organizations (`privlogit dealer`): an optional third server
//! that hands the aggregator one-use correlations for its masked products
//! ([`privlogit_protocols::secure::masked::dealt`]), so that their cross terms need no Paillier
//! work and the Nodes pack their gradients. It sees no data and no share of any: it knows the
//! seeds of the correlations, so it must collude with neither server (the security model's
//! "dealer" row). The aggregator dials it when the study file has a `[dealer]` table.

use privlogit_protocols::secure::masked::dealt;
use privlogit_protocols::secure::wire;
use privlogit_protocols::transport::{Network, Role};

use super::file::StudyFile;
use super::party::{Party, address_of};
use super::roles::{admit_aggregator, server_party};
use crate::error::Error;
use crate::progress::Say;
use crate::settings::Spec;

/// The dealer, ready to serve one study.
#[derive(Debug)]
pub struct Dealer {
    party: Party,
    listen: String,
    /// The smallest Paillier modulus it accepts the study's key at (setting `key_bits`).
    min_key_bits: u32,
    /// Reproducible correlations (tests only: setting `seed`).
    seed: Option<u64>,
}

impl Dealer {
    /// The dealer `spec` (read for `privlogit dealer`) and the study file describe: its identity
    /// and the roster checked, its address found.
    pub fn new(spec: &Spec, file: Option<&StudyFile>, say: Say<'_>) -> Result<Self, Error> {
        let party = server_party(spec, file, Role::Dealer, say)?;
        let listen = address_of(
            spec.listen.as_ref(),
            party.roster().and_then(|r| r.dealer.as_ref()),
            "setting `listen`",
        )?;
        Ok(Self {
            party,
            listen,
            min_key_bits: spec.key_bits,
            seed: spec.seed,
        })
    }

    /// This role's network, to stop it from another thread.
    pub fn network(&self) -> Network {
        self.party.network.clone()
    }

    /// Waits for the aggregator and deals until its study ends.
    pub fn run(self, say: Say<'_>) -> Result<(), Error> {
        let party = &self.party;
        party.stop_peers_on_error(|| {
            let listener = party.network.listen(&self.listen).map_err(Error::Network)?;
            let bound = listener.local_addr().map_err(Error::Network)?;
            say(&format!("dealer listening on {bound}"));
            let channel = admit_aggregator(party, listener, say)?;
            dealt::serve(channel, wire::HANDSHAKE, self.min_key_bits, self.seed)?;
            say("study done: correlations dealt");
            Ok(())
        })
    }
}
