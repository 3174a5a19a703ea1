//! Every bundled example validates, and every invalid fixture fails with
//! exactly the field paths its `# expect:` header names.

use ringleader_api::document::load_path;
use ringleader_api::{check_documents, Job};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn reports(path: &Path) -> Vec<ringleader_api::Report> {
    let docs: Vec<_> = load_path(path).into_iter().flat_map(|r| r.unwrap_or_else(|e| panic!("{e}"))).collect();
    check_documents(&docs)
}

#[test]
fn every_example_is_valid_and_normalises() {
    let reports = reports(&repo().join("examples"));
    assert!(reports.len() >= 15, "expected the bundled examples, found {}", reports.len());
    for r in &reports {
        assert!(r.valid, "{}: {} has errors: {:?}", r.path, r.object(), r.errors);
        if let Some(res) = &r.resource {
            if res.is_job() {
                let job = Job::from_resource(res).expect("job kinds normalise");
                assert!(job.total_replicas() > 0, "{} has no pods", r.object());
                assert_eq!(job.pod_names().len() as u32, job.total_replicas());
            }
        }
    }
}

#[test]
fn the_platform_examples_cover_every_platform_kind() {
    let reports = reports(&repo().join("examples/platform"));
    let kinds: BTreeSet<&str> = reports.iter().filter(|r| r.valid).map(|r| r.kind.as_str()).collect();
    // AuditRecords are written by the API server only, so no example makes one.
    for kind in [
        "ResourceGroup",
        "Workspace",
        "Queue",
        "TrainingJob",
        "Run",
        "Dataset",
        "Image",
        "StorageMount",
        "PlatformNode",
    ] {
        assert!(kinds.contains(kind), "examples/platform has no valid {kind}: {kinds:?}");
    }
    assert!(kinds.contains("Script") && kinds.contains("ScriptRun"), "{kinds:?}");
    assert!(reports.iter().all(|r| r.valid), "every platform example is valid");
}

#[test]
fn each_invalid_fixture_names_exactly_its_field_paths() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/invalid");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 85, "one fixture per rule expected, found {}", files.len());
    let mut failures = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let expected: BTreeSet<String> =
            text.lines().filter_map(|l| l.strip_prefix("# expect: ")).map(str::to_string).collect();
        assert!(!expected.is_empty(), "{} has no # expect: header", file.display());
        let got: BTreeSet<String> =
            reports(&file).iter().flat_map(|r| r.errors.iter().map(|e| e.field.clone())).collect();
        if got != expected {
            failures.push(format!("{}:\n  expected {expected:?}\n  got      {got:?}", file.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
