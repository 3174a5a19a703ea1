//! State-machine tests on simulated time: restart policies, success
//! policies, Volcano lifecycle policies, backoff, deadline and TTL, clean-up.

mod common;

use common::{deletes, example, inline, Sim};
use ringleader_api::model::{CleanPodPolicy, SuccessPolicy};
use ringleader_controller::lifecycle::status::{self, RunState};
use ringleader_controller::lifecycle::{Action, DeleteMode, Phase, PodPhase};

fn pytorch(restart: &str, backoff: Option<u32>) -> String {
    let backoff = backoff.map(|b| format!("backoffLimit: {b}")).unwrap_or_default();
    format!(
        r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: pt, namespace: default}}
spec:
  runPolicy:
    {backoff}
    schedulingPolicy: {{minAvailable: 2}}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: {restart}
      template:
        spec:
          containers: [{{name: pytorch, image: pt, resources: {{limits: {{nvidia.com/gpu: 1}}, requests: {{nvidia.com/gpu: 1}}}}}}]
    Worker:
      replicas: 1
      restartPolicy: {restart}
      template:
        spec:
          containers: [{{name: pytorch, image: pt, resources: {{limits: {{nvidia.com/gpu: 1}}, requests: {{nvidia.com/gpu: 1}}}}}}]
"#
    )
}

fn phase(sim: &Sim) -> Phase {
    sim.state.status.phase
}

#[test]
fn on_failure_restarts_until_the_backoff_limit() {
    let (job, extras) = inline(&pytorch("OnFailure", Some(2)));
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    assert_eq!(phase(&sim), Phase::Running);
    for round in 1..=2 {
        sim.now += 10;
        sim.set_phase("pt-worker-0", PodPhase::Failed, Some(1));
        sim.run();
        sim.after_backoff();
        assert_eq!(phase(&sim), Phase::Running, "round {round}");
        assert_eq!(sim.state.status.retries, round);
        assert_eq!(sim.state.status.generations.get("pt-worker-0"), Some(&round));
        assert_eq!(sim.names(), ["pt-master-0", "pt-worker-0"], "restarted under the same name");
    }
    sim.now += 10;
    sim.set_phase("pt-worker-0", PodPhase::Failed, Some(1));
    let actions = sim.tick();
    assert_eq!(phase(&sim), Phase::Failed);
    assert_eq!(sim.state.status.reason, "BackoffLimitExceeded");
    assert_eq!(sim.state.status.retries, 2, "retries never exceed the limit");
    assert!(deletes(&actions).contains(&("pt-master-0".to_string(), DeleteMode::Graceful)));
}

#[test]
fn never_fails_the_job_on_the_first_failure() {
    let (job, extras) = example("ascendjob-pytorch.yaml");
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    assert_eq!(phase(&sim), Phase::Running);
    sim.set_phase("default-test-pytorch-worker-0", PodPhase::Failed, Some(1));
    sim.run();
    assert_eq!(phase(&sim), Phase::Failed);
    assert!(sim.pods.iter().all(|p| !p.phase.is_live()), "no pod of a finished job runs");
}

#[test]
fn exit_code_policy_restarts_retryable_codes_and_fails_permanent_ones() {
    let (job, extras) = inline(&pytorch("ExitCode", None));
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    sim.set_phase("pt-worker-0", PodPhase::Failed, Some(137));
    sim.run();
    sim.after_backoff();
    assert_eq!(phase(&sim), Phase::Running);
    assert_eq!(sim.state.status.retries, 1);
    sim.set_phase("pt-worker-0", PodPhase::Failed, Some(2));
    sim.run();
    assert_eq!(phase(&sim), Phase::Failed);
    assert!(sim.state.status.message.contains("exit code 2"));
}

