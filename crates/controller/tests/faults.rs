//! Faults on simulated time: grace vs force, pod- vs job-level
//! rescheduling, device isolation, elastic shrink and grow, ring hot reset.

mod common;

use common::{deletes, example, inline, Sim};
use ringleader_controller::fault::DeviceRef;
use ringleader_controller::hotreset::{HotReset, ResetAction};
use ringleader_controller::lifecycle::{Action, DeleteMode, Phase};
use std::collections::{BTreeMap, BTreeSet};

fn npu_vcjob(labels: &str, annotations: &str, replicas: u32) -> String {
    format!(
        r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: ft
  namespace: default
  labels: {{ring-controller.atlas: ascend-910, {labels}}}
  annotations: {{{annotations}}}
spec:
  minAvailable: {replicas}
  schedulerName: volcano
  maxRetry: 3
  tasks:
  - name: worker
    replicas: {replicas}
    template:
      metadata: {{labels: {{ring-controller.atlas: ascend-910}}}}
      spec:
        restartPolicy: Never
        nodeSelector: {{accelerator-type: module}}
        containers:
        - name: c
          image: i
          resources: {{limits: {{huawei.com/Ascend910: 8}}, requests: {{huawei.com/Ascend910: 8}}}}
"#
    )
}

fn node_of(sim: &Sim, pod: &str) -> String {
    sim.pods.iter().find(|p| p.name == pod).and_then(|p| p.node.clone()).unwrap_or_default()
}

#[test]
fn grace_deletes_gracefully_then_forces_after_fifteen_minutes() {
    let (job, extras) = inline(&npu_vcjob("fault-scheduling: grace", "", 2));
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    let bad = node_of(&sim, "ft-worker-0");
    sim.now = 100;
    sim.nodes.iter_mut().filter(|n| n.name == bad).for_each(|n| n.ready = false);
    let actions = sim.tick();
    assert_eq!(sim.state.status.phase, Phase::Restarting);
    assert_eq!(sim.state.status.retries, 0, "a fault does not use up retries");
    let d = deletes(&actions);
    assert!(d.contains(&("ft-worker-0".to_string(), DeleteMode::Graceful)));
    assert!(d.contains(&("ft-worker-1".to_string(), DeleteMode::Graceful)), "job-level: the whole job moves");
    assert!(sim.state.status.isolated.iter().any(|x| x.node == bad), "the node's chips are isolated");
    sim.settle(); // worker-1 goes; worker-0's kubelet is gone, so it stays terminating.
    sim.now = 100 + 899;
    let actions = sim.tick();
    assert!(deletes(&actions).is_empty(), "no force before the grace period: {actions:?}");
    assert!(actions.iter().any(|a| matches!(a, Action::RequeueAfter(1))));
    sim.now = 100 + 900;
    let actions = sim.tick();
    assert_eq!(deletes(&actions), [("ft-worker-0".to_string(), DeleteMode::Force)]);
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    assert!(sim.pods.iter().all(|p| p.node.as_deref() != Some(bad.as_str())), "rescheduled onto healthy nodes");
}

#[test]
fn force_deletes_at_once() {
    let (job, extras) = inline(&npu_vcjob("fault-scheduling: force", "", 2));
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    let bad = node_of(&sim, "ft-worker-1");
    sim.now = 100;
    sim.nodes.iter_mut().filter(|n| n.name == bad).for_each(|n| n.ready = false);
    let d = deletes(&sim.tick());
    assert!(d.contains(&("ft-worker-1".to_string(), DeleteMode::Force)));
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    assert_eq!(sim.state.status.version, 1);
}

#[test]
fn pod_level_recovery_moves_only_the_faulty_pod_and_isolates_the_chip() {
    let (job, extras) = inline(&npu_vcjob("fault-scheduling: force", "huawei.com/recover_policy_path: pod", 2));
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    let bad = node_of(&sim, "ft-worker-0");
    let good = node_of(&sim, "ft-worker-1");
    sim.nodes.iter_mut().filter(|n| n.name == bad).for_each(|n| {
        n.unhealthy_devices.insert(3);
    });
    let d = deletes(&sim.tick());
    assert_eq!(d, [("ft-worker-0".to_string(), DeleteMode::Force)], "only the faulty pod");
    assert_eq!(sim.state.status.phase, Phase::Running);
    assert_eq!(sim.state.status.generations.get("ft-worker-0"), Some(&1));
    assert!(sim.state.status.isolated.contains(&DeviceRef { node: bad.clone(), device: 3 }));
    sim.run();
    assert_eq!(node_of(&sim, "ft-worker-1"), good, "the healthy pod kept running");
    let moved = sim.pods.iter().find(|p| p.name == "ft-worker-0").expect("recreated");
    assert_ne!(moved.node.as_deref(), Some(bad.as_str()), "not back onto the faulty chip's node (8 chips needed)");
    // The chip recovers: with auto-stowing it is handed out again.
    sim.nodes.iter_mut().filter(|n| n.name == bad).for_each(|n| n.unhealthy_devices.clear());
    sim.state.config.fault.auto_stowing = false;
    sim.tick();
    assert_eq!(sim.state.status.isolated.len(), 1, "-autoStowing=false keeps a recovered chip out");
    sim.state.config.fault.auto_stowing = true;
    sim.tick();
    assert!(sim.state.status.isolated.is_empty());
}

