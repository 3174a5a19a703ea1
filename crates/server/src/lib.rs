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

mod admission;
pub mod apply;
pub mod audit;
pub mod auth;
pub mod authz;
pub mod conn_limits;
mod console;
pub mod crds;
mod delete_guard;
mod discovery;
mod duplicates;
mod fields;
pub mod health;
pub mod history;
mod impersonate;
pub mod kubelet;
mod logs;
pub mod metrics_endpoint;
mod metrics_http;
pub mod node_view;
mod openapi;
mod paging;
pub mod patch;
mod protect;
pub mod resource_metrics;
mod reviews;
mod routes;
mod runtime_gaps;
pub mod table;
mod watch;
mod yaml_budget;

pub use apply::{ApplyAction, ApplyResult};
pub use health::{ComponentHealth, Health};
pub use ringleader_registry::resources::{find, resolve, ResourceType, RESOURCES};
pub use ringleader_registry::status::ApiError;
pub use routes::router;

use ringleader_client::Token;
use ringleader_observability::Metrics;
use ringleader_store::{Store, StoreError};
use std::future::Future;
use std::sync::Arc;

/// What every request handler shares: the store, the token and the metrics.
#[derive(Clone)]
pub struct ServerState {
    store: Store,
    /// Maps bearer tokens to identities (the admin token and `tokens.yaml`).
    authn: ringleader_auth::identity::Authenticator,
    metrics: Metrics,
    // Watch and log-follow streams never end on their own; graceful shutdown
    // would wait on them forever, so they also watch this flag.
    closing: tokio::sync::watch::Receiver<bool>,
    close: Arc<tokio::sync::watch::Sender<bool>>,
    /// How often watches that allow bookmarks get one.
    bookmark_period: std::time::Duration,
    /// The data dir the agent keeps pod sandboxes (and logs) in.
    data_dir: Option<Arc<std::path::PathBuf>>,
    /// Components `/livez` and `/readyz` report on.
    health: health::Health,
    /// What the server presents to agents when it proxies a pod's log.
    proxy_token: Token,
    /// Time to send a request, and open connections allowed.
    conn_limits: conn_limits::ConnLimits,
}

impl ServerState {
    /// State over an open store.
    pub fn new(store: Store, token: Token, metrics: Metrics) -> ServerState {
        let (close, closing) = tokio::sync::watch::channel(false);
        let proxy_token = Token::random();
        // The store gauges of /metrics follow the store from here on.
        metrics.follow(&store);
        ServerState {
            store,
            authn: ringleader_auth::identity::Authenticator::new(token).with_proxy_token(proxy_token.clone()),
            proxy_token,
            metrics,
            closing,
            close: Arc::new(close),
            bookmark_period: watch::DEFAULT_BOOKMARK_PERIOD,
            conn_limits: conn_limits::ConnLimits::default(),
            data_dir: None,
            health: health::Health::default(),
        }
    }

    /// Sets the data dir whose `nodes/<node>/pods/<ns>_<pod>/log` files pod
    /// logs are read from (without one, a pod's `ringleader.io/log-path`
    /// is read only when it has that shape), and whose `tokens.yaml` holds
    /// the tokens accepted besides the admin's.
    pub fn with_data_dir(mut self, dir: impl Into<std::path::PathBuf>) -> ServerState {
        let dir = dir.into();
        self.authn = self.authn.with_registry(ringleader_auth::identity::tokens_path(&dir));
        self.data_dir = Some(Arc::new(dir));
        self
    }

    /// Accepts the tokens of the registry at `path` (see [`identity`]).
    pub fn with_token_registry(mut self, path: impl Into<std::path::PathBuf>) -> ServerState {
        self.authn = self.authn.with_registry(path.into());
        self
    }

    pub(crate) fn authn(&self) -> &ringleader_auth::identity::Authenticator {
        &self.authn
    }

    pub(crate) fn proxy_token(&self) -> &Token {
        &self.proxy_token
    }

    pub(crate) fn data_dir(&self) -> Option<&std::path::Path> {
        self.data_dir.as_deref().map(std::path::PathBuf::as_path)
    }

    /// Sets how often watches with `allowWatchBookmarks=true` get a
    /// BOOKMARK (default one minute, as kube-apiserver; tests use less).
    pub fn with_bookmark_period(mut self, period: std::time::Duration) -> ServerState {
        self.bookmark_period = period;
        self
    }

