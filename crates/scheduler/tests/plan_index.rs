//! `plan` places plain jobs through node groups kept across jobs; placing
//! the same jobs one by one with `place_job` (which never uses them) is the
//! reference, and must give exactly the same pods, nodes, devices,
//! annotations, pending reasons and final device states.

mod rough;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringleader_api::model::Job;
use ringleader_scheduler::cluster::Cluster;
use ringleader_scheduler::place::{place_job, plan, Pending, PodPlacement};
use ringleader_scheduler::scenarios::{a2_cluster, mixed_cluster, mixed_jobs};
use rough::{rough_cluster, rough_min_available, rough_policy, rough_role};

/// What `plan` did before it kept groups: every job on its own.
fn reference(cluster: &mut Cluster, jobs: &[Job], now: u64) -> (Vec<PodPlacement>, Vec<Pending>) {
    let mut placements = Vec::new();
    let mut pending = Vec::new();
    let mut time = now;
    for job in jobs {
        match place_job(cluster, job, time) {
            Ok(p) => {
                time += p.len() as u64;
                placements.extend(p);
            }
            Err(reason) => pending.push(Pending { job: job.key(), reason }),
        }
    }
    (placements, pending)
}

fn assert_same(cluster: &Cluster, jobs: &[Job], what: &str) {
    let mut fast = cluster.clone();
    let mut slow = cluster.clone();
    let (got, got_pending) = plan(&mut fast, jobs, 7);
    let (want, want_pending) = reference(&mut slow, jobs, 7);
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{what}: placement {k} differs");
    }
    assert_eq!(got.len(), want.len(), "{what}: placement count");
    assert_eq!(got_pending, want_pending, "{what}: pending");
    for (f, s) in fast.nodes.iter().zip(&slow.nodes) {
        assert_eq!(f.state, s.state, "{what}: device state of {}", f.name);
    }
}

#[test]
fn mixed_scenario_matches_reference() {
    assert_same(&mixed_cluster(300), &mixed_jobs(1500), "mixed 300x1500");
    assert_same(&mixed_cluster(100), &mixed_jobs(500), "mixed 100x500");
    assert_same(&a2_cluster(64, 3), &mixed_jobs(400), "a2 64x400");
}

/// Mixed jobs varied in the ways placement reads: minAvailable, device
/// count and kind, node selectors, schedule policy, tor-affinity and a
/// second role (the last two take the reference path inside `plan`).
fn rough_jobs(rng: &mut StdRng, pods: u32) -> Vec<Job> {
    let mut jobs = mixed_jobs(pods);
    for job in &mut jobs {
        rough_min_available(rng, job);
        rough_role(rng, job, 0.0);
        rough_policy(job, rng.gen_range(0..40));
    }
    jobs
}

#[test]
fn rough_clusters_and_jobs_match_reference() {
    for seed in 0..24u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let nodes = rng.gen_range(20..240);
        let pods = rng.gen_range(nodes as u32..nodes as u32 * 6);
        let cluster = rough_cluster(&mut rng, nodes);
        let jobs = rough_jobs(&mut rng, pods);
        assert_same(&cluster, &jobs, &format!("seed {seed}"));
    }
}
