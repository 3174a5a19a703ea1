//! The families the controller manager produces: scheduling attempts and
//! latency, preemption, job start latency and, where replicas elect a
//! leader, the election's state. `ringleader up` registers them beside the
//! API server's families and a standalone `ringleader manager` on their own,
//! from this one definition, so both expose the same names, help and buckets.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// Upper bounds (seconds) of the scheduling-latency histogram buckets.
pub const LATENCY_BUCKETS: &[f64] =
    &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];
/// Upper bounds (seconds) of a job's submission-to-running time.
const JOB_START_BUCKETS: &[f64] = &[0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0];
/// kube-scheduler's profile label: ringleader has one scheduler profile.
const PROFILE: &str = "ringleader";

type Labels1 = [(&'static str, String); 1];
type Labels2 = [(&'static str, String); 2];
type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS.iter().copied())
}

/// Handles on the registered families.
pub(super) struct ManagerFamilies {
    attempts: Family<Labels2, Counter>,
    pod_latency: Histogram,
    attempt_duration: HistogramFamily<Labels2>,
    victims: Histogram,
    preemption_attempts: Counter,
    pub(super) job_start: Histogram,
    /// Only where replicas elect a leader (client-go registers it there).
    leader: Option<Family<Labels1, Gauge>>,
}

impl ManagerFamilies {
    /// Registers the families; `leader_election` adds client-go's
    /// `leader_election_master_status`.
    pub(super) fn register(registry: &mut Registry, leader_election: bool) -> ManagerFamilies {
        let attempts = Family::<Labels2, Counter>::default();
        registry.register(
            "scheduler_schedule_attempts",
            "Pods the scheduler tried to place, by result (scheduled, unschedulable) and profile",
            attempts.clone(),
        );
        let pod_latency = latency_histogram();
        registry.register(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "Seconds from a pod's creation to its binding to a node, over every attempt",
            pod_latency.clone(),
        );
        let attempt_duration: HistogramFamily<Labels2> = Family::new_with_constructor(latency_histogram);
        registry.register(
            "scheduler_scheduling_attempt_duration_seconds",
            "Seconds one scheduling session took (every waiting gang at once), by result and profile",
            attempt_duration.clone(),
        );
        let victims = Histogram::new(exponential_buckets(1.0, 2.0, 10));
        registry.register(
            "scheduler_preemption_victims",
            "Pods evicted (preempted or reclaimed) per scheduling session that evicted any",
            victims.clone(),
        );
        let preemption_attempts = Counter::default();
        registry.register(
            "scheduler_preemption_attempts",
            "Scheduling sessions that evicted pods",
            preemption_attempts.clone(),
        );
        let job_start = Histogram::new(JOB_START_BUCKETS.iter().copied());
        registry.register(
            "ringleader_job_start_duration_seconds",
            "Seconds from a job's submission to its first run (the job controller's start time), once per job",
            job_start.clone(),
        );
        let leader = leader_election.then(|| {
            let leader = Family::<Labels1, Gauge>::default();
            registry.register(
                "leader_election_master_status",
                "1 while this replica leads the Lease named by `name`, 0 while it stands by",
                leader.clone(),
            );
            leader
        });
        ManagerFamilies { attempts, pod_latency, attempt_duration, victims, preemption_attempts, job_start, leader }
    }

    pub(super) fn observe_scheduling_latency(&self, secs: f64) {
        if secs.is_finite() && secs >= 0.0 {
            self.pod_latency.observe(secs);
        }
    }

    pub(super) fn observe_schedule(&self, bound: usize, unschedulable: usize, evicted: usize, secs: f64) {
        let labels = |result: &str| [("result", result.to_string()), ("profile", PROFILE.to_string())];
        if bound > 0 {
            self.attempts.get_or_create(&labels("scheduled")).inc_by(bound as u64);
        }
        if unschedulable > 0 {
            self.attempts.get_or_create(&labels("unschedulable")).inc_by(unschedulable as u64);
        }
        if secs.is_finite() && secs >= 0.0 {
            let result = if bound > 0 { "scheduled" } else { "unschedulable" };
            self.attempt_duration.get_or_create(&labels(result)).observe(secs);
        }
        if evicted > 0 {
            self.preemption_attempts.inc();
            self.victims.observe(evicted as f64);
        }
    }

    /// Sets the election state of Lease `name`; a no-op without election.
    pub(super) fn set_leader(&self, name: &str, leading: bool) {
        if let Some(family) = &self.leader {
            family.get_or_create(&[("name", name.to_string())]).set(i64::from(leading));
        }
    }
}
