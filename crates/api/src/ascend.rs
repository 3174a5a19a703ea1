//! MindCluster vocabulary: label and annotation keys, their allowed values,
//! and the chip counts each Ascend server type accepts (`spec/ascend.md`).

/// Label on job, pod template and rings-config ConfigMap naming the chip family.
pub const RING_CONTROLLER: &str = "ring-controller.atlas";
/// Allowed `ring-controller.atlas` values. `ascend-npu` is the Ascend 950
/// generation (Atlas 350 cards, `huawei.com/npu`): MindCluster's upgrade guide
/// has A3 jobs' `ascend-910b` changed to it along with the resource name.
pub const RING_CONTROLLER_VALUES: &[&str] = &["ascend-910", "ascend-910b", "ascend-310P", "ascend-310", "ascend-npu"];
/// acjob label naming the framework.
pub const FRAMEWORK: &str = "framework";
/// Allowed acjob frameworks.
pub const FRAMEWORKS: &[&str] = &["pytorch", "mindspore", "tensorflow"];
/// Annotation choosing the chip layout.
pub const SCHEDULE_POLICY: &str = "huawei.com/schedule_policy";
/// Allowed `huawei.com/schedule_policy` values.
pub const SCHEDULE_POLICIES: &[&str] = &[
    "chip4-node8",
    "chip4-node4",
    "chip1-node2",
    "chip8-node8",
    "chip8-node16",
    "chip2-node16",
    "chip2-node16-sp",
    "chip4-node16",
    "chip1-node8",
    "chip1-node16",
];
/// Annotation: minimum replicas to schedule with.
pub const SCHEDULE_MIN_AVAILABLE: &str = "huawei.com/schedule_minAvailable";
/// Annotation: `pod` keeps fault rescheduling at pod level.
pub const RECOVER_POLICY_PATH: &str = "huawei.com/recover_policy_path";
/// Annotation: logical SuperPoD size in chips.
pub const SP_BLOCK: &str = "sp-block";
/// Label: `soft` | `hard` SuperPoD affinity.
pub const SUPER_POD_AFFINITY: &str = "super-pod-affinity";
/// Label: ToR affinity schema.
pub const TOR_AFFINITY: &str = "tor-affinity";
/// Allowed `tor-affinity` values.
pub const TOR_AFFINITY_VALUES: &[&str] = &["large-model-schema", "normal-schema", "null"];
/// Label: batch scheduling on A3.
pub const PODGROUP_SCHED_ENABLE: &str = "podgroup-sched-enable";
/// Label: `grace` | `force` fault rescheduling.
pub const FAULT_SCHEDULING: &str = "fault-scheduling";
/// Allowed `fault-scheduling` values.
pub const FAULT_SCHEDULING_VALUES: &[&str] = &["grace", "force"];
/// Label: `on` enables elastic training.
pub const ELASTIC_SCHEDULING: &str = "elastic-scheduling";
/// Annotation: minimum replicas of an elastic job.
pub const MIN_REPLICAS: &str = "minReplicas";
/// Label: 300I `card` | `chip` strategy.
pub const NPU_310_STRATEGY: &str = "npu-310-strategy";
/// Label: Atlas 300I Duo.
pub const DUO: &str = "duo";
/// Label: `"true"` marks a distributed inference job.
pub const DISTRIBUTED: &str = "distributed";
/// Label: vNPU template level.
pub const VNPU_LEVEL: &str = "vnpu-level";
/// Label: vNPU DVPP preference.
pub const VNPU_DVPP: &str = "vnpu-dvpp";
/// Node label / selector: CPU architecture.
pub const HOST_ARCH: &str = "host-arch";
/// Allowed `host-arch` values.
pub const HOST_ARCH_VALUES: &[&str] = &["huawei-arm", "huawei-x86"];
/// Node label / selector: server type.
pub const ACCELERATOR_TYPE: &str = "accelerator-type";
/// Allowed `accelerator-type` values.
pub const ACCELERATOR_TYPES: &[&str] = &[
    "module",
    "half",
    "card",
    "module-910b-8",
    "module-910b-16",
    "module-a3-16",
    "module-a3-16-super-pod",
    "module-a3-8-super-pod",
];
/// Env var that needs `hostNetwork: true`.
pub const HCCL_IF_IP: &str = "HCCL_IF_IP";
/// Pod annotation prefix of whole-card allocations (`huawei.com/Ascend910`).
pub const POD_DEVICE_ANNOTATION_PREFIX: &str = "huawei.com/Ascend";
/// Dynamic vNPU resource.
pub const NPU_CORE: &str = "huawei.com/npu-core";
/// Whole Atlas 350 cards (Ascend 950PR); the pod annotation `huawei.com/npu: npu-0,npu-1` names them.
pub const NPU: &str = "huawei.com/npu";
/// `huawei.com/schedule_policy` values of Atlas 350 servers, with the most cards one pod may take
/// (MindCluster's `chip4nodex` and base handlers accept any count from 1 to the node size).
pub const NPU_POLICIES: &[(&str, u32)] =
    &[("chip4-node8", 8), ("chip4-node16", 16), ("chip1-node8", 8), ("chip1-node16", 16)];
