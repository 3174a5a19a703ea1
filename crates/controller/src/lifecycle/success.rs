//! When a job has succeeded (or, for Volcano, failed) judging by its
//! finished pods, per kind and success policy:
//!
//! * acjob: default — one pod succeeding succeeds the job; `AllWorkers` —
//!   every Worker pod must.
//! * PyTorchJob, TFJob: the Master/Chief succeeding; without one, every
//!   worker; `AllWorkers` — every Worker pod.
//! * MPIJob: the Launcher succeeding.
//! * Volcano: `minSuccess` pods succeeded; else once every pod finished,
//!   Completed when `succeeded ≥ minAvailable`, Failed otherwise.
//! * batch Job: `parallelism` pods succeeded. Deployment: never.

use super::{ObservedPod, Phase, PodPhase};
use ringleader_api::model::{Job, JobKind, SuccessPolicy};

fn succeeded(pods: &[&ObservedPod], role: Option<&str>) -> u32 {
    pods.iter().filter(|p| p.phase == PodPhase::Succeeded && role.is_none_or(|r| r == p.role)).count() as u32
}

fn replicas(job: &Job, role: &str) -> u32 {
    job.roles.iter().find(|r| r.name == role).map_or(0, |r| r.replicas)
}

fn all_of(job: &Job, pods: &[&ObservedPod], role: &str) -> bool {
    let n = replicas(job, role);
    n > 0 && succeeded(pods, Some(role)) >= n
}

/// The phase the finished pods decide, with reason and message; `None`
/// while undecided.
pub fn verdict(job: &Job, pods: &[&ObservedPod]) -> Option<(Phase, &'static str, String)> {
    let done = |msg: String| Some((Phase::Completed, "Succeeded", msg));
    let coordinator = job.roles.iter().find(|r| matches!(r.name.as_str(), "Master" | "Chief")).map(|r| r.name.clone());
    match job.kind {
        JobKind::Deployment => None,
        JobKind::BatchJob => {
            let n = job.total_replicas();
            (succeeded(pods, None) >= n).then(|| format!("{n} of {n} pods succeeded")).and_then(done)
        }
        JobKind::MpiJob => all_of(job, pods, "Launcher").then(|| "launcher succeeded".to_string()).and_then(done),
        JobKind::AscendJob => match job.success {
            SuccessPolicy::AllWorkers => {
                let role = if replicas(job, "Worker") > 0 { "Worker" } else { job.roles.first()?.name.as_str() };
                all_of(job, pods, role).then(|| format!("all {role} pods succeeded")).and_then(done)
            }
            _ => pods
                .iter()
                .find(|p| p.phase == PodPhase::Succeeded)
                .map(|p| format!("pod {} succeeded", p.name))
                .and_then(done),
        },
        JobKind::PyTorchJob | JobKind::TfJob => match (job.success, coordinator) {
            (SuccessPolicy::AllWorkers, _) => {
                all_of(job, pods, "Worker").then(|| "all workers succeeded".to_string()).and_then(done)
            }
            (_, Some(c)) => all_of(job, pods, &c).then(|| format!("{} succeeded", c.to_lowercase())).and_then(done),
            (_, None) => all_of(job, pods, "Worker").then(|| "all workers succeeded".to_string()).and_then(done),
        },
        JobKind::VolcanoJob => {
            let ok = succeeded(pods, None);
            if let SuccessPolicy::MinSuccess(n) = job.success {
                if ok >= n {
                    return done(format!("{ok} pods succeeded (minSuccess {n})"));
                }
            }
            let total = job.total_replicas();
            let finished = pods.iter().filter(|p| matches!(p.phase, PodPhase::Succeeded | PodPhase::Failed)).count();
            if (finished as u32) < total || total == 0 {
                return None;
            }
            let need = match job.success {
                SuccessPolicy::MinSuccess(n) => n,
                _ => job.scheduling.min_available.min(total),
            };
            if ok >= need {
                done(format!("{ok} of {total} pods succeeded"))
            } else {
                Some((Phase::Failed, "PodFailed", format!("only {ok} of {total} pods succeeded, {need} needed")))
            }
        }
    }
}
