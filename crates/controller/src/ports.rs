//! Rendezvous ports chosen per address. Pods of one node share its address,
//! so two pods listening on one port there collide (a TFJob chief and
//! worker both on `127.0.1.1:2222`, two PyTorchJob masters on 23456).
//!
//! [`listeners`] names the pods of a job that listen on a rendezvous port
//! and the port each asks for (the declared `pytorchjob-port`,
//! `tfjob-port`, `ascendjob-port`, `rdzvPort`, the Volcano `pytorch`
//! plugin's `--port`, else the kind's default). [`assign`] gives each a
//! port free on its address: the asked-for one when no other listener
//! there holds it, else the lowest free port of [`FALLBACK_PORTS`]. The
//! choice goes into [`PodPlacement::port`](crate::placement::PodPlacement),
//! which every env value naming that pod's endpoint reads (`MASTER_PORT`,
//! `PET_MASTER_PORT`, `PET_RDZV_ENDPOINT`, `TF_CONFIG`, `MS_SCHED_PORT`,
//! `CM_CHIEF_PORT`), so the env says where the pod really listens.
//!
//! The caller says what is taken ([`PortsInUse`], from the pods that hold
//! ports) and records the result on the pods; the manager keeps it in the
//! annotation [`ANNOTATION`], and a port is free again once its pod ends.
//! MPI hostfiles and hccl rank tables name no ports, so they need nothing.

use crate::env::{self, Ctx, EnvOptions};
use crate::expand::PodPlan;
use crate::extras::JobExtras;
use crate::placement::Placement;
use ringleader_api::model::{Job, JobKind};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

/// Pod annotation holding the ports the controller gave the pod on its
/// address, comma-separated (today at most one: its rendezvous port; empty
/// when it listens on none).
pub const ANNOTATION: &str = "ringleader.io/ports";

/// Where a listener goes when the port it asks for is taken on its
/// address: below Linux's ephemeral range (32768–60999), so it never meets
/// a port the kernel hands out for `bind(0)` or an outgoing connection, and
/// clear of the frameworks' defaults (2222, 23456, 29400, 29500).
pub const FALLBACK_PORTS: RangeInclusive<u16> = 28000..=28999;

/// Container port names that stand for a job's rendezvous port: a pod
/// given a port by [`assign`] listens there instead.
pub const RENDEZVOUS_PORT_NAMES: &[&str] = &["pytorchjob-port", "tfjob-port", "ascendjob-port"];

/// Ports held on each address (pod address → ports).
pub type PortsInUse = BTreeMap<String, BTreeSet<u16>>;

/// A pod that listens on a rendezvous port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Pod name.
    pub pod: String,
    /// The port it asks for.
    pub wanted: u16,
}

/// Why ports could not be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    /// A declared port is not a TCP port.
    #[error("job {job}: {field} is {value}, not a port (1-65535)")]
    Invalid {
        /// The job.
        job: String,
        /// Where the value was declared.
        field: &'static str,
        /// The value.
        value: i32,
    },
    /// Every port of [`FALLBACK_PORTS`] is held on the address.
    #[error("pod {pod}: port {wanted} and every port of {first}-{last} are in use on {address}")]
    Exhausted {
        /// The pod that found none.
        pod: String,
        /// Its address.
        address: String,
        /// What it asked for.
        wanted: u16,
        /// First port of the fallback range.
        first: u16,
        /// Last port of the fallback range.
        last: u16,
    },
}

/// The pods of a job that listen on a rendezvous port, in expansion
/// order, each with the port it asks for.
pub fn listeners(
    job: &Job,
    extras: &JobExtras,
    pods: &[PodPlan],
    opts: &EnvOptions,
) -> Result<Vec<Listener>, PortError> {
    let ctx = Ctx::new(job, extras, pods, opts, None);
    let found: Vec<(&PodPlan, i32, &'static str)> = match job.kind {
        JobKind::PyTorchJob => env::pytorch::listener(&ctx).into_iter().collect(),
        JobKind::TfJob => env::tf::listeners(&ctx),
        JobKind::AscendJob => env::ascend::listener(&ctx).into_iter().collect(),
        JobKind::VolcanoJob => env::volcano::listener(&ctx).into_iter().collect(),
        JobKind::MpiJob | JobKind::Deployment | JobKind::BatchJob => Vec::new(),
    };
    found
        .into_iter()
        .map(|(pod, wanted, field)| {
            let port = u16::try_from(wanted).ok().filter(|p| *p != 0);
            let wanted = port.ok_or(PortError::Invalid { job: job.name.clone(), field, value: wanted })?;
            Ok(Listener { pod: pod.name.clone(), wanted })
        })
        .collect()
}

