//! The requests the CLI's kubectl-style verbs make beyond plain CRUD: lists
//! and watches as `meta.k8s.io/v1` Tables, field selectors, the log
//! parameters of `kubectl logs`, and `/version`.

use crate::client::{encode, lines, Client, ClientError, ObjectList, Result, WatchEvent};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use ringleader_registry::resources::ResourceType;
use serde_json::Value;

/// What kubectl sends to get a Table, falling back to the object itself
/// from a server that has none.
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// The selectors of a list, a watch or a collection delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `labelSelector`, equality- or set-based (`a=b,c in (d,e),!f`).
    pub label_selector: Option<String>,
    /// `fieldSelector` (`status.phase=Running,spec.nodeName=n1`).
    pub field_selector: Option<String>,
}

impl ListOptions {
    /// The query parameters, `&`-joined and percent-encoded (empty when none).
    pub fn query(&self) -> String {
        let mut params = Vec::new();
        if let Some(s) = self.label_selector.as_deref().filter(|s| !s.is_empty()) {
            params.push(format!("labelSelector={}", encode(s)));
        }
        if let Some(s) = self.field_selector.as_deref().filter(|s| !s.is_empty()) {
            params.push(format!("fieldSelector={}", encode(s)));
        }
        params.join("&")
    }
}

/// The parameters of `GET …/pods/NAME/log`, as `kubectl logs` names them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// `container` (needed when the pod has several).
    pub container: Option<String>,
    /// `follow`: stream until the container ends.
    pub follow: bool,
    /// `previous`: the log of the container's previous run.
    pub previous: bool,
    /// `timestamps`: each line prefixed with its RFC 3339 time.
    pub timestamps: bool,
    /// `tailLines`.
    pub tail_lines: Option<u64>,
    /// `sinceSeconds`.
    pub since_seconds: Option<u64>,
    /// `sinceTime` (RFC 3339).
    pub since_time: Option<String>,
    /// `limitBytes`.
    pub limit_bytes: Option<u64>,
}

impl LogOptions {
    /// The query parameters, `&`-joined and percent-encoded.
    pub fn query(&self) -> String {
        let mut params = vec![format!("follow={}", self.follow)];
        if let Some(c) = &self.container {
            params.push(format!("container={}", encode(c)));
        }
        if self.previous {
            params.push("previous=true".into());
        }
        if self.timestamps {
            params.push("timestamps=true".into());
        }
        if let Some(n) = self.tail_lines {
            params.push(format!("tailLines={n}"));
        }
        if let Some(n) = self.since_seconds {
            params.push(format!("sinceSeconds={n}"));
        }
        if let Some(t) = &self.since_time {
            params.push(format!("sinceTime={}", encode(t)));
        }
        if let Some(n) = self.limit_bytes {
            params.push(format!("limitBytes={n}"));
        }
        params.join("&")
    }
}

fn with_query(path: String, query: &str) -> String {
    match (query.is_empty(), path.contains('?')) {
        (true, _) => path,
        (false, true) => format!("{path}&{query}"),
        (false, false) => format!("{path}?{query}"),
    }
}

