//! `v1 Service`s as kube-apiserver keeps them: the defaults a created one
//! gets, its cluster IP from the service range, which pods its selector
//! picks, and the `kubernetes` Service naming the API server itself.

use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// `apiVersion` of a Service (and of Endpoints).
pub const API_VERSION: &str = "v1";
/// `kind` of a Service.
pub const KIND: &str = "Service";
/// `kind` of the core Endpoints.
pub const ENDPOINTS_KIND: &str = "Endpoints";
/// `apiVersion` of an EndpointSlice.
pub const SLICE_API_VERSION: &str = "discovery.k8s.io/v1";
/// `kind` of an EndpointSlice.
pub const SLICE_KIND: &str = "EndpointSlice";
/// Label naming an EndpointSlice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// Label naming who keeps an EndpointSlice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// [`MANAGED_BY_LABEL`] of the slices the endpointslice controller keeps.
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// Label the endpoints controller puts on the Endpoints it keeps (so the
/// mirroring controller leaves them alone); here it also tells the
/// controller's Endpoints from a user's.
pub const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
/// Name (in `default`) of the Service naming the API server.
pub const KUBERNETES: &str = "kubernetes";

/// The service IP range, kube-apiserver's `--service-cluster-ip-range`
/// default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceRange {
    network: Ipv4Addr,
    prefix: u8,
}

impl Default for ServiceRange {
    fn default() -> Self {
        ServiceRange { network: Ipv4Addr::new(10, 96, 0, 0), prefix: 12 }
    }
}

impl std::fmt::Display for ServiceRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

impl ServiceRange {
    fn bounds(&self) -> (u32, u32) {
        let base = u32::from(self.network);
        let size = 1u32 << (32 - u32::from(self.prefix));
        (base, base + size - 1)
    }

    /// Whether `ip` may be a Service's: inside the range, neither its
    /// network nor its broadcast address.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let (first, last) = self.bounds();
        let n = u32::from(ip);
        n > first && n < last
    }

    /// The first usable address, which the `kubernetes` Service gets.
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.bounds().0 + 1)
    }

    /// A free address: scanning from an offset `seed` picks (kube-apiserver
    /// picks at random too, so that concurrent allocators rarely collide),
    /// `None` when the range is full.
    pub fn allocate(&self, taken: &BTreeSet<Ipv4Addr>, seed: u64) -> Option<Ipv4Addr> {
        let (first, last) = self.bounds();
        let usable = u64::from(last - first - 1);
        (0..usable).map(|i| Ipv4Addr::from(first + 1 + ((seed + i) % usable) as u32)).find(|ip| !taken.contains(ip))
    }

    /// A requested address checked as kube-apiserver checks it: the
    /// message after `spec.clusterIPs: Invalid value: …:` when refused.
    pub fn check_requested(&self, ip: Ipv4Addr, taken: &BTreeSet<Ipv4Addr>) -> Result<(), String> {
        if !self.contains(ip) {
            return Err(format!(
                "failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {self}"
            ));
        }
        if taken.contains(&ip) {
            return Err(format!("failed to allocate IP {ip}: provided IP is already allocated"));
        }
        Ok(())
    }
}

/// A Service's `spec.clusterIP` as an address, if it has one (not `None`).
pub fn cluster_ip(service: &Value) -> Option<Ipv4Addr> {
    service.pointer("/spec/clusterIP").and_then(Value::as_str).and_then(|s| s.parse().ok())
}

/// Whether a Service is headless (`clusterIP: None`).
pub fn headless(service: &Value) -> bool {
    service.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None")
}

/// `spec.selector` when it selects anything (a Service without one keeps
/// the Endpoints its user writes).
pub fn selector(service: &Value) -> Option<&Map<String, Value>> {
    service.pointer("/spec/selector").and_then(Value::as_object).filter(|m| !m.is_empty())
}

/// Whether `labels` match every pair of `selector`.
pub fn matches(selector: &Map<String, Value>, labels: Option<&Map<String, Value>>) -> bool {
    selector.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// Fills what kube-apiserver defaults on a Service: `type`,
/// `sessionAffinity`, `internalTrafficPolicy`, the IP families, and each
/// port's `protocol` and `targetPort`. The cluster IP is the caller's:
/// `ip` is the one allocated (`None` for a headless Service).
pub fn default_spec(service: &mut Value, ip: Option<Ipv4Addr>) {
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else { return };
    fn put(spec: &mut Map<String, Value>, k: &str, v: Value) {
        if spec.get(k).is_none_or(|x| x.is_null() || x.as_str() == Some("")) {
            spec.insert(k.to_string(), v);
        }
    }
    put(spec, "type", json!("ClusterIP"));
    put(spec, "sessionAffinity", json!("None"));
    put(spec, "internalTrafficPolicy", json!("Cluster"));
    if let Some(ip) = ip {
        put(spec, "clusterIP", json!(ip.to_string()));
    }
    let shown = spec.get("clusterIP").and_then(Value::as_str).map(str::to_string);
    if let Some(shown) = shown {
        put(spec, "clusterIPs", json!([shown]));
    }
    put(spec, "ipFamilies", json!(["IPv4"]));
    put(spec, "ipFamilyPolicy", json!("SingleStack"));
    for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        let Some(p) = port.as_object_mut() else { continue };
        if p.get("protocol").is_none_or(Value::is_null) {
            p.insert("protocol".into(), json!("TCP"));
        }
        if p.get("targetPort").is_none_or(Value::is_null) {
            if let Some(n) = p.get("port").cloned() {
                p.insert("targetPort".into(), n);
            }
        }
    }
}

