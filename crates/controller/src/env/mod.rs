//! Env vars and files the controller injects into pods, per kind and
//! framework, split into what expansion knows ([`static_env`]) and what needs
//! the scheduler's [`Placement`] ([`placed_env`]). [`pod_env`] merges both
//! (a placed value replaces the static one of the same name, e.g. a
//! `MASTER_ADDR` DNS name becomes an address).
//!
//! Injected vars are appended after the user's own env in every container,
//! except the NCCL auto-settings, which yield to a user's value.

pub mod ascend;
mod context;
pub mod devices;
pub mod lint;
pub mod mpi;
pub mod nccl;
mod pods;
pub mod pytorch;
pub mod tf;
pub mod volcano;

pub(crate) use context::Ctx;
pub use context::{
    per_job, EnvOptions, EnvVar, NcclNetwork, PodEnv, PyTorchFlavor, SshKeys, ENV_VARIANT_ANNOTATION,
    NCCL_AUTO_ANNOTATION,
};
pub use pods::{inject, placed_env, pod_env, static_env};
