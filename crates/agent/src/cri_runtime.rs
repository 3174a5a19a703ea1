//! The CRI runtime as the agent holds it: the connection, the news its
//! container tasks send back, the containers a previous agent left, and
//! what the agent knows of each pod's container; the calls that stop and
//! remove one in the background.

use crate::runtime::cri::{self, Failure, Ids, PodSpec};
use crate::status::Exit;
use ringleader_cri::Cri;
use ringleader_store::ObjectKey;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc;

/// The runtime and what its tasks report.
pub(crate) struct CriRuntime {
    pub(crate) client: Cri,
    pub(crate) news_tx: mpsc::UnboundedSender<News>,
    pub(crate) news_rx: mpsc::UnboundedReceiver<News>,
    /// Containers a previous agent left, by pod UID (taken as pods are adopted).
    pub(crate) found: HashMap<String, cri::Found>,
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
        CriRuntime { client, news_tx, news_rx, found: by_uid }
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
pub(crate) async fn connect(endpoint: &str) -> Result<CriRuntime, String> {
    let (mut client, version) = Cri::connect(endpoint, Duration::from_secs(5)).await.map_err(|e| e.to_string())?;
    tracing::info!(endpoint, runtime = %version.runtime_name, version = %version.runtime_version, "pods run as containers (CRI)");
    let found = cri::list_ours(&mut client).await?;
    Ok(CriRuntime::new(client, found))
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
