//! Table-driven golden tests: for each kind and framework, the pods of an
//! example job, the exact env of every pod given a placement, and the files
//! (hostfile, `/etc/volcano/*.host`). Regenerate with `UPDATE_GOLDEN=1`, then
//! check every value by hand against `spec/jobs.md`.

mod common;

use common::{example, golden, inline, placed};
use ringleader_api::Job;
use ringleader_controller::env::{self, EnvOptions, NcclNetwork, PyTorchFlavor};
use ringleader_controller::expand::{expand, ExpandOptions};
use ringleader_controller::extras::MpiImplementation;
use ringleader_controller::placement::Placement;
use ringleader_controller::JobExtras;

/// `## <pod>` then its env (and files), for every pod in rank order.
fn render(job: &Job, extras: &JobExtras, placement: Option<&Placement>, opts: &EnvOptions) -> String {
    let exp = expand(job, extras, &ExpandOptions::default());
    let all = match placement {
        Some(p) => env::pod_env(job, extras, &exp.pods, p, opts),
        None => env::static_env(job, extras, &exp.pods, opts),
    };
    let mut out = String::new();
    for pod in &exp.pods {
        out.push_str(&format!("## {}\n", pod.name));
        out.push_str(&all.get(&pod.name).map(|e| e.render()).unwrap_or_default());
    }
    out
}

/// Pod names, hostnames, labels and annotations the controller adds, and the PodGroup.
fn render_pods(job: &Job, extras: &JobExtras) -> String {
    let exp = expand(job, extras, &ExpandOptions::default());
    let pg = &exp.pod_group;
    let mut out = format!(
        "podgroup {} minMember={:?} queue={:?} priorityClassName={:?} minTaskMember={:?}\n",
        pg.metadata.name.clone().unwrap_or_default(),
        pg.spec.min_member,
        pg.spec.queue,
        pg.spec.priority_class_name,
        pg.spec.min_task_member
    );
    for p in &exp.pods {
        out.push_str(&format!(
            "## {} role={} index={} rank={} hostname={:?} subdomain={:?}\n",
            p.name, p.role, p.index, p.rank, p.hostname, p.subdomain
        ));
        for (k, v) in p.labels() {
            out.push_str(&format!("label {k}={v}\n"));
        }
        for (k, v) in p.annotations() {
            out.push_str(&format!("annotation {k}={v}\n"));
        }
    }
    out
}

