use super::*;
use crate::kinds::kind;

fn pod_kind() -> Kind {
    kind("v1", "Pod").expect("pod")
}

#[test]
fn a_bind_patch_becomes_metadata_binding_and_status() {
    let patch = json!({
        "spec": {"nodeName": "n1"},
        "metadata": {"annotations": {"ringleader.io/devices": "0,1"}},
        "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]},
    });
    let w = split_patch(&pod_kind(), &patch, None).expect("split");
    assert_eq!(w.bind.as_deref(), Some("n1"));
    // The annotations ride in the Binding: no PATCH of the pod itself.
    assert_eq!(w.main, None);
    let carried = json!({"ringleader.io/devices": "0,1"});
    assert_eq!(w.bind_annotations.map(Value::Object), Some(carried));
    assert_eq!(w.status, Some(json!({"conditions": [{"type": "PodScheduled", "status": "True"}]})));
    assert_eq!(w.delete, None);
}

#[test]
fn a_bind_patch_a_binding_cannot_carry_keeps_its_own_patch() {
    // A label, and a finalizer: neither is a Binding's to write.
    for metadata in [
        json!({"labels": {"a": "b"}, "annotations": {"ringleader.io/devices": "0"}}),
        json!({"finalizers": ["x"], "annotations": {"ringleader.io/devices": "0"}}),
    ] {
        let patch = json!({"spec": {"nodeName": "n1"}, "metadata": metadata});
        let w = split_patch(&pod_kind(), &patch, None).expect("split");
        assert_eq!(w.bind.as_deref(), Some("n1"));
        assert_eq!(w.bind_annotations, None, "{patch}");
        assert_eq!(w.main.map(|m| m["metadata"].clone()), Some(patch["metadata"].clone()));
    }
}

#[test]
fn a_release_carries_the_env_in_an_annotation_and_reads_back_into_the_spec() {
    let env = json!([{"name": "RANK", "value": "3"}]);
    let patch = json!({"spec": {"containers": [{"name": "c", "image": "i", "env": env}]},
                       "metadata": {"annotations": {"ringleader.io/start": "true"}}});
    let w = split_patch(&pod_kind(), &patch, None).expect("split");
    let main = w.main.expect("main");
    assert_eq!(main["metadata"]["annotations"]["ringleader.io/start"], "true");
    let carried = main["metadata"]["annotations"][ENV_ANNOTATION].as_str().expect("env annotation").to_string();
    let kube_pod = json!({"metadata": {"name": "p", "namespace": "a", "resourceVersion": "7",
                          "annotations": {ENV_ANNOTATION: carried}},
                          "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "OLD", "value": "x"}]}]}});
    let read = from_kube(&pod_kind(), kube_pod, &[]);
    assert_eq!(read["spec"]["containers"][0]["env"], env);
    assert_eq!((read["apiVersion"].as_str(), read["kind"].as_str()), (Some("v1"), Some("Pod")));
}

#[test]
fn other_pod_spec_changes_and_unbinding_are_refused_by_name() {
    let e = split_patch(&pod_kind(), &json!({"spec": {"restartPolicy": "Never"}}), None).expect_err("refused");
    assert!(e.contains("spec.restartPolicy"), "{e}");
    let e = split_patch(&pod_kind(), &json!({"spec": {"nodeName": null}}), None).expect_err("refused");
    assert!(e.contains("spec.nodeName"), "{e}");
}

#[test]
fn fields_of_the_wrong_type_are_refused_not_indexed_into() {
    let e = split_patch(&pod_kind(), &json!({"metadata": "x"}), None).expect_err("refused");
    assert!(e.contains("metadata"), "{e}");
    let patch = json!({"metadata": {"annotations": "x"}, "spec": {"containers": [{"name": "c", "env": []}]}});
    let e = split_patch(&pod_kind(), &patch, None).expect_err("refused");
    assert!(e.contains("metadata.annotations"), "{e}");
    let odd = for_create(
        &pod_kind(),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": "x"}),
        "r",
    );
    assert_eq!(odd["spec"], "x", "left for the API server to refuse");
}

#[test]
fn marking_a_pod_for_deletion_is_a_graceful_delete() {
    let patch = json!({"metadata": {"deletionTimestamp": "2026-11-25T00:00:00Z", "deletionGracePeriodSeconds": 5}});
    let w = split_patch(&pod_kind(), &patch, None).expect("split");
    assert_eq!((w.delete, w.main), (Some(5), None));
}

#[test]
fn typed_status_keeps_the_controller_state_in_an_annotation_merged() {
    let deploy = kind("apps/v1", "Deployment").expect("deployment");
    let before = json!({"phase": "Running", "backoff": {"w-0": {"delay": 10}}});
    let patch = json!({"status": {"replicas": 2, "ringleader": {"backoff": {"w-1": {"delay": 20}}}}});
    let w = split_patch(&deploy, &patch, Some(&before)).expect("split");
    assert_eq!(w.status, Some(json!({"replicas": 2})));
    let text =
        w.main.as_ref().and_then(|m| m["metadata"]["annotations"][JOB_STATE_ANNOTATION].as_str()).expect("state");
    let state: Value = serde_json::from_str(text).expect("json");
    assert_eq!(state, json!({"phase": "Running", "backoff": {"w-0": {"delay": 10}, "w-1": {"delay": 20}}}));
    let read = from_kube(&deploy, json!({"metadata": {"name": "d", "annotations": {JOB_STATE_ANNOTATION: text}}}), &[]);
    assert_eq!(read["status"]["ringleader"], state);
    // A CRD keeps it in its status, which preserves unknown fields.
    let pt = kind("kubeflow.org/v1", "PyTorchJob").expect("pt");
    let w = split_patch(&pt, &patch, None).expect("split");
    assert_eq!((w.status, w.main), (Some(patch["status"].clone()), None));
    // PodGroups have no status subresource: status goes with the object.
    let pg = kind("scheduling.volcano.sh/v1beta1", "PodGroup").expect("pg");
    let w = split_patch(&pg, &json!({"status": {"phase": "Running"}}), None).expect("split");
    assert_eq!((w.main, w.status), (Some(json!({"status": {"phase": "Running"}})), None));
}

#[test]
fn creates_name_the_scheduler_and_find_a_namespace_for_events() {
    let pod = for_create(
        &pod_kind(),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "3", "uid": "u"},
               "spec": {"schedulerName": "volcano", "containers": []}}),
        "ringleader",
    );
    assert_eq!(pod["spec"]["schedulerName"], "ringleader");
    assert!(pod["metadata"].get("resourceVersion").is_none() && pod["metadata"].get("uid").is_none());
    let ev = for_create(&kind("v1", "Event").expect("event"), json!({"metadata": {"name": "e"}}), "ringleader");
    assert_eq!(ev["metadata"]["namespace"], "default");
}

