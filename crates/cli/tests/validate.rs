//! `ringleader validate` end to end: exit codes and what it prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn validate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringleader")).arg("validate").args(args).current_dir(repo()).output().unwrap()
}

#[test]
fn examples_are_all_ok() {
    let out = validate(&["-f", "examples/"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.lines().count() >= 15);
    // Every document is ok; indented lines are warnings about env vars.
    assert!(stdout.lines().filter(|l| !l.starts_with("  ")).all(|l| l.ends_with(": ok")), "{stdout}");
    assert!(stdout.lines().filter(|l| l.starts_with("  ")).all(|l| l.contains(": warning: ")), "{stdout}");
    assert!(stdout.contains("examples/ascendjob-pytorch.yaml: AscendJob/"), "{stdout}");
}

#[test]
fn each_invalid_fixture_exits_1_and_names_its_field() {
    let dir = repo().join("crates/api/tests/fixtures/invalid");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().path();
        let text = std::fs::read_to_string(&file).unwrap();
        let out = validate(&["-f", file.to_str().unwrap()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{}: {stdout}", file.display());
        for field in text.lines().filter_map(|l| l.strip_prefix("# expect: ")) {
            assert!(stdout.contains(field), "{}: {field} not in {stdout}", file.display());
        }
    }
}

#[test]
fn errors_name_file_index_object_field_value_and_rule() {
    let out = validate(&["-f", "crates/api/tests/fixtures/invalid/chips-atlas-800.yaml"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.contains("limits")).unwrap_or_default();
    assert_eq!(
        line.trim(),
        r#"crates/api/tests/fixtures/invalid/chips-atlas-800.yaml[0] AscendJob/default/bad: spec.replicaSpecs.Worker.template.spec.containers[0].resources.limits["huawei.com/Ascend910"]: 3: chips per pod allowed: 1, 2, 4 or 8 (Atlas 800 training server)"#
    );
}

#[test]
fn json_output_has_the_documented_shape() {
    let out = validate(&["-f", "crates/api/tests/fixtures/invalid/master-replicas.yaml", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let doc = &v["documents"][0];
    assert_eq!(doc["kind"], "AscendJob");
    assert_eq!(doc["name"], "bad");
    assert_eq!(doc["index"], 0);
    assert_eq!(doc["valid"], false);
    assert_eq!(doc["errors"][0]["field"], "spec.replicaSpecs.Master.replicas");
    assert_eq!(doc["errors"][0]["value"], "2");
}

#[test]
fn missing_file_exits_2_and_syntax_error_exits_2() {
    let out = validate(&["-f", "no/such/file.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/file.yaml: cannot read"));
    let tmp = std::env::temp_dir().join(format!("ringleader-bad-{}.yaml", std::process::id()));
    std::fs::write(&tmp, "kind: [unclosed\n").unwrap();
    let out = validate(&["-f", tmp.to_str().unwrap()]);
    std::fs::remove_file(&tmp).ok();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn stdin_is_read_with_dash() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["validate", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(std::fs::read(repo().join("examples/tfjob.yaml")).unwrap().as_slice())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("-: TFJob/"));
}

#[test]
fn env_warnings_print_and_strict_turns_them_into_errors() {
    let job = include_str!("data/noisy-pytorchjob.yaml");
    let tmp = std::env::temp_dir().join(format!("ringleader-noisy-{}.yaml", std::process::id()));
    std::fs::write(&tmp, job).unwrap();
    let path = tmp.to_str().unwrap();
    let out = validate(&["-f", path]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("warning: spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env[0].value"),
        "{stdout}"
    );
    let strict = validate(&["-f", path, "--strict", "-o", "json"]);
    std::fs::remove_file(&tmp).ok();
    assert_eq!(strict.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&strict.stdout).unwrap();
    assert_eq!(v["documents"][0]["valid"], false);
    assert_eq!(
        v["documents"][0]["errors"][0]["field"],
        "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].env[0].value"
    );
}

/// Issue 25: the seeds' AscendJobs read `$RANK_TABLE_FILE`, which the
/// controller sets when it releases the pods; `validate` knows that, and
/// still warns about a variable nobody sets.
#[test]
fn rank_table_file_counts_as_defined_for_ascend_jobs_only() {
    let text = std::fs::read_to_string(repo().join("examples/ascendjob-pytorch.yaml")).unwrap();
    let job = text.replace(
        "args: [\"cd /job/code/scripts;",
        "args: [\"echo $RANK_TABLE_FILE $FOO_UNDEFINED; cd /job/code/scripts;",
    );
    assert_ne!(job, text, "the example's args moved");
    let tmp = std::env::temp_dir().join(format!("ringleader-ranktable-{}.yaml", std::process::id()));
    std::fs::write(&tmp, &job).unwrap();
    let out = validate(&["-f", tmp.to_str().unwrap()]);
    // A GPU PyTorchJob gets no rank table: there the variable is undefined.
    let gpu = include_str!("data/noisy-pytorchjob.yaml")
        .replace("image: pytorch:2", "image: pytorch:2\n            command: [sh, -c, \"echo $RANK_TABLE_FILE\"]");
    std::fs::write(&tmp, &gpu).unwrap();
    let gpu_out = validate(&["-f", tmp.to_str().unwrap()]);
    std::fs::remove_file(&tmp).ok();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("\"RANK_TABLE_FILE\""), "{stdout}");
    assert!(stdout.contains("\"FOO_UNDEFINED\": references $FOO_UNDEFINED, which is never defined"), "{stdout}");
    let gpu_stdout = String::from_utf8_lossy(&gpu_out.stdout).to_string();
    assert!(gpu_stdout.contains("\"RANK_TABLE_FILE\": references"), "{gpu_stdout}");
}

/// Diagnostics go to stderr, filtered by RUST_LOG, as JSON lines with
/// `--log-format json`; a malformed RUST_LOG is reported there, not fatal,
/// and stdout keeps only the answer.
#[test]
fn log_format_json_and_a_bad_rust_log() {
    let out = Command::new(env!("CARGO_BIN_EXE_ringleader"))
        .args(["--log-format", "json", "validate", "-f", "examples/tfjob.yaml"])
        .env("RUST_LOG", "[[[")
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "examples/tfjob.yaml: TFJob/dist-mnist: ok\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line: serde_json::Value = serde_json::from_str(stderr.lines().next().unwrap_or("")).unwrap();
    assert_eq!(line["level"], "WARN", "{stderr}");
    assert!(line["message"].as_str().unwrap_or("").contains("RUST_LOG=\"[[[\""), "{stderr}");
    let bad = Command::new(env!("CARGO_BIN_EXE_ringleader")).args(["--log-format", "xml", "version"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("possible values: text, json"));
}
