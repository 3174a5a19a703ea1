//! `ringleader agent`: the node agent as a process of its own, on any host.
//! It reaches the API server only through its kubeconfig (HTTPS, a node
//! token), registers its nodes, heartbeats, runs the pods bound to them and
//! serves their logs over HTTPS for the API server to proxy. A broken
//! connection is retried; when the server has forgotten the version the
//! agent followed from, the agent starts over (its pods run on under their
//! shims and are adopted, as after an agent restart).

mod remote_tokens;

use anyhow::{bail, Context, Result};
use clap::Args;
use ringleader_agent::detect::Detected;
use ringleader_agent::{loopback_address, AgentConfig, AgentError, Cluster, VirtualNode};
use ringleader_api::kinds::cluster::AgentEndpoint;
use ringleader_client::RemoteCluster;
use ringleader_client::{Client, TlsFiles};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Args, Clone)]
pub struct AgentArgs {
    /// kubeconfig of the API server: its current context's server, CA and
    /// token (an agent token: `ringleader token create --user system:node:NAME --group system:nodes`).
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: PathBuf,
    /// A node this agent serves (repeat for several virtual nodes on one machine).
    #[arg(long = "node", value_name = "NAME", required = true)]
    pub nodes: Vec<String>,
    /// Built-in hardware profile of the node(s) (`ringleader profiles`).
    #[arg(long, required_unless_present = "detect", conflicts_with = "detect")]
    pub profile: Option<String>,
    /// Discover the hardware: NVIDIA through NVML and `nvidia-smi topo -m`,
    /// Ascend through `npu-smi info`.
    #[arg(long)]
    pub detect: bool,
    /// Address pods of the node get (`podIP`, `hostIP`, rank tables): one,
    /// or one per `--node`. Default: with one node, the address this host
    /// reaches the API server from; with several, 127.0.1.N (this host only).
    #[arg(long = "address", value_name = "ADDR")]
    pub addresses: Vec<String>,
    /// Node label KEY=VALUE (repeatable), e.g. `gpu-model=h100` for jobs that select it.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Data directory: sandboxes, logs and the agent's TLS certificate.
    #[arg(long, env = "RINGLEADER_AGENT_DATA_DIR", default_value = "ringleader-agent-data")]
    pub data_dir: PathBuf,
    /// Where the agent serves pod logs to the API server (port 0: any free port).
    #[arg(long, default_value = "0.0.0.0:10250")]
    pub listen: String,
    #[command(flatten)]
    pub pods: crate::runtime_flags::RuntimeFlags,
    /// Seconds between heartbeats.
    #[arg(long, default_value_t = 10.0)]
    pub heartbeat_interval: f64,
    /// Run pods as plain host processes where namespaces are not available
    /// (no root): they can then read the agent's files and each other's.
    #[arg(long)]
    pub unsafe_process_runtime: bool,
    #[command(flatten)]
    pub pod_limits: crate::isolation::PodLimitArgs,
    /// Which API the kubeconfig names: `ringleader` (`ringleader up`'s),
    /// `kubernetes` (a kube-apiserver: the agent registers core v1 Nodes and
    /// runs the pods bound to them, in the manner of a virtual kubelet), or
    /// `auto` (asked of the server: does it serve `ringleader.io/v1alpha1`?).
    #[arg(long, default_value = "auto", value_parser = ["auto", "ringleader", "kubernetes"])]
    pub api: String,
    /// Kubernetes mode: the pods to run are those with this `spec.schedulerName`.
    #[arg(long, default_value = "ringleader")]
    pub scheduler_name: String,
    /// CA whose client certificates are the API server reading logs (the
    /// cluster's CA: kube-apiserver's `--kubelet-client-certificate` is
    /// signed by it). Without it only bearer tokens are accepted.
    #[arg(long, value_name = "FILE")]
    pub client_ca: Option<PathBuf>,
}

/// Whether the kubeconfig's server is a kube-apiserver (`--api`).
async fn is_kubernetes(args: &AgentArgs, kube: &ringleader_kube::kube::Client) -> Result<bool> {
    match args.api.as_str() {
        "kubernetes" => Ok(true),
        "ringleader" => Ok(false),
        _ => Ok(ringleader_kube::setup::is_kubernetes(kube).await?),
    }
}

/// The address this host sends from to reach `server_url`'s host (a UDP
/// connect sends nothing; it only asks the routing table).
fn route_address(server_url: &str) -> Result<IpAddr> {
    let rest = server_url.split_once("://").map_or(server_url, |(_, r)| r);
    let host_port = rest.split('/').next().unwrap_or_default();
    let target: SocketAddr = host_port
        .to_socket_addrs()
        .with_context(|| format!("resolving the API server address {host_port:?}"))?
        .next()
        .with_context(|| format!("the API server address {host_port:?} resolves to nothing"))?;
    let bind: SocketAddr = if target.is_ipv4() { "0.0.0.0:0".parse()? } else { "[::]:0".parse()? };
    let socket = UdpSocket::bind(bind)?;
    socket.connect(target).with_context(|| format!("no route to the API server at {target}"))?;
    Ok(socket.local_addr()?.ip())
}

