//! Platform rules of seeds 003 and 004 live under `ringleader up`, each run
//! through the API as its users would (an admin, members and a workspace
//! admin with tokens of their own): an "only me" TrainingJob or Dataset is
//! its creator's (and the admins'), its runs too; a VIP `kill` run evicts
//! its victims even when they hold the queue's quota, and keeps its machine
//! across a restart of the control plane; a queue a workspace uses cannot be
//! deleted; a stopped run's pods keep their logs; `top jobs` forgets deleted
//! jobs.

mod common;

use common::Plane;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn ok(plane: &Plane, who: Option<&Path>, args: &[&str]) -> String {
    let (success, out) = plane.ringleader_as(who, args);
    assert!(success, "ringleader {args:?} failed:\n{out}");
    out
}

/// The command must be refused with a 403 worded as kube-apiserver's.
fn forbidden(plane: &Plane, who: Option<&Path>, args: &[&str]) -> String {
    let (success, out) = plane.ringleader_as(who, args);
    assert!(!success && out.contains("is forbidden: User"), "ringleader {args:?} must be forbidden:\n{out}");
    out
}

fn token(plane: &Plane, user: &str) -> PathBuf {
    let file = plane.dir.path().join(format!("{user}.kubeconfig"));
    ok(plane, None, &["token", "create", "--user", user, "--kubeconfig-out", &file.to_string_lossy()]);
    file
}

fn apply_as(plane: &Plane, who: Option<&Path>, name: &str, yaml: &str) -> (bool, String) {
    let file = plane.dir.path().join(name);
    std::fs::write(&file, yaml).expect("write");
    plane.ringleader_as(who, &["apply", "-f", &file.to_string_lossy()])
}

fn apply(plane: &Plane, who: Option<&Path>, name: &str, yaml: &str) {
    let (success, out) = apply_as(plane, who, name, yaml);
    assert!(success, "apply {name} failed:\n{out}");
}

