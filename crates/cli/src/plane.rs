//! The embedded control plane — store, API server, controller manager and
//! a node agent serving the cluster file's nodes as virtual nodes — as
//! `up`, `demo` and `bench e2e` start it: its flags ([`UpArgs`]), [`start`]
//! and the running [`Plane`].

mod backups;
mod pod_tokens;

use crate::support::server_file;
use anyhow::{bail, Context, Result};
pub use backups::StoreFlags;
use clap::Args;
use ringleader_agent::{loopback_address, AgentConfig, VirtualNode};
use ringleader_api::Resource;
use ringleader_client::kubeconfig::{self, Kubeconfig};
use ringleader_client::{Client, TlsFiles, Token};
use ringleader_manager::ManagerConfig;
use ringleader_observability::Metrics;
use ringleader_scheduler::conf::SchedulerConf;
use ringleader_server::{Health, ServerState};
use ringleader_store::Store;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Name of the manager component (task, health check).
const MANAGER: &str = "manager";
/// A manager loop that has not woken for this long is wedged: it wakes at
/// least every resync (half a second) and a pass over a large cluster takes
/// seconds, not tens of them.
const MANAGER_STALE_AFTER: Duration = Duration::from_secs(30);

/// The cluster `up` starts without `--cluster`.
pub const DEMO_CLUSTER: &str = include_str!("../../../examples/demo/cluster.yaml");

#[derive(Args, Clone)]
pub struct UpArgs {
    /// Cluster file: `ringleader.io/v1alpha1 Node`s (served as virtual nodes)
    /// plus Queues and PriorityClasses. Default: the bundled demo cluster.
    #[arg(long)]
    pub cluster: Option<PathBuf>,
    /// Data directory (store, token, sandboxes and logs).
    #[arg(long, env = "RINGLEADER_DATA_DIR", default_value = "ringleader-data")]
    pub data_dir: PathBuf,
    /// Address the API listens on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8470")]
    pub listen: String,
    #[command(flatten)]
    pub pods: crate::runtime_flags::RuntimeFlags,
    /// Seconds without a heartbeat before a node is NotReady.
    #[arg(long, default_value_t = 40.0)]
    pub heartbeat_timeout: f64,
    /// Seconds a node may stay NotReady before its pods are failed
    /// (`NodeLost`) and their jobs' policies move them (Kubernetes' not-ready
    /// toleration).
    #[arg(long, default_value_t = 300.0)]
    pub node_lost_toleration: f64,
    /// Seconds between heartbeats.
    #[arg(long, default_value_t = 10.0)]
    pub heartbeat_interval: f64,
    #[command(flatten)]
    pub pod_limits: crate::isolation::PodLimitArgs,
    /// Serve plain HTTP instead of HTTPS (loopback addresses only: the
    /// bearer token must not cross a network in clear).
    #[arg(long)]
    pub insecure_plain_http: bool,
    /// Extra names or IPs the server certificate covers (repeatable), beyond
    /// localhost, 127.0.0.1, ::1 and the address listened on.
    #[arg(long = "tls-san", value_name = "NAME")]
    pub tls_san: Vec<String>,
    /// Run the control plane alone: nodes come from `ringleader agent`s on
    /// other hosts (the cluster file's Nodes are not served here).
    #[arg(long)]
    pub no_agent: bool,
    /// Scheduler configuration (Volcano's `volcano-scheduler.conf` format:
    /// actions and plugin tiers, as `plan --scheduler-conf` takes). Default:
    /// the built-in one without DRF, so jobs of equal priority in one queue
    /// go in the order they came.
    #[arg(long = "scheduler-conf", value_name = "FILE")]
    pub scheduler_conf: Option<PathBuf>,
    /// Hot reset (MindCluster's `-hotReset`): once no pod holds a chip of an
    /// unhealthy chip's HCCS ring, reset the whole ring, taking this many
    /// seconds; the chips are healthy again afterwards. Default: off.
    #[arg(long = "hot-reset-secs", value_name = "SECONDS")]
    pub hot_reset_secs: Option<u64>,
    /// Env conventions the controller injects (AI Hub variant, NCCL auto-settings).
    #[command(flatten)]
    pub env: crate::env_flags::EnvFlags,
    /// The embedded history's sampling.
    #[command(flatten)]
    pub history: HistoryFlags,
    /// `--reinit` and periodic backups.
    #[command(flatten)]
    pub store: StoreFlags,
    /// Request read timeouts and connection caps.
    #[command(flatten)]
    pub conn: ConnFlags,
}

