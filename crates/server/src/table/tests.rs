use super::*;
use ringleader_registry::resources::{by_kind, find, EVENTS, NODES, PODS};
use serde_json::json;

// 2026-01-01T00:00:00Z
const NOW: f64 = 1_767_225_600.0;

fn names(rt: &ResourceType) -> Vec<&'static str> {
    columns(rt).iter().map(|c| c.name).collect()
}

fn pod(status: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "creationTimestamp": "2025-12-31T23:55:00Z"},
        "spec": {"containers": [{"name": "c", "image": "x"}], "nodeName": "n1"},
        "status": status,
    })
}

#[test]
fn pod_columns_are_kubectls() {
    assert_eq!(
        names(PODS),
        ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]
    );
    let wide: Vec<u32> = columns(PODS).iter().map(|c| c.priority).collect();
    assert_eq!(wide, [0, 0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(columns(PODS)[0].format, "name");
}

#[test]
fn running_pod_row() {
    let p = pod(json!({"phase": "Running", "podIP": "127.0.1.1", "containerStatuses": [
        {"name": "c", "ready": true, "restartCount": 0, "state": {"running": {"startedAt": "2025-12-31T23:55:00Z"}}}
    ]}));
    let c = cells(PODS, &p, NOW);
    assert_eq!(
        c,
        vec![
            json!("p"),
            json!("1/1"),
            json!("Running"),
            json!("0"),
            json!("5m"),
            json!("127.0.1.1"),
            json!("n1"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[test]
fn succeeded_pod_reads_completed() {
    let p = pod(json!({"phase": "Succeeded", "containerStatuses": [
        {"name": "c", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
    ]}));
    assert_eq!(pod_status(&p), "Completed");
    assert_eq!(cells(PODS, &p, NOW)[1], json!("0/1"));
    // Without container statuses too.
    assert_eq!(pod_status(&pod(json!({"phase": "Succeeded"}))), "Completed");
}

#[test]
fn pod_status_takes_the_containers_reason() {
    let waiting = pod(json!({"phase": "Pending", "containerStatuses": [
        {"name": "c", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
    ]}));
    assert_eq!(pod_status(&waiting), "ContainerCreating");
    let failed = pod(json!({"phase": "Failed", "containerStatuses": [
        {"name": "c", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}
    ]}));
    assert_eq!(pod_status(&failed), "Error");
    let no_reason = pod(json!({"phase": "Failed", "containerStatuses": [
        {"name": "c", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 3}}}
    ]}));
    assert_eq!(pod_status(&no_reason), "ExitCode:3");
    let agent = pod(json!({"phase": "Failed", "reason": "AgentRestarted"}));
    assert_eq!(pod_status(&agent), "AgentRestarted");
    assert_eq!(pod_status(&pod(json!({}))), "Pending");
}

#[test]
fn deleting_pod_reads_terminating() {
    let mut p = pod(json!({"phase": "Running"}));
    p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(pod_status(&p), "Terminating");
}

#[test]
fn restarts_say_how_long_ago() {
    let p = pod(json!({"phase": "Running", "containerStatuses": [
        {"name": "c", "ready": true, "restartCount": 2, "state": {"running": {}},
         "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2025-12-31T23:59:30Z"}}}
    ]}));
    assert_eq!(cells(PODS, &p, NOW)[3], json!("2 (30s ago)"));
}

#[test]
fn core_node_row() {
    let n = json!({
        "metadata": {"name": "n1", "creationTimestamp": "2025-12-30T00:00:00Z",
                     "labels": {"node-role.kubernetes.io/worker": ""}},
        "spec": {"unschedulable": true},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "127.0.1.1"}],
            "nodeInfo": {"kubeletVersion": "v0.1.0", "osImage": "Linux", "kernelVersion": "6.1",
                         "containerRuntimeVersion": "ringleader-process://0.1.0"}
        }
    });
    let rt = by_kind("v1", "Node").copied().unwrap_or(*NODES);
    let rt = ResourceType { api_version: "v1", kind: "Node", ..rt };
    assert_eq!(names(&rt)[..5], ["Name", "Status", "Roles", "Age", "Version"]);
    let c = cells(&rt, &n, NOW);
    assert_eq!(c[1], json!("Ready,SchedulingDisabled"));
    assert_eq!(c[2], json!("worker"));
    assert_eq!(c[3], json!("2d"));
    assert_eq!(c[4], json!("v0.1.0"));
    assert_eq!(c[5], json!("127.0.1.1"));
    assert_eq!(c[6], json!("<none>"));
    assert_eq!(c.len(), columns(&rt).len());
}

