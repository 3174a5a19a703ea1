//! Pods as containers of a real containerd (its CRI plugin), pulling from a
//! local registry: `scripts/cri-env.sh start DIR` starts both and builds the
//! images; `.ci/run` does so and sets `RINGLEADER_REQUIRE_CRI=1`, where these
//! tests must run. Elsewhere (no containerd, not root) they say so and pass.
//!
//! Each test uses nodes of its own names, so the containers it leaves are
//! told apart and removed at its end.

mod common;

use common::Plane;
use ringleader_cri::{v1, Cri};
use serde_json::Value;
use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

/// The CRI endpoint and registry to test against, or `None` (skip).
fn environment() -> Option<(String, String)> {
    let endpoint = std::env::var("RINGLEADER_CRI_ENDPOINT").ok().filter(|s| !s.is_empty());
    let registry = std::env::var("RINGLEADER_TEST_REGISTRY").ok().filter(|s| !s.is_empty());
    let required = std::env::var("RINGLEADER_REQUIRE_CRI").is_ok_and(|v| v == "1");
    match (endpoint, registry) {
        (Some(e), Some(r)) => Some((e, r)),
        _ => {
            assert!(
                !required,
                "RINGLEADER_REQUIRE_CRI=1 but RINGLEADER_CRI_ENDPOINT / RINGLEADER_TEST_REGISTRY are not set \
                 (scripts/cri-env.sh start DIR writes them to DIR/env)"
            );
            eprintln!("no CRI runtime given (scripts/cri-env.sh start DIR; source DIR/env): skipped");
            None
        }
    }
}

fn cluster(block: u8, node: &str) -> String {
    format!(
        "apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {node}}}\nspec: {{profile: hgx-h100-8, address: 127.0.{block}.1}}\n---\n\
         apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: default}}\nspec: {{weight: 1}}\n"
    )
}

fn job(name: &str, image: &str, command: &str, extra_container: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      \
         restartPolicy: Never\n      containers:\n      - name: main\n        image: {image}\n        \
         command: [sh, -c, {command:?}]\n{extra_container}"
    )
}

/// Removes every sandbox the runtime runs for `nodes`' pods (the test's own).
struct Cleanup {
    endpoint: String,
    nodes: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Ok(rt) = tokio::runtime::Runtime::new() else { return };
        rt.block_on(async {
            let Ok((mut cri, _)) = Cri::connect(&self.endpoint, Duration::from_secs(5)).await else { return };
            for node in &self.nodes {
                let filter = v1::PodSandboxFilter {
                    label_selector: HashMap::from([("io.ringleader.node".to_string(), node.clone())]),
                    ..Default::default()
                };
                let request = v1::ListPodSandboxRequest { filter: Some(filter) };
                let Ok(list) = cri.runtime.list_pod_sandbox(request).await else { return };
                for s in list.into_inner().items {
                    let id = s.id;
                    let stop = v1::StopPodSandboxRequest { pod_sandbox_id: id.clone() };
                    let _ = cri.runtime.stop_pod_sandbox(stop).await;
                    let _ = cri.runtime.remove_pod_sandbox(v1::RemovePodSandboxRequest { pod_sandbox_id: id }).await;
                }
            }
        });
    }
}

fn start(block: u8, node: &str, endpoint: &str) -> (Plane, Cleanup) {
    let cleanup = Cleanup { endpoint: endpoint.to_string(), nodes: vec![node.to_string()] };
    let plane = Plane::start(&cluster(block, node), &["--runtime", "cri", "--cri-endpoint", endpoint]);
    (plane, cleanup)
}

fn pod_of(p: &Plane, job: &str) -> Option<Value> {
    p.list("pods").into_iter().find(|pod| pod["metadata"]["labels"]["job-name"] == job)
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or_default()
}