impl UpArgs {
    /// The flags' defaults on `data_dir`, listening on a free loopback port:
    /// what `demo`, `bench` and tests start from (and then change).
    pub fn defaults(data_dir: &Path) -> Result<UpArgs> {
        #[derive(clap::Parser)]
        struct Up {
            #[command(flatten)]
            args: UpArgs,
        }
        let dir = data_dir.to_string_lossy();
        let parsed = <Up as clap::Parser>::try_parse_from(["up", "--data-dir", &dir, "--listen", "127.0.0.1:0"])?;
        Ok(parsed.args)
    }
}

/// How long a client may take to send a request and how many connections it
/// may hold (watches and `logs -f` answers are not timed).
#[derive(Args, Clone, Debug)]
pub struct ConnFlags {
    /// Seconds a connection may take to send a request's head (and a TLS
    /// handshake) before it is closed.
    #[arg(long = "request-header-timeout", value_name = "SECONDS", default_value_t = 30.0)]
    pub header_timeout: f64,
    /// Seconds a request's body may take to arrive (408 after).
    #[arg(long = "request-body-timeout", value_name = "SECONDS", default_value_t = 60.0)]
    pub body_timeout: f64,
    /// Open connections one client address may hold; more are closed at once.
    #[arg(long = "max-connections-per-client", value_name = "N", default_value_t = 256)]
    pub per_client: usize,
    /// Open connections in all.
    #[arg(long = "max-connections", value_name = "N", default_value_t = 8192)]
    pub total: usize,
}

impl Default for ConnFlags {
    fn default() -> Self {
        let c = ringleader_server::conn_limits::ConnLimits::default();
        ConnFlags {
            header_timeout: c.header_timeout.as_secs_f64(),
            body_timeout: c.body_timeout.as_secs_f64(),
            per_client: c.per_client,
            total: c.total,
        }
    }
}

impl ConnFlags {
    /// The limits, or an error naming the flag out of range.
    fn limits(&self) -> Result<ringleader_server::conn_limits::ConnLimits> {
        let secs = |flag: &str, v: f64| {
            if v.is_finite() && (0.1..=86_400.0).contains(&v) {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(anyhow::anyhow!("--{flag} {v}: must be seconds from 0.1 to 86400"))
            }
        };
        for (flag, n) in [("max-connections-per-client", self.per_client), ("max-connections", self.total)] {
            anyhow::ensure!(n > 0, "--{flag} 0: must be at least 1");
        }
        Ok(ringleader_server::conn_limits::ConnLimits {
            header_timeout: secs("request-header-timeout", self.header_timeout)?,
            body_timeout: secs("request-body-timeout", self.body_timeout)?,
            per_client: self.per_client,
            total: self.total,
        })
    }
}

/// How the embedded history (charts, `ringleader top`) samples and how much it keeps.
#[derive(Args, Clone, Debug)]
pub struct HistoryFlags {
    /// Seconds between samples of the embedded history (1 to 60); it keeps
    /// 360 samples per series and 24 h of one-minute means.
    #[arg(long = "history-interval", value_name = "SECONDS", default_value_t = 10)]
    pub history_interval: u32,
    /// Most series the history keeps (each at most ~14 KiB); past it the
    /// series written longest ago make room.
    #[arg(long = "history-series", value_name = "N", default_value_t = 4000)]
    pub history_series: usize,
}

impl Default for HistoryFlags {
    fn default() -> Self {
        let c = ringleader_observability::history::Config::default();
        HistoryFlags { history_interval: c.interval_secs, history_series: c.max_series }
    }
}

impl HistoryFlags {
    /// The server's history configuration, or what is wrong with the flags.
    pub fn config(&self) -> Result<ringleader_observability::history::Config> {
        ringleader_observability::history::Config::new(self.history_interval, self.history_series)
            .map_err(|e| anyhow::anyhow!("--history-interval/--history-series: {e}"))
    }
}

