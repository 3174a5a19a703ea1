//! Time replay of ringleader's own formats: a cluster file and job YAMLs
//! whose annotations give their arrival time and run time. Each job is
//! placed whole by the real gang scheduler (`place_job`) when it arrives or
//! when capacity frees; queued jobs are retried in arrival order after every
//! event, so a small job may start ahead of a big one that does not fit yet.

use ringleader_api::{DeviceKind, Job};
use ringleader_scheduler::cluster::Cluster;
use ringleader_scheduler::place::place_job;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Job annotation: seconds from the start of the replay at which the job is submitted (default 0).
pub const ARRIVAL: &str = "ringleader.io/arrival-time";
/// Job annotation: seconds the job runs once all its pods are placed (default 3600).
pub const DURATION: &str = "ringleader.io/duration";

/// A job with its arrival and run time.
#[derive(Debug, Clone)]
pub struct TimedJob {
    /// The job.
    pub job: Job,
    /// Submission time, seconds.
    pub arrival: u64,
    /// Run time, seconds.
    pub duration: u64,
}

/// Reads arrival and run time from each job's annotations. Only whole-device
/// jobs can be replayed: releasing vNPUs and GPU shares is not modelled yet.
pub fn timed_jobs(jobs: Vec<Job>) -> Result<Vec<TimedJob>, String> {
    jobs.into_iter()
        .map(|job| {
            let read = |key: &str, default: u64| match job.annotations.get(key) {
                None => Ok(default),
                Some(v) => v.trim().parse::<u64>().map_err(|_| {
                    format!("{}: metadata.annotations[\"{key}\"]: {v:?}: must be whole seconds (0 or more)", job.key())
                }),
            };
            if let Some(role) =
                job.roles.iter().find(|r| r.device.as_ref().is_some_and(|d| d.kind != DeviceKind::Whole))
            {
                return Err(format!(
                    "{}: role {} asks for a vNPU or a GPU share; the job replay models whole devices only",
                    job.key(),
                    role.name
                ));
            }
            Ok(TimedJob { arrival: read(ARRIVAL, 0)?, duration: read(DURATION, 3600)?, job })
        })
        .collect()
}

/// What happened to one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JobOutcome {
    /// `namespace/name`.
    pub job: String,
    /// Pods placed.
    pub pods: usize,
    /// Submission time.
    pub arrival: u64,
    /// When its gang was placed; `None`: never.
    pub start: Option<u64>,
    /// When it finished.
    pub end: Option<u64>,
}

impl JobOutcome {
    /// Seconds queued before the gang was placed.
    pub fn wait(&self) -> Option<u64> {
        self.start.map(|s| s - self.arrival)
    }
}

/// The result of a job replay.
#[derive(Debug, Clone, Serialize)]
pub struct JobReplay {
    /// Per job, in input order.
    pub jobs: Vec<JobOutcome>,
    /// (time, allocated devices / all devices) after every event.
    pub utilisation: Vec<(u64, f64)>,
}

impl JobReplay {
    /// Mean queueing delay of placed jobs, seconds.
    pub fn mean_wait(&self) -> f64 {
        let waits: Vec<u64> = self.jobs.iter().filter_map(JobOutcome::wait).collect();
        if waits.is_empty() {
            0.0
        } else {
            waits.iter().sum::<u64>() as f64 / waits.len() as f64
        }
    }

    /// 99th-percentile queueing delay of placed jobs (nearest rank), seconds.
    pub fn p99_wait(&self) -> u64 {
        let mut waits: Vec<u64> = self.jobs.iter().filter_map(JobOutcome::wait).collect();
        waits.sort_unstable();
        let rank = ((waits.len() as f64) * 0.99).ceil() as usize;
        waits.get(rank.saturating_sub(1)).copied().unwrap_or(0)
    }

    /// Jobs never placed.
    pub fn never_placed(&self) -> Vec<&str> {
        self.jobs.iter().filter(|j| j.start.is_none()).map(|j| j.job.as_str()).collect()
    }

    /// Time-weighted mean utilisation from the first to the last event.
    pub fn mean_utilisation(&self) -> f64 {
        let span = match (self.utilisation.first(), self.utilisation.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => (b.0 - a.0) as f64,
            _ => return self.utilisation.first().map(|u| u.1).unwrap_or(0.0),
        };
        let area: f64 = self.utilisation.windows(2).map(|w| (w[1].0 - w[0].0) as f64 * w[0].1).sum();
        area / span
    }
}

/// Replays the jobs on the cluster.
pub fn replay_jobs(mut cluster: Cluster, jobs: &[TimedJob]) -> JobReplay {
    let total = cluster.total_devices().max(1) as f64;
    let mut outcomes: Vec<JobOutcome> = jobs
        .iter()
        .map(|t| JobOutcome { job: t.job.key(), pods: 0, arrival: t.arrival, start: None, end: None })
        .collect();
    let mut arrivals: Vec<usize> = (0..jobs.len()).collect();
    arrivals.sort_by_key(|&i| (jobs[i].arrival, i));
    let mut arrivals: VecDeque<usize> = arrivals.into();
    let mut queue: Vec<usize> = Vec::new();
    // (end time, job) of running jobs, with what each holds.
    let mut running: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut held: Vec<Vec<(String, Vec<u32>)>> = vec![Vec::new(); jobs.len()];
    let mut utilisation = Vec::new();
    loop {
        let next_arrival = arrivals.front().map(|&i| jobs[i].arrival);
        let next_end = running.peek().map(|Reverse((t, _))| *t);
        let now = match (next_arrival, next_end) {
            (Some(a), Some(e)) => a.min(e),
            (Some(a), None) => a,
            (None, Some(e)) => e,
            (None, None) => break,
        };
        while let Some(Reverse((t, i))) = running.peek().copied() {
            if t != now {
                break;
            }
            running.pop();
            for (node, ids) in held[i].drain(..) {
                cluster.release(&node, &ids);
            }
        }
        while let Some(&i) = arrivals.front() {
            if jobs[i].arrival != now {
                break;
            }
            arrivals.pop_front();
            queue.push(i);
        }
        queue.retain(|&i| match place_job(&mut cluster, &jobs[i].job, now) {
            Ok(placed) => {
                outcomes[i].pods = placed.len();
                outcomes[i].start = Some(now);
                outcomes[i].end = Some(now + jobs[i].duration);
                held[i] = placed.into_iter().map(|p| (p.node, p.devices)).collect();
                running.push(Reverse((now + jobs[i].duration, i)));
                false
            }
            Err(_) => true,
        });
        utilisation.push((now, cluster.allocated_devices() as f64 / total));
    }
    JobReplay { jobs: outcomes, utilisation }
}
