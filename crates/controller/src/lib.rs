//! The job controller: expands a normalised job into its PodGroup and pods,
//! computes env vars and rank tables, and drives the job state machine,
//! restarts, fault rescheduling and elastic training as pure functions of
//! (job, pods, nodes, events, now). No I/O, no clock reads, no randomness:
//! the caller passes time in and carries out the returned actions.
//!
//! The walk of one job:
//!
//! 1. [`expand::expand`] — PodGroup and pods (names, labels, annotations);
//!    [`env::static_env`] — env that does not depend on placement.
//! 2. The scheduler places the pods; the caller describes that as a
//!    [`placement::Placement`].
//! 3. [`env::placed_env`] / [`env::pod_env`] — addresses, visible devices,
//!    hostfile, `TF_CONFIG`, with the rendezvous ports [`ports::assign`]
//!    chose free on each pod's address; [`ranktable::hccl`] — `hccl.json` and its
//!    `rings-config-<job>` ConfigMap; [`ranktable::mindie`] — the MindIE
//!    global rank table and its subscription hub.
//! 4. [`lifecycle::reconcile`] — from the observed pods and nodes, the
//!    actions that move the job on: create/delete pods, write status and
//!    ConfigMaps, requeue; restart, success and Volcano lifecycle policies,
//!    deadlines and TTL; [`fault`] rescheduling (grace/force, pod or job
//!    level, isolated devices, pods of nodes NotReady beyond the
//!    toleration given up as `NodeLost`); [`elastic`] shrink and grow;
//!    [`backoff`] delays restarts after failures (CrashLoopBackOff).
//! 5. [`hotreset`] — resetting faulty chips (whole HCCS rings) once idle.
//!
//! [`env::lint::env_warnings`] checks a job's env against the NCCL guidance
//! for `ringleader validate`.

#![warn(missing_docs)]

pub mod backoff;
pub mod elastic;
pub mod env;
pub mod expand;
pub mod extras;
pub mod fault;
pub mod hotreset;
pub mod lifecycle;
pub mod placement;
pub mod ports;
pub mod ranktable;
pub mod ssh;

pub use env::lint::{env_warnings, env_warnings_for_resource, EnvWarning};
pub use env::{EnvOptions, EnvVar, PodEnv};
pub use expand::{expand, ExpandOptions, Expansion, PodPlan};
pub use extras::JobExtras;
pub use lifecycle::{reconcile, Action, JobState, JobStatus, Observed, ObservedNode, ObservedPod};
pub use placement::{PlacedDevice, Placement, PodPlacement};
