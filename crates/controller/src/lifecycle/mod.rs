//! The one lifecycle engine every job kind runs on, shaped like a kube-rs
//! reconciler: [`reconcile`] looks at the whole current state — the job and
//! its last written [`JobStatus`] ([`JobState`]), the pods and nodes
//! ([`Observed`]) and `now` — and returns [`Action`]s. It is level-triggered
//! (it does not care which event woke it) and idempotent: applying the
//! returned `WriteStatus` ([`JobState::apply`]) and reconciling again with
//! the same observations yields no new changes.
//!
//! Per-kind differences are data: success rules ([`success`]), restart and
//! lifecycle policies ([`policy`]), and the status each kind reports
//! ([`status`]).
//!
//! Pods carry the incarnation they were created for: `job_version` (job
//! restarts) and `generation` (restarts of their slot). A pod older than the
//! status says is *stale* and is deleted; a missing pod of the current
//! incarnation is created once no pod of the same name remains.

pub mod policy;
mod rescale;
mod run;
pub mod status;
pub mod success;
mod types;

use crate::elastic::{self};
use crate::env::{self};
use crate::expand::PodPlan;
use crate::fault::{self, DeviceRef, FaultKind};
use crate::placement::Placement;
use crate::ranktable::hccl;
use policy::{Event, PolicyAction};
use ringleader_api::devices::{classify, Family};
use ringleader_api::model::{CleanPodPolicy, FaultScheduling, Job, JobKind};
use std::collections::{BTreeMap, BTreeSet};

use run::Run;
use types::*;
pub use types::{
    Action, Condition, ControllerConfig, DeleteMode, JobState, JobStatus, Observed, ObservedNode, ObservedPod, Phase,
    PodPhase, RankTableMark, ReplicaStatus,
};

/// Reconciles one job: see the module doc.
pub fn reconcile(state: &JobState, observed: &Observed, now: u64) -> Vec<Action> {
    let mut run = Run {
        state,
        st: state.status.clone(),
        actions: Vec::new(),
        requeue: None,
        now,
        deleted: BTreeSet::new(),
        expanded: Default::default(),
    };
    if run.st.created_at.is_none() {
        run.st.created_at = Some(now);
        run.transition(Phase::Pending, "Created", "job created");
        let exp = run.expansion();
        if state.job.kind == JobKind::MpiJob {
            let hostfile = env::mpi::hostfile_for(&state.job, &state.extras, &exp.pods, None, &state.config.env);
            let cm = env::mpi::hostfile_config_map(&state.job.namespace, &state.job.name, &hostfile);
            run.actions.push(Action::WriteConfigMap(Box::new(cm)));
        }
        run.actions.push(Action::ApplyPodGroup(Box::new(exp.pod_group.clone())));
    }
    // Node loss is judged in every phase: a finished job's pods must not
    // hold a dead node's devices either.
    let loss = fault::node_loss(&observed.pods, &observed.nodes, &state.config.node_loss, now);
    for (pod, node) in loss.lost {
        run.actions.push(Action::MarkPodLost { pod, node });
    }
    if let Some(at) = loss.next {
        run.requeue_at(at);
    }
    roll_out(&mut run);
    step(&mut run, observed);
    if run.st.phase.is_finished() {
        finished(&mut run, observed);
        run.st.timers.clear();
        run.st.backoff.clear();
    } else {
        prune_timers(&mut run, observed);
        write_rank_table(&mut run, observed);
    }
    count_replicas(&mut run, observed);
    let Run { st, mut actions, requeue, .. } = run;
    if st != state.status {
        actions.push(Action::WriteStatus(Box::new(st)));
    }
    if let Some(after) = requeue {
        actions.push(Action::RequeueAfter(after));
    }
    actions
}

/// A Deployment whose template changed (and is not paused) rolls out a
/// new revision: its pods become the previous incarnation, replaced by
/// pods of the new template, as a ReplicaSet of the new revision would
/// replace them (`crates/manager/src/deployments.rs` keeps the ReplicaSets).
fn roll_out(run: &mut Run<'_>) {
    let extras = &run.state.extras;
    if run.state.job.kind != JobKind::Deployment || run.st.phase.is_finished() {
        return;
    }
    let Some(want) = extras.template_hash.clone() else { return };
    match run.st.template_hash.as_deref() {
        None => run.st.template_hash = Some(want),
        Some(had) if had != want && !extras.paused => {
            run.st.template_hash = Some(want);
            run.st.version += 1;
        }
        _ => {}
    }
}

