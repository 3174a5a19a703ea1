//! TFJob `TF_CONFIG`: the cluster spec (every replica type except Evaluator,
//! keys sorted as Go marshals a map) and the pod's task.

use super::context::{Ctx, PodEnv};
use crate::expand::PodPlan;

/// Port when no container port is named `tfjob-port`.
pub const DEFAULT_PORT: i32 = 2222;

/// Every pod of the cluster spec listens on its own entry's port: the
/// pods and the port they ask for.
pub(crate) fn listeners<'a>(ctx: &Ctx<'a>) -> Vec<(&'a PodPlan, i32, &'static str)> {
    let port = ctx.named_port("tfjob-port").unwrap_or(DEFAULT_PORT);
    ctx.pods.iter().filter(|p| p.role != "Evaluator").map(|p| (p, port, "containerPort named tfjob-port")).collect()
}

/// `TF_CONFIG` of one pod; peers by `<pod>.<ns>.svc:<port>` or, with
/// addresses asked for and known, `<pod ip>:<port>`; each entry's port is
/// the one chosen for that pod, when one was.
pub(crate) fn tf_config(ctx: &Ctx<'_>, pod: &PodPlan) -> String {
    let wanted = ctx.named_port("tfjob-port").unwrap_or(DEFAULT_PORT);
    let mut types: Vec<(String, Vec<String>)> = Vec::new();
    for role in ctx.job.roles.iter().filter(|r| r.name != "Evaluator") {
        let hosts = ctx
            .pods_of(&role.name)
            .iter()
            .map(|p| {
                let host = ctx.peer(&p.name, format!("{}.{}.svc", p.name, ctx.job.namespace));
                let port = ctx.port_of(&p.name, wanted);
                serde_json::Value::String(format!("{host}:{port}")).to_string()
            })
            .collect();
        types.push((role.name.to_lowercase(), hosts));
    }
    types.sort();
    let cluster: Vec<String> = types
        .iter()
        .map(|(t, hosts)| format!("{}:[{}]", serde_json::Value::String(t.clone()), hosts.join(",")))
        .collect();
    format!(
        r#"{{"cluster":{{{}}},"task":{{"type":{},"index":{}}},"environment":"cloud"}}"#,
        cluster.join(","),
        serde_json::Value::String(pod.role.to_lowercase()),
        pod.index
    )
}

pub(crate) fn static_env(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    env.push("TF_CONFIG", tf_config(ctx, pod));
}

pub(crate) fn placed(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    if ctx.opts.use_addresses || ctx.ports_chosen() {
        env.set("TF_CONFIG", tf_config(ctx, pod));
    }
}