/// The scheduler configuration `up` runs with: the file's, checked before
/// anything starts, or the manager's default.
pub fn scheduler_conf(path: Option<&Path>) -> Result<SchedulerConf> {
    let Some(path) = path else { return Ok(ManagerConfig::default().scheduler) };
    let text = std::fs::read_to_string(path).with_context(|| format!("--scheduler-conf {}", path.display()))?;
    SchedulerConf::from_yaml(&text).map_err(|e| anyhow::anyhow!("--scheduler-conf {}: {e}", path.display()))
}

/// A running control plane.
pub struct Plane {
    /// API base URL (`https://…` unless `--insecure-plain-http`).
    pub url: String,
    /// Bearer token.
    pub token: String,
    /// PEM of the CA that signed the server's certificate (`None`: plain HTTP).
    pub ca_pem: Option<String>,
    /// The kubeconfig written for this plane.
    pub kubeconfig: PathBuf,
    /// Nodes served.
    pub nodes: Vec<VirtualNode>,
    shutdown: tokio::sync::watch::Sender<bool>,
    /// Each component's task, by name.
    tasks: Vec<(&'static str, JoinHandle<Result<()>>)>,
    /// What `/livez` and `/readyz` report; a component that ends is marked.
    health: Health,
}

impl Plane {
    /// An API client of this plane, trusting its CA.
    pub fn client(&self) -> Result<Client> {
        match &self.ca_pem {
            Some(pem) => Ok(Client::with_ca(&self.url, &self.token, pem.as_bytes())?),
            None => Ok(Client::new(&self.url, &self.token)),
        }
    }

    /// Stops every component and waits for them.
    pub async fn stop(self) -> Result<()> {
        let _ = self.shutdown.send(true);
        for (name, t) in self.tasks {
            t.await.with_context(|| format!("the {name} task panicked"))??;
        }
        Ok(())
    }

