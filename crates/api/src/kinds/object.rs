//! [`Object`]: the Kubernetes shape every kind shares — `apiVersion`,
//! `kind`, `metadata` and a typed `spec`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A Kubernetes-shaped object with a typed spec.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Object<S> {
    /// e.g. `kubeflow.org/v1`.
    pub api_version: String,
    /// e.g. `PyTorchJob`.
    pub kind: String,
    /// Name, namespace, labels, annotations.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The kind's spec.
    #[serde(default)]
    pub spec: S,
    /// Status as last written, kept opaque here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}
