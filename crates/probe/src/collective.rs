//! The four collective operations of the collective-communication check and
//! the bus-bandwidth formulas of spec/platform.md (as nccl-tests computes
//! them): all-reduce algbw·2(n−1)/n; all-gather, reduce-scatter and
//! all-to-all algbw·(n−1)/n, with n the number of ranks.

use serde::{Deserialize, Serialize};

/// One collective operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    /// Every rank ends with the sum of every rank's buffer.
    #[default]
    AllReduce,
    /// Every rank ends with every rank's share, concatenated.
    AllGather,
    /// Every rank ends with its share of the sum.
    ReduceScatter,
    /// Every rank sends one block to each rank.
    AllToAll,
}

impl Collective {
    /// All of them, in the order reports list them.
    pub const ALL: [Collective; 4] =
        [Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll];

    /// The name nccl-tests and CheckRun specs use.
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::AllToAll => "all_to_all",
        }
    }

    /// Parses [`Collective::name`] (also `allreduce`, `all-reduce`).
    pub fn parse(text: &str) -> Option<Collective> {
        let t = text.trim().to_ascii_lowercase().replace('-', "_");
        Collective::ALL.into_iter().find(|c| c.name() == t || c.name().replace('_', "") == t)
    }

    /// Bus bandwidth from algorithm bandwidth across `ranks` ranks.
    pub fn bus_bandwidth(self, alg: f64, ranks: usize) -> f64 {
        let n = ranks.max(1) as f64;
        let factor = match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => (n - 1.0) / n,
        };
        alg * factor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_bandwidth_follows_the_spec_formulas() {
        assert_eq!(Collective::AllReduce.bus_bandwidth(10.0, 4), 15.0);
        assert_eq!(Collective::AllGather.bus_bandwidth(10.0, 4), 7.5);
        assert_eq!(Collective::ReduceScatter.bus_bandwidth(8.0, 2), 4.0);
        assert_eq!(Collective::AllToAll.bus_bandwidth(16.0, 16), 15.0);
        assert_eq!(Collective::AllReduce.bus_bandwidth(10.0, 1), 0.0);
    }

    #[test]
    fn names_round_trip() {
        for c in Collective::ALL {
            assert_eq!(Collective::parse(c.name()), Some(c));
        }
        assert_eq!(Collective::parse("allreduce"), Some(Collective::AllReduce));
        assert_eq!(Collective::parse("All-Gather"), Some(Collective::AllGather));
        assert_eq!(Collective::parse("broadcast"), None);
    }
}
