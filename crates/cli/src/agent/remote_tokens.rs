//! A standalone agent's tokens for its pods: a TokenRequest bound to the
//! pod, posted to the API server with the agent's own credentials, as the
//! kubelet asks (the server lets a node ask only for pods bound to it).

use ringleader_agent::service_account::{ApiAccess, TokenSource};
use ringleader_client::Client;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Longest wait for the API server's answer (a cut link would hang a start).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

pub struct RemoteTokens {
    client: Client,
    runtime: tokio::runtime::Handle,
}

impl TokenSource for RemoteTokens {
    fn token(
        &self,
        namespace: &str,
        account: &str,
        pod: &str,
        pod_uid: &str,
        seconds: i64,
        _now: f64,
    ) -> Result<(String, f64), String> {
        let request = json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds,
                     "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": pod_uid}},
        });
        let call = tokio::time::timeout(CALL_TIMEOUT, self.client.create_token(namespace, account, &request));
        // The agent asks from its loop on a worker thread, as RemoteCluster's calls.
        let answer = match tokio::task::block_in_place(|| self.runtime.block_on(call)) {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => return Err(e.to_string()),
            Err(_) => return Err(format!("no answer from the API server within {} s", CALL_TIMEOUT.as_secs())),
        };
        let at = |p: &str| answer.pointer(p).and_then(Value::as_str);
        let token =
            at("/status/token").filter(|t| !t.is_empty()).ok_or("the TokenRequest came back without a token")?;
        let expires = at("/status/expirationTimestamp")
            .and_then(ringleader_api::time::parse_rfc3339)
            .ok_or("the TokenRequest came back without status.expirationTimestamp")?;
        Ok((token.to_string(), expires))
    }
}

/// How the agent's pods reach the API server the agent's kubeconfig names:
/// its host and port, and the CA the kubeconfig trusts (`None` when the URL
/// has no host and port to give them).
pub fn access(client: &Client, ca_pem: Option<&[u8]>, runtime: tokio::runtime::Handle) -> Option<ApiAccess> {
    let url = reqwest::Url::parse(client.base()).ok()?;
    let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']').to_string();
    let port = url.port_or_known_default()?;
    Some(ApiAccess {
        host,
        port,
        ca_pem: ca_pem.map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default(),
        tokens: Arc::new(RemoteTokens { client: client.clone(), runtime }),
    })
}
