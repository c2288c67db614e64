//! A Node of a vertical study between organizations (`node --vertical`): its file read as a
//! party's table (identifiers, its columns, the labels if it has them) and checked whole before
//! anything is sent, then the vertical messages with the aggregator
//! ([`privlogit_protocols::secure::vertical_roles::run_node`]). The aggregator and the key
//! holder are the horizontal study's roles, run from a study file that says `vertical = true`.

use privlogit_protocols::secure::vertical_roles::{self, NodeOutcome, VerticalTable};

use crate::error::{Error, PlanError};
use crate::progress::Say;
use crate::settings::{Reader, Spec};
use crate::study::file::StudyFile;
use crate::study::party::Party;
use crate::study::result::human_bytes;
use crate::study::roles::{expect_reader, node_party};

/// A vertical study's Node, its table read and its connection checked, ready to join.
#[derive(Debug)]
pub struct VerticalNode {
    party: Party,
    aggregator: String,
    table: VerticalTable,
}

impl VerticalNode {
    /// The Node `spec` (read with [`Reader::Node`], `vertical` set) and the study file
    /// describe, over its `party` file (the last one given).
    pub fn new(spec: &Spec, file: Option<&StudyFile>, say: Say<'_>) -> Result<Self, Error> {
        expect_reader(spec, Reader::Node)?;
        let path = spec.party.last().ok_or_else(|| {
            Error::from(PlanError::Missing {
                setting: "party",
                value: "FILE",
                why: "a Node needs its data file",
            })
        })?;
        let table = super::table(path, spec)?;
        let (party, aggregator) = node_party(spec, file, say)?;
        Ok(Self {
            party,
            aggregator,
            table,
        })
    }

    /// This Node's network, to stop it from another thread (Ctrl-C in Python).
    pub fn network(&self) -> privlogit_protocols::transport::Network {
        self.party.network.clone()
    }

    /// Joins the aggregator's study, deals its columns over the shared rows and waits for the
    /// model.
    pub fn run(self, say: Say<'_>) -> Result<NodeOutcome, Error> {
        let table = &self.table;
        self.party.stop_peers_on_error(|| {
            let who = format!(
                "vertical Node with {} rows and {} columns{}",
                table.ids.len(),
                table.names.len(),
                if table.labels.is_some() {
                    " and the labels"
                } else {
                    ""
                }
            );
            let channel = self.party.join_aggregator(&self.aggregator, &who, say)?;
            let outcome = vertical_roles::run_node(
                channel,
                table,
                2048,
                self.party.key_trust(),
                self.party.endorser(),
            )?;
            say(&format!(
                "study done ({}): N = {} rows shared, {} sent",
                outcome.status,
                outcome.rows,
                human_bytes(outcome.bytes_sent)
            ));
            Ok(outcome)
        })
    }
}
