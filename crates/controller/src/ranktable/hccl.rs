//! `hccl.json` v1.0 and v1.2 (SuperPoD), as the Ascend Operator writes it:
//! every value a string; one `server_list` entry per pod with chips;
//! `rank_id = pod rank × chips per pod + position in the pod`, the pod rank
//! from annotation `hccl/rankIndex` (else the order of pods with chips);
//! `server_list` sorted by first `rank_id`; `{"status":"initializing"}`
//! until every pod has all its chips.

use crate::expand::{PodPlan, HCCL_RANK_INDEX};
use crate::placement::Placement;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ringleader_api::configmap_file;
use ringleader_api::model::Job;
use serde::Serialize;
use std::collections::BTreeMap;

/// `hccl.json` inside the pod.
pub const POD_PATH: &str = "/user/serverid/devindex/config/hccl.json";
/// Host-side directory prefix: `<prefix>/<ns>.<job>/hccl.json` plus `version`.
pub const HOST_DIR_PREFIX: &str = "/user/mindx-dl/ranktable";

/// Format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HcclVersion {
    /// Plain servers.
    V1_0,
    /// SuperPoD: `super_device_id` per device and `super_pod_list`.
    V1_2,
}

impl HcclVersion {
    /// v1.2 for SuperPoD jobs (policy `chip2-node16-sp`, an `sp-block`, or
    /// accelerator type `module-a3-16-super-pod`), v1.0 otherwise.
    pub fn for_job(job: &Job) -> HcclVersion {
        let t = &job.topology;
        let sp = t.schedule_policy.as_deref() == Some("chip2-node16-sp")
            || t.sp_block.is_some()
            || t.accelerator_type.as_deref() == Some("module-a3-16-super-pod");
        if sp {
            HcclVersion::V1_2
        } else {
            HcclVersion::V1_0
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            HcclVersion::V1_0 => "1.0",
            HcclVersion::V1_2 => "1.2",
        }
    }
}

/// One chip in `hccl.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HcclDevice {
    /// Physical chip ID.
    pub device_id: String,
    /// Chip RoCE address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_ip: Option<String>,
    /// SuperPoD-wide chip ID (v1.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub super_device_id: Option<String>,
    /// Global rank.
    pub rank_id: String,
}

/// One pod in `hccl.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HcclServer {
    /// Node address.
    pub server_id: String,
    /// Node address.
    pub host_ip: String,
    /// Pod address.
    pub container_ip: String,
    /// Its chips.
    pub device: Vec<HcclDevice>,
}

/// Member of a SuperPoD entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuperPodServer {
    /// Node address.
    pub server_id: String,
}

/// One SuperPoD (v1.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuperPod {
    /// SuperPoD ID.
    pub super_pod_id: String,
    /// Its servers, in rank order.
    pub server_list: Vec<SuperPodServer>,
}

/// A complete rank table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HcclTable {
    /// `completed`.
    pub status: String,
    /// `1.0` or `1.2`.
    pub version: String,
    /// Number of servers.
    pub server_count: String,
    /// Servers by first rank.
    pub server_list: Vec<HcclServer>,
    /// SuperPoDs (v1.2 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub super_pod_list: Option<Vec<SuperPod>>,
}

/// The rank table of a job, or `None` while some pod lacks its chips or its
/// address (a pod network's, known once the pod's sandbox runs): write
/// [`INITIALIZING`] then, as MindCluster does until every pod is up.
pub fn table(job: &Job, pods: &[PodPlan], placement: &Placement, version: HcclVersion) -> Option<HcclTable> {
    let chips_of = |p: &PodPlan| {
        job.roles.iter().find(|r| r.name == p.role).and_then(|r| r.device.as_ref()).map(|d| d.count).unwrap_or(0)
    };
    let npu_pods: Vec<&PodPlan> = pods.iter().filter(|p| chips_of(p) > 0).collect();
    let mut servers: Vec<(u64, HcclServer, Option<String>)> = Vec::new();
    for (order, pod) in npu_pods.iter().enumerate() {
        let chips = chips_of(pod);
        let placed = placement.pod(&pod.name)?;
        if (placed.devices.len() as u32) < chips || placed.pod_ip.is_empty() {
            return None;
        }
        let rank = pod.annotations().get(HCCL_RANK_INDEX).and_then(|v| v.parse::<u64>().ok()).unwrap_or(order as u64);
        let device = placed
            .devices
            .iter()
            .enumerate()
            .map(|(pos, d)| HcclDevice {
                device_id: d.id.to_string(),
                device_ip: d.device_ip.clone(),
                super_device_id: if version == HcclVersion::V1_2 { d.super_device_id.clone() } else { None },
                rank_id: (rank * chips as u64 + pos as u64).to_string(),
            })
            .collect();
        let server = HcclServer {
            server_id: placed.host_ip.clone(),
            host_ip: placed.host_ip.clone(),
            container_ip: placed.pod_ip.clone(),
            device,
        };
        servers.push((rank * chips as u64, server, placed.super_pod_id.clone()));
    }
    servers.sort_by_key(|(first, _, _)| *first);
    if version == HcclVersion::V1_2 {
        fill_super_device_ids(&mut servers);
    }
    let super_pod_list = (version == HcclVersion::V1_2).then(|| {
        let mut by_id: BTreeMap<(u64, String), Vec<SuperPodServer>> = BTreeMap::new();
        for (_, s, sp) in &servers {
            let id = sp.clone().unwrap_or_else(|| "0".to_string());
            let list = by_id.entry((id.parse().unwrap_or(u64::MAX), id)).or_default();
            if !list.iter().any(|x| x.server_id == s.server_id) {
                list.push(SuperPodServer { server_id: s.server_id.clone() });
            }
        }
        by_id.into_iter().map(|((_, id), server_list)| SuperPod { super_pod_id: id, server_list }).collect()
    });
    Some(HcclTable {
        status: "completed".to_string(),
        version: version.as_str().to_string(),
        server_count: servers.len().to_string(),
        server_list: servers.into_iter().map(|(_, s, _)| s).collect(),
        super_pod_list,
    })
}