    /// Sets the request read timeouts and connection caps.
    pub fn with_conn_limits(mut self, limits: conn_limits::ConnLimits) -> ServerState {
        self.conn_limits = limits;
        self
    }

    pub(crate) fn conn_limits(&self) -> conn_limits::ConnLimits {
        self.conn_limits
    }

    pub(crate) fn bookmark_period(&self) -> std::time::Duration {
        self.bookmark_period
    }

    /// Sets the registry of components `/livez` and `/readyz` report on
    /// (without one: the server and its store only).
    pub fn with_health(mut self, health: health::Health) -> ServerState {
        self.health = health;
        self
    }

    pub(crate) fn health(&self) -> &health::Health {
        &self.health
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The metrics handle.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Ends every open watch and log stream (done by [`serve`] and
    /// [`serve_tls`] at shutdown).
    pub fn close_streams(&self) {
        let _ = self.close.send(true);
    }

    /// Runs a store call off the async workers: SQLite writes wait for fsync.
    pub(crate) async fn blocking<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    {
        let store = self.store.clone();
        match tokio::task::spawn_blocking(move || f(&store)).await {
            Ok(result) => result.map_err(ApiError::from),
            Err(e) => Err(ApiError::internal(format!("store call failed: {e}"))),
        }
    }
}

/// What the store must hold before the first request: the built-in RBAC
/// roles and bindings (absent ones created, edited ones left alone). A
/// server that cannot write them does not start: without them every
/// identity but the admin would be refused everything.
async fn prepare(state: &ServerState) -> std::io::Result<()> {
    let store = state.store().clone();
    let created = tokio::task::spawn_blocking(move || ringleader_auth::rbac::ensure_builtins(&store))
        .await
        .map_err(std::io::Error::other)?
        .map_err(|e| std::io::Error::other(format!("cannot create the built-in RBAC roles: {e}")))?;
    if created > 0 {
        tracing::info!(created, "built-in RBAC roles and bindings created");
    }
    Ok(())
}

/// Serves the API on `listener` until `shutdown` completes; open watch and
/// log streams are then ended and in-flight requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: ServerState,
    shutdown: impl Future + Send + 'static,
) -> std::io::Result<()> {
    prepare(&state).await?;
    let closer = state.clone();
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async move {
            shutdown.await;
            closer.close_streams();
        })
        .await
}

/// A TLS server on `listener` bounded as `limits` say: connections capped
/// per client address and in all before any handshake (TCP_NODELAY on each:
/// without it a response's last TLS record waits for the client's delayed
/// ACK — about 40 ms a page; kubectl paging 50,000 pods took 19 s instead of
/// under 2), the handshake and each request head timed. A connection that
/// never sends a request is closed however slowly it trickles bytes.
pub(crate) fn bounded_tls_server(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    limits: conn_limits::ConnLimits,
    handle: axum_server::Handle<std::net::SocketAddr>,
) -> axum_server::Server<std::net::SocketAddr, axum_server::tls_rustls::RustlsAcceptor<conn_limits::CappedAcceptor>> {
    let acceptor =
        axum_server::tls_rustls::RustlsAcceptor::new(axum_server::tls_rustls::RustlsConfig::from_config(tls))
            .handshake_timeout(limits.header_timeout)
            .acceptor(conn_limits::CappedAcceptor::new(conn_limits::Counter::new(limits)));
    let mut server = axum_server::Server::from_listener(listener)
        .acceptor(acceptor)
        .handle(handle)
        .first_request_timeout(limits.header_timeout);
    server.http_builder().http1().header_read_timeout(limits.header_timeout);
    server
}

/// [`serve`] over TLS: the same routes and the same graceful shutdown, with
/// each connection's handshake done in its own task (one slow or silent
/// client cannot hold up accepting others).
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    state: ServerState,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future + Send + 'static,
) -> std::io::Result<()> {
    prepare(&state).await?;
    let handle = axum_server::Handle::<std::net::SocketAddr>::new();
    let (closer, stopper) = (state.clone(), handle.clone());
    let signal = tokio::spawn(async move {
        shutdown.await;
        // Streams first: graceful shutdown waits for every open response.
        closer.close_streams();
        stopper.graceful_shutdown(None);
    });
    let server = bounded_tls_server(listener, tls, state.conn_limits(), handle);
    let served = server.serve(router(state).into_make_service()).await;
    signal.abort();
    served
}
