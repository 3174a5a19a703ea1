//! MindIE Service global rank table (seed 001): the controller, coordinator
//! and server AscendJobs sharing a `jobID` label merge into one table that
//! is regenerated on every change and pushed to subscribers (the
//! ms_controller subscribes and receives every version).
//!
//! Groups: `"0"` the ms_controller pod, `"1"` the ms_coordinator pod, `"2"`
//! every ms_server pod (server jobs by name, pods in each job's `hccl.json`
//! order) with its chips; `device_logical_id` is the chip's position in the
//! pod and `rank_id` its rank within its own server job.

use super::hccl::{self, HcclVersion};
use crate::expand::PodPlan;
use crate::placement::Placement;
use ringleader_api::model::Job;
use serde::Serialize;
use std::collections::BTreeMap;

/// Role of a MindIE job, from its `app` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MindieRole {
    /// `mindie-ms-controller`.
    Controller,
    /// `mindie-ms-coordinator`.
    Coordinator,
    /// `mindie-ms-server`.
    Server,
}

impl MindieRole {
    /// The role of a job, if it is a MindIE job.
    pub fn of(job: &Job) -> Option<MindieRole> {
        match job.labels.get("app").map(String::as_str) {
            Some("mindie-ms-controller") => Some(MindieRole::Controller),
            Some("mindie-ms-coordinator") => Some(MindieRole::Coordinator),
            Some("mindie-ms-server") => Some(MindieRole::Server),
            _ => None,
        }
    }
}

/// One member job with its pods and their placement.
#[derive(Debug, Clone, Copy)]
pub struct MindieMember<'a> {
    /// The job.
    pub job: &'a Job,
    /// Its pods.
    pub pods: &'a [PodPlan],
    /// Where they run (pods absent: not placed yet).
    pub placement: &'a Placement,
}

/// A chip of a server pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GlobalDevice {
    /// Physical chip ID.
    pub device_id: String,
    /// Chip RoCE address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_ip: Option<String>,
    /// Position in the pod.
    pub device_logical_id: String,
    /// Rank within its server job.
    pub rank_id: String,
}

/// One pod in the global table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GlobalServer {
    /// Node address.
    pub server_id: String,
    /// Pod address.
    pub server_ip: String,
    /// Chips (server pods only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<Vec<GlobalDevice>>,
}

/// One group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerGroup {
    /// `0` controller, `1` coordinator, `2` servers.
    pub group_id: String,
    /// Pods in the group.
    pub server_count: String,
    /// The pods.
    pub server_list: Vec<GlobalServer>,
}

/// The global rank table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GlobalTable {
    /// `1.0`.
    pub version: String,
    /// `completed` when every member pod is placed with its chips, else `initializing`.
    pub status: String,
    /// Groups 0, 1, 2.
    pub server_group_list: Vec<ServerGroup>,
}

/// Builds the global table of the members labelled `jobID: <job_id>`.
pub fn global_table(job_id: &str, members: &[MindieMember<'_>]) -> GlobalTable {
    let mut complete = true;
    let mut groups: BTreeMap<MindieRole, Vec<GlobalServer>> = BTreeMap::new();
    let mut mine: Vec<(&MindieMember<'_>, MindieRole)> = members
        .iter()
        .filter(|m| m.job.labels.get("jobID").map(String::as_str) == Some(job_id))
        .filter_map(|m| MindieRole::of(m.job).map(|r| (m, r)))
        .collect();
    mine.sort_by(|a, b| (a.1, &a.0.job.name).cmp(&(b.1, &b.0.job.name)));
    let mut seen = [false; 3];
    for (m, role) in mine {
        seen[role as usize] = true;
        let list = groups.entry(role).or_default();
        if role != MindieRole::Server {
            for pod in m.pods {
                match m.placement.pod(&pod.name) {
                    Some(p) => list.push(GlobalServer {
                        server_id: p.host_ip.clone(),
                        server_ip: p.pod_ip.clone(),
                        device: None,
                    }),
                    None => complete = false,
                }
            }
            continue;
        }
        let Some(table) = hccl::table(m.job, m.pods, m.placement, HcclVersion::V1_0) else {
            complete = false;
            continue;
        };
        for s in table.server_list {
            let device = s
                .device
                .into_iter()
                .enumerate()
                .map(|(i, d)| GlobalDevice {
                    device_id: d.device_id,
                    device_ip: d.device_ip,
                    device_logical_id: i.to_string(),
                    rank_id: d.rank_id,
                })
                .collect();
            list.push(GlobalServer { server_id: s.server_id, server_ip: s.container_ip, device: Some(device) });
        }
    }
    if seen.iter().any(|s| !s) {
        complete = false;
    }
    let server_group_list = [MindieRole::Controller, MindieRole::Coordinator, MindieRole::Server]
        .into_iter()
        .map(|r| {
            let list = groups.remove(&r).unwrap_or_default();
            ServerGroup { group_id: (r as u8).to_string(), server_count: list.len().to_string(), server_list: list }
        })
        .collect();
    GlobalTable {
        version: "1.0".to_string(),
        status: if complete { "completed" } else { "initializing" }.to_string(),
        server_group_list,
    }
}

/// One published version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// 1 for the first table, +1 per change.
    pub version: u64,
    /// The table as JSON.
    pub content: String,
}

/// Handle of one subscriber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SubscriberId(u64);

/// Holds the current global table and the versions not yet taken by each
/// subscriber, like ClusterD's subscription stream without the transport: a
/// new subscriber first receives the current version, then every change.
#[derive(Debug, Clone, Default)]
pub struct RankTableHub {
    current: Option<Published>,
    next_id: u64,
    queues: BTreeMap<SubscriberId, Vec<Published>>,
}

impl RankTableHub {
    /// Subscribes; the current table (if any) is queued at once.
    pub fn subscribe(&mut self) -> SubscriberId {
        let id = SubscriberId(self.next_id);
        self.next_id += 1;
        self.queues.insert(id, self.current.iter().cloned().collect());
        id
    }

    /// Ends a subscription.
    pub fn unsubscribe(&mut self, id: SubscriberId) {
        self.queues.remove(&id);
    }

    /// Publishes a table; returns the new version when it differs from the
    /// current one (then queued to every subscriber), `None` otherwise.
    pub fn publish(&mut self, table: &GlobalTable) -> Option<u64> {
        let content = serde_json::to_string(table).unwrap_or_default();
        if self.current.as_ref().is_some_and(|c| c.content == content) {
            return None;
        }
        let version = self.current.as_ref().map_or(1, |c| c.version + 1);
        let p = Published { version, content };
        for q in self.queues.values_mut() {
            q.push(p.clone());
        }
        self.current = Some(p);
        Some(version)
    }

    /// Takes the versions queued for a subscriber, oldest first.
    pub fn take(&mut self, id: SubscriberId) -> Vec<Published> {
        self.queues.get_mut(&id).map(std::mem::take).unwrap_or_default()
    }

    /// The current table.
    pub fn current(&self) -> Option<&Published> {
        self.current.as_ref()
    }
}
