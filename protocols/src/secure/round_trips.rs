//! The sequential round trips the aggregator waits for, by phase: on a link with a long round
//! trip (organizations far apart) these, not the bytes or the arithmetic, set a study's time,
//! so they are counted (by the channels, [`Channel::round_trips`]) and reported with the
//! timings, and tests hold them down.

use privlogit_circuits::channel::Channel;

/// Round trips on the link to the key holder, and the most any one Node's link took (the Nodes
/// answer side by side, so their round trips overlap).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trips {
    /// Between the aggregator and the key holder.
    pub keyholder: u64,
    /// Between the aggregator and a Node (the most of any Node).
    pub nodes: u64,
}

impl Trips {
    /// Both counts added.
    pub fn plus(self, other: Trips) -> Trips {
        Trips {
            keyholder: self.keyholder + other.keyholder,
            nodes: self.nodes + other.nodes,
        }
    }
}

/// The aggregator's round trips of one study, by phase.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundTrips {
    /// From the first message to the first optimiser round: the count, the standardisation,
    /// the bound and its factor (PrivLogit).
    pub setup: Trips,
    /// Each optimiser round, from its request to the Nodes to the next round's (the step,
    /// the stopping tests and any factor in between).
    pub rounds: Vec<Trips>,
    /// Each masked factorisation or inverse (the bound's, Newton's systems), inside the phase
    /// it belongs to.
    pub factors: Vec<Trips>,
    /// The inference round at the optimum.
    pub inference: Trips,
    /// The held-out evaluation.
    pub evaluation: Trips,
    /// The whole study.
    pub total: Trips,
}

impl RoundTrips {
    /// The most any optimiser round took.
    pub fn most_per_round(&self) -> Trips {
        self.rounds.iter().fold(Trips::default(), |a, r| Trips {
            keyholder: a.keyholder.max(r.keyholder),
            nodes: a.nodes.max(r.nodes),
        })
    }

    /// All optimiser rounds together.
    pub fn all_rounds(&self) -> Trips {
        self.rounds.iter().fold(Trips::default(), |a, r| a.plus(*r))
    }
}

/// The counts of a party's links at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    keyholder: u64,
    nodes: Vec<u64>,
}

impl Reading {
    /// The counts now of the link to the key holder (as read) and of the Nodes' links.
    pub fn of<C: Channel>(keyholder: u64, nodes: &[C]) -> Self {
        Self {
            keyholder,
            nodes: nodes.iter().map(Channel::round_trips).collect(),
        }
    }

    /// The round trips from `earlier` to this reading.
    pub fn since(&self, earlier: &Reading) -> Trips {
        Trips {
            keyholder: self.keyholder.saturating_sub(earlier.keyholder),
            nodes: self
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| n.saturating_sub(earlier.nodes.get(i).copied().unwrap_or(0)))
                .max()
                .unwrap_or(0),
        }
    }
}

/// A phase of a study, as [`Ledger`] counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    /// Before the first optimiser round.
    #[default]
    Setup,
    /// An optimiser round.
    Round,
    /// After the optimiser, outside the inference and evaluation (the separation bit).
    Closing,
    /// The inference round.
    Inference,
    /// The held-out evaluation.
    Evaluation,
}

/// Where the aggregator is in its study, for [`RoundTrips`]: each phase's round trips are the
/// counts from its start to the next phase's.
#[derive(Debug, Default)]
pub struct Ledger {
    counted: RoundTrips,
    phase: Phase,
    /// When the current phase began (the study's start: all zeros).
    began: Reading,
}

impl Ledger {
    /// The phase changes at `now`: what the current one took is counted.
    pub fn enter(&mut self, phase: Phase, now: Reading) {
        let spent = now.since(&self.began);
        let c = &mut self.counted;
        match self.phase {
            Phase::Setup => c.setup = c.setup.plus(spent),
            Phase::Round => c.rounds.push(spent),
            Phase::Closing => {}
            Phase::Inference => c.inference = c.inference.plus(spent),
            Phase::Evaluation => c.evaluation = c.evaluation.plus(spent),
        }
        self.phase = phase;
        self.began = now;
    }

    /// A round begins at `now`, unless the optimiser is done (the inference gathers too).
    pub fn round_begins(&mut self, now: Reading) {
        if matches!(self.phase, Phase::Setup | Phase::Round) {
            self.enter(Phase::Round, now);
        }
    }

    /// A factorisation from `before` to `after` (counted in its phase as well).
    pub fn factor(&mut self, before: &Reading, after: &Reading) {
        self.counted.factors.push(after.since(before));
    }

    /// Everything counted, the study's total at `now`.
    pub fn finish(mut self, now: Reading) -> RoundTrips {
        self.counted.total = now.since(&Reading::default());
        self.enter(Phase::Closing, now);
        self.counted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(keyholder: u64, nodes: &[u64]) -> Reading {
        Reading {
            keyholder,
            nodes: nodes.to_vec(),
        }
    }

    #[test]
    fn phases_split_the_counts() {
        let mut ledger = Ledger::default();
        ledger.factor(&at(3, &[2, 2]), &at(10, &[2, 2]));
        ledger.round_begins(at(12, &[4, 5]));
        ledger.round_begins(at(15, &[5, 6]));
        ledger.enter(Phase::Closing, at(16, &[6, 8]));
        ledger.enter(Phase::Inference, at(17, &[6, 8]));
        // The inference's own gathers are no rounds.
        ledger.round_begins(at(18, &[7, 8]));
        let counted = ledger.finish(at(21, &[7, 9]));
        assert_eq!(
            counted.setup,
            Trips {
                keyholder: 12,
                nodes: 5
            }
        );
        assert_eq!(
            counted.rounds,
            vec![
                Trips {
                    keyholder: 3,
                    nodes: 1
                },
                Trips {
                    keyholder: 1,
                    nodes: 2
                }
            ]
        );
        assert_eq!(counted.factors[0].keyholder, 7);
        assert_eq!(
            counted.inference,
            Trips {
                keyholder: 4,
                nodes: 1
            }
        );
        assert_eq!(
            counted.total,
            Trips {
                keyholder: 21,
                nodes: 9
            }
        );
    }
}
