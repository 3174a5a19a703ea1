//! Session scenarios with exact assertions: gangs all-or-nothing, queue
//! quota and Closed queues, proportion and DRF shares, preemption with the
//! fewest lower-priority victims, reclaim back to a guarantee, reservations
//! against starvation, VIP wait/kill, and explanations.

use ringleader_api::document::parse_str;
use ringleader_api::{check_documents, Job, Resource};
use ringleader_scheduler::conf::SchedulerConf;
use ringleader_scheduler::session::{self, Eviction, Outcome, PodGroupPhase, Snapshot};
use std::collections::BTreeMap;

fn outcome_with(yaml: &str, conf: &SchedulerConf) -> Outcome {
    let docs = parse_str("scenario.yaml", yaml).unwrap();
    let reports = check_documents(&docs);
    for r in &reports {
        assert!(r.valid, "{}: {:?}", r.object(), r.errors);
    }
    let objects: Vec<Resource> = reports.into_iter().filter_map(|r| r.resource).collect();
    let jobs: Vec<Job> = objects.iter().filter_map(Job::from_resource).collect();
    let snapshot = Snapshot::from_resources(&objects, jobs).unwrap();
    session::run(snapshot, conf, 1000)
}

fn outcome(yaml: &str) -> Outcome {
    outcome_with(yaml, &SchedulerConf::default())
}

/// An Atlas 800 (8 Ascend 910 chips, rings 0-3 and 4-7).
fn node(name: &str) -> String {
    format!("---\napiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {name}}}\nspec: {{profile: atlas-800-910, network: {{tor: t1}}}}\n")
}

fn gpu_node(name: &str) -> String {
    format!("---\napiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {name}}}\nspec: {{profile: hgx-h100-8, network: {{tor: t2}}}}\n")
}

fn queue(name: &str, spec: &str, state: &str) -> String {
    format!("---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {name}}}\nspec: {spec}\nstatus: {{state: {state}}}\n")
}

fn class(name: &str, value: i32) -> String {
    format!("---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}\n")
}

/// A running workload: `pods` as (node, devices); pods are `<name>-worker-<i>`.
fn workload(name: &str, queue: &str, priority: i32, vip: bool, pods: &[(&str, &[u32])]) -> String {
    let pods: String = pods
        .iter()
        .enumerate()
        .map(|(i, (node, devs))| format!("  - {{name: {name}-worker-{i}, node: {node}, devices: {devs:?}}}\n"))
        .collect();
    format!("---\napiVersion: ringleader.io/v1alpha1\nkind: Workload\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  queue: {queue}\n  priority: {priority}\n  vip: {vip}\n  pods:\n{pods}")
}

/// A Volcano job of `replicas` pods with `chips` Ascend 910 chips each.
fn job(ns: &str, name: &str, queue: &str, class: &str, replicas: u32, chips: u32, annotations: &str) -> String {
    let class = if class.is_empty() { String::new() } else { format!("  priorityClassName: {class}\n") };
    format!(
        r#"---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}, namespace: {ns}, labels: {{ring-controller.atlas: ascend-910}}, annotations: {{{annotations}}}}}
spec:
  minAvailable: {replicas}
  queue: {queue}
{class}  tasks:
  - name: worker
    replicas: {replicas}
    template:
      metadata: {{labels: {{ring-controller.atlas: ascend-910}}}}
      spec:
        restartPolicy: OnFailure
        nodeSelector: {{accelerator-type: module}}
        containers:
        - name: main
          image: train:1
          resources:
            requests: {{huawei.com/Ascend910: {chips}}}
            limits: {{huawei.com/Ascend910: {chips}}}
"#
    )
}

fn gpu_job(ns: &str, name: &str, gpus: u32) -> String {
    format!(
        r#"---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: {name}, namespace: {ns}}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:2
            resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"#
    )
}

fn bound_jobs(o: &Outcome) -> Vec<String> {
    let mut jobs: Vec<String> = o.bindings.iter().map(|b| b.job.clone()).collect();
    jobs.dedup();
    jobs
}

fn reason<'a>(o: &'a Outcome, job: &str) -> &'a str {
    o.pending.iter().find(|p| p.job == job).map(|p| p.reason.as_str()).unwrap_or_else(|| panic!("{job} not pending"))
}

fn evicted(o: &Outcome) -> Vec<(&str, &str, &str)> {
    o.evictions.iter().map(|e: &Eviction| (e.job.as_str(), e.pod.as_str(), e.preempted_by.as_str())).collect()
}