fn is_stale(st: &JobStatus, slots: &BTreeSet<&str>, p: &ObservedPod) -> bool {
    p.job_version < st.version
        || p.generation < st.generations.get(&p.slot).copied().unwrap_or(0)
        || !slots.contains(p.slot.as_str())
}

fn step(run: &mut Run<'_>, observed: &Observed) {
    if run.st.phase.is_finished() {
        return;
    }
    let state = run.state;
    let job = effective_job(&state.job, &run.st);
    let exp = run.expansion();
    let slots: BTreeSet<&str> = exp.pods.iter().map(|p| p.slot.as_str()).collect();
    let (stale, current): (Vec<&ObservedPod>, Vec<&ObservedPod>) =
        observed.pods.iter().partition(|p| is_stale(&run.st, &slots, p));

    // Old incarnations go first; a fault-deleted pod is forced after the grace period.
    let grace = state.config.fault.grace_period_secs;
    run.st.backoff.retain(|slot, _| slots.contains(slot.as_str()));
    for p in &stale {
        match run.st.fault_deletes.get(&p.name).copied() {
            Some(t) if run.now >= t.saturating_add(grace) => run.delete(p, DeleteMode::Force, "grace period over"),
            Some(t) => {
                run.requeue_at(t.saturating_add(grace));
            }
            None => match backing_off(&run.st, p, run.now) {
                // The failed pod stays, shown as CrashLoopBackOff, until its slot may restart.
                Some(until) => run.requeue_at(until),
                None => run.delete(p, DeleteMode::Graceful, "previous incarnation"),
            },
        }
    }
    let present: BTreeSet<&str> = observed.pods.iter().map(|p| p.name.as_str()).collect();
    run.st.fault_deletes.retain(|name, _| present.contains(name.as_str()));

    match run.st.phase {
        Phase::Restarting => {
            if stale.is_empty() {
                run.transition(Phase::Pending, "Restarted", "previous pods are gone; starting again");
                run.actions.push(Action::ApplyPodGroup(Box::new(exp.pod_group.clone())));
            } else {
                return;
            }
        }
        Phase::Aborting | Phase::Terminating | Phase::Completing => return stopping(run, &current),
        _ => {}
    }

    if suspend(run, &current) {
        return;
    }

    if let Some(deadline) = job.fault.active_deadline_seconds {
        // Counted from the first reconcile, as Kubernetes counts from the
        // job's startTime: time spent queued counts too.
        let start = run.st.created_at.unwrap_or(run.now);
        if run.now >= start.saturating_add(deadline) {
            run.transition(
                Phase::Failed,
                "DeadlineExceeded",
                &format!("job ran longer than activeDeadlineSeconds ({deadline} s)"),
            );
            return;
        }
        run.requeue_at(start.saturating_add(deadline));
    }

    // Pods moved by pod-level recovery are the next incarnation's business;
    // the others' events are handled in the same pass, as the next pass
    // (which would see the moved pods as stale) would handle them.
    let current: Vec<&ObservedPod> = match handle_faults(run, observed, &job, &current) {
        Faults::JobLevel => return,
        Faults::PodLevel(moved) => current.into_iter().filter(|p| !moved.contains(p.name.as_str())).collect(),
        Faults::None => current,
    };
    if handle_pod_events(run, &job, &current) {
        if matches!(run.st.phase, Phase::Aborting | Phase::Terminating | Phase::Completing) {
            stopping(run, &current);
        } else if !run.st.phase.is_finished() && run.st.phase != Phase::Restarting {
            // Pods restarted one by one are stale from now on: judge the job by
            // the others as the next pass will (a master that succeeded while a
            // worker failed succeeds the job now, not one pass later).
            let kept: Vec<&ObservedPod> = current.iter().copied().filter(|p| !is_stale(&run.st, &slots, p)).collect();
            if let Some((phase, reason, msg)) = success::verdict(&job, &kept) {
                run.transition(phase, reason, &msg);
            }
        }
        return;
    }
    if let Some((phase, reason, msg)) = success::verdict(&job, &current) {
        run.transition(phase, reason, &msg);
        return;
    }

    let counts = |f: fn(PodPhase) -> bool| current.iter().filter(|p| f(p.phase)).count() as u32;
    let started = counts(|p| matches!(p, PodPhase::Running | PodPhase::Succeeded | PodPhase::Failed));
    let need = job.scheduling.min_available.min(job.total_replicas()).max(1);
    if run.st.phase == Phase::Pending && started >= need {
        run.st.start_time.get_or_insert(run.now);
        run.transition(Phase::Running, "Running", &format!("{started} of {} pods started", job.total_replicas()));
    }
    if run.st.phase == Phase::Running && rescale::grow(run, observed, &job, &current) {
        return;
    }
    if rescale::refit(run, observed, &current) {
        return;
    }

    // Create what is missing; a name still in use waits for its pod to go,
    // a slot in back-off for its delay (a gang for every member's: a
    // partial gang could not be scheduled anyway).
    let independent = job.kind.independent_replicas();
    let waiting: Vec<(&str, u64)> =
        run.st.backoff.iter().filter(|(_, b)| b.waiting(run.now)).map(|(slot, b)| (slot.as_str(), b.until)).collect();
    let mut wake = None;
    // A set, not a scan of the pods per plan: a 5,000-pod gang's reconcile
    // made 25 million slot compares here on every pass once its pods existed.
    let filled: BTreeSet<&str> = current.iter().map(|p| p.slot.as_str()).collect();
    let missing: Vec<&PodPlan> = exp
        .pods
        .iter()
        .filter(|plan| !filled.contains(plan.slot.as_str()) && !present.contains(plan.name.as_str()))
        .filter(|plan| {
            let held = waiting.iter().filter(|(slot, _)| !independent || *slot == plan.slot).map(|(_, u)| *u).max();
            if let Some(until) = held {
                wake = Some(wake.map_or(until, |w: u64| w.min(until)));
            }
            held.is_none()
        })
        .collect();
    if let Some(until) = wake {
        run.requeue_at(until);
    }
    if !missing.is_empty() {
        let envs = env::static_env(&job, &state.extras, &exp.pods, &state.config.env);
        for plan in missing {
            let mut plan = plan.clone();
            if let Some(e) = envs.get(&plan.name) {
                env::inject(&job, &mut plan, e);
            }
            run.actions.push(Action::CreatePod(Box::new(plan)));
        }
    }
}

