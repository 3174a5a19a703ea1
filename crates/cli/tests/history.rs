//! The embedded history under `ringleader up --history-interval 1`: a running
//! job's pod and its node gather points, read through
//! `/apis/ringleader.io/v1alpha1/history` and through `ringleader top
//! pods|nodes|jobs`; a second identity reads only what RBAC lets it list.

mod common;

use common::{cluster_yaml, Plane};
use serde_json::{json, Value};

const JOB: &str = "hist";
const POD: &str = "hist-master-0";
const POD_CPU: &str = "pod/default/hist-master-0/cpu";
const POD_MEMORY: &str = "pod/default/hist-master-0/memory";
const NODE_CPU: &str = "node/gpu-1/cpu";
const NODE_ALLOCATED: &str = "node/gpu-1/devices-allocated/nvidia.com/gpu";
const JOB_RUNNING: &str = "job/default/pytorchjobs.kubeflow.org/hist/pods-Running";

/// Sleeps for at most two minutes (the test ends it sooner).
fn job() -> String {
    format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: {JOB}, namespace: default}}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      restartPolicy: Never\n      template:\n        spec:\n          containers:\n          - name: pytorch\n            image: x\n            command: [\"/bin/sh\", \"-c\", \"sleep 120\"]\n            resources:\n              limits: {{nvidia.com/gpu: 2}}\n"
    )
}

fn history(p: &Plane, query: &[(&str, &str)]) -> Option<Value> {
    p.rt.block_on(p.client.history(query)).ok()
}

/// The points of one series of an answer.
fn points<'a>(answer: &'a Value, name: &str) -> Vec<&'a Value> {
    answer["series"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == name))
        .and_then(|s| s["points"].as_array())
        .map(|p| p.iter().collect())
        .unwrap_or_default()
}

fn series<'a>(answer: &'a Value, name: &str) -> Option<&'a Value> {
    answer["series"].as_array()?.iter().find(|s| s["name"] == name)
}

/// Status code and body of a GET of the history as `token`.
fn get_as(p: &Plane, token: &str, query: &str) -> (u16, Value) {
    let url = format!("{}/apis/ringleader.io/v1alpha1/history?{query}", p.client.base());
    p.rt.block_on(async {
        let r = p.client.http().get(&url).bearer_auth(token).send().await.expect("send");
        let code = r.status().as_u16();
        (code, r.json().await.unwrap_or(Value::Null))
    })
}

#[test]
fn history_gathers_points_and_is_read_with_the_callers_rights() {
    let p = Plane::start(&cluster_yaml(57, &[("gpu-1", "hgx-h100-8")]), &["--history-interval", "1"]);
    p.apply(&job()).expect("apply");
    let wanted = format!("{POD_CPU},{NODE_CPU},{NODE_ALLOCATED},{JOB_RUNNING}");
    p.wait_for(90, "two history points of the pod and its node", |p| {
        history(p, &[("series", &wanted)]).is_some_and(|h| {
            points(&h, POD_CPU).len() >= 2 && points(&h, NODE_CPU).len() >= 2 && points(&h, JOB_RUNNING).len() >= 2
        })
    });

    let h = history(&p, &[("series", &wanted)]).expect("history");
    assert_eq!(h["kind"], "History");
    assert_eq!(h["interval"], 1);
    let pod = series(&h, POD_CPU).expect("pod series");
    assert_eq!((pod["unit"].as_str(), pod["step"].as_u64()), (Some("cores"), Some(1)));
    let times: Vec<u64> = points(&h, POD_CPU).iter().filter_map(|p| p[0].as_u64()).collect();
    assert!(times.len() >= 2 && times.windows(2).all(|w| w[0] < w[1]), "times increase: {times:?}");
    assert!(points(&h, POD_CPU).iter().all(|p| p[1].as_f64().is_some_and(|v| v >= 0.0)), "{pod}");
    assert_eq!(series(&h, NODE_ALLOCATED).map(|s| s["unit"].clone()), Some(json!("devices")));
    assert_eq!(points(&h, NODE_ALLOCATED).last().and_then(|p| p[1].as_f64()), Some(2.0), "{h}");
    assert_eq!(points(&h, JOB_RUNNING).last().and_then(|p| p[1].as_f64()), Some(1.0), "{h}");

    // A prefix gathers a namespace's pods; `since` narrows the window.
    let pods = history(&p, &[("prefix", "pod/default/")]).expect("prefix");
    let names: Vec<&str> = pods["series"].as_array().into_iter().flatten().filter_map(|s| s["name"].as_str()).collect();
    assert!(names.contains(&POD_CPU) && names.contains(&POD_MEMORY), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("pod/default/")), "{names:?}");
    let last = times.last().copied().unwrap_or_default().to_string();
    let recent = history(&p, &[("series", POD_CPU), ("since", &last)]).expect("since");
    assert!(!points(&recent, POD_CPU).is_empty() && points(&recent, POD_CPU).len() < times.len() + 2, "{recent}");

    // Bad queries name their field.
    let admin = std::fs::read_to_string(p.data_dir().join("token")).expect("token").trim().to_string();
    let (code, body) = get_as(&p, &admin, "series=pod/default/x/gpu");
    assert_eq!(code, 400, "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.starts_with("series: ")), "{body}");

    // `top` reads the same history.
    let top = p.ctl(&["top", "pods", "-n", "default"]);
    let row = top.lines().find(|l| l.starts_with(POD)).unwrap_or_else(|| panic!("no row for the pod:\n{top}"));
    assert!(row.contains("Running") && row.contains("gpu-1") && row.contains("Mi"), "{top}");
    assert!(row.chars().any(|c| ('▁'..='█').contains(&c)), "a sparkline: {top}");
    let nodes = p.ctl(&["top", "nodes"]);
    let row = nodes.lines().find(|l| l.starts_with("gpu-1")).unwrap_or_else(|| panic!("no row for gpu-1:\n{nodes}"));
    assert!(row.contains("2/8") && row.contains(POD) && row.contains("Mi"), "{nodes}");
    let jobs = p.ctl(&["top", "jobs"]);
    let row = jobs.lines().find(|l| l.starts_with(JOB)).unwrap_or_else(|| panic!("no row for the job:\n{jobs}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells.get(1..4), Some(&["PyTorchJob", "0", "1"][..]), "{jobs}");

    // A second identity: nothing until RBAC lets it list pods of a namespace, and then only that one.
    let bob = p.ctl(&["token", "create", "--user", "bob"]).trim().to_string();
    for query in [format!("series={POD_CPU}"), "prefix=pod/default/".into(), format!("series={NODE_CPU}")] {
        let (code, body) = get_as(&p, &bob, &query);
        assert_eq!(code, 403, "{query}: {body}");
        assert!(body["message"].as_str().is_some_and(|m| m.contains("User \"bob\"")), "{body}");
    }
    let (code, body) = get_as(&p, &bob, "prefix=");
    assert_eq!((code, body["series"].as_array().map(Vec::len)), (200, Some(0)), "{body}");
    let binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: bob-view, namespace: other}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]\n";
    p.apply(binding).expect("role binding");
    let (code, body) = get_as(&p, &bob, "prefix=pod/other/");
    assert_eq!(code, 200, "{body}");
    let (code, body) = get_as(&p, &bob, "prefix=pod/");
    assert_eq!((code, body["series"].as_array().map(Vec::len)), (200, Some(0)), "default's pods are left out: {body}");
    assert_eq!(get_as(&p, &bob, &format!("series={POD_CPU}")).0, 403);
    assert_eq!(get_as(&p, &admin, &format!("series={POD_CPU}")).0, 200);
}