#[test]
fn always_restarts_a_deployment_under_new_names() {
    let (job, extras) = example("deployment-inference.yaml");
    let mut sim = Sim::new(job, extras, 1, 8);
    sim.run();
    assert_eq!(sim.names(), ["resnetinfer1-1-0"]);
    for g in 1..=5 {
        let name = sim.names()[0].clone();
        sim.set_phase(&name, PodPhase::Failed, Some(1));
        sim.run();
        sim.after_backoff();
        assert_eq!(sim.names(), [format!("resnetinfer1-1-0-g{g}")]);
    }
    assert_eq!(phase(&sim), Phase::Running, "a Deployment never completes or fails");
}

#[test]
fn a_deployment_reports_the_replica_counters_kubectl_reads() {
    let (job, extras) = example("deployment-inference.yaml");
    let mut sim = Sim::new(job.clone(), extras, 1, 8);
    sim.run();
    let st = status::for_kind(&job, &sim.state.status);
    assert_eq!((st["replicas"].as_u64(), st["readyReplicas"].as_u64()), (Some(1), Some(1)), "{st}");
    assert_eq!(st["availableReplicas"], st["readyReplicas"]);
    assert_eq!(st["conditions"][1]["reason"], "DeploymentRunning", "the conditions stay: {st}");
    let name = sim.names()[0].clone();
    sim.set_phase(&name, PodPhase::Failed, Some(1));
    sim.tick();
    let st = status::for_kind(&job, &sim.state.status);
    assert_eq!(st["readyReplicas"], 0, "a failed pod is not ready: {st}");
}

#[test]
fn acjob_success_default_and_all_workers() {
    let (mut job, extras) = example("ascendjob-pytorch.yaml");
    assert_eq!(job.success, SuccessPolicy::AllWorkers);
    let mut sim = Sim::new(job.clone(), extras.clone(), 2, 8);
    sim.run();
    sim.set_phase("default-test-pytorch-master-0", PodPhase::Succeeded, Some(0));
    sim.run();
    assert_eq!(phase(&sim), Phase::Running, "AllWorkers waits for the workers");
    sim.set_phase("default-test-pytorch-worker-0", PodPhase::Succeeded, Some(0));
    sim.run();
    assert_eq!(phase(&sim), Phase::Completed);

    job.success = SuccessPolicy::Default;
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    sim.set_phase("default-test-pytorch-worker-0", PodPhase::Succeeded, Some(0));
    sim.run();
    assert_eq!(phase(&sim), Phase::Completed, "one pod succeeding succeeds an acjob");
    assert!(sim.pods.iter().all(|p| !p.phase.is_live()));
}

#[test]
fn kubeflow_master_and_mpi_launcher_decide_success() {
    let (job, extras) = example("pytorchjob.yaml");
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    sim.set_phase("pytorch-ddp-worker-0", PodPhase::Succeeded, Some(0));
    sim.run();
    assert_eq!(phase(&sim), Phase::Running);
    sim.set_phase("pytorch-ddp-master-0", PodPhase::Succeeded, Some(0));
    sim.run();
    assert_eq!(phase(&sim), Phase::Completed);

    let (job, extras) = example("mpijob.yaml");
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    assert_eq!(phase(&sim), Phase::Running);
    sim.set_phase("tensorflow-benchmarks-launcher-0", PodPhase::Succeeded, Some(0));
    sim.run();
    assert_eq!(phase(&sim), Phase::Completed);
    assert!(sim.pods.iter().all(|p| !p.phase.is_live()), "workers stop with the job");
}

fn vcjob(extra: &str, task_policies: &str, replicas: u32) -> String {
    format!(
        r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: vc, namespace: default}}
spec:
  minAvailable: {replicas}
  schedulerName: volcano
{extra}
  tasks:
  - name: master
    replicas: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{{name: c, image: i}}]
  - name: worker
    replicas: {}
{task_policies}
    template:
      spec:
        restartPolicy: Never
        containers: [{{name: c, image: i}}]
"#,
        replicas - 1
    )
}

