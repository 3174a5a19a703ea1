//! Issue 25's rules of the seeds, run under a real `ringleader up` as users
//! meet them: a single-machine PyTorch training job (seed 003: a Master and
//! no Worker) runs as a world of one; `huawei.com/schedule_minAvailable`
//! decides a seed AscendJob's gang over its run policy; an AscendJob
//! without ports meets on 2222; static and dynamic vNPUs never run side by
//! side; a logical SuperPoD block of a Master and Workers stays in one
//! SuperPoD; a failed chip moves only the inference replica on it.

mod common;

use common::Plane;
use serde_json::Value;

fn apply_file(plane: &Plane, name: &str, yaml: &str) -> (bool, String) {
    let file = plane.dir.path().join(name);
    std::fs::write(&file, yaml).expect("write");
    plane.ringleader_as(None, &["apply", "-f", &file.to_string_lossy()])
}

fn run_of(plane: &Plane, ns: &str, run: &str) -> Value {
    serde_json::from_str(&plane.ctl(&["get", "runs", run, "-n", ns, "-o", "json"])).unwrap_or(Value::Null)
}

/// An NVIDIA resource group of one machine, a queue of it, and a workspace
/// using the queue with carol as a member: what an admin sets up first.
fn workspace(group: &str, node: &str, queue: &str, ws: &str) -> String {
    format!(
        "apiVersion: platform.ringleader.io/v1alpha1\nkind: ResourceGroup\nmetadata: {{name: {group}}}\n\
         spec: {{accelerator: NVIDIA, policies: [Gang], nodes: {{names: [{node}]}}}}\n---\n\
         apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {queue}}}\nspec: {{weight: 1, resourceGroup: {group}}}\n---\n\
         apiVersion: platform.ringleader.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {ws}}}\n\
         spec: {{resourceGroup: {group}, queues: [{queue}], members: [{{user: carol, role: member}}]}}\n"
    )
}

/// Seed 003's single-machine training: a PyTorchDDP TrainingJob of one
/// Master and no Worker is saved, run, and its pod sees a world of one
/// whose master is itself.
#[test]
fn a_master_only_pytorch_training_job_runs_as_a_world_of_one() {
    let plane = Plane::start(&common::cluster_yaml(249, &[("s1", "hgx-h100-8")]), &[]);
    let (applied, out) = apply_file(
        &plane,
        "platform.yaml",
        &(workspace("rg-one", "s1", "solo", "ws-one")
            + "---\napiVersion: platform.ringleader.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: single, namespace: ws-one}\n\
         spec:\n  queue: solo\n  image: pytorch/pytorch:2.4.0\n  framework: PyTorchDDP\n\
         \x20 command: \"/bin/sh -c 'echo world $WORLD_SIZE rank $RANK master $MASTER_ADDR:$MASTER_PORT'\"\n\
         \x20 roles:\n  - {name: Master, count: 1, resources: {gpu: 8}}\n"),
    );
    assert!(applied, "a Master-only training job is accepted:\n{out}");
    plane.ctl(&["run", "single", "-n", "ws-one"]);
    plane.wait_for(60, "the run succeeded", |p| run_of(p, "ws-one", "single-r1")["status"]["state"] == "succeeded");
    let run = run_of(&plane, "ws-one", "single-r1");
    let pods = run["status"]["pods"].as_array().cloned().unwrap_or_default();
    assert_eq!(pods.len(), 1, "{run}");
    let pod = pods[0]["name"].as_str().unwrap_or_default().to_string();
    let log = plane.ctl(&["logs", &pod, "-n", "ws-one"]);
    let line = log.lines().find(|l| l.starts_with("world ")).unwrap_or_default().to_string();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.get(1..4), Some(&["1", "rank", "0"][..]), "{log}");
    let master = words.get(5).copied().unwrap_or_default();
    println!("{line}");
    assert!(!master.starts_with(':') && !master.ends_with(':'), "MASTER_ADDR and MASTER_PORT set: {log}");
}

