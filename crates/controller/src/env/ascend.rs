//! Ascend Operator env for acjob pods, in the operator's order: common
//! (`MINDX_TASK_ID`, `MINDX_SERVER_IP`, `HostNetwork`,
//! `HCCL_LOGIC_SUPERPOD_ID`) then per framework — PyTorch (`LOCAL_WORLD_SIZE`,
//! `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`, `RANK`),
//! MindSpore (`MS_*`), TensorFlow (`CM_*`). Counts are NPUs: `WORLD_SIZE` =
//! chips per pod × pods with chips. Peers are pod addresses in the operator;
//! before placement the pod name stands in. `HCCL_IF_IP` (host IP) only with
//! `hostNetwork: true`.

use super::context::{Ctx, PodEnv};
use crate::expand::PodPlan;
use ringleader_api::model::Framework;

/// Port when no container port is named `ascendjob-port`.
pub const DEFAULT_PORT: i32 = 2222;

fn coordinator<'a>(ctx: &Ctx<'a>) -> Option<&'a PodPlan> {
    let role = match ctx.job.framework {
        Some(Framework::MindSpore) => "Scheduler",
        Some(Framework::TensorFlow) => "Chief",
        _ => "Master",
    };
    ctx.pods.iter().find(|p| p.role == role)
}

/// The coordinator listens on the port its framework's env names
/// (`MASTER_PORT`, `MS_SCHED_PORT`, `CM_CHIEF_PORT`); jobs without one of
/// those frameworks name no port.
pub(crate) fn listener<'a>(ctx: &Ctx<'a>) -> Option<(&'a PodPlan, i32, &'static str)> {
    port_var(ctx)?;
    let port = ctx.named_port("ascendjob-port").unwrap_or(DEFAULT_PORT);
    Some((coordinator(ctx)?, port, "containerPort named ascendjob-port"))
}

fn port_var(ctx: &Ctx<'_>) -> Option<&'static str> {
    match ctx.job.framework {
        Some(Framework::PyTorch) => Some("MASTER_PORT"),
        Some(Framework::MindSpore) => Some("MS_SCHED_PORT"),
        Some(Framework::TensorFlow) => Some("CM_CHIEF_PORT"),
        _ => None,
    }
}

fn is_mindie(ctx: &Ctx<'_>) -> bool {
    ctx.job.labels.get("app").is_some_and(|a| a.starts_with("mindie-ms-"))
}

/// `HCCL_LOGIC_SUPERPOD_ID` = pod rank × chips per pod / `sp-block`
/// (`sp-block` defaults to the job's chip count, giving 0).
fn logic_super_pod_id(ctx: &Ctx<'_>, pod: &PodPlan) -> u32 {
    let chips = ctx.device_count(pod);
    let total = chips.saturating_mul(ctx.device_pods());
    let block = ctx.job.topology.sp_block.unwrap_or(total);
    if block == 0 {
        return 0;
    }
    pod.rank.saturating_mul(chips) / block
}

pub(crate) fn common(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    let task_id = if is_mindie(ctx) {
        ctx.job.labels.get("jobID").cloned().unwrap_or_default()
    } else {
        ctx.extras.uid.clone().unwrap_or_else(|| ctx.job.name.clone())
    };
    env.push("MINDX_TASK_ID", task_id);
    if is_mindie(ctx) {
        env.push("APP_TYPE", ctx.job.labels.get("app").cloned().unwrap_or_default());
    }
    if let Some(ip) = &ctx.opts.mindx_server_ip {
        env.push("MINDX_SERVER_IP", ip.clone());
    }
    env.push("HostNetwork", ctx.host_network(pod).to_string());
    if ctx.device_count(pod) > 0 {
        env.push("HCCL_LOGIC_SUPERPOD_ID", logic_super_pod_id(ctx, pod).to_string());
    }
}

pub(crate) fn static_env(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    common(ctx, pod, env);
    let chips = ctx.device_count(pod);
    let world = chips.saturating_mul(ctx.device_pods()).to_string();
    let port = ctx.named_port("ascendjob-port").unwrap_or(DEFAULT_PORT).to_string();
    let coord = coordinator(ctx).map(|p| p.name.clone()).unwrap_or_default();
    match ctx.job.framework {
        Some(Framework::PyTorch) => {
            env.push("LOCAL_WORLD_SIZE", chips.to_string());
            env.push("WORLD_SIZE", world);
            env.push("LOCAL_RANK", (0..chips).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
            env.push("MASTER_ADDR", coord);
            env.push("MASTER_PORT", port);
            env.push("RANK", pod.rank.to_string());
        }
        Some(Framework::MindSpore) => {
            env.push("MS_SCHED_HOST", coord);
            env.push("MS_LOCAL_WORKER", chips.to_string());
            env.push("MS_WORKER_NUM", world);
            env.push("MS_NODE_RANK", pod.rank.to_string());
            env.push("MS_SCHED_PORT", port);
            env.push("MS_SERVER_NUM", "0");
            env.push("MS_ROLE", if pod.role == "Scheduler" { "MS_SCHED" } else { "MS_WORKER" });
        }
        Some(Framework::TensorFlow) => {
            env.push("CM_CHIEF_IP", coord);
            env.push("CM_LOCAL_WORKER", chips.to_string());
            env.push("CM_WORKER_SIZE", world);
            env.push("CM_CHIEF_PORT", port);
            env.push("CM_RANK", pod.rank.to_string());
            env.push("CM_CHIEF_DEVICE", "0");
        }
        _ => {}
    }
}

pub(crate) fn placed(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    let Some(placement) = ctx.placement else { return };
    let coord_ip = coordinator(ctx).and_then(|c| ctx.address(&c.name));
    if let Some(ip) = coord_ip {
        let var = match ctx.job.framework {
            Some(Framework::PyTorch) => Some("MASTER_ADDR"),
            Some(Framework::MindSpore) => Some("MS_SCHED_HOST"),
            Some(Framework::TensorFlow) => Some("CM_CHIEF_IP"),
            _ => None,
        };
        if let Some(var) = var {
            env.set(var, ip);
        }
    }
    if let (Some((coord, wanted, _)), Some(var)) = (listener(ctx), port_var(ctx)) {
        if placement.pod(&coord.name).is_some_and(|c| c.port.is_some()) {
            env.set(var, ctx.port_of(&coord.name, wanted).to_string());
        }
    }
    let Some(me) = placement.pod(&pod.name) else { return };
    if ctx.job.framework == Some(Framework::TensorFlow) {
        env.set("CM_WORKER_IP", me.pod_ip.clone());
    }
    if ctx.host_network(pod) {
        env.set("HCCL_IF_IP", me.host_ip.clone());
    }
}
