//! MPIJob SSH keys under `ringleader up`: the launcher and every worker of
//! a job find one key pair at the job's `sshAuthMountPath` (`id_rsa` mode
//! 0600, `id_rsa.pub`, `authorized_keys` holding the public key), OpenSSH
//! accepts the private key as the public key's, and another job gets
//! another pair.

mod common;

use common::{cluster_yaml, Plane};

/// An MPIJob: launcher + 2 one-GPU workers; every pod prints what it finds
/// at `path` (`None`: the default `/root/.ssh`).
fn job(name: &str, path: Option<&str>) -> String {
    let dir = path.unwrap_or("/root/.ssh");
    let script = "echo PUB=$(cat $KEYS/id_rsa.pub); echo AUTH=$(cat $KEYS/authorized_keys); echo MODE=$(stat -c %a $KEYS/id_rsa)";
    let role = |kind: &str, replicas: u32, resources: &str| {
        format!(
            "    {kind}:\n      replicas: {replicas}\n      restartPolicy: Never\n      template:\n        spec:\n          containers:\n          - name: mpi\n            image: x\n            command: [\"/bin/sh\", \"-c\", {script:?}]\n            env: [{{name: KEYS, value: {dir:?}}}]\n{resources}"
        )
    };
    let mount = path.map(|p| format!("  sshAuthMountPath: {p}\n")).unwrap_or_default();
    format!(
        "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  slotsPerWorker: 1\n{mount}  runPolicy: {{cleanPodPolicy: None}}\n  mpiReplicaSpecs:\n{}{}",
        role("Launcher", 1, ""),
        role(
            "Worker",
            2,
            "            resources:\n              requests: {nvidia.com/gpu: 1}\n              limits: {nvidia.com/gpu: 1}\n"
        ),
    )
}

/// `KEY=value` of a pod's log.
fn field(log: &str, key: &str) -> String {
    log.lines().find_map(|l| l.strip_prefix(&format!("{key}="))).unwrap_or_default().trim().to_string()
}

#[test]
fn launcher_and_workers_share_the_job_key_pair_at_ssh_auth_mount_path() {
    let p = Plane::start(&cluster_yaml(134, &[("g-1", "hgx-h100-8")]), &[]);
    p.apply(&format!("{}---\n{}", job("keyed", Some("/home/mpiuser/keys")), job("other", None))).expect("apply");
    let mut publics = Vec::new();
    for name in ["keyed", "other"] {
        p.wait_for(60, &format!("{name} Completed"), |p| p.phase("mpijobs", name) == "Completed");
        let logs: Vec<String> =
            ["launcher-0", "worker-0", "worker-1"].iter().map(|pod| p.sandbox_log(&format!("{name}-{pod}"))).collect();
        let public = field(&logs[0], "PUB");
        assert!(public.starts_with("ssh-ed25519 AAAA") && public.ends_with(&format!("{name}@default")), "{public}");
        for log in &logs {
            assert_eq!(field(log, "PUB"), public, "{name}: every pod has the job's public key: {log}");
            assert_eq!(field(log, "AUTH"), public, "{name}: authorized_keys is the public key: {log}");
            assert_eq!(field(log, "MODE"), "600", "{name}: the private key is private: {log}");
        }
        publics.push(public);
    }
    assert_ne!(publics[0], publics[1], "two jobs never share a key pair");
    // The files lie in the sandboxes at the job's path, private key 0600.
    use std::os::unix::fs::PermissionsExt;
    let sandbox = p.data_dir().join("nodes/g-1/pods/default_keyed-worker-1/home/mpiuser/keys");
    let mode = std::fs::metadata(sandbox.join("id_rsa")).expect("id_rsa in the sandbox").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(sandbox.join("id_rsa.pub").exists() && sandbox.join("authorized_keys").exists());
    // OpenSSH takes the private key for the public key's (where installed;
    // in the sandbox the pod's uid has no passwd entry, which ssh-keygen wants).
    if let Ok(out) = std::process::Command::new("ssh-keygen").arg("-y").arg("-f").arg(sandbox.join("id_rsa")).output() {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), publics[0]);
    }
}
