//! Pods as containers of a CRI runtime (containerd), driven as kubelet
//! drives it: pull the image by its pull policy, run the pod sandbox,
//! create and start the container, poll its status until it exits, stop
//! and remove the sandbox when the pod goes. Everything the agent decides
//! (env, files, mounts) arrives already worked out in a [`PodSpec`].

use crate::status::Exit;
use ringleader_cri::v1;
use ringleader_cri::Cri;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

/// Label on every sandbox and container the agent makes: the pod's UID.
pub const LABEL_UID: &str = "io.kubernetes.pod.uid";
/// Label: the pod's name.
pub const LABEL_NAME: &str = "io.kubernetes.pod.name";
/// Label: the pod's namespace.
pub const LABEL_NAMESPACE: &str = "io.kubernetes.pod.namespace";
/// Label: the container's name.
pub const LABEL_CONTAINER: &str = "io.kubernetes.container.name";
/// Label marking what this agent's runtime made (and may adopt or stop).
pub const LABEL_MANAGED: &str = "io.ringleader.managed";
/// Label: the node (of the agent's virtual nodes) the pod is bound to.
pub const LABEL_NODE: &str = "io.ringleader.node";

pub use crate::status::DEFAULT_TERMINATION_MESSAGE_PATH;
/// Most bytes of a termination message kept (kubelet's limit).
pub const TERMINATION_MESSAGE_MAX: usize = 4096;
/// Log lines a `FallbackToLogsOnError` message takes (kubelet: 80 lines, 2 KiB).
const FALLBACK_LINES: usize = 80;
const FALLBACK_BYTES: usize = 2048;

/// `imagePullPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PullPolicy {
    Always,
    #[default]
    IfNotPresent,
    Never,
}

impl PullPolicy {
    /// The container's policy, or kubelet's default by tag: `Always` for
    /// `:latest` or no tag (and no digest), else `IfNotPresent`.
    pub fn of(image: &str, policy: Option<&str>) -> Result<PullPolicy, String> {
        match policy {
            Some("Always") => Ok(PullPolicy::Always),
            Some("IfNotPresent") => Ok(PullPolicy::IfNotPresent),
            Some("Never") => Ok(PullPolicy::Never),
            Some(other) => {
                Err(format!("spec.containers[0].imagePullPolicy: {other:?} is not one of Always, IfNotPresent, Never"))
            }
            None => {
                let last = image.rsplit('/').next().unwrap_or(image);
                let tagged = last.contains(':') || image.contains('@');
                let latest = last.rsplit_once(':').is_some_and(|(_, tag)| tag == "latest") && !image.contains('@');
                Ok(if !tagged || latest { PullPolicy::Always } else { PullPolicy::IfNotPresent })
            }
        }
    }
}

/// A bind mount into the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    pub host: PathBuf,
    pub container: String,
    pub readonly: bool,
}

/// Everything one pod's start needs, worked out by the agent.
#[derive(Debug, Clone, Default)]
pub struct PodSpec {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub node: String,
    pub hostname: String,
    pub container: String,
    pub image: String,
    pub pull: PullPolicy,
    /// Credentials for the image's registry, from `imagePullSecrets`.
    pub auth: Option<Auth>,
    /// `command` and `args` as the pod gives them (empty: the image's).
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub working_dir: Option<String>,
    pub env: Vec<(String, String)>,
    /// Env variables that take the pod's own address once its sandbox has
    /// one (`RINGLEADER_POD_IP`, `fieldRef: status.podIP`), on a pod network.
    pub pod_ip_vars: Vec<String>,
    pub binds: Vec<Bind>,
    /// Device nodes given to the container: (host path, path in the container).
    pub devices: Vec<(String, String)>,
    /// CDI device names (`nvidia.com/gpu=0`).
    pub cdi_devices: Vec<String>,
    /// Directory the runtime writes the container's CRI log under.
    pub log_dir: PathBuf,
    /// The host file mounted at `terminationMessagePath`.
    pub termination_file: PathBuf,
    /// `terminationMessagePath` (default `/dev/termination-log`).
    pub termination_path: String,
    pub fallback_to_logs: bool,
    /// Share the node's network namespace (`hostNetwork`, and every pod
    /// until pods get their own network).
    pub host_network: bool,
    /// Share the node's PID namespace (`hostPID`).
    pub host_pid: bool,
    /// Share the node's IPC namespace (`hostIPC`).
    pub host_ipc: bool,
    pub memory_limit: Option<i64>,
    pub cpu_quota: Option<i64>,
    pub run_as_user: Option<i64>,
}

