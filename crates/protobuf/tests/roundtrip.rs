//! JSON → protobuf → JSON for realistic objects, written the way
//! Kubernetes' JSON shows them.

use ringleader_protobuf::{decode, encode, supports};
use serde_json::{json, Value};

fn round_trip(object: Value) {
    let bytes = encode(&object).unwrap_or_else(|e| panic!("encode {}: {e}", object["kind"]));
    assert_eq!(&bytes[..4], &[0x6b, 0x38, 0x73, 0x00]);
    let back = decode(&bytes).unwrap_or_else(|e| panic!("decode {}: {e}", object["kind"]));
    assert_eq!(back, object);
}

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": "team-a", "uid": "6f1c2d1e-0000-4000-8000-000000000001",
           "resourceVersion": "17", "creationTimestamp": "2026-11-28T13:00:00Z",
           "labels": {"app": "trainer"}, "annotations": {"note": ""}})
}

#[test]
fn namespace() {
    round_trip(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"},
                     "creationTimestamp": "2026-11-28T13:00:00Z"},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}));
}

#[test]
fn configmap_with_binary_data() {
    round_trip(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cfg"),
        "data": {"a.yaml": "x: 1\n", "empty": ""}, "binaryData": {"blob": "AAEC/w=="},
        "immutable": true}));
}

#[test]
fn dockerconfig_secret() {
    round_trip(json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("pull"),
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}}));
}

fn pod_spec() -> Value {
    json!({
        "containers": [{
            "name": "main", "image": "ghcr.io/acme/trainer:1.2", "command": ["python", "train.py"],
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "RANK", "value": "0"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"nvidia.com/gpu": "8", "memory": "64Gi"},
                          "requests": {"cpu": "500m", "memory": "1Gi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
            "imagePullPolicy": "IfNotPresent"
        }],
        "volumes": [{"name": "data", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300}],
        "priorityClassName": "high",
        "nodeSelector": {"pool": "h200"}
    })
}

#[test]
fn deployment_with_pod_template() {
    round_trip(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web"),
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "trainer"}},
                 "template": {"metadata": {"labels": {"app": "trainer"}, "creationTimestamp": null}, "spec": pod_spec()},
                 "strategy": {"type": "RollingUpdate",
                              "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}}},
        "status": {"replicas": 3, "readyReplicas": 2, "observedGeneration": 4}}));
}

#[test]
fn service_with_intstr_target_ports() {
    round_trip(json!({"apiVersion": "v1", "kind": "Service", "metadata": meta("web"),
        "spec": {"selector": {"app": "trainer"}, "type": "ClusterIP", "clusterIP": "10.0.0.7",
                 "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http"},
                           {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": 9090}]},
        "status": {"loadBalancer": {}}}));
}

#[test]
fn job() {
    round_trip(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("train"),
        "spec": {"parallelism": 4, "completions": 4, "backoffLimit": 0, "completionMode": "Indexed",
                 "activeDeadlineSeconds": 86400,
                 "template": {"metadata": {"creationTimestamp": null}, "spec": pod_spec()}},
        "status": {"active": 4, "startTime": "2026-11-28T13:00:05Z", "ready": 4}}));
}

#[test]
fn pod_with_status() {
    let mut spec = pod_spec();
    spec["nodeName"] = json!("node-3");
    round_trip(json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta("train-0"), "spec": spec,
    "status": {
        "phase": "Running", "podIP": "10.1.2.3", "hostIP": "192.168.0.3",
        "startTime": "2026-11-28T13:00:01Z", "qosClass": "Burstable",
        "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null,
                        "lastTransitionTime": "2026-11-28T13:00:09Z"}],
        "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
            "image": "ghcr.io/acme/trainer:1.2", "imageID": "", "started": true,
            "state": {"running": {"startedAt": "2026-11-28T13:00:02Z"}},
            "lastState": {}}]
    }}));
}

#[test]
fn rbac() {
    round_trip(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("reader"),
        "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods", "pods/log"]}]}));
    round_trip(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "admins", "creationTimestamp": null},
        "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "ops"},
                     {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}}));
}

