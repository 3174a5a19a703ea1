//! The crate's router served on plain HTTP over loopback, over a temporary
//! store, with a short bookmark period; stopped when dropped. Transport (TLS)
//! is the concern of other tests; these test what the API answers.

#![allow(dead_code)]

use ringleader_server::{router, Metrics, ServerState, Token};
use ringleader_store::Store;
use std::time::Duration;

pub struct PlainServer {
    pub url: String,
    pub token: String,
    pub http: reqwest::Client,
    pub dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl PlainServer {
    pub async fn start() -> Result<PlainServer, Box<dyn std::error::Error + Send + Sync>> {
        let dir = tempfile::tempdir()?;
        let store = Store::open(&dir.path().join("store"))?;
        let token = Token::load_or_create(dir.path())?;
        let state =
            ServerState::new(store, token.clone(), Metrics::new()).with_bookmark_period(Duration::from_millis(300));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let closer = state.clone();
        tokio::spawn(async move {
            axum::serve(listener, router(state))
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                    closer.close_streams();
                })
                .await
        });
        Ok(PlainServer { url, token: token.as_str().to_string(), http: reqwest::Client::new(), dir, _stop: stop })
    }

    /// A kubeconfig file naming this server and its token.
    pub fn write_kubeconfig(&self) -> std::io::Result<std::path::PathBuf> {
        let path = self.dir.path().join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: ringleader\n  cluster:\n    server: {}\n\
             users:\n- name: admin\n  user:\n    token: {}\ncontexts:\n- name: ringleader\n  context:\n    \
             cluster: ringleader\n    user: admin\n    namespace: default\ncurrent-context: ringleader\n",
            self.url, self.token
        );
        std::fs::write(&path, text)?;
        Ok(path)
    }
}
