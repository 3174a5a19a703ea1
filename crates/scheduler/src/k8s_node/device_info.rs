//! MindCluster's per-node device-info ConfigMap, `kube-system/mindx-dl-deviceinfo-<node>`,
//! as the Ascend device plugin writes it. Key `DeviceInfoCfg` holds JSON:
//!
//! ```json
//! {"DeviceInfo":{"DeviceList":{"huawei.com/Ascend910":"Ascend910-0,Ascend910-2",
//!   "huawei.com/Ascend910-Unhealthy":"Ascend910-1","huawei.com/Ascend910-NetworkUnhealthy":"",
//!   "huawei.com/Ascend910-Fault":"[…]"},"UpdateTime":1718702470},
//!  "CheckCode":"<sha256 of DeviceInfo>","SuperPodID":-1,"ServerIndex":-1}
//! ```
//!
//! `huawei.com/<chip>` lists the free healthy chips, `-Unhealthy` and
//! `-NetworkUnhealthy` the broken ones; chips in use appear in none, so the
//! chip count comes from the Node's capacity, not from here. The optional key
//! `ManuallySeparateNPU` lists chips an operator took out of service.

use super::check_code::device_info_check_code;
use super::invalid::Invalid;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Namespace of the device-info ConfigMaps.
pub const DEVICE_INFO_NAMESPACE: &str = "kube-system";
/// Name prefix of the device-info ConfigMaps (the node name follows).
pub const DEVICE_INFO_PREFIX: &str = "mindx-dl-deviceinfo-";
/// The ConfigMap key holding the device list.
pub const DEVICE_INFO_KEY: &str = "DeviceInfoCfg";
/// The ConfigMap key listing chips separated by hand.
pub const MANUALLY_SEPARATE_KEY: &str = "ManuallySeparateNPU";

/// What one device-info ConfigMap says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeviceInfo {
    /// The chips' resource, e.g. `huawei.com/Ascend910`.
    pub resource: &'static str,
    /// Physical chip IDs listed free and healthy.
    pub free: Vec<u32>,
    /// `-Unhealthy`.
    pub unhealthy: Vec<u32>,
    /// `ManuallySeparateNPU` (out of service by hand; also unhealthy to the scheduler).
    pub separated: Vec<u32>,
    /// `-NetworkUnhealthy`.
    pub network_unhealthy: Vec<u32>,
    /// `SuperPodID` where written.
    pub super_pod_id: Option<i64>,
}

#[derive(Deserialize)]
struct Cfg {
    #[serde(rename = "DeviceInfo")]
    device_info: Info,
    #[serde(rename = "CheckCode", default)]
    check_code: String,
    #[serde(rename = "SuperPodID", default)]
    super_pod_id: Option<i64>,
}

#[derive(Deserialize)]
struct Info {
    #[serde(rename = "DeviceList")]
    device_list: BTreeMap<String, String>,
    #[serde(rename = "UpdateTime")]
    update_time: i64,
}

/// The ConfigMap name for a node.
pub fn device_info_config_map_name(node: &str) -> String {
    format!("{DEVICE_INFO_PREFIX}{node}")
}

/// Reads a device-info ConfigMap's `data`; `source` names the ConfigMap in errors.
pub(crate) fn parse(source: &str, data: &BTreeMap<String, String>) -> Result<DeviceInfo, Invalid> {
    let bad = |field: String, value: &str, message: String| Invalid::new(source, field, value, message);
    let cfg_field = format!("data[{DEVICE_INFO_KEY:?}]");
    let text = data.get(DEVICE_INFO_KEY).ok_or_else(|| {
        bad(cfg_field.clone(), "", "missing; the Ascend device plugin writes the device list under this key".into())
    })?;
    let cfg: Cfg = serde_json::from_str(text).map_err(|e| {
        bad(
            cfg_field.clone(),
            &short(text),
            format!("not the device plugin's JSON ({{\"DeviceInfo\":{{\"DeviceList\":{{…}},\"UpdateTime\":N}},\"CheckCode\":\"…\"}}): {e}"),
        )
    })?;
    let expected = device_info_check_code(&cfg.device_info.device_list, cfg.device_info.update_time);
    if cfg.check_code != expected {
        return Err(bad(
            format!("{cfg_field}.CheckCode"),
            &cfg.check_code,
            "does not match the SHA-256 of DeviceInfo; the device plugin writes it and Volcano ignores a ConfigMap whose code differs".into(),
        ));
    }
    let list = &cfg.device_info.device_list;
    let families: Vec<(&'static str, &'static str)> = super::capacity::ASCEND_RESOURCES
        .iter()
        .copied()
        .filter(|(r, _)| list.keys().any(|k| k == r || k.strip_prefix(r).is_some_and(|s| s.starts_with('-'))))
        .collect();
    // The dash keeps `huawei.com/Ascend310` from claiming `huawei.com/Ascend310P-…` keys.
    let (resource, family) = match families.as_slice() {
        [one] => *one,
        [] => {
            return Err(bad(
                format!("{cfg_field}.DeviceInfo.DeviceList"),
                &list.keys().cloned().collect::<Vec<_>>().join(", "),
                format!(
                    "no chip entries; expected keys {}",
                    super::capacity::ASCEND_RESOURCES.iter().map(|(r, _)| *r).collect::<Vec<_>>().join(", ")
                ),
            ))
        }
        many => {
            return Err(bad(
                format!("{cfg_field}.DeviceInfo.DeviceList"),
                &many.iter().map(|(r, _)| *r).collect::<Vec<_>>().join(", "),
                "entries for more than one chip kind; ringleader models one device kind per node".into(),
            ))
        }
    };
    let ids = |key: String| -> Result<Vec<u32>, Invalid> {
        match list.get(&key) {
            Some(v) => {
                chip_ids(v, family).map_err(|m| bad(format!("{cfg_field}.DeviceInfo.DeviceList[{key:?}]"), v, m))
            }
            None => Ok(Vec::new()),
        }
    };
    let free = ids(resource.to_string())?;
    let unhealthy = ids(format!("{resource}-Unhealthy"))?;
    let network_unhealthy = ids(format!("{resource}-NetworkUnhealthy"))?;
    let separated = match data.get(MANUALLY_SEPARATE_KEY) {
        Some(v) => chip_ids(v, family).map_err(|m| bad(format!("data[{MANUALLY_SEPARATE_KEY:?}]"), v, m))?,
        None => Vec::new(),
    };
    Ok(DeviceInfo { resource, free, unhealthy, separated, network_unhealthy, super_pod_id: cfg.super_pod_id })
}

/// `Ascend910-0,Ascend910-3` → `[0, 3]`; empty → none.
fn chip_ids(list: &str, family: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let id = name
            .strip_prefix(family)
            .and_then(|s| s.strip_prefix('-'))
            .and_then(|s| s.parse::<u32>().ok())
            .ok_or_else(|| format!("chip name {name:?} is not {family}-<physical ID>"))?;
        out.push(id);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The start of a long value, for error lines.
fn short(text: &str) -> String {
    const MAX: usize = 120;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chip_names() {
        assert_eq!(chip_ids("Ascend910-3, Ascend910-0,,Ascend910-3", "Ascend910").unwrap(), vec![0, 3]);
        assert_eq!(chip_ids("", "Ascend910").unwrap(), Vec::<u32>::new());
        let e = chip_ids("Ascend310P-1", "Ascend910").unwrap_err();
        assert!(e.contains("\"Ascend310P-1\" is not Ascend910-<physical ID>"), "{e}");
    }
}
