//! [`Run`]: what one reconcile accumulates — the status it is writing, the
//! actions, the earliest requeue — and the moves every step makes with it.

use super::types::*;
use crate::elastic::Scale;
use crate::expand::Expansion;
use std::collections::{BTreeMap, BTreeSet};

/// What an expansion depends on besides the job: the incarnation.
pub(super) type ExpansionKey = (Option<Scale>, BTreeMap<String, u32>, u32);

/// Accumulates the outcome of one reconcile.
pub(super) struct Run<'a> {
    pub(super) state: &'a JobState,
    pub(super) st: JobStatus,
    pub(super) actions: Vec<Action>,
    pub(super) requeue: Option<u64>,
    pub(super) now: u64,
    pub(super) deleted: BTreeSet<String>,
    /// The last expansion and the incarnation it was made for: the steps of
    /// one reconcile ask for it several times, and for a job of thousands of
    /// pods building it is most of a reconcile's cost.
    pub(super) expanded: std::cell::RefCell<Option<(ExpansionKey, std::rc::Rc<Expansion>)>>,
}

impl Run<'_> {
    /// The expansion of the current incarnation (`self.st`), built once.
    pub(super) fn expansion(&self) -> std::rc::Rc<Expansion> {
        let key = (self.st.scale, self.st.generations.clone(), self.st.version);
        if let Some((k, exp)) = self.expanded.borrow().as_ref() {
            if *k == key {
                return exp.clone();
            }
        }
        let exp = std::rc::Rc::new(expansion(&self.state.job, &self.state.extras, &self.st));
        *self.expanded.borrow_mut() = Some((key, exp.clone()));
        exp
    }

    pub(super) fn requeue_at(&mut self, at: u64) {
        let after = at.saturating_sub(self.now).max(1);
        self.requeue = Some(self.requeue.map_or(after, |r| r.min(after)));
    }

    pub(super) fn delete(&mut self, pod: &ObservedPod, mode: DeleteMode, reason: &str) {
        // No agent will ever finish a lost pod's graceful delete.
        let mode = if pod.node_lost { DeleteMode::Force } else { mode };
        let already = pod.deleting && mode == DeleteMode::Graceful;
        if already || !self.deleted.insert(pod.name.clone()) {
            return;
        }
        self.actions.push(Action::DeletePod { name: pod.name.clone(), mode, reason: reason.to_string() });
    }

    pub(super) fn transition(&mut self, phase: Phase, reason: &str, message: &str) {
        if self.st.phase == phase && self.st.reason == reason {
            return;
        }
        self.st.phase = phase;
        self.st.reason = reason.to_string();
        self.st.message = message.to_string();
        self.st.last_transition = self.now;
        let cond = match phase {
            Phase::Pending => Some("Created"),
            Phase::Running => Some("Running"),
            Phase::Restarting => Some("Restarting"),
            Phase::Completed => Some("Succeeded"),
            Phase::Failed | Phase::Aborted | Phase::Terminated => Some("Failed"),
            _ => None,
        };
        if phase.is_finished() {
            self.st.completion_time = Some(self.now);
        }
        let Some(kind) = cond else { return };
        for c in &mut self.st.conditions {
            let exclusive = matches!((kind, c.kind.as_str()), ("Running", "Restarting") | ("Restarting", "Running"))
                || (matches!(kind, "Succeeded" | "Failed") && c.kind == "Running");
            if exclusive && c.status {
                c.status = false;
                c.last_transition = self.now;
            }
        }
        let now = self.now;
        match self.st.conditions.iter_mut().find(|c| c.kind == kind) {
            Some(c) => {
                if !(kind == "Created" && c.status) {
                    *c = Condition {
                        kind: kind.to_string(),
                        status: true,
                        reason: reason.to_string(),
                        message: message.to_string(),
                        last_transition: now,
                    };
                }
            }
            None => self.st.conditions.push(Condition {
                kind: kind.to_string(),
                status: true,
                reason: reason.to_string(),
                message: message.to_string(),
                last_transition: now,
            }),
        }
    }

    pub(super) fn retry_allowed(&self) -> bool {
        self.state.job.fault.backoff_limit.is_none_or(|limit| self.st.retries < limit)
    }
}
