//! A server on 127.0.0.1:0 over a temporary store, shut down when dropped.

#![allow(dead_code)]

pub mod namespaces;

use ringleader_client::{Client, Token};
use ringleader_observability::Metrics;
use ringleader_server::{serve, ServerState};
use ringleader_store::{Options, Store};
use serde_json::{json, Value};
use tempfile::TempDir;

pub type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

pub struct TestServer {
    pub url: String,
    pub token: String,
    pub client: Client,
    pub state: ServerState,
    pub dir: TempDir,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    pub handle: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    pub async fn start() -> Result<TestServer, Box<dyn std::error::Error + Send + Sync>> {
        TestServer::start_with(Options::default()).await
    }

    pub async fn start_with(options: Options) -> Result<TestServer, Box<dyn std::error::Error + Send + Sync>> {
        let dir = tempfile::tempdir()?;
        let store = Store::open_with(&dir.path().join("store"), options)?;
        namespaces::create(&store)?;
        let token = Token::load_or_create(dir.path())?;
        let state = ServerState::new(store, token.clone(), Metrics::new())
            .with_token_registry(ringleader_auth::identity::tokens_path(dir.path()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(serve(listener, state.clone(), async move {
            let _ = rx.await;
        }));
        let client = Client::from_data_dir(&url, dir.path())?;
        Ok(TestServer {
            url,
            token: token.as_str().to_string(),
            client,
            state,
            dir,
            shutdown: Some(tx),
            handle: Some(handle),
        })
    }

    /// Asks the server to stop.
    pub fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// A client authenticating as `user` in `groups`, with a token made for it.
    pub fn client_as(&self, user: &str, groups: &[&str]) -> Result<Client, String> {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        let token = ringleader_auth::identity::issue(self.dir.path(), user, &groups, "2025-01-01T00:00:00Z")?;
        Ok(Client::new(&self.url, token))
    }

    /// A client as the scheduler, the only identity that may bind pods.
    pub fn scheduler(&self) -> Result<Client, String> {
        self.client_as(ringleader_auth::identity::SCHEDULER_USER, &[])
    }

    /// A raw request with the token.
    pub fn raw(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        reqwest::Client::new().request(method, format!("{}{path}", self.url)).bearer_auth(&self.token)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub fn pod(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1"]}]},
        "status": {"phase": "Pending"},
    })
}

/// One answer to `method path` with `token` (a merge patch for PATCH): the
/// code and the JSON body (0 and the error when the request failed).
pub async fn call(
    s: &TestServer,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method.clone(), format!("{}{path}", s.url)).bearer_auth(token);
    if let Some(b) = body {
        let content_type =
            if method == reqwest::Method::PATCH { "application/merge-patch+json" } else { "application/json" };
        request = request.header("content-type", content_type).body(b.to_string());
    }
    match request.send().await {
        Ok(r) => {
            let code = r.status().as_u16();
            (code, r.json::<Value>().await.unwrap_or(Value::Null))
        }
        Err(e) => (0, json!({"error": e.to_string()})),
    }
}

/// The status and body of a GET by `client`, with `token` as bearer when
/// given, or the error that kept it from answering.
pub async fn get_as(client: &reqwest::Client, url: &str, token: Option<&str>) -> Result<(u16, String), reqwest::Error> {
    let mut request = client.get(url);
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    let response = request.send().await?;
    let code = response.status().as_u16();
    Ok((code, response.text().await?))
}
