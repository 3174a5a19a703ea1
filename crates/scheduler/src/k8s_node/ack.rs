//! ACK's GPU topology-aware scheduling as a node shows it: the opt-in label
//! `ack.node.gpu.schedule=topology`, the resource `aliyun.com/gpu` (or the
//! count label `aliyun.accelerator/nvidia_count`), the model label
//! `aliyun.accelerator/nvidia_name`, and, where the topology device plugin
//! wrote it, the node annotation `GPU_TOPOLOGY`: JSON whose keys are
//! `GPU_<link code>_<i>_<j>` (e.g. `"GPU_NV2_0_3": "Two NVLinks"`,
//! `"GPU_SYS_0_4": "Cross CPU socket"`), one per GPU pair.

use super::invalid::Invalid;
use ringleader_topology::LinkKind;
use std::collections::BTreeMap;

/// The opt-in label and its value.
pub const ACK_SCHEDULE_LABEL: &str = "ack.node.gpu.schedule";
/// The value of [`ACK_SCHEDULE_LABEL`] that turns topology-aware scheduling on.
pub const ACK_TOPOLOGY_VALUE: &str = "topology";
/// ACK's GPU count label.
pub const ACK_COUNT_LABEL: &str = "aliyun.accelerator/nvidia_count";
/// The topology device plugin's link annotation.
pub const ACK_TOPOLOGY_ANNOTATION: &str = "GPU_TOPOLOGY";

/// Whether the node opted into ACK's topology-aware GPU scheduling.
pub(crate) fn opted_in(labels: &BTreeMap<String, String>) -> bool {
    labels.get(ACK_SCHEDULE_LABEL).is_some_and(|v| v == ACK_TOPOLOGY_VALUE)
}

/// The GPU count from the count label, when present.
pub(crate) fn count_label(labels: &BTreeMap<String, String>) -> Result<Option<u32>, Invalid> {
    let Some(v) = labels.get(ACK_COUNT_LABEL) else { return Ok(None) };
    let n: u32 = v.trim().parse().map_err(|_| {
        Invalid::node(format!("metadata.labels[{ACK_COUNT_LABEL:?}]"), v, "must be a whole number of GPUs")
    })?;
    super::capacity::check_most(n, &format!("metadata.labels[{ACK_COUNT_LABEL:?}]"), v)?;
    Ok((n > 0).then_some(n))
}

/// The `n`×`n` link matrix of a `GPU_TOPOLOGY` annotation; every pair must be present once.
pub(crate) fn links(text: &str, n: usize) -> Result<Vec<Vec<LinkKind>>, Invalid> {
    let field = format!("metadata.annotations[{ACK_TOPOLOGY_ANNOTATION:?}]");
    let bad = |value: &str, message: String| Invalid::node(field.clone(), value, message);
    let map: BTreeMap<String, String> = serde_json::from_str(text)
        .map_err(|e| bad(text, format!("not a JSON object of \"GPU_<code>_<i>_<j>\": \"<description>\": {e}")))?;
    let mut kinds: Vec<Vec<Option<LinkKind>>> = vec![vec![None; n]; n];
    for key in map.keys() {
        let parts: Vec<&str> = key.split('_').collect();
        let (code, i, j) = match parts.as_slice() {
            ["GPU", code, i, j] => (*code, i.parse::<usize>().ok(), j.parse::<usize>().ok()),
            _ => return Err(bad(key, "key is not GPU_<link code>_<i>_<j>".into())),
        };
        let kind = LinkKind::from_code(code)
            .filter(|k| !matches!(k, LinkKind::SelfLink | LinkKind::Hccs | LinkKind::Die | LinkKind::Ub))
            .ok_or_else(|| bad(key, format!("unknown link code {code:?} (allowed: NV#, PIX, PXB, PHB, NODE, SYS)")))?;
        let (Some(i), Some(j)) = (i, j) else { return Err(bad(key, "GPU indices must be whole numbers".into())) };
        if i >= n || j >= n || i == j {
            return Err(bad(key, format!("GPU pair ({i}, {j}) is not two different GPUs of 0..{n}")));
        }
        if kinds[i][j].is_some_and(|k| k != kind) {
            return Err(bad(key, format!("GPU pair ({i}, {j}) is given twice with different links")));
        }
        kinds[i][j] = Some(kind);
        kinds[j][i] = Some(kind);
    }
    let mut out = Vec::with_capacity(n);
    for (i, row) in kinds.iter().enumerate() {
        let mut r = Vec::with_capacity(n);
        for (j, k) in row.iter().enumerate() {
            match (i == j, k) {
                (true, _) => r.push(LinkKind::SelfLink),
                (false, Some(k)) => r.push(*k),
                (false, None) => {
                    return Err(bad(&short_keys(&map), format!("no entry for GPU pair ({i}, {j}) of {n} GPUs")))
                }
            }
        }
        out.push(r);
    }
    Ok(out)
}

fn short_keys(map: &BTreeMap<String, String>) -> String {
    let keys: Vec<&str> = map.keys().map(String::as_str).take(6).collect();
    let more = if map.len() > keys.len() { ", …" } else { "" };
    format!("{}{more}", keys.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_gpus() {
        let l = links(r#"{"GPU_NV2_0_1":"Two NVLinks"}"#, 2).unwrap();
        assert_eq!(l[0][1], LinkKind::NvLink(2));
        assert_eq!(l[1][0], LinkKind::NvLink(2));
        assert_eq!(l[0][0], LinkKind::SelfLink);
    }

    #[test]
    fn missing_pair_is_named() {
        let e = links(r#"{"GPU_NV2_0_1":"Two NVLinks"}"#, 3).unwrap_err().to_string();
        assert!(e.contains("no entry for GPU pair (0, 2) of 3 GPUs"), "{e}");
        assert!(e.contains("GPU_TOPOLOGY"), "{e}");
    }

    #[test]
    fn bad_code_is_named() {
        let e = links(r#"{"GPU_XYZ_0_1":"?"}"#, 2).unwrap_err().to_string();
        assert!(e.contains("unknown link code \"XYZ\""), "{e}");
    }
}