fn kubectl(p: &Plane, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", p.data_dir().join("kubeconfig"))
        .env("HOME", p.dir.path().join("home"))
        .output()
        .expect("kubectl");
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_job_runs_in_a_container_of_its_image_and_reports_as_kubelet_does() {
    let Some((endpoint, registry)) = environment() else { return };
    let (p, _cleanup) = start(61, "cri-run-1", &endpoint);
    let image = format!("{registry}/ringleader/busybox:1");
    // The image has busybox and nothing else: these commands exist only in it.
    let ok = "echo hello from $RINGLEADER_POD; ls /bin/busybox; grep -c . /etc/hosts; test ! -e /usr/bin/python3";
    p.apply(&job("hello", &image, ok, "")).expect("job");
    p.wait_for(90, "hello succeeded", |p| pod_of(p, "hello").is_some_and(|pod| phase(&pod) == "Succeeded"));
    let pod = pod_of(&p, "hello").expect("pod");
    let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let log = p.log(&name);
    assert!(log.contains(&format!("hello from {name}")) && log.contains("/bin/busybox"), "log: {log}");
    let status = &pod["status"]["containerStatuses"][0];
    assert!(status["containerID"].as_str().is_some_and(|c| c.starts_with("containerd://")), "{status}");
    assert!(status["imageID"].as_str().is_some_and(|i| i.contains("@sha256:")), "{status}");
    assert_eq!(status["state"]["terminated"]["exitCode"], 0, "{status}");

    // Exit 3 with a termination message: both in the status, as kubectl shows them.
    let last_words = "echo 'disk on fire' > /dev/termination-log; exit 3";
    p.apply(&job("crash", &image, last_words, "")).expect("job");
    p.wait_for(90, "crash failed", |p| pod_of(p, "crash").is_some_and(|pod| phase(&pod) == "Failed"));
    let name = pod_of(&p, "crash").and_then(|pod| pod["metadata"]["name"].as_str().map(str::to_string)).unwrap();
    let yaml = kubectl(&p, &["get", "pod", &name, "-o", "yaml"]);
    assert!(yaml.contains("exitCode: 3") && yaml.contains("disk on fire"), "{yaml}");
    let describe = kubectl(&p, &["describe", "pod", &name]);
    assert!(describe.contains("Exit Code:    3") && describe.contains("disk on fire"), "{describe}");

    // A termination message at a path of the pod's choosing, from its working directory.
    let elsewhere = "        workingDir: /tmp\n        terminationMessagePath: /tmp/last-words\n";
    p.apply(&job("cwd", &image, "pwd > /tmp/last-words; exit 4", elsewhere)).expect("job");
    p.wait_for(90, "cwd failed", |p| pod_of(p, "cwd").is_some_and(|pod| phase(&pod) == "Failed"));
    let pod = pod_of(&p, "cwd").expect("pod");
    let terminated = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(
        (terminated["exitCode"].as_i64(), terminated["message"].as_str()),
        (Some(4), Some("/tmp\n")),
        "{terminated}"
    );

    // Without `command` and `args`, the image's Cmd (`sh`, which ends at
    // once without input); with `args` alone, the image's (empty)
    // Entrypoint and those args: Kubernetes' rules, applied by the runtime.
    let image_cmd = job("cmd", &image, "unused", "").replace("        command: [sh, -c, \"unused\"]\n", "");
    p.apply(&image_cmd).expect("job");
    let args_only =
        job("args", &image, "unused", "").replace("command: [sh, -c, \"unused\"]", "args: [echo, via args]");
    p.apply(&args_only).expect("job");
    for j in ["cmd", "args"] {
        p.wait_for(90, &format!("{j} succeeded"), |p| pod_of(p, j).is_some_and(|pod| phase(&pod) == "Succeeded"));
    }
    let name = pod_of(&p, "args").and_then(|pod| pod["metadata"]["name"].as_str().map(str::to_string)).unwrap();
    assert!(p.log(&name).contains("via args"), "{}", p.log(&name));

    // FallbackToLogsOnError: no message file, the log's tail instead.
    let fallback = "        terminationMessagePolicy: FallbackToLogsOnError\n";
    p.apply(&job("tail", &image, "echo last line before failing; exit 2", fallback)).expect("job");
    p.wait_for(90, "tail failed", |p| pod_of(p, "tail").is_some_and(|pod| phase(&pod) == "Failed"));
    let pod = pod_of(&p, "tail").expect("pod");
    let terminated = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(terminated["exitCode"], 2, "{terminated}");
    assert!(terminated["message"].as_str().is_some_and(|m| m.contains("last line before failing")), "{terminated}");
}

#[test]
fn bad_images_and_privileged_pods_get_kubelets_reasons() {
    let Some((endpoint, registry)) = environment() else { return };
    let (p, _cleanup) = start(62, "cri-bad-1", &endpoint);
    let missing = format!("{registry}/ringleader/no-such-image:1");
    p.apply(&job("missing", &missing, "true", "")).expect("job");
    let waiting = |p: &Plane, reason: &str| {
        pod_of(p, "missing")
            .is_some_and(|pod| pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == reason)
    };
    p.wait_for(60, "ErrImagePull", |p| waiting(p, "ErrImagePull"));
    p.wait_for(30, "ImagePullBackOff", |p| waiting(p, "ImagePullBackOff"));
    let pod = pod_of(&p, "missing").expect("pod");
    assert_eq!(phase(&pod), "Pending", "a pod whose image cannot be pulled waits");
    let message = pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Back-off pulling image") && message.contains(&missing), "{message}");
    let events = p.list("events");
    assert!(
        events.iter().any(|e| e["reason"] == "Failed"
            && e["message"].as_str().is_some_and(|m| m.contains("Failed to pull image") && m.contains(&missing))),
        "a Failed event names the image: {events:?}"
    );

    // Each job's pod fails; how its container ended.
    let failed = |name: &str, yaml: String| -> (Value, Value) {
        p.apply(&yaml).expect("job");
        p.wait_for(60, &format!("{name} failed"), |p| pod_of(p, name).is_some_and(|pod| phase(&pod) == "Failed"));
        let pod = pod_of(&p, name).expect("pod");
        (pod["status"]["containerStatuses"][0]["state"]["terminated"].clone(), pod)
    };
    let image = format!("{registry}/ringleader/busybox:1");
    let (terminated, _) = failed("root", job("root", &image, "true", "        securityContext: {privileged: true}\n"));
    assert_eq!(terminated["reason"], "CreateContainerConfigError", "{terminated}");
    assert!(terminated["message"].as_str().is_some_and(|m| m.contains("privileged")), "{terminated}");
    // The node's processes are not a pod's to see unless the operator allows it.
    let host_pid =
        job("hostpid", &image, "true", "").replace("      containers:", "      hostPID: true\n      containers:");
    let (terminated, _) = failed("hostpid", host_pid);
    assert_eq!(terminated["reason"], "CreateContainerConfigError", "{terminated}");
    let message = terminated["message"].as_str().unwrap_or_default();
    assert!(message.contains("spec.hostPID") && message.contains("--allow-host-namespaces"), "{terminated}");

    // A command the image does not have: kubelet's StartError, exit 128.
    let nocmd = job("nocmd", &image, "true", "").replace("command: [sh, -c, \"true\"]", "command: [no-such-program]");
    let (terminated, _) = failed("nocmd", nocmd);
    assert_eq!(
        (terminated["reason"].as_str(), terminated["exitCode"].as_i64()),
        (Some("StartError"), Some(128)),
        "{terminated}"
    );
    assert!(terminated["message"].as_str().is_some_and(|m| m.contains("no-such-program")), "{terminated}");

    // Past its memory limit the container is OOMKilled; runAsUser is its uid.
    let small = "        resources: {limits: {memory: 32Mi}}\n        securityContext: {runAsUser: 1234}\n";
    let (terminated, pod) =
        failed("hungry", job("hungry", &image, "id -u; dd if=/dev/zero of=/dev/null bs=128M count=1", small));
    assert_eq!(terminated["reason"], "OOMKilled", "{terminated}");
    let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_string();
    assert!(p.log(&name).lines().next().is_some_and(|l| l.trim() == "1234"), "runs as uid 1234: {}", p.log(&name));

    // The node keeps running other pods.
    p.apply(&job("after", &image, "echo still here", "")).expect("job");
    p.wait_for(90, "a good pod after the bad ones", |p| {
        pod_of(p, "after").is_some_and(|pod| phase(&pod) == "Succeeded")
    });
}

#[test]
fn containers_outlive_a_killed_control_plane_and_are_adopted() {
    let Some((endpoint, registry)) = environment() else { return };
    let (mut p, _cleanup) = start(63, "cri-adopt-1", &endpoint);
    let image = format!("{registry}/ringleader/busybox:1");
    // Runs about 20 s, then succeeds.
    let script = "i=0; while [ $i -lt 200 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done; echo done";
    p.apply(&job("survivor", &image, script, "")).expect("job");
    p.wait_for(90, "survivor running", |p| pod_of(p, "survivor").is_some_and(|pod| phase(&pod) == "Running"));
    let pod = pod_of(&p, "survivor").expect("pod");
    let id = pod["status"]["containerStatuses"][0]["containerID"].as_str().unwrap_or_default().to_string();
    assert!(id.starts_with("containerd://"), "{pod}");

    p.kill();
    std::thread::sleep(Duration::from_millis(500));
    p.spawn();
    p.wait_for(30, "the same container adopted", |p| {
        pod_of(p, "survivor").is_some_and(|pod| {
            phase(&pod) == "Running" && pod["status"]["containerStatuses"][0]["containerID"] == id.as_str()
        })
    });
    // The same container ends on its own and the job completes.
    p.wait_for(120, "survivor succeeded", |p| pod_of(p, "survivor").is_some_and(|pod| phase(&pod) == "Succeeded"));
    let pod = pod_of(&p, "survivor").expect("pod");
    assert_eq!(pod["status"]["containerStatuses"][0]["containerID"], id.as_str(), "no second container ran");
    let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let log = p.log(&name);
    assert!(log.contains("tick 0") && log.contains("done"), "the whole log, across the restart: {log}");
}

/// `kubectl` with stdin, its exit code and output.
fn kubectl_io(p: &Plane, args: &[&str], stdin: &str) -> (i32, String) {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", p.data_dir().join("kubeconfig"))
        .env("HOME", p.dir.path().join("home"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.as_bytes());
    }
    let out = child.wait_with_output().expect("kubectl");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn kubectl_exec_cp_and_port_forward_reach_the_container() {
    let Some((endpoint, registry)) = environment() else { return };
    let (p, _cleanup) = start(64, "cri-exec-1", &endpoint);
    let image = format!("{registry}/ringleader/busybox:1");
    p.apply(&job("shell", &image, "echo ready; sleep 120", "")).expect("job");
    p.wait_for(90, "shell running", |p| pod_of(p, "shell").is_some_and(|pod| phase(&pod) == "Running"));
    let name = pod_of(&p, "shell").and_then(|pod| pod["metadata"]["name"].as_str().map(str::to_string)).unwrap();

    // A command's output and exit code come back.
    let (code, out) = kubectl_io(&p, &["exec", &name, "--", "sh", "-c", "echo in $RINGLEADER_POD; exit 7"], "");
    assert_eq!(code, 7, "kubectl exits with the command's code: {out}");
    assert!(out.contains(&format!("in {name}")) && out.contains("command terminated with exit code 7"), "{out}");
    // stdin (`-i`) reaches the shell.
    let (code, out) = kubectl_io(&p, &["exec", "-i", &name, "--", "sh"], "echo typed $((6*7)); exit 0\n");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("typed 42"), "{out}");
    // With a terminal (`-it`, through `script` for a pty) too.
    let line = format!("kubectl exec -it {name} -- sh -c 'tty >/dev/null && echo on a tty'");
    let script = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("KUBECONFIG", p.data_dir().join("kubeconfig"))
        .env("HOME", p.dir.path().join("home"))
        .output()
        .expect("script (util-linux)");
    let text = String::from_utf8_lossy(&script.stdout);
    assert!(script.status.success() && text.contains("on a tty"), "{text} {}", String::from_utf8_lossy(&script.stderr));

    // `kubectl cp` both ways (exec of tar).
    let local = p.dir.path().join("to-pod.txt");
    std::fs::write(&local, "copied in\n").expect("file");
    let target = format!("{name}:/tmp/in.txt");
    let (code, out) = kubectl_io(&p, &["cp", &local.to_string_lossy(), &target], "");
    assert_eq!(code, 0, "cp in: {out}");
    let (_, out) = kubectl_io(&p, &["exec", &name, "--", "cat", "/tmp/in.txt"], "");
    assert!(out.contains("copied in"), "{out}");
    let back = p.dir.path().join("from-pod.txt");
    let (code, out) = kubectl_io(&p, &["cp", &target, &back.to_string_lossy()], "");
    assert_eq!(code, 0, "cp out: {out}");
    assert_eq!(std::fs::read_to_string(&back).unwrap_or_default(), "copied in\n");

    // `kubectl port-forward` reaches a server in the pod.
    let serve = "echo served from the pod > /tmp/index.html; cd /tmp && httpd -p 18164";
    let (code, out) = kubectl_io(&p, &["exec", &name, "--", "sh", "-c", serve], "");
    assert_eq!(code, 0, "{out}");
    let mut forward = Command::new("kubectl")
        .args(["port-forward", &format!("pod/{name}"), "18165:18164", "--address", "127.0.0.1"])
        .env("KUBECONFIG", p.data_dir().join("kubeconfig"))
        .env("HOME", p.dir.path().join("home"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kubectl port-forward");
    let mut body = String::new();
    for _ in 0..100 {
        if let Ok(mut s) = std::net::TcpStream::connect("127.0.0.1:18165") {
            use std::io::{Read, Write};
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = s.write_all(b"GET /index.html HTTP/1.0\r\n\r\n");
            let _ = s.read_to_string(&mut body);
            if body.contains("served from the pod") {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = forward.kill();
    let _ = forward.wait();
    assert!(body.contains("served from the pod"), "through port-forward: {body:?}");

    // `kubectl attach` follows the running process's output.
    p.apply(&job("talker", &image, "while true; do echo tick; sleep 0.2; done", "")).expect("job");
    p.wait_for(90, "talker running", |p| pod_of(p, "talker").is_some_and(|pod| phase(&pod) == "Running"));
    let talker = pod_of(&p, "talker").and_then(|pod| pod["metadata"]["name"].as_str().map(str::to_string)).unwrap();
    let attach = Command::new("timeout")
        .args(["3", "kubectl", "attach", &talker])
        .env("KUBECONFIG", p.data_dir().join("kubeconfig"))
        .env("HOME", p.dir.path().join("home"))
        .output()
        .expect("kubectl attach");
    let seen = String::from_utf8_lossy(&attach.stdout);
    assert!(seen.contains("tick"), "attach: {seen} {}", String::from_utf8_lossy(&attach.stderr));

    // RBAC: `view` may read the pod but not run commands in it; `edit` may.
    for (user, role) in [("viewer", "view"), ("editor", "edit")] {
        let file = p.dir.path().join(format!("{user}.kubeconfig"));
        p.ctl(&["token", "create", "--user", user, "--kubeconfig-out", &file.to_string_lossy()]);
        let binding = format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: {user}, namespace: default}}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {role}}}\n\
             subjects: [{{kind: User, name: {user}, apiGroup: rbac.authorization.k8s.io}}]\n"
        );
        p.apply(&binding).expect("binding");
    }
    let as_user = |user: &str, args: &[&str]| {
        let file = p.dir.path().join(format!("{user}.kubeconfig"));
        let mut all = vec!["--kubeconfig", file.to_str().unwrap_or_default()];
        all.extend_from_slice(args);
        kubectl_io(&p, &all, "")
    };
    let (code, out) = as_user("viewer", &["exec", &name, "--", "true"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("forbidden") && out.contains("pods/exec"), "{out}");
    let (code, out) = as_user("viewer", &["get", "pod", &name]);
    assert_eq!(code, 0, "view reads the pod: {out}");
    let (code, out) = as_user("editor", &["exec", &name, "--", "echo", "edit may"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("edit may"), "{out}");
}

/// The probe image: busybox and this build's `ringleader` (with the
/// libraries it loads), pushed to the test registry once per test run.
fn probe_image(registry: &str, endpoint: &str) -> String {
    static BUILT: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    let reference = format!("{registry}/ringleader/probe:1");
    BUILT.get_or_init(|| build_image(&reference, endpoint, &["--cmd", "[\"sh\"]"])).clone().expect("the probe image")
}

/// The stand-in for the seeds' vendor training images (`pytorch-test`,
/// ACK's `pytorch_dist_mnist`): the probe image plus this machine's Python
/// and bash, and a training program (tests/data/train-image/train.py) at the
/// vendor's script path and as the image's command.
fn train_image(registry: &str, endpoint: &str) -> String {
    static BUILT: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    let reference = format!("{registry}/ringleader/train:1");
    let train = common::repo().join("crates/cli/tests/data/train-image/train.py");
    let train = train.to_string_lossy();
    let python = std::fs::canonicalize("/usr/bin/python3").expect("python3");
    let python = python.to_string_lossy().into_owned();
    let version = python.rsplit('/').next().unwrap_or("python3").to_string();
    let stdlib = format!("/usr/lib/{version}");
    let mut args: Vec<String> = vec!["--file".into(), format!("{python}:{python}"), "--tree".into(), stdlib];
    for skip in
        ["__pycache__", "test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data"]
    {
        args.extend(["--exclude".into(), skip.into()]);
    }
    for link in ["python3", "python"] {
        args.extend(["--link".into(), format!("/usr/bin/{link}={version}")]);
    }
    args.extend(["--file".into(), "/bin/bash:/bin/bash".into()]);
    args.extend(["--file".into(), format!("{train}:/opt/train/train.py")]);
    args.extend(["--file".into(), format!("{train}:/opt/mnist/src/mnist.py")]);
    args.extend(["--cmd".into(), "[\"python3\", \"/opt/train/train.py\"]".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    BUILT.get_or_init(|| build_image(&reference, endpoint, &args)).clone().expect("the train image")
}

/// Builds `reference` (busybox, this build's `ringleader` and `extra`
/// arguments of scripts/oci-image.py) and pushes it to the test registry,
/// not leaving it in containerd: pods pull it through the CRI.
fn build_image(reference: &str, endpoint: &str, extra: &[&str]) -> Result<String, String> {
    {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let tar = dir.path().join("image.tar");
        let mut build = Command::new("python3");
        build.arg(common::repo().join("scripts/oci-image.py")).arg(&tar).arg(reference).arg("--fast");
        build.args(["--file", &format!("{}:/usr/local/bin/ringleader", env!("CARGO_BIN_EXE_ringleader"))]);
        build.args(["--file", "/bin/busybox:/bin/busybox"]).args(extra);
        let applets = Command::new("/bin/busybox").arg("--list").output().map_err(|e| e.to_string())?;
        for applet in String::from_utf8_lossy(&applets.stdout).lines().filter(|a| *a != "busybox") {
            build.args(["--link", &format!("/bin/{applet}=busybox")]);
        }
        let socket = endpoint.trim_start_matches("unix://");
        let ctr = |args: &[&str]| {
            let out = Command::new("ctr").args(["--address", socket, "-n", "k8s.io"]).args(args).output();
            match out {
                Ok(o) if o.status.success() => Ok(()),
                Ok(o) => Err(format!("ctr {args:?}: {}", String::from_utf8_lossy(&o.stderr))),
                Err(e) => Err(format!("ctr: {e}")),
            }
        };
        let out = build.output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("oci-image.py: {}", String::from_utf8_lossy(&out.stderr)));
        }
        ctr(&["images", "import", &tar.to_string_lossy()])?;
        ctr(&["images", "push", "--plain-http", reference])?;
        // Pods pull it through the CRI, as from any registry.
        ctr(&["images", "rm", reference])?;
        Ok(reference.to_string())
    }
}

#[test]
fn the_demos_jobs_run_in_containers_of_the_probe_image() {
    let Some((endpoint, registry)) = environment() else { return };
    let nodes = [
        ("cri-demo-a800-1", "atlas-800-910"),
        ("cri-demo-a800-2", "atlas-800-910"),
        ("cri-demo-h100-1", "hgx-h100-8"),
        ("cri-demo-h100-2", "hgx-h100-8"),
        ("cri-demo-4090-1", "pcie-4090-8"),
        ("cri-demo-4090-2", "pcie-4090-8"),
    ];
    let _cleanup = Cleanup { endpoint: endpoint.clone(), nodes: nodes.iter().map(|(n, _)| n.to_string()).collect() };
    let image = probe_image(&registry, &endpoint);
    // On a pod network: every pod has an address of its own, known only once
    // its sandbox runs, so peers meet by name and the rank table waits for it.
    let args = ["--runtime", "cri", "--cri-endpoint", &endpoint, "--pod-network", "cni"];
    let p = Plane::start(&common::cluster_yaml(65, &nodes), &args);
    // The image is the only change to the demo's files.
    for (file, kind, name) in [
        ("examples/demo/pytorchjob-h100.yaml", "pytorchjobs", "demo-pytorch"),
        ("examples/demo/ascendjob-910.yaml", "ascendjobs", "demo-ascend"),
        ("examples/demo/mpijob.yaml", "mpijobs", "demo-mpi"),
    ] {
        let yaml = common::example(file).replace("image: ringleader/probe", &format!("image: {image}"));
        assert!(yaml.contains(&image), "{file} names the probe image");
        p.apply(&yaml).unwrap_or_else(|e| panic!("{file}: {e}"));
        p.wait_for(180, &format!("{name} Completed"), |p| p.phase(kind, name) == "Completed");
    }
    // Each met its peers through what the controller injected, read inside the containers.
    let ascend_master = p.sandbox_log("demo-ascend-master-0");
    assert!(ascend_master.contains("16 ranks in"), "the rank table was read in the container: {ascend_master}");
    // The table the worker read (its file, as mounted) names each pod's own
    // address, as MindCluster's. (The ConfigMap itself goes back to
    // `initializing` once the pods have ended.) The worker, not the master:
    // under `successPolicy: AllWorkers` the job completes when the worker
    // does, and a master still running then is deleted with the job's end.
    let node = p.get("pods", "demo-ascend-worker-0").map(|m| m["spec"]["nodeName"].clone()).expect("worker");
    let file = p.data_dir().join(format!(
        "nodes/{}/pods/default_demo-ascend-worker-0/files/user/serverid/devindex/config/hccl.json",
        node.as_str().unwrap_or_default()
    ));
    let table = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let table: Value = serde_json::from_str(&table).expect("json");
    assert_eq!(table["status"], "completed", "{table}");
    let servers = table["server_list"].as_array().cloned().unwrap_or_default();
    let ips: std::collections::BTreeSet<&str> = servers.iter().filter_map(|s| s["container_ip"].as_str()).collect();
    assert!(servers.len() == 2 && ips.len() == 2, "a server per pod, each at its own address: {table}");
    for s in &servers {
        assert!(
            s["container_ip"].as_str().is_some_and(|ip| ip.starts_with("10.")) && s["container_ip"] != s["host_ip"]
        );
    }
    let worker = p.get("pods", "demo-ascend-worker-0").unwrap_or_default();
    assert!(ips.contains(worker["status"]["podIP"].as_str().unwrap_or_default()), "{worker}: {table}");
    let pytorch = p.sandbox_log("demo-pytorch-master-0");
    assert!(pytorch.contains("success"), "{pytorch}");
    let launcher = p.sandbox_log("demo-mpi-launcher");
    let launcher = if launcher.is_empty() { p.sandbox_log("demo-mpi-launcher-0") } else { launcher };
    assert!(launcher.contains("success"), "the launcher reached its workers by name: {launcher}");
    let events = p.list("events");
    assert!(!events.iter().any(|e| e["reason"] == "ImageNotUsed"), "images are used: {events:?}");
    let pods = p.list("pods");
    let in_containers = pods
        .iter()
        .filter(|pod| {
            let status = &pod["status"]["containerStatuses"][0];
            status["containerID"].as_str().is_some_and(|c| c.starts_with("containerd://"))
                && status["image"] == image.as_str()
        })
        .count();
    assert!(in_containers > 0 && in_containers == pods.len(), "every pod left ran in a container: {pods:?}");
}

#[test]
fn the_seeds_own_jobs_run_in_containers_of_a_stand_in_image() {
    let Some((endpoint, registry)) = environment() else { return };
    let nodes = ["cri-seed-sp-1", "cri-seed-gpu-1"];
    let _cleanup = Cleanup { endpoint: endpoint.clone(), nodes: nodes.iter().map(|n| n.to_string()).collect() };
    let image = train_image(&registry, &endpoint);
    // An Atlas 900 A3 SuperPoD node, and a GPU node opted in to ACK's
    // topology-aware scheduling (whose pods share the node's PID and IPC
    // namespaces, which this node's operator allows).
    let cluster = "apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {name: cri-seed-sp-1, labels: {host-arch: huawei-arm}}\n\
         spec: {profile: atlas-900-a3-superpod, address: 127.0.72.1, network: {superPod: \"0\"}}\n---\n\
         apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {name: cri-seed-gpu-1, labels: {gpu-model: h100, ack.node.gpu.schedule: topology}}\n\
         spec: {profile: hgx-h100-8, address: 127.0.72.2}\n---\n\
         apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: default}\nspec: {weight: 1}\n";
    let args = ["--runtime", "cri", "--cri-endpoint", &endpoint, "--pod-network", "cni", "--allow-host-namespaces"];
    let p = Plane::start(cluster, &args);
    let ran_in_container = |p: &Plane, pod: &str| {
        let pod = p.get("pods", pod).unwrap_or_default();
        let status = &pod["status"]["containerStatuses"][0];
        assert!(status["containerID"].as_str().is_some_and(|c| c.starts_with("containerd://")), "{pod}");
        assert_eq!(status["image"], image.as_str(), "{pod}");
        assert_eq!(status["state"]["terminated"]["exitCode"], 0, "{pod}");
        assert!(status["state"]["terminated"]["startedAt"].is_string(), "it ran: {pod}");
    };

    // MindCluster's SuperPoD AscendJob names no command: the image's runs.
    let superpod = common::example("examples/ascendjob-superpod.yaml");
    let superpod = superpod.replace("image: pytorch-test:latest", &format!("image: {image}"));
    assert!(superpod.contains(&image));
    p.apply(&superpod).expect("the SuperPoD AscendJob");
    let job = "default-test-pytorch-sp";
    p.wait_for(180, "the SuperPoD job Completed", |p| p.phase("ascendjobs", job) == "Completed");
    ran_in_container(&p, &format!("{job}-master-0"));
    let log = p.sandbox_log(&format!("{job}-master-0"));
    let chips = (0..16).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    for seen in [
        format!("env ASCEND_VISIBLE_DEVICES={chips}"),
        "env RANK_TABLE_FILE=".to_string(),
        "env WORLD_SIZE=16".to_string(),
        "\"status\":\"completed\"".to_string(),
        "\"super_pod_id\":\"0\"".to_string(),
        "16 ranks in".to_string(),
        "success".to_string(),
    ] {
        assert!(log.contains(&seen), "{seen:?} seen inside the container: {log}");
    }

    // ACK's topology-aware PyTorchJob: `python /opt/mnist/src/mnist.py`.
    let ack = common::example("examples/pytorchjob-ack-gpu-topology.yaml");
    let vendor = "registry.cn-hangzhou.aliyuncs.com/kubernetes-image-hub/pytorch_dist_mnist:1.3-gpu-py3";
    assert_eq!(ack.matches(vendor).count(), 2);
    p.apply(&ack.replace(vendor, &image)).expect("the ACK PyTorchJob");
    p.wait_for(180, "the ACK job Completed", |p| p.phase("pytorchjobs", "pytorch-dist-nccl") == "Completed");
    ran_in_container(&p, "pytorch-dist-nccl-master-0");
    let log = p.sandbox_log("pytorch-dist-nccl-master-0");
    for seen in ["args: --backend nccl", "env MASTER_ADDR=", "env WORLD_SIZE=2", "env RANK=0", "success"] {
        assert!(log.contains(seen), "{seen:?} seen inside the container: {log}");
    }
    let worker = p.sandbox_log("pytorch-dist-nccl-worker-0");
    assert!(worker.contains("env RANK=1"), "{worker}");

    // A PyTorchJob as AI Hub's training form makes it (seed 003): two
    // instances, "always pull the image", the shared memory setting (GB) as
    // a memory-backed /dev/shm, the user's own start command — here the
    // stand-in image's program: the seed's examples (`python -m
    // torch.distributed.launch …`, torchrun) need PyTorch, which no image
    // built from this machine's files has.
    let role = |name: &str| {
        format!(
            "    {name}:\n      replicas: 1\n      restartPolicy: OnFailure\n      template:\n        spec:\n          containers:\n          \
             - name: pytorch\n            image: {image}\n            imagePullPolicy: Always\n            \
             command: [python, /opt/train/train.py]\n            resources: {{limits: {{nvidia.com/gpu: 2}}}}\n            \
             volumeMounts: [{{name: dshm, mountPath: /dev/shm}}]\n          \
             volumes: [{{name: dshm, emptyDir: {{medium: Memory, sizeLimit: 2Gi}}}}]\n"
        )
    };
    let ai_hub = format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: ai-hub-train}}\nspec:\n  nprocPerNode: \"2\"\n  \
         runPolicy: {{schedulingPolicy: {{minAvailable: 2}}}}\n  pytorchReplicaSpecs:\n{}{}",
        role("Master"),
        role("Worker")
    );
    p.apply(&ai_hub).expect("the AI Hub style PyTorchJob");
    p.wait_for(180, "the AI Hub job Completed", |p| p.phase("pytorchjobs", "ai-hub-train") == "Completed");
    ran_in_container(&p, "ai-hub-train-master-0");
    let log = p.sandbox_log("ai-hub-train-master-0");
    let shm = format!("shm tmpfs {} bytes", 2u64 << 30);
    for seen in [shm.as_str(), "env PET_NNODES=2", "env PET_NPROC_PER_NODE=2", "env PET_NODE_RANK=0", "success"] {
        assert!(log.contains(seen), "{seen:?} seen inside the container: {log}");
    }
}

