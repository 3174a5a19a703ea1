//! Why a pod fits nowhere, in kube-scheduler's words:
//! `0/5 nodes are available: 3 Insufficient huawei.com/Ascend910, 2 node(s) didn't match node selector.`

use std::collections::BTreeMap;

/// Per-node reasons gathered while filtering, counted by text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Explanation {
    nodes: usize,
    reasons: BTreeMap<String, usize>,
}

impl Explanation {
    /// An explanation over `nodes` nodes with no reasons yet.
    pub fn new(nodes: usize) -> Explanation {
        Explanation { nodes, reasons: BTreeMap::new() }
    }

    /// Records that one node was rejected for `reason`.
    pub fn reject(&mut self, reason: impl ToString) {
        *self.reasons.entry(reason.to_string()).or_default() += 1;
    }

    /// Records that `count` nodes were rejected for `reason` (nodes in one
    /// state, counted at once).
    pub fn reject_many(&mut self, reason: impl ToString, count: usize) {
        *self.reasons.entry(reason.to_string()).or_default() += count;
    }

    /// Nodes rejected so far.
    pub fn rejected(&self) -> usize {
        self.reasons.values().sum()
    }
}

impl std::fmt::Display for Explanation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let available = self.nodes.saturating_sub(self.rejected());
        write!(f, "{available}/{} nodes are available", self.nodes)?;
        let mut reasons: Vec<(&String, &usize)> = self.reasons.iter().collect();
        // Most common reason first; ties in text order so output is stable.
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (i, (text, count)) in reasons.iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { ", " })?;
            write!(f, "{count} {text}")?;
        }
        f.write_str(".")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_orders_reasons_like_kube_scheduler() {
        let mut e = Explanation::new(5);
        e.reject("node(s) didn't match node selector");
        for _ in 0..3 {
            e.reject("Insufficient huawei.com/Ascend910");
        }
        assert_eq!(
            e.to_string(),
            "1/5 nodes are available: 3 Insufficient huawei.com/Ascend910, 1 node(s) didn't match node selector."
        );
    }
}
