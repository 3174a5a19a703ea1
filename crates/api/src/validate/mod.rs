//! Validation of typed objects. Every rule reports a [`FieldError`] naming
//! the field path, the value and what is allowed; all errors of a document
//! are collected, never only the first.

mod check;
mod containers;
mod errors;
mod gpu;
mod jobs;
mod names;
mod npu;
mod platform;
mod quantity;
pub mod vnpu;

pub use names::{
    is_dns1123_label, is_dns1123_subdomain, is_label_value, is_qualified_name, LABEL_RULE, LABEL_VALUE_RULE,
    QUALIFIED_NAME_RULE, SUBDOMAIN_RULE,
};
pub use quantity::is_quantity;

use crate::ascend as keys;
use crate::document::Document;
use crate::error::FieldError;
use crate::kinds::Resource;
use crate::path;
use serde::Serialize;

/// Every error of one typed object, in the order the rules found them.
pub fn validate(resource: &Resource) -> Vec<FieldError> {
    let mut errs = Vec::new();
    jobs::check_metadata(resource, &mut errs);
    jobs::check_roles(resource, &mut errs);
    jobs::check_spec(resource, &mut errs);
    if resource.is_job() {
        npu::check(resource, &mut errs);
        gpu::check(resource, &mut errs);
        gpu::check_memory(resource, &mut errs);
    }
    if let Resource::ConfigMap(cm) = resource {
        if resource.name().starts_with("rings-config-") {
            let ring = cm.metadata.labels.as_ref().and_then(|l| l.get(keys::RING_CONTROLLER));
            match ring {
                None => errs.push(FieldError::missing(
                    path::key("metadata.labels", keys::RING_CONTROLLER),
                    "a rings-config ConfigMap needs the job's ring-controller.atlas label",
                )),
                Some(v) if !keys::RING_CONTROLLER_VALUES.contains(&v.as_str()) => errs.push(FieldError::new(
                    path::key("metadata.labels", keys::RING_CONTROLLER),
                    v,
                    format!("allowed: {}", keys::RING_CONTROLLER_VALUES.join(", ")),
                )),
                Some(_) => {}
            }
        }
    }
    errs
}

/// The outcome for one document.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Source path.
    pub path: String,
    /// Document index in the source.
    pub index: usize,
    /// Kind as written (or empty).
    pub kind: String,
    /// Namespace (`default` when unset).
    #[serde(skip)]
    pub namespace: String,
    /// Name as written (or empty).
    pub name: String,
    /// Whether it has no errors.
    pub valid: bool,
    /// Its errors.
    pub errors: Vec<FieldError>,
    /// The typed object, when it could be typed.
    #[serde(skip)]
    pub resource: Option<Resource>,
}

impl Report {
    /// `Kind/namespace/name`, as errors name the object.
    pub fn object(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// Types and validates documents, then checks rules that span documents of
/// one source (a job and its `rings-config-<job>` ConfigMap, written side by
/// side, must agree on `ring-controller.atlas`).
pub fn check_documents(docs: &[Document]) -> Vec<Report> {
    let mut reports: Vec<Report> = docs
        .iter()
        .map(|doc| {
            let str_at = |k: &str| doc.value.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
            let meta_at =
                |k: &str| doc.value.get("metadata").and_then(|m| m.get(k)).and_then(|v| v.as_str()).map(str::to_string);
            let (resource, errors) = match Resource::from_value(&doc.value) {
                Ok(r) => {
                    let e = validate(&r);
                    (Some(r), e)
                }
                Err(e) => (None, vec![e]),
            };
            Report {
                path: doc.source.clone(),
                index: doc.index,
                kind: str_at("kind"),
                namespace: meta_at("namespace").unwrap_or_else(|| "default".into()),
                name: meta_at("name").unwrap_or_default(),
                valid: errors.is_empty(),
                errors,
                resource,
            }
        })
        .collect();
    cross_document(&mut reports);
    reports
}

fn cross_document(reports: &mut [Report]) {
    let rings: Vec<(String, String, String, String)> = reports
        .iter()
        .filter_map(|r| {
            let res = r.resource.as_ref().filter(|res| res.is_job())?;
            let ring = res.metadata().labels.as_ref()?.get(keys::RING_CONTROLLER)?;
            Some((r.path.clone(), res.namespace().to_string(), format!("rings-config-{}", res.name()), ring.clone()))
        })
        .collect();
    for report in reports.iter_mut() {
        let Some(Resource::ConfigMap(cm)) = &report.resource else { continue };
        let ns = cm.metadata.namespace.as_deref().unwrap_or("default");
        let name = cm.metadata.name.as_deref().unwrap_or_default();
        let label = cm.metadata.labels.as_ref().and_then(|l| l.get(keys::RING_CONTROLLER));
        for (source, jns, cm_name, ring) in &rings {
            if *source == report.path && jns == ns && cm_name == name {
                if let Some(label) = label.filter(|l| *l != ring) {
                    report.errors.push(FieldError::new(
                        path::key("metadata.labels", keys::RING_CONTROLLER),
                        label,
                        format!("must match the job's ring-controller.atlas ({ring})"),
                    ));
                    report.valid = false;
                }
            }
        }
    }
}
