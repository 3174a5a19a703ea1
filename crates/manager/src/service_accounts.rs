//! The serviceaccounts controller, as kube-controller-manager's: every
//! namespace has a `default` ServiceAccount, made when the namespace
//! appears (the built-in ones included) and made again when it is deleted.
//! A namespace being deleted gets none (its content is going).

use crate::cache::Cache;
use crate::writes::write;
use crate::ManagerError;
use ringleader_api::kinds::{namespace, service_account};
use ringleader_store::{Backend, ObjectKey, Op};

/// How long a job whose pods name a missing account waits before trying again.
pub const RETRY_SECONDS: f64 = 10.0;

/// Why a pod the job controller would create may not be, in
/// kube-apiserver's words: it runs as an account other than `default` that
/// its namespace lacks (`default` the controller above makes). `None`: it may.
pub fn missing_account(cache: &Cache, pod: &serde_json::Value) -> Option<String> {
    let account = service_account::of_pod(pod);
    if account == service_account::DEFAULT {
        return None;
    }
    let ns = pod.pointer("/metadata/namespace").and_then(serde_json::Value::as_str).unwrap_or("default");
    let key = ObjectKey::new(service_account::API_VERSION, service_account::KIND, ns, account);
    if cache.get(&key).is_some() {
        return None;
    }
    let name = pod.pointer("/metadata/name").and_then(serde_json::Value::as_str).unwrap_or_default();
    Some(format!(
        "pods {name:?} is forbidden: error looking up service account {ns}/{account}: serviceaccount {account:?} not found"
    ))
}

/// One pass: the creates [`decide`] wants, carried out.
pub fn ensure(store: &dyn Backend, cache: &mut Cache) -> Result<(), ManagerError> {
    let ops = decide(cache);
    write(store, cache, ops)
}

/// The `default` accounts missing from the namespaces that are not terminating.
pub fn decide(cache: &Cache) -> Vec<Op> {
    cache
        .of_kind(namespace::API_VERSION, namespace::KIND)
        .filter(|n| !namespace::terminating(&n.object))
        .map(|n| n.key.name.as_str())
        .filter(|ns| {
            let key = ObjectKey::new(service_account::API_VERSION, service_account::KIND, ns, service_account::DEFAULT);
            cache.get(&key).is_none()
        })
        .map(|ns| Op::Create(service_account::object(ns, service_account::DEFAULT)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn created(ops: &[Op]) -> Vec<String> {
        ops.iter()
            .map(|op| match op {
                Op::Create(v) => format!(
                    "{} {}/{}",
                    v["kind"].as_str().unwrap_or_default(),
                    v["metadata"]["namespace"].as_str().unwrap_or_default(),
                    v["metadata"]["name"].as_str().unwrap_or_default()
                ),
                _ => "other".into(),
            })
            .collect()
    }

    #[test]
    fn every_live_namespace_gets_a_default_account_again_when_deleted() {
        let mut cache = Cache::default();
        for ns in ["default", "kube-system", "team-a"] {
            cache.put_value(namespace::object(ns));
        }
        let mut going = namespace::object("going");
        going["status"]["phase"] = json!("Terminating");
        cache.put_value(going);
        cache.put_value(service_account::object("kube-system", "default"));
        cache.put_value(service_account::object("team-a", "robot"));
        assert_eq!(
            created(&decide(&cache)),
            vec!["ServiceAccount default/default", "ServiceAccount team-a/default"],
            "only the missing ones, none in a terminating namespace"
        );
        let account: Value = service_account::object("team-a", "default");
        cache.put_value(account);
        cache.put_value(service_account::object("default", "default"));
        assert!(decide(&cache).is_empty());
    }

    #[test]
    fn a_job_pod_naming_a_missing_account_is_not_made() {
        let mut cache = Cache::default();
        let pod = |account: &str| json!({"metadata": {"name": "j-0", "namespace": "team-a"}, "spec": {"serviceAccountName": account}});
        assert_eq!(missing_account(&cache, &pod("default")), None, "made by the controller above");
        assert_eq!(
            missing_account(&cache, &pod("robot")).as_deref(),
            Some("pods \"j-0\" is forbidden: error looking up service account team-a/robot: serviceaccount \"robot\" not found")
        );
        cache.put_value(service_account::object("team-a", "robot"));
        assert_eq!(missing_account(&cache, &pod("robot")), None);
    }
}