#[test]
fn rank_table_config_map_follows_placement() {
    let (job, extras) = example("vcjob-rings-config.yaml");
    let mut sim = Sim::new(job, extras, 1, 8);
    let first = sim.tick();
    let cm = |actions: &[Action]| {
        actions.iter().find_map(|a| match a {
            Action::WriteConfigMap(cm) => cm.data.clone().and_then(|d| d.get("hccl.json").cloned()),
            _ => None,
        })
    };
    assert_eq!(cm(&first).as_deref(), Some(r#"{"status":"initializing"}"#));
    sim.settle();
    sim.schedule();
    let table = cm(&sim.tick()).expect("rewritten once the pod has its chips");
    assert!(table.starts_with(r#"{"status":"completed","version":"1.0","server_count":"1""#), "{table}");
    assert!(cm(&sim.tick()).is_none(), "unchanged: not rewritten");
}

#[test]
fn elastic_shrinks_to_the_available_nodes_and_grows_back() {
    let (job, extras) = example("vcjob-elastic.yaml");
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    let bad = node_of(&sim, "mindx-dls-elastic-default-test-1");
    sim.now = 50;
    sim.nodes.iter_mut().filter(|n| n.name == bad).for_each(|n| n.ready = false);
    sim.tick();
    assert_eq!(sim.state.status.phase, Phase::Restarting);
    assert_eq!(sim.state.status.scale.map(|s| s.replicas), Some(1), "no spare node: 2 → 1 replica");
    sim.now = 50 + 900; // the lost pod is forced out after the grace period
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    assert_eq!(sim.names(), ["mindx-dls-elastic-default-test-0"]);
    let exp = sim.state.expansion();
    assert_eq!(exp.pod_group.spec.min_member, Some(1));
    assert_eq!(sim.rank_table.as_ref().map(|c| c.contains(r#""server_count":"1""#)), Some(true));
    let mark = sim.state.status.rank_table.as_ref();
    assert_eq!(mark.map(|m| sim.rank_table.as_deref().is_some_and(|c| m.describes(c))), Some(true));

    // The node comes back: grow to the full size.
    sim.now = 2000;
    sim.nodes.iter_mut().filter(|n| n.name == bad).for_each(|n| n.ready = true);
    sim.run();
    assert_eq!(sim.state.status.scale, None);
    assert_eq!(sim.state.status.phase, Phase::Running);
    assert_eq!(sim.names(), ["mindx-dls-elastic-default-test-0", "mindx-dls-elastic-default-test-1"]);
}

/// The elastic example (2 × 8 chips, minReplicas 1, or `min_replicas`)
/// running on node-0 and node-1 of three nodes, while another job held
/// node-2, which it has just let go of.
fn elastic_on_two_of_three(min_replicas: Option<u32>) -> Sim {
    let (mut job, extras) = example("vcjob-elastic.yaml");
    if let (Some(min), Some(el)) = (min_replicas, job.fault.elastic.as_mut()) {
        el.min_replicas = min;
    }
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.foreign = (0..8).map(|d| ("node-2".to_string(), d)).collect();
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    let nodes: BTreeSet<String> = sim.pods.iter().filter_map(|p| p.node.clone()).collect();
    assert_eq!(nodes, ["node-0".to_string(), "node-1".to_string()].into());
    sim.foreign.clear();
    sim
}

/// A chip of node-1 breaks while node-2 is free, so the job restarts at
/// full size; the other job takes node-2 back before the new pods are
/// placed, and a gang scheduler places none of them (two do not fit).
fn spare_taken_while_restarting(sim: &mut Sim) {
    let bad = node_of(sim, "mindx-dls-elastic-default-test-1");
    assert_eq!(bad, "node-1");
    sim.now = 50;
    sim.nodes[1].unhealthy_devices.insert(3);
    sim.tick();
    assert_eq!(sim.state.status.phase, Phase::Restarting);
    assert_eq!(sim.state.status.scale, None, "node-2 was free at the fault: full size");
    sim.foreign = (0..8).map(|d| ("node-2".to_string(), d)).collect();
    sim.settle();
    sim.tick();
    assert_eq!(sim.state.status.phase, Phase::Pending);
    assert_eq!(sim.pods.len(), 2, "recreated at full size: {:?}", sim.names());
    assert!(sim.pods.iter().all(|p| p.node.is_none()));
}

#[test]
fn elastic_restart_shrinks_when_the_spare_is_taken_before_its_pods_are_placed() {
    let mut sim = elastic_on_two_of_three(None);
    spare_taken_while_restarting(&mut sim);
    let actions = sim.tick();
    assert_eq!(sim.state.status.phase, Phase::Restarting);
    assert_eq!(sim.state.status.reason, "ElasticScaleDown");
    assert_eq!(sim.state.status.scale.map(|s| s.replicas), Some(1), "only node-0 fits a pod: 2 → 1");
    assert_eq!(deletes(&actions).len(), 2, "the unplaced full-size pods go: {actions:?}");
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    assert_eq!(sim.names(), ["mindx-dls-elastic-default-test-0"]);
    assert!(sim.held().iter().all(|(n, _)| n == "node-0"), "{:?}", sim.held());
    assert!(sim.run_is_quiet(), "shrunk once, no flapping");

    // The other job ends: the job grows back, onto node-0 and node-2.
    sim.foreign.clear();
    sim.now = 2000;
    sim.run();
    assert_eq!(sim.state.status.scale, None);
    assert_eq!(sim.state.status.phase, Phase::Running);
    let nodes: BTreeSet<String> = sim.pods.iter().filter_map(|p| p.node.clone()).collect();
    assert_eq!(nodes, ["node-0".to_string(), "node-2".to_string()].into(), "node-1 still has a broken chip");
}

#[test]
fn elastic_restart_that_may_not_shrink_waits_pending() {
    let mut sim = elastic_on_two_of_three(Some(2));
    spare_taken_while_restarting(&mut sim);
    for _ in 0..3 {
        let actions = sim.tick();
        assert!(deletes(&actions).is_empty(), "minReplicas 2: nothing to shrink to: {actions:?}");
        assert_eq!(sim.state.status.phase, Phase::Pending);
        assert_eq!(sim.state.status.scale, None);
    }
    sim.foreign.clear();
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    assert_eq!(sim.pods.len(), 2);
}

#[test]
fn elastic_shrinks_past_a_spare_node_another_job_holds() {
    let mut sim = elastic_on_two_of_three(None);
    sim.foreign = (0..8).map(|d| ("node-2".to_string(), d)).collect();
    sim.now = 50;
    sim.nodes[1].unhealthy_devices.insert(3);
    sim.tick();
    assert_eq!(sim.state.status.scale.map(|s| s.replicas), Some(1), "node-2 is busy: 2 → 1 replica");
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    assert_eq!(sim.names(), ["mindx-dls-elastic-default-test-0"]);
    assert_eq!(node_of(&sim, "mindx-dls-elastic-default-test-0"), "node-0");
}

#[test]
fn elastic_single_node_steps_down_chips() {
    let (job, extras) = inline(
        &npu_vcjob("fault-scheduling: grace, elastic-scheduling: \"on\"", "minReplicas: \"1\"", 1)
            .replace("maxRetry: 3", "maxRetry: 0"),
    );
    let mut sim = Sim::new(job, extras, 1, 8);
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    sim.nodes[0].unhealthy_devices = [0, 1, 2, 5].into();
    sim.tick();
    assert_eq!(sim.state.status.scale.map(|s| s.chips), Some(4), "4 healthy chips: 8 → 4");
    sim.now = 1000;
    sim.run();
    let pod = &sim.pods[0];
    assert_eq!(pod.devices, [3, 4, 6, 7], "only healthy chips");
    let job = sim.state.effective_job();
    assert_eq!(job.roles[0].device.as_ref().map(|d| d.count), Some(4));
}

#[test]
fn hot_reset_waits_for_the_whole_ring_to_be_idle() {
    let rings: BTreeMap<String, Vec<Vec<u32>>> = [("n".to_string(), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]])].into();
    let dev = |d: u32| DeviceRef { node: "n".to_string(), device: d };
    let faulty: BTreeSet<DeviceRef> = [dev(2)].into();
    let mut hr = HotReset::new(60);
    // Chip 0 of the same ring still runs another job: wait.
    let step = hr.step(&faulty, &[dev(0), dev(5)].into(), &rings, 0);
    assert!(step.start.is_empty());
    let step = hr.step(&faulty, &[dev(5)].into(), &rings, 10);
    assert_eq!(step.start, [ResetAction { node: "n".to_string(), chips: vec![0, 1, 2, 3] }]);
    assert_eq!(hr.resetting().len(), 4, "the ring is busy while resetting");
    assert!(hr.step(&faulty, &BTreeSet::new(), &rings, 30).start.is_empty(), "not started twice");
    let step = hr.step(&faulty, &BTreeSet::new(), &rings, 70);
    assert_eq!(step.recovered, [dev(2)]);
    // Without a ring the chip is reset alone.
    let mut hr = HotReset::new(60);
    let step = hr.step(&faulty, &[dev(0)].into(), &BTreeMap::new(), 0);
    assert_eq!(step.start, [ResetAction { node: "n".to_string(), chips: vec![2] }]);
}

#[test]
fn elastic_rescale_rebuilds_env_for_the_new_size() {
    let yaml = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: el
  namespace: default
  labels: {ring-controller.atlas: ascend-910, fault-scheduling: grace, elastic-scheduling: "on"}
  annotations: {minReplicas: "2"}
spec:
  minAvailable: 2
  schedulerName: volcano
  maxRetry: 0
  plugins: {svc: [], pytorch: []}
  tasks:
  - name: master
    replicas: 1
    template:
      metadata: {labels: {ring-controller.atlas: ascend-910}}
      spec:
        restartPolicy: Never
        containers: [{name: c, image: i, resources: {limits: {huawei.com/Ascend910: 8}, requests: {huawei.com/Ascend910: 8}}}]
  - name: worker
    replicas: 2
    template:
      metadata: {labels: {ring-controller.atlas: ascend-910}}
      spec:
        restartPolicy: Never
        containers: [{name: c, image: i, resources: {limits: {huawei.com/Ascend910: 8}, requests: {huawei.com/Ascend910: 8}}}]
"#;
    let (job, extras) = inline(yaml);
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    let bad = node_of(&sim, "el-worker-1");
    sim.nodes.iter_mut().filter(|n| n.name == bad).for_each(|n| n.ready = false);
    sim.tick();
    assert_eq!(sim.state.status.scale.map(|s| s.replicas), Some(2));
    sim.now = 900;
    let mut created = Vec::new();
    for _ in 0..10 {
        for a in sim.tick() {
            if let Action::CreatePod(p) = a {
                created.push(*p);
            }
        }
        sim.settle();
        sim.schedule();
    }
    assert_eq!(sim.state.status.phase, Phase::Running);
    let names: Vec<&str> = created.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["el-master-0", "el-worker-0"]);
    let env = |p: &ringleader_controller::PodPlan, name: &str| {
        p.template
            .spec
            .as_ref()
            .and_then(|s| s.containers[0].env.iter().flatten().find(|e| e.name == name).and_then(|e| e.value.clone()))
    };
    assert_eq!(env(&created[1], "WORLD_SIZE").as_deref(), Some("2"));
    assert_eq!(env(&created[1], "VC_WORKER_NUM").as_deref(), Some("1"));
    assert_eq!(env(&created[1], "VC_WORKER_HOSTS").as_deref(), Some("el-worker-0.el"));
}

/// Seed 000's inference card fault rescheduling: each replica works alone,
/// so only the one on the broken chip is replaced, under a new name.
#[test]
fn a_rescheduled_deployment_pod_gets_a_new_name_and_its_peer_stays() {
    let (mut job, extras) = example("deployment-inference.yaml");
    job.fault.fault_scheduling = Some(ringleader_api::model::FaultScheduling::Force);
    job.roles[0].replicas = 2;
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    assert_eq!(sim.names(), ["resnetinfer1-1-0", "resnetinfer1-1-1"]);
    let bad = node_of(&sim, "resnetinfer1-1-0");
    let chip = sim.pods.iter().find(|p| p.name == "resnetinfer1-1-0").map(|p| p.devices[0]).expect("a chip");
    sim.nodes.iter_mut().filter(|n| n.name == bad).for_each(|n| {
        n.unhealthy_devices.insert(chip);
    });
    let before = sim.log.len();
    sim.run();
    assert_eq!(sim.names(), ["resnetinfer1-1-0-g1", "resnetinfer1-1-1"]);
    let touched: Vec<&String> =
        sim.log[before..].iter().filter(|l| l.contains(" create ") || l.contains(" delete ")).collect();
    assert!(touched.iter().all(|l| !l.contains("resnetinfer1-1-1")), "the healthy replica untouched: {touched:?}");
    assert_eq!(sim.state.status.phase, Phase::Running);
}