fn docker_config_secret(name: &str, registry: &str, user_password: &str) -> String {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let config = format!("{{\"auths\": {{\"{registry}\": {{\"auth\": \"{}\"}}}}}}", b64(user_password));
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}}}\ntype: kubernetes.io/dockerconfigjson\n\
         data: {{.dockerconfigjson: {}}}\n",
        b64(&config)
    )
}

#[test]
fn a_private_image_pulls_with_its_pull_secret_and_a_wrong_one_backs_off() {
    let Some((endpoint, _)) = environment() else { return };
    let (private, auth) =
        match (std::env::var("RINGLEADER_TEST_PRIVATE_REGISTRY"), std::env::var("RINGLEADER_TEST_PRIVATE_AUTH")) {
            (Ok(r), Ok(a)) if !r.is_empty() && !a.is_empty() => (r, a),
            _ => panic!("scripts/cri-env.sh sets RINGLEADER_TEST_PRIVATE_REGISTRY and RINGLEADER_TEST_PRIVATE_AUTH"),
        };
    let (p, _cleanup) = start(66, "cri-secret-1", &endpoint);
    let image = format!("{private}/ringleader/private:1");
    p.apply(&docker_config_secret("regcred", &private, &auth)).expect("secret");
    p.apply(&docker_config_secret("wrongcred", &private, "ringleader:not-the-password")).expect("secret");
    // `kubectl get secrets` shows its type, as kube-apiserver's table does.
    let table = kubectl(&p, &["get", "secrets"]);
    assert!(table.lines().any(|l| l.starts_with("regcred") && l.contains("kubernetes.io/dockerconfigjson")), "{table}");

    // `Always`: a pod pulls with its own credentials even when the node
    // has the image (with IfNotPresent it would run the copy another pod
    // pulled, as on Kubernetes).
    let with = |secret: &str| {
        let secrets =
            if secret.is_empty() { String::new() } else { format!("      imagePullSecrets: [{{name: {secret}}}]\n") };
        format!("        imagePullPolicy: Always\n{secrets}")
    };
    p.apply(&job("good", &image, "echo pulled with the secret", &with("regcred"))).expect("job");
    p.wait_for(90, "good succeeded", |p| pod_of(p, "good").is_some_and(|pod| phase(&pod) == "Succeeded"));
    p.apply(&job("bad", &image, "true", &with("wrongcred"))).expect("job");
    p.apply(&job("none", &image, "true", &with(""))).expect("job");
    let waiting = |p: &Plane, job: &str, reason: &str| {
        pod_of(p, job).is_some_and(|pod| pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == reason)
    };
    for job in ["bad", "none"] {
        p.wait_for(60, &format!("{job}: ErrImagePull"), |p| waiting(p, job, "ErrImagePull"));
        p.wait_for(30, &format!("{job}: ImagePullBackOff"), |p| waiting(p, job, "ImagePullBackOff"));
    }
    // A malformed secret: an Event says so and the pull goes on without it.
    let broken = "apiVersion: v1\nkind: Secret\nmetadata: {name: broken}\ntype: Opaque\ndata: {.dockerconfigjson: bm90IGpzb24=}\n";
    p.apply(broken).expect("an Opaque secret may hold anything");
    p.apply(&job("odd", &image, "true", &with("broken"))).expect("job");
    p.wait_for(60, "odd: ErrImagePull", |p| waiting(p, "odd", "ErrImagePull"));
    let events = p.list("events");
    assert!(
        events.iter().any(|e| e["reason"] == "FailedToRetrieveImagePullSecret"
            && e["message"].as_str().is_some_and(|m| m.contains("broken"))),
        "{events:?}"
    );
    // A dockerconfigjson Secret that is not JSON is refused at the door, naming the key.
    let refused = "apiVersion: v1\nkind: Secret\nmetadata: {name: refused}\ntype: kubernetes.io/dockerconfigjson\ndata: {.dockerconfigjson: bm90IGpzb24=}\n";
    let err = p.apply(refused).expect_err("not JSON");
    assert!(err.contains(".dockerconfigjson") && err.contains("JSON"), "{err}");
}

