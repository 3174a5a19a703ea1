//! The manager's settings, with the observers it tells of what it does
//! (latencies, scheduling sessions, objects seen, liveness).

use crate::schedule_pass::Pass;
use ringleader_controller::lifecycle::ControllerConfig;
use ringleader_scheduler::conf::SchedulerConf;
use std::sync::Arc;
use std::time::Duration;

/// Receives each pod's creation-to-binding latency (seconds).
pub type LatencyObserver = Arc<dyn Fn(f64) + Send + Sync>;

/// Receives each scheduling session: pods bound, pods left unschedulable,
/// pods evicted, and the session's wall time (the API server's metrics).
pub type ScheduleObserver = Arc<dyn Fn(&Pass, Duration) + Send + Sync>;

/// Called after every wake-up of the loop (a pass or not): the liveness
/// signal health checks read (see `ringleader_server::health`).
pub type Heartbeat = Arc<dyn Fn() + Send + Sync>;

/// What the manager's cache takes in, handed on as it arrives.
#[derive(Debug, Clone, Copy)]
pub enum Observed<'a> {
    /// The objects of a list: at start, or when a watch could not resume
    /// (everything seen before is to be forgotten).
    Listed(&'a [ringleader_store::Stored]),
    /// One change of the watch that follows the list.
    Changed(&'a ringleader_store::Event),
}

/// Sees what the cache sees, so figures kept from objects (the metrics of a
/// standalone manager) need no list or watch of their own on the API server.
/// Called on the loop's task: it must be quick and never block.
pub type ObjectObserver = Arc<dyn Fn(Observed<'_>) + Send + Sync>;

/// Settings of the manager.
#[derive(Clone)]
pub struct ManagerConfig {
    /// A node whose agent has not heartbeaten for this long is NotReady.
    pub heartbeat_timeout: Duration,
    /// Longest wait between passes when nothing happens (timers, retries).
    pub resync: Duration,
    /// Scheduler actions and plugins.
    pub scheduler: SchedulerConf,
    /// Job controller settings (fault grace period, env options).
    pub controller: ControllerConfig,
    /// Called with scheduling latencies (the API server's histogram).
    pub observe_latency: Option<LatencyObserver>,
    /// Called after each scheduling session that had pods to place.
    pub observe_schedule: Option<ScheduleObserver>,
    /// Events last seen longer ago than this are deleted (Kubernetes: 1 h).
    pub event_ttl: Duration,
    /// Pods on a node NotReady this long are marked Failed (`NodeLost`)
    /// and their jobs' policies applied (Kubernetes' not-ready toleration: 300 s).
    pub node_lost_toleration: Duration,
    /// Told the loop is alive, after every wake-up.
    pub heartbeat: Option<Heartbeat>,
    /// Told of every list and watch event the cache applies.
    pub observe_objects: Option<ObjectObserver>,
    /// Seconds a hot reset of a faulty chip's ring takes; `None`: no hot
    /// reset (see [`crate::hot_reset`]).
    pub hot_reset_secs: Option<u64>,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        let mut controller = ControllerConfig::default();
        // Virtual nodes have no cluster DNS: peers are reached by address.
        controller.env.use_addresses = true;
        ManagerConfig {
            heartbeat_timeout: Duration::from_secs(40),
            resync: Duration::from_millis(500),
            scheduler: SchedulerConf::default().without("drf"),
            controller,
            observe_latency: None,
            observe_schedule: None,
            event_ttl: Duration::from_secs(3600),
            node_lost_toleration: Duration::from_secs(300),
            heartbeat: None,
            observe_objects: None,
            hot_reset_secs: None,
        }
    }
}
