//! The scheduler configuration: which actions run in which order and which
//! plugins, in tiers, shape them — Volcano's `volcano-scheduler.conf` format:
//!
//! ```yaml
//! actions: "enqueue, allocate, backfill, preempt, reclaim"
//! tiers:
//! - plugins:
//!   - name: priority
//!   - name: gang
//! - plugins:
//!   - name: drf
//!   - name: predicates
//!   - name: proportion
//!   - name: nodeorder
//!   - name: network-topology-aware
//! ```
//!
//! Policy lives here; the mechanism (what each plugin does) is code.

use serde::Deserialize;
use std::collections::BTreeMap;

/// Actions in the order a session may run them.
pub const ACTIONS: &[&str] = &["enqueue", "allocate", "backfill", "preempt", "reclaim"];

/// Plugins a configuration may name. `conformance`, `overcommit` and
/// `binpack` are accepted for compatibility with Volcano configurations; the
/// placement code already bin-packs and the rest have no effect here.
pub const PLUGINS: &[&str] = &[
    "gang",
    "priority",
    "proportion",
    "capacity",
    "drf",
    "predicates",
    "nodeorder",
    "network-topology-aware",
    "conformance",
    "overcommit",
    "binpack",
];

/// A plugin argument value.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Argument {
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number.
    Float(f64),
    /// Text.
    Text(String),
}

/// One plugin of a tier.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PluginOption {
    /// Plugin name.
    pub name: String,
    /// Plugin arguments.
    #[serde(default)]
    pub arguments: BTreeMap<String, Argument>,
}

/// One tier of plugins.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Tier {
    /// Its plugins.
    #[serde(default)]
    pub plugins: Vec<PluginOption>,
}

/// A scheduler configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SchedulerConf {
    /// Comma-separated action names, run in this order.
    pub actions: String,
    /// Plugin tiers.
    #[serde(default)]
    pub tiers: Vec<Tier>,
}

/// The built-in configuration: every action, gang and priority first, then
/// DRF inside queues, proportion between them, and placement.
pub const DEFAULT_CONF: &str = r#"actions: "enqueue, allocate, backfill, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"#;

impl Default for SchedulerConf {
    fn default() -> SchedulerConf {
        SchedulerConf {
            actions: "enqueue, allocate, backfill, preempt, reclaim".to_string(),
            tiers: vec![
                Tier { plugins: ["priority", "gang"].map(plugin).to_vec() },
                Tier {
                    plugins: ["drf", "predicates", "proportion", "nodeorder", "network-topology-aware"]
                        .map(plugin)
                        .to_vec(),
                },
            ],
        }
    }
}

fn plugin(name: &str) -> PluginOption {
    PluginOption { name: name.to_string(), arguments: BTreeMap::new() }
}

impl SchedulerConf {
    /// Parses a configuration; unknown actions and plugins are errors that
    /// list the known ones.
    pub fn from_yaml(text: &str) -> Result<SchedulerConf, String> {
        let docs = ringleader_api::document::parse_str("scheduler configuration", text).map_err(|e| e.to_string())?;
        let Some(doc) = docs.into_iter().next() else { return Err("empty scheduler configuration".to_string()) };
        let conf = SchedulerConf::deserialize(doc.value).map_err(|e| format!("scheduler configuration: {e}"))?;
        for action in conf.actions() {
            if !ACTIONS.contains(&action) {
                return Err(format!("unknown action {action:?}; actions: {}", ACTIONS.join(", ")));
            }
        }
        for p in conf.tiers.iter().flat_map(|t| &t.plugins) {
            if !PLUGINS.contains(&p.name.as_str()) {
                return Err(format!("unknown plugin {:?}; plugins: {}", p.name, PLUGINS.join(", ")));
            }
        }
        Ok(conf)
    }

    /// The same configuration without one plugin.
    pub fn without(&self, plugin: &str) -> SchedulerConf {
        let mut conf = self.clone();
        for tier in &mut conf.tiers {
            tier.plugins.retain(|p| p.name != plugin);
        }
        conf
    }

    /// Action names in order.
    pub fn actions(&self) -> Vec<&str> {
        self.actions.split(',').map(str::trim).filter(|a| !a.is_empty()).collect()
    }

    /// Whether the action runs.
    pub fn runs(&self, action: &str) -> bool {
        self.actions().contains(&action)
    }

    /// Whether a plugin is configured in any tier.
    pub fn enabled(&self, plugin: &str) -> bool {
        self.tiers.iter().flat_map(|t| &t.plugins).any(|p| p.name == plugin)
    }

    /// A plugin's argument.
    pub fn argument(&self, plugin: &str, key: &str) -> Option<&Argument> {
        self.tiers.iter().flat_map(|t| &t.plugins).find(|p| p.name == plugin)?.arguments.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_text_is_the_default() {
        assert_eq!(SchedulerConf::from_yaml(DEFAULT_CONF).unwrap(), SchedulerConf::default());
    }

    #[test]
    fn unknown_names_are_errors() {
        let err = SchedulerConf::from_yaml("actions: \"allocate, shuffle\"\n").unwrap_err();
        assert!(err.starts_with("unknown action \"shuffle\""), "{err}");
        let err = SchedulerConf::from_yaml("actions: allocate\ntiers:\n- plugins:\n  - name: magic\n").unwrap_err();
        assert!(err.starts_with("unknown plugin \"magic\""), "{err}");
        let conf = SchedulerConf::from_yaml(
            "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    arguments: {reservation: false}\n",
        )
        .unwrap();
        assert_eq!(conf.argument("drf", "reservation"), Some(&Argument::Bool(false)));
        assert!(conf.runs("allocate") && !conf.runs("preempt"));
    }
}