#[test]
fn volumes_shared_memory_and_devices_are_the_pods_own() {
    let Some((endpoint, registry)) = environment() else { return };
    // Device files of a GPU node: character devices (as /dev/null) named as
    // NVIDIA's driver names them, in a directory of the test's own.
    let devices = tempfile::tempdir().expect("tempdir");
    for name in (0..8).map(|i| format!("nvidia{i}")).chain(["nvidiactl".to_string()]) {
        let path = std::ffi::CString::new(devices.path().join(name).to_string_lossy().into_owned()).expect("path");
        // SAFETY: a valid path; makedev(1, 3) is /dev/null's number.
        let rc = unsafe { libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        assert_eq!(rc, 0, "mknod: {}", std::io::Error::last_os_error());
    }
    let cleanup = Cleanup { endpoint: endpoint.clone(), nodes: vec!["cri-vol-1".into()] };
    let dev = devices.path().to_string_lossy().into_owned();
    let args = ["--runtime", "cri", "--cri-endpoint", &endpoint, "--device-dir", &dev];
    let p = Plane::start(&cluster(67, "cri-vol-1"), &args);
    let image = format!("{registry}/ringleader/busybox:1");
    p.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: train-cfg}\ndata: {lr: '0.01'}\n").expect("cm");
    let gpus =
        |n: u32| format!("        resources: {{requests: {{nvidia.com/gpu: {n}}}, limits: {{nvidia.com/gpu: {n}}}}}\n");
    let volumes = "        volumeMounts:\n        - {name: shm, mountPath: /dev/shm}\n        - {name: cfg, mountPath: /etc/train}\n      \
                   volumes:\n      - name: shm\n        emptyDir: {medium: Memory, sizeLimit: 256Mi}\n      - name: cfg\n        configMap: {name: train-cfg}\n";
    let look =
        "ls /dev | grep '^nvidia' | tr '\\n' ' '; echo; df -k /dev/shm | tail -1; cat /etc/train/lr; echo; sleep 30";
    p.apply(&job("two", &image, look, &format!("{}{volumes}", gpus(2)))).expect("job");
    p.apply(&job("three", &image, look, &gpus(3))).expect("job");
    p.wait_for(90, "both running", |p| {
        ["two", "three"].iter().all(|j| pod_of(p, j).is_some_and(|pod| phase(&pod) == "Running"))
    });
    let mut seen = std::collections::BTreeSet::new();
    for (job, n) in [("two", 2), ("three", 3)] {
        let pod = pod_of(&p, job).expect("pod");
        let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_string();
        p.wait_for(30, "its three lines", |p| p.log(&name).lines().count() >= 3);
        let log = p.log(&name);
        // The `ls` line: containerd copies stdout and stderr separately, so
        // pod three's `cat` error (stderr) may come first in the log.
        let listed: Vec<String> = log
            .lines()
            .find(|l| l.starts_with("nvidia"))
            .unwrap_or_default()
            .split_whitespace()
            .filter(|d| *d != "nvidiactl")
            .map(str::to_string)
            .collect();
        let held: Vec<String> = pod["metadata"]["annotations"]["ringleader.io/devices"]
            .as_str()
            .unwrap_or_default()
            .split(',')
            .map(|d| format!("nvidia{}", d.trim()))
            .collect();
        assert_eq!(listed.len(), n, "{job}: exactly its {n} GPUs: {log}");
        let (mut a, mut b) = (listed.clone(), held.clone());
        a.sort();
        b.sort();
        assert_eq!(a, b, "{job}: the devices the scheduler chose");
        assert!(log.contains("nvidiactl"), "{log}");
        for d in listed {
            assert!(seen.insert(d.clone()), "{d} given to two pods");
        }
        if job == "two" {
            // A tmpfs of 256 MiB (262144 KiB) at /dev/shm, and the ConfigMap's key as a file.
            assert!(log.contains("262144") && log.lines().any(|l| l.trim() == "0.01"), "{log}");
        }
    }
    // A hostPath into the agent's own data is refused with the reason.
    let data = p.data_dir().to_string_lossy().into_owned();
    let spy = format!(
        "        volumeMounts: [{{name: d, mountPath: /spy}}]\n      volumes: [{{name: d, hostPath: {{path: {data:?}}}}}]\n"
    );
    p.apply(&job("spy", &image, "ls /spy", &spy)).expect("job");
    p.wait_for(60, "spy refused", |p| pod_of(p, "spy").is_some_and(|pod| phase(&pod) == "Failed"));
    let pod = pod_of(&p, "spy").expect("pod");
    let terminated = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(terminated["reason"], "CreateContainerConfigError", "{terminated}");
    assert!(
        terminated["message"].as_str().is_some_and(|m| m.contains("hostPath") && m.contains("agent's own files")),
        "{terminated}"
    );
    drop(p);
    drop(cleanup);
}

