//! The API server of ringleader and its client. It owns the HTTP face of the
//! store: Kubernetes-style paths for every resource type
//! ([`resources::RESOURCES`]), create/get/list/update/patch/delete/watch with
//! `Status` errors, validation of job kinds with the same rules as
//! `ringleader validate`, the all-or-nothing bulk apply behind `apply -f`,
//! `meta.k8s.io` Table answers with kubectl's columns ([`table`]), the
//! read-only core v1 Node view of ringleader.io Nodes ([`node_view`]),
//! pod logs with kubelet's options, bearer-token auth ([`Token`]), Prometheus metrics ([`Metrics`]),
//! and what stock kubectl reads first: `/version` and API discovery (legacy
//! and aggregated), OpenAPI v3 (per group-version) and v2 documents with
//! real schemas, and server-side field validation (`?fieldValidation=`).
//! [`Client`] is what the CLI talks to it with.
//!
//! The server holds no state of its own beyond the metrics: every answer is
//! read from the store, so it can restart at any time.

mod access_keys;
mod admission;
pub mod apply;
pub mod audit;
pub mod auth;
pub mod authz;
pub mod components;
pub mod conn_limits;
mod console;
pub mod crds;
mod decode;
mod discovery;
mod duplicates;
mod encode;
mod eviction;
mod generation;
pub mod health;
pub mod history;
mod impersonate;
pub mod kubelet;
mod logs;
mod managed_fields;
pub mod metrics_endpoint;
mod metrics_http;
pub mod node_view;
mod openapi;
mod paging;
pub mod patch;
mod pipeline;
mod replica_sets;
pub mod resource_metrics;
mod reviews;
mod runtime_gaps;
mod sa_tokens;
mod scale;
mod serve;
mod server_side_apply;
mod state;
mod storage;
mod streams;
pub mod table;
pub mod visibility;
mod watch;
mod yaml_budget;

pub use apply::{ApplyAction, ApplyResult};
pub use components::{ComponentHealth, Health};
pub use pipeline::router;
pub use ringleader_registry::resources::{find, resolve, ResourceType, RESOURCES};
pub use ringleader_registry::status::ApiError;
pub use serve::{serve, serve_tls};
pub use state::ServerState;
