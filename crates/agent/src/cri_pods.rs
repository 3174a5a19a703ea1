//! The agent's pods as containers of a CRI runtime: how a bound pod
//! becomes a [`cri::PodSpec`] (image, command, env, files mounted where the
//! pod reads them, its node's hosts file as `/etc/hosts`, devices, limits),
//! the background tasks that start and watch containers, and how their
//! news (started, failed, exited) lands in the pods' statuses. Containers
//! belong to the runtime, so they outlive the agent: a new agent finds them
//! by their labels and watches them again.

use crate::agent::{Agent, PodState, TimerAction};
use crate::cri_runtime::{stop, CriPod, CriRuntime, News};
use crate::pod::{self, PodInfo};
use crate::runtime::cri::{self, Bind, Failure, Ids, PodSpec, PullPolicy};
use crate::runtime::cri_relist::Relist;
use crate::runtime::{cdi, cgroup, cri_log, cri_volumes};
use crate::status::{self, Exit};
use crate::writer::Write;
use crate::{command, device_env, node, sandbox};
use ringleader_api::devices::{classify, Family};
use ringleader_api::time;
use ringleader_cri::Cri;
use ringleader_store::ObjectKey;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Kubelet's image pull back-off: 10 s, doubling, at most 5 minutes.
const BACK_OFF_FIRST: Duration = Duration::from_secs(10);
const BACK_OFF_MAX: Duration = Duration::from_secs(300);
/// The scheme of `containerID` in pod statuses.
const SCHEME: &str = "containerd";
/// File under a pod's sandbox mounted at its `terminationMessagePath`.
const TERMINATION_FILE: &str = "termination-log";

/// The log the API server serves, and the CRI log it is copied from.
fn log_paths(spec: &PodSpec, sandbox: &Path) -> (PathBuf, PathBuf) {
    (spec.log_dir.join(cri::log_file(&spec.container)), sandbox.join(sandbox::LOG_FILE))
}

/// Starts `spec`'s container and watches it to its end, reporting each step.
fn spawn_start(rt: &CriRuntime, key: ObjectKey, uid: String, spec: PodSpec, sandbox: PathBuf, log_max: u64) {
    let (mut client, tx, pulled, relist) =
        (rt.client.clone(), rt.news_tx.clone(), rt.pulled.clone(), rt.relist.clone());
    let starts = rt.starts.clone();
    tokio::spawn(async move {
        let started = match starts.acquire_owned().await {
            Ok(_permit) => cri::start(&mut client, &spec).await,
            Err(_) => Err(Failure { reason: "RuntimeNotReady", message: "the agent is stopping".into(), retry: false }),
        };
        match started {
            Err(failure) => {
                let _ = tx.send(News::Failed { key, uid, failure });
            }
            Ok(ids) => {
                pulled.add(&spec.image);
                let _ = tx.send(News::Started { key: key.clone(), uid: uid.clone(), ids: ids.clone() });
                watch_to_end((client, relist), tx, (key, uid), ids, &spec, &sandbox, log_max, false).await;
            }
        }
    });
}

