//! The client the CLI (and tests) talk to the server with. Every failure the
//! server reports arrives as [`ClientError::Status`] carrying the server's
//! message and reason, so the CLI can print it as is.

use crate::token::Token;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use ringleader_registry::apply::ApplyResult;
use ringleader_registry::resources::ResourceType;
use serde_json::Value;
use std::path::Path;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with a `Status` failure.
    #[error("{message}")]
    Status {
        /// HTTP code.
        code: u16,
        /// `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `Expired` …
        reason: String,
        /// The server's message.
        message: String,
        /// The whole `Status` object (its `details.causes` name the fields).
        status: Value,
    },
    /// The server could not be reached or the connection broke.
    #[error("cannot reach the ringleader server at {url}: {source}")]
    Http {
        /// The URL asked for.
        url: String,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The server's answer was not what the API promises.
    #[error("unexpected answer from the server: {0}")]
    Decode(String),
    /// The token file could not be read.
    #[error("cannot read the API token {path}: {message} (is `ringleader up` running with this --data-dir?)")]
    Token {
        /// Token file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A kubeconfig or CA certificate could not be used.
    #[error("cannot use {path}: {message}")]
    Config {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
}

impl ClientError {
    /// The Status reason, when the server sent one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            ClientError::Status { reason, .. } => Some(reason),
            _ => None,
        }
    }

    /// The HTTP code, when the server answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            ClientError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }
}

pub(crate) type Result<T> = std::result::Result<T, ClientError>;

/// A list and the version it is consistent with (watch from it to follow on).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectList {
    /// The objects, ordered by key.
    pub items: Vec<Value>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: u64,
}

/// One event of a watch.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchEvent {
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub event_type: String,
    /// The object (its last state for `DELETED`).
    pub object: Value,
}

impl WatchEvent {
    /// The event's version (resume a watch from it).
    pub fn resource_version(&self) -> Option<u64> {
        self.object.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok())
    }
}

/// HTTP client of the API server.
#[derive(Clone)]
pub struct Client {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for Client {
    // The token stays out of debug output and logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("base", &self.base).finish_non_exhaustive()
    }
}