/// The seed's PyTorch AscendJob (examples/ascendjob-pytorch.yaml) with the
/// lines `keep` accepts, its training script (which the test has no copy
/// of) replaced by `sleep 600`.
fn seed_pytorch_job(mut keep: impl FnMut(&str) -> bool) -> String {
    let job: String = common::example("examples/ascendjob-pytorch.yaml")
        .lines()
        .filter(|l| keep(l))
        .map(|l| {
            if l.trim_start().starts_with("args: [\"cd /job/code/scripts;") {
                "            args: [\"sleep 600\"]"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(job.contains("args: [\"sleep 600\"]"), "the example's training command moved");
    job
}

/// Seed 000: `huawei.com/schedule_minAvailable` is the least number of
/// replicas the job is scheduled with, and the seeds' AscendJobs also carry
/// `runPolicy.schedulingPolicy.minAvailable` (the total). The seed's own
/// PyTorch AscendJob, told 1, starts with one of its two pods on the one
/// server there is; told nothing more, it waits for two servers.
#[test]
fn schedule_min_available_decides_the_gang_of_a_seed_ascend_job() {
    let cluster = common::cluster_yaml(250, &[("m1", "atlas-800-910")])
        .replace("{host-arch: huawei-arm}", "{host-arch: huawei-arm, accelerator-type: module}");
    let plane = Plane::start(&cluster, &[]);
    let example = seed_pytorch_job(|_| true);
    assert!(example.contains("minAvailable: 2"), "the example moved");
    let told = example.replacen(
        "  name: default-test-pytorch\n",
        "  name: default-test-pytorch\n  annotations: {huawei.com/schedule_minAvailable: \"1\"}\n",
        1,
    );
    plane.apply(&told).expect("apply");
    let running = |p: &Plane| {
        p.list("pods")
            .into_iter()
            .filter(|x| x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("default-test-pytorch-")))
            .filter(|x| x["status"]["phase"] == "Running")
            .count()
    };
    plane.wait_for(30, "one pod of the two running on the one server", |p| running(p) == 1);
    let group = plane.get("podgroups", "default-test-pytorch").unwrap_or(Value::Null);
    assert_eq!(group["spec"]["minMember"], 1, "{group}");

    // The same job without the annotation: a gang of two, which one server cannot hold.
    plane.ctl(&["delete", "ascendjob", "default-test-pytorch"]);
    plane.wait_for(30, "the first job's pods gone", |p| {
        p.list("pods")
            .iter()
            .all(|x| !x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("default-test-pytorch-")))
    });
    plane.apply(&example).expect("apply");
    plane.wait_for(30, "the PodGroup of two", |p| {
        p.get("podgroups", "default-test-pytorch").is_some_and(|g| g["spec"]["minMember"] == 2)
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(running(&plane), 0, "a gang of two does not start on one server");
}

/// Seed 000 (spec/ascend.md): an AscendJob's collective port is 2222 when
/// its containers name none. The seed's PyTorch AscendJob without its
/// `ports` on two servers: both pods are told `MASTER_PORT=2222`.
#[test]
fn an_ascend_job_without_ports_meets_on_2222() {
    let cluster = common::cluster_yaml(251, &[("p1", "atlas-800-910"), ("p2", "atlas-800-910")])
        .replace("{host-arch: huawei-arm}", "{host-arch: huawei-arm, accelerator-type: module}");
    let plane = Plane::start(&cluster, &[]);
    // Each `ports:` and the two lines of its one entry go.
    let mut skip = 0;
    let example = seed_pytorch_job(|l| {
        if l.trim_start().starts_with("ports:") {
            skip = 2;
            return false;
        }
        if skip > 0 {
            skip -= 1;
            return false;
        }
        true
    });
    assert!(!example.contains("containerPort"), "the example moved");
    plane.apply(&example).expect("apply");
    let env_of = |pod: &Value, name: &str| -> Option<String> {
        pod["spec"]["containers"][0]["env"]
            .as_array()?
            .iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["value"].as_str())
            .map(str::to_string)
    };
    plane.wait_for(30, "both pods released with MASTER_PORT", |p| {
        let pods: Vec<Value> = p
            .list("pods")
            .into_iter()
            .filter(|x| x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("default-test-pytorch-")))
            .collect();
        pods.len() == 2 && pods.iter().all(|x| env_of(x, "MASTER_PORT").is_some())
    });
    for pod in plane.list("pods") {
        if pod["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("default-test-pytorch-")) {
            assert_eq!(env_of(&pod, "MASTER_PORT").as_deref(), Some("2222"), "{}", pod["metadata"]["name"]);
        }
    }
}

/// A one-pod Volcano job of one 310P device `resource: count`, sleeping.
fn vnpu_job(name: &str, resource: &str, count: u32) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {{name: {name}, namespace: default, labels: {{ring-controller.atlas: ascend-310P}}}}\n\
         spec:\n  minAvailable: 1\n  schedulerName: volcano\n  queue: default\n  tasks:\n  - name: w\n    replicas: 1\n    template:\n\
         \x20     metadata: {{labels: {{ring-controller.atlas: ascend-310P}}}}\n      spec:\n        restartPolicy: Never\n        containers:\n\
         \x20       - name: w\n          image: x\n          command: [\"sleep\", \"600\"]\n\
         \x20         resources: {{requests: {{{resource}: {count}}}, limits: {{{resource}: {count}}}}}\n"
    )
}