/// Kubeflow `suspend`: removes the live pods and creates none while set;
/// the `Suspended` condition says so. True while suspended.
fn suspend(run: &mut Run<'_>, current: &[&ObservedPod]) -> bool {
    let now = run.now;
    let suspended = run.state.extras.suspended;
    let cond = run.st.conditions.iter().position(|c| c.kind == "Suspended");
    match (suspended, cond) {
        (true, _) => {
            for p in current.iter().filter(|p| p.phase.is_live()) {
                run.delete(p, DeleteMode::Graceful, "job suspended");
            }
            let is_set = cond.is_some_and(|i| run.st.conditions[i].status);
            if !is_set {
                let c = Condition {
                    kind: "Suspended".to_string(),
                    status: true,
                    reason: "Suspended".to_string(),
                    message: "runPolicy.suspend is set".to_string(),
                    last_transition: now,
                };
                match cond {
                    Some(i) => run.st.conditions[i] = c,
                    None => run.st.conditions.push(c),
                }
                for c in run.st.conditions.iter_mut().filter(|c| c.kind == "Running" && c.status) {
                    c.status = false;
                    c.last_transition = now;
                }
                run.st.phase = Phase::Pending;
                run.st.reason = "Suspended".to_string();
                run.st.message = "runPolicy.suspend is set".to_string();
                run.st.last_transition = now;
            }
            true
        }
        (false, Some(i)) if run.st.conditions[i].status => {
            let c = &mut run.st.conditions[i];
            c.status = false;
            c.reason = "Resumed".to_string();
            c.message = "runPolicy.suspend was cleared".to_string();
            c.last_transition = now;
            false
        }
        _ => false,
    }
}

