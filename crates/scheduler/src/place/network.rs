//! Network topology: which nodes a gang may span.
//!
//! * Volcano `networkTopology {mode, highestTierAllowed}` over HyperNode
//!   tiers: tier 1 is a ToR (`network.tor`), tier 2 a spine
//!   (`network.spine`), tier 3 the whole cluster. `hard`: every pod inside
//!   one HyperNode of a tier ≤ `highestTierAllowed`, else the job waits;
//!   `soft`: the same preference, falling back to any placement.
//! * `tor-affinity` (whole-card Ascend jobs, as MindCluster's ToR plugin):
//!   `large-model-schema` jobs of ≥ 4 replicas go into the tightest single
//!   ToR that holds them, else fill the ToRs with the most room first
//!   (fewest ToRs); smaller ones are filler jobs: one ToR, the tightest
//!   that holds them, or they wait — never spread over ToRs;
//!   `normal-schema` jobs keep to the tightest ToR that holds them and
//!   span ToRs when none does. `null` (or no label) turns the rule off: no
//!   ToR is tried first and none is waited for; the gang is only kept on
//!   few ToRs, as every job is.
//! * Volcano `partitionPolicy` (per task): pods in partitions of
//!   `partitionSize`, each a sub-gang placed whole or not at all, inside one
//!   HyperNode of tier ≤ its own `highestTierAllowed` (the tightest that
//!   holds it); `minPartitions` partitions must be placed.
//! * SuperPoD (`sp-block` annotation, Atlas 900 A3 SuperPoD nodes): pods go
//!   in logical blocks of `sp-block / chips per pod` pods; each block stays
//!   inside one SuperPoD, the smallest that can hold it. `super-pod-affinity:
//!   soft` falls back to fragmented placement; `hard` (and by default) the
//!   job waits.
//!
//! Within one HyperNode the tries go from the tightest fit up, so big
//! groups stay whole for big jobs.

pub use super::domains::SuperPodRule;
use super::domains::{devices_needed, free_devices, hypernodes, super_pod_rule};
use super::gang::{place_gang, GangOptions};
use super::request::{Gate, PodPlacement};
use super::view::TorOrder;
use crate::cluster::Cluster;
use crate::predicates::Filtered;
use ringleader_api::ascend as keys;
use ringleader_api::Job;

/// Places a job following its network-topology constraints.
pub fn place(cluster: &mut Cluster, job: &Job, t: u64, gate: Gate<'_>) -> Result<Vec<PodPlacement>, String> {
    let multi_pod = job.total_replicas() > 1;
    let schema = tor_schema(cluster, job);
    let tor_order = match schema {
        Some(TorSchema::Filler) => TorOrder::FewestCandidates,
        _ => TorOrder::MostCandidates,
    };
    let opts = GangOptions { tor_order, super_pod: super_pod_rule(job) };
    if let Some(nt) = job.topology.network_topology {
        let highest = nt.highest_tier_allowed.unwrap_or(1).max(1);
        let tried = within_tiers(cluster, job, t, gate, opts, highest);
        return match tried {
            Ok(p) => Ok(p),
            Err(why) if nt.hard => Err(why),
            Err(_) => place_gang(cluster, job, t, gate, opts),
        };
    }
    match schema {
        Some(TorSchema::Filler) => {
            return within_tiers(cluster, job, t, gate, opts, 1).map_err(|_| {
                format!(
                    "tor-affinity large-model-schema: a filler job ({} pods, fewer than {FILLER_BELOW}) runs under one \
                     ToR, and no ToR has room for all of it",
                    job.total_replicas()
                )
            })
        }
        Some(TorSchema::LargeModel | TorSchema::Normal) if multi_pod => {
            if let Ok(p) = within_tiers(cluster, job, t, gate, opts, 1) {
                return Ok(p);
            }
        }
        _ => {}
    }
    place_gang(cluster, job, t, gate, opts)
}

/// Jobs of fewer replicas than this under `large-model-schema` are filler
/// jobs (MindCluster's `fillJobMaxNPUTaskNum`).
const FILLER_BELOW: u32 = 4;

/// What a job's `tor-affinity` label asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TorSchema {
    LargeModel,
    Filler,
    Normal,
}

/// The job's ToR rule; none for `null`, no label, or a cluster whose nodes
/// name no ToR (there is nothing to keep the job under).
fn tor_schema(cluster: &Cluster, job: &Job) -> Option<TorSchema> {
    let schema = match job.labels.get(keys::TOR_AFFINITY).map(String::as_str)? {
        "large-model-schema" if job.total_replicas() < FILLER_BELOW => TorSchema::Filler,
        "large-model-schema" => TorSchema::LargeModel,
        "normal-schema" => TorSchema::Normal,
        _ => return None,
    };
    cluster.nodes.iter().any(|n| n.network.tor.is_some()).then_some(schema)
}

/// Tries the gang inside one HyperNode, tier by tier up to `highest`,
/// tightest HyperNode first.
fn within_tiers(
    cluster: &mut Cluster,
    job: &Job,
    t: u64,
    gate: Gate<'_>,
    opts: GangOptions,
    highest: u32,
) -> Result<Vec<PodPlacement>, String> {
    let need = devices_needed(job);
    for tier in 1..=highest {
        let mut groups: Vec<(u64, String, Vec<usize>)> = hypernodes(cluster, tier)
            .into_iter()
            .map(|(name, members)| (free_devices(cluster, &members, job), name, members))
            .filter(|(free, _, _)| *free >= need)
            .collect();
        groups.sort();
        for (_, name, members) in groups {
            let inside = |i: usize| {
                gate(i)?;
                if members.binary_search(&i).is_ok() {
                    Ok(())
                } else {
                    Err(Filtered::Gated(format!("node(s) outside tier-{tier} HyperNode {name}")))
                }
            };
            if let Ok(p) = place_gang(cluster, job, t, &inside, opts) {
                return Ok(p);
            }
        }
    }
    Err(format!(
        "network topology: no HyperNode of tier ≤ {highest} can hold all {} pods ({need} devices) of the gang",
        job.total_replicas()
    ))
}
