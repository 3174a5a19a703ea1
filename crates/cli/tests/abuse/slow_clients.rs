//! Slow clients: a thousand connections from one address that never finish
//! their TLS handshake cost at most that address's cap and are closed after
//! the header timeout, while a client at another address keeps answering
//! quickly; watches and `logs -f` streams, long on purpose, keep
//! delivering after the timeout has passed.

use crate::common::{cluster_yaml, find, Plane};
use futures_util::StreamExt;
use std::process::Command;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const HALF_OPEN: usize = 1000;
const PER_CLIENT: usize = 100;
/// The server's `--request-header-timeout` here: the half-open connections
/// live this long.
const HEADER_TIMEOUT: Duration = Duration::from_secs(8);
const POD: &str = "ticker-t-0";

fn kubectl_present() -> bool {
    Command::new("kubectl").args(["version", "--client"]).output().is_ok_and(|o| o.status.success())
}

/// Raises the soft fd limit (bounded by the hard one) so the test itself
/// can hold the connections.
fn raise_fd_limit(want: u64) {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < want {
            lim.rlim_cur = want.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn open_fds(p: &Plane) -> usize {
    let pid = p.child.as_ref().expect("up is running").id();
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// How long one `get pods` takes: stock kubectl when present (required
/// with RINGLEADER_REQUIRE_KUBECTL=1), else the project's client.
fn get_pods(p: &Plane, kubectl: bool) -> Duration {
    let started = Instant::now();
    if kubectl {
        let home = p.dir.path().join("home");
        let out = Command::new("kubectl")
            .args(["get", "pods", "--request-timeout=5s"])
            .env("KUBECONFIG", p.data_dir().join("kubeconfig"))
            .env("HOME", &home)
            .output()
            .expect("kubectl");
        assert!(out.status.success(), "kubectl get pods: {}", String::from_utf8_lossy(&out.stderr));
    } else {
        let listed = p.rt.block_on(p.client.list(find("Pod"), Some("default"), None));
        assert!(listed.is_ok(), "list pods: {:?}", listed.err());
    }
    started.elapsed()
}

#[test]
fn half_open_connections_are_capped_and_timed_out_while_others_answer() {
    let kubectl = kubectl_present();
    if !kubectl {
        assert!(
            std::env::var("RINGLEADER_REQUIRE_KUBECTL").map_or(true, |v| v != "1"),
            "RINGLEADER_REQUIRE_KUBECTL=1 but kubectl is not on PATH"
        );
        eprintln!("kubectl not found on PATH: `get pods` goes through the project's client instead");
    }
    raise_fd_limit(4 * HALF_OPEN as u64);
    let per_client = PER_CLIENT.to_string();
    let p = Plane::start(
        &cluster_yaml(44, &[("gpu-1", "hgx-h100-8")]),
        &[
            "--request-header-timeout",
            &HEADER_TIMEOUT.as_secs().to_string(),
            "--max-connections-per-client",
            &per_client,
        ],
    );
    // The long streams, opened before the flood and read after the timeout.
    p.apply(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: ticker, namespace: default}\nspec:\n  minAvailable: 1\n  schedulerName: volcano\n  queue: default\n  tasks:\n  - name: t\n    replicas: 1\n    template:\n      spec:\n        containers:\n        - name: t\n          image: x\n          command: [/bin/sh, -c, 'while true; do echo tick; sleep 0.2; done']\n          resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}\n",
    )
    .expect("job");
    p.wait_for(60, "ticker running", |p| {
        p.get("pods", POD).is_some_and(|pod| pod.pointer("/status/phase").and_then(|v| v.as_str()) == Some("Running"))
    });
    let mut watch = p.rt.block_on(p.client.watch(find("ConfigMap"), Some("default"), None)).expect("watch");
    let mut log = p.rt.block_on(p.client.logs("default", POD, true, Some(1))).expect("logs -f");
    let baseline = open_fds(&p);

    let addr: std::net::SocketAddr =
        p.client.base().trim_start_matches("https://").parse().expect("the server's address");
    let mut flood = Vec::new();
    let flood_started = Instant::now();
    p.rt.block_on(async {
        for _ in 0..HALF_OPEN {
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            socket.bind("127.0.0.2:0".parse().expect("address")).expect("bind 127.0.0.2");
            let Ok(mut tcp) = socket.connect(addr).await else { continue };
            // The first bytes of a TLS record, and nothing more.
            let _ = tcp.write_all(&[0x16, 0x03, 0x01]).await;
            flood.push(tcp);
        }
    });
    assert!(flood.len() > PER_CLIENT, "only {} connections were made", flood.len());
    std::thread::sleep(Duration::from_millis(300));
    let held = open_fds(&p);
    assert!(held < baseline + PER_CLIENT + 50, "the server holds {held} fds ({baseline} before the flood)");
    // Answered while the flood is still held (it is closed only at the
    // header timeout), however busy the machine running the test is.
    for i in 0..5 {
        let took = get_pods(&p, kubectl);
        assert!(took < HEADER_TIMEOUT / 2, "get pods #{i} took {took:?} during the flood");
    }
    assert!(flood_started.elapsed() < HEADER_TIMEOUT, "answered while the flood was held");

    // Past the header timeout the held ones are closed by the server.
    std::thread::sleep(HEADER_TIMEOUT + Duration::from_secs(1));
    let closed = p.rt.block_on(async {
        let mut closed = 0;
        for tcp in flood.iter_mut() {
            let mut buf = [0u8; 64];
            let read = tokio::time::timeout(Duration::from_millis(20), tcp.read(&mut buf)).await;
            if matches!(read, Ok(Ok(0) | Err(_))) {
                closed += 1;
            }
        }
        closed
    });
    assert_eq!(closed, flood.len(), "every half-open connection is closed");
    assert!(open_fds(&p) < baseline + 20, "fds back to about {baseline}: {}", open_fds(&p));

    // The watch and the log stream still deliver.
    p.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after-timeout}\ndata: {a: b}\n").expect("configmap");
    let seen = p.rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(event) = watch.next().await {
                let event = event.expect("watch event");
                if event.object["metadata"]["name"] == "after-timeout" {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false)
    });
    assert!(seen, "the watch opened before the timeout delivers after it");
    let ticks = p.rt.block_on(async {
        let mut text = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(Ok(chunk)) = log.next().await {
                text.push_str(&String::from_utf8_lossy(&chunk));
                if text.matches("tick").count() >= 3 {
                    break;
                }
            }
        })
        .await;
        text.matches("tick").count()
    });
    assert!(ticks >= 3, "logs -f still delivers after the timeout: {ticks} ticks");
}
