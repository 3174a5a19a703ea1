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
use serde_json::Value;
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

/// Checks the types of the fields serde would read, so a mistake is
/// reported at its field rather than as serde's pathless message.
fn check_shape(value: &Value) -> Result<(), String> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    };
    let Value::Object(top) = value else {
        return Err(format!(
            "scheduler configuration: expected a mapping with `actions` and `tiers`, found {}",
            kind(value)
        ));
    };
    match top.get("actions") {
        Some(Value::String(_)) => {}
        Some(other) => {
            return Err(format!(
                "actions: expected a string of comma-separated actions ({}), found {}",
                ACTIONS.join(", "),
                kind(other)
            ))
        }
        None => return Err(format!("actions: required (comma-separated, of: {})", ACTIONS.join(", "))),
    }
    let tiers = match top.get("tiers") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(tiers)) => tiers,
        Some(other) => return Err(format!("tiers: expected a list of tiers, found {}", kind(other))),
    };
    for (t, tier) in tiers.iter().enumerate() {
        let Value::Object(tier) = tier else {
            return Err(format!("tiers[{t}]: expected a mapping with `plugins`, found {}", kind(tier)));
        };
        let plugins = match tier.get("plugins") {
            None | Some(Value::Null) => continue,
            Some(Value::Array(plugins)) => plugins,
            Some(other) => {
                return Err(format!("tiers[{t}].plugins: expected a list of plugins, found {}", kind(other)))
            }
        };
        for (i, p) in plugins.iter().enumerate() {
            let at = format!("tiers[{t}].plugins[{i}]");
            let Value::Object(p) = p else {
                return Err(format!("{at}: expected a mapping with `name`, found {}", kind(p)));
            };
            match p.get("name") {
                Some(Value::String(_)) => {}
                Some(other) => return Err(format!("{at}.name: expected a plugin name, found {}", kind(other))),
                None => return Err(format!("{at}.name: required (one of: {})", PLUGINS.join(", "))),
            }
            match p.get("arguments") {
                None | Some(Value::Null) => {}
                Some(Value::Object(args)) => {
                    for (k, v) in args {
                        if matches!(v, Value::Null | Value::Array(_) | Value::Object(_)) {
                            return Err(format!(
                                "{at}.arguments.{k}: expected a boolean, number or string, found {}",
                                kind(v)
                            ));
                        }
                    }
                }
                Some(other) => return Err(format!("{at}.arguments: expected a mapping, found {}", kind(other))),
            }
        }
    }
    Ok(())
}

fn plugin(name: &str) -> PluginOption {
    PluginOption { name: name.to_string(), arguments: BTreeMap::new() }
}

impl SchedulerConf {
    /// Parses a configuration. Every error names the field (`actions`,
    /// `tiers[1].plugins[0].name`, …), the value and what is allowed.
    pub fn from_yaml(text: &str) -> Result<SchedulerConf, String> {
        let docs = ringleader_api::document::parse_str("scheduler configuration", text).map_err(|e| e.to_string())?;
        let Some(doc) = docs.into_iter().next() else { return Err("empty scheduler configuration".to_string()) };
        check_shape(&doc.value)?;
        let conf = SchedulerConf::deserialize(doc.value).map_err(|e| format!("scheduler configuration: {e}"))?;
        for action in conf.actions() {
            if !ACTIONS.contains(&action) {
                return Err(format!("actions: unknown action {action:?}; allowed: {}", ACTIONS.join(", ")));
            }
        }
        for (t, tier) in conf.tiers.iter().enumerate() {
            for (i, p) in tier.plugins.iter().enumerate() {
                if !PLUGINS.contains(&p.name.as_str()) {
                    return Err(format!(
                        "tiers[{t}].plugins[{i}].name: unknown plugin {:?}; allowed: {}",
                        p.name,
                        PLUGINS.join(", ")
                    ));
                }
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
        assert!(err.starts_with("actions: unknown action \"shuffle\"; allowed: enqueue,"), "{err}");
        let err = SchedulerConf::from_yaml("actions: allocate\ntiers:\n- plugins:\n  - name: magic\n").unwrap_err();
        assert!(err.starts_with("tiers[0].plugins[0].name: unknown plugin \"magic\"; allowed: gang,"), "{err}");
        let conf = SchedulerConf::from_yaml(
            "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    arguments: {reservation: false}\n",
        )
        .unwrap();
        assert_eq!(conf.argument("drf", "reservation"), Some(&Argument::Bool(false)));
        assert!(conf.runs("allocate") && !conf.runs("preempt"));
    }

    #[test]
    fn mistyped_fields_are_named() {
        let cases = [
            ("- allocate\n", "scheduler configuration: expected a mapping"),
            ("tiers: []\n", "actions: required"),
            ("actions: [allocate]\n", "actions: expected a string of comma-separated actions"),
            ("actions: allocate\ntiers: {plugins: []}\n", "tiers: expected a list of tiers, found a mapping"),
            (
                "actions: allocate\ntiers:\n- plugins: drf\n",
                "tiers[0].plugins: expected a list of plugins, found a string",
            ),
            ("actions: allocate\ntiers:\n- plugins:\n  - drf\n", "tiers[0].plugins[0]: expected a mapping with `name`"),
            ("actions: allocate\ntiers:\n- plugins:\n  - {arguments: {}}\n", "tiers[0].plugins[0].name: required"),
            (
                "actions: allocate\ntiers:\n- plugins: []\n- plugins:\n  - {name: drf, arguments: {a: [1]}}\n",
                "tiers[1].plugins[0].arguments.a: expected a boolean, number or string, found a list",
            ),
        ];
        for (text, want) in cases {
            let err = SchedulerConf::from_yaml(text).unwrap_err();
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }
}