fn agent_node() -> Value {
    json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node",
           "metadata": {"name": "gpu-0", "labels": {"zone": "a"}},
           "spec": {"profile": "hgx-h100-8", "address": "10.0.0.2", "network": {"tor": "t1"}},
           "status": {"ready": true, "lastHeartbeat": 1_764_000_000.0, "unhealthyDevices": [3],
                      "networkUnhealthyDevices": [], "agentEndpoint": {"url": "https://10.0.0.2:10250", "caPem": "x"},
                      "nodeInfo": {"kubeletVersion": "ringleader/1"}}})
}

#[test]
fn an_agent_s_node_round_trips_through_a_core_node() {
    let kube = node_to_kube(&agent_node());
    assert_eq!(kube["apiVersion"], "v1");
    assert_eq!(kube["status"]["capacity"]["nvidia.com/gpu"], "8");
    assert_eq!(kube["status"]["allocatable"]["nvidia.com/gpu"], "7");
    assert_eq!(kube["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
    assert!(kube["status"]["addresses"]
        .as_array()
        .is_some_and(|a| a.contains(&json!({"type": "InternalIP", "address": "10.0.0.2"}))));
    assert_eq!(kube["metadata"]["annotations"][UNHEALTHY_DEVICES_ANNOTATION], "3");
    let back = node_from_kube(&kube, &[]);
    assert_eq!(back["spec"], agent_node()["spec"]);
    assert_eq!(back["status"]["ready"], true);
    assert_eq!(back["status"]["lastHeartbeat"], 1_764_000_000.0);
    assert_eq!(back["status"]["unhealthyDevices"], json!([3]));
    assert_eq!(back["metadata"]["labels"]["zone"], "a");
    // Written back unchanged, nothing needs writing.
    assert_eq!(node_diff(&kube, &node_to_kube(&back)), (None, None));
}

#[test]
fn a_node_change_is_written_as_its_difference() {
    let kube = node_to_kube(&agent_node());
    let mut view = node_from_kube(&kube, &[]);
    json_patch::merge(&mut view, &json!({"status": {"ready": false, "unhealthyDevices": []}}));
    let (main, status) = node_diff(&kube, &node_to_kube(&view));
    assert_eq!(main, Some(json!({"metadata": {"annotations": {UNHEALTHY_DEVICES_ANNOTATION: ""}}})));
    let status = status.expect("status");
    assert_eq!(status["status"]["allocatable"]["nvidia.com/gpu"], "8");
    assert_eq!(status["status"]["conditions"][0]["status"], "Unknown");
}

#[test]
fn device_figures_travel_in_an_annotation_and_are_withdrawn_with_it() {
    let figures = json!([{"id": 0, "utilizationPercent": 37.0, "memoryUsedBytes": 1_073_741_824u64,
                          "memoryTotalBytes": 85_520_809_984u64, "temperatureC": 34.0}]);
    let kube = node_to_kube(&agent_node());
    assert!(kube["metadata"]["annotations"].get(DEVICE_TELEMETRY_ANNOTATION).is_none(), "none read, none shown");
    assert!(node_from_kube(&kube, &[])["status"].get("deviceTelemetry").is_none());

    // The agent's telemetry patch, as the Kubernetes client applies it.
    let mut view = node_from_kube(&kube, &[]);
    json_patch::merge(&mut view, &json!({"status": {"deviceTelemetry": figures}}));
    let (main, status) = node_diff(&kube, &node_to_kube(&view));
    assert_eq!(status, None, "NodeStatus has no place for them");
    let main = main.expect("an annotation write");
    let text = main["metadata"]["annotations"][DEVICE_TELEMETRY_ANNOTATION].as_str().expect("JSON text");
    assert_eq!(serde_json::from_str::<Value>(text).ok(), Some(figures.clone()));

    // Read back (what the manager's metrics see), then withdrawn by a failed read.
    let with = node_to_kube(&view);
    let back = node_from_kube(&with, &[]);
    assert_eq!(back["status"]["deviceTelemetry"], figures);
    let mut failed = back.clone();
    json_patch::merge(&mut failed, &json!({"status": {"deviceTelemetry": null}}));
    let (main, _) = node_diff(&with, &node_to_kube(&failed));
    assert_eq!(main, Some(json!({"metadata": {"annotations": {DEVICE_TELEMETRY_ANNOTATION: null}}})));
    // Junk in the annotation is no figure.
    let mut junk = with.clone();
    junk["metadata"]["annotations"][DEVICE_TELEMETRY_ANNOTATION] = json!("{not json");
    assert!(node_from_kube(&junk, &[])["status"].get("deviceTelemetry").is_none());
}

#[test]
fn only_a_bare_heartbeat_takes_the_short_way() {
    assert_eq!(heartbeat(&json!({"status": {"ready": true, "lastHeartbeat": 5.0}})), Some(5.0));
    assert_eq!(heartbeat(&json!({"status": {"ready": false, "lastHeartbeat": 5.0}})), None);
    assert_eq!(heartbeat(&json!({"status": {"ready": true, "lastHeartbeat": 5.0, "unhealthyDevices": [1]}})), None);
    assert_eq!(heartbeat(&json!({"status": {"ready": true}, "spec": {}})), None);
    let p = heartbeat_status(true, 5.0);
    assert_eq!(p["status"]["conditions"][0]["lastHeartbeatTime"], "1970-01-01T00:00:05Z");
}

#[test]
fn a_node_no_agent_registered_is_read_from_what_the_cluster_publishes() {
    let kube = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "w1", "resourceVersion": "9", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "addresses": [{"type": "InternalIP", "address": "10.1.0.5"}],
                   "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-25T00:00:00Z"}]}});
    let view = node_from_kube(&kube, &[]);
    assert_eq!(view["spec"]["address"], "10.1.0.5");
    assert!(view["spec"]["profile"].is_string(), "{view}");
    assert_eq!(view["status"]["ready"], true);
    assert!(view["status"].get("lastHeartbeat").is_none(), "a kubelet's heartbeat is not ringleader's to judge");
    let cpu_only = node_from_kube(&json!({"metadata": {"name": "c1"}}), &[]);
    assert_eq!(cpu_only["spec"], json!({}));
}