#[test]
fn volcano_completes_on_min_available_and_fails_below_it() {
    let (job, extras) = inline(&vcjob("  maxRetry: 3", "", 3));
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    assert_eq!(phase(&sim), Phase::Running);
    sim.set_phase("vc-master-0", PodPhase::Succeeded, Some(0));
    sim.set_phase("vc-worker-0", PodPhase::Succeeded, Some(0));
    sim.run();
    assert_eq!(phase(&sim), Phase::Running, "not every pod finished");
    sim.set_phase("vc-worker-1", PodPhase::Failed, Some(1));
    sim.run();
    assert_eq!(phase(&sim), Phase::Failed, "2 succeeded < minAvailable 3");

    let (job, extras) = inline(&vcjob("  minSuccess: 2", "", 3));
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    sim.set_phase("vc-master-0", PodPhase::Succeeded, Some(0));
    sim.set_phase("vc-worker-1", PodPhase::Succeeded, Some(0));
    sim.run();
    assert_eq!(phase(&sim), Phase::Completed, "minSuccess reached while a pod still runs");
    assert!(sim.pods.iter().all(|p| !p.phase.is_live()));
}

const POLICIES: &str = "  maxRetry: 1
  policies:
  - {event: PodEvicted, action: RestartJob}
  - {event: PodFailed, action: AbortJob}";
const TASK_POLICIES: &str = "    policies:
    - {exitCode: 3, action: RestartTask}
    - {event: TaskCompleted, action: CompleteJob}";

#[test]
fn lifecycle_restart_job_counts_retries_and_fails_past_max_retry() {
    let (job, extras) = inline(&vcjob(POLICIES, TASK_POLICIES, 3));
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    sim.pod("vc-worker-0").evicted = true;
    sim.set_phase("vc-worker-0", PodPhase::Failed, None);
    let actions = sim.tick();
    assert_eq!(phase(&sim), Phase::Restarting);
    assert_eq!(sim.state.status.retries, 1);
    assert_eq!(deletes(&actions).len(), 2, "the two live pods are deleted");
    sim.settle();
    sim.tick(); // the failed pod of the old version goes too
    sim.settle();
    sim.run();
    assert_eq!(phase(&sim), Phase::Running);
    assert!(sim.pods.iter().all(|p| p.job_version == 1), "every pod belongs to the new version");

    sim.pod("vc-worker-1").evicted = true;
    sim.set_phase("vc-worker-1", PodPhase::Failed, None);
    sim.run();
    assert_eq!(phase(&sim), Phase::Failed, "retryCount reached maxRetry");
    assert_eq!(sim.state.status.retries, 1);
}

#[test]
fn task_policies_come_before_job_policies() {
    let (job, extras) = inline(&vcjob(POLICIES, TASK_POLICIES, 3));
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    sim.set_phase("vc-worker-0", PodPhase::Failed, Some(3));
    let actions = sim.tick();
    assert_eq!(phase(&sim), Phase::Running, "RestartTask, not the job's AbortJob");
    assert_eq!(sim.state.status.reason, "RestartTask");
    let deleted: Vec<String> = deletes(&actions).into_iter().map(|d| d.0).collect();
    assert_eq!(deleted, ["vc-worker-1"], "the failed pod stays for its back-off");
    assert!(actions.iter().any(|a| matches!(a, Action::BackOff { pod, delay: 10, .. } if pod == "vc-worker-0")));

    sim.settle();
    sim.after_backoff();
    sim.set_phase("vc-worker-1", PodPhase::Failed, Some(1));
    sim.run();
    assert_eq!(phase(&sim), Phase::Aborted, "exit 1 matches only the job's PodFailed → AbortJob");
    assert!(sim.pods.iter().all(|p| !p.phase.is_live()));
}

#[test]
fn task_completed_completes_the_job() {
    let (job, extras) = inline(&vcjob(POLICIES, TASK_POLICIES, 3));
    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    sim.set_phase("vc-worker-0", PodPhase::Succeeded, Some(0));
    sim.set_phase("vc-worker-1", PodPhase::Succeeded, Some(0));
    sim.tick();
    assert_eq!(phase(&sim), Phase::Completing);
    sim.settle();
    sim.tick();
    assert_eq!(phase(&sim), Phase::Completed, "the master was stopped, then Completed");
}

