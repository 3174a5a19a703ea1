//! `env_warnings`: the NCCL guidance of seed 003 and references to env vars
//! that are never defined, each with its field path.

mod common;

use common::{example, inline};
use ringleader_controller::env::lint::{env_warnings, env_warnings_with, references, LintOptions};

const NOISY: &str = r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: noisy, namespace: default}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: pt
            command: ["bash", "-c", "export OUT=/tmp/x; torchrun --nnodes $PET_NNODES --node_rank ${RANK} train.py --out $OUT --data $DATA_DIR"]
            env:
            - {name: NCCL_DEBUG, value: INFO}
            - {name: NCCL_P2P_DISABLE, value: "1"}
            - {name: CUDA_LAUNCH_BLOCKING, value: "1"}
            - {name: PYTORCH_NO_CUDA_MEMORY_CACHING, value: "1"}
            - {name: NCCL_IB_DISABLE, value: "1"}
            - {name: LOG_DIR, value: "$(BASE_DIR)/logs"}
            - {name: CKPT, value: "$(LOG_DIR)/ckpt"}
            resources:
              limits: {nvidia.com/gpu: 8, rdma/hca: 1}
              requests: {nvidia.com/gpu: 8, rdma/hca: 1}
"#;

#[test]
fn warns_about_each_setting_with_its_field_path() {
    let (job, _) = inline(NOISY);
    let warnings = env_warnings(&job);
    let got: Vec<(String, String)> = warnings.iter().map(|w| (w.field.clone(), w.value.clone())).collect();
    let base = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]";
    let want: Vec<(String, String)> = vec![
        (format!("{base}.env[0].value"), "NCCL_DEBUG=INFO".into()),
        (format!("{base}.env[1].value"), "NCCL_P2P_DISABLE=1".into()),
        (format!("{base}.env[2].value"), "CUDA_LAUNCH_BLOCKING=1".into()),
        (format!("{base}.env[3].value"), "PYTORCH_NO_CUDA_MEMORY_CACHING=1".into()),
        (format!("{base}.env[4].value"), "NCCL_IB_DISABLE=1".into()),
        (format!("{base}.env[5].value"), "BASE_DIR".into()),
        // No Master and no elasticPolicy: the operator injects no PET_NNODES.
        (format!("{base}.command[2]"), "PET_NNODES".into()),
        (format!("{base}.command[2]"), "DATA_DIR".into()),
    ];
    assert_eq!(got, want);
    assert!(warnings[4].advice.contains("30 Gbps"));
    assert!(warnings[5].advice.contains("never defined"));
}

#[test]
fn p2p_disable_is_required_on_rtx_4090_and_ib_disable_fine_without_rdma() {
    let (job, _) = inline(NOISY);
    let opts =
        LintOptions { rdma_network: Some(false), gpu_model: Some("NVIDIA-GeForce-RTX-4090".into()), extras: None };
    let values: Vec<String> = env_warnings_with(&job, &opts).into_iter().map(|w| w.value).collect();
    assert!(!values.iter().any(|v| v.starts_with("NCCL_P2P_DISABLE")));
    assert!(!values.iter().any(|v| v.starts_with("NCCL_IB_DISABLE")));
}

#[test]
fn examples_only_warn_about_image_provided_variables() {
    for name in [
        "ascendjob-pytorch.yaml",
        "pytorchjob.yaml",
        "mpijob.yaml",
        "tfjob.yaml",
        "vcjob-elastic.yaml",
        "mindie-server.yaml",
        "batch-job.yaml",
    ] {
        let (job, _) = example(name);
        assert_eq!(env_warnings(&job), [], "{name}");
    }
    let (job, _) = example("deployment-inference.yaml");
    let w = env_warnings(&job);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].field, "spec.template.spec.containers[0].command[2]");
    assert_eq!(w[0].value, "ATB_SPEED_HOME_PATH");
}

#[test]
fn reference_syntax() {
    assert_eq!(references("$(A) ${B} $C $$D $1 $(", false), ["A", "B", "C"]);
    assert_eq!(references("$(A) ${B} $C", true), ["A"]);
    let heredoc = "cat > x <<'PY'\nprint($NOT_SHELL)\nPY\necho $SHELL_VAR";
    assert_eq!(references(heredoc, false), ["SHELL_VAR"]);
}

#[test]
fn plugin_and_rendezvous_variables_count_as_defined() {
    let yaml = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vc, namespace: default}
spec:
  minAvailable: 2
  schedulerName: volcano
  plugins: {svc: [], env: []}
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        restartPolicy: Never
        containers:
        - {name: c, image: i, command: ["sh", "-c", "echo $VC_WORKER_HOSTS $VK_TASK_INDEX $VC_PS_HOSTS"]}
"#;
    let docs = ringleader_api::document::parse_str("vc.yaml", yaml).expect("parses");
    let reports = ringleader_api::check_documents(&docs);
    let resource = reports[0].resource.clone().expect("typed");
    let exact = ringleader_controller::env_warnings_for_resource(&resource);
    assert_eq!(exact.iter().map(|w| w.value.as_str()).collect::<Vec<_>>(), ["VC_PS_HOSTS"], "no task ps");
    let (job, _) = inline(yaml);
    assert_eq!(env_warnings(&job).iter().map(|w| w.value.as_str()).collect::<Vec<_>>(), ["VC_PS_HOSTS"]);
}