#[test]
fn ringleader_node_row_is_what_get_nodes_showed() {
    assert_eq!(names(NODES), ["Name", "Status", "Profile", "Address", "Age", "Unhealthy", "Network-Unhealthy"]);
    let n = json!({"metadata": {"name": "n1", "creationTimestamp": "2025-12-31T23:00:00Z"},
        "spec": {"profile": "ascend-910b-8", "address": "127.0.1.1", "stopped": true},
        "status": {"ready": true, "unhealthyDevices": [1, 3]}});
    let c = cells(NODES, &n, NOW);
    assert_eq!(c[1], json!("Stopped"));
    assert_eq!(c[4], json!("60m"));
    assert_eq!(c[5], json!("1,3"));
    assert_eq!(c[6], json!("<none>"));
}

#[test]
fn event_row() {
    assert_eq!(names(EVENTS)[..4], ["Last Seen", "Type", "Reason", "Object"]);
    let e = json!({"metadata": {"name": "e1"}, "type": "Warning", "reason": "FailedScheduling",
        "involvedObject": {"kind": "Pod", "name": "p"}, "message": " no nodes \n",
        "firstTimestamp": "2025-12-31T23:00:00Z", "lastTimestamp": "2025-12-31T23:59:00Z", "count": 4,
        "source": {"component": "ringleader-scheduler"}});
    let c = cells(EVENTS, &e, NOW);
    assert_eq!(
        c,
        vec![
            json!("60s"),
            json!("Warning"),
            json!("FailedScheduling"),
            json!("pod/p"),
            json!(""),
            json!("ringleader-scheduler"),
            json!("no nodes"),
            json!("60m"),
            json!(4),
            json!("e1")
        ]
    );
}

#[test]
fn configmap_and_priorityclass_rows() {
    let cm = find("cm").copied().unwrap_or(*PODS);
    assert_eq!(names(&cm), ["Name", "Data", "Age"]);
    let c = cells(&cm, &json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}), NOW);
    assert_eq!(c, vec![json!("c"), json!(2), json!("<unknown>")]);
    let pc = find("pc").copied().unwrap_or(*PODS);
    assert_eq!(names(&pc), ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]);
    let c = cells(&pc, &json!({"metadata": {"name": "high"}, "value": 1000}), NOW);
    assert_eq!(c[1..3], [json!(1000), json!(false)]);
    assert_eq!(c[4], json!("PreemptLowerPriority"));
}