/// A headless Service a job controller makes for its pods (Kubeflow's per
/// replica, Volcano's `svc` plugin, mpi-operator's per job), owned by the
/// job; already defaulted, as it is written past the API server.
pub fn headless_for(namespace: &str, name: &str, selector: Value, ports: Value, publish_not_ready: bool) -> Value {
    let mut s = json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": name, "namespace": namespace, "labels": selector.clone()},
        "spec": {"clusterIP": "None", "selector": selector, "ports": ports},
    });
    if publish_not_ready {
        s["spec"]["publishNotReadyAddresses"] = json!(true);
    }
    default_spec(&mut s, None);
    s
}

/// The `kubernetes` Service in `default`: port 443 (`https`) to the API
/// server's `port`, at the range's first address.
pub fn kubernetes(range: &ServiceRange, port: u16) -> Value {
    let mut s = json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": KUBERNETES, "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    });
    default_spec(&mut s, Some(range.first()));
    s
}

/// The Endpoints and EndpointSlice of the `kubernetes` Service: the API
/// server at `address`:`port`.
pub fn kubernetes_endpoints(address: Ipv4Addr, port: u16) -> [Value; 2] {
    let ip = address.to_string();
    [
        json!({"apiVersion": API_VERSION, "kind": ENDPOINTS_KIND,
            "metadata": {"name": KUBERNETES, "namespace": "default",
                "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}),
        json!({"apiVersion": SLICE_API_VERSION, "kind": SLICE_KIND,
            "metadata": {"name": KUBERNETES, "namespace": "default", "labels": {SERVICE_NAME_LABEL: KUBERNETES}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_allocates_free_addresses_and_checks_requested_ones() {
        let range = ServiceRange::default();
        assert_eq!(range.first(), Ipv4Addr::new(10, 96, 0, 1));
        let mut taken = BTreeSet::new();
        taken.insert(Ipv4Addr::new(10, 96, 0, 1));
        assert_eq!(range.allocate(&taken, 0), Some(Ipv4Addr::new(10, 96, 0, 2)), "taken ones skipped");
        let last = Ipv4Addr::new(10, 111, 255, 254);
        assert_eq!(range.allocate(&BTreeSet::new(), (1 << 20) - 3), Some(last));
        assert_eq!(range.allocate(&BTreeSet::new(), (1 << 20) - 2), Some(Ipv4Addr::new(10, 96, 0, 1)), "wraps");
        assert!(range.check_requested(Ipv4Addr::new(10, 96, 0, 9), &taken).is_ok());
        assert_eq!(
            range.check_requested(Ipv4Addr::new(10, 96, 0, 1), &taken),
            Err("failed to allocate IP 10.96.0.1: provided IP is already allocated".to_string())
        );
        let outside = range.check_requested(Ipv4Addr::new(10, 0, 0, 1), &taken).unwrap_err();
        assert!(outside.ends_with("is not in the valid range. The range of valid IPs is 10.96.0.0/12"), "{outside}");
        assert!(range.check_requested(Ipv4Addr::new(10, 96, 0, 0), &taken).is_err(), "the network address");
    }

    #[test]
    fn a_service_is_defaulted_as_kube_apiserver_defaults_it() {
        let mut s = json!({"spec": {"selector": {"app": "web"}, "ports": [{"port": 80}, {"port": 81, "targetPort": "http", "protocol": "UDP"}]}});
        default_spec(&mut s, Some(Ipv4Addr::new(10, 96, 0, 7)));
        assert_eq!(s["spec"]["clusterIP"], "10.96.0.7");
        assert_eq!(s["spec"]["clusterIPs"], json!(["10.96.0.7"]));
        assert_eq!(s["spec"]["type"], "ClusterIP");
        assert_eq!(s["spec"]["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));
        assert_eq!(s["spec"]["ports"][1], json!({"port": 81, "protocol": "UDP", "targetPort": "http"}));
        let h = headless_for("ns", "j", json!({"a": "b"}), json!([]), true);
        assert!(headless(&h) && cluster_ip(&h).is_none());
        assert_eq!(h["spec"]["clusterIPs"], json!(["None"]));
        assert!(selector(&h).is_some_and(|sel| matches(sel, h.pointer("/metadata/labels").and_then(Value::as_object))));
    }
}