#[test]
fn a_standalone_agents_containers_stream_and_survive_its_sigkill() {
    let Some((endpoint, registry)) = environment() else { return };
    let node = "cri-agent-1";
    let _cleanup = Cleanup { endpoint: endpoint.clone(), nodes: vec![node.into()] };
    let p = Plane::start(&common::cluster_yaml(68, &[("unused", "hgx-h100-8")]), &["--no-agent"]);
    let kubeconfig = p.dir.path().join("agent.kubeconfig");
    let user = format!("system:node:{node}");
    let out = kubeconfig.to_string_lossy().into_owned();
    p.ctl(&["token", "create", "--user", &user, "--group", "system:nodes", "--kubeconfig-out", &out]);
    let start_agent = || {
        let child = Command::new(env!("CARGO_BIN_EXE_ringleader"))
            .args(["agent", "--node", node, "--profile", "hgx-h100-8", "--address", "127.0.68.9"])
            .args(["--listen", "127.0.0.1:0", "--heartbeat-interval", "0.2", "--runtime", "cri"])
            .args(["--cri-endpoint", &endpoint, "--kubeconfig", &out])
            .arg("--data-dir")
            .arg(p.dir.path().join("agent-data"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("ringleader agent");
        common::Agent(child)
    };
    let mut agent = start_agent();
    let image = format!("{registry}/ringleader/busybox:1");
    let script = "i=0; while [ $i -lt 150 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done";
    p.apply(&job("remote", &image, script, "")).expect("job");
    p.wait_for(90, "remote running", |p| pod_of(p, "remote").is_some_and(|pod| phase(&pod) == "Running"));
    let pod = pod_of(&p, "remote").expect("pod");
    let name = pod["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let id = pod["status"]["containerStatuses"][0]["containerID"].as_str().unwrap_or_default().to_string();
    // exec through the API server and the agent's endpoint to its runtime.
    let (code, out) = kubectl_io(&p, &["exec", &name, "--", "sh", "-c", "echo via the agent; exit 5"], "");
    assert_eq!(code, 5, "{out}");
    assert!(out.contains("via the agent"), "{out}");

    // SIGKILL the agent: its container runs on and the next agent adopts it.
    let _ = agent.0.kill();
    let _ = agent.0.wait();
    std::thread::sleep(Duration::from_millis(500));
    agent = start_agent();
    p.wait_for(120, "remote succeeded in the same container", |p| {
        pod_of(p, "remote").is_some_and(|pod| {
            phase(&pod) == "Succeeded" && pod["status"]["containerStatuses"][0]["containerID"] == id.as_str()
        })
    });
    drop(agent);
}

/// Whether the runtime has `image` (by its reference); a runtime that does
/// not answer fails the test rather than reading as "absent".
fn image_present(endpoint: &str, image: &str) -> bool {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (mut cri, _) = Cri::connect(endpoint, Duration::from_secs(5)).await.expect("the CRI runtime answers");
        let spec = v1::ImageSpec { image: image.to_string(), ..Default::default() };
        let status = cri.image.image_status(v1::ImageStatusRequest { image: Some(spec), verbose: false }).await;
        status.expect("ImageStatus").into_inner().image.is_some()
    })
}

#[test]
fn unused_images_the_agent_pulled_are_collected_past_the_threshold() {
    let Some((endpoint, registry)) = environment() else { return };
    let node = "cri-gc-1";
    let _cleanup = Cleanup { endpoint: endpoint.clone(), nodes: vec![node.into()] };
    // Thresholds of 0 %: every pass finds the filesystem too full.
    let args = [
        "--runtime",
        "cri",
        "--cri-endpoint",
        &endpoint,
        "--image-gc-high-threshold",
        "0",
        "--image-gc-low-threshold",
        "0",
    ];
    let p = Plane::start(&cluster(69, node), &args);
    let image = format!("{registry}/ringleader/gc-victim:1");
    p.apply(&job("victim", &image, "sleep 3", "")).expect("job");
    p.wait_for(90, "victim running", |p| pod_of(p, "victim").is_some_and(|pod| phase(&pod) == "Running"));
    std::thread::sleep(Duration::from_secs(2));
    assert!(image_present(&endpoint, &image), "an image in use stays");
    p.wait_for(60, "victim succeeded", |p| pod_of(p, "victim").is_some_and(|pod| phase(&pod) == "Succeeded"));
    assert!(image_present(&endpoint, &image), "an exited container's image stays while its pod does");
    p.ctl(&["delete", "jobs", "victim"]);
    p.wait_for(60, "the image collected", |_| !image_present(&endpoint, &image));
    assert!(image_present(&endpoint, &format!("{registry}/ringleader/pause:1")), "the pinned pause image stays");
}

#[test]
fn a_pod_restarted_under_its_name_starts_a_fresh_log() {
    let Some((endpoint, registry)) = environment() else { return };
    let (p, _cleanup) = start(70, "cri-restart-1", &endpoint);
    let image = format!("{registry}/ringleader/busybox:1");
    let mark = p.dir.path().join("marks");
    let script = "if [ -f /marks/ran ]; then echo second run; exit 0; fi; touch /marks/ran; echo first run; kill -9 $$";
    let yaml = format!(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: twice}}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      \
         replicas: 1\n      restartPolicy: OnFailure\n      template:\n        spec:\n          containers:\n          - name: pytorch\n            \
         image: {image}\n            command: [sh, -c, {script:?}]\n            volumeMounts: [{{name: marks, mountPath: /marks}}]\n          \
         volumes: [{{name: marks, hostPath: {{path: {:?}, type: DirectoryOrCreate}}}}]\n",
        mark.display()
    );
    p.apply(&yaml).expect("job");
    p.wait_for(120, "twice Completed", |p| p.phase("pytorchjobs", "twice") == "Completed");
    assert!(mark.join("ran").exists(), "the first run ran");
    let log = p.sandbox_log("twice-master-0");
    assert_eq!(log.matches("second run").count(), 1, "{log}");
    assert!(!log.contains("first run"), "the restarted pod's log is its own: {log}");
    // The run before is kept: `--previous` reads it, as of a restarted container.
    let (code, previous) = kubectl_io(&p, &["logs", "twice-master-0", "--previous"], "");
    assert_eq!(code, 0, "{previous}");
    assert!(previous.contains("first run") && !previous.contains("second run"), "{previous}");
    let (_, current) = kubectl_io(&p, &["logs", "twice-master-0"], "");
    assert!(current.contains("second run") && !current.contains("first run"), "{current}");
}

