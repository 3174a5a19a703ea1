//! Atlas 350 (`huawei.com/npu`) requests as MindCluster's current plugin
//! takes them (issue 18; docs/atlas-350.md): the job names its server with
//! `huawei.com/schedule_policy`, each pod may take 1 to node-size cards, and
//! the pod's device request is whole cards.

use ringleader_api::check_documents;
use ringleader_api::document::parse_str;

/// A Deployment of `replicas` pods of `count` cards, with `policy` when given.
fn deployment(policy: Option<&str>, replicas: u32, count: u32) -> String {
    let annotations = policy.map(|p| format!("annotations: {{huawei.com/schedule_policy: {p}}}, ")).unwrap_or_default();
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: infer, {annotations}labels: {{app: infer}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: infer}}}}
  template:
    metadata: {{labels: {{app: infer}}}}
    spec:
      containers:
      - name: infer
        image: infer:1
        resources: {{requests: {{huawei.com/npu: {count}}}, limits: {{huawei.com/npu: {count}}}}}
"#
    )
}

const FIELD: &str = r#"spec.template.spec.containers[0].resources.limits["huawei.com/npu"]"#;
const POLICY_FIELD: &str = r#"metadata.annotations["huawei.com/schedule_policy"]"#;

fn errors(text: &str) -> Vec<(String, String, String)> {
    let docs = parse_str("inline", text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let reports = check_documents(&docs);
    assert_eq!(reports.len(), 1);
    reports[0].errors.iter().map(|e| (e.field.clone(), e.value.clone(), e.message.clone())).collect()
}

fn accepted(policy: &str, replicas: u32) -> Vec<u32> {
    (0..=18).filter(|&c| errors(&deployment(Some(policy), replicas, c)).is_empty()).collect()
}

#[test]
fn every_count_up_to_the_node_size_single_and_distributed() {
    for replicas in [1, 3] {
        assert_eq!(accepted("chip4-node8", replicas), (1..=8).collect::<Vec<_>>());
        assert_eq!(accepted("chip1-node8", replicas), (1..=8).collect::<Vec<_>>());
        assert_eq!(accepted("chip4-node16", replicas), (1..=16).collect::<Vec<_>>());
        assert_eq!(accepted("chip1-node16", replicas), (1..=16).collect::<Vec<_>>());
    }
}

#[test]
fn rejections_name_the_field_the_value_and_what_is_allowed() {
    assert_eq!(
        errors(&deployment(Some("chip4-node8"), 1, 9)),
        vec![(
            FIELD.to_string(),
            "9".to_string(),
            "cards per pod allowed: 1 to 8 (Atlas 350, chip4-node8)".to_string()
        )]
    );
    let missing = errors(&deployment(None, 1, 4));
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert_eq!(missing[0].0, POLICY_FIELD);
    assert!(missing[0].2.contains("allowed: chip4-node8, chip4-node16, chip1-node8, chip1-node16"), "{missing:?}");
    // chip8-node8 is an Atlas 800T A2 policy, not one of the 350's.
    let other = errors(&deployment(Some("chip8-node8"), 1, 4));
    assert_eq!(other.len(), 1, "{other:?}");
    assert_eq!((other[0].0.as_str(), other[0].1.as_str()), (POLICY_FIELD, "chip8-node8"));
}

#[test]
fn the_pod_requests_whole_cards() {
    let docs = parse_str("inline", &deployment(Some("chip4-node16"), 1, 4)).unwrap();
    let report = &check_documents(&docs)[0];
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let req = ringleader_api::devices::classify("huawei.com/npu");
    assert_eq!(req, Some((ringleader_api::devices::Family::Ascend, ringleader_api::DeviceKind::Whole)));
}
