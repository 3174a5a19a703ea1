//! `ringleader manager --kubeconfig FILE`: the scheduler and the job
//! controller against a Kubernetes API server (Kubernetes mode). It
//! installs the job CRDs the cluster lacks, elects one active replica
//! through a `coordination.k8s.io/v1` Lease, and runs the same manager loop
//! as `ringleader up`, its reads and writes carried by kube-rs
//! (`ringleader_kube::KubeCluster`). A replica that loses the Lease stops
//! writing at once and exits, as kube-scheduler does; another one takes over
//! from what the API holds. Its figures (scheduling, queues, job starts,
//! the election) are served on `--metrics-bind-address`, fed from the
//! manager's own list and watch: a scrape never reaches the API server.

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use ringleader_auth::delegated::Delegated;
use ringleader_client::TlsFiles;
use ringleader_kube::{KubeCluster, LeaderElector, LeaseConfig};
use ringleader_manager::{ManagerConfig, Observed};
use ringleader_observability::Metrics;
use ringleader_server::metrics_endpoint as endpoint;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Default of `--metrics-bind-address`: loopback, on the port where
/// kube-scheduler served plain-HTTP metrics before 1.23 (its HTTPS port
/// 10259 stays free for a kube-scheduler on the same host).
const METRICS_BIND_ADDRESS: &str = "127.0.0.1:10251";

#[derive(Args, Clone)]
pub struct ManagerArgs {
    /// kubeconfig of the Kubernetes API server (its current context).
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: PathBuf,
    /// Pods whose `spec.schedulerName` is this are ringleader's to bind;
    /// the pods it creates for jobs get it.
    #[arg(long, default_value = "ringleader")]
    pub scheduler_name: String,
    /// Namespace and name of the leader-election Lease.
    #[arg(long, default_value = "kube-system")]
    pub lease_namespace: String,
    #[arg(long, default_value = "ringleader-manager")]
    pub lease_name: String,
    /// This replica's identity in the Lease (default: host name and process id).
    #[arg(long)]
    pub identity: Option<String>,
    /// Seconds a silent leader keeps the Lease before another replica takes it.
    #[arg(long, default_value_t = 15)]
    pub lease_duration: u64,
    /// Do not create the job CRDs and the agents' ClusterRole the cluster lacks.
    #[arg(long)]
    pub no_install_crds: bool,
    /// Scheduler configuration file (Volcano's `volcano-scheduler.conf` shape).
    #[arg(long)]
    pub scheduler_conf: Option<PathBuf>,
    /// Writes of one batch (a gang's pods, their bindings) in flight at once.
    #[arg(long, default_value_t = ringleader_kube::cluster::PARALLEL_WRITES)]
    pub write_parallelism: usize,
    /// Seconds without a node heartbeat before the node is NotReady.
    #[arg(long, default_value_t = 40)]
    pub heartbeat_timeout: u64,
    /// Where to serve `GET /metrics` (plain HTTP with no authentication unless --metrics-secure):
    /// IP:PORT, :PORT (every interface), or 0 or empty to serve none.
    #[arg(long, default_value = METRICS_BIND_ADDRESS)]
    pub metrics_bind_address: String,
    /// Serve `/metrics` over HTTPS instead, each scrape authorized by the
    /// API server for the caller's bearer token (`get` on the non-resource
    /// URL /metrics, which kube's ClusterRole system:monitoring grants), as
    /// kube-scheduler's secure port does.
    #[arg(long)]
    pub metrics_secure: bool,
    /// With --metrics-secure: the directory of the endpoint's CA and
    /// certificate (made there at first start, reused after). Default: a
    /// fresh directory under the system's temporary directory.
    #[arg(long, requires = "metrics_secure")]
    pub metrics_cert_dir: Option<PathBuf>,
}

/// How long a stop signal waits for the pass in progress before the
/// process ends without it: kube-apiserver holds every write made so far,
/// and the next leader starts over from what it holds (as after a crash).
const STOP_GRACE: Duration = Duration::from_millis(1000);

/// What gives this replica's Lease up when a stop abandons the pass.
static RELEASER: std::sync::OnceLock<Arc<LeaderElector>> = std::sync::OnceLock::new();