#[test]
fn with_a_pod_network_pods_get_addresses_of_their_own_and_find_each_other_by_name() {
    let Some((endpoint, registry)) = environment() else { return };
    let (p, _cleanup) = {
        let cleanup = Cleanup { endpoint: endpoint.clone(), nodes: vec!["cri-net-1".into()] };
        let args = ["--runtime", "cri", "--cri-endpoint", &endpoint, "--pod-network", "cni"];
        (Plane::start(&cluster(71, "cri-net-1"), &args), cleanup)
    };
    let image = format!("{registry}/ringleader/busybox:1");
    // Port 80 in the pod's own network: no other pod's, no node's.
    let serve = "mkdir -p /www && echo served by $(hostname) > /www/index.html && httpd -f -p 80 -h /www";
    p.apply(&job("server", &image, serve, "")).expect("job");
    p.wait_for(90, "server running", |p| pod_of(p, "server").is_some_and(|pod| phase(&pod) == "Running"));
    let server = pod_of(&p, "server").expect("pod");
    let (ip, host_ip) = (server["status"]["podIP"].as_str().unwrap_or_default(), server["status"]["hostIP"].as_str());
    assert!(!ip.is_empty() && Some(ip) != host_ip && ip.starts_with("10."), "an address of its own: {server}");
    let name = server["metadata"]["name"].as_str().unwrap_or_default().to_string();
    p.apply(&job("client", &image, &format!("wget -qO- http://{name}/index.html"), "")).expect("job");
    p.wait_for(90, "client succeeded", |p| pod_of(p, "client").is_some_and(|pod| phase(&pod) == "Succeeded"));
    let client = pod_of(&p, "client").and_then(|pod| pod["metadata"]["name"].as_str().map(str::to_string)).unwrap();
    let log = p.log(&client);
    assert!(log.contains(&format!("served by {name}")), "reached by name, and the pod's hostname is its name: {log}");
    // Two pods started together: each one's /etc/hosts learns the other's
    // address once its sandbox has it (the file is rewritten in place).
    p.apply(&job("left", &image, "sleep 60", "")).expect("job");
    p.apply(&job("right", &image, "sleep 60", "")).expect("job");
    p.wait_for(90, "both running", |p| {
        ["left", "right"].iter().all(|j| pod_of(p, j).is_some_and(|pod| phase(&pod) == "Running"))
    });
    let (left, right) = (pod_of(&p, "left").expect("left"), pod_of(&p, "right").expect("right"));
    let right_ip = right["status"]["podIP"].as_str().unwrap_or_default().to_string();
    let left_name = left["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let right_name = right["metadata"]["name"].as_str().unwrap_or_default().to_string();
    p.wait_for(10, "left's hosts file names right's address", |p| {
        let (_, hosts) = kubectl_io(p, &["exec", &left_name, "--", "cat", "/etc/hosts"], "");
        hosts.lines().any(|l| {
            l.starts_with(&format!("{right_ip}\t{right_name}")) || l.starts_with(&format!("{right_ip} {right_name}"))
        })
    });

    // hostNetwork: true still shares the node's network.
    p.apply(&job("onhost", &image, "sleep 5", "      hostNetwork: true\n")).expect("job");
    p.wait_for(90, "onhost running", |p| pod_of(p, "onhost").is_some_and(|pod| phase(&pod) == "Running"));
    let onhost = pod_of(&p, "onhost").expect("pod");
    assert_eq!(onhost["status"]["podIP"], onhost["status"]["hostIP"], "{onhost}");
}

/// `contract/battery.sh`: the kubectl commands a Kubernetes user runs, each
/// once, against pods as containers: every one works.
#[test]
fn the_kubectl_battery_works_against_containers() {
    let Some((endpoint, registry)) = environment() else { return };
    if !common::kubectl_or_skip("the kubectl battery") {
        return;
    }
    let nodes = ["cri-bat-1", "cri-bat-2"];
    let _cleanup = Cleanup { endpoint: endpoint.clone(), nodes: nodes.iter().map(|n| n.to_string()).collect() };
    let cluster = format!(
        "apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {}, labels: {{gpu-model: h100}}}}\n\
         spec: {{profile: hgx-h100-8, address: 127.0.70.1}}\n---\n\
         apiVersion: ringleader.io/v1alpha1\nkind: Node\nmetadata: {{name: {}, labels: {{gpu-model: h100}}}}\n\
         spec: {{profile: hgx-h100-8, address: 127.0.70.2}}\n---\n\
         apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: default}}\nspec: {{weight: 1}}\n",
        nodes[0], nodes[1]
    );
    let p = Plane::start(&cluster, &["--runtime", "cri", "--cri-endpoint", &endpoint]);
    let tmp = tempfile::tempdir().expect("tempdir");
    // The battery changes its kubeconfig's context: a copy of its own.
    let kubeconfig = tmp.path().join("kubeconfig");
    std::fs::copy(p.data_dir().join("kubeconfig"), &kubeconfig).expect("kubeconfig");
    let out = Command::new("bash")
        .arg(common::repo().join("crates/cli/tests/contract/battery.sh"))
        .env("KUBECONFIG", &kubeconfig)
        .env("IMAGE", format!("{registry}/ringleader/busybox:1"))
        .env("NODE_A", nodes[0])
        .env("NODE_B", nodes[1])
        .env("EXAMPLES", common::repo().join("examples"))
        .env("TMPDIR", tmp.path())
        .env("HOME", tmp.path())
        .env_remove("KUBECTL_EXTERNAL_DIFF")
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stdout.lines().find(|l| l.starts_with("battery: ")).unwrap_or("no summary");
    assert!(out.status.success(), "{summary}\n{stdout}\n{stderr}");
    let counts: Vec<u32> =
        summary.trim_start_matches("battery: ").split(['/', ' ']).take(2).filter_map(|n| n.parse().ok()).collect();
    assert!(counts.len() == 2 && counts[0] == counts[1] && counts[1] >= 140, "{summary}");
}
