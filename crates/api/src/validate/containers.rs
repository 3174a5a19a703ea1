//! Rules for one pod template: containers, images, ports, resources, env.

use super::errors::Errors;
use crate::devices::{self, Family};
use crate::error::FieldError;
use crate::path;
use crate::validate::names;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use std::collections::BTreeSet;

/// Allowed pod-level restart policies.
pub const POD_RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];

/// Checks a pod template at `field` (the path of the `template`).
pub fn check_template(template: &PodTemplateSpec, field: &str, errs: &mut Errors) {
    let spec_field = path::key(field, "spec");
    let Some(spec) = &template.spec else {
        errs.push(FieldError::missing(spec_field, "a pod template needs a spec with at least one container"));
        return;
    };
    if let Some(rp) = spec.restart_policy.as_deref() {
        if !POD_RESTART_POLICIES.contains(&rp) {
            errs.push(FieldError::new(
                path::key(&spec_field, "restartPolicy"),
                rp,
                "allowed: Always, OnFailure, Never",
            ));
        }
    }
    let containers_field = path::key(&spec_field, "containers");
    if spec.containers.is_empty() {
        errs.push(FieldError::missing(containers_field.clone(), "at least one container is required"));
    }
    let host_network = spec.host_network.unwrap_or(false);
    let mut seen = BTreeSet::new();
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| (path::index(&path::key(&spec_field, "initContainers"), i), c));
    let main = spec.containers.iter().enumerate().map(|(i, c)| (path::index(&containers_field, i), c));
    for (cf, c) in main.chain(init) {
        if !names::is_dns1123_label(&c.name) {
            errs.push(FieldError::new(path::key(&cf, "name"), format!("{:?}", c.name), names::LABEL_RULE));
        } else if !seen.insert(c.name.clone()) {
            errs.push(FieldError::new(
                path::key(&cf, "name"),
                format!("{:?}", c.name),
                "container names must be unique within a pod",
            ));
        }
        if c.image.as_deref().is_none_or(|i| i.trim().is_empty()) {
            errs.push(FieldError::missing(path::key(&cf, "image"), "a container image is required"));
        }
        for (pi, p) in c.ports.iter().flatten().enumerate() {
            let pf = path::index(&path::key(&cf, "ports"), pi);
            if !(1..=65535).contains(&p.container_port) {
                errs.push(FieldError::new(path::key(&pf, "containerPort"), p.container_port, "allowed: 1 to 65535"));
            }
            if let Some(hp) = p.host_port {
                if !(0..=65535).contains(&hp) {
                    errs.push(FieldError::new(path::key(&pf, "hostPort"), hp, "allowed: 1 to 65535 (0 = none)"));
                }
            }
        }
        check_resources(c, &cf, errs);
        for (ei, e) in c.env.iter().flatten().enumerate() {
            if e.name == crate::ascend::HCCL_IF_IP && !host_network {
                errs.push(FieldError::new(
                    path::key(&path::index(&path::key(&cf, "env"), ei), "name"),
                    e.name.as_str(),
                    format!(
                        "HCCL_IF_IP is the host IP and may be set only with hostNetwork: true ({} is not true)",
                        path::key(&spec_field, "hostNetwork")
                    ),
                ));
            }
        }
    }
}

fn check_resources(c: &k8s_openapi::api::core::v1::Container, cf: &str, errs: &mut Errors) {
    let Some(res) = &c.resources else { return };
    let rf = path::key(cf, "resources");
    let empty = Default::default();
    let limits = res.limits.as_ref().unwrap_or(&empty);
    let requests = res.requests.as_ref().unwrap_or(&empty);
    for (name, req) in requests {
        if !devices::is_extended(name) {
            continue;
        }
        let field = path::key(&path::key(&rf, "requests"), name);
        match limits.get(name) {
            None => errs.push(FieldError::new(
                field,
                &req.0,
                format!("extended resource {name} needs limits equal to requests; limits has none"),
            )),
            Some(lim) if lim.0.trim() != req.0.trim() => errs.push(FieldError::new(
                field,
                &req.0,
                format!("requests must equal limits for extended resource {name} (limits: {})", lim.0),
            )),
            Some(_) => {}
        }
    }
    let mut npu: Option<&str> = None;
    for (name, q) in limits.iter().chain(requests.iter().filter(|(k, _)| !limits.contains_key(*k))) {
        let Some((family, _)) = devices::classify(name) else { continue };
        let section = if limits.contains_key(name) { "limits" } else { "requests" };
        let field = path::key(&path::key(&rf, section), name);
        if devices::whole_count(q).is_none() {
            errs.push(FieldError::new(field.clone(), &q.0, "device counts must be whole non-negative numbers"));
        }
        if family == Family::Ascend {
            match npu {
                Some(first) => errs.push(FieldError::new(
                    field,
                    &q.0,
                    format!("a container may request only one NPU resource type; it already requests {first}"),
                )),
                None => npu = Some(name),
            }
        }
    }
}
