//! What a Kubernetes-mode process needs before it starts: a client from a
//! kubeconfig file, and the CRDs of the job kinds installed where the
//! cluster lacks them (one already there, e.g. Kubeflow's own, is reused).

use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Why setting up failed.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig {path}: {why}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// What went wrong.
        why: String,
    },
    /// The API refused or failed a call.
    #[error("{what}: {source}")]
    Api {
        /// The call.
        what: String,
        /// Its error.
        #[source]
        source: kube::Error,
    },
    /// A CRD was created but never became Established.
    #[error("CustomResourceDefinition {0} was not Established within {1:?}")]
    NotEstablished(String, Duration),
}

/// A kube-rs client from the current context of the kubeconfig at `path`.
pub async fn client(path: &Path) -> Result<kube::Client, SetupError> {
    let bad = |why: String| SetupError::Kubeconfig { path: path.display().to_string(), why };
    let file = kube::config::Kubeconfig::read_from(path).map_err(|e| bad(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| bad(e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| bad(e.to_string()))
}

/// Creates each CRD of `crds` the cluster does not have and waits (at most
/// `wait`) until every one is Established. Returns the names created.
pub async fn install_crds(client: &kube::Client, crds: &[Value], wait: Duration) -> Result<Vec<String>, SetupError> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    let mut created = Vec::new();
    let mut names = Vec::new();
    for crd in crds {
        let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        names.push(name.clone());
        match api.get_opt(&name).await {
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(source) => return Err(SetupError::Api { what: format!("reading CRD {name}"), source }),
        }
        let typed: CustomResourceDefinition = serde_json::from_value(crd.clone()).map_err(|e| {
            SetupError::Kubeconfig { path: "(built-in CRDs)".into(), why: format!("CRD {name} does not parse: {e}") }
        })?;
        match api.create(&kube::api::PostParams::default(), &typed).await {
            Ok(_) => created.push(name),
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(source) => return Err(SetupError::Api { what: format!("creating CRD {name}"), source }),
        }
    }
    let deadline = Instant::now() + wait;
    for name in names {
        loop {
            let crd = api
                .get(&name)
                .await
                .map_err(|source| SetupError::Api { what: format!("reading CRD {name}"), source })?;
            let established = crd
                .status
                .and_then(|s| s.conditions)
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Established" && c.status == "True");
            if established {
                break;
            }
            if Instant::now() >= deadline {
                return Err(SetupError::NotEstablished(name, wait));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(created)
}

/// Whether `client`'s server is a kube-apiserver rather than ringleader's
/// own API server (which serves `ringleader.io/v1alpha1`).
pub async fn is_kubernetes(client: &kube::Client) -> Result<bool, SetupError> {
    let what = || "asking the API server which API it serves".to_string();
    let request = http::Request::get("/apis/ringleader.io/v1alpha1")
        .body(Vec::new())
        .map_err(|e| SetupError::Kubeconfig { path: "(request)".into(), why: e.to_string() })?;
    match client.request_text(request).await {
        Ok(_) => Ok(false),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(true),
        Err(source) => Err(SetupError::Api { what: what(), source }),
    }
}

/// The group whose members may act as ringleader node agents.
pub const AGENT_GROUP: &str = "ringleader:agents";

/// The ClusterRole of a node agent and its binding to [`AGENT_GROUP`]: its
/// Nodes and their status, the pods it runs (their status, the annotations
/// it records, their final delete), the ConfigMaps they mount, Events. A
/// node identity of the Node authorizer could not serve several virtual
/// nodes, nor read the rank-table ConfigMaps pods take files from.
pub fn agent_rbac() -> Vec<Value> {
    let rule = |resources: &[&str], verbs: &[&str]| serde_json::json!({"apiGroups": [""], "resources": resources, "verbs": verbs});
    vec![
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "ringleader:agent"},
            "rules": [
                rule(&["nodes"], &["get", "list", "watch", "create", "patch", "update"]),
                rule(&["nodes/status"], &["patch", "update"]),
                rule(&["pods"], &["get", "list", "watch", "patch", "delete"]),
                rule(&["pods/status"], &["patch", "update"]),
                rule(&["configmaps"], &["get", "list", "watch"]),
                rule(&["events"], &["create", "patch", "update"]),
            ],
        }),
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "ringleader:agent"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ringleader:agent"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": AGENT_GROUP}],
        }),
    ]
}

/// Creates each of `objects` (cluster-scoped RBAC objects) that is absent;
/// one already there is left as an administrator may have edited it.
/// Returns the names created.
pub async fn install_rbac(client: &kube::Client, objects: &[Value]) -> Result<Vec<String>, SetupError> {
    let mut created = Vec::new();
    for o in objects {
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
        let name = o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let plural = match kind {
            "ClusterRole" => "clusterroles",
            _ => "clusterrolebindings",
        };
        let url = format!("/apis/rbac.authorization.k8s.io/v1/{plural}");
        let body =
            serde_json::to_vec(o).map_err(|e| SetupError::Kubeconfig { path: "(rbac)".into(), why: e.to_string() })?;
        let request = http::Request::post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(|e| SetupError::Kubeconfig { path: "(rbac)".into(), why: e.to_string() })?;
        match client.request_text(request).await {
            Ok(_) => created.push(format!("{kind} {name}")),
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(source) => return Err(SetupError::Api { what: format!("creating {kind} {name}"), source }),
        }
    }
    Ok(created)
}

/// The Queue a job that names none goes to (`spec.queue` unset means
/// `default`), as Volcano's controller creates it: weight 1, reclaimable.
pub fn default_queue() -> Value {
    serde_json::json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"weight": 1, "reclaimable": true},
    })
}

/// Creates the `default` Queue where none exists, as Volcano's controller
/// does, so that `kubectl get queue default` and tools that check a job's
/// queue (vcctl, Volcano's admission) find it. Returns whether it was
/// created; `Ok(false)` also when the cluster serves no Queue kind (CRDs
/// not installed): the scheduler then takes `default` as implicit.
pub async fn ensure_default_queue(client: &kube::Client) -> Result<bool, SetupError> {
    let queue = default_queue();
    let body = serde_json::to_vec(&queue)
        .map_err(|e| SetupError::Kubeconfig { path: "(default Queue)".into(), why: e.to_string() })?;
    let request = http::Request::post("/apis/scheduling.volcano.sh/v1beta1/queues")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .map_err(|e| SetupError::Kubeconfig { path: "(default Queue)".into(), why: e.to_string() })?;
    match client.request_text(request).await {
        Ok(_) => Ok(true),
        // 409: it exists (kept as an administrator may have edited it);
        // 404: no Queue kind served.
        Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(false),
        Err(source) => Err(SetupError::Api { what: "creating Queue default".into(), source }),
    }
}
