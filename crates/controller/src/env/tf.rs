//! TFJob `TF_CONFIG`: the cluster spec (every replica type except Evaluator,
//! keys sorted as Go marshals a map) and the pod's task.

use super::{Ctx, PodEnv};
use crate::expand::PodPlan;

/// Port when no container port is named `tfjob-port`.
pub const DEFAULT_PORT: i32 = 2222;

/// `TF_CONFIG` of one pod; peers by `<pod>.<ns>.svc:<port>` or, with
/// addresses asked for and known, `<pod ip>:<port>`.
pub(crate) fn tf_config(ctx: &Ctx<'_>, pod: &PodPlan) -> String {
    let port = ctx.named_port("tfjob-port").unwrap_or(DEFAULT_PORT);
    let mut types: Vec<(String, Vec<String>)> = Vec::new();
    for role in ctx.job.roles.iter().filter(|r| r.name != "Evaluator") {
        let hosts = ctx
            .pods_of(&role.name)
            .iter()
            .map(|p| {
                let host = ctx.peer(&p.name, format!("{}.{}.svc", p.name, ctx.job.namespace));
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
    if ctx.opts.use_addresses {
        env.set("TF_CONFIG", tf_config(ctx, pod));
    }
}
