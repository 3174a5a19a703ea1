//! The CRDs `ringleader crds` prints, checked against the repository's own
//! job files: every bundled example of a CRD kind must pass its CRD's schema
//! with nothing pruned, and a fixture with a wrongly typed field must not.
//!
//! `jsonschema` is not a dependency, so [`validate`] is a small validator of
//! exactly the structural subset the CRDs use, with kube-apiserver's
//! semantics: `null` is pruned before validation, int-or-string takes an
//! integer or a string, and a field no schema names is pruned (and refused by
//! `kubectl apply`'s strict field validation) unless its object preserves
//! unknown fields.

use ringleader_server::crds;
use serde_json::Value;
use std::path::{Path, PathBuf};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The CRD schema of an object's `apiVersion` and `kind`, if one is shipped.
fn schema_for(all: &[Value], object: &Value) -> Option<Value> {
    let api_version = object["apiVersion"].as_str()?;
    let (group, version) = api_version.split_once('/')?;
    all.iter()
        .find(|c| {
            c["spec"]["group"] == group
                && c["spec"]["names"]["kind"] == object["kind"]
                && c["spec"]["versions"][0]["name"] == version
        })
        .map(|c| c["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone())
}

/// Every way `value` fails `schema`, one line each with its path.
fn validate(value: &Value, schema: &Value, path: &str, errors: &mut Vec<String>) {
    if value.is_null() {
        return;
    }
    let at = if path.is_empty() { "(root)" } else { path };
    let flag = |k: &str| schema.get(k) == Some(&Value::Bool(true));
    if flag("x-kubernetes-int-or-string") {
        if !(value.is_i64() || value.is_u64() || value.is_string()) {
            errors.push(format!("{at}: {value} is neither an integer nor a string"));
        }
        return;
    }
    let ok = match schema.get("type").and_then(Value::as_str) {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    };
    if !ok {
        errors.push(format!("{at}: {value} is not of type {}", schema["type"]));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            errors.push(format!("{at}: {value} is not one of {}", schema["enum"]));
        }
    }
    if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), value.as_f64()) {
        if n < min {
            errors.push(format!("{at}: {n} is below the minimum {min}"));
        }
    }
    match value {
        Value::Object(fields) => {
            for name in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                if fields.get(name).is_none_or(Value::is_null) {
                    errors.push(format!("{at}: required field {name:?} is missing"));
                }
            }
            let props = schema.get("properties").and_then(Value::as_object);
            for (name, sub) in fields {
                let sub_path = format!("{path}.{name}");
                if sub_path == ".metadata" {
                    // The API server validates the root's ObjectMeta itself.
                    continue;
                }
                if let Some(sub_schema) = props.and_then(|p| p.get(name)) {
                    validate(sub, sub_schema, &sub_path, errors);
                } else if let Some(extra) = schema.get("additionalProperties") {
                    validate(sub, extra, &sub_path, errors);
                } else if !flag("x-kubernetes-preserve-unknown-fields") && schema.get("type").is_some() {
                    errors.push(format!("{sub_path}: unknown field (the server would prune it)"));
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate(item, item_schema, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

/// Every YAML document of a file, as JSON values.
fn documents(file: &Path) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(file)?;
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(doc)?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// The bundled job files: the examples, the demo's and the simulator's replay jobs.
fn bundled() -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    let mut files = Vec::new();
    for dir in ["examples", "examples/demo"] {
        for entry in std::fs::read_dir(repo().join(dir))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                files.push(path);
            }
        }
    }
    files.push(repo().join("crates/sim/tests/data/jobs-replay.yaml"));
    files.sort();
    Ok(files)
}

#[test]
fn every_bundled_example_passes_its_crd_schema() -> TestResult {
    let all = crds::crds();
    let mut checked = Vec::new();
    let mut errors = Vec::new();
    for file in bundled()? {
        for object in documents(&file)? {
            let Some(schema) = schema_for(&all, &object) else { continue };
            let name = format!("{}: {} {}", file.display(), object["kind"], object["metadata"]["name"]);
            let mut found = Vec::new();
            validate(&object, &schema, "", &mut found);
            errors.extend(found.into_iter().map(|e| format!("{name}: {e}")));
            checked.push(object["kind"].as_str().unwrap_or("").to_string());
        }
    }
    assert!(errors.is_empty(), "{errors:#?}");
    // Every CRD kind is exercised by at least one bundled object.
    for kind in ["AscendJob", "PyTorchJob", "TFJob", "MPIJob", "Job", "Queue"] {
        assert!(checked.iter().any(|k| k == kind), "no bundled {kind}; checked {checked:?}");
    }
    Ok(())
}

#[test]
fn a_wrongly_typed_field_fails_the_schema() -> TestResult {
    let all = crds::crds();
    let file = repo().join("crates/api/tests/fixtures/invalid/wrong-type.yaml");
    let object = documents(&file)?.into_iter().next().ok_or("empty fixture")?;
    let schema = schema_for(&all, &object).ok_or("no CRD for the fixture")?;
    let mut errors = Vec::new();
    validate(&object, &schema, "", &mut errors);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(errors[0].starts_with(".spec.tfReplicaSpecs.Worker.replicas: \"two\" is not of type"), "{errors:#?}");
    Ok(())
}

#[test]
fn a_misspelt_pod_field_would_be_pruned() -> TestResult {
    let all = crds::crds();
    let object: Value = serde_yaml_ng::from_str(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      template:\n        spec:\n          containers:\n          - name: c\n            image: i\n            imagePullPolicyy: Always\n",
    )?;
    let schema = schema_for(&all, &object).ok_or("no CRD")?;
    let mut errors = Vec::new();
    validate(&object, &schema, "", &mut errors);
    assert_eq!(
        errors,
        [".spec.pytorchReplicaSpecs.Master.template.spec.containers[0].imagePullPolicyy: unknown field (the server would prune it)"]
    );
    Ok(())
}
