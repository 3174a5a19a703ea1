//! What every request handler shares ([`ServerState`]): the store and the
//! blocking pool its calls run on, the authenticator, the metrics, the
//! components' health, the connection limits, and the flag that ends
//! long-running streams at shutdown.

use crate::components::Health;
use crate::conn_limits;
use ringleader_client::Token;
use ringleader_observability::Metrics;
use ringleader_registry::status::ApiError;
use ringleader_store::{Store, StoreError};
use std::sync::Arc;
use std::time::Duration;

/// Service cluster IPs this server allocated whose Service may not be stored
/// yet (two creates in flight must not get the same one), by the Service they
/// went to, so that one re-created under its name may ask for its old one
/// (see `crate::admission::services`).
pub(crate) type Reserved = std::collections::BTreeMap<std::net::Ipv4Addr, (String, std::time::Instant)>;

/// How often a watch that allows bookmarks gets one (kube-apiserver: about a minute).
pub const DEFAULT_BOOKMARK_PERIOD: Duration = Duration::from_secs(60);

/// What every request handler shares: the store, the token and the metrics.
#[derive(Clone)]
pub struct ServerState {
    store: Store,
    /// Maps bearer tokens to identities (the admin token and `tokens.yaml`).
    authn: ringleader_auth::identity::Authenticator,
    pub(crate) metrics: Metrics,
    // Watch and log-follow streams never end on their own; graceful shutdown
    // would wait on them forever, so they also watch this flag.
    pub(crate) closing: tokio::sync::watch::Receiver<bool>,
    close: Arc<tokio::sync::watch::Sender<bool>>,
    /// How often watches that allow bookmarks get one.
    bookmark_period: std::time::Duration,
    /// The data dir the agent keeps pod sandboxes (and logs) in.
    data_dir: Option<Arc<std::path::PathBuf>>,
    /// Components `/livez` and `/readyz` report on.
    health: Health,
    /// What the server presents to agents when it proxies a pod's log.
    proxy_token: Token,
    /// Time to send a request, and open connections allowed.
    conn_limits: conn_limits::ConnLimits,
    /// The CRI runtime of the embedded agent, which `exec`, `attach` and
    /// `portforward` of its pods stream from.
    cri_endpoint: Option<Arc<String>>,
    /// Service cluster IPs handed out and not yet seen stored (see
    /// [`crate::admission::services`]).
    pub(crate) service_ips: Arc<std::sync::Mutex<Reserved>>,
    /// Signs and checks ServiceAccount tokens (`crate::sa_tokens`).
    sa_signer: Option<Arc<ringleader_auth::sa_token::Signer>>,
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
            bookmark_period: DEFAULT_BOOKMARK_PERIOD,
            conn_limits: conn_limits::ConnLimits::default(),
            data_dir: None,
            health: Health::default(),
            cri_endpoint: None,
            service_ips: Arc::default(),
            // A key in memory until `with_service_account_signer` gives the
            // data directory's: tokens then die with the server.
            sa_signer: ringleader_auth::sa_token::Signer::generate().ok().map(Arc::new),
        }
    }

    /// Streams `exec`, `attach` and `portforward` of pods from the CRI
    /// runtime at `endpoint` (the embedded agent's).
    pub fn with_cri_endpoint(mut self, endpoint: impl Into<String>) -> ServerState {
        self.cri_endpoint = Some(Arc::new(endpoint.into()));
        self
    }

    /// Signs ServiceAccount tokens with `signer` (the data directory's key,
    /// [`ringleader_auth::sa_token::Signer::load_or_create`]).
    pub fn with_service_account_signer(mut self, signer: Arc<ringleader_auth::sa_token::Signer>) -> ServerState {
        self.sa_signer = Some(signer);
        self
    }

    /// The key ServiceAccount tokens are signed with (tests mint tokens
    /// at chosen times with it).
    pub fn sa_signer(&self) -> Option<&ringleader_auth::sa_token::Signer> {
        self.sa_signer.as_deref()
    }

    pub(crate) fn cri_endpoint(&self) -> Option<&str> {
        self.cri_endpoint.as_deref().map(String::as_str)
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
    pub fn with_health(mut self, health: Health) -> ServerState {
        self.health = health;
        self
    }

    pub(crate) fn health(&self) -> &Health {
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
