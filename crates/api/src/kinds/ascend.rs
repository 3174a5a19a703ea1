//! MindCluster Ascend Operator's `mindxdl.gitee.com/v1` AscendJob (acjob).

use super::kubeflow::{ReplicaSpec, RunPolicy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// AscendJob spec: Kubeflow-shaped replica specs with an Ascend success policy.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AscendJobSpec {
    /// Normally `volcano`.
    pub scheduler_name: Option<String>,
    /// Run settings.
    #[serde(default)]
    pub run_policy: RunPolicy,
    /// Empty: one pod succeeding succeeds the job; `AllWorkers`: all must.
    pub success_policy: Option<String>,
    /// `Master`/`Scheduler`/`Chief` and `Worker`.
    #[serde(default)]
    pub replica_specs: BTreeMap<String, ReplicaSpec>,
}
