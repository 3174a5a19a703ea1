//! Atlas 350 (`huawei.com/npu`) cards asked for by an AscendJob or a Volcano
//! Job (issue 18; docs/atlas-350.md): MindCluster's upgrade guide has the
//! Ascend 950 generation's jobs carry `ring-controller.atlas: ascend-npu`
//! with `huawei.com/npu`, and its operator counts any `huawei.com/` request.

use ringleader_api::check_documents;
use ringleader_api::document::parse_str;

fn acjob(ring: &str, resource: &str, count: u32) -> String {
    let role = |name: &str| {
        format!(
            r#"
    {name}:
      replicas: 1
      restartPolicy: Never
      template:
        metadata: {{labels: {{ring-controller.atlas: {ring}}}}}
        spec:
          nodeSelector: {{host-arch: huawei-arm}}
          containers:
          - name: ascend
            image: ascend-pytorch:26.0
            resources: {{requests: {{{resource}: {count}}}, limits: {{{resource}: {count}}}}}"#
        )
    };
    format!(
        r#"
apiVersion: mindxdl.gitee.com/v1
kind: AscendJob
metadata:
  name: train350
  labels: {{framework: pytorch, ring-controller.atlas: {ring}}}
  annotations: {{huawei.com/schedule_policy: chip4-node8}}
spec:
  schedulerName: volcano
  replicaSpecs:{}{}
"#,
        role("Master"),
        role("Worker")
    )
}

fn vcjob(ring: Option<&str>, policy: &str, count: u32) -> String {
    let label = ring.map(|r| format!("ring-controller.atlas: {r}")).unwrap_or_default();
    format!(
        r#"
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: vc350
  labels: {{{label}}}
  annotations: {{huawei.com/schedule_policy: {policy}}}
spec:
  minAvailable: 2
  schedulerName: volcano
  tasks:
  - name: worker
    replicas: 2
    template:
      metadata: {{labels: {{{label}}}}}
      spec:
        containers:
        - name: train
          image: train:1
          resources: {{requests: {{huawei.com/npu: {count}}}, limits: {{huawei.com/npu: {count}}}}}
"#
    )
}

fn errors(text: &str) -> Vec<(String, String, String)> {
    let docs = parse_str("inline", text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let reports = check_documents(&docs);
    assert_eq!(reports.len(), 1);
    reports[0].errors.iter().map(|e| (e.field.clone(), e.value.clone(), e.message.clone())).collect()
}

#[test]
fn ascend_npu_jobs_asking_huawei_npu_validate() {
    assert_eq!(errors(&acjob("ascend-npu", "huawei.com/npu", 4)), vec![]);
    for policy in ["chip4-node8", "chip1-node8"] {
        for count in 1..=8 {
            assert_eq!(errors(&vcjob(Some("ascend-npu"), policy, count)), vec![], "{policy} {count}");
        }
    }
    assert_eq!(errors(&vcjob(Some("ascend-npu"), "chip4-node16", 16)), vec![]);
}

#[test]
fn a_910b_label_on_atlas_350_cards_is_refused_with_the_right_value() {
    let e = errors(&acjob("ascend-910b", "huawei.com/npu", 4));
    assert_eq!(e.len(), 2, "{e:?}");
    for (i, role) in ["Master", "Worker"].into_iter().enumerate() {
        assert_eq!(
            e[i].0,
            format!(r#"spec.replicaSpecs.{role}.template.spec.containers[0].resources.limits["huawei.com/npu"]"#)
        );
        assert_eq!(e[i].1, "4");
        assert_eq!(
            e[i].2,
            "ring-controller.atlas ascend-910b expects huawei.com/Ascend910 resources, not huawei.com/npu; \
             huawei.com/npu (Atlas 350) jobs use ring-controller.atlas ascend-npu"
        );
    }
}

#[test]
fn ascend_npu_takes_whole_atlas_350_cards_only() {
    let e = errors(&acjob("ascend-npu", "huawei.com/Ascend910", 8));
    assert!(
        e.iter().any(|(_, v, m)| v == "8"
            && m == "ring-controller.atlas ascend-npu expects huawei.com/npu resources, not huawei.com/Ascend910"),
        "{e:?}"
    );
    let e = errors(&acjob("ascend-npu", "huawei.com/npu-core", 4));
    assert!(
        e.iter().any(|(_, _, m)| m
            == "ring-controller.atlas ascend-npu expects huawei.com/npu resources, not huawei.com/npu-core"),
        "{e:?}"
    );
}

#[test]
fn the_label_stays_required_and_the_policy_still_bounds_the_cards() {
    let e = errors(&vcjob(None, "chip4-node8", 2));
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].0, r#"metadata.labels["ring-controller.atlas"]"#);
    assert!(e[0].2.ends_with("allowed: ascend-910, ascend-910b, ascend-310P, ascend-310, ascend-npu"), "{e:?}");
    let e = errors(&vcjob(Some("ascend-npu"), "chip1-node8", 9));
    assert_eq!(
        e,
        vec![(
            r#"spec.tasks[0].template.spec.containers[0].resources.limits["huawei.com/npu"]"#.to_string(),
            "9".to_string(),
            "cards per pod allowed: 1 to 8 (Atlas 350, chip1-node8)".to_string()
        )]
    );
}
