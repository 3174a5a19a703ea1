//! The env of each pod of a job: what needs no placement ([`static_env`]),
//! what the placement adds ([`placed_env`]), written into the pod plans.

use super::context::{Ctx, EnvOptions, PodEnv};
use super::{ascend, devices, mpi, nccl, pytorch, tf, volcano};
use crate::expand::PodPlan;
use crate::extras::JobExtras;
use crate::placement::Placement;
use ringleader_api::model::{Framework, Job, JobKind};
use std::collections::BTreeMap;

/// Env and files that do not depend on placement, per pod name.
pub fn static_env(job: &Job, extras: &JobExtras, pods: &[PodPlan], opts: &EnvOptions) -> BTreeMap<String, PodEnv> {
    let ctx = Ctx::new(job, extras, pods, opts, None);
    pods.iter().map(|p| (p.name.clone(), one_pod(&ctx, p))).collect()
}

/// Env and files that depend on placement, per pod name; only the values
/// placement adds or changes.
pub fn placed_env(
    job: &Job,
    extras: &JobExtras,
    pods: &[PodPlan],
    placement: &Placement,
    opts: &EnvOptions,
) -> BTreeMap<String, PodEnv> {
    let ctx = Ctx::new(job, extras, pods, opts, Some(placement));
    pods.iter()
        .map(|p| {
            let mut env = PodEnv::default();
            devices::placed(&ctx, p, &mut env);
            match job.kind {
                JobKind::PyTorchJob => pytorch::placed(&ctx, p, &mut env),
                JobKind::TfJob => tf::placed(&ctx, p, &mut env),
                JobKind::MpiJob => mpi::placed(&ctx, p, &mut env),
                JobKind::VolcanoJob => volcano::placed(&ctx, p, &mut env),
                JobKind::AscendJob => ascend::placed(&ctx, p, &mut env),
                JobKind::Deployment | JobKind::BatchJob => {}
            }
            (p.name.clone(), env)
        })
        .collect()
}

/// Appends a pod's env to its containers, as the operators do: acjob pods
/// only in the container named `ascend` (when there is one), other kinds in
/// every container. Files are not part of the template; the node agent
/// writes them.
pub fn inject(job: &Job, plan: &mut PodPlan, env: &PodEnv) {
    let Some(spec) = plan.template.spec.as_mut() else { return };
    let only_ascend = job.kind == JobKind::AscendJob && spec.containers.iter().any(|c| c.name == "ascend");
    for c in spec.containers.iter_mut().filter(|c| !only_ascend || c.name == "ascend") {
        let list = c.env.get_or_insert_with(Vec::new);
        for e in &env.env {
            list.push(k8s_openapi::api::core::v1::EnvVar {
                name: e.name.clone(),
                value: Some(e.value.clone()),
                value_from: None,
            });
        }
    }
}

/// Static env with the placed values merged in.
pub fn pod_env(
    job: &Job,
    extras: &JobExtras,
    pods: &[PodPlan],
    placement: &Placement,
    opts: &EnvOptions,
) -> BTreeMap<String, PodEnv> {
    let mut all = static_env(job, extras, pods, opts);
    for (name, placed) in placed_env(job, extras, pods, placement, opts) {
        all.entry(name).or_default().merge(placed);
    }
    all
}

fn one_pod(ctx: &Ctx<'_>, pod: &PodPlan) -> PodEnv {
    let mut env = PodEnv::default();
    match ctx.job.kind {
        JobKind::PyTorchJob => pytorch::static_env(ctx, pod, &mut env),
        JobKind::TfJob => tf::static_env(ctx, pod, &mut env),
        JobKind::MpiJob => mpi::static_env(ctx, pod, &mut env),
        JobKind::VolcanoJob => volcano::static_env(ctx, pod, &mut env),
        JobKind::AscendJob => match ctx.job.framework {
            Some(Framework::PyTorch) | Some(Framework::MindSpore) | Some(Framework::TensorFlow) => {
                ascend::static_env(ctx, pod, &mut env)
            }
            _ => ascend::common(ctx, pod, &mut env),
        },
        JobKind::Deployment | JobKind::BatchJob => {}
    }
    nccl::static_env(ctx, pod, &mut env);
    env
}
