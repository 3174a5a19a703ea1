//! The client side of ringleader's API, shared by the CLI, the standalone
//! agent and the tests: kubeconfig files ([`kubeconfig`]), the cluster CA and
//! certificates ([`tls`]), the data directory's bearer token ([`Token`]),
//! the typed and dynamic [`Client`] (list, watch, apply, logs, patch…), and
//! [`RemoteCluster`], the API server behind the calls a node agent makes on
//! the embedded store (`ringleader_store::Cluster`).

mod client;
pub mod kubeconfig;
pub mod remote;
mod requests;
pub mod tls;
mod token;

pub use client::{encode, Client, ClientError, ObjectList, WatchEvent};
pub use remote::RemoteCluster;
pub use requests::{list_version, ListOptions, LogOptions, TABLE_ACCEPT};
pub use tls::{TlsError, TlsFiles};
pub use token::{Token, TOKEN_FILE};
