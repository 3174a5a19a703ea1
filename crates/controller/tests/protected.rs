//! Defence in depth for issue 29's scheduler bypass: whatever a job's pod
//! template says, the pods the controller plans carry no `nodeName` and none
//! of the scheduler's or the agent's annotations.

mod common;

use common::example;
use ringleader_api::protected::{annotation_owner, BINDING_ANNOTATIONS};
use ringleader_controller::expand::{expand, ExpandOptions};
use ringleader_controller::JobExtras;

#[test]
fn templates_cannot_bind_the_pods_made_of_them() {
    let kinds = ["batch-job.yaml", "deployment-inference.yaml", "pytorchjob.yaml", "tfjob.yaml", "mpijob.yaml"];
    let kinds = kinds.iter().chain(&["ascendjob-pytorch.yaml", "vcjob-elastic.yaml"]);
    for file in kinds {
        let (mut job, extras): (_, JobExtras) = example(file);
        for role in &mut job.roles {
            if let Some(spec) = role.template.spec.as_mut() {
                spec.node_name = Some("n1".into());
            }
            let meta = role.template.metadata.get_or_insert_with(Default::default);
            let annotations = meta.annotations.get_or_insert_with(Default::default);
            for key in BINDING_ANNOTATIONS.iter().chain(&["huawei.com/Ascend910", "ringleader.io/pid"]) {
                annotations.insert(key.to_string(), "0".into());
            }
            annotations.insert("example.com/kept".into(), "yes".into());
        }
        let exp = expand(&job, &extras, &ExpandOptions::default());
        assert!(!exp.pods.is_empty(), "{file}");
        for pod in &exp.pods {
            let spec = pod.template.spec.as_ref();
            assert_eq!(spec.and_then(|s| s.node_name.as_deref()), None, "{file} {}", pod.name);
            let annotations = pod.annotations();
            let kept: Vec<&String> = annotations.keys().filter(|k| annotation_owner(k).is_some()).collect();
            assert!(kept.is_empty(), "{file} {}: {kept:?}", pod.name);
            assert_eq!(annotations.get("example.com/kept").map(String::as_str), Some("yes"), "{file}");
        }
    }
}
