//! [`Experiment`]: one policy's replay of a trace on a cluster, and what
//! the saturation and time replays share.

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use ringleader_scheduler::nodeorder::{NodeState, PodShape, TypicalPods};

use crate::trace::{Cluster, Workload};

/// A trace prepared for replay: shapes interned and typical pods derived.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The nodes.
    pub cluster: Cluster,
    /// The pods.
    pub workload: Workload,
    /// Typical pods of the workload (95% popularity, CPU pods included).
    pub typical: TypicalPods,
    /// Distinct pod shapes.
    pub shapes: Vec<PodShape>,
    /// Shape id of each pod, in workload order.
    pub shape_of: Vec<usize>,
}

impl Experiment {
    /// Prepares a cluster and workload for replay.
    pub fn new(cluster: Cluster, workload: Workload) -> Experiment {
        let typical = TypicalPods::derive(
            workload.pods.iter().map(|p| (&p.shape, p.spec.as_str())),
            TypicalPods::DEFAULT_POPULARITY,
        );
        let mut ids: HashMap<PodShape, usize> = HashMap::new();
        let mut shapes = Vec::new();
        let shape_of = workload
            .pods
            .iter()
            .map(|p| {
                *ids.entry(p.shape.clone()).or_insert_with(|| {
                    shapes.push(p.shape.clone());
                    shapes.len() - 1
                })
            })
            .collect();
        Experiment { cluster, workload, typical, shapes, shape_of }
    }

    /// Every node, empty.
    pub fn empty_nodes(&self) -> Vec<NodeState> {
        self.cluster.nodes.iter().map(|n| n.empty_state()).collect()
    }

    /// A random tie-break rank per node (a permutation), as the reference
    /// simulator's random `NNNN-` prefixes on node names.
    pub fn node_ranks(&self, rng: &mut StdRng) -> Vec<u32> {
        let mut ranks: Vec<u32> = (0..self.cluster.nodes.len() as u32).collect();
        ranks.shuffle(rng);
        ranks
    }
}