/// Seed 000: static and dynamic vNPUs are never mixed in one cluster. With
/// a static vNPU running, a dynamic vNPU job waits with a FailedScheduling
/// Event naming the rule, though the chips have room; once the static one
/// is gone it runs.
#[test]
fn static_and_dynamic_vnpus_never_run_side_by_side() {
    let plane = Plane::start(&common::cluster_yaml(252, &[("v1", "atlas-inference-310p")]), &[]);
    let phase =
        |p: &Plane, pod: &str| p.get("pods", pod).map(|x| x["status"]["phase"].as_str().unwrap_or("").to_string());
    plane.apply(&vnpu_job("fixed", "huawei.com/Ascend310P-2c", 1)).expect("apply");
    plane.wait_for(30, "the static vNPU running", |p| phase(p, "fixed-w-0").as_deref() == Some("Running"));
    plane.apply(&vnpu_job("flexible", "huawei.com/npu-core", 2)).expect("apply");
    plane.wait_for(30, "the dynamic job's FailedScheduling naming the rule", |p| {
        p.list("events").iter().any(|e| {
            e["reason"] == "FailedScheduling"
                && e["message"].as_str().is_some_and(|m| m.contains("a cluster uses one vNPU mode"))
        })
    });
    assert_ne!(phase(&plane, "flexible-w-0").as_deref(), Some("Running"));
    plane.ctl(&["delete", "job", "fixed"]);
    plane.wait_for(30, "the dynamic vNPU running once the static one is gone", |p| {
        phase(p, "flexible-w-0").as_deref() == Some("Running")
    });
}

/// The seed's SuperPoD AscendJob grown to a Master and two Workers in one
/// logical SuperPoD (`sp-block: "48"`, three 16-die nodes) with
/// `super-pod-affinity: hard`.
fn superpod_job(name: &str) -> String {
    let example = common::example("examples/ascendjob-superpod.yaml")
        .replace("name: default-test-pytorch-sp", &format!("name: {name}"))
        .replace("sp-block: \"16\"", "sp-block: \"48\"")
        .replace("      minAvailable: 1 ", "      minAvailable: 3 ")
        .replace("    podgroup-sched-enable: \"true\"", "    super-pod-affinity: hard")
        .replace(
            "imagePullPolicy: IfNotPresent",
            "imagePullPolicy: IfNotPresent\n            command: [\"sleep\", \"600\"]",
        );
    let at = example.find("    Master:").expect("the example's Master");
    let worker = example[at..].replacen("    Master:", "    Worker:", 1).replacen("replicas: 1 ", "replicas: 2 ", 1);
    assert!(example.contains("super-pod-affinity: hard") && worker.contains("replicas: 2"), "the example moved");
    format!("{example}\n{worker}")
}

