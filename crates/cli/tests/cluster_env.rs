//! `ringleader up --env-variant aihub --nccl-auto …`: the controller's AI Hub
//! PyTorchJob env and NCCL auto-settings, configured for the whole cluster,
//! reach the processes of a running job (read back from what they printed);
//! without the flags the same job gets the Kubeflow env and no NCCL settings.

mod common;

use common::{cluster_yaml, Plane};

/// A PyTorchJob, Master 1 × 4 GPUs + Worker 1 × 2 GPUs, whose pods print
/// the variables the flags decide; the Worker sets its own `NCCL_IB_DISABLE`.
fn job(name: &str) -> String {
    let script = "echo WS=$WORLD_SIZE NPROC=$PET_NPROC_PER_NODE RANK=$RANK IF=${NCCL_SOCKET_IFNAME:-unset} IB=${NCCL_IB_DISABLE:-unset}";
    let role = |kind: &str, gpus: u32, own: &str| {
        format!(
            "    {kind}:\n      replicas: 1\n      restartPolicy: Never\n      template:\n        spec:\n          containers:\n          - name: pytorch\n            image: x\n            command: [\"/bin/sh\", \"-c\", {script:?}]\n{own}            resources:\n              requests: {{nvidia.com/gpu: {gpus}}}\n              limits: {{nvidia.com/gpu: {gpus}}}\n"
        )
    };
    format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  nprocPerNode: \"1\"\n  runPolicy: {{cleanPodPolicy: None}}\n  pytorchReplicaSpecs:\n{}{}",
        role("Master", 4, ""),
        role("Worker", 2, "            env: [{name: NCCL_IB_DISABLE, value: \"7\"}]\n"),
    )
}

/// The line each pod of `name` printed, Master then Worker.
fn lines(extra: &[&str], block: u8, name: &str) -> (String, String) {
    let p = Plane::start(&cluster_yaml(block, &[("g-1", "hgx-h100-8")]), extra);
    p.apply(&job(name)).expect("apply");
    p.wait_for(60, "the job Completed", |p| p.phase("pytorchjobs", name) == "Completed");
    let master = p.sandbox_log(&format!("{name}-master-0"));
    let worker = p.sandbox_log(&format!("{name}-worker-0"));
    (master.trim().to_string(), worker.trim().to_string())
}

#[test]
fn aihub_env_and_nccl_auto_settings_reach_the_pods_under_up() {
    let (master, worker) = lines(&["--env-variant", "aihub", "--nccl-auto", "rdma"], 131, "hub");
    // AI Hub: WORLD_SIZE counts GPUs (4 + 2), PET_NPROC_PER_NODE is the pod's GPUs.
    assert_eq!(master, "WS=6 NPROC=4 RANK=0 IF=front1 IB=0");
    // The Worker's own NCCL_IB_DISABLE wins over the auto-setting.
    assert_eq!(worker, "WS=6 NPROC=2 RANK=1 IF=front1 IB=7");

    let (master, _) = lines(&["--nccl-auto", "ethernet", "--nccl-ethernet-interface", "eth"], 132, "eth");
    // Kubeflow: WORLD_SIZE = pods × nprocPerNode; Ethernet: IB off.
    assert_eq!(master, "WS=2 NPROC=1 RANK=0 IF=eth IB=1");

    let (master, worker) = lines(&[], 133, "plain");
    assert_eq!(master, "WS=2 NPROC=1 RANK=0 IF=unset IB=unset");
    assert_eq!(worker, "WS=2 NPROC=1 RANK=1 IF=unset IB=7");
}