/// acjob container that receives the NPUs.
pub const ACJOB_CONTAINER: &str = "ascend";
/// acjob port name.
pub const ACJOB_PORT_NAME: &str = "ascendjob-port";
/// MindIE Service role label (seed 001).
pub const MINDIE_APP: &str = "app";
/// MindIE Service roles.
pub const MINDIE_APPS: &[&str] = &["mindie-ms-controller", "mindie-ms-coordinator", "mindie-ms-server"];
/// Label tying a MindIE Service's jobs together.
pub const MINDIE_JOB_ID: &str = "jobID";
/// Largest vcjob, in pods.
pub const MAX_VCJOB_PODS: u32 = 1000;

/// Ascend server families that differ in the chip counts they accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerType {
    /// Atlas 800 training server, full (chip4-node8).
    Atlas800,
    /// Atlas 800 training server, half (chip4-node4).
    Atlas800Half,
    /// Atlas 300T training card server (chip1-node2).
    Card300T,
    /// Atlas 800T A2 / 900 A2 PoD (chip8-node8).
    A2,
    /// Atlas 200T A2 Box16 (chip8-node16).
    A2Box16,
    /// Atlas 800T A3 / A200T A3 Box8 (chip2-node16, `module-a3-16`).
    A3,
    /// Atlas 900 A3 SuperPoD (chip2-node16-sp, `module-a3-16-super-pod`, `module-a3-8-super-pod`).
    A3SuperPod,
}

impl ServerType {
    /// The server type a job targets, from its `accelerator-type` selector or
    /// its `huawei.com/schedule_policy`; an Ascend910 job without either runs
    /// on Atlas 800 (the label "may be omitted" there).
    pub fn of(
        accelerator_type: Option<&str>,
        schedule_policy: Option<&str>,
        ring_controller: Option<&str>,
    ) -> Option<ServerType> {
        let by_label = accelerator_type.and_then(|a| match a {
            "module" => Some(ServerType::Atlas800),
            "half" => Some(ServerType::Atlas800Half),
            "card" => Some(ServerType::Card300T),
            "module-910b-8" => Some(ServerType::A2),
            "module-910b-16" => Some(ServerType::A2Box16),
            "module-a3-16" => Some(ServerType::A3),
            "module-a3-16-super-pod" | "module-a3-8-super-pod" => Some(ServerType::A3SuperPod),
            _ => None,
        });
        let by_policy = schedule_policy.and_then(|p| match p {
            "chip4-node8" => Some(ServerType::Atlas800),
            "chip4-node4" => Some(ServerType::Atlas800Half),
            "chip1-node2" => Some(ServerType::Card300T),
            "chip8-node8" => Some(ServerType::A2),
            "chip8-node16" => Some(ServerType::A2Box16),
            "chip2-node16" => Some(ServerType::A3),
            "chip2-node16-sp" => Some(ServerType::A3SuperPod),
            _ => None,
        });
        by_policy.or(by_label).or(match (accelerator_type, ring_controller) {
            (None, Some("ascend-910")) => Some(ServerType::Atlas800),
            _ => None,
        })
    }

    /// Whether `count` chips per pod is allowed. `distributed`: the job has
    /// more than one NPU pod; `acjob`: the job is an AscendJob (on a SuperPoD
    /// only acjobs may use partial servers when distributed).
    ///
    /// 300T and A3 follow MindCluster's current plugin, not the seeds' older
    /// table (docs/mindcluster-differences.md): the 300T takes 1 or 2 chips per
    /// pod whether distributed or not, and the A3 takes 1 die in a single-pod
    /// job and whole cards (2n ≤ 16 dies) per pod otherwise, for every job kind.
    pub fn allows(self, count: u32, distributed: bool, acjob: bool) -> bool {
        let whole_cards = (2..=16).contains(&count) && count.is_multiple_of(2);
        match self {
            ServerType::Atlas800 => matches!(count, 1 | 2 | 4 | 8),
            ServerType::Atlas800Half => matches!(count, 1 | 2 | 4),
            ServerType::Card300T => matches!(count, 1 | 2),
            ServerType::A2 => (1..=8).contains(&count),
            ServerType::A2Box16 => (1..=8).contains(&count) || matches!(count, 10 | 12 | 14 | 16),
            ServerType::A3 => whole_cards || (count == 1 && !distributed),
            ServerType::A3SuperPod if distributed && !acjob => count == 16,
            ServerType::A3SuperPod => whole_cards || (count == 1 && !distributed),
        }
    }