/// Stops the live pods; once none is left, the stopping phase ends.
fn stopping(run: &mut Run<'_>, current: &[&ObservedPod]) {
    let live: Vec<&&ObservedPod> = current.iter().filter(|p| p.phase.is_live()).collect();
    for p in &live {
        run.delete(p, DeleteMode::Graceful, "job is stopping");
    }
    if live.is_empty() {
        let (phase, reason) = match run.st.phase {
            Phase::Aborting => (Phase::Aborted, "Aborted"),
            Phase::Terminating => (Phase::Terminated, "Terminated"),
            _ => (Phase::Completed, "Completed"),
        };
        let msg = run.st.message.clone();
        run.transition(phase, reason, &msg);
    }
}

/// What fault handling did.
enum Faults {
    /// No fault under the job's pods.
    None,
    /// These pods are rescheduled alone (`recover_policy_path: pod`).
    PodLevel(BTreeSet<String>),
    /// The whole job restarts.
    JobLevel,
}

/// Handles faults under live pods.
fn handle_faults(run: &mut Run<'_>, observed: &Observed, job: &Job, current: &[&ObservedPod]) -> Faults {
    let elastic = job.fault.elastic;
    let mode = match (job.fault.fault_scheduling, elastic) {
        (Some(m), _) => m,
        (None, Some(_)) => FaultScheduling::Grace,
        (None, None) => return Faults::None,
    };
    let multi_pod = job.total_replicas() > 1;
    if run.state.config.fault.auto_stowing {
        let still = fault::isolated_devices(&observed.nodes, multi_pod);
        let healthy: BTreeSet<&str> = observed.nodes.iter().filter(|n| n.ready).map(|n| n.name.as_str()).collect();
        // A chip is handed back only when its node reports it healthy again.
        run.st.isolated.retain(|d| still.contains(d) || !healthy.contains(d.node.as_str()));
    }
    let faults = fault::pod_faults(current.iter().copied(), &observed.nodes, multi_pod);
    if faults.is_empty() {
        return Faults::None;
    }
    for f in &faults {
        run.st.isolated.extend(f.devices.iter().cloned());
        if f.kind == FaultKind::NodeNotReady {
            if let Some(p) = current.iter().find(|p| p.name == f.pod) {
                if let Some(node) = &p.node {
                    run.st.isolated.extend(p.devices.iter().map(|d| DeviceRef { node: node.clone(), device: *d }));
                }
            }
        }
    }
    let faulty: BTreeSet<&str> = faults.iter().map(|f| f.pod.as_str()).collect();
    let remove = |run: &mut Run<'_>, p: &ObservedPod| {
        if faulty.contains(p.name.as_str()) && mode == FaultScheduling::Force {
            run.delete(p, DeleteMode::Force, "fault rescheduling (force)");
        } else {
            run.delete(p, DeleteMode::Graceful, "fault rescheduling (grace)");
            run.st.fault_deletes.entry(p.name.clone()).or_insert(run.now);
        }
    };
    let kinds: Vec<String> = faults.iter().map(|f| format!("{}: {:?}", f.pod, f.kind)).collect();
    let message = format!("fault under {}", kinds.join(", "));
    if let Some(el) = elastic {
        let (fitting, best) = rescale::capacity(&run.state.job, &observed.nodes);
        match elastic::target(&run.state.job, el, fitting, best) {
            Some(scale)
                if scale.replicas == run.state.job.total_replicas()
                    && scale.chips == elastic::requested_chips(&run.state.job) =>
            {
                run.st.scale = None
            }
            Some(scale) => run.st.scale = Some(scale),
            None => {}
        }
    }
    // Replicas of a Deployment or batch Job work alone (seed 000's inference
    // card fault rescheduling): only the one on the fault moves.
    if (job.fault.pod_level_recovery || job.kind.independent_replicas()) && elastic.is_none() {
        for p in current.iter().filter(|p| faulty.contains(p.name.as_str())) {
            *run.st.generations.entry(p.slot.clone()).or_insert(0) += 1;
            remove(run, p);
        }
        run.transition(Phase::Running, "PodRescheduling", &message);
        return Faults::PodLevel(faulty.iter().map(|n| n.to_string()).collect());
    }
    for p in current.iter().filter(|p| p.phase.is_live() || faulty.contains(p.name.as_str())) {
        remove(run, p);
    }
    run.st.version += 1;
    run.transition(Phase::Restarting, "FaultRescheduling", &message);
    Faults::JobLevel
}

