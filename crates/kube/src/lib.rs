//! Kubernetes mode: ringleader's scheduler and job controllers run against a
//! real kube-apiserver (and its etcd) instead of the embedded store. This
//! crate owns what that mode needs beyond the API of Kubernetes itself;
//! electing one active manager among replicas through a
//! `coordination.k8s.io/v1` Lease ([`lease`]); kube-apiserver behind the
//! calls the manager and the agent make on the embedded store
//! ([`cluster::KubeCluster`]), with ringleader's objects translated to what
//! Kubernetes accepts ([`translate`]) for the kinds it follows ([`kinds`]);
//! a client and the job CRDs before anything runs ([`setup`]).

pub mod cluster;
pub mod kinds;
pub mod lease;
pub mod setup;
pub mod translate;

pub use cluster::KubeCluster;
/// The kube-rs this crate is built on, for callers that hold its client.
pub use kube;

pub use lease::{decide, Decision, LeaderElector, LeaseConfig, LeaseError, LeaseState};
