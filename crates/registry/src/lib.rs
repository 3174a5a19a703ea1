//! The API's vocabulary, shared by the API server, its clients and
//! Kubernetes mode: every resource type with its paths, scope and names
//! ([`resources::RESOURCES`]), errors as Kubernetes `Status` objects
//! ([`status::ApiError`]), label and field selectors ([`selector`]), and the
//! core `v1 Node` projection of ringleader's Nodes ([`node_view`]). No I/O.

pub mod apply;
pub mod node_view;
pub mod resources;
pub mod scale;
pub mod selector;
pub mod status;

pub use resources::{resolve, ResourceType, RESOURCES};
pub use status::ApiError;
