//! Core v1 ServiceAccounts as Kubernetes keeps them: the `default` account
//! every namespace has (made by the manager, as kube-controller-manager's
//! serviceaccounts-controller), the account a pod runs as, and whether its
//! token is mounted into the pod.

use serde_json::{json, Value};

/// `apiVersion` of a ServiceAccount.
pub const API_VERSION: &str = "v1";
/// `kind` of a ServiceAccount.
pub const KIND: &str = "ServiceAccount";
/// The account every namespace has, and pods run as unless they name one.
pub const DEFAULT: &str = "default";
/// Where a pod finds its account's token, the cluster's CA and its namespace.
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A bare ServiceAccount `name` in `namespace`, as the controller creates `default`.
pub fn object(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name, "namespace": namespace}})
}

/// The account `pod` runs as: `spec.serviceAccountName`, else the
/// deprecated `spec.serviceAccount`, else [`DEFAULT`].
pub fn of_pod(pod: &Value) -> &str {
    ["/spec/serviceAccountName", "/spec/serviceAccount"]
        .iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_str))
        .find(|s| !s.is_empty())
        .unwrap_or(DEFAULT)
}

/// Whether the pod gets its account's token mounted: the pod's
/// `automountServiceAccountToken` decides when set, else the account's
/// (`account`: as stored, if it is), else yes — as the kubelet decides.
pub fn automount(pod: &Value, account: Option<&Value>) -> bool {
    pod.pointer("/spec/automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| account.and_then(|a| a.get("automountServiceAccountToken")).and_then(Value::as_bool))
        .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pods_account_and_whether_its_token_is_mounted() {
        assert_eq!(of_pod(&json!({"spec": {}})), "default");
        assert_eq!(of_pod(&json!({"spec": {"serviceAccount": "old", "serviceAccountName": ""}})), "old");
        assert_eq!(of_pod(&json!({"spec": {"serviceAccount": "old", "serviceAccountName": "new"}})), "new");
        let off = json!({"automountServiceAccountToken": false});
        assert!(automount(&json!({"spec": {}}), None));
        assert!(!automount(&json!({"spec": {}}), Some(&off)), "the account turns it off");
        assert!(automount(&json!({"spec": {"automountServiceAccountToken": true}}), Some(&off)), "the pod wins");
        assert!(!automount(&json!({"spec": {"automountServiceAccountToken": false}}), None));
        assert_eq!(object("ns1", "default")["metadata"]["namespace"], "ns1");
    }
}