fn labels(args: &AgentArgs) -> Result<Vec<(String, String)>> {
    args.labels
        .iter()
        .map(|l| match l.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => bail!("--label {l:?}: expected KEY=VALUE"),
        })
        .collect()
}

/// The nodes to serve, from the flags (and what discovery found, with `--detect`).
pub fn nodes(args: &AgentArgs, route: IpAddr) -> Result<(Vec<VirtualNode>, Option<Detected>)> {
    let n = args.nodes.len();
    let addresses: Vec<String> = match args.addresses.len() {
        0 if n == 1 => vec![route.to_string()],
        0 => (1..=n as u32).map(loopback_address).collect(),
        1 if n == 1 => args.addresses.clone(),
        k if k == n => args.addresses.clone(),
        k => bail!("--address given {k} times for {n} nodes: give one per --node, or none"),
    };
    let detected = match (&args.profile, args.detect) {
        (Some(_), false) => None,
        (None, true) => Some(crate::detect::discover()?),
        _ => bail!("give exactly one of --profile or --detect"),
    };
    let labels = labels(args)?;
    let nodes = args
        .nodes
        .iter()
        .zip(addresses)
        .map(|(name, address)| {
            let mut v = VirtualNode::new(name, args.profile.as_deref().unwrap_or_default(), &address);
            for (k, val) in &labels {
                v = v.with_label(k, val);
            }
            match &detected {
                Some(d) => d.apply(v),
                None => v,
            }
        })
        .collect();
    Ok((nodes, detected))
}

fn tls_names(advertise: IpAddr, nodes: &[VirtualNode]) -> Vec<String> {
    let mut names = vec![advertise.to_string(), "localhost".to_string(), "127.0.0.1".to_string()];
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        names.push(host.trim().to_string());
    }
    names.extend(nodes.iter().map(|n| n.address.clone()));
    names.sort();
    names.dedup();
    names.retain(|n| !n.is_empty());
    names
}

/// How long the agent waits before starting over after its watch expired.
const RESTART_AFTER: Duration = Duration::from_secs(1);

pub fn run(args: AgentArgs) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(serve(args))
}

async fn serve(args: AgentArgs) -> Result<()> {
    let client = Client::from_kubeconfig(&args.kubeconfig)?;
    let route = route_address(client.base())?;
    let (nodes, detected) = nodes(&args, route)?;
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("{}", args.data_dir.display()))?;
    let data_dir = std::path::absolute(&args.data_dir)?;

    // The log endpoint: its own CA and certificate in the data dir.
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("--listen {}: cannot listen", args.listen))?;
    let bound = listener.local_addr()?;
    let advertise = if bound.ip().is_unspecified() { route } else { bound.ip() };
    let tls = TlsFiles::load_or_create(&data_dir, &tls_names(advertise, &nodes)).context("agent TLS certificate")?;
    let config = Arc::new(
        match &args.client_ca {
            Some(ca) => ringleader_server::kubelet::client_ca_tls(&tls, ca),
            None => tls.server_config(),
        }
        .context("agent TLS certificate")?,
    );
    let url = format!("https://{}", SocketAddr::new(advertise, bound.port()));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let runtime = args.pods.resolve().await?;
    // Its containers stream (`kubectl exec`, `attach`, `port-forward`) through this endpoint.
    let streams_from = (runtime == ringleader_agent::Runtime::Cri).then(|| args.pods.cri_endpoint.clone());
    let router = ringleader_server::kubelet::router_with_cri(
        client.clone(),
        data_dir.clone(),
        nodes.iter().map(|n| n.name.clone()).collect(),
        stop_rx.clone(),
        streams_from,
    );
    let mut endpoint_stop = stop_rx.clone();
    let endpoint = tokio::spawn(ringleader_server::kubelet::serve_tls(listener, router, config, async move {
        let _ = endpoint_stop.wait_for(|s| *s).await;
    }));

    let mut config = AgentConfig::new(&data_dir, nodes.clone())
        .with_runtime(runtime)
        .with_heartbeat_interval(Duration::from_secs_f64(args.heartbeat_interval.clamp(0.05, 3600.0)));
    args.pods.apply(runtime, &mut config);
    config.endpoint = Some(AgentEndpoint { url: url.clone(), ca_pem: tls.ca_pem.clone() });
    if let Some(d) = detected {
        config.device_telemetry = crate::detect::follow_telemetry(&d, config.heartbeat_interval)?;
        config.detected_faults = Some(crate::detect::follow_health(d, nodes.iter().map(|n| n.name.clone()).collect())?);
    }
    args.pod_limits.apply(&mut config)?;
    crate::isolation::configure(
        &mut config,
        crate::isolation::Host::Standalone { unsafe_runtime: args.unsafe_process_runtime },
        std::slice::from_ref(&args.kubeconfig),
    );
    if let Some(dir) = std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf)) {
        config.program_dir = Some(dir);
    }
    println!("ringleader agent: API at {}, logs served at {url}", client.base());
    for n in &nodes {
        println!("  node {:<12} {:<16} {}", n.name, hardware_name(n), n.address);
    }
    let kube = ringleader_kube::setup::client(&args.kubeconfig).await?;
    let cluster: Arc<dyn Cluster> = if is_kubernetes(&args, &kube).await? {
        println!(
            "  Kubernetes API: registering core v1 Nodes, running pods with schedulerName {}",
            args.scheduler_name
        );
        Arc::new(ringleader_kube::KubeCluster::new(kube, tokio::runtime::Handle::current(), &args.scheduler_name))
    } else {
        // Its pods get their ServiceAccount tokens as a kubelet's do (not on
        // Kubernetes: there the kubelet, not this agent, mounts them).
        let ca = ringleader_client::kubeconfig::load(&args.kubeconfig).ok().and_then(|c| c.ca_pem);
        config.api_access = remote_tokens::access(&client, ca.as_deref(), tokio::runtime::Handle::current());
        Arc::new(RemoteCluster::new(client, tokio::runtime::Handle::current()))
    };
    let result = tokio::select! {
        r = keep_running(cluster, config, stop_rx.clone()) => r,
        s = crate::support::stop_signal() => s,
    };
    let _ = stop_tx.send(true);
    // The agent's own loop stopped with the watch channel above; the endpoint follows.
    let _ = tokio::time::timeout(Duration::from_secs(5), endpoint).await;
    result
}