#[test]
fn pending_timeout_and_terminate_policies() {
    let extra = "  policies:
  - {event: PodPending, action: AbortJob, timeout: 10m}
  - {event: PodFailed, action: TerminateJob}";
    let (job, extras) = inline(&vcjob(extra, "", 3));
    // No node: the pods stay Pending.
    let mut sim = Sim::new(job.clone(), extras.clone(), 0, 8);
    sim.run();
    sim.now = 599;
    let actions = sim.tick();
    assert_eq!(phase(&sim), Phase::Pending);
    assert!(actions.iter().any(|a| matches!(a, Action::RequeueAfter(1))), "wakes up when the timeout ends");
    sim.now = 600;
    sim.tick();
    assert_eq!(phase(&sim), Phase::Aborting);
    sim.settle();
    sim.tick();
    assert_eq!(phase(&sim), Phase::Aborted);

    let mut sim = Sim::new(job, extras, 3, 8);
    sim.run();
    sim.set_phase("vc-master-0", PodPhase::Failed, Some(1));
    sim.run();
    assert_eq!(phase(&sim), Phase::Terminated);
    assert_eq!(status::run_state(&sim.state.status), RunState::Stopped);
}

#[test]
fn active_deadline_fails_a_job_that_runs_too_long() {
    let (mut job, extras) = example("pytorchjob.yaml");
    job.fault.active_deadline_seconds = Some(100);
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    sim.now = 99;
    sim.run();
    assert_eq!(phase(&sim), Phase::Running);
    sim.now = 100;
    sim.run();
    assert_eq!(phase(&sim), Phase::Failed);
    assert_eq!(sim.state.status.reason, "DeadlineExceeded");
    assert!(sim.pods.iter().all(|p| !p.phase.is_live()));
}

#[test]
fn ttl_deletes_the_job_and_clean_pod_policy_decides_finished_pods() {
    let (mut job, extras) = example("pytorchjob.yaml");
    job.fault.ttl_seconds_after_finished = Some(50);
    job.fault.clean_pod_policy = CleanPodPolicy::None;
    let mut sim = Sim::new(job.clone(), extras.clone(), 2, 8);
    sim.run();
    sim.now = 10;
    sim.set_phase("pytorch-ddp-master-0", PodPhase::Succeeded, Some(0));
    sim.set_phase("pytorch-ddp-worker-0", PodPhase::Succeeded, Some(0));
    let actions = sim.tick();
    assert_eq!(phase(&sim), Phase::Completed);
    assert!(deletes(&actions).is_empty(), "cleanPodPolicy None keeps finished pods");
    assert!(actions.iter().any(|a| matches!(a, Action::RequeueAfter(50))));
    sim.now = 59;
    assert!(!sim.tick().iter().any(|a| matches!(a, Action::DeleteJob)));
    sim.now = 60;
    assert!(sim.tick().iter().any(|a| matches!(a, Action::DeleteJob)));

    job.fault.clean_pod_policy = CleanPodPolicy::All;
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    sim.set_phase("pytorch-ddp-master-0", PodPhase::Succeeded, Some(0));
    sim.set_phase("pytorch-ddp-worker-0", PodPhase::Succeeded, Some(0));
    assert_eq!(deletes(&sim.tick()).len(), 2, "cleanPodPolicy All removes finished pods too");
}

#[test]
fn reconcile_is_idempotent() {
    let (job, extras) = example("ascendjob-pytorch.yaml");
    let mut sim = Sim::new(job, extras, 2, 8);
    sim.run();
    let again = ringleader_controller::reconcile(&sim.state, &sim.observed(), sim.now);
    assert!(again.is_empty(), "nothing left to do: {again:?}");
}

