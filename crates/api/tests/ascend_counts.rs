//! Chips per pod on the A3 and 300T servers, as MindCluster's current plugin
//! checks them (issue 18; docs/mindcluster-differences.md): every job kind is
//! tried with single-pod and distributed shapes, and each rejection names the
//! resource field, the value and what is allowed.

use ringleader_api::check_documents;
use ringleader_api::document::parse_str;

#[derive(Clone, Copy, Debug)]
enum Kind {
    VcJob,
    Deployment,
    AscendJob,
}

const KINDS: [Kind; 3] = [Kind::VcJob, Kind::Deployment, Kind::AscendJob];

/// A job of `kind` with `replicas` NPU pods of `count` chips, on servers
/// chosen by `accelerator-type: selector`.
fn job(kind: Kind, selector: &str, ring: &str, replicas: u32, count: u32) -> String {
    let resources = format!(
        "resources: {{requests: {{huawei.com/Ascend910: {count}}}, limits: {{huawei.com/Ascend910: {count}}}}}"
    );
    match kind {
        Kind::VcJob => format!(
            r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: j, labels: {{ring-controller.atlas: {ring}}}}}
spec:
  schedulerName: volcano
  minAvailable: {replicas}
  queue: default
  tasks:
  - name: worker
    replicas: {replicas}
    template:
      metadata: {{labels: {{ring-controller.atlas: {ring}}}}}
      spec:
        nodeSelector: {{accelerator-type: {selector}}}
        restartPolicy: OnFailure
        containers:
        - name: ascend
          image: pt:1
          {resources}
"#
        ),
        Kind::Deployment => format!(
            r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: j, labels: {{ring-controller.atlas: {ring}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: j}}}}
  template:
    metadata: {{labels: {{app: j, ring-controller.atlas: {ring}}}}}
    spec:
      nodeSelector: {{accelerator-type: {selector}}}
      containers:
      - name: infer
        image: infer:1
        {resources}
"#
        ),
        Kind::AscendJob => format!(
            r#"
apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata: {{name: j, labels: {{framework: pytorch, ring-controller.atlas: {ring}}}}}
spec:
  schedulerName: volcano
  replicaSpecs:
    Worker:
      replicas: {replicas}
      template:
        metadata: {{labels: {{ring-controller.atlas: {ring}}}}}
        spec:
          nodeSelector: {{accelerator-type: {selector}}}
          containers:
          - name: ascend
            image: pt:1
            ports: [{{name: ascendjob-port, containerPort: 2222}}]
            {resources}
"#
        ),
    }
}

fn resource_field(kind: Kind) -> &'static str {
    match kind {
        Kind::VcJob => r#"spec.tasks[0].template.spec.containers[0].resources.limits["huawei.com/Ascend910"]"#,
        Kind::Deployment => r#"spec.template.spec.containers[0].resources.limits["huawei.com/Ascend910"]"#,
        Kind::AscendJob => {
            r#"spec.replicaSpecs.Worker.template.spec.containers[0].resources.limits["huawei.com/Ascend910"]"#
        }
    }
}