/// Registry credentials for one pull, from the pod's `imagePullSecrets`.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Auth {
    pub username: String,
    pub password: String,
    /// `base64(username:password)`, as docker config files keep it.
    pub auth: String,
    pub server: String,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password in a log line.
        write!(f, "Auth {{ server: {:?}, username: {:?} }}", self.server, self.username)
    }
}

/// The registry host an image reference pulls from: its first path part
/// when that names a host (a `.` or `:` in it, or `localhost`), else
/// Docker Hub, as containerd's reference parsing has it.
pub fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => first,
        _ => "docker.io",
    }
}

/// The credentials for `image` in a docker config (`.dockerconfigjson`'s
/// `{"auths": {host: {...}}}`, or `.dockercfg`'s `{host: {...}}`): the
/// entry whose host (scheme and path stripped, `index.docker.io` for
/// Docker Hub) is the image's registry.
pub fn auth_for(config: &serde_json::Value, image: &str) -> Option<Auth> {
    let host = registry_of(image);
    let entries = config.get("auths").unwrap_or(config).as_object()?;
    let bare = |k: &str| -> String {
        let k = k.trim_start_matches("https://").trim_start_matches("http://");
        k.split('/').next().unwrap_or(k).to_string()
    };
    let matches = |k: &str| {
        let k = bare(k);
        k == host || (host == "docker.io" && matches!(k.as_str(), "index.docker.io" | "registry-1.docker.io"))
    };
    let (key, entry) = entries.iter().find(|(k, _)| matches(k))?;
    let text = |f: &str| entry.get(f).and_then(serde_json::Value::as_str).unwrap_or_default().to_string();
    let (mut username, mut password, auth) = (text("username"), text("password"), text("auth"));
    if username.is_empty() && !auth.is_empty() {
        use base64::Engine;
        let decoded = base64::engine::general_purpose::STANDARD.decode(auth.trim()).ok()?;
        let pair = String::from_utf8(decoded).ok()?;
        let (u, p) = pair.split_once(':')?;
        (username, password) = (u.to_string(), p.to_string());
    }
    Some(Auth { username, password, auth, server: bare(key) })
}

/// The runtime's names of a started pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids {
    pub sandbox: String,
    pub container: String,
    /// The image as the runtime resolved it (`imageID` in the pod status).
    pub image_ref: String,
    /// The sandbox's address on the pod network ("" with the node's network).
    pub pod_ip: String,
}

/// Why a pod did not start: kubelet's reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: &'static str,
    pub message: String,
    /// The pod waits and tries again (image pulls), rather than failing.
    pub retry: bool,
}

fn fail(reason: &'static str, message: String) -> Failure {
    Failure { reason, message, retry: false }
}

/// Name of the CRI log file under the log directory.
pub fn log_file(container: &str) -> String {
    format!("{container}/0.log")
}

fn labels(spec: &PodSpec) -> HashMap<String, String> {
    HashMap::from([
        (LABEL_UID.to_string(), spec.uid.clone()),
        (LABEL_NAME.to_string(), spec.name.clone()),
        (LABEL_NAMESPACE.to_string(), spec.namespace.clone()),
        (LABEL_MANAGED.to_string(), "true".to_string()),
        (LABEL_NODE.to_string(), spec.node.clone()),
    ])
}