impl Client {
    /// Objects of a type in one namespace (`None`: all), filtered by label
    /// and field selectors.
    pub async fn list_with(&self, res: &ResourceType, ns: Option<&str>, options: &ListOptions) -> Result<ObjectList> {
        let path = with_query(res.collection_path(ns), &options.query());
        let mut list = self.json(self.request(reqwest::Method::GET, &path), &path).await?;
        let resource_version = list_version(&list)
            .ok_or_else(|| ClientError::Decode(format!("{path}: list without metadata.resourceVersion")))?;
        let items = match list.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => items,
            _ => return Err(ClientError::Decode(format!("{path}: list without items"))),
        };
        Ok(ObjectList { items, resource_version })
    }

    /// A list as the server renders it for kubectl: a `meta.k8s.io/v1`
    /// Table, or the plain list from a server that does not make Tables.
    pub async fn list_table(&self, res: &ResourceType, ns: Option<&str>, options: &ListOptions) -> Result<Value> {
        let path = with_query(res.collection_path(ns), &options.query());
        let req = self.request(reqwest::Method::GET, &path).header(reqwest::header::ACCEPT, TABLE_ACCEPT);
        self.json(req, &path).await
    }

    /// One object as a Table of one row (or the object itself from a
    /// server that does not make Tables).
    pub async fn get_table(&self, res: &ResourceType, ns: &str, name: &str) -> Result<Value> {
        let path = res.object_path(ns, name);
        let req = self.request(reqwest::Method::GET, &path).header(reqwest::header::ACCEPT, TABLE_ACCEPT);
        self.json(req, &path).await
    }

    /// A watch whose events carry Tables of one row (as `kubectl get -w`
    /// asks for), from after `from_version`.
    pub async fn watch_table(
        &self,
        res: &ResourceType,
        ns: Option<&str>,
        options: &ListOptions,
        from_version: Option<u64>,
    ) -> Result<impl Stream<Item = Result<WatchEvent>> + Send + Unpin + 'static> {
        let mut path = with_query(format!("{}?watch=true", res.collection_path(ns)), &options.query());
        if let Some(v) = from_version {
            path = format!("{path}&resourceVersion={v}");
        }
        let req = self.request(reqwest::Method::GET, &path).header(reqwest::header::ACCEPT, TABLE_ACCEPT);
        let response = self.send(req, &path).await?;
        let url = path.clone();
        let lines = lines(
            response.bytes_stream().map(move |r| r.map_err(|source| ClientError::Http { url: url.clone(), source })),
        );
        Ok(Box::pin(lines.map(|line| {
            let mut v: Value =
                serde_json::from_slice(&line?).map_err(|e| ClientError::Decode(format!("watch event: {e}")))?;
            let event_type = v.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
            let object = v.get_mut("object").map(Value::take).unwrap_or(Value::Null);
            if event_type == "ERROR" {
                return Err(ClientError::Status {
                    code: object.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok()).unwrap_or(500),
                    reason: object.get("reason").and_then(Value::as_str).unwrap_or_default().to_string(),
                    message: object.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
                    status: object,
                });
            }
            Ok(WatchEvent { event_type, object })
        })))
    }

    /// A pod's log with kubectl's parameters; with `follow`, the stream
    /// goes on until the container ends.
    pub async fn logs_with(
        &self,
        ns: &str,
        pod: &str,
        options: &LogOptions,
    ) -> Result<impl Stream<Item = Result<Bytes>> + Send + Unpin + 'static> {
        let path = format!("/api/v1/namespaces/{ns}/pods/{}/log?{}", encode(pod), options.query());
        let response = self.send(self.request(reqwest::Method::GET, &path), &path).await?;
        Ok(Box::pin(
            response.bytes_stream().map(move |r| r.map_err(|source| ClientError::Http { url: path.clone(), source })),
        ))
    }

    /// The server's `/version` document (`gitVersion`, `major`, `minor` …).
    pub async fn version(&self) -> Result<Value> {
        let path = "/version";
        self.json(self.request(reqwest::Method::GET, path), path).await
    }
}

/// `metadata.resourceVersion` of a list or Table, as a number.
pub fn list_version(list: &Value) -> Option<u64> {
    list.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_encoded_into_the_query() {
        let o = ListOptions {
            label_selector: Some("app in (a,b),!canary".into()),
            field_selector: Some("status.phase=Running".into()),
        };
        assert_eq!(o.query(), "labelSelector=app%20in%20%28a%2Cb%29%2C%21canary&fieldSelector=status.phase%3DRunning");
        assert_eq!(ListOptions::default().query(), "");
        assert_eq!(
            with_query("/api/v1/pods?watch=true".into(), "labelSelector=a"),
            "/api/v1/pods?watch=true&labelSelector=a"
        );
        assert_eq!(with_query("/api/v1/pods".into(), ""), "/api/v1/pods");
    }

    #[test]
    fn log_options_name_kubectls_parameters() {
        let o = LogOptions {
            container: Some("main".into()),
            follow: true,
            previous: true,
            timestamps: true,
            tail_lines: Some(5),
            since_seconds: Some(300),
            since_time: Some("2026-11-23T10:00:00Z".into()),
            limit_bytes: Some(1024),
        };
        assert_eq!(
            o.query(),
            "follow=true&container=main&previous=true&timestamps=true&tailLines=5&sinceSeconds=300&sinceTime=2026-11-23T10%3A00%3A00Z&limitBytes=1024"
        );
        assert_eq!(LogOptions::default().query(), "follow=false");
    }
}
