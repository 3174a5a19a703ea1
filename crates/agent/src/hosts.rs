//! The hosts file each pod gets (`RINGLEADER_HOSTS`): every bound pod of its
//! namespace under the names Kubernetes DNS would give it — `<pod>`,
//! `<hostname>`, `<hostname>.<subdomain>`, `<hostname>.<subdomain>.<ns>.svc`,
//! `….svc.cluster.local` — mapped to its node's address. An MPIJob hostfile
//! names workers `<job>-worker-0.<job>.<ns>.svc`, which is the third form
//! (the job controller sets hostname = pod name and subdomain = job).

use crate::pod::PodInfo;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A bound pod as far as name resolution cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// Pod uid (a recreated pod replaces its predecessor's entry).
    pub uid: String,
    /// Node it is bound to.
    pub node: String,
    /// `spec.hostname`.
    pub hostname: Option<String>,
    /// `spec.subdomain`.
    pub subdomain: Option<String>,
    /// Its own address on a pod network (else its node's).
    pub ip: Option<String>,
}

/// Every bound pod, by namespace and name, fed by the pod watch.
#[derive(Debug, Default)]
pub struct Directory {
    by_namespace: HashMap<String, BTreeMap<String, HostEntry>>,
}

impl Directory {
    /// Records a pod (bound ones only; an unbound one has no address).
    pub fn upsert(&mut self, info: &PodInfo) {
        let Some(node) = &info.node_name else { return };
        let entry = HostEntry {
            uid: info.uid.clone(),
            node: node.clone(),
            hostname: info.hostname.clone(),
            subdomain: info.subdomain.clone(),
            ip: info.pod_ip.clone(),
        };
        self.by_namespace.entry(info.key.namespace.clone()).or_default().insert(info.key.name.clone(), entry);
    }

    /// The pod-network address recorded for this pod, if any.
    pub fn address_of(&self, info: &PodInfo) -> Option<&str> {
        self.by_namespace.get(&info.key.namespace)?.get(&info.key.name)?.ip.as_deref()
    }

    /// Forgets a deleted pod (unless a newer pod of that name replaced it).
    pub fn remove(&mut self, namespace: &str, name: &str, uid: &str) {
        if let Some(pods) = self.by_namespace.get_mut(namespace) {
            if pods.get(name).is_some_and(|e| e.uid == uid) {
                pods.remove(name);
            }
            if pods.is_empty() {
                self.by_namespace.remove(namespace);
            }
        }
    }

    /// Hosts-file text for a namespace; pods on nodes of unknown address are left out.
    pub fn content(&self, namespace: &str, addresses: &HashMap<String, String>) -> String {
        let pods = self.by_namespace.get(namespace);
        let rows = pods.into_iter().flatten().filter_map(|(name, e)| {
            let addr = e.ip.as_ref().or_else(|| addresses.get(&e.node))?;
            Some((addr.as_str(), names(namespace, name, e.hostname.as_deref(), e.subdomain.as_deref())))
        });
        hosts_text(rows)
    }
}

/// The names a pod answers to.
pub fn names(namespace: &str, pod: &str, hostname: Option<&str>, subdomain: Option<&str>) -> Vec<String> {
    let ns = if namespace.is_empty() { "default" } else { namespace };
    let host = hostname.unwrap_or(pod);
    let mut out: BTreeSet<String> = [pod.to_string(), host.to_string()].into();
    if let Some(sub) = subdomain {
        out.insert(format!("{host}.{sub}"));
        out.insert(format!("{host}.{sub}.{ns}.svc"));
        out.insert(format!("{host}.{sub}.{ns}.svc.cluster.local"));
    }
    // Pod names first: tools that print "the" name of an address take the first.
    let mut v: Vec<String> = vec![pod.to_string()];
    v.extend(out.into_iter().filter(|n| n != pod));
    v
}

/// `/etc/hosts` format: `localhost` first, then one line per pod.
pub fn hosts_text<'a>(rows: impl Iterator<Item = (&'a str, Vec<String>)>) -> String {
    let mut text = String::from("127.0.0.1\tlocalhost\n");
    for (addr, names) in rows {
        text.push_str(addr);
        text.push('\t');
        text.push_str(&names.join(" "));
        text.push('\n');
    }
    text
}

/// The address of `name` in hosts-file `text` (what a pod's resolver helper does).
pub fn resolve<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let addr = fields.next()?;
        fields.any(|n| n == name).then_some(addr)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::pod_key;

    fn info(ns: &str, name: &str, uid: &str, node: Option<&str>, sub: Option<&str>) -> PodInfo {
        PodInfo {
            key: pod_key(ns, name),
            uid: uid.into(),
            node_name: node.map(str::to_string),
            start: true,
            deleting: false,
            grace_seconds: None,
            phase: None,
            hostname: sub.map(|_| name.to_string()),
            subdomain: sub.map(str::to_string),
            pod_ip: None,
        }
    }

    #[test]
    fn mpi_hostfile_names_resolve() {
        let mut d = Directory::default();
        d.upsert(&info("ns", "pi-worker-0", "u0", Some("n-0"), Some("pi")));
        d.upsert(&info("ns", "pi-worker-1", "u1", Some("n-1"), Some("pi")));
        d.upsert(&info("ns", "pending", "u2", None, None));
        d.upsert(&info("other", "x", "u3", Some("n-0"), None));
        let addrs: HashMap<String, String> =
            [("n-0".to_string(), "127.0.1.1".to_string()), ("n-1".to_string(), "127.0.1.2".to_string())].into();
        let text = d.content("ns", &addrs);
        assert_eq!(resolve(&text, "pi-worker-1.pi.ns.svc"), Some("127.0.1.2"));
        assert_eq!(resolve(&text, "pi-worker-0"), Some("127.0.1.1"));
        assert_eq!(resolve(&text, "pi-worker-0.pi"), Some("127.0.1.1"));
        assert_eq!(resolve(&text, "pi-worker-0.pi.ns.svc.cluster.local"), Some("127.0.1.1"));
        assert_eq!(resolve(&text, "localhost"), Some("127.0.0.1"));
        assert_eq!(resolve(&text, "pending"), None);
        assert_eq!(resolve(&text, "x"), None);
        d.remove("ns", "pi-worker-1", "stale-uid");
        assert!(resolve(&d.content("ns", &addrs), "pi-worker-1").is_some());
        d.remove("ns", "pi-worker-1", "u1");
        assert!(resolve(&d.content("ns", &addrs), "pi-worker-1").is_none());
    }

    #[test]
    fn custom_hostname_and_default_namespace() {
        let n = names("", "web-0", Some("db"), Some("svc"));
        assert_eq!(n[0], "web-0");
        assert!(n.contains(&"db.svc.default.svc.cluster.local".to_string()));
        assert_eq!(names("ns", "p", None, None), ["p"]);
    }
}