#[test]
fn a_kubelet_node_as_read_from_a_list_is_modelled_and_marked_as_its_kubelet_s() {
    // What a list of kube-apiserver carries: no apiVersion and kind per item;
    // `from_kube` names ringleader's kind before reading it.
    let listed = json!({
        "metadata": {"name": "k001", "resourceVersion": "9", "labels": {"kubernetes.io/hostname": "k001"}},
        "status": {"capacity": {"huawei.com/Ascend910": "8"},
                   "addresses": [{"type": "InternalIP", "address": "127.0.5.1"}],
                   "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-25T00:00:00Z"}]}});
    let view = from_kube(&kind("ringleader.io/v1alpha1", "Node").expect("kind"), listed, &[]);
    assert!(view["spec"]["profile"].is_string(), "{view:#}");
    assert!(is_foreign_node(&view));
    assert!(view["metadata"]["annotations"].get(HARDWARE_PROBLEM_ANNOTATION).is_none(), "{view:#}");
    // Nothing modelled: it says why, and is still the kubelet's.
    let cpu_only = node_from_kube(&json!({"metadata": {"name": "c1"}}), &[]);
    assert!(is_foreign_node(&cpu_only));
    let why = cpu_only["metadata"]["annotations"][HARDWARE_PROBLEM_ANNOTATION].as_str().unwrap_or_default();
    assert!(!why.is_empty(), "{cpu_only:#}");
    // An agent registering on it: the view's marks do not reach the Node.
    let mut registered = cpu_only.clone();
    registered["spec"] = json!({"profile": "hgx-h100-8"});
    let written = node_to_kube(&registered);
    let annotations = written["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
    assert!(!annotations.contains_key(KUBELET_NODE_ANNOTATION), "{annotations:?}");
    assert!(!annotations.contains_key(HARDWARE_PROBLEM_ANNOTATION), "{annotations:?}");
    assert!(!is_foreign_node(&node_from_kube(&written, &[])));
    // An agent's Node is ringleader's, whatever its annotations claim.
    let mut kube = node_to_kube(&agent_node());
    kube["metadata"]["annotations"][KUBELET_NODE_ANNOTATION] = json!("true");
    assert!(!is_foreign_node(&node_from_kube(&kube, &[])));
}

