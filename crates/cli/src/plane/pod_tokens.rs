//! The embedded agent's tokens for its pods: what a TokenRequest bound to
//! the pod answers (`ringleader_server`'s `serviceaccounts/token`), minted
//! in-process with the server's own key, since the embedded agent reaches
//! the store directly rather than over HTTP. The same checks hold: the
//! account must exist, and the pod must still be the one (same uid) and
//! run as that account.

use ringleader_agent::service_account::TokenSource;
use ringleader_api::kinds::service_account as sa;
use ringleader_auth::sa_token::{Claims, ObjectRef, Signer};
use ringleader_store::{ObjectKey, Store};
use serde_json::Value;
use std::sync::Arc;

/// Mints pods' tokens with the server's signer, against the store.
pub struct PodTokens {
    pub signer: Arc<Signer>,
    pub store: Store,
}

fn uid(v: &Value) -> String {
    v.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string()
}

impl TokenSource for PodTokens {
    fn token(
        &self,
        namespace: &str,
        account: &str,
        pod: &str,
        pod_uid: &str,
        seconds: i64,
        now: f64,
    ) -> Result<(String, f64), String> {
        let get = |kind: &str, name: &str| {
            self.store.get(&ObjectKey::new("v1", kind, namespace, name)).map_err(|e| e.to_string())
        };
        let Some(stored_account) = get(sa::KIND, account)? else {
            return Err(format!("serviceaccounts {account:?} not found"));
        };
        let Some(stored_pod) = get("Pod", pod)? else { return Err(format!("pods {pod:?} not found")) };
        if uid(&stored_pod.object) != pod_uid {
            return Err(format!("pod {namespace}/{pod} is no longer the one with uid {pod_uid}"));
        }
        if sa::of_pod(&stored_pod.object) != account {
            return Err(format!("pod {namespace}/{pod} does not run as serviceaccount {account:?}"));
        }
        let account_ref = ObjectRef { name: account.to_string(), uid: uid(&stored_account.object) };
        let pod_ref = ObjectRef { name: pod.to_string(), uid: pod_uid.to_string() };
        let claims = Claims::new(namespace, account_ref, &[], now as i64, seconds, Some(pod_ref), None);
        Ok((self.signer.mint(&claims)?, claims.exp as f64))
    }
}
