//! Gang placement: every pod of a job onto a node and exact devices, or
//! nothing. Tried on a copy of the device state (a statement) and committed
//! only when at least `minAvailable` pods fit.

mod domains;
mod gang;
pub mod handshake;
pub(crate) mod index;
pub mod network;
mod request;
mod view;
pub mod vnpu;

pub use request::{
    annotations, topology_request, Gate, Pending, PodPlacement, GANG_DEVICE_PODS, GPU_MILLI, PREDICATE_TIME,
    VISIBLE_DEVICES,
};
pub use view::TorOrder;

use crate::cluster::Cluster;
use ringleader_api::Job;

/// Places one job on `cluster` as a gang. On success the cluster's device
/// state includes the job; on failure it is unchanged and the reason says
/// which constraint failed on how many nodes.
pub fn place_job(cluster: &mut Cluster, job: &Job, predicate_time: u64) -> Result<Vec<PodPlacement>, String> {
    place_job_gated(cluster, job, predicate_time, &|_| Ok(()))
}

/// [`place_job`] on the nodes `gate` lets through, following the job's
/// network-topology constraints (see [`network`]).
pub fn place_job_gated(
    cluster: &mut Cluster,
    job: &Job,
    predicate_time: u64,
    gate: Gate<'_>,
) -> Result<Vec<PodPlacement>, String> {
    network::place(cluster, job, predicate_time, gate)
}

/// Places jobs in order, each on the state the previous ones left. The
/// result is that of [`place_job`] on each job in turn; plain jobs get there
/// through node groups kept across the jobs, as a 10,000-node cluster
/// otherwise costs every job a pass over every node.
pub fn plan(cluster: &mut Cluster, jobs: &[Job], now: u64) -> (Vec<PodPlacement>, Vec<Pending>) {
    let mut placements = Vec::new();
    let mut pending = Vec::new();
    let mut time = now;
    let mut index = index::Index::build(cluster);
    let unbarred = index::Barred::new();
    for job in jobs {
        let result = match index.place(cluster, job, time, &unbarred) {
            index::Tried::Placed(p) => Ok(p),
            index::Tried::Pending(reason) => Err(reason),
            index::Tried::Unsupported => {
                let result = place_job(cluster, job, time);
                // A job that does not fit leaves the cluster as it was, and
                // a resync walks every node.
                if result.is_ok() {
                    index.resync(cluster);
                }
                result
            }
        };
        match result {
            Ok(p) => {
                time += p.len() as u64;
                placements.extend(p);
            }
            Err(reason) => pending.push(Pending { job: job.key(), reason }),
        }
    }
    (placements, pending)
}
