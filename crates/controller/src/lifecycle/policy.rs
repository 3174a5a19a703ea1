//! What to do about a pod event: Volcano lifecycle policies (task policies
//! before job policies; `event`/`events`/`exitCode`, optional `timeout`)
//! first, then the role's restart policy (`ExitCode`: 1–127 permanent,
//! 128–255 retryable).

use ringleader_api::kinds::volcano::LifecyclePolicy;
use ringleader_api::model::{JobKind, RestartPolicy};
use serde::Serialize;

/// A decision about the job or some of its pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum PolicyAction {
    /// Delete and recreate the pod (counts one retry).
    RestartPod,
    /// Delete and recreate every pod of the task (one retry).
    RestartTask,
    /// Delete every pod and start over (one retry).
    RestartJob,
    /// Stop the job: Aborting → Aborted.
    AbortJob,
    /// Finish the job: Completing → Completed.
    CompleteJob,
    /// Stop the job: Terminating → Terminated.
    TerminateJob,
    /// Fail the job at once.
    FailJob,
    /// Nothing now (the end-of-job rules decide).
    None,
}

impl PolicyAction {
    /// Parses a Volcano action name.
    pub fn parse(s: &str) -> Option<PolicyAction> {
        Some(match s {
            "RestartPod" => PolicyAction::RestartPod,
            "RestartTask" => PolicyAction::RestartTask,
            "RestartJob" => PolicyAction::RestartJob,
            "AbortJob" => PolicyAction::AbortJob,
            "CompleteJob" => PolicyAction::CompleteJob,
            "TerminateJob" => PolicyAction::TerminateJob,
            _ => return None,
        })
    }
}

/// A Volcano event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A pod failed (with its exit code, if any).
    PodFailed(Option<i32>),
    /// A pod was evicted.
    PodEvicted,
    /// A pod has been Pending (its timeout applies).
    PodPending,
    /// Every pod of a task succeeded.
    TaskCompleted,
    /// A task can no longer reach its minAvailable.
    TaskFailed,
}

impl Event {
    fn name(self) -> &'static str {
        match self {
            Event::PodFailed(_) => "PodFailed",
            Event::PodEvicted => "PodEvicted",
            Event::PodPending => "PodPending",
            Event::TaskCompleted => "TaskCompleted",
            Event::TaskFailed => "TaskFailed",
        }
    }
}

/// Parses a Go duration as Volcano writes it (`90s`, `10m`, `1h30m`).
pub fn parse_duration(s: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut num = String::new();
    for c in s.trim().chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let n: u64 = num.parse().ok()?;
        num.clear();
        total += n * match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return None,
        };
    }
    if !num.is_empty() {
        total += num.parse::<u64>().ok()?;
    }
    Some(total)
}

/// The first matching policy (task policies first) with its timeout in
/// seconds; `*` matches every event, an `exitCode` policy only a failure
/// with that code.
pub fn matching<'a>(
    task: &'a [LifecyclePolicy],
    job: &'a [LifecyclePolicy],
    event: Event,
) -> Option<(PolicyAction, Option<u64>, &'a LifecyclePolicy)> {
    task.iter().chain(job.iter()).find_map(|p| {
        let action = PolicyAction::parse(p.action.as_deref()?)?;
        let hit = match (p.exit_code, event) {
            (Some(code), Event::PodFailed(Some(c))) => code == c,
            (Some(_), _) => false,
            (None, _) => p.event.iter().chain(p.events.iter()).any(|e| e == "*" || e == event.name()),
        };
        hit.then(|| (action, p.timeout.as_deref().and_then(parse_duration), p))
    })
}

/// What the restart policy says about a failed pod.
pub fn restart_decision(kind: JobKind, policy: RestartPolicy, exit_code: Option<i32>) -> PolicyAction {
    match policy {
        RestartPolicy::Always | RestartPolicy::OnFailure => PolicyAction::RestartPod,
        RestartPolicy::ExitCode => match exit_code {
            Some(1..=127) => PolicyAction::FailJob,
            _ => PolicyAction::RestartPod,
        },
        RestartPolicy::Never => match kind {
            // Volcano judges a job by its finished pods (minAvailable / minSuccess).
            JobKind::VolcanoJob => PolicyAction::None,
            // A batch Job replaces failed pods until backoffLimit.
            JobKind::BatchJob | JobKind::Deployment => PolicyAction::RestartPod,
            _ => PolicyAction::FailJob,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_exit_codes() {
        assert_eq!(parse_duration("90s"), Some(90));
        assert_eq!(parse_duration("10m"), Some(600));
        assert_eq!(parse_duration("1h30m"), Some(5400));
        assert_eq!(parse_duration("5"), Some(5));
        assert_eq!(parse_duration("5d"), None);
        let kind = JobKind::PyTorchJob;
        assert_eq!(restart_decision(kind, RestartPolicy::ExitCode, Some(1)), PolicyAction::FailJob);
        assert_eq!(restart_decision(kind, RestartPolicy::ExitCode, Some(127)), PolicyAction::FailJob);
        assert_eq!(restart_decision(kind, RestartPolicy::ExitCode, Some(128)), PolicyAction::RestartPod);
        assert_eq!(restart_decision(kind, RestartPolicy::ExitCode, Some(255)), PolicyAction::RestartPod);
        assert_eq!(restart_decision(kind, RestartPolicy::Never, Some(1)), PolicyAction::FailJob);
        assert_eq!(restart_decision(JobKind::VolcanoJob, RestartPolicy::Never, Some(1)), PolicyAction::None);
    }

    #[test]
    fn star_matches_every_event_and_exit_codes_only_failures() {
        let p = |event: &str, code: Option<i32>, action: &str| LifecyclePolicy {
            action: Some(action.to_string()),
            event: (!event.is_empty()).then(|| event.to_string()),
            exit_code: code,
            ..LifecyclePolicy::default()
        };
        let job = [p("", Some(3), "RestartTask"), p("*", None, "AbortJob")];
        assert_eq!(matching(&[], &job, Event::PodFailed(Some(3))).map(|m| m.0), Some(PolicyAction::RestartTask));
        assert_eq!(matching(&[], &job, Event::PodFailed(Some(4))).map(|m| m.0), Some(PolicyAction::AbortJob));
        assert_eq!(matching(&[], &job, Event::PodEvicted).map(|m| m.0), Some(PolicyAction::AbortJob));
        let task = [p("PodEvicted", None, "RestartPod")];
        assert_eq!(matching(&task, &job, Event::PodEvicted).map(|m| m.0), Some(PolicyAction::RestartPod));
    }
}