/// Applies lifecycle and restart policies to pod events; true when the job's course changed.
fn handle_pod_events(run: &mut Run<'_>, job: &Job, current: &[&ObservedPod]) -> bool {
    let extras = &run.state.extras;
    let no_task: Vec<ringleader_api::kinds::volcano::LifecyclePolicy> = Vec::new();
    let mut decisions: Vec<(PolicyAction, Option<&ObservedPod>, String)> = Vec::new();
    let mut live_timers: BTreeSet<String> = BTreeSet::new();
    let now = run.now;
    let mut timed = |run: &mut Run<'_>, key: String, since: u64, timeout: Option<u64>| -> bool {
        let Some(t) = timeout else { return true };
        live_timers.insert(key.clone());
        let first = *run.st.timers.entry(key).or_insert(since.min(now));
        if now >= first.saturating_add(t) {
            return true;
        }
        run.requeue_at(first.saturating_add(t));
        false
    };
    for p in current {
        let task = extras.task_policies.get(&p.role).unwrap_or(&no_task);
        match p.phase {
            PodPhase::Failed => {
                // Volcano sees a pod its node took down as evicted.
                let event = if p.evicted || p.node_lost { Event::PodEvicted } else { Event::PodFailed(p.exit_code) };
                let (action, timeout) = match policy::matching(task, &job.fault.policies, event) {
                    Some((a, t, _)) => (a, t),
                    None => {
                        let restart = job.roles.iter().find(|r| r.name == p.role).map(|r| r.restart_policy);
                        let a =
                            restart.map_or(PolicyAction::None, |r| policy::restart_decision(job.kind, r, p.exit_code));
                        (a, None)
                    }
                };
                let why = match (event, p.exit_code) {
                    (Event::PodEvicted, _) if p.node_lost => {
                        format!("pod {} was lost with node {}", p.name, p.node.as_deref().unwrap_or("?"))
                    }
                    (Event::PodEvicted, _) => format!("pod {} was evicted", p.name),
                    (_, Some(c)) => format!("pod {} failed with exit code {c}", p.name),
                    _ => format!("pod {} failed", p.name),
                };
                if action != PolicyAction::None && timed(run, format!("{action:?}/{}", p.name), p.phase_since, timeout)
                {
                    decisions.push((action, Some(p), why));
                }
            }
            // A replica's `restartPolicy: Always` is its pods': the kubelet
            // restarts a container that exited cleanly too (the MindIE
            // ms_controller relies on it). Deployments replace their own.
            PodPhase::Succeeded
                if !job.kind.independent_replicas()
                    && job.roles.iter().any(|r| {
                        r.name == p.role && r.restart_policy == ringleader_api::model::RestartPolicy::Always
                    }) =>
            {
                let why = format!("pod {} exited; restartPolicy Always restarts it", p.name);
                decisions.push((PolicyAction::RestartPod, Some(p), why));
            }
            PodPhase::Pending => {
                if let Some((action, Some(t), _)) = policy::matching(task, &job.fault.policies, Event::PodPending) {
                    if timed(run, format!("pending/{}", p.name), p.phase_since, Some(t)) {
                        decisions.push((action, Some(p), format!("pod {} pending longer than {t} s", p.name)));
                    }
                }
            }
            _ => {}
        }
    }
    for role in &job.roles {
        let task = extras.task_policies.get(&role.name).unwrap_or(&no_task);
        if task.is_empty() && job.fault.policies.is_empty() {
            continue;
        }
        let pods: Vec<&&ObservedPod> = current.iter().filter(|p| p.role == role.name).collect();
        let succeeded = pods.iter().filter(|p| p.phase == PodPhase::Succeeded).count() as u32;
        let failed = pods.iter().filter(|p| p.phase == PodPhase::Failed).count() as u32;
        let min = role.min_available.unwrap_or(role.replicas);
        let events = [
            (succeeded >= role.replicas && role.replicas > 0, Event::TaskCompleted, "completed"),
            (failed > role.replicas.saturating_sub(min), Event::TaskFailed, "failed"),
        ];
        for (hit, event, word) in events {
            if !hit {
                continue;
            }
            if let Some((action, timeout, _)) = policy::matching(task, &job.fault.policies, event) {
                if timed(run, format!("{word}/{}", role.name), now, timeout) {
                    decisions.push((action, None, format!("task {} {word}", role.name)));
                }
            }
        }
    }
    run.st.timers.retain(|k, _| live_timers.contains(k));
    let Some(strongest) = decisions.iter().map(|d| d.0).min_by_key(|a| severity(*a)) else { return false };
    let message = decisions.iter().find(|d| d.0 == strongest).map(|d| d.2.clone()).unwrap_or_default();
    match strongest {
        PolicyAction::FailJob => run.transition(Phase::Failed, "PodFailed", &message),
        PolicyAction::AbortJob => run.transition(Phase::Aborting, "AbortJob", &message),
        PolicyAction::TerminateJob => run.transition(Phase::Terminating, "TerminateJob", &message),
        PolicyAction::CompleteJob => run.transition(Phase::Completing, "CompleteJob", &message),
        PolicyAction::RestartJob => {
            if !run.retry_allowed() {
                run.transition(Phase::Failed, "BackoffLimitExceeded", &format!("{message}; no retries left"));
                return true;
            }
            run.st.retries += 1;
            run.st.version += 1;
            for p in current.iter().filter(|p| p.phase.is_live()) {
                run.delete(p, DeleteMode::Graceful, "job restart");
            }
            // The failed pods are the previous incarnation's; the restart
            // waits for them, and they stay for their back-off.
            for p in decisions.iter().filter_map(|d| d.1) {
                back_off(run, p);
            }
            run.transition(Phase::Restarting, "RestartJob", &message);
        }
        PolicyAction::RestartTask => {
            if !run.retry_allowed() {
                run.transition(Phase::Failed, "BackoffLimitExceeded", &format!("{message}; no retries left"));
                return true;
            }
            run.st.retries += 1;
            let roles: BTreeSet<&str> = decisions
                .iter()
                .filter(|d| d.0 == PolicyAction::RestartTask)
                .filter_map(|d| d.1.map(|p| p.role.as_str()))
                .collect();
            let failed: BTreeSet<&str> = decisions.iter().filter_map(|d| d.1.map(|p| p.name.as_str())).collect();
            for p in current.iter().filter(|p| roles.contains(p.role.as_str())) {
                *run.st.generations.entry(p.slot.clone()).or_insert(0) += 1;
                if !(failed.contains(p.name.as_str()) && back_off(run, p)) {
                    run.delete(p, DeleteMode::Graceful, "task restart");
                }
            }
            let phase = run.st.phase;
            run.transition(phase, "RestartTask", &message);
        }
        PolicyAction::RestartPod => {
            // One retry per pod restarted, never past the limit.
            for p in decisions.iter().filter(|d| d.0 == PolicyAction::RestartPod).filter_map(|d| d.1) {
                if !run.retry_allowed() {
                    run.transition(Phase::Failed, "BackoffLimitExceeded", &format!("{message}; no retries left"));
                    return true;
                }
                run.st.retries += 1;
                *run.st.generations.entry(p.slot.clone()).or_insert(0) += 1;
                if !back_off(run, p) {
                    run.delete(p, DeleteMode::Graceful, "pod restart");
                }
            }
            let phase = run.st.phase;
            run.transition(phase, "RestartPod", &message);
        }
        PolicyAction::None => return false,
    }
    true
}

