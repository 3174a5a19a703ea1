//! The CRI runtime as the agent holds it: the connection, the news its
//! container tasks send back, the containers a previous agent left, and
//! what the agent knows of each pod's container; the calls that stop and
//! remove one in the background.

use crate::runtime::cri::{self, Failure, Ids, PodSpec};
use crate::runtime::cri_relist::Relist;
use crate::status::Exit;
use ringleader_cri::Cri;
use ringleader_store::ObjectKey;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How often the containers are listed for their ends (kubelet's relist period).
const RELIST: Duration = Duration::from_secs(1);
/// How often the containers' CPU and memory are asked for (`kubectl top`).
const STATS: Duration = Duration::from_secs(5);

/// Starts at once: four per CPU.
fn concurrent_starts() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_mul(4).max(4)
}

/// The runtime and what its tasks report.
pub(crate) struct CriRuntime {
    pub(crate) client: Cri,
    pub(crate) news_tx: mpsc::UnboundedSender<News>,
    pub(crate) news_rx: mpsc::UnboundedReceiver<News>,
    /// Containers a previous agent left, by pod UID (taken as pods are adopted).
    pub(crate) found: HashMap<String, cri::Found>,
    /// Images this agent pulled for its pods (the only ones its image
    /// garbage collection removes), kept in a file of its data dir.
    pub(crate) pulled: Pulled,
    /// When each image was last seen in use; held by a collection pass
    /// (a pass still running when the next is due is not doubled).
    pub(crate) last_used: Arc<tokio::sync::Mutex<HashMap<String, f64>>>,
    /// The relist its container tasks learn their containers' ends from.
    pub(crate) relist: Relist,
    /// The containers' latest CPU and memory, by pod UID.
    pub(crate) stats: crate::runtime::cri_stats::Stats,
    /// Starts (pull, sandbox, container) in flight at once: a thousand
    /// asked of the runtime together thrash it (each is a shim and two
    /// runc processes) and all finish later than in turns.
    pub(crate) starts: Arc<tokio::sync::Semaphore>,
}

/// The images an agent pulled, shared with its start tasks.
#[derive(Clone, Default)]
pub(crate) struct Pulled {
    images: Arc<std::sync::Mutex<HashSet<String>>>,
    file: Option<Arc<PathBuf>>,
}

impl Pulled {
    /// Read from `file` (one image reference a line), written back there as it grows.
    pub(crate) fn load(file: PathBuf) -> Pulled {
        let images = std::fs::read_to_string(&file).unwrap_or_default().lines().map(str::to_string).collect();
        Pulled { images: Arc::new(std::sync::Mutex::new(images)), file: Some(Arc::new(file)) }
    }

    pub(crate) fn add(&self, image: &str) {
        let Ok(mut set) = self.images.lock() else { return };
        if set.insert(image.to_string()) {
            if let Some(file) = &self.file {
                let mut text: Vec<&str> = set.iter().map(String::as_str).collect();
                text.sort_unstable();
                if let Err(e) = crate::sandbox::write_file(file, (text.join("\n") + "\n").as_bytes()) {
                    tracing::warn!(file = %file.display(), error = %e, "recording a pulled image failed");
                }
            }
        }
    }