pub fn run(args: ManagerArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = rt.block_on(serve(args));
    // Dropping the runtime would wait for every blocking call in flight.
    rt.shutdown_timeout(Duration::from_millis(200));
    result
}

/// Turns `stop` true on SIGTERM or Ctrl-C, from a task of its own: the
/// manager's pass runs blocking calls, during which the task that awaits
/// the manager is not polled. A pass that does not end within
/// [`STOP_GRACE`] is abandoned with the process.
fn stop_on_signal(stop: Arc<tokio::sync::watch::Sender<bool>>) {
    tokio::spawn(async move {
        if let Err(e) = crate::support::stop_signal().await {
            tracing::error!("{e:#}: the manager stops only when killed");
            return;
        }
        tracing::info!("stop signal received: stopping the manager");
        let _ = stop.send(true);
        tokio::time::sleep(STOP_GRACE).await;
        // Abandoned mid-pass: give the Lease up on the way out all the same
        // (the process ends a moment later, long before a successor has
        // listed anything), so the next leader need not wait it out.
        if let Some(releaser) = RELEASER.get() {
            let _ = tokio::time::timeout(Duration::from_millis(300), releaser.release()).await;
        }
        eprintln!("ringleader manager: stopped, the pass in progress abandoned");
        std::process::exit(0);
    });
}

fn identity(args: &ManagerArgs) -> String {
    args.identity.clone().unwrap_or_else(|| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        format!("{}_{}", host.trim(), std::process::id())
    })
}

