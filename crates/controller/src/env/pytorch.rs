//! PyTorchJob env: Kubeflow training-operator (`MASTER_*`, `WORLD_SIZE`,
//! `RANK`, torchrun's `PET_*`, elastic rendezvous) or the AI Hub variant.

use super::context::{Ctx, PodEnv, PyTorchFlavor};
use crate::expand::PodPlan;

/// Port when no container port is named `pytorchjob-port`.
pub const DEFAULT_PORT: i32 = 23456;
/// Rendezvous backend when `elasticPolicy.rdzvBackend` is unset.
pub const DEFAULT_RDZV_BACKEND: &str = "c10d";

fn master<'a>(ctx: &Ctx<'a>) -> Option<&'a PodPlan> {
    ctx.pods.iter().find(|p| p.role == "Master")
}

fn port(ctx: &Ctx<'_>) -> i32 {
    ctx.named_port("pytorchjob-port").unwrap_or(DEFAULT_PORT)
}

/// `nprocPerNode` as written (`auto` when unset) and its value for arithmetic
/// (`auto`, `cpu`, `gpu` count as 1).
fn nproc(ctx: &Ctx<'_>) -> (String, u32) {
    let written = ctx.extras.nproc_per_node.clone().unwrap_or_else(|| "auto".to_string());
    let n = written.parse::<u32>().unwrap_or(1).max(1);
    (written, n)
}

/// The pod that listens for the rendezvous, the port it asks for and where
/// that port comes from: elastic worker 0 on `rdzvPort` (none when the user
/// names `rdzvHost`: that endpoint is theirs), else the master (AI Hub: the
/// first pod without one) on `pytorchjob-port`.
pub(crate) fn listener<'a>(ctx: &Ctx<'a>) -> Option<(&'a PodPlan, i32, &'static str)> {
    if let Some(elastic) = &ctx.extras.pytorch_elastic {
        if elastic.rdzv_host.is_some() {
            return None;
        }
        let w0 = ctx.pods.iter().find(|p| p.role == "Worker" && p.index == 0)?;
        return Some(match elastic.rdzv_port {
            Some(p) => (w0, p, "elasticPolicy.rdzvPort"),
            None => (w0, port(ctx), "containerPort named pytorchjob-port"),
        });
    }
    let m = match ctx.opts.pytorch_flavor {
        PyTorchFlavor::Kubeflow => master(ctx),
        PyTorchFlavor::AiHub => master(ctx).or_else(|| ctx.pods.first()),
    }?;
    Some((m, port(ctx), "containerPort named pytorchjob-port"))
}

pub(crate) fn static_env(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    if ctx.opts.pytorch_flavor == PyTorchFlavor::AiHub {
        return ai_hub(ctx, pod, env);
    }
    env.push("PYTHONUNBUFFERED", "1");
    let (nproc_written, nproc_n) = nproc(ctx);
    if let Some(elastic) = &ctx.extras.pytorch_elastic {
        let endpoint_host = elastic.rdzv_host.clone().unwrap_or_else(|| format!("{}-worker-0", ctx.job.name));
        let rdzv_port = elastic.rdzv_port.unwrap_or(port(ctx));
        let min = elastic.min_replicas.unwrap_or(1).max(0);
        let max = elastic.max_replicas.map(|m| m.max(0) as u32).unwrap_or(ctx.job.total_replicas());
        env.push("PET_RDZV_BACKEND", elastic.rdzv_backend.clone().unwrap_or_else(|| DEFAULT_RDZV_BACKEND.to_string()));
        env.push("PET_RDZV_ENDPOINT", format!("{endpoint_host}:{rdzv_port}"));
        if let Some(id) = &elastic.rdzv_id {
            env.push("PET_RDZV_ID", id.clone());
        }
        if !elastic.rdzv_conf.is_empty() {
            let conf: Vec<String> = elastic.rdzv_conf.iter().map(|c| format!("{}={}", c.key, c.value)).collect();
            env.push("PET_RDZV_CONF", conf.join(","));
        }
        if let Some(r) = elastic.max_restarts {
            env.push("PET_MAX_RESTARTS", r.to_string());
        }
        env.push("PET_NNODES", format!("{min}:{max}"));
        env.push("PET_NPROC_PER_NODE", nproc_written);
        return;
    }
    let Some(master) = master(ctx) else { return };
    let port = port(ctx).to_string();
    let world = (ctx.pods.len() as u32).saturating_mul(nproc_n);
    env.push("MASTER_ADDR", master.name.clone());
    env.push("MASTER_PORT", port.clone());
    env.push("PET_MASTER_ADDR", master.name.clone());
    env.push("PET_MASTER_PORT", port);
    env.push("WORLD_SIZE", world.to_string());
    env.push("RANK", pod.rank.to_string());
    env.push("PET_NODE_RANK", pod.rank.to_string());
    env.push("PET_NPROC_PER_NODE", nproc_written);
    env.push("PET_NNODES", ctx.pods.len().to_string());
}

/// AI Hub (seed 003): `WORLD_SIZE` counts GPUs, `PET_NPROC_PER_NODE` is the
/// pod's GPU count, `RANK` the node index.
fn ai_hub(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    let Some(master) = master(ctx).or_else(|| ctx.pods.first()) else { return };
    let port = port(ctx).to_string();
    let gpus = |p: &PodPlan| ctx.device_count(p).max(1);
    let world: u32 = ctx.pods.iter().map(gpus).sum();
    env.push("MASTER_ADDR", master.name.clone());
    env.push("MASTER_PORT", port.clone());
    env.push("PET_MASTER_ADDR", master.name.clone());
    env.push("PET_MASTER_PORT", port);
    env.push("WORLD_SIZE", world.to_string());
    env.push("RANK", pod.rank.to_string());
    env.push("PET_NPROC_PER_NODE", gpus(pod).to_string());
    env.push("PET_NODE_RANK", pod.rank.to_string());
    env.push("PET_NNODES", ctx.pods.len().to_string());
}

pub(crate) fn placed(ctx: &Ctx<'_>, _pod: &PodPlan, env: &mut PodEnv) {
    let ports = ctx.ports_chosen();
    if !ctx.opts.use_addresses && !ports {
        return;
    }
    let Some((listener, wanted, _)) = listener(ctx) else { return };
    let port = ctx.port_of(&listener.name, wanted);
    if ctx.extras.pytorch_elastic.is_some() {
        let addr = ctx.address(&listener.name).filter(|_| ctx.opts.use_addresses);
        if addr.is_some() || ports {
            let host = addr.unwrap_or_else(|| format!("{}-worker-0", ctx.job.name));
            env.set("PET_RDZV_ENDPOINT", format!("{host}:{port}"));
        }
        return;
    }
    if let Some(addr) = ctx.address(&listener.name).filter(|_| ctx.opts.use_addresses) {
        env.set("MASTER_ADDR", addr.clone());
        env.set("PET_MASTER_ADDR", addr);
    }
    if ports {
        env.set("MASTER_PORT", port.to_string());
        env.set("PET_MASTER_PORT", port.to_string());
    }
}
