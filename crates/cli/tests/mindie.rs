//! MindIE Service under `up`: the ms_controller reads the global rank table
//! at `GLOBAL_RANK_TABLE_FILE_PATH`, sees it change when a server instance
//! joins, and, with `restartPolicy: Always`, comes back after it exits and
//! reads the current table again.

mod common;

use common::{cluster_yaml, Plane};
use serde_json::Value;

/// The controller prints every version of the table it sees (one line
/// each) and exits with the code the test writes into a `stop` file in
/// its working directory; bounded at 600 s.
const CONTROLLER: &str = r#"
apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata:
  name: ms-controller
  labels: {framework: pytorch, app: mindie-ms-controller, jobID: ms-test, ring-controller.atlas: ascend-910b}
spec:
  successPolicy: AllWorkers
  replicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Always
      template:
        metadata:
          labels: {app: mindie-ms-controller, jobID: ms-test, ring-controller.atlas: ascend-910b}
        spec:
          containers:
          - name: ascend
            image: mindie:2.0.RC1
            command: ["/bin/sh", "-c"]
            args:
            - |
              last=""; i=0
              while [ $i -lt 6000 ]; do
                t=$(cat "$GLOBAL_RANK_TABLE_FILE_PATH" 2>/dev/null)
                if [ "$t" != "$last" ]; then echo "TABLE $t"; last="$t"; fi
                if [ -e stop ]; then code=$(cat stop); rm -f stop; echo "stopping"; exit "${code:-1}"; fi
                sleep 0.1; i=$((i+1))
              done
            env:
            - {name: GLOBAL_RANK_TABLE_FILE_PATH, value: "/user/serverid/devindex/config/..data/global_ranktable.json"}
"#;

const COORDINATOR: &str = r#"
apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata:
  name: ms-coordinator
  labels: {framework: pytorch, app: mindie-ms-coordinator, jobID: ms-test, ring-controller.atlas: ascend-910b}
spec:
  successPolicy: AllWorkers
  replicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Always
      template:
        metadata:
          labels: {app: mindie-ms-coordinator, jobID: ms-test, ring-controller.atlas: ascend-910b}
        spec:
          containers:
          - name: ascend
            image: mindie:2.0.RC1
            command: ["/bin/sh", "-c", "sleep 600"]
"#;

fn server(name: &str) -> String {
    format!(
        r#"
apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata:
  name: {name}
  labels: {{framework: pytorch, app: mindie-ms-server, jobID: ms-test, ring-controller.atlas: ascend-910b}}
spec:
  successPolicy: AllWorkers
  replicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        metadata:
          labels: {{app: mindie-ms-server, jobID: ms-test, ring-controller.atlas: ascend-910b}}
        spec:
          containers:
          - name: ascend
            image: mindie:2.0.RC1
            command: ["/bin/sh", "-c", "sleep 600"]
            resources:
              requests: {{huawei.com/Ascend910: 8}}
              limits: {{huawei.com/Ascend910: 8}}
"#
    )
}

/// The tables the controller printed, oldest first.
fn tables(log: &str) -> Vec<Value> {
    log.lines().filter_map(|l| l.strip_prefix("TABLE ")).filter_map(|t| serde_json::from_str(t).ok()).collect()
}

/// Chips per server pod of group 2 in a completed table.
fn servers(t: &Value) -> Option<Vec<usize>> {
    if t["status"] != "completed" {
        return None;
    }
    let groups = t["server_group_list"].as_array()?;
    let ids: Vec<&str> = groups.iter().filter_map(|g| g["group_id"].as_str()).collect();
    if ids != ["0", "1", "2"] || groups[0]["server_count"] != "1" || groups[1]["server_count"] != "1" {
        return None;
    }
    let list = groups[2]["server_list"].as_array()?;
    Some(list.iter().map(|s| s["device"].as_array().map_or(0, Vec::len)).collect())
}

fn pod_uid(p: &Plane, name: &str) -> Option<String> {
    p.get("pods", name).and_then(|x| x["metadata"]["uid"].as_str().map(str::to_string))
}

#[test]
fn mindie_controller_follows_the_global_rank_table_and_restarts() {
    let p = Plane::start(&cluster_yaml(41, &[("a2-1", "atlas-800t-a2"), ("a2-2", "atlas-800t-a2")]), &[]);
    for doc in [CONTROLLER, COORDINATOR, &server("ms-server-0")] {
        p.apply(doc).expect("apply");
    }
    let controller = "ms-controller-master-0";
    p.wait_for(60, "a complete table with one server", |p| {
        tables(&p.log(controller)).iter().any(|t| servers(t) == Some(vec![8]))
    });
    let pod = p.get("pods", controller).expect("controller pod");
    let from: Value = serde_json::from_str(
        pod["metadata"]["annotations"]["ringleader.io/config-files"].as_str().expect("config-files"),
    )
    .expect("json");
    assert_eq!(
        from["/user/serverid/devindex/config/..data/global_ranktable.json"],
        "mindie-global-ranktable-ms-test/global_ranktable.json"
    );
    let cm = p.get("configmaps", "mindie-global-ranktable-ms-test").expect("table ConfigMap");
    let first_version: u64 = cm["data"]["version"].as_str().and_then(|v| v.parse().ok()).expect("version");

    // A second server instance joins: the running controller sees both.
    p.apply(&server("ms-server-1")).expect("apply");
    p.wait_for(60, "the table with both servers", |p| {
        tables(&p.log(controller)).iter().any(|t| servers(t) == Some(vec![8, 8]))
    });
    let t = tables(&p.log(controller));
    let both = t.iter().find(|t| servers(t) == Some(vec![8, 8])).expect("both");
    let nodes: Vec<&str> = both["server_group_list"][2]["server_list"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|s| s["server_id"].as_str())
        .collect();
    assert_ne!(nodes[0], nodes[1], "one 8-chip server per node: {both}");
    let cm = p.get("configmaps", "mindie-global-ranktable-ms-test").expect("table ConfigMap");
    let version: u64 = cm["data"]["version"].as_str().and_then(|v| v.parse().ok()).expect("version");
    assert!(version > first_version, "{version} after {first_version}");

    // The same incarnation saw both versions.
    assert_eq!(pod_uid(&p, controller).as_deref(), pod["metadata"]["uid"].as_str());

    // The controller exits, failing and then cleanly; `restartPolicy: Always`
    // brings it back each time, and each new incarnation reads the current table.
    for code in ["1", "0"] {
        let now = p.get("pods", controller).expect("controller pod");
        let before = now["metadata"]["uid"].as_str().expect("uid").to_string();
        let node = now["spec"]["nodeName"].as_str().expect("bound").to_string();
        let sandbox = p.data_dir().join("nodes").join(&node).join("pods").join(format!("default_{controller}"));
        std::fs::write(sandbox.join("stop"), code).expect("stop file");
        p.wait_for(90, &format!("the controller restarted after exit {code}"), |p| {
            pod_uid(p, controller).is_some_and(|u| u != before)
                && tables(&p.log(controller)).first().is_some_and(|t| servers(t) == Some(vec![8, 8]))
        });
        let phase = p.phase("ascendjobs", "ms-controller");
        assert!(!matches!(phase.as_str(), "Failed" | "Completed"), "after exit {code}: {phase}");
    }
}
