//! Services as kube-apiserver admits them: the types served (ClusterIP and
//! headless), the ports checked, the defaults filled, a cluster IP from the
//! service range on create (a requested one honoured when free) and kept on
//! every update.

use super::protect::Before;
use crate::state::ServerState;
use ringleader_api::kinds::service::{self, ServiceRange};
use ringleader_api::FieldError;
use ringleader_registry::resources::{ResourceType, SERVICES};
use ringleader_registry::status::ApiError;
use ringleader_store::{ObjectKey, Selector};
use serde_json::Value;
use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// How long a reservation outlives its allocation: far longer than a
/// create takes to reach the store, after which the store answers.
const RESERVED_FOR: Duration = Duration::from_secs(10);

/// The only type served: kube-proxy's other types need node ports, load
/// balancers or DNS, none of which ringleader runs.
const TYPES: &str = "supported values: \"ClusterIP\" (ringleader has no node ports, load balancers or external names)";

/// A Service checked, given its cluster IP and defaulted (other kinds pass
/// untouched).
pub(crate) async fn admit(
    state: &ServerState,
    rt: &ResourceType,
    object: &mut Value,
    before: &Before<'_>,
) -> Result<(), ApiError> {
    if rt != SERVICES {
        return Ok(());
    }
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
    let invalid = |errs: Vec<FieldError>| ApiError::invalid("Service", &name, &errs);
    let errs = shape(object);
    if !errs.is_empty() {
        return Err(invalid(errs));
    }
    let fetched;
    let old = match before {
        Before::Absent => None,
        Before::Known(b) => *b,
        Before::Lookup => {
            let key = ObjectKey::of(object).map_err(ApiError::from)?;
            fetched = state.blocking(move |s| s.get(&key)).await?;
            fetched.as_ref().map(|s| &s.object)
        }
    };
    let written = object.pointer("/spec/clusterIP").and_then(Value::as_str).unwrap_or_default().to_string();
    if let Some(old_ip) = old.and_then(|o| o.pointer("/spec/clusterIP")).and_then(Value::as_str) {
        // Kept as it was: a replace that leaves it out keeps the old one,
        // as kube-apiserver does for clients that never read it.
        if written.is_empty() {
            object["spec"]["clusterIP"] = Value::String(old_ip.to_string());
            if let Some(ips) = old.and_then(|o| o.pointer("/spec/clusterIPs")) {
                object["spec"]["clusterIPs"] = ips.clone();
            }
        } else if written != old_ip {
            return Err(invalid(vec![FieldError::new("spec.clusterIP", quoted(&written), "field is immutable")]));
        }
        service::default_spec(object, None);
        return Ok(());
    }
    let ip = match written.as_str() {
        "None" => None,
        "" => Some(allocate(state, &owner(object), None).await?),
        requested => {
            let Ok(ip) = requested.parse::<Ipv4Addr>() else {
                return Err(invalid(vec![FieldError::new(
                    "spec.clusterIPs[0]",
                    quoted(requested),
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )]));
            };
            let shown = format!("[]string{{{}}}", quoted(requested));
            allocate(state, &owner(object), Some(ip))
                .await
                .map_err(|e| invalid(vec![FieldError::new("spec.clusterIPs", shown, e.message)]))?
                .into()
        }
    };
    service::default_spec(object, ip);
    Ok(())
}

/// A patch may not change a Service's cluster IP once it has one.
pub(crate) fn patched(rt: &ResourceType, before: &Value, after: &Value) -> Result<(), ApiError> {
    let ip = |v: &Value| v.pointer("/spec/clusterIP").and_then(Value::as_str).map(str::to_string);
    match (ip(before), ip(after)) {
        (Some(old), new) if rt == SERVICES && new.as_ref() != Some(&old) => {
            let name = after.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let shown = new.map_or_else(|| "\"\"".to_string(), |n| quoted(&n));
            Err(ApiError::invalid("Service", name, &[FieldError::new("spec.clusterIP", shown, "field is immutable")]))
        }
        _ => Ok(()),
    }
}