#[test]
fn priority_class_and_pdb() {
    round_trip(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "high", "creationTimestamp": null}, "value": 1000000,
        "description": "gangs", "preemptionPolicy": "PreemptLowerPriority"}));
    round_trip(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("pdb"),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "trainer"}}},
        "status": {"currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1, "expectedPods": 3}}));
}

#[test]
fn status_error_object() {
    round_trip(json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": "pods \"x\" is forbidden", "reason": "Forbidden",
        "details": {"name": "x", "kind": "pods", "causes": [{"reason": "FieldValueInvalid", "field": "spec"}]},
        "code": 403}));
}

#[test]
fn lists_with_list_meta() {
    round_trip(json!({"apiVersion": "v1", "kind": "NamespaceList",
        "metadata": {"resourceVersion": "99", "continue": "eyJ2IjoxfQ", "remainingItemCount": 12},
        "items": [{"metadata": {"name": "a", "creationTimestamp": null}, "spec": {}, "status": {"phase": "Active"}}]}));
    round_trip(json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "100"},
        "items": [{"metadata": meta("p"), "spec": pod_spec(), "status": {"phase": "Pending"}}]}));
}

#[test]
fn token_request() {
    round_trip(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": meta("sa"),
        "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600,
                 "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "u"}},
        "status": {"token": "eyJhbGci", "expirationTimestamp": "2026-11-28T14:00:00Z"}}));
}

#[test]
fn lease_with_micro_time_and_managed_fields() {
    let mut m = meta("leader");
    m["managedFields"] = json!([{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
        "time": "2026-11-28T13:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}}]);
    round_trip(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": m,
        "spec": {"holderIdentity": "mgr-1", "leaseDurationSeconds": 15,
                 "renewTime": "2026-11-28T13:00:00.123456Z", "leaseTransitions": 2}}));
}

#[test]
fn supports_builtins_not_custom_resources() {
    for (v, k) in [
        ("v1", "Pod"),
        ("v1", "PodList"),
        ("apps/v1", "Deployment"),
        ("batch/v1", "Job"),
        ("v1", "Status"),
        ("meta.k8s.io/v1", "Status"),
        ("scheduling.k8s.io/v1", "PriorityClass"),
        ("networking.k8s.io/v1", "NetworkPolicy"),
        ("discovery.k8s.io/v1", "EndpointSlice"),
    ] {
        assert!(supports(v, k), "{v} {k}");
    }
    for (v, k) in [
        ("kubeflow.org/v1", "PyTorchJob"),
        ("apps/v1", "Foo"),
        ("v1", "PodSpec"),
        ("apps/v1beta1", "Deployment"),
        ("v1", ""),
    ] {
        assert!(!supports(v, k), "{v} {k}");
    }
}

#[test]
fn list_items_carrying_their_type_as_the_json_api_shows_them() {
    // Stored objects carry apiVersion/kind; in a protobuf list the items do
    // not (the list names their type), so they are left out, not refused.
    let list = json!({"apiVersion": "v1", "kind": "NamespaceList", "metadata": {"resourceVersion": "7"},
        "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}, "status": {"phase": "Active"}}]});
    let body = encode(&list).unwrap_or_else(|e| panic!("{e}"));
    let back = decode(&body).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back["items"][0]["metadata"]["name"], "a");
    assert_eq!(back["items"][0]["status"]["phase"], "Active");
    assert!(back["items"][0].get("kind").is_none(), "{back}");
    // A field of that name where the type has one is kept (an owner reference's kind).
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"}]}});
    let back = decode(&encode(&cm).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back["metadata"]["ownerReferences"][0]["kind"], "Job");
}

#[test]
fn lenient_encoding_leaves_out_fields_the_type_lacks_and_strict_names_them() {
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "status": {"active": 1, "replicaStatuses": {"Worker": {"active": 1}}}});
    let strict = ringleader_protobuf::encode(&job).map_err(|e| e.to_string());
    assert!(strict.as_ref().is_err_and(|e| e.contains("replicaStatuses")), "{strict:?}");
    let body = ringleader_protobuf::encode_lenient(&job).unwrap_or_else(|e| panic!("{e}"));
    let back = decode(&body).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back["status"], json!({"active": 1}));
    // A value of the wrong type is still refused.
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}});
    assert!(ringleader_protobuf::encode_lenient(&bad).is_err());
}
