//! GPU memory requests as ACK gpushare (`aliyun.com/gpu-mem`, GiB) and HAMi
//! (`nvidia.com/gpumem`, MiB, beside `nvidia.com/gpu`) users write them:
//! each bad value is named with its field and what is allowed (issue 18).

use ringleader_api::check_documents;
use ringleader_api::document::parse_str;

fn deployment(limits: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: infer, labels: {{app: infer}}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: infer}}}}
  template:
    metadata: {{labels: {{app: infer}}}}
    spec:
      containers:
      - name: infer
        image: infer:1
        resources: {{limits: {{{limits}}}}}
"#
    )
}

fn errors(limits: &str) -> Vec<(String, String, String)> {
    let text = deployment(limits);
    let docs = parse_str("inline", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let reports = check_documents(&docs);
    assert_eq!(reports.len(), 1);
    reports[0].errors.iter().map(|e| (e.field.clone(), e.value.clone(), e.message.clone())).collect()
}

fn field(resource: &str) -> String {
    format!(r#"spec.template.spec.containers[0].resources.limits["{resource}"]"#)
}

#[test]
fn good_requests_pass() {
    for limits in [
        "aliyun.com/gpu-mem: 8",
        "aliyun.com/gpu-mem: 16, aliyun.com/gpu-count: 2",
        "nvidia.com/gpu: 1, nvidia.com/gpumem: 3000",
        "nvidia.com/gpu: 2, nvidia.com/gpumem: 10240, nvidia.com/gpucores: 30",
    ] {
        assert_eq!(errors(limits), vec![], "{limits}");
    }
}

#[test]
fn bad_requests_name_field_value_and_allowed() {
    let table: [(&str, &str, &str, &str); 6] = [
        ("aliyun.com/gpu-mem: 0", "aliyun.com/gpu-mem", "0", "GiB per GPU from 1 to 80"),
        ("aliyun.com/gpu-mem: 1.5", "aliyun.com/gpu-mem", "1.5", "GiB per GPU from 1 to 80"),
        ("aliyun.com/gpu-mem: 4, aliyun.com/gpu-count: 0", "aliyun.com/gpu-count", "0", "GPUs from 1 to 16"),
        ("nvidia.com/gpu: 1, nvidia.com/gpumem: 0", "nvidia.com/gpumem", "0", "MiB per GPU from 1 to 81920"),
        (
            "nvidia.com/gpu: 1, nvidia.com/gpumem: 100, nvidia.com/gpucores: 150",
            "nvidia.com/gpucores",
            "150",
            "percent",
        ),
        ("aliyun.com/gpu-mem: 4, nvidia.com/gpu: 1", "nvidia.com/gpu", "1", "not allowed beside aliyun.com/gpu-mem"),
    ];
    for (limits, resource, value, allowed) in table {
        let errs = errors(limits);
        assert!(
            errs.iter().any(|(f, v, m)| *f == field(resource) && v == value && m.contains(allowed)),
            "{limits}: {errs:?}"
        );
    }
    let missing = errors("nvidia.com/gpumem: 3000");
    assert!(
        missing.iter().any(|(f, _, m)| *f == field("nvidia.com/gpu") && m.contains("number of vGPUs")),
        "{missing:?}"
    );
}