    /// The allowed counts, for error messages.
    pub fn allowed_text(self, distributed: bool, acjob: bool) -> &'static str {
        match self {
            ServerType::Atlas800 => "1, 2, 4 or 8 (Atlas 800 training server)",
            ServerType::Atlas800Half => "1, 2 or 4 (Atlas 800 half)",
            ServerType::Card300T => "1 or 2 (300T card server)",
            ServerType::A2 => "1 to 8 (Atlas 800T A2 / 900 A2 PoD)",
            ServerType::A2Box16 => "1 to 8, 10, 12, 14 or 16 (Atlas 200T A2 Box16)",
            ServerType::A3 if distributed => {
                "2, 4, ..., 16 per pod (A3: whole cards of 2 dies; 1 die only in a single-pod job)"
            }
            ServerType::A3 => "1, or 2, 4, ..., 16 (A3: one die, or whole cards of 2 dies)",
            ServerType::A3SuperPod if distributed && !acjob => {
                "16 per pod for distributed vcjob/Deployment on an A3 SuperPoD"
            }
            ServerType::A3SuperPod if distributed => {
                "2, 4, ..., 16 per pod (A3 SuperPoD: whole cards of 2 dies; 1 die only in a single-pod job)"
            }
            ServerType::A3SuperPod => "1, or 2, 4, ..., 16 (A3 SuperPoD: one die, or whole cards of 2 dies)",
        }
    }
}

/// Resource-name family of a `ring-controller.atlas` value.
pub fn ring_controller_resource(value: &str) -> Option<&'static str> {
    match value {
        "ascend-910" | "ascend-910b" => Some("huawei.com/Ascend910"),
        "ascend-310P" => Some("huawei.com/Ascend310P"),
        "ascend-310" => Some("huawei.com/Ascend310"),
        "ascend-npu" => Some(NPU),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chip_counts_follow_the_server_table() {
        let allowed = |t: ServerType, d, a| (1..=17).filter(|&c| t.allows(c, d, a)).collect::<Vec<_>>();
        assert_eq!(allowed(ServerType::Atlas800, true, true), vec![1, 2, 4, 8]);
        assert_eq!(allowed(ServerType::Atlas800Half, false, true), vec![1, 2, 4]);
        assert_eq!(allowed(ServerType::Card300T, false, true), vec![1, 2]);
        // MindCluster accepts 1 chip per pod for distributed 300T jobs (issue 18; the seeds said 2 only).
        assert_eq!(allowed(ServerType::Card300T, true, false), vec![1, 2]);
        assert_eq!(allowed(ServerType::A2, true, false), vec![1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(allowed(ServerType::A2Box16, false, false), vec![1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16]);
        // A3: 1 die only in a single-pod job; 2n ≤ 16 for every job kind (issue 18; the seeds said 16 for vcjobs).
        assert_eq!(allowed(ServerType::A3, false, false), vec![1, 2, 4, 6, 8, 10, 12, 14, 16]);
        assert_eq!(allowed(ServerType::A3, true, true), vec![2, 4, 6, 8, 10, 12, 14, 16]);
        assert_eq!(allowed(ServerType::A3, true, false), vec![2, 4, 6, 8, 10, 12, 14, 16]);
        assert_eq!(allowed(ServerType::A3SuperPod, false, false), vec![1, 2, 4, 6, 8, 10, 12, 14, 16]);
        assert_eq!(allowed(ServerType::A3SuperPod, true, true), vec![2, 4, 6, 8, 10, 12, 14, 16]);
        assert_eq!(allowed(ServerType::A3SuperPod, true, false), vec![16]);
    }

    #[test]
    fn server_type_prefers_the_schedule_policy_and_defaults_to_atlas_800() {
        assert_eq!(ServerType::of(Some("module"), Some("chip8-node8"), None), Some(ServerType::A2));
        assert_eq!(ServerType::of(None, None, Some("ascend-910")), Some(ServerType::Atlas800));
        assert_eq!(ServerType::of(None, None, Some("ascend-910b")), None);
    }
}
