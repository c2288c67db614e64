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

/// Where the aggregator is in its study, for [`RoundTrips`].
#[derive(Debug, Default)]
pub struct Ledger {
    counted: RoundTrips,
    /// When the current phase began (`None` before the first reading: the study's start).
    round_began: Option<Reading>,
    /// Whether the setup has ended (the first round has begun).
    rounds_started: bool,
    /// Whether the optimiser is done (later rounds belong to the inference or evaluation).
    rounds_over: bool,
}

impl Ledger {
    /// A round begins at `now`: the phase before it (the setup or the previous round) ends.
    pub fn round_begins(&mut self, now: Reading) {
        if self.rounds_over {
            return;
        }
        let began = self.round_began.take().unwrap_or_default();
        let spent = now.since(&began);
        if self.rounds_started {
            self.counted.rounds.push(spent);
        } else {
            self.counted.setup = spent;
            self.rounds_started = true;
        }
        self.round_began = Some(now);
    }

    /// The optimiser is done at `now`: the last round ends.
    pub fn rounds_end(&mut self, now: &Reading) {
        self.rounds_over = true;
        if let Some(began) = self.round_began.take() {
            if self.rounds_started {
                self.counted.rounds.push(now.since(&began));
            }
        } else if !self.rounds_started {
            self.counted.setup = now.since(&Reading::default());
            self.rounds_started = true;
        }
    }

    /// A factorisation from `before` to `after`.
    pub fn factor(&mut self, before: &Reading, after: &Reading) {
        self.counted.factors.push(after.since(before));
    }

    /// The inference round from `before` to `after`.
    pub fn inference(&mut self, before: &Reading, after: &Reading) {
        self.counted.inference = self.counted.inference.plus(after.since(before));
    }

    /// The evaluation from `before` to `after`.
    pub fn evaluation(&mut self, before: &Reading, after: &Reading) {
        self.counted.evaluation = self.counted.evaluation.plus(after.since(before));
    }

    /// Everything counted, the study's total at `now`.
    pub fn finish(mut self, now: &Reading) -> RoundTrips {
        self.rounds_end(now);
        self.counted.total = now.since(&Reading::default());
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
        ledger.rounds_end(&at(16, &[6, 8]));
        ledger.inference(&at(16, &[6, 8]), &at(20, &[7, 9]));
        let counted = ledger.finish(&at(20, &[7, 9]));
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
        assert_eq!(counted.inference.keyholder, 4);
        assert_eq!(
            counted.total,
            Trips {
                keyholder: 20,
                nodes: 9
            }
        );
    }
}