async fn serve(args: ManagerArgs) -> Result<()> {
    if args.lease_duration < 2 {
        bail!("--lease-duration {}: must be at least 2 seconds", args.lease_duration);
    }
    let metrics_address =
        endpoint::parse_bind_address(&args.metrics_bind_address).map_err(|e| anyhow!("--metrics-bind-address {e}"))?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    stop_on_signal(stop_tx.clone());
    let metrics = Metrics::for_manager();
    metrics.set_leader(&args.lease_name, false);
    // Held while the manager runs: the endpoint's certificate lives in it.
    let mut _cert_dir = None;
    if let Some(address) = metrics_address {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("--metrics-bind-address {address}: cannot listen"))?;
        let bound = listener.local_addr()?;
        let mut stop = stop_rx.clone();
        let stopped = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        let serving: std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send>> =
            if args.metrics_secure {
                let dir = match &args.metrics_cert_dir {
                    Some(dir) => dir.clone(),
                    None => {
                        let made = tempfile::Builder::new().prefix("ringleader-manager-metrics-").tempdir()?;
                        let path = made.path().to_path_buf();
                        _cert_dir = Some(made);
                        path
                    }
                };
                let names = ringleader_client::tls::server_names(bound, None, &[]);
                let files = TlsFiles::load_or_create(&dir, &names).context("--metrics-cert-dir")?;
                let config = Arc::new(files.server_config().context("--metrics-cert-dir")?);
                let api = ringleader_client::Client::from_kubeconfig(&args.kubeconfig)?;
                println!(
                    "ringleader manager: serving metrics on https://{bound}/metrics (CA {})",
                    TlsFiles::ca_path(&dir).display()
                );
                Box::pin(endpoint::serve_secure(listener, metrics.clone(), config, Delegated::new(api), stopped))
            } else {
                println!("ringleader manager: serving metrics on http://{bound}/metrics");
                Box::pin(endpoint::serve(listener, metrics.clone(), stopped))
            };
        tokio::spawn(async move {
            if let Err(e) = serving.await {
                tracing::error!("metrics endpoint stopped: {e}");
            }
        });
    }
    let client = ringleader_kube::setup::client(&args.kubeconfig).await?;
    if !args.no_install_crds {
        let created =
            ringleader_kube::setup::install_crds(&client, &ringleader_server::crds::crds(), Duration::from_secs(60))
                .await?;
        for name in created {
            println!("installed CustomResourceDefinition {name}");
        }
        for name in ringleader_kube::setup::install_rbac(&client, &ringleader_kube::setup::agent_rbac()).await? {
            println!("installed {name} (node agents: group {})", ringleader_kube::setup::AGENT_GROUP);
        }
    }
    let mut lease = LeaseConfig::new(&args.lease_namespace, &args.lease_name, &identity(&args));
    lease.duration = Duration::from_secs(args.lease_duration);
    lease.retry = Duration::from_secs_f64((args.lease_duration as f64 / 5.0).clamp(0.2, 2.0));
    let elector = Arc::new(LeaderElector::new(client.clone(), lease.clone())?);
    let _ = RELEASER.set(elector.clone());
    let (leading_tx, mut leading) = tokio::sync::watch::channel(false);
    tokio::spawn({
        let (metrics, mut leading, name) = (metrics.clone(), leading.clone(), lease.name.clone());
        async move {
            loop {
                metrics.set_leader(&name, *leading.borrow_and_update());
                if leading.changed().await.is_err() {
                    metrics.set_leader(&name, false);
                    return;
                }
            }
        }
    });
    let election = tokio::spawn({
        let (stop, elector) = (stop_rx.clone(), elector.clone());
        async move { elector.run(leading_tx, stop, ringleader_api::time::now).await }
    });
    println!("ringleader manager {}: waiting to lead (Lease {}/{})", lease.identity, lease.namespace, lease.name);
    tokio::select! {
        r = leading.wait_for(|l| *l) => { r.context("leader election ended")?; }
        _ = signalled(stop_rx.clone()) => return Ok(()),
    }
    println!(
        "ringleader manager {}: leading; scheduling pods with schedulerName {}",
        lease.identity, args.scheduler_name
    );

    // Only the leader writes: a standby replica creates nothing.
    if ringleader_kube::setup::ensure_default_queue(&client).await? {
        println!("created Queue default (weight 1), as Volcano's controller does");
    }

    let (latencies, sessions, objects) = (metrics.clone(), metrics.clone(), metrics);
    let mut config = ManagerConfig {
        heartbeat_timeout: Duration::from_secs(args.heartbeat_timeout),
        scheduler: crate::plane::scheduler_conf(args.scheduler_conf.as_deref())?,
        observe_latency: Some(Arc::new(move |s| latencies.observe_scheduling_latency(s))),
        observe_schedule: Some(Arc::new(move |p: &ringleader_manager::schedule::Pass, took: Duration| {
            sessions.observe_schedule(p.bound, p.unschedulable, p.evicted, took.as_secs_f64())
        })),
        observe_objects: Some(Arc::new(move |o: Observed<'_>| match o {
            Observed::Listed(list) => objects.load_objects(list),
            Observed::Changed(event) => objects.apply_event(event),
        })),
        ..ManagerConfig::default()
    };
    // Pods reach each other by their node's address (no cluster DNS assumed).
    config.controller.env.use_addresses = true;
    let cluster = KubeCluster::new(client, tokio::runtime::Handle::current(), &args.scheduler_name)
        .with_parallel_writes(args.write_parallelism);
    let manager_stop = stop_rx.clone();
    // The elector drops its sender when it stops on our own stop signal:
    // that is a stop, not a lost Lease, so only a `false` counts here.
    let lost = async {
        if leading.wait_for(|l| !*l).await.is_err() {
            std::future::pending::<()>().await
        }
    };
    let work = async {
        loop {
            ringleader_manager::run(cluster.clone(), config.clone(), manager_stop.clone()).await.context("manager")?;
            if *manager_stop.borrow() {
                return Ok::<(), anyhow::Error>(());
            }
            // The API no longer had the version the watch followed: list again.
            tracing::warn!("watch expired; the manager starts over from a fresh list");
        }
    };
    let result = tokio::select! {
        // A stop signal wins over whatever else became ready with it.
        biased;
        _ = signalled(stop_rx.clone()) => Ok(()),
        r = work => r,
        _ = lost => Err(anyhow::anyhow!("lost the Lease {}/{}: another replica leads now", lease.namespace, lease.name)),
    };
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(3), election).await;
    // The work and the rounds have ended: give the Lease up so a successor
    // leads now, not when it expires. (A pass abandoned at STOP_GRACE never
    // gets here: `stop_on_signal` gives it up on the way out.)
    if result.is_ok() {
        match tokio::time::timeout(Duration::from_millis(500), elector.release()).await {
            Ok(Err(e)) => tracing::warn!("{e}: the Lease is left to expire"),
            Err(_) => tracing::warn!("no answer releasing the Lease: it is left to expire"),
            Ok(Ok(())) => {}
        }
    }
    result
}

async fn signalled(mut stop: tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}
