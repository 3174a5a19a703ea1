//! Printer columns of the platform kinds (`platform.ringleader.io`): what a
//! person scanning `kubectl get trainingjobs,runs` wants first (state,
//! queue, framework, runs), the rest under `-o wide`.

use super::cells::{age, at, col, s, text_or, Column, NAME};
use serde_json::{json, Value};

const AGE: Column = col("AGE", "date", "", 0);

/// The columns of a platform kind (`None`: not one).
pub(super) fn columns(kind: &str) -> Option<Vec<Column>> {
    Some(match kind {
        "ResourceGroup" => vec![
            NAME,
            col("STATE", "string", "creating, create-failed, configuring, config-failed, running or deleting.", 0),
            col("ACCELERATOR", "string", "NVIDIA or Ascend.", 0),
            col("NODES", "integer", "Nodes that belong to the group.", 0),
            col("POLICIES", "string", "Scheduling policies.", 0),
            AGE,
            col("DISPLAY-NAME", "string", "The name shown to people.", 1),
        ],
        "Workspace" => vec![
            NAME,
            col("STATE", "string", "ready or failed.", 0),
            col("RESOURCE-GROUP", "string", "The resource group its queues come from.", 0),
            col("QUEUES", "string", "Queues its members may use.", 0),
            col("MEMBERS", "integer", "Members.", 0),
            AGE,
        ],
        "TrainingJob" => vec![
            NAME,
            col("FRAMEWORK", "string", "The training framework.", 0),
            col("QUEUE", "string", "The queue its runs go to.", 0),
            col("RUNS", "integer", "Runs made so far.", 0),
            col("LAST-RUN", "string", "The newest run.", 0),
            AGE,
            col("IMAGE", "string", "Container image.", 1),
            col("VISIBILITY", "string", "only-me or workspace.", 1),
            col("CATEGORY", "string", "AI Hub's category: debug, inference, training or special.", 1),
            col("PROJECT", "string", "The project it belongs to.", 1),
            col("EST-RUN-TIME", "string", "How long a run is expected to take.", 1),
        ],
        "Run" => vec![
            NAME,
            col("JOB", "string", "The TrainingJob it runs.", 0),
            col("STATE", "string", "The run's state.", 0),
            col("PODS", "integer", "Its pods.", 0),
            AGE,
            col("FRAMEWORK-JOB", "string", "The framework job it made (Kind/name).", 1),
            col("KILLED-BY", "string", "The VIP job that killed it.", 1),
        ],
        "Dataset" => vec![
            NAME,
            col("TYPE", "string", "text or image.", 0),
            col("VISIBILITY", "string", "only-me or workspace.", 0),
            col("SOURCE", "string", "Where the files are.", 0),
            AGE,
        ],
        "Image" => vec![
            NAME,
            col("IMAGE", "string", "Reference.", 0),
            col("VERSION", "string", "Version.", 0),
            col("PRESET", "boolean", "A preset image.", 0),
            AGE,
            col("FRAMEWORK", "string", "Framework it carries.", 1),
        ],
        "StorageMount" => vec![
            NAME,
            col("DIRECTORY", "string", "The node directory.", 0),
            col("MOUNTED", "string", "Nodes mounted of the nodes listed.", 0),
            AGE,
            col("SOURCE", "string", "What is mounted.", 1),
        ],
        "Script" => vec![NAME, col("TIMEOUT", "integer", "Seconds before a run is killed.", 0), AGE],
        "ScriptRun" => vec![
            NAME,
            col("SCRIPT", "string", "The script.", 0),
            col("STATE", "string", "running, succeeded or failed.", 0),
            col("NODES", "string", "Nodes finished of the nodes listed.", 0),
            AGE,
        ],
        "CheckRun" => vec![
            NAME,
            col("TYPE", "string", "server, network or collective.", 0),
            col("NODES", "string", "The nodes checked.", 0),
            col("PHASE", "string", "Pending, Running, Succeeded, Failed or Terminated.", 0),
            col("SUMMARY", "string", "What it found.", 0),
            AGE,
        ],
        "PlatformNode" => vec![
            NAME,
            col("SOURCE", "string", "new (made by the platform) or adopted.", 0),
            col("RESOURCE-GROUP", "string", "The group it is bound to.", 0),
            col("BINDING", "string", "bound, bind-failed, unbind-failed or unbound.", 0),
            col("REASON", "string", "Why a bind or unbind failed.", 0),
            AGE,
        ],
        "AuditRecord" => vec![
            NAME,
            col("TIME", "string", "When.", 0),
            col("USER", "string", "Who.", 0),
            col("VERB", "string", "What they did.", 0),
            col("RESOURCE", "string", "The kind.", 0),
            col("OBJECT", "string", "namespace/name (name alone when cluster-scoped).", 0),
            col("DETAIL", "string", "More about it.", 1),
        ],
        _ => return None,
    })
}