    pub(crate) fn snapshot(&self) -> HashSet<String> {
        self.images.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl CriRuntime {
    /// Connected to `client`, with the containers found there before any
    /// pod is looked at.
    pub(crate) fn new(client: Cri, found: Vec<cri::Found>) -> CriRuntime {
        let (news_tx, news_rx) = mpsc::unbounded_channel();
        let mut by_uid = HashMap::new();
        for f in found {
            // Newest first: the latest container of a pod wins.
            by_uid.entry(f.uid.clone()).or_insert(f);
        }
        CriRuntime {
            relist: Relist::spawn(client.clone(), RELIST),
            stats: crate::runtime::cri_stats::Stats::spawn(client.clone(), STATS),
            starts: Arc::new(tokio::sync::Semaphore::new(concurrent_starts())),
            client,
            news_tx,
            news_rx,
            found: by_uid,
            pulled: Pulled::default(),
            last_used: Arc::new(tokio::sync::Mutex::new(HashMap::new())),
        }
    }
}

/// A pod's container, as far as it has got.
pub(crate) struct CriPod {
    /// `None` while its image is pulled and its container made.
    pub(crate) ids: Option<Ids>,
    /// Deleted before it started: stop it as soon as it does, with this grace.
    pub(crate) stop_asked: Option<Duration>,
    /// Failed pulls in a row (for the back-off).
    pub(crate) pull_failures: u32,
    /// What it was started from (kept for a retry after a failed pull).
    pub(crate) spec: Box<PodSpec>,
}

/// What a container task reports.
pub(crate) enum News {
    Started { key: ObjectKey, uid: String, ids: Ids },
    Failed { key: ObjectKey, uid: String, failure: Failure },
    Exited { key: ObjectKey, uid: String, exit: Exit, at: Option<f64> },
}

/// The next news of the runtime's tasks; never, without a runtime.
pub(crate) async fn next_news(cri: &mut Option<CriRuntime>) -> Option<News> {
    match cri {
        Some(c) => c.news_rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Stops a pod's container at once (its node was stopped, or the control
/// plane ended it). False when it has none yet.
pub(crate) fn kill(cri: Option<&CriRuntime>, pod: Option<&CriPod>) -> bool {
    let (Some(rt), Some(ids)) = (cri, pod.and_then(|c| c.ids.clone())) else { return false };
    let mut client = rt.client.clone();
    tokio::spawn(async move { cri::stop(&mut client, &ids, Duration::ZERO).await });
    true
}

/// Asks a deleted pod's container to stop within `grace`; false when it
/// has not started yet (it is then stopped as soon as it does).
pub(crate) fn stop(cri: Option<&CriRuntime>, pod: Option<&mut CriPod>, grace: Duration) -> bool {
    let Some(c) = pod else { return false };
    let Some(ids) = c.ids.clone() else {
        c.stop_asked = Some(grace);
        return false;
    };
    let Some(rt) = cri else { return false };
    let mut client = rt.client.clone();
    tokio::spawn(async move { cri::stop(&mut client, &ids, grace).await });
    true
}

/// Removes a deleted pod's sandbox (and with it its containers).
pub(crate) fn remove(cri: Option<&CriRuntime>, pod: Option<&CriPod>) {
    let (Some(rt), Some(ids)) = (cri, pod.and_then(|c| c.ids.clone())) else { return };
    let mut client = rt.client.clone();
    tokio::spawn(async move {
        cri::stop(&mut client, &ids, Duration::ZERO).await;
        cri::remove_sandbox(&mut client, &ids.sandbox).await;
    });
}

/// Connects to the CRI runtime at `endpoint` and lists what a previous
/// agent left there.
pub(crate) async fn connect(endpoint: &str, data_dir: &std::path::Path) -> Result<CriRuntime, String> {
    let (mut client, version) = Cri::connect(endpoint, Duration::from_secs(5)).await.map_err(|e| e.to_string())?;
    tracing::info!(endpoint, runtime = %version.runtime_name, version = %version.runtime_version, "pods run as containers (CRI)");
    let found = cri::list_ours(&mut client).await?;
    let mut rt = CriRuntime::new(client, found);
    rt.pulled = Pulled::load(data_dir.join(PULLED_FILE));
    Ok(rt)
}

/// File of the data dir listing the images the agent pulled.
const PULLED_FILE: &str = "cri-pulled-images";

/// Starts one image garbage collection pass in the background, unless the
/// last one still runs.
pub(crate) fn collect_images(rt: Option<&CriRuntime>, thresholds: (u8, u8)) {
    let Some(rt) = rt else { return };
    let (mut client, pulled, last_used) = (rt.client.clone(), rt.pulled.clone(), rt.last_used.clone());
    tokio::spawn(async move {
        let Ok(mut last_used) = last_used.try_lock() else { return };
        let now = ringleader_api::time::now();
        match crate::runtime::image_gc::pass(&mut client, &pulled.snapshot(), &mut last_used, thresholds, now).await {
            Ok(removed) if !removed.is_empty() => {
                tracing::info!(images = ?removed, "image garbage collection: the image filesystem was past its high threshold")
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "image garbage collection pass failed"),
        }
    });
}

/// Stops and removes the sandboxes of this agent's nodes whose pods are
/// gone (no live pod has their UID), as kubelet's garbage collection does.
/// Other agents' sandboxes (other nodes on one runtime) are theirs.
pub(crate) async fn remove_orphans(
    rt: &mut CriRuntime,
    nodes: &std::collections::HashSet<&str>,
    live: &std::collections::HashSet<String>,
) {
    let Ok(sandboxes) = cri::sandboxes_ours(&mut rt.client).await else { return };
    for (id, uid, node) in sandboxes {
        if nodes.contains(node.as_str()) && !live.contains(&uid) {
            tracing::info!(sandbox = %id, uid, "removing the sandbox of a pod that is gone");
            cri::remove_sandbox(&mut rt.client, &id).await;
            rt.found.remove(&uid);
        }
    }
}