/// Sets [`PodPlacement::port`](crate::placement::PodPlacement) for every
/// placed listener that has none: the asked-for port when neither
/// `in_use` nor another listener of this job holds it on the pod's
/// address, else the lowest free port of [`FALLBACK_PORTS`]. A port
/// already set (a running pod's, read back by the caller) is kept. Pods
/// not placed yet are left alone. Deterministic: listeners in order.
pub fn assign(listeners: &[Listener], placement: &mut Placement, in_use: &PortsInUse) -> Result<(), PortError> {
    let mut taken: PortsInUse = BTreeMap::new();
    for l in listeners {
        if let Some((addr, Some(port))) = placement.pod(&l.pod).map(|p| (p.pod_ip.clone(), p.port)) {
            taken.entry(addr).or_default().insert(port);
        }
    }
    for l in listeners {
        let Some(p) = placement.pods.get_mut(&l.pod) else { continue };
        if p.port.is_some() {
            continue;
        }
        let busy = |port: &u16| {
            in_use.get(&p.pod_ip).is_some_and(|s| s.contains(port))
                || taken.get(&p.pod_ip).is_some_and(|s| s.contains(port))
        };
        let chosen = std::iter::once(l.wanted).chain(FALLBACK_PORTS).find(|port| !busy(port)).ok_or_else(|| {
            PortError::Exhausted {
                pod: l.pod.clone(),
                address: p.pod_ip.clone(),
                wanted: l.wanted,
                first: *FALLBACK_PORTS.start(),
                last: *FALLBACK_PORTS.end(),
            }
        })?;
        taken.entry(p.pod_ip.clone()).or_default().insert(chosen);
        p.port = Some(chosen);
    }
    Ok(())
}

/// [`listeners`] then [`assign`]: the placement with every listener's port.
pub fn choose(
    job: &Job,
    extras: &JobExtras,
    pods: &[PodPlan],
    opts: &EnvOptions,
    placement: &mut Placement,
    in_use: &PortsInUse,
) -> Result<(), PortError> {
    assign(&listeners(job, extras, pods, opts)?, placement, in_use)
}

/// The value of [`ANNOTATION`] for a pod: its chosen port, or empty.
pub fn annotation_value(placement: &Placement, pod: &str) -> String {
    placement.pod(pod).and_then(|p| p.port).map(|p| p.to_string()).unwrap_or_default()
}

/// Ports of an [`ANNOTATION`] value; entries that are not ports are
/// skipped (the annotation is the controller's, but a pod may be hand-made).
pub fn parse_annotation(value: &str) -> Vec<u16> {
    value.split(',').filter_map(|p| p.trim().parse::<u16>().ok()).filter(|p| *p != 0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::PodPlacement;

    fn at(addr: &str) -> PodPlacement {
        PodPlacement { node: "n".into(), host_ip: addr.into(), pod_ip: addr.into(), ..PodPlacement::default() }
    }

    fn listener(pod: &str, wanted: u16) -> Listener {
        Listener { pod: pod.into(), wanted }
    }

    #[test]
    fn kept_ports_stay_and_new_ones_avoid_them_and_the_range_runs_out_with_an_error() {
        let mut pl = Placement { pods: [("a".to_string(), at("10.0.0.1")), ("b".to_string(), at("10.0.0.1"))].into() };
        if let Some(b) = pl.pods.get_mut("b") {
            b.port = Some(2222);
        }
        assign(&[listener("a", 2222), listener("b", 2222)], &mut pl, &PortsInUse::new()).expect("ports");
        assert_eq!((pl.pods["a"].port, pl.pods["b"].port), (Some(28000), Some(2222)));

        let all: BTreeSet<u16> = FALLBACK_PORTS.chain([2222]).collect();
        let mut pl = Placement { pods: [("c".to_string(), at("10.0.0.1"))].into() };
        let full = PortsInUse::from([("10.0.0.1".to_string(), all)]);
        let err = assign(&[listener("c", 2222)], &mut pl, &full).expect_err("none free");
        assert_eq!(err.to_string(), "pod c: port 2222 and every port of 28000-28999 are in use on 10.0.0.1");
        assert_eq!(parse_annotation("2222, x,0,28001"), vec![2222, 28001]);
    }
}