/// Starts the back-off of a failed pod's slot (CrashLoopBackOff); true
/// when the pod is to stay until it ends. Pods that failed for their node
/// or an eviction restart at once: the container did not crash.
fn back_off(run: &mut Run<'_>, p: &ObservedPod) -> bool {
    if p.phase != PodPhase::Failed || p.evicted || p.node_lost {
        return false;
    }
    let Some(b) = run.state.config.backoff.next(run.st.backoff.get(&p.slot), run.now) else { return false };
    run.st.backoff.insert(p.slot.clone(), b);
    run.actions.push(Action::BackOff { pod: p.name.clone(), delay: b.delay, until: b.until, restarts: b.restarts });
    run.requeue_at(b.until);
    true
}

/// Until when a failed pod of an earlier incarnation stays for its slot's back-off.
fn backing_off(st: &JobStatus, p: &ObservedPod, now: u64) -> Option<u64> {
    if p.phase != PodPhase::Failed || p.evicted || p.node_lost || p.deleting {
        return None;
    }
    st.backoff.get(&p.slot).filter(|b| b.waiting(now)).map(|b| b.until)
}

fn severity(a: PolicyAction) -> u8 {
    match a {
        PolicyAction::FailJob => 0,
        PolicyAction::AbortJob => 1,
        PolicyAction::TerminateJob => 2,
        PolicyAction::CompleteJob => 3,
        PolicyAction::RestartJob => 4,
        PolicyAction::RestartTask => 5,
        PolicyAction::RestartPod => 6,
        PolicyAction::None => 7,
    }
}

