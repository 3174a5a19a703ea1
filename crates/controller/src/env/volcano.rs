//! Volcano job plugins: `env` (`VK_TASK_INDEX`, `VC_TASK_INDEX`), `svc`
//! (`/etc/volcano/<task>.host`, `VC_<TASK>_HOSTS`, `VC_<TASK>_NUM`) and
//! `pytorch` (`MASTER_ADDR`, `MASTER_PORT`, `WORLD_SIZE`, `RANK`). `hcclrank`
//! is an annotation set at expansion; `ssh` writes the key pair the caller
//! generated (this crate has no randomness) and an ssh `config`.

use super::context::{Ctx, PodEnv};
use crate::expand::PodPlan;

/// `pytorch` plugin port when no `--port` argument is given.
pub const DEFAULT_PYTORCH_PORT: i32 = 23456;

fn has(ctx: &Ctx<'_>, plugin: &str) -> bool {
    ctx.extras.volcano_plugins.contains_key(plugin)
}

/// `VC_<TASK>_…` spelling of a task name: upper case, `-` → `_`.
pub fn env_task_name(task: &str) -> String {
    task.to_uppercase().replace('-', "_")
}

fn host(ctx: &Ctx<'_>, pod: &PodPlan) -> String {
    ctx.peer(&pod.name, format!("{}.{}", pod.name, ctx.job.name))
}

fn svc(ctx: &Ctx<'_>, env: &mut PodEnv) {
    for role in &ctx.job.roles {
        let hosts: Vec<String> = ctx.pods_of(&role.name).iter().map(|p| host(ctx, p)).collect();
        let task = env_task_name(&role.name);
        env.set(&format!("VC_{task}_HOSTS"), hosts.join(","));
        env.set(&format!("VC_{task}_NUM"), hosts.len().to_string());
        let file: String = hosts.iter().map(|h| format!("{h}\n")).collect();
        env.files.insert(format!("/etc/volcano/{}.host", role.name), file);
    }
}

/// `--name=value` argument of a plugin.
fn arg(ctx: &Ctx<'_>, plugin: &str, name: &str) -> Option<String> {
    let prefix = format!("--{name}=");
    ctx.extras.volcano_plugins.get(plugin)?.iter().find_map(|a| a.strip_prefix(&prefix).map(str::to_string))
}

/// With the `pytorch` plugin the first master pod listens on `--port`; a
/// `--port` that is not a number is left as written, and not chosen for.
pub(crate) fn listener<'a>(ctx: &Ctx<'a>) -> Option<(&'a PodPlan, i32, &'static str)> {
    if !has(ctx, "pytorch") {
        return None;
    }
    let master = arg(ctx, "pytorch", "master").unwrap_or_else(|| "master".to_string());
    let port = match arg(ctx, "pytorch", "port") {
        Some(p) => p.parse::<i32>().ok()?,
        None => DEFAULT_PYTORCH_PORT,
    };
    Some((ctx.pods_of(&master).first().copied()?, port, "plugins.pytorch --port"))
}

fn pytorch(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    let master = arg(ctx, "pytorch", "master").unwrap_or_else(|| "master".to_string());
    let worker = arg(ctx, "pytorch", "worker").unwrap_or_else(|| "worker".to_string());
    let masters = ctx.pods_of(&master);
    let port = match (listener(ctx), arg(ctx, "pytorch", "port")) {
        (Some((m0, wanted, _)), _) => ctx.port_of(&m0.name, wanted).to_string(),
        (None, Some(written)) => written,
        (None, None) => DEFAULT_PYTORCH_PORT.to_string(),
    };
    if pod.role != master && pod.role != worker {
        return;
    }
    let Some(m0) = masters.first() else { return };
    let world = masters.len() + ctx.pods_of(&worker).len();
    let rank = if pod.role == master { pod.index as usize } else { masters.len() + pod.index as usize };
    env.set("MASTER_ADDR", host(ctx, m0));
    env.set("MASTER_PORT", port);
    env.set("WORLD_SIZE", world.to_string());
    env.set("RANK", rank.to_string());
}

/// Where the `ssh` plugin mounts the key pair (`--ssh-key-file-path`).
pub const DEFAULT_SSH_PATH: &str = "/root/.ssh";

/// ssh `config` of the `ssh` plugin: no host-key prompts, every pod by name.
fn ssh_config(ctx: &Ctx<'_>) -> String {
    let mut c = String::from("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n");
    for p in ctx.pods {
        c.push_str(&format!("Host {}\n  HostName {}.{}\n", p.name, p.name, ctx.job.name));
    }
    c
}

pub(crate) fn static_env(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    if let (true, Some(keys)) = (has(ctx, "ssh"), &ctx.opts.ssh) {
        let dir = arg(ctx, "ssh", "ssh-key-file-path").unwrap_or_else(|| DEFAULT_SSH_PATH.to_string());
        super::context::ssh_files(keys, &dir, Some(ssh_config(ctx)), env);
    }
    if has(ctx, "env") {
        env.push("VK_TASK_INDEX", pod.index.to_string());
        env.push("VC_TASK_INDEX", pod.index.to_string());
    }
    if has(ctx, "svc") {
        svc(ctx, env);
    }
    if has(ctx, "pytorch") {
        pytorch(ctx, pod, env);
    }
}

pub(crate) fn placed(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    if ctx.opts.use_addresses && has(ctx, "svc") {
        svc(ctx, env);
    }
    if (ctx.opts.use_addresses || ctx.ports_chosen()) && has(ctx, "pytorch") {
        pytorch(ctx, pod, env);
    }
}
