use super::*;
use serde_json::json;
use std::collections::HashMap;

fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn opts(pairs: &[(&str, &str)]) -> LogOptions {
    match LogOptions::parse(&q(pairs), 1_000.0) {
        Ok(o) => o,
        Err(e) => panic!("{pairs:?}: {}", e.message),
    }
}

const LOG: &[u8] = b"one\ntwo\nthree\nfour";
const STAMPS: &str =
    "1970-01-01T00:00:10.5Z\n1970-01-01T00:00:20Z\n1970-01-01T00:00:30.000000001Z\n1970-01-01T00:00:40Z\n";

fn out(pairs: &[(&str, &str)]) -> String {
    String::from_utf8_lossy(&render(LOG, STAMPS, &opts(pairs))).into_owned()
}

#[test]
fn options_parse_and_refuse_bad_values() {
    let o = opts(&[("container", "c"), ("previous", "true"), ("sinceSeconds", "60"), ("tailLines", "0")]);
    assert_eq!(o.container.as_deref(), Some("c"));
    assert!(o.previous);
    assert_eq!(o.since, Some(940.0));
    assert_eq!(o.tail_lines, Some(0));
    assert_eq!(opts(&[("sinceTime", "1970-01-01T00:00:20Z")]).since, Some(20.0));
    for bad in [
        vec![("sinceSeconds", "0")],
        vec![("limitBytes", "0")],
        vec![("tailLines", "-1")],
        vec![("timestamps", "yes")],
        vec![("sinceTime", "yesterday")],
        vec![("sinceSeconds", "5"), ("sinceTime", "1970-01-01T00:00:20Z")],
    ] {
        assert!(LogOptions::parse(&q(&bad), 0.0).is_err(), "{bad:?}");
    }
}

#[test]
fn whole_log_and_tail() {
    assert_eq!(out(&[]), "one\ntwo\nthree\nfour");
    assert_eq!(out(&[("tailLines", "2")]), "three\nfour");
    assert_eq!(out(&[("tailLines", "0")]), "");
    assert_eq!(out(&[("tailLines", "10")]), "one\ntwo\nthree\nfour");
}

#[test]
fn timestamps_prefix_each_line_with_its_stamp() {
    assert_eq!(
        out(&[("timestamps", "true"), ("tailLines", "2")]),
        "1970-01-01T00:00:30.000000001Z three\n1970-01-01T00:00:40Z four"
    );
}

#[test]
fn since_keeps_lines_written_from_then_on() {
    assert_eq!(out(&[("sinceTime", "1970-01-01T00:00:20Z")]), "two\nthree\nfour");
    // now is 1000: 975 seconds back is t=25.
    assert_eq!(out(&[("sinceSeconds", "975")]), "three\nfour");
}

#[test]
fn limit_bytes_cuts_after_everything_else() {
    assert_eq!(out(&[("limitBytes", "5")]), "one\nt");
    assert_eq!(out(&[("timestamps", "true"), ("limitBytes", "10")]), "1970-01-01");
}

#[test]
fn lines_without_stamps_are_kept() {
    let o = opts(&[("timestamps", "true"), ("sinceTime", "1970-01-01T00:00:20Z")]);
    assert_eq!(render(b"a\nb\n", "", &o), b"a\nb\n");
}

fn pod(containers: &[&str]) -> Value {
    let cs: Vec<Value> = containers.iter().map(|c| json!({"name": c, "image": "x"})).collect();
    json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1", "containers": cs}})
}

fn message(r: Result<String, ApiError>) -> String {
    match r {
        Ok(c) => format!("ok {c}"),
        Err(e) => format!("{} {}", e.code.as_u16(), e.message),
    }
}

#[test]
fn containers_are_checked_as_kube_does() {
    assert_eq!(message(container_of(&pod(&["c"]), "p", None)), "ok c");
    assert_eq!(message(container_of(&pod(&["c"]), "p", Some("x"))), "400 container x is not valid for pod p");
    assert_eq!(
        message(container_of(&pod(&["a", "b"]), "p", None)),
        "400 a container name must be specified for pod p, choose one of: [a b]"
    );
    assert_eq!(message(container_of(&pod(&["a", "b"]), "p", Some("b"))), "ok b");
    let mut d = pod(&["a", "b"]);
    d["metadata"]["annotations"] = json!({DEFAULT_CONTAINER_ANNOTATION: "b"});
    assert_eq!(message(container_of(&d, "p", None)), "ok b");
}

#[test]
fn the_log_path_comes_from_the_data_dir_not_the_annotation() {
    let mut p = pod(&["c"]);
    p["metadata"]["annotations"] = json!({LOG_PATH_ANNOTATION: "/etc/shadow"});
    let path = log_path(Some(Path::new("/data")), &p, "ns", "p").unwrap_or_default();
    assert_eq!(path, PathBuf::from("/data/nodes/n1/pods/ns_p/log"));
    // Without a data dir the annotation must be the sandbox log itself.
    assert_eq!(log_path(None, &p, "ns", "p").map_err(|e| e.code.as_u16()), Err(403));
    p["metadata"]["annotations"] = json!({LOG_PATH_ANNOTATION: "/x/nodes/n1/pods/ns_p/../../../../../etc/shadow"});
    assert!(log_path(None, &p, "ns", "p").is_err());
    p["metadata"]["annotations"] = json!({LOG_PATH_ANNOTATION: "/x/nodes/n1/pods/ns_other/log"});
    assert!(log_path(None, &p, "ns", "p").is_err());
    p["metadata"]["annotations"] = json!({LOG_PATH_ANNOTATION: "/x/nodes/n1/pods/ns_p/log"});
    assert_eq!(log_path(None, &p, "ns", "p").unwrap_or_default(), PathBuf::from("/x/nodes/n1/pods/ns_p/log"));
    // A node name that would climb out of the data dir is refused.
    p["spec"]["nodeName"] = json!("..");
    assert!(log_path(Some(Path::new("/data")), &p, "ns", "p").is_err());
}

#[test]
fn a_symlinked_sandbox_log_is_not_followed_elsewhere() -> std::io::Result<()> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("nodes/n1/pods/ns_p");
    std::fs::create_dir_all(&dir)?;
    let secret = tmp.path().join("secret");
    std::fs::write(&secret, "s")?;
    std::os::unix::fs::symlink(&secret, dir.join("log"))?;
    let mut p = pod(&["c"]);
    p["metadata"]["annotations"] = json!({LOG_PATH_ANNOTATION: dir.join("log").to_string_lossy()});
    assert!(log_path(None, &p, "ns", "p").is_err());
    Ok(())
}
