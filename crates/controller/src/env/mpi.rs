//! MPIJob (mpi-operator v2beta1): the hostfile in ConfigMap `<job>-config`
//! mounted at `/etc/mpi/hostfile` on the launcher, the launcher's
//! OpenMPI / Intel MPI / MPICH env, and `K_MPI_JOB_ROLE` everywhere.

use super::context::{Ctx, PodEnv};
use crate::expand::PodPlan;
use crate::extras::MpiImplementation;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Where the launcher sees the hostfile.
pub const HOSTFILE_PATH: &str = "/etc/mpi/hostfile";

/// The hostfile of an MPIJob (see [`hostfile_config_map`]); pod addresses
/// from `placement` when `opts.use_addresses`.
pub fn hostfile_for(
    job: &ringleader_api::Job,
    extras: &crate::JobExtras,
    pods: &[PodPlan],
    placement: Option<&crate::Placement>,
    opts: &super::EnvOptions,
) -> String {
    hostfile(&Ctx::new(job, extras, pods, opts, placement))
}

/// The hostfile: one line per worker, `<job>-worker-<i>.<job>.<ns>.svc
/// slots=N` (Intel, MPICH: `<host>:N`); pod addresses instead of names when
/// asked for and known.
pub(crate) fn hostfile(ctx: &Ctx<'_>) -> String {
    let slots = ctx.extras.slots_per_worker;
    ctx.pods_of("Worker")
        .iter()
        .map(|p| {
            let host = ctx.peer(&p.name, format!("{}.{}.{}.svc", p.name, ctx.job.name, ctx.job.namespace));
            match ctx.extras.mpi_implementation {
                MpiImplementation::OpenMpi => format!("{host} slots={slots}\n"),
                MpiImplementation::Intel | MpiImplementation::Mpich => format!("{host}:{slots}\n"),
            }
        })
        .collect()
}

/// ConfigMap `<job>-config` carrying the hostfile under key `hostfile`.
pub fn hostfile_config_map(namespace: &str, job: &str, hostfile: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{job}-config")),
            namespace: Some(namespace.to_string()),
            labels: Some([("app".to_string(), job.to_string())].into()),
            ..ObjectMeta::default()
        },
        data: Some([("hostfile".to_string(), hostfile.to_string())].into()),
        ..ConfigMap::default()
    }
}

/// Default mount path of the shared SSH key pair (`sshAuthMountPath`).
pub const DEFAULT_SSH_PATH: &str = "/root/.ssh";

pub(crate) fn static_env(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    if let Some(keys) = &ctx.opts.ssh {
        let dir = ctx.extras.ssh_auth_mount_path.as_deref().unwrap_or(DEFAULT_SSH_PATH);
        super::context::ssh_files(keys, dir, None, env);
    }
    if pod.role != "Launcher" {
        env.push("K_MPI_JOB_ROLE", "worker");
        return;
    }
    let slots = ctx.extras.slots_per_worker.to_string();
    match ctx.extras.mpi_implementation {
        MpiImplementation::OpenMpi => {
            env.push("OMPI_MCA_orte_default_hostfile", HOSTFILE_PATH);
            env.push("OMPI_MCA_orte_keep_fqdn_hostnames", "true");
            env.push("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10");
            env.push("OMPI_MCA_orte_set_default_slots", slots);
        }
        MpiImplementation::Intel => {
            env.push("I_MPI_HYDRA_HOST_FILE", HOSTFILE_PATH);
            env.push("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10");
        }
        MpiImplementation::Mpich => {
            env.push("HYDRA_HOST_FILE", HOSTFILE_PATH);
            env.push("HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10");
        }
    }
    env.push("K_MPI_JOB_ROLE", "launcher");
    // AI Hub: only the launcher has the hostfile.
    env.files.insert(HOSTFILE_PATH.to_string(), hostfile(ctx));
}

pub(crate) fn placed(ctx: &Ctx<'_>, pod: &PodPlan, env: &mut PodEnv) {
    if ctx.opts.use_addresses && pod.role == "Launcher" {
        env.files.insert(HOSTFILE_PATH.to_string(), hostfile(ctx));
    }
}
