//! Job priority from `scheduling.k8s.io/v1` PriorityClass objects: a job
//! names a class (or, for running workloads, a value); the class marked
//! `globalDefault` applies to jobs that name none, else 0.

use k8s_openapi::api::scheduling::v1::PriorityClass;
use std::collections::BTreeMap;

/// The priority classes a session knows.
#[derive(Debug, Clone, Default)]
pub struct PriorityClasses {
    by_name: BTreeMap<String, i32>,
    default: i32,
}

impl PriorityClasses {
    /// The classes of these objects, with Kubernetes' two built-in system classes.
    pub fn new<'a>(classes: impl IntoIterator<Item = &'a PriorityClass>) -> PriorityClasses {
        let mut by_name = BTreeMap::from([
            ("system-cluster-critical".to_string(), 2_000_000_000),
            ("system-node-critical".to_string(), 2_000_001_000),
        ]);
        let mut default = 0;
        for pc in classes {
            let name = pc.metadata.name.clone().unwrap_or_default();
            if pc.global_default == Some(true) {
                default = pc.value;
            }
            by_name.insert(name, pc.value);
        }
        PriorityClasses { by_name, default }
    }

    /// The value of a job's class; an unknown class name is an error the
    /// job's explanation carries (Kubernetes rejects such pods outright).
    pub fn value(&self, class: Option<&str>) -> Result<i32, String> {
        match class {
            None | Some("") => Ok(self.default),
            Some(name) => self.by_name.get(name).copied().ok_or_else(|| format!("PriorityClass {name} not found")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_default_and_unknown_classes() {
        let class = |name: &str, value: i32, default: bool| PriorityClass {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            value,
            global_default: Some(default),
            ..Default::default()
        };
        let classes = [class("low", 10, true), class("high", 1000, false)];
        let pc = PriorityClasses::new(&classes);
        assert_eq!(pc.value(None), Ok(10));
        assert_eq!(pc.value(Some("high")), Ok(1000));
        assert_eq!(pc.value(Some("system-node-critical")), Ok(2_000_001_000));
        assert_eq!(pc.value(Some("nope")), Err("PriorityClass nope not found".to_string()));
    }
}