fn sandbox_config(spec: &PodSpec) -> v1::PodSandboxConfig {
    let network = if spec.host_network { v1::NamespaceMode::Node } else { v1::NamespaceMode::Pod };
    v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: spec.name.clone(),
            uid: spec.uid.clone(),
            namespace: spec.namespace.clone(),
            attempt: 0,
        }),
        hostname: if spec.host_network { String::new() } else { spec.hostname.clone() },
        log_directory: spec.log_dir.to_string_lossy().into_owned(),
        labels: labels(spec),
        linux: Some(v1::LinuxPodSandboxConfig {
            security_context: Some(v1::LinuxSandboxSecurityContext {
                namespace_options: Some(v1::NamespaceOption {
                    network: network as i32,
                    pid: if spec.host_pid { v1::NamespaceMode::Node } else { v1::NamespaceMode::Container } as i32,
                    ipc: if spec.host_ipc { v1::NamespaceMode::Node } else { v1::NamespaceMode::Pod } as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Whether the image is here (`ImageStatus`).
async fn present(cri: &mut Cri, image: &str) -> Result<bool, tonic::Status> {
    let req = v1::ImageStatusRequest {
        image: Some(v1::ImageSpec { image: image.to_string(), ..Default::default() }),
        verbose: false,
    };
    Ok(cri.image.image_status(req).await?.into_inner().image.is_some())
}

/// Pulls the image as the policy says (with the registry's credentials
/// when the pod has them).
pub async fn pull(cri: &mut Cri, image: &str, policy: PullPolicy, auth: Option<&Auth>) -> Result<(), Failure> {
    let here = match policy {
        PullPolicy::Always => false,
        PullPolicy::IfNotPresent | PullPolicy::Never => present(cri, image)
            .await
            .map_err(|e| fail("ErrImageInspect", format!("Failed to inspect image {image:?}: {}", e.message())))?,
    };
    if here {
        return Ok(());
    }
    if policy == PullPolicy::Never {
        return Err(Failure {
            reason: "ErrImageNeverPull",
            message: format!("Container image {image:?} is not present with pull policy of Never"),
            retry: true,
        });
    }
    let auth = auth.map(|a| v1::AuthConfig {
        username: a.username.clone(),
        password: a.password.clone(),
        auth: a.auth.clone(),
        // containerd parses it as a URL and matches its host.
        server_address: format!("https://{}", a.server),
        ..Default::default()
    });
    let req = v1::PullImageRequest {
        image: Some(v1::ImageSpec { image: image.to_string(), ..Default::default() }),
        auth,
        sandbox_config: None,
    };
    cri.image.pull_image(req).await.map(|_| ()).map_err(|e| Failure {
        reason: "ErrImagePull",
        message: format!("Failed to pull image {image:?}: {}", e.message()),
        retry: true,
    })
}

/// Pulls, runs the sandbox, creates and starts the container. A failure
/// after the sandbox ran removes it again.
pub async fn start(cri: &mut Cri, spec: &PodSpec) -> Result<Ids, Failure> {
    pull(cri, &spec.image, spec.pull, spec.auth.as_ref()).await?;
    std::fs::create_dir_all(&spec.log_dir)
        .map_err(|e| fail("CreatePodSandboxError", format!("{}: {e}", spec.log_dir.display())))?;
    let config = sandbox_config(spec);
    let sandbox = cri
        .runtime
        .run_pod_sandbox(v1::RunPodSandboxRequest { config: Some(config.clone()), runtime_handler: String::new() })
        .await
        .map_err(|e| fail("CreatePodSandboxError", format!("Failed to create pod sandbox: {}", e.message())))?
        .into_inner()
        .pod_sandbox_id;
    let pod_ip = if spec.host_network { String::new() } else { sandbox_ip(cri, &sandbox).await };
    let with_ip;
    let spec = if pod_ip.is_empty() || spec.pod_ip_vars.is_empty() {
        spec
    } else {
        let mut s = spec.clone();
        for (k, v) in s.env.iter_mut() {
            if s.pod_ip_vars.contains(k) {
                *v = pod_ip.clone();
            }
        }
        with_ip = s;
        &with_ip
    };
    match create_and_start(cri, spec, &sandbox, config).await {
        Ok((container, image_ref)) => Ok(Ids { sandbox, container, image_ref, pod_ip }),
        Err(f) => {
            remove_sandbox(cri, &sandbox).await;
            Err(f)
        }
    }
}

async fn create_and_start(
    cri: &mut Cri,
    spec: &PodSpec,
    sandbox: &str,
    sandbox_config: v1::PodSandboxConfig,
) -> Result<(String, String), Failure> {
    let mut mounts: Vec<v1::Mount> = spec
        .binds
        .iter()
        .map(|b| v1::Mount {
            container_path: b.container.clone(),
            host_path: b.host.to_string_lossy().into_owned(),
            readonly: b.readonly,
            ..Default::default()
        })
        .collect();
    mounts.push(v1::Mount {
        container_path: spec.termination_path.clone(),
        host_path: spec.termination_file.to_string_lossy().into_owned(),
        ..Default::default()
    });
    let mut labels = labels(spec);
    labels.insert(LABEL_CONTAINER.to_string(), spec.container.clone());
    let resources = v1::LinuxContainerResources {
        memory_limit_in_bytes: spec.memory_limit.unwrap_or(0),
        cpu_quota: spec.cpu_quota.unwrap_or(0),
        cpu_period: if spec.cpu_quota.is_some() { 100_000 } else { 0 },
        ..Default::default()
    };
    let security = v1::LinuxContainerSecurityContext {
        run_as_user: spec.run_as_user.map(|value| v1::Int64Value { value }),
        namespace_options: sandbox_config
            .linux
            .as_ref()
            .and_then(|l| l.security_context.as_ref())
            .and_then(|s| s.namespace_options.clone()),
        ..Default::default()
    };
    let config = v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata { name: spec.container.clone(), attempt: 0 }),
        image: Some(v1::ImageSpec { image: spec.image.clone(), ..Default::default() }),
        command: spec.command.clone(),
        args: spec.args.clone(),
        working_dir: spec.working_dir.clone().unwrap_or_default(),
        envs: spec.env.iter().map(|(key, value)| v1::KeyValue { key: key.clone(), value: value.clone() }).collect(),
        mounts,
        devices: spec
            .devices
            .iter()
            .map(|(host, inside)| v1::Device {
                container_path: inside.clone(),
                host_path: host.clone(),
                permissions: "rwm".into(),
            })
            .collect(),
        cdi_devices: spec.cdi_devices.iter().map(|name| v1::CdiDevice { name: name.clone() }).collect(),
        labels,
        log_path: log_file(&spec.container),
        linux: Some(v1::LinuxContainerConfig { resources: Some(resources), security_context: Some(security) }),
        ..Default::default()
    };
    let req = v1::CreateContainerRequest {
        pod_sandbox_id: sandbox.to_string(),
        config: Some(config),
        sandbox_config: Some(sandbox_config),
    };
    let container = cri
        .runtime
        .create_container(req)
        .await
        .map_err(|e| fail("CreateContainerError", e.message().to_string()))?
        .into_inner()
        .container_id;
    cri.runtime
        .start_container(v1::StartContainerRequest { container_id: container.clone() })
        .await
        .map_err(|e| fail("StartError", e.message().to_string()))?;
    let image_ref = status(cri, &container).await.ok().flatten().map(|s| s.image_ref).unwrap_or_default();
    Ok((container, image_ref))
}

/// The sandbox's address on the pod network (CNI), "" when it has none.
async fn sandbox_ip(cri: &mut Cri, sandbox: &str) -> String {
    let req = v1::PodSandboxStatusRequest { pod_sandbox_id: sandbox.to_string(), verbose: false };
    match cri.runtime.pod_sandbox_status(req).await {
        Ok(r) => r.into_inner().status.and_then(|s| s.network).map(|n| n.ip).unwrap_or_default(),
        Err(e) => {
            tracing::warn!(sandbox, error = %e.message(), "reading a pod sandbox's address failed");
            String::new()
        }
    }
}

/// The container's status; `None` when the runtime no longer knows it.
pub async fn status(cri: &mut Cri, container: &str) -> Result<Option<v1::ContainerStatus>, tonic::Status> {
    let req = v1::ContainerStatusRequest { container_id: container.to_string(), verbose: false };
    match cri.runtime.container_status(req).await {
        Ok(r) => Ok(r.into_inner().status),
        Err(e) if e.code() == tonic::Code::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// How a container ended, as kubelet reports it: the runtime's exit code
/// and reason; the message from the termination-message file, else (with
/// `FallbackToLogsOnError` and a failure) the log's tail, else the runtime's.
pub fn exit_of(s: &v1::ContainerStatus, termination: Option<String>) -> (Exit, Option<f64>) {
    let reason = if s.reason.is_empty() {
        if s.exit_code == 0 {
            "Completed".to_string()
        } else {
            "Error".to_string()
        }
    } else {
        s.reason.clone()
    };
    let message = termination.filter(|m| !m.is_empty()).or_else(|| (!s.message.is_empty()).then(|| s.message.clone()));
    let at = (s.finished_at > 0).then(|| s.finished_at as f64 / 1e9);
    (Exit { code: s.exit_code, reason, message }, at)
}

/// The termination message kubelet would read: the file (at most 4 KiB),
/// else the log's last lines when the container failed and the pod asked
/// for `FallbackToLogsOnError`.
pub fn termination_message(
    file: &std::path::Path,
    log: &std::path::Path,
    failed: bool,
    fallback: bool,
) -> Option<String> {
    let from_file = std::fs::read(file).ok().filter(|b| !b.is_empty()).map(|mut b| {
        b.truncate(TERMINATION_MESSAGE_MAX);
        String::from_utf8_lossy(&b).into_owned()
    });
    if from_file.is_some() || !(failed && fallback) {
        return from_file;
    }
    let text = std::fs::read(log).ok()?;
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(FALLBACK_LINES)..].join("\n");
    let start = tail.len().saturating_sub(FALLBACK_BYTES);
    let start = (start..=tail.len()).find(|i| tail.is_char_boundary(*i)).unwrap_or(tail.len());
    Some(tail[start..].to_string()).filter(|s| !s.is_empty())
}

/// Stops the container (SIGTERM, SIGKILL after `grace`) and the sandbox.
pub async fn stop(cri: &mut Cri, ids: &Ids, grace: Duration) {
    let req = v1::StopContainerRequest { container_id: ids.container.clone(), timeout: grace.as_secs() as i64 };
    if let Err(e) = cri.runtime.stop_container(req).await {
        if e.code() != tonic::Code::NotFound {
            tracing::warn!(container = %ids.container, error = %e.message(), "stopping a container failed");
        }
    }
}

/// Stops and removes a sandbox and its containers.
pub async fn remove_sandbox(cri: &mut Cri, sandbox: &str) {
    let id = sandbox.to_string();
    if let Err(e) = cri.runtime.stop_pod_sandbox(v1::StopPodSandboxRequest { pod_sandbox_id: id.clone() }).await {
        if e.code() != tonic::Code::NotFound {
            tracing::warn!(sandbox, error = %e.message(), "stopping a pod sandbox failed");
        }
    }
    if let Err(e) = cri.runtime.remove_pod_sandbox(v1::RemovePodSandboxRequest { pod_sandbox_id: id }).await {
        if e.code() != tonic::Code::NotFound {
            tracing::warn!(sandbox, error = %e.message(), "removing a pod sandbox failed");
        }
    }
}

/// A container this agent's runtime made, found again after a restart.
#[derive(Debug, Clone)]
pub struct Found {
    pub uid: String,
    pub node: String,
    pub ids: Ids,
    pub running: bool,
}

/// Every container carrying ringleader's labels, newest first per pod.
pub async fn list_ours(cri: &mut Cri) -> Result<Vec<Found>, String> {
    let filter = v1::ContainerFilter {
        label_selector: HashMap::from([(LABEL_MANAGED.to_string(), "true".to_string())]),
        ..Default::default()
    };
    let mut list = cri
        .runtime
        .list_containers(v1::ListContainersRequest { filter: Some(filter) })
        .await
        .map_err(|e| format!("ListContainers: {}", e.message()))?
        .into_inner()
        .containers;
    list.sort_by_key(|c| std::cmp::Reverse(c.created_at));
    Ok(list
        .into_iter()
        .map(|c| Found {
            uid: c.labels.get(LABEL_UID).cloned().unwrap_or_default(),
            node: c.labels.get(LABEL_NODE).cloned().unwrap_or_default(),
            running: c.state == v1::ContainerState::ContainerRunning as i32,
            ids: Ids { sandbox: c.pod_sandbox_id, container: c.id, image_ref: c.image_ref, pod_ip: String::new() },
        })
        .collect())
}

/// Every sandbox carrying ringleader's labels: (sandbox id, pod uid, node).
pub async fn sandboxes_ours(cri: &mut Cri) -> Result<Vec<(String, String, String)>, String> {
    let filter = v1::PodSandboxFilter {
        label_selector: HashMap::from([(LABEL_MANAGED.to_string(), "true".to_string())]),
        ..Default::default()
    };
    let list = cri
        .runtime
        .list_pod_sandbox(v1::ListPodSandboxRequest { filter: Some(filter) })
        .await
        .map_err(|e| format!("ListPodSandbox: {}", e.message()))?
        .into_inner()
        .items;
    Ok(list
        .into_iter()
        .map(|s| {
            let label = |k: &str| s.labels.get(k).cloned().unwrap_or_default();
            (s.id.clone(), label(LABEL_UID), label(LABEL_NODE))
        })
        .collect())
}

/// The runtime `--runtime` names: `process`, `simulated`, `cri`, or
/// `auto` (CRI when a runtime answers at `endpoint`, else processes, so a
/// machine with nothing installed still runs pods).
pub async fn choose(choice: &str, endpoint: &str) -> Result<crate::config::Runtime, String> {
    use crate::config::Runtime;
    match choice {
        "process" => Ok(Runtime::Process),
        "simulated" => Ok(Runtime::Simulated),
        "cri" => Ok(Runtime::Cri),
        "auto" => match Cri::connect(endpoint, Duration::from_secs(2)).await {
            Ok(_) => Ok(Runtime::Cri),
            Err(e) => {
                tracing::info!(reason = %e, "no CRI runtime answers: pods run as processes");
                Ok(Runtime::Process)
            }
        },
        other => Err(format!("--runtime: {other:?} is not one of auto, process, cri, simulated")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policy_defaults_follow_the_tag() {
        let p = |image: &str| PullPolicy::of(image, None).unwrap();
        assert_eq!(p("busybox"), PullPolicy::Always);
        assert_eq!(p("busybox:latest"), PullPolicy::Always);
        assert_eq!(p("127.0.0.1:5000/busybox"), PullPolicy::Always, "a registry port is not a tag");
        assert_eq!(p("127.0.0.1:5000/busybox:1"), PullPolicy::IfNotPresent);
        assert_eq!(p("busybox@sha256:abcd"), PullPolicy::IfNotPresent);
        assert_eq!(PullPolicy::of("busybox", Some("Never")).unwrap(), PullPolicy::Never);
        let err = PullPolicy::of("busybox", Some("Sometimes")).unwrap_err();
        assert!(err.contains("imagePullPolicy") && err.contains("Sometimes") && err.contains("IfNotPresent"), "{err}");
    }

    #[test]
    fn pull_secrets_give_the_image_registrys_credentials() {
        assert_eq!(registry_of("127.0.0.1:5056/ringleader/private:1"), "127.0.0.1:5056");
        assert_eq!(registry_of("registry.example.com/a/b"), "registry.example.com");
        assert_eq!(registry_of("busybox"), "docker.io");
        assert_eq!(registry_of("library/busybox:1"), "docker.io");
        let config = serde_json::json!({"auths": {
            "https://127.0.0.1:5056/v1/": {"auth": "dTpw"},
            "index.docker.io": {"username": "hub", "password": "pw"},
        }});
        let a = auth_for(&config, "127.0.0.1:5056/x:1").unwrap();
        assert_eq!((a.username.as_str(), a.password.as_str(), a.server.as_str()), ("u", "p", "127.0.0.1:5056"));
        assert_eq!(auth_for(&config, "busybox").unwrap().username, "hub");
        assert!(auth_for(&config, "other.example.com/x").is_none());
        assert!(!format!("{a:?}").contains("\"p\""), "no password in Debug: {a:?}");
        // `.dockercfg`: the hosts at the top.
        let old = serde_json::json!({"127.0.0.1:5056": {"username": "u2", "password": "p2"}});
        assert_eq!(auth_for(&old, "127.0.0.1:5056/x").unwrap().username, "u2");
    }

    #[test]
    fn exits_read_as_kubelet_reports_them() {
        let s = v1::ContainerStatus {
            exit_code: 3,
            reason: "Error".into(),
            finished_at: 2_500_000_000,
            ..Default::default()
        };
        let (exit, at) = exit_of(&s, Some("disk on fire".into()));
        assert_eq!((exit.code, exit.reason.as_str(), exit.message.as_deref()), (3, "Error", Some("disk on fire")));
        assert_eq!(at, Some(2.5));
        let (ok, _) = exit_of(&v1::ContainerStatus::default(), None);
        assert_eq!((ok.code, ok.reason.as_str(), ok.message), (0, "Completed", None));
    }

    #[test]
    fn termination_messages_come_from_the_file_or_the_logs_tail() {
        let dir = tempfile::tempdir().unwrap();
        let (file, log) = (dir.path().join("termination-log"), dir.path().join("log"));
        std::fs::write(&file, "").unwrap();
        let lines: String = (0..200).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, &lines).unwrap();
        assert_eq!(termination_message(&file, &log, true, false), None, "no fallback asked");
        assert_eq!(termination_message(&file, &log, false, true), None, "a success takes no log tail");
        let tail = termination_message(&file, &log, true, true).unwrap();
        assert!(tail.ends_with("line 199") && !tail.contains("line 119\n"), "{tail}");
        std::fs::write(&file, "x".repeat(10_000)).unwrap();
        assert_eq!(termination_message(&file, &log, true, true).unwrap().len(), TERMINATION_MESSAGE_MAX);
    }
}