#[test]
fn only_labels_or_a_registration_reach_a_node_no_agent_registered() {
    assert_eq!(foreign_node_write(&json!({"spec": {"profile": "hgx-h100-8"}})), Ok(None));
    let labels = json!({"metadata": {"labels": {"ringleader.io/resource-group": "g"}}});
    assert_eq!(foreign_node_write(&labels), Ok(Some(labels.clone())));
    for refused in [
        json!({"status": {"conditions": [{"type": "Valid", "status": "False"}]}}),
        json!({"status": {"ready": false}}),
        json!({"metadata": {"annotations": {"ringleader.io/hot-reset": "{}"}}}),
        json!({"metadata": {"labels": {"a": "b"}, "annotations": {}}}),
        json!("oops"),
    ] {
        let why = foreign_node_write(&refused).expect_err("refused");
        assert!(why.contains("kubelet") && why.contains(NODE_SPEC_ANNOTATION), "{why}");
    }
}

#[test]
fn an_annotation_set_to_null_is_sent_as_null_so_kubernetes_removes_it() {
    let patch = json!({"metadata": {"annotations": {"ringleader.io/evicted": null, "keep": "yes"}}});
    let w = split_patch(&pod_kind(), &patch, None).expect("split");
    assert_eq!(w.main, Some(json!({"metadata": {"annotations": {"ringleader.io/evicted": null, "keep": "yes"}}})));
    // And with the job state annotated into the same metadata first.
    let job = kind("apps/v1", "Deployment").expect("deployment");
    let patch = json!({"status": {"ringleader": {"phase": "Running"}}, "metadata": {"annotations": {"gone": null}}});
    let w = split_patch(&job, &patch, Some(&json!({"phase": "Pending"}))).expect("split");
    let annotations = &w.main.expect("a main patch")["metadata"]["annotations"];
    assert_eq!(annotations["gone"], Value::Null);
    assert!(annotations.as_object().is_some_and(|a| a.contains_key("gone")), "{annotations}");
    assert!(annotations[JOB_STATE_ANNOTATION].as_str().is_some_and(|s| s.contains("Running")), "{annotations}");
}

#[test]
fn server_side_apply_bookkeeping_is_not_kept() {
    let kube_pod = json!({
        "metadata": {"name": "p", "namespace": "default", "resourceVersion": "7", "managedFields": [
            {"manager": "ringleader", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:containers": {}}}},
        ]},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    });
    let read = from_kube(&pod_kind(), kube_pod, &[]);
    assert!(read["metadata"].get("managedFields").is_none(), "{read}");
    assert_eq!(read["metadata"]["resourceVersion"], "7");
    assert_eq!(read["spec"]["containers"][0]["image"], "x");
}
