//! What ringleader knows about itself and the cluster over time, for the
//! manager, the agents and the API server alike: the Prometheus registry
//! with every family they export ([`Metrics`]: API requests, the manager's
//! passes, the cluster aggregate of nodes, pods, jobs and queues, process
//! figures), the in-memory history of usage series behind `ringleader top`
//! and the console's charts ([`history`]), and the figures of the resource
//! metrics API ([`resource_metrics`]). Serving them over HTTP is the API
//! server's (and the components' `/metrics` endpoints').

pub mod history;
pub mod metrics;
pub mod resource_metrics;

pub use metrics::Metrics;