#[test]
fn batch_job_row() {
    let job = find("jobs").copied().unwrap_or(*PODS);
    assert_eq!(names(&job)[..5], ["Name", "Status", "Completions", "Duration", "Age"]);
    let j = json!({"metadata": {"name": "j", "creationTimestamp": "2025-12-31T23:50:00Z"},
        "spec": {"completions": 3, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {"succeeded": 3, "startTime": "2025-12-31T23:50:00Z", "completionTime": "2025-12-31T23:51:05Z",
                   "conditions": [{"type": "Complete", "status": "True"}]}});
    let c = cells(&job, &j, NOW);
    assert_eq!(c[..5], [json!("j"), json!("Complete"), json!("3/3"), json!("65s"), json!("10m")]);
    assert_eq!(c[5..7], [json!("c"), json!("busybox")]);
    let running = json!({"metadata": {"name": "j"}, "status": {"ringleader": {"phase": "Running"}}});
    assert_eq!(cells(&job, &running, NOW)[1], json!("Running"));
    // What ringleader's controller writes: Kubeflow-style conditions and its own counts.
    let done = json!({"metadata": {"name": "j"}, "spec": {"completions": 2},
        "status": {"conditions": [{"type": "Succeeded", "status": "True"}],
                   "ringleader": {"phase": "Completed", "replica_statuses": {"worker": {"succeeded": 2, "running": 0}}}}});
    assert_eq!(cells(&job, &done, NOW)[1..3], [json!("Complete"), json!("2/2")]);
}

#[test]
fn deployment_row_counts_running_pods() {
    let d = find("deploy").copied().unwrap_or(*PODS);
    assert_eq!(names(&d)[..5], ["Name", "Ready", "Up-to-date", "Available", "Age"]);
    let v = json!({"metadata": {"name": "web"}, "spec": {"replicas": 3},
        "status": {"ringleader": {"replica_statuses": {"web": {"running": 2, "pending": 1}}}}});
    assert_eq!(cells(&d, &v, NOW)[1..4], [json!("2/3"), json!(2), json!(2)]);
}

#[test]
fn crd_job_kinds_print_their_crd_columns() {
    let pt = find("pytorchjob").copied().unwrap_or(*PODS);
    assert_eq!(names(&pt), ["Name", "State", "Age"]);
    let j = json!({"metadata": {"name": "j"}, "status": {"conditions": [{"type": "Created"}, {"type": "Running"}]}});
    assert_eq!(cells(&pt, &j, NOW)[1], json!("Running"));
    let rl = json!({"metadata": {"name": "j"}, "status": {"ringleader": {"phase": "Pending"}}});
    assert_eq!(cells(&pt, &rl, NOW)[1], json!("Pending"));

    let mpi = find("mpijob").copied().unwrap_or(*PODS);
    assert_eq!(names(&mpi), ["Name", "Age"]);

    let vc = find("vcjob").copied().unwrap_or(*PODS);
    assert_eq!(names(&vc), ["Name", "STATUS", "minAvailable", "RUNNINGS", "AGE", "QUEUE"]);
    assert_eq!(columns(&vc)[4].kind, "date");
    let j = json!({"metadata": {"name": "v"}, "spec": {"minAvailable": 2, "queue": "q1"},
        "status": {"state": {"phase": "Running"}, "running": 2}});
    assert_eq!(
        cells(&vc, &j, NOW),
        vec![json!("v"), json!("Running"), json!(2), json!(2), json!("<unknown>"), json!("q1")]
    );

    let pg = find("pg").copied().unwrap_or(*PODS);
    assert_eq!(names(&pg), ["Name", "STATUS", "minMember", "RUNNINGS", "AGE", "QUEUE"]);
    let q = find("queue").copied().unwrap_or(*PODS);
    assert_eq!(names(&q), ["Name", "PARENT"]);
    assert_eq!(cells(&q, &json!({"metadata": {"name": "root"}}), NOW), vec![json!("root"), Value::Null]);
}

#[test]
fn every_kind_has_as_many_cells_as_columns() {
    let empty = json!({"metadata": {"name": "x"}});
    for rt in ringleader_registry::resources::RESOURCES {
        assert_eq!(cells(rt, &empty, NOW).len(), columns(rt).len(), "{} {}", rt.api_version, rt.kind);
    }
}

#[test]
fn accept_header_selects_the_table_version() {
    let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    assert_eq!(requested_version(kubectl), Some("v1"));
    assert_eq!(requested_version("application/json;as=Table;v=v1beta1;g=meta.k8s.io"), Some("v1beta1"));
    assert_eq!(requested_version("application/json"), None);
    assert_eq!(requested_version("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"), None);
}

#[test]
fn tables_carry_list_metadata_and_the_requested_object() {
    let p = pod(json!({"phase": "Running"}));
    let meta = json!({"resourceVersion": "7", "continue": "abc"});
    let t = table_for(PODS, vec![p.clone()], meta, IncludeObject::Metadata, "v1", NOW);
    assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")));
    assert_eq!(t["metadata"]["continue"], "abc");
    assert_eq!(t["columnDefinitions"][2]["name"], "Status");
    assert_eq!(t["columnDefinitions"][5]["priority"], 1);
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(t["rows"][0]["object"]["metadata"]["namespace"], "ns");
    assert!(t["rows"][0]["object"].get("spec").is_none());
    let t = table_for(PODS, vec![p.clone()], json!({}), IncludeObject::None, "v1", NOW);
    assert!(t["rows"][0].get("object").is_none());
    let t = table_for(PODS, vec![p.clone()], json!({}), IncludeObject::Object, "v1beta1", NOW);
    assert_eq!(t["rows"][0]["object"]["spec"]["nodeName"], "n1");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert!(IncludeObject::parse(Some("Everything")).is_err());
    assert_eq!(IncludeObject::parse(None), Ok(IncludeObject::Metadata));
}

#[test]
fn ages_read_as_kubectl_prints_them() {
    assert_eq!(human_duration(45.0), "45s");
    assert_eq!(human_duration(200.0), "3m20s");
    assert_eq!(human_duration(25.0 * 60.0), "25m");
    assert_eq!(human_duration(5.0 * 3600.0 + 12.0 * 60.0), "5h12m");
    assert_eq!(human_duration(3.0 * 86400.0 + 4.0 * 3600.0), "3d4h");
    assert_eq!(since("", NOW), "<unknown>");
}