/// A reqwest client trusting `ca_pem` alone when given (the system's
/// roots otherwise), over rustls with ring.
fn http_client(ca_pem: Option<&[u8]>, insecure: bool) -> std::result::Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder().use_rustls_tls();
    if let Some(pem) = ca_pem {
        let certs = reqwest::Certificate::from_pem_bundle(pem).map_err(|e| format!("not a PEM certificate: {e}"))?;
        if certs.is_empty() {
            return Err("holds no PEM certificate".into());
        }
        builder = builder.tls_built_in_root_certs(false);
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    if insecure {
        builder = builder.danger_accept_invalid_certs(true);
    }
    builder.build().map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// Percent-encodes a query value.
pub fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Client {
    /// A client of the server at `base` (e.g. `http://127.0.0.1:6443`).
    pub fn new(base: impl Into<String>, token: impl Into<String>) -> Client {
        let base: String = base.into();
        Client { base: base.trim_end_matches('/').to_string(), token: token.into(), http: reqwest::Client::new() }
    }

    /// A client of an HTTPS server whose certificate is signed by the CA
    /// in `ca_pem`, trusting that CA only (not the system's roots: the
    /// bearer token goes to no server the CA did not vouch for).
    pub fn with_ca(base: impl Into<String>, token: impl Into<String>, ca_pem: &[u8]) -> Result<Client> {
        let http = http_client(Some(ca_pem), false)
            .map_err(|message| ClientError::Config { path: "the CA certificate".into(), message })?;
        let base: String = base.into();
        Ok(Client { base: base.trim_end_matches('/').to_string(), token: token.into(), http })
    }

    /// A client authenticating with the token of a data directory; for an
    /// `https` URL it trusts the data directory's `ca.crt`.
    pub fn from_data_dir(server_url: &str, data_dir: &Path) -> Result<Client> {
        let path = Token::path(data_dir);
        let err = |message: String| ClientError::Token { path: path.display().to_string(), message };
        let token = match Token::read(&path) {
            Ok(Some(token)) => token,
            Ok(None) => return Err(err("missing or empty".into())),
            Err(e) => return Err(err(e.to_string())),
        };
        if !server_url.starts_with("https://") {
            return Ok(Client::new(server_url, token.as_str()));
        }
        let ca = crate::tls::TlsFiles::ca_path(data_dir);
        let config = |message: String| ClientError::Config { path: ca.display().to_string(), message };
        let pem = std::fs::read(&ca)
            .map_err(|e| config(format!("{e} (is `ringleader up` serving HTTPS with this --data-dir?)")))?;
        let http = http_client(Some(&pem), false).map_err(config)?;
        Ok(Client { base: server_url.trim_end_matches('/').to_string(), token: token.as_str().to_string(), http })
    }

    /// A client for the current context of a kubeconfig: its server, the
    /// CA it embeds or names (else the system's roots) and its token.
    pub fn from_kubeconfig(path: &Path) -> Result<Client> {
        let config = |message: String| ClientError::Config { path: path.display().to_string(), message };
        let conn = crate::kubeconfig::load(path).map_err(|e| config(e.message))?;
        let http = http_client(conn.ca_pem.as_deref(), conn.insecure_skip_tls_verify).map_err(config)?;
        Ok(Client { base: conn.server, token: conn.token, http })
    }

    /// The underlying HTTP client, with this client's TLS trust but no
    /// token (for requests the typed calls do not cover).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The server's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub(crate) fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, self.url(path)).bearer_auth(&self.token)
    }

    pub(crate) async fn send(&self, builder: reqwest::RequestBuilder, url: &str) -> Result<reqwest::Response> {
        let response = builder.send().await.map_err(|source| ClientError::Http { url: url.to_string(), source })?;
        if response.status().is_success() {
            return Ok(response);
        }
        let code = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        Err(match serde_json::from_str::<Value>(&text) {
            Ok(status) if status.get("kind").and_then(Value::as_str) == Some("Status") => ClientError::Status {
                code,
                reason: status.get("reason").and_then(Value::as_str).unwrap_or_default().to_string(),
                message: status.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
                status,
            },
            _ => ClientError::Status {
                code,
                reason: String::new(),
                message: format!("HTTP {code}: {}", text.trim()),
                status: Value::Null,
            },
        })
    }

    pub(crate) async fn json(&self, builder: reqwest::RequestBuilder, url: &str) -> Result<Value> {
        let response = self.send(builder, url).await?;
        response.json().await.map_err(|e| ClientError::Decode(format!("{url}: {e}")))
    }

    /// One object.
    pub async fn get(&self, res: &ResourceType, ns: &str, name: &str) -> Result<Value> {
        let path = res.object_path(ns, name);
        self.json(self.request(reqwest::Method::GET, &path), &path).await
    }

    /// Objects of a type in one namespace (`None`: all namespaces), with an
    /// optional equality-based label selector.
    pub async fn list(&self, res: &ResourceType, ns: Option<&str>, label_selector: Option<&str>) -> Result<ObjectList> {
        let mut path = res.collection_path(ns);
        if let Some(sel) = label_selector.filter(|s| !s.is_empty()) {
            path = format!("{path}?labelSelector={}", encode(sel));
        }
        let mut list = self.json(self.request(reqwest::Method::GET, &path), &path).await?;
        let resource_version = list
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| ClientError::Decode(format!("{path}: list without metadata.resourceVersion")))?;
        let items = match list.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => items,
            _ => return Err(ClientError::Decode(format!("{path}: list without items"))),
        };
        Ok(ObjectList { items, resource_version })
    }

    /// Creates an object (in `ns`, or its own / `default` namespace when `ns` is empty).
    pub async fn create(&self, res: &ResourceType, ns: &str, object: &Value) -> Result<Value> {
        let path = res.collection_path(Some(ns).filter(|n| !n.is_empty()));
        self.json(self.request(reqwest::Method::POST, &path).json(object), &path).await
    }

    /// A ServiceAccount token: `request` (an `authentication.k8s.io/v1
    /// TokenRequest`) posted to the account's `token` subresource; the answer.
    pub async fn create_token(&self, ns: &str, account: &str, request: &Value) -> Result<Value> {
        let path = format!("/api/v1/namespaces/{}/serviceaccounts/{}/token", encode(ns), encode(account));
        self.json(self.request(reqwest::Method::POST, &path).json(request), &path).await
    }

    /// Replaces an object (409 `Conflict` when its resourceVersion is stale).
    pub async fn update(&self, res: &ResourceType, ns: &str, object: &Value) -> Result<Value> {
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let path = res.object_path(ns, name);
        self.json(self.request(reqwest::Method::PUT, &path).json(object), &path).await
    }

    /// Creates or updates one object by server-side apply as manager
    /// `ringleader`, taking over fields others set (what it applied before
    /// and omits now is removed).
    pub async fn apply(&self, res: &ResourceType, ns: &str, object: &Value) -> Result<Value> {
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let path = res.object_path(ns, name);
        let body = serde_json::to_string(object).map_err(|e| ClientError::Decode(e.to_string()))?;
        let req = self
            .request(reqwest::Method::PATCH, &format!("{path}?fieldManager=ringleader&force=true"))
            .header(reqwest::header::CONTENT_TYPE, "application/apply-patch+yaml")
            .body(body);
        self.json(req, &path).await
    }

    /// Validates and applies a multi-document YAML/JSON text, all or nothing.
    pub async fn apply_documents(&self, text: &str) -> Result<Vec<ApplyResult>> {
        self.apply_documents_from("-", text).await
    }

    /// As [`Client::apply_documents`], naming the source in error messages
    /// (`job.yaml[0] PyTorchJob/default/x: spec...`).
    pub async fn apply_documents_from(&self, source: &str, text: &str) -> Result<Vec<ApplyResult>> {
        self.apply_documents_with(source, None, text).await
    }

    /// As [`Client::apply_documents_from`], putting documents without a
    /// namespace into `namespace` (`apply -n`); a document naming another
    /// namespace is an error.
    pub async fn apply_documents_with(
        &self,
        source: &str,
        namespace: Option<&str>,
        text: &str,
    ) -> Result<Vec<ApplyResult>> {
        Ok(self.apply_documents_validated(source, namespace, text, None).await?.0)
    }

    /// As [`Client::apply_documents_with`], with the server's field
    /// validation (`Strict`, the bulk apply's default; `Warn`; `Ignore`);
    /// also the server's warnings (`Warning: 299` headers), to show as
    /// kubectl shows them.
    pub async fn apply_documents_validated(
        &self,
        source: &str,
        namespace: Option<&str>,
        text: &str,
        field_validation: Option<&str>,
    ) -> Result<(Vec<ApplyResult>, Vec<String>)> {
        let mut path = format!("/apis/ringleader.io/v1alpha1/apply?source={}", encode(source));
        if let Some(ns) = namespace.filter(|n| !n.is_empty()) {
            path = format!("{path}&namespace={}", encode(ns));
        }
        if let Some(v) = field_validation {
            path = format!("{path}&fieldValidation={}", encode(v));
        }
        let req = self
            .request(reqwest::Method::POST, &path)
            .header(reqwest::header::CONTENT_TYPE, "application/yaml")
            .body(text.to_string());
        let response = self.send(req, &path).await?;
        let warnings = response
            .headers()
            .get_all(reqwest::header::WARNING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(warning_text)
            .collect();
        let mut reply: Value = response.json().await.map_err(|e| ClientError::Decode(format!("{path}: {e}")))?;
        let items = reply.get_mut("items").map(Value::take).unwrap_or(Value::Null);
        let items = serde_json::from_value(items).map_err(|e| ClientError::Decode(format!("{path}: {e}")))?;
        Ok((items, warnings))
    }

    /// Applies an RFC 7386 merge patch.
    pub async fn patch_merge(&self, res: &ResourceType, ns: &str, name: &str, patch: &Value) -> Result<Value> {
        self.patch_merge_at(res.object_path(ns, name), patch).await
    }

    /// Applies an RFC 7386 merge patch to the object's `status` subresource:
    /// a write of the main resource leaves `status` as it was, as on Kubernetes.
    pub async fn patch_merge_status(&self, res: &ResourceType, ns: &str, name: &str, patch: &Value) -> Result<Value> {
        self.patch_merge_at(format!("{}/status", res.object_path(ns, name)), patch).await
    }

    async fn patch_merge_at(&self, path: String, patch: &Value) -> Result<Value> {
        let body = serde_json::to_string(patch).map_err(|e| ClientError::Decode(e.to_string()))?;
        let req = self
            .request(reqwest::Method::PATCH, &path)
            .header(reqwest::header::CONTENT_TYPE, "application/merge-patch+json")
            .body(body);
        self.json(req, &path).await
    }

    /// Deletes an object; a started pod on a live node is only marked (the
    /// agent stops it within `grace` seconds and then removes it).
    pub async fn delete(&self, res: &ResourceType, ns: &str, name: &str, grace: Option<u64>) -> Result<Value> {
        let mut path = res.object_path(ns, name);
        if let Some(g) = grace {
            path = format!("{path}?gracePeriodSeconds={g}");
        }
        self.json(self.request(reqwest::Method::DELETE, &path), &path).await
    }

    /// Deletes an object now, if it is still at `resource_version` (the
    /// request's precondition): how an agent removes a pod whose processes
    /// it has stopped, as a kubelet does with a zero grace period.
    pub async fn delete_now(
        &self,
        res: &ResourceType,
        ns: &str,
        name: &str,
        resource_version: Option<u64>,
    ) -> Result<Value> {
        let path = format!("{}?gracePeriodSeconds=0", res.object_path(ns, name));
        let mut options = serde_json::json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0});
        if let Some(v) = resource_version {
            options["preconditions"] = serde_json::json!({"resourceVersion": v.to_string()});
        }
        self.json(self.request(reqwest::Method::DELETE, &path).json(&options), &path).await
    }

    /// Watches a type in one namespace (`None`: all), from after
    /// `from_version` (`None`: the current objects as ADDED, then changes).
    /// A version too old fails with reason `Expired` (410).
    pub async fn watch(
        &self,
        res: &ResourceType,
        ns: Option<&str>,
        from_version: Option<u64>,
    ) -> Result<impl Stream<Item = Result<WatchEvent>> + Send + Unpin + 'static> {
        let mut path = format!("{}?watch=true", res.collection_path(ns));
        if let Some(v) = from_version {
            path = format!("{path}&resourceVersion={v}");
        }
        let response = self.send(self.request(reqwest::Method::GET, &path), &path).await?;
        let url = path.clone();
        let lines = lines(
            response.bytes_stream().map(move |r| r.map_err(|source| ClientError::Http { url: url.clone(), source })),
        );
        Ok(Box::pin(lines.map(|line| {
            let line = line?;
            let mut v: Value =
                serde_json::from_slice(&line).map_err(|e| ClientError::Decode(format!("watch event: {e}")))?;
            let event_type = v.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
            let object = v.get_mut("object").map(Value::take).unwrap_or(Value::Null);
            if event_type == "ERROR" {
                return Err(ClientError::Status {
                    code: object.get("code").and_then(Value::as_u64).unwrap_or(500) as u16,
                    reason: object.get("reason").and_then(Value::as_str).unwrap_or_default().to_string(),
                    message: object.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
                    status: object,
                });
            }
            Ok(WatchEvent { event_type, object })
        })))
    }

    /// A pod's log: all of it or its last `tail` lines; with `follow`, the
    /// stream goes on until the pod finishes.
    pub async fn logs(
        &self,
        ns: &str,
        pod: &str,
        follow: bool,
        tail: Option<u64>,
    ) -> Result<impl Stream<Item = Result<Bytes>> + Send + Unpin + 'static> {
        let mut path = format!("/api/v1/namespaces/{ns}/pods/{pod}/log?follow={follow}");
        if let Some(t) = tail {
            path = format!("{path}&tailLines={t}");
        }
        let response = self.send(self.request(reqwest::Method::GET, &path), &path).await?;
        Ok(Box::pin(
            response.bytes_stream().map(move |r| r.map_err(|source| ClientError::Http { url: path.clone(), source })),
        ))
    }

    /// The Prometheus exposition of `/metrics`.
    pub async fn metrics_text(&self) -> Result<String> {
        let path = "/metrics";
        let response = self.send(self.request(reqwest::Method::GET, path), path).await?;
        response.text().await.map_err(|e| ClientError::Decode(format!("{path}: {e}")))
    }

    /// The OpenAPI v3 document of one group-version (`api/v1`,
    /// `apis/kubeflow.org/v1`), or the index of them all for `""`.
    pub async fn openapi(&self, group_version: &str) -> Result<Value> {
        let path = if group_version.is_empty() {
            "/openapi/v3".to_string()
        } else {
            format!("/openapi/v3/{}", group_version.trim_matches('/'))
        };
        self.json(self.request(reqwest::Method::GET, &path), &path).await
    }

    /// Series of the embedded history (`ringleader_observability::history`): `query`
    /// holds `series`, `prefix`, `since` or `sinceSeconds`.
    pub async fn history(&self, query: &[(&str, &str)]) -> Result<Value> {
        let path = ringleader_registry::resources::HISTORY_PATH;
        self.json(self.request(reqwest::Method::GET, path).query(query), path).await
    }

    /// Whether the server answers `/healthz`.
    pub async fn healthy(&self) -> bool {
        let path = "/healthz";
        self.send(self.http.get(self.url(path)), path).await.is_ok()
    }
}

