//! The CLI's kubectl conventions against a running plane: selectors,
//! `-o name|jsonpath|custom-columns`, several types, `delete -f|--all|-l`,
//! logs flags, exit codes, and a reader that closes stdout early.

mod common;

use common::{cluster_yaml, example, Plane};
use std::io::Read;
use std::process::{Command, Output, Stdio};

fn ringleader() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ringleader"))
}

/// Runs the CLI against `p`, success or not.
fn run(p: &Plane, args: &[&str]) -> Output {
    ringleader().args(args).arg("--data-dir").arg(p.data_dir()).output().expect("ringleader runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const CONFIGMAPS: &str = "\
apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {app: web, tier: front}}\ndata: {k: one}\n---\n\
apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, labels: {app: db}}\ndata: {k: two}\n---\n\
apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: {app: web, canary: \"true\"}}\ndata: {k: three}\n";

#[test]
fn get_selects_and_prints_in_kubectls_formats() {
    let p = Plane::start(&cluster_yaml(41, &[("g-1", "pcie-4090-8")]), &["--runtime", "simulated"]);
    p.apply(CONFIGMAPS).expect("apply");

    assert_eq!(p.ctl(&["get", "configmaps", "-o", "name"]), "configmap/a\nconfigmap/b\nconfigmap/c\n");
    assert_eq!(p.ctl(&["get", "configmaps", "-l", "app in (web)", "-o", "name"]), "configmap/a\nconfigmap/c\n");
    assert_eq!(p.ctl(&["get", "configmaps", "-l", "app=web,!canary", "-o", "name"]), "configmap/a\n");
    assert_eq!(p.ctl(&["get", "configmaps", "-l", "app notin (web)", "-o", "name"]), "configmap/b\n");
    assert_eq!(p.ctl(&["get", "configmaps", "--field-selector", "metadata.name=b", "-o", "name"]), "configmap/b\n");

    assert_eq!(p.ctl(&["get", "configmaps", "-o", "jsonpath={.items[*].metadata.name}"]), "a b c");
    assert_eq!(p.ctl(&["get", "configmap", "b", "-o", "jsonpath={.data.k}"]), "two");
    assert_eq!(
        p.ctl(&[
            "get",
            "cm",
            "-o",
            r#"jsonpath={range .items[?(@.metadata.labels.app=="web")]}{.metadata.name}={.data.k}{"\n"}{end}"#
        ]),
        "a=one\nc=three\n"
    );
    assert_eq!(
        p.ctl(&[
            "get",
            "configmaps",
            "-o",
            "custom-columns=NAME:.metadata.name,APP:.metadata.labels.app,TIER:.metadata.labels.tier"
        ]),
        "NAME   APP   TIER\na      web   front\nb      db    <none>\nc      web   <none>\n"
    );
    // One object by name prints as itself; a list (even of one) as a List.
    let one: serde_json::Value = serde_json::from_str(&p.ctl(&["get", "configmap", "a", "-o", "json"])).expect("json");
    assert_eq!(one["kind"], "ConfigMap");
    let list: serde_json::Value =
        serde_json::from_str(&p.ctl(&["get", "configmaps", "-l", "tier=front", "-o", "json"])).expect("json");
    assert_eq!((list["kind"].as_str(), list["items"].as_array().map(Vec::len)), (Some("List"), Some(1)));

    // The server's Table, with and without its header line.
    let table = p.ctl(&["get", "configmaps"]);
    assert!(table.starts_with("NAME "), "{table}");
    assert!(table.lines().nth(1).is_some_and(|l| l.starts_with("a ")), "{table}");
    let bare = p.ctl(&["get", "configmaps", "--no-headers"]);
    assert_eq!(bare.lines().count(), 3, "{bare}");
    assert!(bare.starts_with("a "), "{bare}");
    let everywhere = p.ctl(&["get", "configmaps", "-A", "-l", "tier"]);
    let lines: Vec<&str> = everywhere.lines().collect();
    assert!(lines.len() == 2 && lines[0].starts_with("NAMESPACE   NAME "), "{everywhere}");
    assert!(lines[1].starts_with("default     a "), "{everywhere}");
    let labels = p.ctl(&["get", "configmaps", "--show-labels", "-l", "tier"]);
    assert!(labels.lines().next().is_some_and(|l| l.ends_with("LABELS")), "{labels}");
    assert!(labels.lines().nth(1).is_some_and(|l| l.ends_with("app=web,tier=front")), "{labels}");

    // Several types: one table each, names written TYPE/NAME.
    let both = p.ctl(&["get", "configmaps,nodes"]);
    let blocks: Vec<&str> = both.split("\n\n").collect();
    assert_eq!(blocks.len(), 2, "{both}");
    assert!(blocks[0].lines().nth(1).is_some_and(|l| l.starts_with("configmap/a ")), "{both}");
    assert!(blocks[1].lines().nth(1).is_some_and(|l| l.contains("node") && l.contains("/g-1 ")), "{both}");

    // -w: the table, then a row per change in the first table's columns.
    let mut watch = ringleader()
        .args(["get", "configmaps", "-l", "app=web", "-w", "--data-dir"])
        .arg(p.data_dir())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(std::time::Duration::from_secs(20)).expect("a watched line");
    assert!(next().starts_with("NAME "));
    let first: Vec<String> = (0..2).map(|_| next()).collect();
    assert!(first[0].starts_with("a ") && first[1].starts_with("c "), "{first:?}");
    p.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w, labels: {app: web}}\n").expect("apply");
    let added = next();
    // Same column starts as the first table's rows.
    let starts = |l: &str| -> Vec<usize> {
        let b = l.as_bytes();
        (1..b.len()).filter(|&i| b[i] != b' ' && b[i - 1] == b' ').collect()
    };
    assert!(added.starts_with("w ") && starts(&added) == starts(&first[0]), "{added:?} vs {:?}", first[0]);
    assert_eq!(run(&p, &["delete", "configmap", "w"]).status.code(), Some(0));
    let deleted = next();
    assert!(deleted.starts_with("w ") && deleted.ends_with("(deleted)"), "{deleted}");
    watch.kill().expect("kill");
    watch.wait().expect("wait");

    // Found objects print, the missing one is reported kubectl's way, and the exit code is 1.
    let out = run(&p, &["get", "configmap", "a", "nope", "-o", "name"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "configmap/a\n");
    assert_eq!(text(&out.stderr).trim(), r#"Error from server (NotFound): configmaps "nope" not found"#);
    let out = run(&p, &["get", "configmaps", "-o", "table"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("error: -o table: unknown output format"), "{}", text(&out.stderr));
}

#[test]
fn delete_takes_files_selectors_and_all() {
    let p = Plane::start(&cluster_yaml(42, &[("g-1", "pcie-4090-8")]), &["--runtime", "simulated"]);
    p.apply(CONFIGMAPS).expect("apply");
    let more = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: e}\n";
    p.apply(more).expect("apply");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("more.yaml"), more).expect("file");

    assert_eq!(
        p.ctl(&["delete", "-f", &dir.path().display().to_string()]),
        "configmap \"d\" deleted\nconfigmap \"e\" deleted\n"
    );
    assert_eq!(p.ctl(&["delete", "configmaps", "-l", "app=web,canary"]), "configmap \"c\" deleted\n");
    assert_eq!(p.ctl(&["delete", "configmap/a"]), "configmap \"a\" deleted\n");

    let out = run(&p, &["delete", "configmap", "a"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr).trim(), r#"Error from server (NotFound): configmaps "a" not found"#);
    assert_eq!(run(&p, &["delete", "configmap", "a", "--ignore-not-found"]).status.code(), Some(0));
    // A whole type only when asked for with --all.
    let out = run(&p, &["delete", "configmaps"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--all"), "{}", text(&out.stderr));
    assert_eq!(p.ctl(&["delete", "configmaps", "--all"]), "configmap \"b\" deleted\n");
    assert_eq!(p.ctl(&["get", "configmaps", "-o", "name"]), "");
}

#[test]
fn logs_take_kubectls_flags_and_a_closed_pipe_ends_quietly() {
    let p = Plane::start(&cluster_yaml(43, &[("h100-1", "hgx-h100-8"), ("h100-2", "hgx-h100-8")]), &[]);
    p.apply(&example("examples/demo/pytorchjob-h100.yaml")).expect("apply");
    p.wait_for(90, "PyTorchJob Completed", |p| p.phase("pytorchjobs", "demo-pytorch") == "Completed");
    let pod = "demo-pytorch-master-0";
    let whole = p.ctl(&["logs", pod]);
    assert!(whole.contains("check_result"), "{whole}");
    assert!(whole.lines().count() > 1, "{whole}");
    let last = p.ctl(&["logs", pod, "--tail", "1"]);
    assert_eq!(last.lines().count(), 1, "{last}");
    assert_eq!(whole.lines().last(), last.lines().next());

    let container = p
        .get("pods", pod)
        .and_then(|v| v["spec"]["containers"][0]["name"].as_str().map(String::from))
        .expect("a container");
    assert_eq!(p.ctl(&["logs", pod, "-c", &container]), whole);
    let prefixed = p.ctl(&["logs", pod, "--prefix", "--tail", "2"]);
    let want = format!("[pod/{pod}/{container}] ");
    assert!(prefixed.lines().count() == 2 && prefixed.lines().all(|l| l.starts_with(&want)), "{prefixed}");
    let by_label = p.ctl(&["logs", "-l", "training.kubeflow.org/replica-type=master", "--prefix"]);
    assert!(by_label.lines().any(|l| l.starts_with(&want) && l.contains("check_result")), "{by_label}");

    let stamped = p.ctl(&["logs", pod, "--timestamps", "--tail", "2"]);
    assert_eq!(stamped.lines().count(), 2, "{stamped}");
    for (line, plain) in stamped.lines().zip(whole.lines().skip(whole.lines().count() - 2)) {
        let (stamp, rest) = line.split_once(' ').unwrap_or_default();
        assert!(stamp.starts_with("20") && stamp.ends_with('Z'), "{line}");
        assert_eq!(rest, plain);
    }
    assert_eq!(p.ctl(&["logs", pod, "--limit-bytes", "5"]), whole[..5]);
    assert_eq!(p.ctl(&["logs", pod, "--since", "1h"]), whole);
    let out = run(&p, &["logs", pod, "--previous"]);
    assert_eq!(out.status.code(), Some(1), "the container never restarted");
    assert!(
        text(&out.stderr).starts_with("Error from server (BadRequest): previous terminated container"),
        "{}",
        text(&out.stderr)
    );

    let out = run(&p, &["logs", "no-such-pod"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("Error from server (NotFound): "), "{}", text(&out.stderr));

    // More output than a pipe holds, to a reader that is already gone:
    // the CLI ends quietly (no panic, no error) with 0, as `| head` needs.
    for args in [&["get", "pods", "-o", "yaml"][..], &["logs", pod][..], &["logs", pod, "-f"][..]] {
        let mut child = ringleader()
            .args(args)
            .arg("--data-dir")
            .arg(p.data_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        drop(child.stdout.take());
        let mut stderr = String::new();
        child.stderr.take().expect("stderr").read_to_string(&mut stderr).expect("stderr");
        let status = child.wait().expect("wait");
        assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

#[test]
fn each_verb_lists_only_its_own_flags() {
    let help = |verb: &str| text(&ringleader().args([verb, "--help"]).output().expect("help").stdout);
    let logs = help("logs");
    for flag in
        ["--container", "--previous", "--timestamps", "--tail", "--since", "--since-time", "--selector", "--follow"]
    {
        assert!(logs.contains(flag), "logs --help lacks {flag}:\n{logs}");
    }
    assert!(!logs.contains("--grace-period"), "{logs}");
    let delete = help("delete");
    for flag in ["--filename", "--all", "--selector", "--grace-period"] {
        assert!(delete.contains(flag), "delete --help lacks {flag}:\n{delete}");
    }
    assert!(!delete.contains("--follow") && !delete.contains("--tail"), "{delete}");
    for verb in ["describe", "explain", "get"] {
        let h = help(verb);
        assert!(!h.contains("--follow") && !h.contains("--grace-period"), "{verb}: {h}");
    }
}

#[test]
fn completion_version_and_usage_errors() {
    for shell in ["bash", "zsh", "fish"] {
        let out = ringleader().args(["completion", shell]).output().expect("completion");
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        assert!(script.contains("ringleader") && script.contains("logs"), "{shell}: {script}");
    }
    let out = ringleader().args(["version", "--client"]).output().expect("version");
    assert_eq!(text(&out.stdout), format!("Client Version: v{}\n", env!("CARGO_PKG_VERSION")));
    let out = ringleader().args(["version", "--client", "-o", "json"]).output().expect("version");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["clientVersion"]["gitVersion"], format!("v{}", env!("CARGO_PKG_VERSION")));

    // Errors exit 1 with kubectl's `error: …` line; `validate` keeps its own 2.
    let out = ringleader().args(["get", "gizmos"]).output().expect("get");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("error: unknown resource type \"gizmos\""), "{}", text(&out.stderr));
    let out = ringleader().args(["validate", "-f", "/no/such/file.yaml"]).output().expect("validate");
    assert_eq!(out.status.code(), Some(2));
}
