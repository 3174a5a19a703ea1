//! Restart back-off (CrashLoopBackOff) and node loss on simulated time:
//! the delays a crashing replica waits, when they start over, and what
//! becomes of pods whose node went silent beyond the toleration.

mod common;

use common::{inline, Sim};
use ringleader_controller::lifecycle::{Action, JobStatus, Phase, PodPhase};

fn pytorch(restart: &str) -> String {
    format!(
        r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: pt, namespace: default}}
spec:
  runPolicy:
    schedulingPolicy: {{minAvailable: 2}}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: {restart}
      template:
        spec:
          containers: [{{name: pytorch, image: pt, resources: {{limits: {{nvidia.com/gpu: 4}}, requests: {{nvidia.com/gpu: 4}}}}}}]
    Worker:
      replicas: 1
      restartPolicy: {restart}
      template:
        spec:
          containers: [{{name: pytorch, image: pt, resources: {{limits: {{nvidia.com/gpu: 4}}, requests: {{nvidia.com/gpu: 4}}}}}}]
"#
    )
}

fn back_off_delay(actions: &[Action], pod: &str) -> Option<u64> {
    actions.iter().find_map(|a| match a {
        Action::BackOff { pod: p, delay, .. } if p == pod => Some(*delay),
        _ => None,
    })
}

fn worker(sim: &Sim) -> (u32, PodPhase, Option<String>) {
    let p = sim.pods.iter().find(|p| p.name == "pt-worker-0").expect("worker pod");
    (p.generation, p.phase, p.node.clone())
}

/// Fails the worker `ran` seconds from now; returns the failure time and the back-off it got.
fn crash(sim: &mut Sim, ran: u64) -> (u64, u64) {
    sim.now += ran;
    sim.set_phase("pt-worker-0", PodPhase::Failed, Some(1));
    let actions = sim.tick();
    let delay = back_off_delay(&actions, "pt-worker-0").expect("a BackOff for the failed pod");
    assert!(actions.iter().any(|a| matches!(a, Action::RequeueAfter(d) if *d == delay)), "wakes up when it ends");
    (sim.now, delay)
}

#[test]
fn a_crashing_replica_waits_ten_seconds_doubling_to_five_minutes() {
    let (job, extras) = inline(&pytorch("OnFailure"));
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.now = 1_000;
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Running);
    let mut delays = Vec::new();
    for round in 1..=8u32 {
        let (failed_at, delay) = crash(&mut sim, 3);
        // Through the delay the failed pod stays and nothing replaces it.
        sim.settle();
        sim.now = failed_at + delay - 1;
        sim.run();
        let (generation, phase, _) = worker(&sim);
        assert_eq!((generation, phase), (round - 1, PodPhase::Failed), "round {round}: still backing off");
        assert_eq!(sim.state.status.phase, Phase::Running, "the master keeps running meanwhile");
        sim.now = failed_at + delay;
        sim.run();
        assert_eq!(worker(&sim).0, round, "round {round}: restarted once the delay ran out");
        assert_eq!(worker(&sim).1, PodPhase::Running);
        delays.push(delay);
    }
    assert_eq!(delays, [10, 20, 40, 80, 160, 300, 300, 300]);
    assert_eq!(sim.state.status.retries, 8, "no backoffLimit: every restart allowed, each one delayed");

    // Ten minutes without failing: the next crash waits 10 s again.
    let (_, delay) = crash(&mut sim, 600);
    assert_eq!(delay, 10);
}

#[test]
fn back_off_survives_a_restarted_controller_through_the_status() {
    let (job, extras) = inline(&pytorch("OnFailure"));
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    let (failed_at, first) = crash(&mut sim, 5);
    sim.now = failed_at + first;
    sim.run();
    // A new controller knows only what was written: the job's status.
    let written = serde_json::to_value(&sim.state.status).expect("status serialises");
    assert_eq!(written["backoff"]["pt-worker-0"]["delay"], 10);
    sim.state.status = serde_json::from_value::<JobStatus>(written).expect("status reads back");
    let (_, second) = crash(&mut sim, 5);
    assert_eq!(second, 20, "the doubling went on across the restart");

    // A status written before back-off existed still reads.
    let mut old = serde_json::to_value(JobStatus::default()).expect("status");
    old.as_object_mut().map(|o| o.remove("backoff"));
    assert!(serde_json::from_value::<JobStatus>(old).is_ok());
}

#[test]
fn pods_on_a_node_lost_beyond_the_toleration_are_restarted_elsewhere_at_once() {
    let (job, extras) = inline(&pytorch("OnFailure"));
    let mut sim = Sim::new(job, extras, 3, 4);
    sim.now = 1_000;
    sim.run();
    let (_, _, Some(dead)) = worker(&sim) else { panic!("worker bound") };
    for n in &mut sim.nodes {
        n.last_heartbeat = Some(1_000);
        n.ready = n.name != dead;
    }
    // Heartbeat timeout (40 s) plus the not-ready toleration (300 s).
    sim.now = 1_339;
    let actions = sim.tick();
    assert!(!actions.iter().any(|a| matches!(a, Action::MarkPodLost { .. })), "within the toleration");
    assert!(actions.iter().any(|a| matches!(a, Action::RequeueAfter(1))), "wakes up when it ends: {actions:?}");
    assert_eq!(worker(&sim).1, PodPhase::Running, "no fault-scheduling label: the pod is left alone so far");

    sim.now = 1_340;
    let actions = sim.tick();
    let lost: Vec<(&str, &str)> = actions
        .iter()
        .filter_map(|a| match a {
            Action::MarkPodLost { pod, node } => Some((pod.as_str(), node.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(lost, [("pt-worker-0", dead.as_str())]);
    sim.run();
    let (generation, phase, node) = worker(&sim);
    assert_eq!((generation, phase), (1, PodPhase::Running), "OnFailure restarts it, with no back-off");
    assert!(node.is_some_and(|n| n != dead), "rescheduled on a ready node");
    assert!(sim.held().iter().all(|(n, _)| *n != dead), "nothing holds the lost node's devices");
    assert!(sim.state.status.backoff.is_empty(), "a lost node is not a crash");
    assert_eq!(sim.state.status.phase, Phase::Running);
}

#[test]
fn a_never_restarting_job_fails_when_its_node_is_lost() {
    let (job, extras) = inline(&pytorch("Never"));
    let mut sim = Sim::new(job, extras, 3, 4);
    sim.run();
    let (_, _, Some(dead)) = worker(&sim) else { panic!("worker bound") };
    for n in sim.nodes.iter_mut().filter(|n| n.name == dead) {
        n.ready = false;
        n.last_heartbeat = Some(0);
    }
    sim.now = 340;
    sim.run();
    assert_eq!(sim.state.status.phase, Phase::Failed);
    assert!(sim.state.status.message.contains(&format!("was lost with node {dead}")), "{}", sim.state.status.message);
    assert!(sim.held().is_empty(), "every device is free");
}
