//! Kubernetes mode: ringleader's scheduler and job controllers run against a
//! real kube-apiserver (and its etcd) instead of the embedded store. This
//! crate owns what that mode needs beyond the API of Kubernetes itself;
//! today: electing one active manager among replicas through a
//! `coordination.k8s.io/v1` Lease ([`lease`]).

pub mod lease;

pub use lease::{decide, Decision, LeaderElector, LeaseConfig, LeaseError, LeaseState};