#[test]
fn kind_status_views() {
    let (job, extras) = example("pytorchjob.yaml");
    let mut sim = Sim::new(job.clone(), extras, 2, 8);
    assert_eq!(status::run_state(&sim.state.status), RunState::Creating);
    sim.now = 1_700_000_000;
    sim.tick();
    assert_eq!(status::run_state(&sim.state.status), RunState::Created, "no pod observed yet");
    sim.tick();
    assert_eq!(status::run_state(&sim.state.status), RunState::Queued);
    sim.settle();
    sim.schedule();
    sim.tick();
    assert_eq!(status::run_state(&sim.state.status), RunState::Running);
    let kf = status::kubeflow(&job, &sim.state.status);
    assert_eq!(kf["conditions"][0]["type"], "Created");
    assert_eq!(kf["conditions"][1]["type"], "Running");
    assert_eq!(kf["conditions"][1]["reason"], "PyTorchJobRunning");
    assert_eq!(kf["conditions"][1]["status"], "True");
    assert_eq!(kf["conditions"][1]["lastTransitionTime"], "2023-11-14T22:13:20Z");
    assert_eq!(kf["replicaStatuses"]["Worker"]["active"], 1);
    let vc = status::volcano(&job, &sim.state.status);
    assert_eq!(vc["state"]["phase"], "Running");
    assert_eq!(vc["running"], 2);
}

#[test]
fn suspend_removes_pods_and_resume_recreates_them() {
    let (job, extras) = example("pytorchjob.yaml");
    let mut sim = Sim::new(job.clone(), extras, 2, 8);
    sim.run();
    assert_eq!(phase(&sim), Phase::Running);
    sim.state.extras.suspended = true;
    sim.run();
    assert!(sim.pods.is_empty(), "suspended: no pods");
    let kf = status::kubeflow(&job, &sim.state.status);
    let suspended = kf["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == "Suspended")).cloned();
    assert_eq!(suspended.map(|c| c["status"].clone()), Some("True".into()));
    sim.state.extras.suspended = false;
    sim.run();
    assert_eq!(phase(&sim), Phase::Running);
    assert_eq!(sim.names(), ["pytorch-ddp-master-0", "pytorch-ddp-worker-0"]);
}

#[test]
fn a_batch_job_reports_complete_or_failed_as_the_job_controller_does() {
    let (job, extras) = example("batch-job.yaml");
    let mut sim = Sim::new(job.clone(), extras.clone(), 1, 8);
    sim.run();
    let st = status::for_kind(&job, &sim.state.status);
    assert_eq!((st["active"].as_u64(), st["succeeded"].as_u64()), (Some(1), Some(0)), "{st}");
    assert_eq!(st["conditions"], serde_json::json!([]), "no condition while it runs: {st}");
    let name = sim.names()[0].clone();
    sim.set_phase(&name, PodPhase::Succeeded, Some(0));
    sim.run();
    let st = status::for_kind(&job, &sim.state.status);
    let types: Vec<&str> =
        st["conditions"].as_array().into_iter().flatten().filter_map(|c| c["type"].as_str()).collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"], "{st}");
    assert_eq!((st["succeeded"].as_u64(), st["active"].as_u64()), (Some(1), Some(0)), "{st}");
    assert!(st["completionTime"].is_string(), "{st}");

    // backoffLimit 0: one failed pod fails the Job.
    let mut sim = Sim::new(job.clone(), extras, 1, 8);
    sim.run();
    let name = sim.names()[0].clone();
    sim.set_phase(&name, PodPhase::Failed, Some(1));
    sim.run();
    let st = status::for_kind(&job, &sim.state.status);
    let types: Vec<&str> =
        st["conditions"].as_array().into_iter().flatten().filter_map(|c| c["type"].as_str()).collect();
    assert_eq!(types, ["FailureTarget", "Failed"], "{st}");
    assert!(st.get("completionTime").is_none(), "only a completed Job has a completionTime: {st}");
}