/// Seed 000: a logical SuperPoD block (`sp-block`) lies inside one physical
/// SuperPoD whatever roles its pods are of. Two SuperPoDs of two free nodes
/// each cannot hold a Master + 2 Workers block of three: with hard affinity
/// the job stays Pending (not split across SuperPoDs); once SuperPoD 0's
/// third server is back on, all three pods land there.
#[test]
fn a_superpod_block_of_master_and_workers_stays_in_one_superpod() {
    let node = |name: &str, i: u32, sp: &str| {
        format!(
            "apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {name}, labels: {{host-arch: huawei-arm, accelerator-type: module-a3-16-super-pod}}}}\n\
             spec: {{profile: atlas-900-a3-superpod, address: 127.0.253.{i}, network: {{superPod: \"{sp}\"}}}}\n---\n"
        )
    };
    let cluster = [node("a1", 1, "0"), node("a2", 2, "0"), node("a3", 3, "0"), node("b1", 4, "1"), node("b2", 5, "1")]
        .concat()
        + "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n";
    let plane = Plane::start(&cluster, &[]);
    // Bad input first: a block that does not divide the job is refused at apply time.
    let (applied, out) =
        apply_file(&plane, "bad-block.yaml", &superpod_job("sp-bad").replace("sp-block: \"48\"", "sp-block: \"32\""));
    assert!(!applied, "sp-block 32 does not divide 48 chips:\n{out}");
    assert!(out.contains("metadata.annotations.sp-block") && out.contains("32"), "names the field and value:\n{out}");
    println!("{}", out.lines().find(|l| l.contains("sp-block")).unwrap_or_default());
    // SuperPoD 0's third server is powered off: two free servers in each SuperPoD.
    plane.ctl(&["node", "stop", "a3"]);
    plane.apply(&superpod_job("sp-split")).expect("apply");
    plane.wait_for(30, "a FailedScheduling naming the logical block", |p| {
        p.list("events").iter().any(|e| {
            e["reason"] == "FailedScheduling"
                && e["message"].as_str().is_some_and(|m| m.contains("logical block of sp-block 48"))
        })
    });
    let bound: Vec<String> = plane
        .list("pods")
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()).map(str::to_string))
        .collect();
    assert!(bound.is_empty(), "nothing bound across SuperPoDs: {bound:?}");
    plane.ctl(&["delete", "ascendjob", "sp-split"]);
    plane.ctl(&["node", "start", "a3"]);
    plane.apply(&superpod_job("sp-whole")).expect("apply");
    plane.wait_for(30, "all three pods running in SuperPoD 0", |p| {
        let pods: Vec<Value> = p
            .list("pods")
            .into_iter()
            .filter(|x| x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("sp-whole-")))
            .filter(|x| x["status"]["phase"] == "Running")
            .collect();
        pods.len() == 3 && pods.iter().all(|x| x["spec"]["nodeName"].as_str().is_some_and(|n| n.starts_with('a')))
    });
}