fn get_json(plane: &Plane, who: Option<&Path>, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend(["-o", "json"]);
    serde_json::from_str(&plane.ringleader_as(who, &all).1).unwrap_or(Value::Null)
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

fn wait(secs: u64, what: &str, mut done: impl FnMut() -> bool, context: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{what}: not within {secs} s\n{}", context());
}

fn run_state(plane: &Plane, run: &str) -> String {
    get_json(plane, None, &["runs", run, "-n", "ws-a"])["status"]["state"].as_str().unwrap_or("").to_string()
}

/// A resource group of `nodes`, queue `team-a` with `gpus` GPUs of quota, and
/// workspace `ws-a` of alice and carol (members) and dave (its admin).
fn platform(plane: &Plane, nodes: &str, gpus: u32) -> (PathBuf, PathBuf, PathBuf) {
    apply(
        plane,
        None,
        "admin.yaml",
        &format!(
            "apiVersion: platform.ringleader.io/v1alpha1\nkind: ResourceGroup\nmetadata: {{name: rg-gpu}}\n\
             spec: {{accelerator: NVIDIA, policies: [Gang], nodes: {{names: [{nodes}]}}}}\n---\n\
             apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: team-a}}\n\
             spec: {{weight: 1, resourceGroup: rg-gpu, quota: {{instanceSpec: {{gpu: {gpus}, cpu: \"16\", memory: 64Gi}}, instanceCount: 1}}}}\n---\n\
             apiVersion: platform.ringleader.io/v1alpha1\nkind: Workspace\nmetadata: {{name: ws-a}}\n\
             spec: {{resourceGroup: rg-gpu, queues: [team-a], members: [{{user: alice, role: member}}, {{user: carol, role: member}}, {{user: dave, role: admin}}]}}\n"
        ),
    );
    let (alice, carol, dave) = (token(plane, "alice"), token(plane, "carol"), token(plane, "dave"));
    wait(
        30,
        "the resource group running, the workspace's bindings",
        || {
            let rg = get_json(plane, None, &["resourcegroups", "rg-gpu"]);
            rg["status"]["state"] == "running"
                && plane.ringleader_as(Some(&alice), &["get", "trainingjobs", "-n", "ws-a"]).0
                && plane.ringleader_as(Some(&dave), &["get", "trainingjobs", "-n", "ws-a"]).0
        },
        || format!("{}", get_json(plane, None, &["resourcegroups", "rg-gpu"])),
    );
    (alice, carol, dave)
}

fn training_job(name: &str, extra: &str, command: &str, gpus: u32) -> String {
    format!(
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: TrainingJob\nmetadata: {{name: {name}, namespace: ws-a}}\n\
         spec:\n  queue: team-a\n  image: pytorch/pytorch:2.4.0\n  framework: PyTorchDDP\n\
         \x20 command: \"/bin/sh -c '{command}'\"\n  roles: [{{name: Worker, count: 1, resources: {{gpu: {gpus}}}}}]\n{extra}"
    )
}

const CREATOR: &str = "platform.ringleader.io/creator";

#[test]
fn only_me_jobs_and_datasets_are_their_creators_and_the_admins() {
    let plane = Plane::start(&common::cluster_yaml(221, &[("g1", "hgx-h100-8")]), &[]);
    let (alice, carol, dave) = platform(&plane, "g1", 8);

    // Alice saves a job and a dataset without saying their visibility (only
    // me, the default), claiming in the body that carol made them, and a
    // job the workspace may see.
    let secret = training_job("secret", "", "echo secret; sleep 600", 1).replace(
        "metadata: {name: secret, namespace: ws-a}",
        "metadata: {name: secret, namespace: ws-a, annotations: {platform.ringleader.io/creator: carol}}",
    );
    let dataset =
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: Dataset\nmetadata: {name: private, namespace: ws-a}\n\
                   spec: {type: image, source: {path: /tmp}}\n";
    apply(&plane, Some(&alice), "secret.yaml", &format!("{secret}---\n{dataset}"));
    apply(&plane, Some(&alice), "shared.yaml", &training_job("shared", "  visibility: workspace\n", "sleep 600", 1));
    let job = get_json(&plane, Some(&alice), &["trainingjobs", "secret", "-n", "ws-a"]);
    assert_eq!(job["metadata"]["annotations"][CREATOR], "alice", "the server records who created it: {job}");
    ok(&plane, Some(&alice), &["run", "secret", "-n", "ws-a"]);

    // Carol, a member of the same workspace: refused the job, its run and
    // the dataset; lists leave them out.
    forbidden(&plane, Some(&carol), &["get", "trainingjob", "secret", "-n", "ws-a"]);
    forbidden(&plane, Some(&carol), &["get", "dataset", "private", "-n", "ws-a"]);
    forbidden(&plane, Some(&carol), &["get", "run", "secret-r1", "-n", "ws-a"]);
    forbidden(&plane, Some(&carol), &["run", "secret", "-n", "ws-a"]);
    forbidden(&plane, Some(&carol), &["stop", "secret-r1", "-n", "ws-a"]);
    forbidden(&plane, Some(&carol), &["delete", "dataset", "private", "-n", "ws-a"]);
    forbidden(&plane, Some(&carol), &["delete", "trainingjob", "secret", "-n", "ws-a"]);
    let (refused, out) = apply_as(&plane, Some(&carol), "edit.yaml", &secret.replace("echo secret", "echo mine"));
    assert!(!refused && out.contains("forbidden"), "carol may not update alice's only-me job:\n{out}");
    // A Run of the job made by hand, not through `ringleader run`.
    let (refused, out) = apply_as(
        &plane,
        Some(&carol),
        "run.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: Run\nmetadata: {name: secret-r9, namespace: ws-a}\nspec: {trainingJob: secret}\n",
    );
    assert!(!refused && out.contains("forbidden"), "carol may not run alice's only-me job:\n{out}");
    let jobs = names(&get_json(&plane, Some(&carol), &["trainingjobs", "-n", "ws-a"]));
    assert_eq!(jobs, ["shared"], "carol's list leaves the only-me job out");
    assert!(names(&get_json(&plane, Some(&carol), &["datasets", "-n", "ws-a"])).is_empty());
    assert!(names(&get_json(&plane, Some(&carol), &["runs", "-n", "ws-a"])).is_empty());
    // A watch leaves it out too.
    let carol_token = ok(&plane, None, &["token", "create", "--user", "carol"]).trim().to_string();
    let url = format!(
        "{}/apis/platform.ringleader.io/v1alpha1/namespaces/ws-a/trainingjobs?watch=true&timeoutSeconds=1",
        plane.client.base()
    );
    let watched = plane.rt.block_on(async {
        let r = plane.client.http().get(&url).bearer_auth(&carol_token).send().await.expect("watch");
        r.text().await.unwrap_or_default()
    });
    assert!(watched.contains("\"shared\"") && !watched.contains("\"secret\""), "carol's watch: {watched}");
    // Nor may she take it over by rewriting who made it.
    let (_, out) = plane.ringleader_as(
        Some(&carol),
        &["annotate", "trainingjob", "shared", "-n", "ws-a", "--overwrite", &format!("{CREATOR}=carol")],
    );
    let shared = get_json(&plane, Some(&alice), &["trainingjobs", "shared", "-n", "ws-a"]);
    assert_eq!(shared["metadata"]["annotations"][CREATOR], "alice", "the creator cannot be rewritten: {out}");

    // The creator, the workspace's admin and the cluster admin see and act on them.
    for who in [Some(alice.as_path()), Some(dave.as_path()), None] {
        let jobs = names(&get_json(&plane, who, &["trainingjobs", "-n", "ws-a"]));
        assert_eq!(jobs, ["secret", "shared"], "{who:?}");
        assert_eq!(names(&get_json(&plane, who, &["runs", "-n", "ws-a"])), ["secret-r1"], "{who:?}");
        ok(&plane, who, &["get", "dataset", "private", "-n", "ws-a"]);
    }
    ok(&plane, Some(&dave), &["stop", "secret-r1", "-n", "ws-a"]);
    ok(&plane, Some(&alice), &["delete", "dataset", "private", "-n", "ws-a"]);
    // Made visible to the workspace, the job is carol's to read; its
    // creator stays the server's record, which even she may not rewrite.
    let open = secret.replace("sleep 600'\"\n", "sleep 600'\"\n  visibility: workspace\n");
    let (rewritten, out) = apply_as(&plane, Some(&alice), "claim.yaml", &open);
    assert!(!rewritten && out.contains(CREATOR) && out.contains("forbidden"), "{out}");
    apply(
        &plane,
        Some(&alice),
        "open.yaml",
        &open.replace(", annotations: {platform.ringleader.io/creator: carol}", ""),
    );
    ok(&plane, Some(&carol), &["get", "trainingjob", "secret", "-n", "ws-a"]);
}

#[test]
fn a_vip_kill_run_evicts_victims_holding_the_quota_and_keeps_its_machine_across_a_restart() {
    let mut plane = Plane::start(&common::cluster_yaml(222, &[("g1", "hgx-h100-8")]), &[]);
    let (alice, _, _) = platform(&plane, "g1", 8);
    // The victim holds the whole queue's quota, on g1.
    apply(&plane, Some(&alice), "long.yaml", &training_job("long", "", "sleep 600", 8));
    ok(&plane, Some(&alice), &["run", "long", "-n", "ws-a"]);
    wait(60, "long-r1 running", || run_state(&plane, "long-r1") == "running", String::new);
    apply(
        &plane,
        Some(&alice),
        "urgent.yaml",
        &training_job("urgent", "  vip: {nodes: [g1], onBusy: kill}\n", "sleep 600", 8),
    );
    ok(&plane, Some(&alice), &["run", "urgent", "-n", "ws-a"]);
    let started = Instant::now();
    wait(
        60,
        "the VIP run running on g1, its victim evicted",
        || run_state(&plane, "urgent-r1") == "running",
        || {
            format!(
                "{}\n{}",
                get_json(&plane, None, &["runs", "-n", "ws-a"]),
                ok(&plane, None, &["get", "events", "-n", "ws-a"])
            )
        },
    );
    eprintln!("VIP run running {:.1} s after `run`", started.elapsed().as_secs_f64());
    let on_g1 = |plane: &Plane| -> Vec<String> {
        let pods = get_json(plane, None, &["pods", "-n", "ws-a"]);
        pods["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["spec"]["nodeName"] == "g1" && p["metadata"]["deletionTimestamp"].is_null())
            .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(on_g1(&plane), ["urgent-r1-worker-0"]);

    // The control plane restarts on the same data dir: the VIP run keeps g1.
    plane.kill();
    let restarted = Instant::now();
    plane.spawn();
    eprintln!("`up` serving again {:.1} s after the kill", restarted.elapsed().as_secs_f64());
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(run_state(&plane, "urgent-r1"), "running");
    assert_eq!(on_g1(&plane), ["urgent-r1-worker-0"], "nothing took the VIP run's machine back");
    let victim = get_json(&plane, None, &["pods", "long-r1-worker-0", "-n", "ws-a"]);
    assert!(
        victim["status"]["phase"] == "Pending" && victim["spec"]["nodeName"].as_str().unwrap_or("").is_empty(),
        "the victim waits, unplaced, while the VIP run holds the machine and the quota: {victim}"
    );
    let killed = &get_json(&plane, None, &["runs", "long-r1", "-n", "ws-a"])["status"]["killedBy"];
    assert_eq!(killed["job"], "ws-a/urgent-r1", "the victim's record names the VIP run");
}

#[test]
fn a_workspace_admin_edits_its_people_not_its_group_and_a_queue_it_uses_cannot_be_deleted() {
    let plane = Plane::start(&common::cluster_yaml(223, &[("g1", "hgx-h100-8")]), &[]);
    let (alice, _, dave) = platform(&plane, "g1", 8);
    let ws = |spec: &str| {
        format!(
            "apiVersion: platform.ringleader.io/v1alpha1\nkind: Workspace\nmetadata: {{name: ws-a}}\nspec: {{{spec}, \
             members: [{{user: alice, role: member}}, {{user: carol, role: member}}, {{user: dave, role: admin}}, {{user: erin, role: member}}]}}\n"
        )
    };
    // Dave, its admin, keeps its people and its words ...
    apply(
        &plane,
        Some(&dave),
        "ws-dave.yaml",
        &ws("resourceGroup: rg-gpu, queues: [team-a], description: dave's team"),
    );
    let saved = get_json(&plane, None, &["workspaces", "ws-a"]);
    assert_eq!(
        (saved["spec"]["description"].as_str(), saved["spec"]["members"][3]["user"].as_str()),
        (Some("dave's team"), Some("erin"))
    );
    // ... not what it is made of: another group, another queue (403 naming the field).
    for (file, spec, field) in [
        ("ws-group.yaml", "resourceGroup: rg-other, queues: [team-a]", "spec.resourceGroup"),
        ("ws-queues.yaml", "resourceGroup: rg-gpu, queues: [team-a, team-b]", "spec.queues"),
    ] {
        let (done, out) = apply_as(&plane, Some(&dave), file, &ws(spec));
        assert!(
            !done && out.contains("is forbidden: User") && out.contains(field) && out.contains("platform admin"),
            "{out}"
        );
    }
    // A member may not edit it at all.
    let (done, out) = apply_as(&plane, Some(&alice), "ws-alice.yaml", &ws("resourceGroup: rg-gpu, queues: [team-a]"));
    assert!(!done && out.contains("is forbidden: User \"alice\""), "{out}");
    let kept = get_json(&plane, None, &["workspaces", "ws-a"]);
    assert_eq!(
        (kept["spec"]["resourceGroup"].as_str(), kept["spec"]["queues"].clone()),
        (Some("rg-gpu"), json!(["team-a"]))
    );

    let (deleted, out) = plane.ringleader_as(None, &["delete", "queue", "team-a"]);
    assert!(!deleted && out.contains("ws-a") && out.contains("team-a"), "refused, naming the workspace:\n{out}");
    assert!(get_json(&plane, None, &["queues", "team-a"])["metadata"]["name"] == "team-a", "the queue is kept");
    // Taken off the workspace, it goes.
    apply(
        &plane,
        None,
        "ws.yaml",
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: Workspace\nmetadata: {name: ws-a}\n\
         spec: {resourceGroup: rg-gpu, queues: [], members: [{user: alice, role: member}]}\n",
    );
    ok(&plane, None, &["delete", "queue", "team-a"]);
}

#[test]
fn a_stopped_runs_pods_keep_their_logs() {
    let plane = Plane::start(&common::cluster_yaml(224, &[("g1", "hgx-h100-8")]), &[]);
    let (alice, _, _) = platform(&plane, "g1", 8);
    apply(&plane, Some(&alice), "job.yaml", &training_job("talk", "", "echo hello from rank $RANK; sleep 600", 1));
    ok(&plane, Some(&alice), &["run", "talk", "-n", "ws-a"]);
    let pod = "talk-r1-worker-0";
    let log = || plane.ringleader_as(Some(&alice), &["logs", pod, "-n", "ws-a"]).1;
    wait(60, "the pod's log", || log().contains("hello from rank"), log);
    ok(&plane, Some(&alice), &["stop", "talk-r1", "-n", "ws-a"]);
    wait(
        30,
        "talk-r1 stopped, its pod gone",
        || {
            run_state(&plane, "talk-r1") == "stopped"
                && !plane.ringleader_as(None, &["get", "pod", pod, "-n", "ws-a"]).0
        },
        || format!("{}", get_json(&plane, None, &["runs", "talk-r1", "-n", "ws-a"])),
    );
    let kept = ok(&plane, Some(&alice), &["logs", pod, "-n", "ws-a"]);
    assert!(kept.contains("hello from rank"), "the stopped run's log is kept:\n{kept}");
    // A pod that never was has none.
    let (found, out) = plane.ringleader_as(Some(&alice), &["logs", "talk-r7-worker-0", "-n", "ws-a"]);
    assert!(!found && out.contains("not found"), "{out}");
}

#[test]
fn top_jobs_forgets_deleted_jobs() {
    let plane = Plane::start(&common::cluster_yaml(225, &[("g1", "hgx-h100-8")]), &["--history-interval", "1"]);
    let job = |name: &str| {
        format!(
            "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      restartPolicy: Never\n      template:\n        spec:\n          containers:\n          - name: pytorch\n            image: x\n            command: [\"/bin/sh\", \"-c\", \"sleep 120\"]\n            resources:\n              limits: {{nvidia.com/gpu: 1}}\n"
        )
    };
    plane.apply(&format!("{}---\n{}", job("gone"), job("kept"))).expect("apply");
    let listed = |name: &str| plane.ctl(&["top", "jobs"]).lines().any(|l| l.split_whitespace().next() == Some(name));
    wait(60, "both jobs in top jobs", || listed("gone") && listed("kept"), || plane.ctl(&["top", "jobs"]));
    plane.ctl(&["delete", "pytorchjob", "gone"]);
    wait(10, "the deleted job out of top jobs", || !listed("gone"), || plane.ctl(&["top", "jobs"]));
    assert!(listed("kept"), "{}", plane.ctl(&["top", "jobs"]));
}

#[test]
fn ai_hub_settings_of_a_training_job_reach_its_pods() {
    let plane = Plane::start(&common::cluster_yaml(226, &[("g1", "hgx-h100-8")]), &[]);
    let (alice, _, _) = platform(&plane, "g1", 8);
    // A value AI Hub does not have is refused at apply, naming the field.
    let (applied, out) =
        apply_as(&plane, Some(&alice), "bad.yaml", &training_job("bad", "  category: fun\n", "sleep 1", 1));
    assert!(!applied && out.contains("spec.category") && out.contains("fun") && out.contains("debug"), "{out}");
    let (applied, out) =
        apply_as(&plane, Some(&alice), "bad.yaml", &training_job("bad", "  sharedMemoryGB: 0\n", "sleep 1", 1));
    assert!(!applied && out.contains("spec.sharedMemoryGB"), "{out}");

    let settings =
        "  category: training\n  project: 视觉大模型\n  estimatedRunTimeSeconds: 5400\n  sharedMemoryGB: 2\n\
                    \x20 imagePullPolicy: Always\n  ssh: true\n  ibNetwork: true\n  envVariant: aihub\n";
    let command = "echo world $WORLD_SIZE if $NCCL_SOCKET_IFNAME ib $NCCL_IB_DISABLE; sleep 600";
    apply(&plane, Some(&alice), "hub.yaml", &training_job("hub", settings, command, 2));
    let wide = ok(&plane, Some(&alice), &["get", "trainingjobs", "-n", "ws-a", "-o", "wide"]);
    assert!(wide.contains("training") && wide.contains("视觉大模型") && wide.contains("5400s"), "{wide}");
    ok(&plane, Some(&alice), &["run", "hub", "-n", "ws-a"]);
    let pod = "hub-r1-worker-0";
    let log = || plane.ringleader_as(Some(&alice), &["logs", pod, "-n", "ws-a"]).1;
    wait(60, "the pod's log", || log().contains("world"), log);
    // AI Hub's env: WORLD_SIZE counts GPUs (2), not pods (1); NCCL on the IB network.
    assert!(log().contains("world 2 if front1 ib 0"), "{}", log());
    let p = get_json(&plane, Some(&alice), &["pod", pod, "-n", "ws-a"]);
    let c = &p["spec"]["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always", "{p}");
    let shm = p["spec"]["volumes"].as_array().and_then(|v| v.iter().find(|v| v["name"] == "dshm")).cloned();
    assert_eq!(
        shm.map(|v| v["emptyDir"].clone()),
        Some(serde_json::json!({"medium": "Memory", "sizeLimit": "2Gi"})),
        "{p}"
    );
    let mounts = c["volumeMounts"].as_array().cloned().unwrap_or_default();
    assert!(mounts.iter().any(|m| m["name"] == "dshm" && m["mountPath"] == "/dev/shm"), "{p}");
    assert!(
        c["ports"].as_array().is_some_and(|p| p.iter().any(|p| p["name"] == "ssh" && p["containerPort"] == 22)),
        "{p}"
    );
    let run = get_json(&plane, Some(&alice), &["run", "hub-r1", "-n", "ws-a"]);
    let ssh = run["status"]["pods"][0]["ssh"].as_str().unwrap_or_default().to_string();
    assert!(ssh.starts_with("ssh -p 22 root@127.0.226."), "the run shows the pod's SSH login: {run}");
}