    /// Waits until a component ends on its own (none should before
    /// [`Plane::stop`]); takes it out of the plane, marks it stopped for
    /// the health checks and returns its name and why it ended.
    pub async fn first_death(&mut self) -> (&'static str, String) {
        if self.tasks.is_empty() {
            return std::future::pending().await;
        }
        let (result, i, _) = futures_util::future::select_all(self.tasks.iter_mut().map(|(_, t)| t)).await;
        let (name, _) = self.tasks.remove(i);
        let why = match result {
            Ok(Ok(())) => "it ended on its own".to_string(),
            Ok(Err(e)) => format!("{e:#}"),
            Err(e) if e.is_panic() => {
                let payload = e.into_panic();
                let text = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                format!("it panicked: {text}")
            }
            Err(e) => format!("its task failed: {e}"),
        };
        self.health.component_stopped(name, &why);
        (name, why)
    }
}

/// Virtual nodes and other objects of a cluster file.
pub fn cluster(text: &str, source: &str) -> Result<(Vec<VirtualNode>, Vec<serde_json::Value>)> {
    let docs = ringleader_api::document::parse_str(source, text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut nodes = Vec::new();
    let mut others = Vec::new();
    for doc in docs {
        let resource = Resource::from_value(&doc.value).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        match resource {
            Resource::Node(n) => {
                let name = n.metadata.name.clone().unwrap_or_default();
                let Some(profile) = n.spec.profile.clone() else {
                    bail!(
                        "{source}: Node/{name}: spec.profile: required for a virtual node (see `ringleader profiles`)"
                    );
                };
                let address = n.spec.address.clone().unwrap_or_else(|| loopback_address(nodes.len() as u32 + 1));
                let mut v = VirtualNode::new(&name, &profile, &address).with_network(n.spec.network.clone());
                for (k, val) in n.metadata.labels.clone().unwrap_or_default() {
                    v = v.with_label(&k, &val);
                }
                nodes.push(v);
            }
            Resource::Queue(_) | Resource::PriorityClass(_) => others.push(doc.value.clone()),
            other => bail!(
                "{source}: {} {}: only Nodes, Queues and PriorityClasses belong in a cluster file",
                other.kind(),
                other.name()
            ),
        }
    }
    Ok((nodes, others))
}

/// Starts store, API server, manager and agent in the current runtime.
pub async fn start(args: &UpArgs) -> Result<Plane> {
    let (text, source) = match &args.cluster {
        Some(p) => (std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?, p.display().to_string()),
        None => (DEMO_CLUSTER.to_string(), "bundled demo cluster".to_string()),
    };
    start_with(args, &text, &source).await
}

/// [`start`] with the cluster file's text given (`args.cluster` is ignored).
pub async fn start_with(args: &UpArgs, text: &str, source: &str) -> Result<Plane> {
    let (mut nodes, others) = cluster(text, source)?;
    let scheduler = scheduler_conf(args.scheduler_conf.as_deref())?;
    let history = args.history.config()?;
    let mut controller = ManagerConfig::default().controller;
    args.env.apply(&mut controller.env)?;
    if args.no_agent {
        nodes.clear();
    } else if nodes.is_empty() {
        bail!("{source}: no Node in the cluster file");
    }
    let listener =
        tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("listening on {}", args.listen))?;
    let bound = listener.local_addr()?;
    check_plain_http(bound, args.insecure_plain_http)?;
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("{}", args.data_dir.display()))?;
    controller.ssh_seed = Some(crate::ssh_seed::load_or_create(&args.data_dir)?);
    if args.store.reinit {
        if let Some(aside) = ringleader_store::set_aside(&args.data_dir, "reinit").context("--reinit")? {
            eprintln!("ringleader up: --reinit: starting empty; the old store is kept as {}", aside.display());
        }
    }
    let store = Store::open(&args.data_dir).context("opening the store")?;
    for o in others {
        store.apply(o).context("storing the cluster file's objects")?;
    }
    let token = Token::load_or_create(&args.data_dir).context("token")?;
    let metrics = Metrics::with_history(history);
    let tls = if args.insecure_plain_http {
        None
    } else {
        let names = ringleader_client::tls::server_names(bound, listen_host(&args.listen), &args.tls_san);
        let files = TlsFiles::load_or_create(&args.data_dir, &names).context("TLS certificates")?;
        let config = files.server_config().context("TLS certificates")?;
        Some((files.ca_pem, Arc::new(config)))
    };
    let url = format!("{}://{}", if tls.is_some() { "https" } else { "http" }, dial_address(bound));
    let kubeconfig = kubeconfig::path(&args.data_dir);
    Kubeconfig::single(&url, tls.as_ref().map(|(ca, _)| ca.as_str()), token.as_str())
        .write(&kubeconfig)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("writing the kubeconfig{}", disk_hint(&args.data_dir)))?;
    // Last: the CLI and tests wait for this file, so everything it points at is in place.
    write_if_changed(&server_file(&args.data_dir), url.as_bytes())
        .with_context(|| format!("writing the server address{}", disk_hint(&args.data_dir)))?;

    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut tasks: Vec<(&'static str, JoinHandle<Result<()>>)> = Vec::new();
    let heartbeat_timeout = Duration::from_secs_f64(args.heartbeat_timeout.max(0.1));
    let health = Health::new().with_agents(heartbeat_timeout);
    let manager_health = health.component(MANAGER, MANAGER_STALE_AFTER);
    let runtime = args.pods.resolve().await?;
    let signer = ringleader_auth::sa_token::Signer::load_or_create(&args.data_dir)
        .map(Arc::new)
        .map_err(|e| anyhow::anyhow!("the service account signing key: {e}{}", disk_hint(&args.data_dir)))?;
    let mut state = ServerState::new(store.clone(), token.clone(), metrics.clone())
        .with_data_dir(&args.data_dir)
        .with_health(health.clone())
        .with_conn_limits(args.conn.limits()?)
        .with_service_account_signer(signer.clone());
    if runtime == ringleader_agent::Runtime::Cri && !args.no_agent {
        // `kubectl exec` into the embedded agent's containers.
        state = state.with_cri_endpoint(args.pods.cri_endpoint.clone());
    }
    let mut srx = rx.clone();
    let ca_pem = tls.as_ref().map(|(ca, _)| ca.clone());
    let server = tokio::spawn(async move {
        let stop = async move {
            let _ = srx.wait_for(|s| *s).await;
        };
        loud(
            match tls {
                Some((_, config)) => ringleader_server::serve_tls(listener, state, config, stop).await,
                None => ringleader_server::serve(listener, state, stop).await,
            }
            .context("API server"),
        )
    });
    tasks.push(("API server", server));
    let (observe, sessions) = (metrics.clone(), metrics.clone());
    let mconfig = ManagerConfig {
        heartbeat_timeout,
        node_lost_toleration: seconds(args.node_lost_toleration, 300.0),
        observe_latency: Some(Arc::new(move |s| observe.observe_scheduling_latency(s))),
        observe_schedule: Some(Arc::new(move |p: &ringleader_manager::schedule::Pass, took: Duration| {
            sessions.observe_schedule(p.bound, p.unschedulable, p.evicted, took.as_secs_f64())
        })),
        heartbeat: Some(Arc::new(move || manager_health.beat())),
        scheduler,
        controller,
        hot_reset_secs: args.hot_reset_secs,
        ..ManagerConfig::default()
    };
    if args.store.backup_interval > 0 {
        let dir = args.store.backup_dir.clone().unwrap_or_else(|| args.data_dir.join("backups"));
        let every = Duration::from_secs(args.store.backup_interval);
        let task = backups::run_periodic(store.clone(), dir, args.store.backup_keep, every, rx.clone());
        tasks.push(("backup", tokio::spawn(task)));
    }
    let (mstore, mrx) = (store.clone(), rx.clone());
    let manager =
        tokio::spawn(async move { loud(ringleader_manager::run(mstore, mconfig, mrx).await.context(MANAGER)) });
    tasks.push((MANAGER, manager));
    let mut aconfig = AgentConfig::new(&args.data_dir, nodes.clone())
        .with_runtime(runtime)
        .with_heartbeat_interval(Duration::from_secs_f64(args.heartbeat_interval.max(0.05)));
    args.pods.apply(runtime, &mut aconfig);
    // Pods run `ringleader probe …`: this binary's directory goes first on their PATH.
    if let Some(dir) = std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf)) {
        aconfig.program_dir = Some(dir);
    }
    if args.no_agent {
        return Ok(Plane {
            url,
            token: token.as_str().to_string(),
            ca_pem,
            kubeconfig,
            nodes,
            shutdown: tx,
            tasks,
            health,
        });
    }
    // Pods reach the API as their ServiceAccounts at the address the kubeconfig names.
    let api = dial_address(bound);
    aconfig.api_access = Some(ringleader_agent::service_account::ApiAccess {
        host: api.ip().to_string(),
        port: api.port(),
        ca_pem: ca_pem.clone().unwrap_or_default(),
        tokens: Arc::new(pod_tokens::PodTokens { signer, store: store.clone() }),
    });
    crate::isolation::configure(&mut aconfig, crate::isolation::Host::OneProcess, &[]);
    args.pod_limits.apply(&mut aconfig)?;
    let astore = store.clone();
    tasks.push((
        "agent",
        tokio::spawn(async move { loud(ringleader_agent::run(astore, aconfig, rx).await.context("agent")) }),
    ));
    Ok(Plane { url, token: token.as_str().to_string(), ca_pem, kubeconfig, nodes, shutdown: tx, tasks, health })
}