fn hardware_name(n: &VirtualNode) -> &str {
    if !n.profile.is_empty() {
        &n.profile
    } else if n.topology_text.is_some() {
        "nvidia-smi topo"
    } else {
        "npu-smi info"
    }
}

/// Runs the agent, starting it over when its watch of the API ends.
async fn keep_running(
    cluster: Arc<dyn Cluster>,
    config: AgentConfig,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    loop {
        match ringleader_agent::run_shared(cluster.clone(), config.clone(), stop.clone()).await {
            Ok(()) => return Ok(()),
            Err(AgentError::WatchClosed(what)) => {
                tracing::warn!(watch = what, "the API server no longer has the version followed; starting over");
            }
            Err(e @ AgentError::Config(_)) => return Err(e.into()),
            Err(e) => tracing::warn!(error = %e, "agent stopped; starting over"),
        }
        tokio::time::sleep(RESTART_AFTER).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        agent: AgentArgs,
    }

    fn args(flags: &[&str]) -> AgentArgs {
        let mut argv = vec!["agent", "--kubeconfig", "k"];
        argv.extend(flags);
        Cli::parse_from(argv).agent
    }

    #[test]
    fn one_node_gets_the_route_address_several_get_loopback_ones() -> Result<()> {
        let route: IpAddr = "10.1.2.3".parse()?;
        let (one, _) = nodes(&args(&["--node", "a", "--profile", "hgx-h100-8"]), route)?;
        assert_eq!(one[0].address, "10.1.2.3");
        let (two, _) = nodes(&args(&["--node", "a", "--node", "b", "--profile", "hgx-h100-8"]), route)?;
        assert_eq!([two[0].address.as_str(), two[1].address.as_str()], ["127.0.1.1", "127.0.1.2"]);
        let (given, _) = nodes(
            &args(&[
                "--node",
                "a",
                "--node",
                "b",
                "--profile",
                "pcie-4090-8",
                "--address",
                "10.0.0.5",
                "--address",
                "10.0.0.6",
            ]),
            route,
        )?;
        assert_eq!(given[1].address, "10.0.0.6");
        assert_eq!(given[1].profile, "pcie-4090-8");
        let e = nodes(&args(&["--node", "a", "--node", "b", "--profile", "x", "--address", "10.0.0.5"]), route);
        assert!(e.is_err_and(|e| e.to_string().contains("1 times for 2 nodes")));
        Ok(())
    }

    #[test]
    fn labels_are_key_value_pairs() -> Result<()> {
        let (n, _) = nodes(
            &args(&["--node", "a", "--profile", "hgx-h100-8", "--label", "gpu-model=h100", "--label", "empty="]),
            "10.0.0.1".parse()?,
        )?;
        assert_eq!(n[0].labels.get("gpu-model").map(String::as_str), Some("h100"));
        assert_eq!(n[0].labels.get("empty").map(String::as_str), Some(""));
        for bad in ["novalue", "=v"] {
            let e = nodes(&args(&["--node", "a", "--profile", "hgx-h100-8", "--label", bad]), "10.0.0.1".parse()?);
            assert!(e.is_err_and(|e| e.to_string().contains(bad)), "{bad}");
        }
        Ok(())
    }

    #[test]
    fn the_route_to_a_loopback_server_is_loopback() -> Result<()> {
        assert!(route_address("https://127.0.0.1:8470")?.is_loopback());
        assert!(route_address("https://127.0.0.1").is_err_and(|e| e.to_string().contains("127.0.0.1")), "no port");
        Ok(())
    }
}