fn len(v: &Value, pointer: &str) -> usize {
    at(v, pointer).and_then(Value::as_array).map_or(0, Vec::len)
}

fn strings(v: &Value, pointer: &str) -> Value {
    let items: Vec<&str> =
        at(v, pointer).and_then(Value::as_array).map_or(Vec::new(), |a| a.iter().filter_map(Value::as_str).collect());
    text_or(&items.join(","), None)
}

/// The cells of a platform kind's row, in the order of [`columns`].
pub(super) fn cells(kind: &str, v: &Value, now: f64) -> Option<Vec<Value>> {
    let name = json!(s(v, "/metadata/name"));
    Some(match kind {
        "ResourceGroup" => vec![
            name,
            text_or(s(v, "/status/state"), None),
            json!(s(v, "/spec/accelerator")),
            json!(len(v, "/status/nodes")),
            if at(v, "/spec/policies").is_some() { strings(v, "/spec/policies") } else { json!("Gang") },
            age(v, now),
            text_or(s(v, "/spec/displayName"), None),
        ],
        "Workspace" => vec![
            name,
            text_or(s(v, "/status/state"), None),
            text_or(s(v, "/spec/resourceGroup"), None),
            strings(v, "/spec/queues"),
            json!(len(v, "/spec/members")),
            age(v, now),
        ],
        "TrainingJob" => vec![
            name,
            json!(s(v, "/spec/framework")),
            json!(s(v, "/spec/queue")),
            json!(at(v, "/status/runs").and_then(Value::as_u64).unwrap_or(0)),
            text_or(s(v, "/status/lastRun"), None),
            age(v, now),
            json!(s(v, "/spec/image")),
            text_or(s(v, "/spec/visibility"), Some("only-me")),
            text_or(s(v, "/spec/category"), None),
            text_or(s(v, "/spec/project"), None),
            text_or(
                &at(v, "/spec/estimatedRunTimeSeconds")
                    .and_then(Value::as_u64)
                    .map(|t| format!("{t}s"))
                    .unwrap_or_default(),
                None,
            ),
        ],
        "Run" => {
            let job = match (s(v, "/status/job/kind"), s(v, "/status/job/name")) {
                ("", _) | (_, "") => String::new(),
                (k, n) => format!("{k}/{n}"),
            };
            let stop_asked = at(v, "/spec/stop").and_then(Value::as_bool) == Some(true);
            vec![
                name,
                json!(s(v, "/spec/trainingJob")),
                text_or(s(v, "/status/state"), Some(if stop_asked { "stopping" } else { "creating" })),
                json!(len(v, "/status/pods")),
                age(v, now),
                text_or(&job, None),
                text_or(s(v, "/status/killedBy/job"), None),
            ]
        }
        "Dataset" => vec![
            name,
            json!(s(v, "/spec/type")),
            text_or(s(v, "/spec/visibility"), Some("only-me")),
            text_or(s(v, "/spec/source/path"), Some(s(v, "/spec/source/bucket"))),
            age(v, now),
        ],
        "Image" => vec![
            name,
            json!(s(v, "/spec/image")),
            text_or(s(v, "/spec/version"), None),
            json!(at(v, "/spec/preset").and_then(Value::as_bool).unwrap_or(false)),
            age(v, now),
            text_or(s(v, "/spec/framework"), None),
        ],
        "StorageMount" => {
            let mounted = at(v, "/status/nodes")
                .and_then(Value::as_array)
                .map_or(0, |n| n.iter().filter(|n| n.get("state").and_then(Value::as_str) == Some("mounted")).count());
            vec![
                name,
                json!(s(v, "/spec/nodeDirectory")),
                json!(format!("{mounted}/{}", len(v, "/spec/nodes"))),
                age(v, now),
                text_or(s(v, "/spec/source"), None),
            ]
        }
        "Script" => vec![
            name,
            json!(at(v, "/spec/timeoutSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(ringleader_api::kinds::platform::MIN_SCRIPT_TIMEOUT)),
            age(v, now),
        ],
        "ScriptRun" => {
            let done = at(v, "/status/nodes").and_then(Value::as_array).map_or(0, |n| {
                n.iter()
                    .filter(|n| matches!(n.get("state").and_then(Value::as_str), Some("succeeded" | "failed")))
                    .count()
            });
            vec![
                name,
                json!(s(v, "/spec/script")),
                text_or(s(v, "/status/state"), None),
                json!(format!("{done}/{}", len(v, "/spec/nodes"))),
                age(v, now),
            ]
        }
        "CheckRun" => {
            let nodes: Vec<&str> = at(v, "/spec/nodes")
                .and_then(Value::as_array)
                .map(|n| n.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            vec![
                name,
                json!(s(v, "/spec/type")),
                json!(nodes.join(",")),
                text_or(s(v, "/status/phase"), None),
                text_or(s(v, "/status/report/summary"), None),
                age(v, now),
            ]
        }
        "PlatformNode" => vec![
            name,
            json!(s(v, "/spec/source")),
            text_or(s(v, "/spec/resourceGroup"), Some(s(v, "/status/resourceGroup"))),
            text_or(s(v, "/status/binding"), None),
            text_or(s(v, "/status/reason"), None),
            age(v, now),
        ],
        "AuditRecord" => {
            let object = match (s(v, "/spec/namespace"), s(v, "/spec/name")) {
                ("", n) => n.to_string(),
                (ns, n) => format!("{ns}/{n}"),
            };
            vec![
                name,
                json!(s(v, "/spec/time")),
                json!(s(v, "/spec/user")),
                json!(s(v, "/spec/verb")),
                json!(s(v, "/spec/resource")),
                json!(object),
                text_or(s(v, "/spec/detail"), None),
            ]
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_platform_kind_has_as_many_cells_as_columns() {
        let kinds =
            ringleader_api::kinds::SUPPORTED.iter().filter(|(a, _)| a.starts_with("platform.")).map(|(_, k)| *k);
        for kind in kinds {
            let cols = columns(kind).unwrap_or_default();
            assert!(cols.len() >= 3, "{kind}");
            let bare = json!({"metadata": {"name": "x"}});
            assert_eq!(cells(kind, &bare, 0.0).map(|c| c.len()), Some(cols.len()), "{kind}");
        }
        let run = json!({"metadata": {"name": "j-r1"}, "spec": {"trainingJob": "j"},
            "status": {"state": "running", "pods": [{}, {}], "job": {"kind": "PyTorchJob", "name": "j-r1"}}});
        let c = cells("Run", &run, 0.0).unwrap_or_default();
        assert_eq!(c[1], "j");
        assert_eq!(c[2], "running");
        assert_eq!(c[3], 2);
        assert_eq!(c[5], "PyTorchJob/j-r1");
    }
}
