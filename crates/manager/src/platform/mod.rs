//! The platform controller (seeds 003 and 004): Workspaces, ResourceGroups,
//! Queue quotas, Runs of TrainingJobs, StorageMounts and ScriptRuns of
//! `platform.ringleader.io/v1alpha1`, turned into the objects the job
//! controller and scheduler already act on (RoleBindings, node labels,
//! queue capabilities, framework jobs, batch Jobs).
//!
//! Each kind has a pure decision (`decide`) over JSON objects and `now`,
//! returning store writes; [`pass`] gathers their inputs from the cache and
//! writes the result. A decision writes only what differs from what is
//! stored, so the echo of its own write calls for nothing more.

pub mod api;
pub mod check;
pub mod framework;
pub mod node_job;
pub mod object;
pub mod quota;
pub mod reconcile;
pub mod resource_group;
pub mod run;
pub mod script;
pub mod storage;
pub mod workspace;

pub use api::{API, GROUP_LABEL, NODE_API, QUEUE_API, RBAC_API, RUN_LABEL, SYSTEM_NAMESPACE, TRAINING_JOB_LABEL};
pub use reconcile::{owner_uids, pass};