#[test]
fn gang_is_placed_whole_or_not_at_all() {
    let yaml = node("n1")
        + &node("n2")
        + &workload("busy", "default", 0, false, &[("n2", &[0, 1, 2, 3])])
        + &job("default", "big", "default", "", 2, 8, "")
        + &job("default", "small", "default", "", 1, 4, "");
    let o = outcome(&yaml);
    // big needs two whole nodes; n2 has 4 chips taken, so not even its first pod is bound.
    assert_eq!(
        reason(&o, "default/big"),
        "gang: only 1 of minAvailable 2 pods fit; pod big-worker-1: 0/2 nodes are available: 2 Insufficient huawei.com/Ascend910. \
         Reserved n1, n2 for it against lower-priority jobs."
    );
    assert_eq!(bound_jobs(&o), vec!["default/small"]);
    assert_eq!(o.bindings[0].node, "n2");
    assert_eq!(o.bindings[0].devices, vec![4, 5, 6, 7]);
    assert_eq!(o.phases["default/big"], PodGroupPhase::Inqueue);
    assert_eq!(o.phases["default/small"], PodGroupPhase::Running);
    assert!(o.evictions.is_empty());
}

#[test]
fn queue_capability_and_closed_queue() {
    let yaml = node("n1")
        + &node("n2")
        + &node("n3")
        + &queue("team-a", "{weight: 1, capability: {huawei.com/Ascend910: 16}}", "Open")
        + &queue("team-b", "{weight: 1}", "Closed")
        + &workload("a-running", "team-a", 0, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &workload("b-running", "team-b", 0, false, &[("n2", &[0, 1, 2, 3])])
        + &job("default", "a-big", "team-a", "", 2, 8, "")
        + &job("default", "a-fits", "team-a", "", 1, 8, "")
        + &job("default", "b-new", "team-b", "", 1, 1, "")
        + &job("default", "nowhere", "team-z", "", 1, 1, "");
    let o = outcome(&yaml);
    assert_eq!(
        reason(&o, "default/a-big"),
        "queue team-a over capability: huawei.com/Ascend910 requested 16, used 8 of 16"
    );
    assert_eq!(reason(&o, "default/b-new"), "queue team-b is Closed");
    assert_eq!(reason(&o, "default/nowhere"), "queue team-z not found");
    assert_eq!(bound_jobs(&o), vec!["default/a-fits"]);
    // The closed queue's running job continues.
    assert_eq!(o.phases["default/b-running"], PodGroupPhase::Running);
    assert_eq!(o.phases["default/b-new"], PodGroupPhase::Pending);
    assert!(o.evictions.is_empty());
}

#[test]
fn proportion_shares_spare_capacity_by_weight() {
    let mut yaml = (1..=4).map(|i| node(&format!("n{i}"))).collect::<String>();
    yaml += &queue("light", "{weight: 1}", "Open");
    yaml += &queue("heavy", "{weight: 3}", "Open");
    for i in 0..32 {
        yaml += &job("default", &format!("l{i}"), "light", "", 1, 1, "");
        yaml += &job("default", &format!("h{i}"), "heavy", "", 1, 1, "");
    }
    let o = outcome(&yaml);
    let count = |prefix: &str| o.bindings.iter().filter(|b| b.job.starts_with(prefix)).count();
    assert_eq!((count("default/l"), count("default/h")), (8, 24));
    assert_eq!(
        reason(&o, "default/l8"),
        "queue light over deserved share: huawei.com/Ascend910 requested 1, used 8 of deserved 8"
    );
}

#[test]
fn drf_evens_out_namespaces_within_a_queue() {
    // 24 GPUs; three tenants submit in blocks (all of a, then b, then c), c in 2-GPU jobs.
    let mut yaml = (1..=3).map(|i| gpu_node(&format!("g{i}"))).collect::<String>();
    for i in 0..20 {
        yaml += &gpu_job("a", &format!("a{i}"), 1);
    }
    for i in 0..20 {
        yaml += &gpu_job("b", &format!("b{i}"), 1);
    }
    for i in 0..10 {
        yaml += &gpu_job("c", &format!("c{i}"), 2);
    }
    let o = outcome(&yaml);
    let mut gpus: BTreeMap<&str, usize> = BTreeMap::new();
    for b in &o.bindings {
        *gpus.entry(b.job.split('/').next().unwrap()).or_default() += b.devices.len();
    }
    assert_eq!(gpus.values().sum::<usize>(), 24);
    for (ns, n) in &gpus {
        let share = *n as f64 / 24.0;
        assert!((share - 1.0 / 3.0).abs() <= 0.05, "{ns} holds {n} of 24 GPUs: {gpus:?}");
    }
    // Without DRF the first tenant would take all 20 of its GPUs first.
    let fifo =
        SchedulerConf::from_yaml("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n").unwrap();
    let o = outcome_with(&yaml, &fifo);
    assert_eq!(o.bindings.iter().filter(|b| b.job.starts_with("a/")).count(), 20);
}

#[test]
fn preemption_evicts_the_fewest_lower_priority_gangs() {
    let base = node("n1")
        + &node("n2")
        + &class("high", 1000)
        + &workload("one-big", "default", 10, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &workload("half-a", "default", 10, false, &[("n2", &[0, 1, 2, 3])])
        + &workload("half-b", "default", 10, false, &[("n2", &[4, 5, 6, 7])]);
    let o = outcome(&(base.clone() + &job("default", "urgent", "default", "high", 1, 8, "")));
    // One victim (one-big) beats two (half-a + half-b).
    assert_eq!(evicted(&o), vec![("default/one-big", "one-big-worker-0", "default/urgent")]);
    assert_eq!(o.evictions[0].node, "n1");
    assert_eq!(o.evictions[0].reason, "preempted by default/urgent (priority 1000)");
    assert_eq!(bound_jobs(&o), vec!["default/urgent"]);
    assert_eq!(o.bindings[0].node, "n1");
    assert_eq!(o.phases["default/one-big"], PodGroupPhase::Pending);

    // A VIP job is never a victim: with one-big VIP the two halves go instead.
    let vip = base.replace(
        "priority: 10\n  vip: false\n  pods:\n  - {name: one-big",
        "priority: 10\n  vip: true\n  pods:\n  - {name: one-big",
    );
    let o = outcome(&(vip + &job("default", "urgent", "default", "high", 1, 8, "")));
    assert_eq!(
        evicted(&o),
        vec![
            ("default/half-a", "half-a-worker-0", "default/urgent"),
            ("default/half-b", "half-b-worker-0", "default/urgent")
        ]
    );
    assert_eq!(o.bindings[0].node, "n2");

    // Equal priority preempts nothing, and the explanation stays the placement's.
    let o = outcome(&(base + &job("default", "peer", "default", "", 1, 8, "")));
    assert!(o.evictions.is_empty());
    assert_eq!(
        reason(&o, "default/peer"),
        "gang: only 0 of minAvailable 1 pods fit; pod peer-worker-0: 0/2 nodes are available: 2 Insufficient huawei.com/Ascend910. \
         Reserved n1 for it against lower-priority jobs."
    );
}

#[test]
fn preemption_prefers_the_lowest_priority_among_equal_counts() {
    let yaml = node("n1")
        + &node("n2")
        + &class("high", 1000)
        + &workload("mid", "default", 50, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &workload("low", "default", 5, false, &[("n2", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &job("default", "urgent", "default", "high", 1, 8, "");
    let o = outcome(&yaml);
    assert_eq!(evicted(&o), vec![("default/low", "low-worker-0", "default/urgent")]);
}

#[test]
fn reclaim_returns_a_queue_its_guarantee() {
    let yaml = node("n1")
        + &node("n2")
        + &queue("research", "{weight: 1, guarantee: {resource: {huawei.com/Ascend910: 8}}}", "Open")
        + &queue("batch", "{weight: 1, reclaimable: true}", "Open")
        + &workload("batch-1", "batch", 0, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &workload("batch-2", "batch", 0, false, &[("n2", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &job("default", "paper", "research", "", 1, 8, "");
    let o = outcome(&yaml);
    assert_eq!(evicted(&o), vec![("default/batch-1", "batch-1-worker-0", "default/paper")]);
    assert_eq!(o.evictions[0].reason, "reclaimed for queue research by default/paper");
    assert_eq!(bound_jobs(&o), vec!["default/paper"]);

    // A queue that is not reclaimable keeps what it runs.
    let o = outcome(&yaml.replace("reclaimable: true", "reclaimable: false"));
    assert!(o.evictions.is_empty());
    assert!(reason(&o, "default/paper").starts_with("gang: only 0 of minAvailable 1 pods fit"));
}

#[test]
fn reservation_keeps_small_jobs_off_a_starving_gang() {
    let yaml = node("n1")
        + &node("n2")
        + &class("high", 100)
        + &class("low", 1)
        + &workload("steady", "default", 100, false, &[("n2", &[0, 1, 2, 3])])
        + &job("default", "big", "default", "high", 2, 8, "")
        + &job("default", "small", "default", "low", 1, 4, "");
    let o = outcome(&yaml);
    assert!(o.bindings.is_empty(), "{:?}", o.bindings);
    assert_eq!(
        reason(&o, "default/small"),
        "gang: only 0 of minAvailable 1 pods fit; pod small-worker-0: 0/2 nodes are available: 2 node(s) reserved for default/big."
    );
    // Without the reservation the small job takes the room the gang waits for.
    let conf = SchedulerConf::from_yaml(
        "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n    arguments: {reservation: false}\n",
    )
    .unwrap();
    let o = outcome_with(&yaml, &conf);
    assert_eq!(bound_jobs(&o), vec!["default/small"]);
}

#[test]
fn vip_kill_clears_its_nodes_at_once_and_vip_wait_reserves_them() {
    let base = node("n1")
        + &node("n2")
        + &workload("tenant-1", "default", 0, false, &[("n1", &[0, 1, 2, 3])])
        + &workload("tenant-2", "default", 0, false, &[("n1", &[4, 5])])
        + &workload("other", "default", 0, false, &[("n2", &[0])]);
    let kill = "ringleader.io/vip: kill, ringleader.io/vip-nodes: n1";
    let o = outcome(&(base.clone() + &job("default", "vip", "default", "", 1, 8, kill)));
    assert_eq!(
        evicted(&o),
        vec![
            ("default/tenant-1", "tenant-1-worker-0", "default/vip"),
            ("default/tenant-2", "tenant-2-worker-0", "default/vip")
        ]
    );
    assert_eq!(o.evictions[0].reason, "killed by VIP job");
    assert_eq!(o.bindings.len(), 1);
    assert_eq!((o.bindings[0].node.as_str(), o.bindings[0].devices.len()), ("n1", 8));
    assert_eq!(o.phases["default/other"], PodGroupPhase::Running);

    let wait = "ringleader.io/vip: wait, ringleader.io/vip-nodes: n1";
    let o = outcome(
        &(base
            + &job("default", "vip", "default", "", 1, 8, wait)
            + &job("default", "filler", "default", "", 1, 2, "")),
    );
    assert!(o.evictions.is_empty());
    assert_eq!(
        reason(&o, "default/vip"),
        "VIP job waits for its nodes to free up; gang: only 0 of minAvailable 1 pods fit; pod vip-worker-0: 0/2 nodes are available: 1 Insufficient huawei.com/Ascend910, 1 node(s) not among the VIP job's nodes."
    );
    // The filler may not take n1's last two chips: it goes to n2.
    assert_eq!(bound_jobs(&o), vec!["default/filler"]);
    assert_eq!(o.bindings[0].node, "n2");
}

#[test]
fn vip_kill_evicts_victims_that_hold_its_queues_whole_capability() {
    // The victim holds all 8 chips the queue may use: the VIP job is
    // admitted as if they were back, and evicts it.
    let yaml = node("n1")
        + &queue("team", "{weight: 1, capability: {huawei.com/Ascend910: 8}}", "Open")
        + &workload("victim", "team", 0, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &job("default", "vip", "team", "", 1, 8, "ringleader.io/vip: kill, ringleader.io/vip-nodes: n1");
    let o = outcome(&yaml);
    assert_eq!(evicted(&o), vec![("default/victim", "victim-worker-0", "default/vip")]);
    assert_eq!(bound_jobs(&o), vec!["default/vip"]);
    // An ordinary job of the same queue still waits for the quota.
    let yaml = node("n1")
        + &node("n2")
        + &queue("team", "{weight: 1, capability: {huawei.com/Ascend910: 8}}", "Open")
        + &workload("victim", "team", 0, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &job("default", "plain", "team", "", 1, 8, "");
    let o = outcome(&yaml);
    assert!(o.evictions.is_empty() && o.bindings.is_empty(), "{:?}", o.bindings);
    assert!(reason(&o, "default/plain").contains("over capability"), "{}", reason(&o, "default/plain"));
}

#[test]
fn explanations_name_nodes_priority_classes_and_vip_errors() {
    let yaml = node("n1")
        + &gpu_node("g1")
        + &gpu_node("g2")
        + &job("default", "too-big", "default", "", 1, 8, "")
        + &job("default", "no-class", "default", "missing", 1, 1, "")
        + &job("default", "bad-vip", "default", "", 1, 1, "ringleader.io/vip: maybe, ringleader.io/vip-nodes: n1");
    let yaml = yaml + &workload("hog", "default", 0, true, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])]);
    let o = outcome(&yaml);
    assert_eq!(
        reason(&o, "default/too-big"),
        "gang: only 0 of minAvailable 1 pods fit; pod too-big-worker-0: 0/3 nodes are available: 2 node(s) didn't match node selector, 1 Insufficient huawei.com/Ascend910. \
         Reserved n1 for it against lower-priority jobs."
    );
    assert_eq!(reason(&o, "default/no-class"), "PriorityClass missing not found");
    assert_eq!(reason(&o, "default/bad-vip"), "annotation ringleader.io/vip: \"maybe\" is not wait or kill");
}

#[test]
fn actions_not_configured_do_not_run() {
    let yaml = node("n1")
        + &class("high", 1000)
        + &workload("low", "default", 0, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &job("default", "urgent", "default", "high", 1, 8, "");
    let conf =
        SchedulerConf::from_yaml("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n").unwrap();
    assert!(outcome_with(&yaml, &conf).evictions.is_empty());
    assert_eq!(outcome(&yaml).evictions.len(), 1);
}

#[test]
fn many_candidates_still_give_few_victims() {
    // Twelve low-priority gangs: eight 1-chip ones fill n1, four 2-chip ones fill n2.
    let mut yaml = node("n1") + &node("n2") + &class("high", 1000);
    for i in 0..8u32 {
        yaml += &workload(&format!("one-{i}"), "default", 1, false, &[("n1", &[i])]);
    }
    for i in 0..4u32 {
        yaml += &workload(&format!("two-{i}"), "default", 1, false, &[("n2", &[2 * i, 2 * i + 1])]);
    }
    yaml += &job("default", "urgent", "default", "high", 1, 8, "");
    let o = outcome(&yaml);
    let victims: Vec<&str> = o.evictions.iter().map(|e| e.job.as_str()).collect();
    assert_eq!(victims, vec!["default/two-0", "default/two-1", "default/two-2", "default/two-3"]);
    assert_eq!(o.bindings[0].node, "n2");
}

#[test]
fn parent_queues_bound_and_lock_their_children() {
    let yaml = node("n1")
        + &node("n2")
        + &queue("org", "{weight: 1, capability: {huawei.com/Ascend910: 8}}", "Open")
        + &queue("org-a", "{weight: 1, parent: org}", "Open")
        + &queue("org-b", "{weight: 1, parent: org}", "Open")
        + &queue("lab", "{weight: 1}", "Closed")
        + &queue("lab-x", "{weight: 1, parent: lab}", "Open")
        + &workload("a-run", "org-a", 0, false, &[("n1", &[0, 1, 2, 3, 4, 5])])
        + &job("default", "b-job", "org-b", "", 1, 4, "")
        + &job("default", "b-small", "org-b", "", 1, 2, "")
        + &job("default", "x-job", "lab-x", "", 1, 1, "");
    let o = outcome(&yaml);
    assert_eq!(reason(&o, "default/b-job"), "queue org over capability: huawei.com/Ascend910 requested 4, used 6 of 8");
    assert_eq!(reason(&o, "default/x-job"), "queue lab is Closed");
    assert_eq!(bound_jobs(&o), vec!["default/b-small"]);
}

#[test]
fn scheduler_conf_yaml_round_trips_volcano_format() {
    let conf = SchedulerConf::from_yaml(
        "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: conformance\n- plugins:\n  - name: overcommit\n  - name: drf\n  - name: predicates\n  - name: proportion\n  - name: nodeorder\n  - name: binpack\n",
    )
    .unwrap();
    assert_eq!(conf.actions(), vec!["enqueue", "allocate", "backfill"]);
    assert!(conf.enabled("drf") && !conf.enabled("capacity"));
    assert_eq!(SchedulerConf::default().without("drf").tiers[1].plugins.len(), 4);
}

#[test]
fn failed_preemption_is_explained() {
    let yaml = node("n1")
        + &node("n2")
        + &class("high", 1000)
        + &workload("low", "default", 1, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &workload("higher", "default", 5000, false, &[("n2", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &job("default", "pair", "default", "high", 2, 8, "");
    let o = outcome(&yaml);
    assert!(o.evictions.is_empty());
    assert_eq!(
        reason(&o, "default/pair"),
        "gang: only 0 of minAvailable 2 pods fit; pod pair-worker-0: 0/2 nodes are available: 2 Insufficient huawei.com/Ascend910. \
         Reserved n1, n2 for it against lower-priority jobs. \
         Preempt: no lower-priority gangs of queue default to evict would make room."
    );
}

fn snapshot(yaml: &str) -> Snapshot {
    let docs = parse_str("scenario.yaml", yaml).unwrap();
    let objects: Vec<Resource> = check_documents(&docs).into_iter().filter_map(|r| r.resource).collect();
    let jobs: Vec<Job> = objects.iter().filter_map(Job::from_resource).collect();
    Snapshot::from_resources(&objects, jobs).unwrap()
}

#[test]
fn reservation_prevents_starvation_across_cycles() {
    let yaml = node("n1")
        + &node("n2")
        + &class("high", 100)
        + &class("low", 1)
        + &workload("steady", "default", 100, false, &[("n2", &[0, 1, 2, 3])])
        + &job("default", "big", "default", "high", 2, 8, "")
        + &job("default", "small", "default", "low", 1, 4, "");
    // No preemption, so only the reservation stands between the gang and the small job.
    let conf = |reservation: bool| {
        SchedulerConf::from_yaml(&format!(
            "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n    arguments: {{reservation: {reservation}}}\n- plugins:\n  - name: proportion\n"
        ))
        .unwrap()
    };
    for (conf, big_runs) in [(conf(true), true), (conf(false), false)] {
        // Cycle 1: big cannot fit while steady runs.
        let first = snapshot(&yaml);
        let o1 = session::run(first.clone(), &conf, 0);
        assert!(o1.pending.iter().any(|p| p.job == "default/big"));
        // Between cycles steady finishes; cycle 2 sees whatever cycle 1 bound still running.
        let mut second = first.after(&o1);
        second.running.retain(|r| r.name != "steady");
        let o2 = session::run(second, &conf, 10);
        assert_eq!(bound_jobs(&o2).contains(&"default/big".to_string()), big_runs, "{:?}", o2.pending);
        if !big_runs {
            // The small job took half of n2 in cycle 1 and keeps the gang out.
            assert_eq!(bound_jobs(&o1), vec!["default/small"]);
        }
    }
}

#[test]
fn a_child_queue_never_reclaims_from_its_ancestor() {
    // team-a runs a job of its own over the whole cluster; its child queue's
    // job must wait (or take its sibling's share), not evict its parent's job.
    let yaml = node("n1")
        + &node("n2")
        + &queue("team-a", "{weight: 1}", "Open")
        + &queue("team-a-child", "{weight: 1, parent: team-a}", "Open")
        + &workload("parent-run", "team-a", 0, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &workload("parent-run-2", "team-a", 0, false, &[("n2", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &job("default", "child-job", "team-a-child", "", 1, 8, "");
    let o = outcome(&yaml);
    assert!(o.evictions.is_empty(), "{:?}", o.evictions);
    assert!(bound_jobs(&o).is_empty());

    // Nor does a parent's job reclaim from its child.
    let yaml = node("n1")
        + &node("n2")
        + &queue("team-a", "{weight: 1}", "Open")
        + &queue("team-a-child", "{weight: 1, parent: team-a}", "Open")
        + &workload("child-run", "team-a-child", 0, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &workload("child-run-2", "team-a-child", 0, false, &[("n2", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &job("default", "parent-job", "team-a", "", 1, 8, "");
    let o = outcome(&yaml);
    assert!(o.evictions.is_empty(), "{:?}", o.evictions);

    // Across branches reclaim still works: team-b holds more than it
    // deserves and gives it back to the child queue, not team-a's own job.
    let yaml = node("n1")
        + &node("n2")
        + &queue("team-a", "{weight: 1}", "Open")
        + &queue("team-a-child", "{weight: 1, parent: team-a}", "Open")
        + &queue("team-b", "{weight: 1}", "Open")
        + &workload("b-run", "team-b", 0, false, &[("n1", &[0, 1, 2, 3, 4, 5, 6, 7])])
        + &workload("b-run-2", "team-b", 0, false, &[("n2", &[0, 1, 2, 3])])
        + &workload("parent-run", "team-a", 0, false, &[("n2", &[4, 5, 6, 7])])
        + &job("default", "child-job", "team-a-child", "", 1, 8, "");
    let o = outcome(&yaml);
    assert_eq!(evicted(&o), vec![("default/b-run", "b-run-worker-0", "default/child-job")]);
    assert_eq!(bound_jobs(&o), vec!["default/child-job"]);
}