/// Refuses plain HTTP on an address other machines can reach: every
/// request carries the bearer token.
pub fn check_plain_http(bound: SocketAddr, plain: bool) -> Result<()> {
    if plain && !bound.ip().is_loopback() {
        bail!(
            "refusing to serve plain HTTP on {bound}: it is not a loopback address and the bearer token would cross the network in clear; drop --insecure-plain-http to serve HTTPS, or listen on 127.0.0.1"
        );
    }
    Ok(())
}

/// The host part of a `--listen` value (`host:port`, `[v6]:port`).
fn listen_host(listen: &str) -> Option<&str> {
    listen.rsplit_once(':').map(|(host, _)| host)
}

/// The address local clients dial: a wildcard bind is reached on loopback
/// (which the certificate covers), anything else as bound.
fn dial_address(bound: SocketAddr) -> SocketAddr {
    match bound.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), bound.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), bound.port()),
        _ => bound,
    }
}

/// A component that stops on its own says why at once, not at shutdown.
fn loud(r: Result<()>) -> Result<()> {
    if let Err(e) = &r {
        eprintln!("ringleader up: {e:#}");
    }
    r
}

/// A duration flag in seconds: negative is 0, NaN is `default`, and it is
/// capped at about 30 years (`Duration::from_secs_f64` panics beyond).
fn seconds(value: f64, default: f64) -> Duration {
    let v = if value.is_nan() { default } else { value };
    Duration::from_secs_f64(v.clamp(0.0, 1e9))
}