/// Where a case's job comes from.
enum Source {
    Example(&'static str),
    Inline(&'static str),
}

/// One row: a job, a placement (or none: static env only), options, and the golden file.
struct Case {
    golden: &'static str,
    source: Source,
    placement: fn() -> Option<Placement>,
    opts: fn() -> EnvOptions,
    extras: fn(&mut JobExtras),
}

fn no_placement() -> Option<Placement> {
    None
}
fn defaults() -> EnvOptions {
    EnvOptions::default()
}
fn addresses() -> EnvOptions {
    EnvOptions { use_addresses: true, ..EnvOptions::default() }
}
fn keep(_: &mut JobExtras) {}

fn two_npu_pods(first: &str, second: &str, host_network: bool) -> Placement {
    let (ip1, ip2) = if host_network { ("10.0.0.1", "10.0.0.2") } else { ("172.16.0.10", "172.16.0.11") };
    Placement { pods: [(first.to_string(), placed(1, ip1, 0, 8)), (second.to_string(), placed(2, ip2, 0, 8))].into() }
}

fn gpu_placement() -> Option<Placement> {
    Some(Placement {
        pods: [
            ("pytorch-ddp-master-0".to_string(), placed(1, "172.16.1.5", 0, 8)),
            ("pytorch-ddp-worker-0".to_string(), placed(2, "172.16.2.5", 0, 8)),
        ]
        .into(),
    })
}

const ELASTIC_PYTORCH: &str = r#"
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: elastic-demo, namespace: default}
spec:
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 3
    rdzvBackend: c10d
    rdzvPort: 29400
    rdzvId: demo
    rdzvConf: [{key: timeout, value: "900"}, {key: join_timeout, value: "300"}]
    maxRestarts: 5
    nProcPerNode: 2
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch:latest
            command: ["torchrun", "train.py"]
            resources: {limits: {nvidia.com/gpu: 2}, requests: {nvidia.com/gpu: 2}}
"#;

const CASES: &[Case] = &[
    Case {
        golden: "ascendjob-pytorch.env",
        source: Source::Example("ascendjob-pytorch.yaml"),
        placement: || Some(two_npu_pods("default-test-pytorch-master-0", "default-test-pytorch-worker-0", false)),
        opts: defaults,
        extras: keep,
    },
    Case {
        golden: "ascendjob-mindspore.env",
        source: Source::Example("ascendjob-mindspore.yaml"),
        placement: || Some(two_npu_pods("default-test-mindspore-scheduler-0", "default-test-mindspore-worker-0", true)),
        opts: defaults,
        extras: keep,
    },
    Case {
        golden: "ascendjob-tensorflow.env",
        source: Source::Example("ascendjob-tensorflow.yaml"),
        placement: || Some(two_npu_pods("default-test-tensorflow-chief-0", "default-test-tensorflow-worker-0", false)),
        opts: || EnvOptions { mindx_server_ip: Some("10.96.0.50".to_string()), ..EnvOptions::default() },
        extras: keep,
    },
    Case {
        golden: "mindie-server.env",
        source: Source::Example("mindie-server.yaml"),
        placement: || Some(two_npu_pods("mindie-server-0-master-0", "mindie-server-0-worker-0", false)),
        opts: defaults,
        extras: keep,
    },
    Case {
        golden: "pytorchjob.static.env",
        source: Source::Example("pytorchjob.yaml"),
        placement: no_placement,
        opts: defaults,
        extras: keep,
    },
    Case {
        golden: "pytorchjob.addresses.env",
        source: Source::Example("pytorchjob.yaml"),
        placement: gpu_placement,
        opts: || EnvOptions { use_addresses: true, nccl: Some(NcclNetwork::ai_hub(true)), ..EnvOptions::default() },
        extras: keep,
    },
    Case {
        golden: "pytorchjob.aihub.env",
        source: Source::Example("pytorchjob.yaml"),
        placement: gpu_placement,
        opts: || EnvOptions {
            pytorch_flavor: PyTorchFlavor::AiHub,
            nccl: Some(NcclNetwork::ai_hub(false)),
            ..EnvOptions::default()
        },
        extras: keep,
    },
    Case {
        golden: "pytorchjob-elastic.env",
        source: Source::Inline(ELASTIC_PYTORCH),
        placement: no_placement,
        opts: defaults,
        extras: keep,
    },
    Case {
        golden: "mpijob.env",
        source: Source::Example("mpijob.yaml"),
        placement: no_placement,
        opts: defaults,
        extras: keep,
    },
    Case {
        golden: "mpijob.intel.addresses.env",
        source: Source::Example("mpijob.yaml"),
        placement: || {
            Some(Placement {
                pods: [
                    ("tensorflow-benchmarks-worker-0".to_string(), placed(1, "172.16.1.7", 0, 8)),
                    ("tensorflow-benchmarks-worker-1".to_string(), placed(2, "172.16.2.7", 0, 8)),
                    ("tensorflow-benchmarks-launcher-0".to_string(), placed(3, "172.16.3.7", 0, 0)),
                ]
                .into(),
            })
        },
        opts: addresses,
        extras: |e| e.mpi_implementation = MpiImplementation::Intel,
    },
    Case {
        golden: "tfjob.env",
        source: Source::Example("tfjob.yaml"),
        placement: no_placement,
        opts: defaults,
        extras: keep,
    },
    Case {
        golden: "vcjob-plugins.env",
        source: Source::Inline(VCJOB_PLUGINS),
        placement: vc_placement,
        opts: defaults,
        extras: keep,
    },
    Case {
        golden: "vcjob-plugins.addresses.env",
        source: Source::Inline(VCJOB_PLUGINS),
        placement: vc_placement,
        opts: addresses,
        extras: keep,
    },
    Case {
        golden: "deployment-inference.env",
        source: Source::Example("deployment-inference.yaml"),
        placement: || {
            Some(Placement { pods: [("resnetinfer1-1-0".to_string(), placed(4, "172.16.4.2", 3, 1))].into() })
        },
        opts: defaults,
        extras: keep,
    },
];

/// Every kind and framework: the exact env and files of every pod.
#[test]
fn env_of_every_pod_per_kind_and_framework() {
    for case in CASES {
        let (job, mut extras) = match case.source {
            Source::Example(f) => example(f),
            Source::Inline(y) => inline(y),
        };
        (case.extras)(&mut extras);
        golden(case.golden, &render(&job, &extras, (case.placement)().as_ref(), &(case.opts)()));
    }
}

/// A job's own env convention and NCCL settings (its annotations, from a
/// platform TrainingJob) give the env the same cluster-wide flags give.
#[test]
fn a_jobs_own_env_settings_override_the_clusters() {
    let (job, extras) = example("pytorchjob.yaml");
    let cluster = EnvOptions {
        pytorch_flavor: PyTorchFlavor::AiHub,
        nccl: Some(NcclNetwork::ai_hub(false)),
        ..EnvOptions::default()
    };
    let flags = render(&job, &extras, gpu_placement().as_ref(), &cluster);
    let mut own = job.clone();
    own.annotations.insert(env::ENV_VARIANT_ANNOTATION.into(), "aihub".into());
    own.annotations.insert(env::NCCL_AUTO_ANNOTATION.into(), "ethernet".into());
    assert_eq!(render(&own, &extras, gpu_placement().as_ref(), &defaults()), flags);
    assert!(flags.contains("NCCL_SOCKET_IFNAME=en"), "{flags}");
    // `off` takes the cluster's NCCL settings away from this job.
    own.annotations.insert(env::NCCL_AUTO_ANNOTATION.into(), "off".into());
    let off = render(&own, &extras, gpu_placement().as_ref(), &cluster);
    assert!(!off.contains("NCCL_SOCKET_IFNAME"), "{off}");
}

/// Pod names, labels, annotations and PodGroups per kind.
#[test]
fn pods_and_pod_groups_per_kind() {
    let cases: [(&str, Source); 6] = [
        ("ascendjob-pytorch.pods", Source::Example("ascendjob-pytorch.yaml")),
        ("pytorchjob.pods", Source::Example("pytorchjob.yaml")),
        ("mpijob.pods", Source::Example("mpijob.yaml")),
        ("tfjob.pods", Source::Example("tfjob.yaml")),
        ("vcjob-plugins.pods", Source::Inline(VCJOB_PLUGINS)),
        ("batch-job.pods", Source::Example("batch-job.yaml")),
    ];
    for (name, source) in cases {
        let (job, extras) = match source {
            Source::Example(f) => example(f),
            Source::Inline(y) => inline(y),
        };
        golden(name, &render_pods(&job, &extras));
    }
}

fn vc_placement() -> Option<Placement> {
    Some(Placement {
        pods: [
            ("vc-ddp-master-0".to_string(), placed(1, "172.16.1.9", 0, 8)),
            ("vc-ddp-worker-0".to_string(), placed(2, "172.16.2.9", 0, 8)),
            ("vc-ddp-worker-1".to_string(), placed(3, "172.16.3.9", 0, 8)),
        ]
        .into(),
    })
}

const VCJOB_PLUGINS: &str = r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: vc-ddp
  namespace: team-a
  labels: {ring-controller.atlas: ascend-910b}
spec:
  minAvailable: 3
  schedulerName: volcano
  queue: research
  priorityClassName: high
  plugins:
    env: []
    svc: []
    pytorch: ["--master=master", "--worker=worker", "--port=23457"]
    hcclrank: []
  tasks:
  - name: master
    replicas: 1
    template:
      metadata: {labels: {ring-controller.atlas: ascend-910b}}
      spec:
        restartPolicy: OnFailure
        nodeSelector: {accelerator-type: module-910b-8}
        containers:
        - name: torch
          image: torch:latest
          resources: {limits: {huawei.com/Ascend910: 8}, requests: {huawei.com/Ascend910: 8}}
  - name: worker
    replicas: 2
    minAvailable: 2
    template:
      metadata: {labels: {ring-controller.atlas: ascend-910b}}
      spec:
        restartPolicy: OnFailure
        nodeSelector: {accelerator-type: module-910b-8}
        containers:
        - name: torch
          image: torch:latest
          resources: {limits: {huawei.com/Ascend910: 8}, requests: {huawei.com/Ascend910: 8}}
"#;

#[test]
fn ssh_key_pair_files_for_mpi_and_the_volcano_ssh_plugin() {
    let keys = env::SshKeys { private_key: "PRIVATE\n".into(), public_key: "ssh-rsa AAA test\n".into() };
    let opts = EnvOptions { ssh: Some(keys), ..EnvOptions::default() };
    let (job, extras) = example("mpijob.yaml");
    let exp = expand(&job, &extras, &ExpandOptions::default());
    let all = env::static_env(&job, &extras, &exp.pods, &opts);
    for pod in &exp.pods {
        let files = &all[&pod.name].files;
        assert_eq!(files.get("/root/.ssh/id_rsa").map(String::as_str), Some("PRIVATE\n"), "{}", pod.name);
        assert_eq!(files.get("/root/.ssh/authorized_keys").map(String::as_str), Some("ssh-rsa AAA test\n"));
    }
    let (job, extras) = inline(&VCJOB_PLUGINS.replace("    env: []", "    env: []\n    ssh: []"));
    let exp = expand(&job, &extras, &ExpandOptions::default());
    let all = env::static_env(&job, &extras, &exp.pods, &opts);
    let config = all["vc-ddp-worker-1"].files.get("/root/.ssh/config").cloned().unwrap_or_default();
    assert_eq!(
        config,
        "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n\
         Host vc-ddp-master-0\n  HostName vc-ddp-master-0.vc-ddp\n\
         Host vc-ddp-worker-0\n  HostName vc-ddp-worker-0.vc-ddp\n\
         Host vc-ddp-worker-1\n  HostName vc-ddp-worker-1.vc-ddp\n"
    );
}

#[test]
fn created_pods_carry_their_static_env() {
    use ringleader_controller::lifecycle::{reconcile, Action, JobState, Observed};
    let (job, extras) = example("ascendjob-pytorch.yaml");
    let state = JobState::new(job, extras);
    let actions = reconcile(&state, &Observed::default(), 0);
    let pods: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            Action::CreatePod(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(pods.len(), 2);
    let spec = pods[1].template.spec.as_ref().expect("spec");
    let env: Vec<(String, String)> = spec.containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect();
    // The user's ASCEND_VISIBLE_DEVICES (downward API) first, then the operator's.
    assert_eq!(env[0].0, "ASCEND_VISIBLE_DEVICES");
    assert!(env.contains(&("RANK".to_string(), "1".to_string())));
    assert!(env.contains(&("WORLD_SIZE".to_string(), "16".to_string())));

    let (job, extras) = example("mpijob.yaml");
    let actions = reconcile(&JobState::new(job, extras), &Observed::default(), 0);
    let hostfile = actions.iter().find_map(|a| match a {
        Action::WriteConfigMap(cm) if cm.metadata.name.as_deref() == Some("tensorflow-benchmarks-config") => {
            cm.data.clone().and_then(|d| d.get("hostfile").cloned())
        }
        _ => None,
    });
    assert_eq!(
        hostfile.as_deref(),
        Some(
            "tensorflow-benchmarks-worker-0.tensorflow-benchmarks.default.svc slots=8\n\
             tensorflow-benchmarks-worker-1.tensorflow-benchmarks.default.svc slots=8\n"
        )
    );
}
