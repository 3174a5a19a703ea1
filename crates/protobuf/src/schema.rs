//! Which protobuf message carries a given apiVersion/kind.

use std::sync::LazyLock;

use prost_reflect::{DescriptorPool, MessageDescriptor};

use crate::Error;

static FDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/k8s.fds"));

/// Built once from the descriptor set build.rs compiled. Decoding it can only
/// fail if build.rs produced garbage, which every test would catch; an empty
/// pool then makes every lookup an `UnknownKind` instead of a panic.
static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| DescriptorPool::decode(FDS).unwrap_or_default());

pub(crate) const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// Kinds apimachinery registers into every group version
/// (metav1.AddToGroupVersion) plus discovery documents served as `v1`.
const META_KINDS: &[&str] = &[
    "Status",
    "WatchEvent",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
    "GetOptions",
    "ListOptions",
    "APIVersions",
    "APIGroupList",
    "APIGroup",
    "APIResourceList",
];

fn package(group: &str) -> Option<&'static str> {
    Some(match group {
        "" => "k8s.io.api.core.v1",
        "apps" => "k8s.io.api.apps.v1",
        "batch" => "k8s.io.api.batch.v1",
        "rbac.authorization.k8s.io" => "k8s.io.api.rbac.v1",
        "scheduling.k8s.io" => "k8s.io.api.scheduling.v1",
        "policy" => "k8s.io.api.policy.v1",
        "authentication.k8s.io" => "k8s.io.api.authentication.v1",
        "authorization.k8s.io" => "k8s.io.api.authorization.v1",
        "coordination.k8s.io" => "k8s.io.api.coordination.v1",
        "discovery.k8s.io" => "k8s.io.api.discovery.v1",
        "autoscaling" => "k8s.io.api.autoscaling.v1",
        "networking.k8s.io" => "k8s.io.api.networking.v1",
        "meta.k8s.io" => META,
        _ => return None,
    })
}

pub(crate) fn message(full_name: &str) -> Option<MessageDescriptor> {
    POOL.get_message_by_name(full_name)
}

/// The message for a top-level object of `kind` in `api_version`: a message
/// whose field 1 is `metadata` (objects and lists), or one of the meta kinds.
/// Nested types such as `v1 PodSpec` are not objects and are refused.
pub(crate) fn lookup(api_version: &str, kind: &str) -> Result<MessageDescriptor, Error> {
    let unknown = || Error::UnknownKind { api_version: api_version.to_owned(), kind: kind.to_owned() };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if version != "v1" || kind.is_empty() || kind.contains('.') {
        return Err(unknown());
    }
    let pkg = package(group).ok_or_else(unknown)?;
    if let Some(m) = message(&format!("{pkg}.{kind}")) {
        let is_object = m.get_field(1).is_some_and(|f| f.name() == "metadata");
        if is_object || pkg == META {
            return Ok(m);
        }
    }
    if META_KINDS.contains(&kind) {
        if let Some(m) = message(&format!("{META}.{kind}")) {
            return Ok(m);
        }
    }
    Err(unknown())
}