fn quoted(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

fn owner(object: &Value) -> String {
    let at = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default();
    format!("{}/{}", at("/metadata/namespace"), at("/metadata/name"))
}

/// What a Service's spec must be: Kubernetes' shape, a served type, ports
/// with valid numbers and protocols (and names when there are several),
/// and ports unless headless.
fn shape(object: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Err(e) = serde_json::from_value::<k8s_openapi::api::core::v1::Service>(object.clone()) {
        errs.push(FieldError::new("spec", "", format!("not a v1 Service: {e}")));
        return errs;
    }
    if let Some(t) = object.pointer("/spec/type").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        if t != "ClusterIP" {
            errs.push(FieldError::new("spec.type", quoted(t), TYPES));
        }
    }
    let ports = object.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
    if ports.is_empty() && !service::headless(object) {
        errs.push(FieldError::missing("spec.ports", "a Service with a cluster IP needs at least one port"));
    }
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let at = |f: &str| format!("spec.ports[{i}].{f}");
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&port) {
            errs.push(FieldError::new(at("port"), port, "must be between 1 and 65535, inclusive"));
        }
        match p.get("protocol").and_then(Value::as_str) {
            None | Some("TCP" | "UDP" | "SCTP") => {}
            Some(other) => errs.push(FieldError::new(
                at("protocol"),
                quoted(other),
                "supported values: \"SCTP\", \"TCP\", \"UDP\"",
            )),
        }
        if let Some(Value::Number(n)) = p.get("targetPort") {
            if !n.as_i64().is_some_and(|n| (1..=65535).contains(&n)) {
                errs.push(FieldError::new(at("targetPort"), n, "must be between 1 and 65535, inclusive"));
            }
        }
        let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() && ports.len() > 1 {
            errs.push(FieldError::missing(at("name"), "a name is required when a Service has more than one port"));
        } else if !names.insert(name.to_string()) {
            errs.push(FieldError::new(at("name"), quoted(name), "Duplicate value"));
        }
    }
    errs
}

/// A cluster IP for the Service `owner` (`namespace/name`): `requested`
/// when it is free and in the range, else any free one. Free means neither
/// stored on another Service nor just handed out by this server.
async fn allocate(state: &ServerState, owner: &str, requested: Option<Ipv4Addr>) -> Result<Ipv4Addr, ApiError> {
    let stored =
        state.blocking(|s| s.list(&Selector::kind(SERVICES.api_version, SERVICES.kind)).map(|(l, _)| l)).await?;
    let mut taken: BTreeSet<Ipv4Addr> = BTreeSet::new();
    for s in &stored {
        let here = format!("{}/{}", s.key.namespace, s.key.name);
        if let Some(ip) = service::cluster_ip(&s.object).filter(|_| here != owner) {
            taken.insert(ip);
        }
    }
    let range = ServiceRange::default();
    let now = Instant::now();
    let mut reserved =
        state.service_ips.lock().map_err(|_| ApiError::internal("the service IP allocator failed earlier"))?;
    reserved.retain(|ip, (_, at)| now.duration_since(*at) < RESERVED_FOR && !taken.contains(ip));
    taken.extend(reserved.iter().filter(|(_, (who, _))| who != owner).map(|(ip, _)| *ip));
    let ip = match requested {
        Some(ip) => {
            range.check_requested(ip, &taken).map_err(ApiError::bad_request)?;
            ip
        }
        None => range
            .allocate(&taken, rand::random::<u64>())
            .ok_or_else(|| ApiError::internal(format!("failed to allocate a serviceIP: range {range} is full")))?,
    };
    reserved.insert(ip, (owner.to_string(), now));
    Ok(ip)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_served_types_and_valid_ports_pass() {
        let ok = json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}});
        assert!(shape(&ok).is_empty());
        let node_port = json!({"metadata": {"name": "web"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        let e = shape(&node_port);
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].field.as_str(), e[0].value.as_str()), ("spec.type", "\"NodePort\""));
        assert!(e[0].message.contains("\"ClusterIP\""));
        let unnamed = json!({"spec": {"ports": [{"port": 80}, {"port": 0, "protocol": "ICMP"}]}});
        let fields: Vec<String> = shape(&unnamed).into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            ["spec.ports[0].name", "spec.ports[1].port", "spec.ports[1].protocol", "spec.ports[1].name"]
        );
        assert_eq!(shape(&json!({"spec": {}}))[0].field, "spec.ports");
        assert!(shape(&json!({"spec": {"clusterIP": "None"}})).is_empty(), "headless needs no ports");
    }
}