/// Splits a byte stream into its newline-terminated lines (without the newline).
pub(crate) fn lines<S>(bytes: S) -> impl Stream<Item = Result<Vec<u8>>> + Send + 'static
where
    S: Stream<Item = Result<Bytes>> + Send + Unpin + 'static,
{
    futures_util::stream::unfold((bytes, Vec::<u8>::new(), false), |(mut bytes, mut buf, mut done)| async move {
        loop {
            if let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).take(pos).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some((Ok(line), (bytes, buf, done)));
            }
            if done {
                if buf.iter().all(u8::is_ascii_whitespace) {
                    return None;
                }
                let line = std::mem::take(&mut buf);
                return Some((Ok(line), (bytes, buf, true)));
            }
            match bytes.next().await {
                Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
                // A broken stream's partial line is not an event.
                Some(Err(e)) => return Some((Err(e), (bytes, Vec::new(), true))),
                None => done = true,
            }
        }
    })
}

/// The text of a `Warning` header (`299 - "unknown field \"x\""`), its
/// quotes and escapes undone; a value of another form as it is.
fn warning_text(header: &str) -> String {
    let quoted = header.splitn(3, ' ').nth(2).unwrap_or(header);
    serde_json::from_str::<String>(quoted).unwrap_or_else(|_| header.to_string())
}
