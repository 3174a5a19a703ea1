//! No panic on any sequence of events, and invariants that always hold: no
//! device held by two live pods, no pod of a finished job left running,
//! retries never past the limit, no pod created under a name in use (the
//! simulator asserts that one), and a reconcile repeated on the same
//! observations writes no new status.

mod common;

use common::{example, inline, Sim};
use proptest::prelude::*;
use ringleader_controller::lifecycle::PodPhase;
use std::collections::BTreeSet;

#[derive(Debug, Clone)]
enum Ev {
    Succeed(usize),
    Fail(usize, i32),
    Evict(usize),
    NodeDown(usize),
    NodeUp(usize),
    DeviceBad(usize, u32),
    DeviceGood(usize, u32),
    Advance(u64),
    Settle,
    Schedule,
    Suspend(bool),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        3 => (0..4usize).prop_map(Ev::Succeed),
        4 => (0..4usize, prop_oneof![Just(1), Just(3), Just(137), Just(255), Just(-1)]).prop_map(|(i, c)| Ev::Fail(i, c)),
        1 => (0..4usize).prop_map(Ev::Evict),
        1 => (0..3usize).prop_map(Ev::NodeDown),
        1 => (0..3usize).prop_map(Ev::NodeUp),
        1 => (0..3usize, 0..8u32).prop_map(|(n, d)| Ev::DeviceBad(n, d)),
        1 => (0..3usize, 0..8u32).prop_map(|(n, d)| Ev::DeviceGood(n, d)),
        2 => prop_oneof![Just(1u64), Just(60), Just(600), Just(1000)].prop_map(Ev::Advance),
        4 => Just(Ev::Settle),
        4 => Just(Ev::Schedule),
        1 => any::<bool>().prop_map(Ev::Suspend),
    ]
}

const VC_POLICIES: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vc, namespace: default, labels: {ring-controller.atlas: ascend-910, fault-scheduling: grace}}
spec:
  minAvailable: 2
  schedulerName: volcano
  maxRetry: 2
  policies:
  - {event: PodEvicted, action: RestartJob}
  - {exitCode: 137, action: RestartTask}
  - {event: PodPending, action: AbortJob, timeout: 30m}
  tasks:
  - name: worker
    replicas: 2
    policies: [{event: TaskCompleted, action: CompleteJob}]
    template:
      metadata: {labels: {ring-controller.atlas: ascend-910}}
      spec:
        restartPolicy: Never
        containers:
        - {name: c, image: i, resources: {limits: {huawei.com/Ascend910: 4}, requests: {huawei.com/Ascend910: 4}}}
"#;

const POD_LEVEL: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: pl
  namespace: default
  labels: {ring-controller.atlas: ascend-910, fault-scheduling: force}
  annotations: {huawei.com/recover_policy_path: pod}
spec:
  minAvailable: 2
  schedulerName: volcano
  tasks:
  - name: worker
    replicas: 2
    template:
      metadata: {labels: {ring-controller.atlas: ascend-910}}
      spec:
        restartPolicy: OnFailure
        containers:
        - {name: c, image: i, resources: {limits: {huawei.com/Ascend910: 8}, requests: {huawei.com/Ascend910: 8}}}
"#;

fn job(which: usize) -> Sim {
    let (job, extras) = match which {
        0 => example("pytorchjob.yaml"),
        1 => example("ascendjob-pytorch.yaml"),
        2 => example("vcjob-elastic.yaml"),
        3 => example("deployment-inference.yaml"),
        4 => inline(VC_POLICIES),
        5 => inline(POD_LEVEL),
        _ => example("mpijob.yaml"),
    };
    let mut job = job;
    if which == 0 {
        job.fault.backoff_limit = Some(2);
        job.fault.active_deadline_seconds = Some(5000);
        job.fault.ttl_seconds_after_finished = Some(100);
    }
    Sim::new(job, extras, 3, 8)
}

fn apply(sim: &mut Sim, e: &Ev) {
    let names = sim.names();
    let pick = |i: usize| names.get(i % names.len().max(1)).cloned();
    match e {
        Ev::Succeed(i) | Ev::Fail(i, _) | Ev::Evict(i) => {
            let Some(name) = pick(*i) else { return };
            let live = sim.pods.iter().any(|p| p.name == name && p.phase == PodPhase::Running);
            if !live {
                return;
            }
            match e {
                Ev::Succeed(_) => sim.set_phase(&name, PodPhase::Succeeded, Some(0)),
                Ev::Fail(_, c) => sim.set_phase(&name, PodPhase::Failed, Some(*c)),
                _ => {
                    sim.set_phase(&name, PodPhase::Failed, None);
                    sim.pod(&name).evicted = true;
                }
            }
        }
        Ev::NodeDown(n) => sim.nodes[*n].ready = false,
        Ev::NodeUp(n) => sim.nodes[*n].ready = true,
        Ev::DeviceBad(n, d) => {
            sim.nodes[*n].unhealthy_devices.insert(*d);
        }
        Ev::DeviceGood(n, d) => {
            sim.nodes[*n].unhealthy_devices.remove(d);
        }
        Ev::Advance(s) => sim.now += s,
        Ev::Settle => sim.settle(),
        Ev::Schedule => sim.schedule(),
        Ev::Suspend(on) => sim.state.extras.suspended = *on,
    }
}

fn check(sim: &Sim) {
    let mut held = BTreeSet::new();
    for p in sim.pods.iter().filter(|p| p.phase.is_live()) {
        for d in &p.devices {
            assert!(held.insert((p.node.clone(), *d)), "device {d} on {:?} held twice", p.node);
        }
    }
    let st = &sim.state.status;
    if let Some(limit) = sim.state.job.fault.backoff_limit {
        assert!(st.retries <= limit, "retries {} > limit {limit}", st.retries);
    }
    if st.phase.is_finished() {
        for p in sim.pods.iter().filter(|p| p.phase.is_live()) {
            assert!(p.deleting, "pod {} of a finished job ({:?}) still runs", p.name, st.phase);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_event_sequence_keeps_the_invariants(which in 0..7usize, events in prop::collection::vec(ev(), 0..40)) {
        let mut sim = job(which);
        sim.tick();
        check(&sim);
        for e in &events {
            apply(&mut sim, e);
            // Level-triggered and idempotent: with the status just written and
            // the same observations, a second reconcile changes nothing.
            let observed = sim.observed();
            let mut twice = sim.state.clone();
            twice.apply(&ringleader_controller::reconcile(&twice, &observed, sim.now));
            let again = ringleader_controller::reconcile(&twice, &observed, sim.now);
            prop_assert!(
                !again.iter().any(|a| matches!(a, ringleader_controller::Action::WriteStatus(_))),
                "status is not a fixed point: {:?}", again
            );
            sim.tick();
            check(&sim);
        }
    }
}