/// Cleans up after the job finished, and applies the TTL.
fn finished(run: &mut Run<'_>, observed: &Observed) {
    let job = &run.state.job;
    // Running pods always stop with the job (a finished job must not hold
    // devices); cleanPodPolicy All also removes the finished ones.
    let all = job.fault.clean_pod_policy == CleanPodPolicy::All;
    for p in &observed.pods {
        if p.phase.is_live() || all {
            run.delete(p, DeleteMode::Graceful, "job finished");
        }
    }
    if let (Some(ttl), Some(done)) = (job.fault.ttl_seconds_after_finished, run.st.completion_time) {
        if run.now >= done.saturating_add(ttl) {
            run.actions.push(Action::DeleteJob);
        } else {
            run.requeue_at(done.saturating_add(ttl));
        }
    }
}

fn count_replicas(run: &mut Run<'_>, observed: &Observed) {
    let job = effective_job(&run.state.job, &run.st);
    let exp = run.expansion();
    let slots: BTreeSet<&str> = exp.pods.iter().map(|p| p.slot.as_str()).collect();
    let mut out: BTreeMap<String, ReplicaStatus> =
        job.roles.iter().map(|r| (r.name.clone(), ReplicaStatus::default())).collect();
    for p in observed.pods.iter().filter(|p| !is_stale(&run.st, &slots, p)) {
        let Some(r) = out.get_mut(&p.role) else { continue };
        match p.phase {
            PodPhase::Pending | PodPhase::Unknown => r.pending += 1,
            PodPhase::Running => r.running += 1,
            PodPhase::Succeeded => r.succeeded += 1,
            PodPhase::Failed => r.failed += 1,
        }
    }
    run.st.replica_statuses = out;
}

/// Drops policy timers of pods this reconcile made stale, so the next
/// reconcile on the same observations finds nothing to change.
fn prune_timers(run: &mut Run<'_>, observed: &Observed) {
    let exp = run.expansion();
    let slots: BTreeSet<&str> = exp.pods.iter().map(|p| p.slot.as_str()).collect();
    let stale: BTreeSet<&str> =
        observed.pods.iter().filter(|p| is_stale(&run.st, &slots, p)).map(|p| p.name.as_str()).collect();
    run.st.timers.retain(|key, _| key.rsplit_once('/').is_none_or(|(_, pod)| !stale.contains(pod)));
}

/// Writes `rings-config-<job>` for NPU jobs whenever `hccl.json` changes
/// (after every other decision, so one reconcile reaches a fixed point).
fn write_rank_table(run: &mut Run<'_>, observed: &Observed) {
    let job = effective_job(&run.state.job, &run.st);
    let exp = run.expansion();
    let slots: BTreeSet<&str> = exp.pods.iter().map(|p| p.slot.as_str()).collect();
    let current: Vec<&ObservedPod> = observed.pods.iter().filter(|p| !is_stale(&run.st, &slots, p)).collect();
    let npu = job.roles.iter().any(|r| {
        r.device
            .as_ref()
            .is_some_and(|d| matches!(classify(&d.resource), Some((Family::Ascend, ringleader_api::DeviceKind::Whole))))
    });
    if !npu || job.kind.independent_replicas() {
        return;
    }
    let placement = Placement {
        pods: current
            .iter()
            .filter(|p| p.phase.is_live())
            .filter_map(|p| Some((p.name.clone(), p.placement.clone()?)))
            .collect(),
    };
    let version = hccl::HcclVersion::for_job(&job);
    let content = hccl::render(hccl::table(&job, &exp.pods, &placement, version).as_ref());
    if run.st.rank_table.as_ref().is_some_and(|m| m.describes(&content)) {
        return;
    }
    let n = run.st.rank_table.as_ref().map_or(1, |m| m.version + 1);
    run.actions.push(Action::WriteConfigMap(Box::new(hccl::config_map(&job, &content, n))));
    run.st.rank_table = Some(RankTableMark::of(&content, n));
}
