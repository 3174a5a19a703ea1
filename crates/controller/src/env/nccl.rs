//! NCCL auto-settings for GPU pods (seed 003): with the RDMA network on,
//! `NCCL_IB_DISABLE=0` and the RDMA interface; off, `NCCL_IB_DISABLE=1` and
//! the Ethernet interface. A value the user set wins.

use super::context::{Ctx, PodEnv};
use crate::expand::PodPlan;
use ringleader_api::devices::Family;

fn user_sets(pod: &PodPlan, name: &str) -> bool {
    pod.template
        .spec
        .as_ref()
        .map(|s| s.containers.iter().any(|c| c.env.iter().flatten().any(|e| e.name == name)))
        .unwrap_or(false)
}

pub(crate) fn static_env(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    let Some(net) = &ctx.opts.nccl else { return };
    if ctx.family(pod) != Some(Family::Gpu) {
        return;
    }
    let (ifname, disable) =
        if net.rdma { (net.rdma_interface.as_str(), "0") } else { (net.ethernet_interface.as_str(), "1") };
    if !user_sets(pod, "NCCL_SOCKET_IFNAME") {
        env.push("NCCL_SOCKET_IFNAME", ifname);
    }
    if !user_sets(pod, "NCCL_IB_DISABLE") {
        env.push("NCCL_IB_DISABLE", disable);
    }
}