/// Seed 000's infer-deploy.yaml (examples/deployment-inference.yaml) with
/// two replicas and `fault-scheduling: grace` in its pod template's labels,
/// where the seed puts the switch.
fn inference_deployment(name: &str) -> String {
    common::example("examples/deployment-inference.yaml")
        .replace("name: resnetinfer1-1", &format!("name: {name}"))
        .replace("replicas: 1 ", "replicas: 2 ")
        .replace(
            "      labels:\n        app: infers\n",
            "      labels:\n        app: infers\n        fault-scheduling: grace\n        ring-controller.atlas: ascend-310P\n",
        )
        // The MindIE server the seed starts is not on this machine: a
        // replica that serves until stopped stands in for it.
        .replace(r#"["/bin/bash", "-c", "cd $ATB_SPEED_HOME_PATH; python examples/run_pa.py --model_path /path-to-weights"]"#, r#"["/bin/sh", "-c", "sleep 3600"]"#)
}

/// Seed 000, inference card fault rescheduling: each replica of a
/// Deployment works alone, so a failed chip moves only the replica on it,
/// to a healthy chip; the other replica keeps running, UID unchanged.
#[test]
fn a_failed_chip_moves_only_the_inference_replica_on_it() {
    let plane = Plane::start(&common::cluster_yaml(251, &[("i1", "atlas-inference-310p")]), &[]);
    let yaml = inference_deployment("infer");
    assert!(
        yaml.contains("fault-scheduling: grace") && yaml.contains("replicas: 2 ") && yaml.contains("sleep"),
        "{yaml}"
    );
    plane.apply(&yaml).expect("apply");
    let running = |p: &Plane| -> Vec<Value> {
        p.list("pods")
            .into_iter()
            .filter(|x| x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("infer-")))
            .filter(|x| x["status"]["phase"] == "Running" && x["metadata"]["deletionTimestamp"].is_null())
            .collect()
    };
    plane.wait_for(60, "both replicas running", |p| running(p).len() == 2);
    let pods = running(&plane);
    let chip =
        |x: &Value| x["metadata"]["annotations"]["huawei.com/Ascend310P"].as_str().unwrap_or_default().to_string();
    let uid = |x: &Value| x["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    let name = |x: &Value| x["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let (faulty, healthy) = (&pods[0], &pods[1]);
    let broken = chip(faulty);
    let device = broken.rsplit('-').next().unwrap_or_default().to_string();
    assert!(device.parse::<u32>().is_ok(), "the faulty replica's chip: {faulty}");
    plane.ctl(&["node", "fault", "i1", "--device", &device, "--kind", "unhealthy"]);
    let fault = std::time::Instant::now();
    plane.wait_for(15, "the faulty replica replaced on a healthy chip", |p| {
        let now = running(p);
        now.len() == 2 && !now.iter().any(|x| uid(x) == uid(faulty)) && now.iter().all(|x| chip(x) != broken)
    });
    println!("replica replaced {:.1} s after the fault", fault.elapsed().as_secs_f64());
    let now = running(&plane);

    let peer = now.iter().find(|x| name(x) == name(healthy)).expect("the healthy replica");
    assert_eq!(uid(peer), uid(healthy), "the healthy replica keeps its UID: {now:?}");
    assert_eq!(chip(peer), chip(healthy), "and its chip");
}

/// A 2 × 8-chip Volcano job with the seed's `tor-affinity` label.
fn tor_job(name: &str, schema: &str) -> String {
    format!(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n\
         metadata: {{name: {name}, namespace: default, labels: {{ring-controller.atlas: ascend-910, tor-affinity: \"{schema}\"}}}}\n\
         spec:\n  schedulerName: volcano\n  minAvailable: 2\n  queue: default\n  tasks:\n  - name: worker\n    replicas: 2\n    template:\n\
         \x20     metadata: {{labels: {{ring-controller.atlas: ascend-910}}}}\n\
         \x20     spec:\n        restartPolicy: OnFailure\n        containers:\n        - name: train\n          image: train:1\n\
         \x20         command: [/bin/sh, -c, sleep 3600]\n\
         \x20         resources: {{requests: {{huawei.com/Ascend910: 8}}, limits: {{huawei.com/Ascend910: 8}}}}\n"
    )
}

/// The nodes a job's running pods are on, sorted.
fn nodes_running(plane: &Plane, job: &str) -> Vec<String> {
    let mut nodes: Vec<String> = plane
        .list("pods")
        .iter()
        .filter(|x| x["metadata"]["name"].as_str().is_some_and(|n| n.starts_with(&format!("{job}-"))))
        .filter(|x| x["status"]["phase"] == "Running")
        .filter_map(|x| x["spec"]["nodeName"].as_str().map(str::to_string))
        .collect();
    nodes.sort();
    nodes
}

/// Seed 000's switch affinity: `tor-affinity` schemas place differently
/// under `up`. With three free servers under ToR a and two under ToR b, a
/// `normal-schema` job and a `large-model-schema` filler job take the
/// tightest ToR that holds them (b) while `null` (the rule off) takes the
/// roomiest; with one free server under each ToR, the filler job waits
/// with an Event naming the rule while a `null` job spans both.
#[test]
fn tor_affinity_schemas_place_differently_under_up() {
    let tors = [("a1", "tor-a"), ("a2", "tor-a"), ("a3", "tor-a"), ("b1", "tor-b"), ("b2", "tor-b")];
    let nodes: Vec<(&str, &str)> = tors.iter().map(|(n, _)| (*n, "atlas-800-910")).collect();
    let mut cluster = common::cluster_yaml(252, &nodes);
    for (i, (_, tor)) in tors.iter().enumerate() {
        cluster = cluster.replace(
            &format!("address: 127.0.252.{}}}", i + 1),
            &format!("address: 127.0.252.{}, network: {{tor: {tor}}}}}", i + 1),
        );
    }
    assert_eq!(cluster.matches("network: {tor:").count(), 5, "{cluster}");
    let plane = Plane::start(&cluster, &[]);
    for (job, schema, want) in [
        ("tor-null", "null", ["a1", "a2"]),
        ("tor-normal", "normal-schema", ["b1", "b2"]),
        ("tor-filler", "large-model-schema", ["b1", "b2"]),
    ] {
        plane.apply(&tor_job(job, schema)).expect("apply");
        plane.wait_for(30, &format!("{job} running"), |p| nodes_running(p, job).len() == 2);
        assert_eq!(nodes_running(&plane, job), want, "{schema}");
        plane.ctl(&["delete", "vcjob", job]);
        plane.wait_for(30, &format!("{job} gone"), |p| nodes_running(p, job).is_empty());
    }
    // One free server under each ToR.
    plane.ctl(&["node", "stop", "a2"]);
    plane.ctl(&["node", "stop", "a3"]);
    plane.ctl(&["node", "stop", "b2"]);
    plane.apply(&tor_job("filler", "large-model-schema")).expect("apply");
    plane.wait_for(30, "a FailedScheduling naming the filler rule", |p| {
        p.list("events").iter().any(|e| {
            e["reason"] == "FailedScheduling"
                && e["message"].as_str().is_some_and(|m| m.contains("tor-affinity large-model-schema: a filler job"))
        })
    });
    assert!(nodes_running(&plane, "filler").is_empty(), "the filler job never spans ToRs");
    plane.ctl(&["delete", "vcjob", "filler"]);
    plane.apply(&tor_job("spread", "null")).expect("apply");
    plane.wait_for(30, "the null job running across both ToRs", |p| nodes_running(p, "spread") == ["a1", "b1"]);
}

/// Seed 003's VIP job names its machines; one that does not exist, or that
/// its queue may not use (outside the queue's resource group), is refused
/// when the job is saved, naming the machine and the rule.
#[test]
fn a_vip_job_on_a_machine_its_queue_may_not_use_is_refused() {
    let plane = Plane::start(&common::cluster_yaml(253, &[("v1", "hgx-h100-8"), ("v2", "hgx-h100-8")]), &[]);
    let (applied, out) = apply_file(&plane, "platform.yaml", &workspace("rg-vip", "v1", "vipq", "ws-vip"));
    assert!(applied, "{out}");
    let job = |name: &str, node: &str| {
        format!(
            "apiVersion: platform.ringleader.io/v1alpha1\nkind: TrainingJob\nmetadata: {{name: {name}, namespace: ws-vip}}\n\
             spec:\n  queue: vipq\n  image: pytorch/pytorch:2.4.0\n  framework: PyTorchDDP\n  command: \"/bin/sh -c 'sleep 60'\"\n\
             \x20 vip: {{nodes: [{node}], onBusy: kill}}\n  roles:\n  - {{name: Master, count: 1, resources: {{gpu: 8}}}}\n"
        )
    };
    let (applied, out) = apply_file(&plane, "outside.yaml", &job("urgent", "v2"));
    assert!(!applied, "v2 is outside the queue's resource group:\n{out}");
    assert!(
        out.contains("spec.vip.nodes[0]") && out.contains("\"v2\": not a machine of resource group \"rg-vip\""),
        "{out}"
    );
    let (applied, out) = apply_file(&plane, "missing.yaml", &job("urgent", "v9"));
    assert!(!applied && out.contains("spec.vip.nodes[0]") && out.contains("\"v9\": no such machine"), "{out}");
    let (applied, out) = apply_file(&plane, "inside.yaml", &job("urgent", "v1"));
    assert!(applied, "v1 is the group's:\n{out}");
}