/// Dies of one A3 SuperPoD server: the stride of derived SuperPoD-wide IDs.
pub const DIES_PER_SUPERPOD_SERVER: u64 = 16;

/// v1.2 needs a `super_device_id` on every device. A node that reports one
/// (the device plugin's SuperPoD-wide chip ID) keeps it; for a node that does
/// not (simulated nodes), the ID is the server's position in its SuperPoD's
/// `super_pod_list` entry × 16 dies + the die's `device_id`, unique within
/// the SuperPoD as HCCL requires.
fn fill_super_device_ids(servers: &mut [(u64, HcclServer, Option<String>)]) {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, server, sp) in servers.iter_mut() {
        let members = seen.entry(sp.clone().unwrap_or_else(|| "0".to_string())).or_default();
        let pos = match members.iter().position(|m| *m == server.server_id) {
            Some(p) => p,
            None => {
                members.push(server.server_id.clone());
                members.len() - 1
            }
        } as u64;
        for d in &mut server.device {
            if d.super_device_id.is_none() {
                let die = d.device_id.parse::<u64>().unwrap_or(0);
                d.super_device_id = Some((pos * DIES_PER_SUPERPOD_SERVER + die).to_string());
            }
        }
    }
}

/// Content before every pod has its chips.
pub const INITIALIZING: &str = r#"{"status":"initializing"}"#;

/// `hccl.json` content: the table, or [`INITIALIZING`].
pub fn render(table: Option<&HcclTable>) -> String {
    match table {
        Some(t) => serde_json::to_string(t).unwrap_or_else(|_| INITIALIZING.to_string()),
        None => INITIALIZING.to_string(),
    }
}

/// The `hccl.json` file each pod with chips sees at [`POD_PATH`] (the
/// ConfigMap's content; pods without chips get none), by pod name.
pub fn pod_files(job: &Job, pods: &[PodPlan], placement: &Placement) -> BTreeMap<String, (String, String)> {
    let content = render(table(job, pods, placement, HcclVersion::for_job(job)).as_ref());
    pods.iter()
        .filter(|p| {
            job.roles.iter().find(|r| r.name == p.role).and_then(|r| r.device.as_ref()).is_some_and(|d| d.count > 0)
        })
        .map(|p| (p.name.clone(), (POD_PATH.to_string(), content.clone())))
        .collect()
}

/// Host-side directory of a job's rank table: `<prefix>/<ns>.<job>`, holding
/// `hccl.json` and `version`.
pub fn host_dir(namespace: &str, job: &str) -> String {
    format!("{HOST_DIR_PREFIX}/{namespace}.{job}")
}

/// Key of `hccl.json` in the job's ConfigMap.
pub const CONFIG_MAP_KEY: &str = "hccl.json";

/// Name of the ConfigMap carrying a job's `hccl.json`.
pub fn config_map_name(job: &str) -> String {
    format!("rings-config-{job}")
}

/// ConfigMap `rings-config-<job>` with keys `hccl.json` and `version`,
/// labelled `ring-controller.atlas` (and, for MindIE servers, `jobID` and
/// `mx-consumer-cim: "true"` so the global table picks it up). A table over
/// [`configmap_file::PACK_ABOVE`] is gzip-packed in `binaryData["hccl.json.gz"]`
/// with a placeholder in `hccl.json` (see [`configmap_file`]).
pub fn config_map(job: &Job, content: &str, version: u64) -> ConfigMap {
    let mut labels = BTreeMap::new();
    let ring = job.topology.ring_controller.clone().unwrap_or_else(|| "ascend-910".to_string());
    labels.insert(ringleader_api::ascend::RING_CONTROLLER.to_string(), ring);
    if let Some(id) = job.labels.get("jobID") {
        labels.insert("jobID".to_string(), id.clone());
        labels.insert("mx-consumer-cim".to_string(), "true".to_string());
    }
    let mut data = BTreeMap::from([("version".to_string(), version.to_string())]);
    let mut binary = BTreeMap::new();
    if configmap_file::put(&mut data, &mut binary, CONFIG_MAP_KEY, content).is_err() {
        // gzip into memory does not fail; were it to, the plain table is
        // still right (and refused by name if too large).
        data.insert(CONFIG_MAP_KEY.to_string(), content.to_string());
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(&job.name)),
            namespace: Some(job.namespace.clone()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        data: Some(data),
        binary_data: (!binary.is_empty()).then_some(binary),
        ..ConfigMap::default()
    }
}

/// Keeps the last written content so a ConfigMap is rewritten only when the
/// table changes, with `version` counting the changes.
#[derive(Debug, Clone, Default)]
pub struct RankTableWriter {
    last: Option<String>,
    version: u64,
}

impl RankTableWriter {
    /// The ConfigMap to write when the table changed; `None` when it did not.
    pub fn update(&mut self, job: &Job, content: String) -> Option<ConfigMap> {
        if self.last.as_deref() == Some(content.as_str()) {
            return None;
        }
        self.version += 1;
        let cm = config_map(job, &content, self.version);
        self.last = Some(content);
        Some(cm)
    }

    /// Changes written so far.
    pub fn version(&self) -> u64 {
        self.version
    }
}
