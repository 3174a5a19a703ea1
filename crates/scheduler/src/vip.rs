//! VIP jobs (platform seed 003): a job that names target nodes and either
//! waits for them to empty (`wait`) or evicts everything on them at once
//! (`kill`). VIP jobs are never preempted or reclaimed.
//!
//! Marked on the job with `ringleader.io/vip: wait|kill` and
//! `ringleader.io/vip-nodes: n1,n2`.

use std::collections::BTreeMap;

/// Annotation: `wait` or `kill`.
pub const VIP: &str = "ringleader.io/vip";
/// Annotation: comma-separated node names.
pub const VIP_NODES: &str = "ringleader.io/vip-nodes";

/// What a VIP job does about the jobs on its nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VipMode {
    /// Reserve the nodes and wait until they are free.
    Wait,
    /// Evict every non-VIP job on the nodes at once.
    Kill,
}

/// A VIP job's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vip {
    /// Wait or kill.
    pub mode: VipMode,
    /// The only nodes the job runs on.
    pub nodes: Vec<String>,
}

/// Reads a job's VIP annotations; `Ok(None)` for an ordinary job, `Err` for
/// a mode other than `wait`/`kill` or a VIP job without nodes.
pub fn from_annotations(annotations: &BTreeMap<String, String>) -> Result<Option<Vip>, String> {
    let Some(mode) = annotations.get(VIP) else { return Ok(None) };
    let mode = match mode.as_str() {
        "wait" => VipMode::Wait,
        "kill" => VipMode::Kill,
        other => return Err(format!("annotation {VIP}: {other:?} is not wait or kill")),
    };
    let nodes: Vec<String> = annotations
        .get(VIP_NODES)
        .map(|v| v.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_string).collect())
        .unwrap_or_default();
    if nodes.is_empty() {
        return Err(format!("annotation {VIP_NODES}: a VIP job must name its nodes"));
    }
    Ok(Some(Vip { mode, nodes }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mode_and_nodes() {
        let ann = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(from_annotations(&ann(&[])), Ok(None));
        assert_eq!(
            from_annotations(&ann(&[(VIP, "kill"), (VIP_NODES, "n1, n2")])),
            Ok(Some(Vip { mode: VipMode::Kill, nodes: vec!["n1".into(), "n2".into()] }))
        );
        assert_eq!(
            from_annotations(&ann(&[(VIP, "wait")])),
            Err("annotation ringleader.io/vip-nodes: a VIP job must name its nodes".to_string())
        );
    }
}