/// The errors of the one document, as (field, value, message).
fn errors(text: &str) -> Vec<(String, String, String)> {
    let docs = parse_str("inline", text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let reports = check_documents(&docs);
    assert_eq!(reports.len(), 1);
    reports[0].errors.iter().map(|e| (e.field.clone(), e.value.clone(), e.message.clone())).collect()
}

/// The chip counts in 0..=18 that `kind` may request per pod with `replicas` pods.
fn accepted(kind: Kind, selector: &str, ring: &str, replicas: u32) -> Vec<u32> {
    (0..=18).filter(|&c| errors(&job(kind, selector, ring, replicas, c)).is_empty()).collect()
}

#[test]
fn a3_single_pod_jobs_may_take_one_die_or_whole_cards() {
    for kind in KINDS {
        assert_eq!(accepted(kind, "module-a3-16", "ascend-910b", 1), vec![1, 2, 4, 6, 8, 10, 12, 14, 16], "{kind:?}");
    }
}

#[test]
fn a3_distributed_pods_take_whole_cards_for_every_job_kind() {
    // The seeds allowed only 16 per pod for vcjob and Deployment; MindCluster's module910a3x16 allows 2n ≤ 16.
    for kind in KINDS {
        for replicas in [2, 3] {
            assert_eq!(
                accepted(kind, "module-a3-16", "ascend-910b", replicas),
                vec![2, 4, 6, 8, 10, 12, 14, 16],
                "{kind:?} × {replicas}"
            );
        }
    }
}

#[test]
fn a3_rejections_name_the_field_the_value_and_the_rule() {
    for kind in KINDS {
        let got = errors(&job(kind, "module-a3-16", "ascend-910b", 2, 1));
        assert_eq!(
            got,
            vec![(
                resource_field(kind).to_string(),
                "1".to_string(),
                "chips per pod allowed: 2, 4, ..., 16 per pod (A3: whole cards of 2 dies; 1 die only in a single-pod job)"
                    .to_string()
            )],
            "{kind:?}"
        );
        let got = errors(&job(kind, "module-a3-16", "ascend-910b", 1, 3));
        assert_eq!(
            got,
            vec![(
                resource_field(kind).to_string(),
                "3".to_string(),
                "chips per pod allowed: 1, or 2, 4, ..., 16 (A3: one die, or whole cards of 2 dies)".to_string()
            )],
            "{kind:?}"
        );
    }
}

#[test]
fn the_schedule_policy_selects_the_a3_rule_too() {
    let by_policy = |count| {
        let text = job(Kind::VcJob, "module-a3-16", "ascend-910b", 2, count)
            .replace("nodeSelector: {accelerator-type: module-a3-16}", "nodeSelector: {}")
            .replace(
                "metadata: {name: j,",
                "metadata: {name: j, annotations: {huawei.com/schedule_policy: chip2-node16},",
            );
        assert!(text.contains("chip2-node16") && !text.contains("accelerator-type"), "{text}");
        errors(&text)
    };
    assert_eq!(by_policy(8), vec![]);
    assert_eq!(by_policy(1).len(), 1);
}

#[test]
fn a3_superpod_keeps_whole_servers_for_distributed_vcjobs() {
    // Unchanged by issue 18 (see docs/mindcluster-differences.md): a distributed vcjob or Deployment on a
    // SuperPoD takes 16 dies per pod; an AscendJob whole cards; a single-pod job may take 1 die.
    assert_eq!(accepted(Kind::VcJob, "module-a3-16-super-pod", "ascend-910b", 2), vec![16]);
    assert_eq!(accepted(Kind::AscendJob, "module-a3-16-super-pod", "ascend-910b", 2), vec![2, 4, 6, 8, 10, 12, 14, 16]);
    assert_eq!(accepted(Kind::VcJob, "module-a3-16-super-pod", "ascend-910b", 1), vec![1, 2, 4, 6, 8, 10, 12, 14, 16]);
    let got = errors(&job(Kind::VcJob, "module-a3-16-super-pod", "ascend-910b", 2, 8));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].2, "chips per pod allowed: 16 per pod for distributed vcjob/Deployment on an A3 SuperPoD");
}

#[test]
fn atlas_300t_takes_one_or_two_chips_per_pod_distributed_or_not() {
    // The seeds allowed only 2 per pod for distributed jobs; MindCluster's chip1-node2 handler accepts 1 too.
    for kind in [Kind::VcJob, Kind::AscendJob] {
        for replicas in [1, 2, 4] {
            assert_eq!(accepted(kind, "card", "ascend-910", replicas), vec![1, 2], "{kind:?} × {replicas}");
        }
    }
    let got = errors(&job(Kind::VcJob, "card", "ascend-910", 2, 3));
    assert_eq!(
        got,
        vec![(
            resource_field(Kind::VcJob).to_string(),
            "3".to_string(),
            "chips per pod allowed: 1 or 2 (300T card server)".to_string()
        )]
    );
}