/// Copies the container's log while it runs; reports how it ended.
#[allow(clippy::too_many_arguments)]
async fn watch_to_end(
    (mut client, relist): (Cri, Relist),
    tx: mpsc::UnboundedSender<News>,
    (key, uid): (ObjectKey, String),
    ids: Ids,
    spec: &PodSpec,
    sandbox: &Path,
    log_max: u64,
    adopted: bool,
) {
    let (from, to) = log_paths(spec, sandbox);
    if adopted {
        // The copy starts over from the CRI log, which has every line.
        for p in [to.clone(), crate::runtime::log_file::times_path(&to)] {
            let _ = std::fs::remove_file(p);
        }
    }
    let (done_tx, done_rx) = watch::channel(false);
    let follower = tokio::spawn(cri_log::follow(from, to.clone(), log_max, done_rx));
    let ended = relist.wait(&mut client, &ids.container).await;
    let _ = done_tx.send(true);
    // Bounded: the follower makes one last read after `done`.
    let _ = follower.await;
    let (exit, at) = match ended {
        Ok(s) => {
            let message =
                cri::termination_message(&spec.termination_file, &to, s.exit_code != 0, spec.fallback_to_logs);
            cri::exit_of(&s, message)
        }
        Err(m) => (Exit::agent(128, "ContainerStatusUnknown", m), None),
    };
    let _ = tx.send(News::Exited { key, uid, exit, at });
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The device nodes of the pod's chips that exist in `dev` (virtual nodes
/// have none), as (host path, path in the container under `/dev`):
/// NVIDIA's `nvidiaN` with its control nodes, Ascend's `davinciN` with the
/// managers Ascend Docker Runtime adds.
fn device_nodes(devices: &[u32], dev: &Path) -> Vec<(String, String)> {
    let mut names = Vec::new();
    let exists = |name: &str| dev.join(name).exists();
    let (mut nvidia, mut ascend) = (false, false);
    for d in devices {
        for (prefix, flag) in [("nvidia", &mut nvidia), ("davinci", &mut ascend)] {
            let name = format!("{prefix}{d}");
            if exists(&name) {
                names.push(name);
                *flag = true;
            }
        }
    }
    let extra: &[&str] = match (nvidia, ascend) {
        (true, _) => &["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"],
        (_, true) => &["davinci_manager", "devmm_svm", "hisi_hdc"],
        _ => &[],
    };
    names.extend(extra.iter().filter(|n| exists(n)).map(|n| n.to_string()));
    names.into_iter().map(|n| (dev.join(&n).to_string_lossy().into_owned(), format!("/dev/{n}"))).collect()
}

impl Agent {
    /// The pod's chips as CDI devices (NVIDIA GPUs a CDI spec declares) or
    /// as device nodes.
    fn devices_of(&self, obj: &Value) -> (Vec<(String, String)>, Vec<String>) {
        let chips = pod::devices(obj).unwrap_or_default();
        let gpus = obj
            .pointer("/spec/containers/0/resources/limits")
            .and_then(Value::as_object)
            .is_some_and(|l| l.keys().any(|r| matches!(classify(r), Some((Family::Gpu, _)))));
        if gpus {
            let declared = cdi::declared(&self.cfg.cdi_spec_dirs, cdi::NVIDIA_GPU);
            if let Some(names) = cdi::gpu_names(&chips, &declared) {
                return (Vec::new(), names);
            }
        }
        (device_nodes(&chips, &self.cfg.device_dir), Vec::new())
    }

    /// What the runtime is asked to run for this pod. With `make_files`
    /// (a start), its files, volumes, hosts file and termination-message
    /// file are written and its pull credentials read; without (adopting a
    /// running container) nothing on disk is touched: rewriting a volume
    /// or the message file under a container that runs or has just ended
    /// would lose what it holds.
    fn cri_spec(
        &mut self,
        info: &PodInfo,
        obj: &Value,
        node: &str,
        make_files: bool,
    ) -> Result<(PodSpec, PathBuf), (&'static str, String)> {
        let invalid = |m: String| ("InvalidPod", m);
        let (ns, name) = (info.key.namespace.as_str(), info.key.name.as_str());
        let ns = if ns.is_empty() { "default" } else { ns };
        let address = self.address_of(node);
        let container = pod::first_container(obj, &pod::Placement { node, address: &address }).map_err(invalid)?;
        let c0 = obj.pointer("/spec/containers/0").cloned().unwrap_or_default();
        let image = str_at(&c0, "/image").unwrap_or_default().trim().to_string();
        if image.is_empty() {
            return Err(("InvalidImageName", "spec.containers[0].image: required to run as a container".into()));
        }
        let pull = PullPolicy::of(&image, str_at(&c0, "/imagePullPolicy")).map_err(invalid)?;
        let privileged = c0.pointer("/securityContext/privileged").and_then(Value::as_bool) == Some(true);
        if privileged {
            return Err((
                "CreateContainerConfigError",
                "spec.containers[0].securityContext.privileged: true is not allowed on this node".into(),
            ));
        }
        let host_ns = |field: &str| obj.pointer(&format!("/spec/{field}")).and_then(Value::as_bool) == Some(true);
        let (host_pid, host_ipc) = (host_ns("hostPID"), host_ns("hostIPC"));
        if let Some(field) = [("hostPID", host_pid), ("hostIPC", host_ipc)].iter().find(|(_, on)| *on).map(|(f, _)| f) {
            if !self.cfg.allow_host_namespaces {
                return Err((
                    "CreateContainerConfigError",
                    format!("spec.{field}: true is not allowed on this node (the agent's --allow-host-namespaces)"),
                ));
            }
        }
        let dir = sandbox::sandbox_dir(&self.cfg.data_dir, node, ns, name).map_err(invalid)?;
        let mut binds = if make_files { self.make_files(ns, obj, &dir)? } else { Vec::new() };
        // The account's token, read-only: a directory, so the renewed token
        // (written beside, then renamed) shows through.
        let account_dir = dir.join("serviceaccount");
        if make_files && self.mount_service_account(info, obj, &account_dir)? {
            let container = ringleader_api::kinds::service_account::MOUNT_PATH.to_string();
            binds.push(Bind { host: account_dir, container, readonly: true });
        }
        let termination_path = str_at(&c0, "/terminationMessagePath")
            .filter(|p| !p.is_empty())
            .unwrap_or(cri::DEFAULT_TERMINATION_MESSAGE_PATH)
            .to_string();
        if !termination_path.starts_with('/') || termination_path.split('/').any(|part| part == "..") {
            return Err(invalid(format!(
                "spec.containers[0].terminationMessagePath: {termination_path:?} must be an absolute path without '..'"
            )));
        }
        let termination_file = dir.join(TERMINATION_FILE);
        if make_files {
            use std::os::unix::fs::PermissionsExt;
            sandbox::write_file(&termination_file, b"").map_err(|e| ("CreateContainerConfigError", e.to_string()))?;
            // The container's user, whoever it is, writes its last words here.
            let _ = std::fs::set_permissions(&termination_file, std::fs::Permissions::from_mode(0o666));
        }
        let mut env = self.api_env();
        env.extend(device_env::of(obj));
        env.extend(container.env.iter().cloned());
        let mut env = command::expand_env(&env);
        let hostname = info.hostname.clone().unwrap_or_else(|| name.to_string());
        for (k, v) in [
            ("RINGLEADER_NODE", node),
            ("RINGLEADER_POD", name),
            ("RINGLEADER_NAMESPACE", ns),
            ("RINGLEADER_POD_IP", address.as_str()),
            ("RINGLEADER_HOSTS", "/etc/hosts"),
        ] {
            env.retain(|(n, _)| n != k);
            env.push((k.to_string(), v.to_string()));
        }
        let host_network =
            !self.cfg.pod_network || obj.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true);
        let mut pod_ip_vars = Vec::new();
        if !host_network {
            pod_ip_vars.push("RINGLEADER_POD_IP".to_string());
            for e in c0.get("env").and_then(Value::as_array).into_iter().flatten() {
                let path = e.pointer("/valueFrom/fieldRef/fieldPath").and_then(Value::as_str);
                if matches!(path, Some("status.podIP" | "status.podIPs")) {
                    if let Some(name) = e.get("name").and_then(Value::as_str) {
                        pod_ip_vars.push(name.to_string());
                    }
                }
            }
        }
        let lookup = |var: &str| env.iter().find(|(k, _)| k == var).map(|(_, v)| v.clone());
        let command: Vec<String> = container.command.iter().map(|a| command::expand(a, &lookup)).collect();
        let args: Vec<String> = container.args.iter().map(|a| command::expand(a, &lookup)).collect();
        let limits = cgroup::limits_of(obj, None);
        let run_as_user = c0
            .pointer("/securityContext/runAsUser")
            .or_else(|| obj.pointer("/spec/securityContext/runAsUser"))
            .and_then(Value::as_i64);
        let (auth, secret_trouble) = if make_files { self.pull_auth(ns, obj, &image) } else { (None, Vec::new()) };
        for message in secret_trouble {
            let event = node::pod_event(
                &info.key,
                &info.uid,
                node,
                time::now(),
                ("Warning", "FailedToRetrieveImagePullSecret"),
                &message,
            );
            self.write(Write::Event(event));
        }
        let (devices, cdi_devices) = self.devices_of(obj);
        let spec = PodSpec {
            namespace: ns.to_string(),
            name: name.to_string(),
            uid: info.uid.clone(),
            node: node.to_string(),
            hostname,
            container: pod::container_name(obj),
            image,
            pull,
            auth,
            command,
            args,
            working_dir: container.working_dir.clone(),
            env,
            binds,
            devices,
            cdi_devices,
            log_dir: dir.join("cri"),
            termination_file,
            fallback_to_logs: str_at(&c0, "/terminationMessagePolicy") == Some("FallbackToLogsOnError"),
            termination_path,
            // Without a pod network, pods share their node's: peers reach
            // them at the node's address, as process pods.
            host_network,
            host_pid,
            host_ipc,
            pod_ip_vars,
            memory_limit: limits.memory.and_then(|m| i64::try_from(m).ok()),
            cpu_quota: limits.cpu_quota_us.and_then(|q| i64::try_from(q).ok()),
            run_as_user,
        };
        Ok((spec, dir))
    }

    /// Writes the pod's injected files, volumes and hosts file under its
    /// sandbox `dir`; the binds that show them to the container.
    fn make_files(&mut self, ns: &str, obj: &Value, dir: &Path) -> Result<Vec<Bind>, (&'static str, String)> {
        let invalid = |m: String| ("InvalidPod", m);
        let mut files = pod::files(obj).map_err(invalid)?;
        files.extend(self.config_files(ns, obj)?);
        let files_root = dir.join("files");
        sandbox::prepare(&files_root, &files, None).map_err(|m| ("CreateContainerConfigError", m))?;
        let mut binds = Vec::new();
        for path in files.keys() {
            let host = sandbox::in_sandbox(&files_root, path).map_err(invalid)?;
            let at = if path.starts_with('/') { path.clone() } else { format!("/{path}") };
            binds.push(Bind { host, container: at, readonly: true });
        }
        let mut hidden = vec![self.cfg.data_dir.clone()];
        hidden.extend(self.cfg.hidden_paths.iter().cloned());
        let policy = cri_volumes::Policy {
            hidden: &hidden,
            allowed_host_paths: &self.cfg.allowed_host_paths,
            // SAFETY: geteuid has no preconditions.
            mount_tmpfs: unsafe { libc::geteuid() } == 0,
        };
        let store = self.store.clone();
        let lookup = |kind: &str, object: &str| {
            store.get(&ObjectKey::new("v1", kind, ns, object)).ok().flatten().map(|s| s.object)
        };
        binds.extend(cri_volumes::prepare(obj, dir, &policy, &lookup)?);
        let hosts = dir.join(sandbox::HOSTS_FILE);
        self.write_hosts(ns, &hosts).map_err(|m| ("CreateContainerConfigError", m))?;
        binds.push(Bind { host: hosts, container: "/etc/hosts".into(), readonly: true });
        Ok(binds)
    }

    /// The credentials `imagePullSecrets` hold for `image`'s registry, and
    /// what went wrong reading them (kubelet warns and pulls without).
    fn pull_auth(&self, ns: &str, obj: &Value, image: &str) -> (Option<cri::Auth>, Vec<String>) {
        use base64::Engine;
        let names: Vec<String> = obj
            .pointer("/spec/imagePullSecrets")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(|s| s.get("name").and_then(Value::as_str)).map(str::to_string).collect())
            .unwrap_or_default();
        let mut trouble = Vec::new();
        for name in names {
            let key = ObjectKey::new("v1", "Secret", ns, &name);
            let secret = match self.store.get(&key) {
                Ok(Some(s)) => s.object,
                Ok(None) => {
                    trouble.push(format!(
                        "Unable to retrieve some image pull secrets ({name}); attempting to pull the image may not succeed."
                    ));
                    continue;
                }
                Err(e) => {
                    trouble.push(format!("reading image pull secret {ns}/{name}: {e}"));
                    continue;
                }
            };
            let field = match str_at(&secret, "/type") {
                Some("kubernetes.io/dockercfg") => ".dockercfg",
                _ => ".dockerconfigjson",
            };
            let raw = secret.get("data").and_then(|d| d.get(field)).and_then(Value::as_str).unwrap_or_default();
            let config = base64::engine::general_purpose::STANDARD
                .decode(raw.trim())
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
            let Some(config) = config else {
                trouble.push(format!(
                    "image pull secret {ns}/{name}: data[{field:?}] is not base64 of a docker config (JSON)"
                ));
                continue;
            };
            if let Some(auth) = cri::auth_for(&config, image) {
                return (Some(auth), trouble);
            }
        }
        (None, trouble)
    }

    /// Starts a bound pod as a container (in the background: a pull may be long).
    pub(crate) fn cri_start(&mut self, info: &PodInfo, obj: &Value, node: &str) {
        let (spec, dir) = match self.cri_spec(info, obj, node, true) {
            Ok(s) => s,
            Err((reason, message)) => return self.fail_unstarted(info, obj, node, reason, message),
        };
        let Some(rt) = self.cri.as_ref() else {
            return self.fail_unstarted(info, obj, node, "RuntimeNotReady", "no CRI runtime is connected".into());
        };
        // A pod of this name ran here before (a restart is a new pod of the
        // same name): its log becomes the previous run's, and its CRI copy
        // goes, or the new container's copy would repeat the old lines.
        let (cri_log, log) = log_paths(&spec, &dir);
        let _ = std::fs::remove_file(cri_log);
        crate::runtime::log_file::keep_previous(&log);
        spawn_start(rt, info.key.clone(), info.uid.clone(), spec.clone(), dir, self.cfg.pod_limits.log_max);
        self.track(info, obj, node, None, PodState::Running { pgid: None });
        if let Some(e) = self.pods.get_mut(&info.key) {
            e.cri = Some(CriPod { ids: None, stop_asked: None, pull_failures: 0, spec: Box::new(spec) });
        }
    }

    /// A container of this pod that a previous agent started: watched again
    /// when running, its end reported when it ended meanwhile.
    pub(crate) fn cri_adopt(&mut self, info: &PodInfo, obj: &Value, node: &str) -> bool {
        let Some(rt) = self.cri.as_mut() else { return false };
        let Some(found) = rt.found.remove(&info.uid).filter(|f| f.node == node) else { return false };
        let (spec, dir) = match self.cri_spec(info, obj, node, false) {
            Ok(s) => s,
            Err(_) => return false,
        };
        let Some(rt) = self.cri.as_ref() else { return false };
        tracing::info!(pod = %info.key, container = %found.ids.container, running = found.running, "adopted the container a previous agent started");
        let started = pod::start_time(obj).filter(|_| info.is_running());
        let (client, tx, relist) = (rt.client.clone(), rt.news_tx.clone(), rt.relist.clone());
        let (key, uid, ids, log_max) =
            (info.key.clone(), info.uid.clone(), found.ids.clone(), self.cfg.pod_limits.log_max);
        let task_spec = spec.clone();
        tokio::spawn(async move {
            watch_to_end((client, relist), tx, (key, uid), ids, &task_spec, &dir, log_max, true).await;
        });
        self.track(info, obj, node, started.or_else(|| Some(time::now())), PodState::Running { pgid: None });
        if started.is_none() && found.running {
            // Its Running write was lost with the agent.
            self.report_started(&info.key, &info.uid, &found.ids);
        }
        if let Some(e) = self.pods.get_mut(&info.key) {
            e.cri = Some(CriPod { ids: Some(found.ids), stop_asked: None, pull_failures: 0, spec: Box::new(spec) });
        }
        if info.deleting {
            // Stopped as a deletion asks, now that it is tracked.
            self.reconcile(info, obj, false);
        }
        true
    }

    fn report_started(&mut self, key: &ObjectKey, uid: &str, ids: &Ids) {
        let Some(e) = self.pods.get(key).filter(|e| e.uid == uid) else { return };
        let (now, address) = (time::now(), self.address_of(&e.node));
        let Ok(dir) = sandbox::sandbox_dir(&self.cfg.data_dir, &e.node, &key.namespace, &key.name) else { return };
        let annotations = vec![(pod::LOG_PATH, dir.join(sandbox::LOG_FILE).to_string_lossy().into_owned())];
        let mut patch = status::running(&e.container, &address, now, &annotations);
        if !ids.pod_ip.is_empty() {
            patch["status"]["podIP"] = serde_json::json!(ids.pod_ip);
            patch["status"]["podIPs"] = serde_json::json!([{"ip": ids.pod_ip}]);
        }
        let patch = status::with_runtime_ids(patch, SCHEME, &ids.container, &ids.image_ref);
        self.write_pod(key, uid, patch);
    }

    /// News from a container task.
    pub(crate) fn on_cri_news(&mut self, news: News) {
        match news {
            News::Started { key, uid, ids } => self.on_cri_started(&key, &uid, ids),
            News::Failed { key, uid, failure } => self.on_cri_failed(&key, &uid, failure),
            News::Exited { key, uid, exit, at } => self.on_cri_exited(&key, &uid, exit, at),
        }
    }

    fn on_cri_started(&mut self, key: &ObjectKey, uid: &str, ids: Ids) {
        let cri = self.cri.as_ref();
        let Some(e) = self.pods.get_mut(key).filter(|e| e.uid == uid) else {
            // Deleted while it started: nothing may run for it.
            if let Some(rt) = cri {
                let mut client = rt.client.clone();
                tokio::spawn(async move {
                    cri::stop(&mut client, &ids, Duration::ZERO).await;
                    cri::remove_sandbox(&mut client, &ids.sandbox).await;
                });
            }
            return;
        };
        let Some(c) = e.cri.as_mut() else { return };
        c.ids = Some(ids.clone());
        c.pull_failures = 0;
        if let Some(grace) = c.stop_asked.take() {
            stop(cri, e.cri.as_mut(), grace);
            e.state = PodState::Terminating { pgid: None };
            return;
        }
        e.started = Some(time::now());
        tracing::debug!(pod = %key, container = %ids.container, "container started");
        // kubelet's Events of a start, which `kubectl describe pod` and
        // `kubectl events` show.
        // The runtime runs a pod's first container.
        if let Some((name, _)) = e.container.containers.first() {
            let (node, now, name) = (e.node.clone(), time::now(), name.clone());
            for reason in ["Created", "Started"] {
                let message = format!("{reason} container {name}");
                let event = node::pod_event(key, uid, &node, now, ("Normal", reason), &message);
                self.write(Write::Event(event));
            }
        }
        self.report_started(key, uid, &ids);
    }

    fn on_cri_failed(&mut self, key: &ObjectKey, uid: &str, failure: Failure) {
        let Some(node) = self.pods.get(key).filter(|e| e.uid == uid).map(|e| e.node.clone()) else { return };
        let address = self.address_of(&node);
        let Some(e) = self.pods.get_mut(key) else { return };
        let container = e.container.clone();
        let now = time::now();
        tracing::warn!(pod = %key, reason = failure.reason, message = %failure.message, "container did not start");
        let event = node::pod_event(key, uid, &node, now, ("Warning", "Failed"), &failure.message);
        if !failure.retry
            || matches!(e.state, PodState::Terminating { .. })
            || e.cri.as_ref().is_some_and(|c| c.stop_asked.is_some())
        {
            let deleting = e.cri.as_ref().is_some_and(|c| c.stop_asked.is_some());
            if deleting {
                e.state = PodState::Finished { delete_sent: true };
                self.delete_pod(key, uid);
                return;
            }
            let exit = Exit::agent(128, failure.reason, failure.message);
            let patch = status::terminated(&container, &address, None, now, &exit);
            e.state = PodState::Finished { delete_sent: false };
            self.write_pod(key, uid, patch);
            self.write(Write::Event(event));
            return;
        }
        let failures = e.cri.as_mut().map_or(1, |c| {
            c.pull_failures += 1;
            c.pull_failures
        });
        self.write_pod(key, uid, status::waiting(&container, &address, now, failure.reason, &failure.message));
        self.write(Write::Event(event));
        let back_off = BACK_OFF_FIRST.saturating_mul(1 << (failures - 1).min(5)).min(BACK_OFF_MAX);
        self.add_timer(Duration::from_secs(1), TimerAction::CriBackOff { key: key.clone(), uid: uid.to_string() });
        self.add_timer(back_off, TimerAction::CriRetry { key: key.clone(), uid: uid.to_string() });
    }

    fn on_cri_exited(&mut self, key: &ObjectKey, uid: &str, exit: Exit, at: Option<f64>) {
        let Some(e) = self.pods.get_mut(key).filter(|e| e.uid == uid) else { return };
        let ids = e.cri.as_ref().and_then(|c| c.ids.clone());
        match e.state {
            PodState::Running { .. } => {
                let at = at.unwrap_or_else(time::now);
                let patch = status::terminated(&e.container, "", e.started, at, &exit);
                let patch = match &ids {
                    Some(ids) => status::with_runtime_ids(patch, SCHEME, &ids.container, &ids.image_ref),
                    None => patch,
                };
                e.state = PodState::Finished { delete_sent: false };
                tracing::debug!(pod = %key, code = exit.code, "container ended");
                self.write_pod(key, uid, patch);
            }
            PodState::Terminating { .. } => {
                e.state = PodState::Finished { delete_sent: true };
                let node = e.node.clone();
                self.delete_pod(key, uid);
                // Its devices are free: pods bound to them start now.
                self.start_waiting(&node);
            }
            _ => {}
        }
    }

    /// A pod whose pull failed shows it is backing off.
    pub(crate) fn cri_back_off(&mut self, key: &ObjectKey, uid: &str) {
        let Some(e) = self.pods.get(key).filter(|e| e.uid == uid) else { return };
        let Some(c) = e.cri.as_ref().filter(|c| c.ids.is_none() && c.pull_failures > 0) else { return };
        if !matches!(e.state, PodState::Running { .. }) {
            return;
        }
        let message = format!("Back-off pulling image {:?}", c.spec.image);
        let patch = status::waiting(&e.container, &self.address_of(&e.node), time::now(), "ImagePullBackOff", &message);
        let event = node::pod_event(key, uid, &e.node, time::now(), ("Normal", "BackOff"), &message);
        self.write_pod(key, uid, patch);
        self.write(Write::Event(event));
    }

    /// A pod whose pull failed tries again.
    pub(crate) fn cri_retry(&mut self, key: &ObjectKey, uid: &str) {
        let Some(e) = self.pods.get(key).filter(|e| e.uid == uid) else { return };
        let Some(c) = e.cri.as_ref().filter(|c| c.ids.is_none() && c.stop_asked.is_none()) else { return };
        if !matches!(e.state, PodState::Running { .. }) {
            return;
        }
        let Some(rt) = self.cri.as_ref() else { return };
        let dir = match sandbox::sandbox_dir(&self.cfg.data_dir, &e.node, &key.namespace, &key.name) {
            Ok(d) => d,
            Err(_) => return,
        };
        spawn_start(rt, key.clone(), uid.to_string(), (*c.spec).clone(), dir, self.cfg.pod_limits.log_max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pods_device_nodes_are_its_chips_and_their_managers() {
        let dev = tempfile::tempdir().unwrap();
        for n in ["davinci0", "davinci1", "davinci2", "davinci_manager", "devmm_svm"] {
            std::fs::write(dev.path().join(n), "").unwrap();
        }
        let d = |n: &str| (dev.path().join(n).to_string_lossy().into_owned(), format!("/dev/{n}"));
        assert_eq!(
            device_nodes(&[1, 2], dev.path()),
            vec![d("davinci1"), d("davinci2"), d("davinci_manager"), d("devmm_svm")]
        );
        assert!(device_nodes(&[7], dev.path()).is_empty(), "a virtual node's chips have no device files");
    }
}