/// What to do when the data directory's disk is full (an empty string when
/// it is not): the store's objects are intact, `up` only lacks room for
/// its own small files.
fn disk_hint(data_dir: &Path) -> String {
    let probe = data_dir.join(format!(".space-check.{}", std::process::id()));
    let full = std::fs::write(&probe, [0u8; 1]).is_err_and(|e| e.kind() == std::io::ErrorKind::StorageFull);
    let _ = std::fs::remove_file(&probe);
    if full {
        format!(" (the disk of {} is full: free space there and start again; the store is intact)", data_dir.display())
    } else {
        String::new()
    }
}

/// Writes `path` through a temporary file and a rename (never half-written),
/// and not at all when it already holds `contents`: a restart on a full
/// disk needs no room for what it has.
fn write_if_changed(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == contents) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let written = std::fs::write(&tmp, contents).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::server_file;

    fn args(dir: &Path, listen: &str, plain: bool) -> UpArgs {
        let mut a = UpArgs::defaults(dir).expect("the flags' defaults parse");
        a.listen = listen.into();
        a.pods.name = "simulated".into();
        a.insecure_plain_http = plain;
        a
    }

    #[test]
    fn history_flags_are_checked_naming_the_flag() {
        let flags = HistoryFlags { history_interval: 0, ..HistoryFlags::default() };
        let e = flags.config().err().map(|e| format!("{e:#}")).unwrap_or_default();
        assert!(e.contains("--history-interval") && e.contains("0 s") && e.contains("1 to 60"), "{e}");
        assert_eq!(HistoryFlags::default().config().ok(), Some(ringleader_observability::history::Config::default()));
    }

    #[test]
    fn a_scheduler_conf_is_read_or_refused_naming_file_and_field() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let file = dir.path().join("sched.yaml");
        std::fs::write(&file, "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: drf\n")?;
        let conf = scheduler_conf(Some(&file))?;
        assert!(conf.enabled("drf") && !conf.runs("preempt"));
        assert!(!scheduler_conf(None)?.enabled("drf"), "the default keeps DRF off");
        std::fs::write(&file, "actions: allocate\ntiers:\n- plugins:\n  - name: fairness\n")?;
        let text = format!("{:#}", scheduler_conf(Some(&file)).err().context("a bad plugin was accepted")?);
        assert!(text.contains("sched.yaml") && text.contains("tiers[0].plugins[0].name"), "{text}");
        let missing = dir.path().join("absent.yaml");
        let text = format!("{:#}", scheduler_conf(Some(&missing)).err().context("a missing file was accepted")?);
        assert!(text.contains("absent.yaml"), "{text}");
        Ok(())
    }

    #[tokio::test]
    async fn plain_http_off_loopback_is_refused_naming_the_address_and_flag() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let Err(e) = start_with(&args(dir.path(), "0.0.0.0:0", true), DEMO_CLUSTER, "test").await else {
            bail!("plain HTTP on 0.0.0.0 was served");
        };
        let text = format!("{e:#}");
        assert!(text.contains("--insecure-plain-http") && text.contains("0.0.0.0:"), "{text}");
        // Nothing was written for a plane that never started.
        assert!(!server_file(dir.path()).exists());
        assert!(check_plain_http("127.0.0.1:8470".parse()?, true).is_ok());
        assert!(check_plain_http("[::1]:8470".parse()?, true).is_ok());
        assert!(check_plain_http("10.0.0.1:8470".parse()?, false).is_ok());
        Ok(())
    }

    #[test]
    fn duration_flags_never_panic() {
        assert_eq!(seconds(2.5, 300.0), Duration::from_millis(2500));
        assert_eq!(seconds(-1.0, 300.0), Duration::ZERO);
        assert_eq!(seconds(f64::NAN, 300.0), Duration::from_secs(300));
        assert_eq!(seconds(f64::INFINITY, 300.0), Duration::from_secs(1_000_000_000));
    }

    #[test]
    fn wildcard_binds_are_dialled_on_loopback() -> Result<()> {
        assert_eq!(dial_address("0.0.0.0:1".parse()?), "127.0.0.1:1".parse()?);
        assert_eq!(dial_address("[::]:1".parse()?), "[::1]:1".parse()?);
        assert_eq!(dial_address("10.0.0.1:1".parse()?), "10.0.0.1:1".parse()?);
        assert_eq!(listen_host("[::1]:8470"), Some("[::1]"));
        assert_eq!(listen_host("gpu-box:8470"), Some("gpu-box"));
        Ok(())
    }
}
