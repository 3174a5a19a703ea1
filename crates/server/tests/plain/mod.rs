//! The crate's router served over loopback, over a temporary store, with a
//! short bookmark period; stopped when dropped. [`PlainServer::start`] serves
//! plain HTTP for tests of what the API answers; [`PlainServer::start_tls`]
//! serves HTTPS as `up` does (a CA and server certificate in the temporary
//! directory) for stock clients, which want TLS.

#![allow(dead_code)]

use ringleader_client::kubeconfig::Kubeconfig;
use ringleader_client::{TlsFiles, Token};
use ringleader_observability::Metrics;
use ringleader_server::{serve, serve_tls, ServerState};
use ringleader_store::Store;
use std::time::Duration;

#[path = "../common/namespaces.rs"]
mod namespaces;

pub struct PlainServer {
    pub url: String,
    pub token: String,
    pub http: reqwest::Client,
    pub dir: tempfile::TempDir,
    /// The CA clients trust, when served over TLS.
    pub ca_pem: Option<String>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl PlainServer {
    pub async fn start() -> Result<PlainServer, Box<dyn std::error::Error + Send + Sync>> {
        PlainServer::launch(false).await
    }

    /// The same server over HTTPS, with a certificate for 127.0.0.1.
    pub async fn start_tls() -> Result<PlainServer, Box<dyn std::error::Error + Send + Sync>> {
        PlainServer::launch(true).await
    }

    async fn launch(tls: bool) -> Result<PlainServer, Box<dyn std::error::Error + Send + Sync>> {
        let dir = tempfile::tempdir()?;
        let store = Store::open(&dir.path().join("store"))?;
        namespaces::create(&store)?;
        let token = Token::load_or_create(dir.path())?;
        let state = ServerState::new(store, token.clone(), Metrics::new())
            .with_bookmark_period(Duration::from_millis(300))
            .with_token_registry(ringleader_auth::identity::tokens_path(dir.path()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let stopped = async move {
            let _ = stopped.await;
        };
        let token = token.as_str().to_string();
        if !tls {
            tokio::spawn(serve(listener, state, stopped));
            let url = format!("http://{addr}");
            return Ok(PlainServer { url, token, http: reqwest::Client::new(), dir, ca_pem: None, _stop: stop });
        }
        let files = TlsFiles::load_or_create(dir.path(), &["127.0.0.1".to_string()])?;
        tokio::spawn(serve_tls(listener, state, std::sync::Arc::new(files.server_config()?), stopped));
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(files.ca_pem.as_bytes())?)
            .build()?;
        let url = format!("https://{addr}");
        Ok(PlainServer { url, token, http, dir, ca_pem: Some(files.ca_pem), _stop: stop })
    }

    /// A token for `user` in `groups`, made in this server's registry.
    pub fn token_for(&self, user: &str, groups: &[&str]) -> Result<String, String> {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        ringleader_auth::identity::issue(self.dir.path(), user, &groups, "2025-01-01T00:00:00Z")
    }

    /// A kubeconfig file naming this server, its CA (over TLS) and its token.
    pub fn write_kubeconfig(&self) -> Result<std::path::PathBuf, Box<dyn std::error::Error + Send + Sync>> {
        let path = self.dir.path().join("kubeconfig");
        Kubeconfig::single(&self.url, self.ca_pem.as_deref(), &self.token).write(&path)?;
        Ok(path)
    }
}
