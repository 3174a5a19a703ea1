//! Create/read/update/patch/delete, errors, versions and batches against a
//! real SQLite file.

use ringleader_store::{ObjectKey, Op, Selector, Store, StoreError};
use serde_json::{json, Value};

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Pending"}
    })
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new("v1", "Pod", "default", name)
}

fn rv(object: &Value) -> &str {
    object["metadata"]["resourceVersion"].as_str().unwrap_or("")
}

#[test]
fn create_get_update_delete() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.version(), 0);
    assert!(dir.path().join("store.sqlite").exists());

    let a = store.create(pod("a")).unwrap();
    assert_eq!(a.resource_version, 1);
    assert_eq!(a.key, key("a"));
    assert_eq!(rv(&a.object), "1");
    let uid = a.object["metadata"]["uid"].as_str().unwrap().to_string();
    let created = a.object["metadata"]["creationTimestamp"].as_str().unwrap().to_string();
    assert_eq!(uid.len(), 36);
    assert!(created.ends_with('Z') && created.len() == 20, "{created}");
    assert_eq!(store.get(&key("a")).unwrap(), Some(a.clone()));
    assert_eq!(store.version(), 1);

    let mut changed = a.object.clone();
    changed["status"]["phase"] = json!("Running");
    changed["metadata"]["uid"] = json!("forged");
    changed["metadata"]["creationTimestamp"] = json!("1999-01-01T00:00:00Z");
    let b = store.update(changed).unwrap();
    assert_eq!(b.resource_version, 2);
    assert_eq!(b.object["status"]["phase"], "Running");
    assert_eq!(b.object["metadata"]["uid"], json!(uid));
    assert_eq!(b.object["metadata"]["creationTimestamp"], json!(created));

    let gone = store.delete(&key("a"), Some(2)).unwrap();
    assert_eq!(gone.resource_version, 3);
    assert_eq!(rv(&gone.object), "3");
    assert_eq!(gone.object["status"]["phase"], "Running");
    assert_eq!(store.get(&key("a")).unwrap(), None);
    assert_eq!(store.version(), 3);
}

#[test]
fn errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create(pod("a")).unwrap();
    assert!(matches!(store.create(pod("a")), Err(StoreError::AlreadyExists(k)) if k == key("a")));
    assert!(matches!(store.update(pod("b")), Err(StoreError::NotFound(k)) if k == key("b")));
    assert!(matches!(store.patch(&key("b"), &json!({}), None), Err(StoreError::NotFound(_))));
    assert!(matches!(store.delete(&key("b"), None), Err(StoreError::NotFound(_))));

    let invalid = |r: Result<_, StoreError>, field: &str| match r {
        Err(StoreError::Invalid(m)) => assert!(m.contains(field), "{m} should name {field}"),
        other => panic!("expected Invalid naming {field}, got {other:?}"),
    };
    invalid(store.create(json!({"apiVersion": "v1", "metadata": {"name": "x"}})), "kind");
    invalid(store.create(json!({"kind": "Pod", "metadata": {"name": "x"}})), "apiVersion");
    invalid(store.create(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {}})), "metadata.name");
    invalid(store.create(json!({"apiVersion": "v1", "kind": "Pod"})), "metadata.name");
    invalid(store.create(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": ""}})), "metadata.name");
    invalid(store.create(json!({"apiVersion": "v1", "kind": "Pod", "metadata": 3})), "metadata");
    invalid(store.create(json!([1, 2])), "object");
    invalid(store.create(json!({"apiVersion": 1, "kind": "Pod", "metadata": {"name": "x"}})), "apiVersion");
    invalid(
        store.create(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": 7}})),
        "metadata.namespace",
    );
    let mut bad = pod("a");
    bad["metadata"]["resourceVersion"] = json!("abc");
    invalid(store.update(bad), "metadata.resourceVersion");
    invalid(store.patch(&key("a"), &json!([1]), None), "patch");
    invalid(store.patch(&key("a"), &json!({"metadata": "x"}), None), "metadata");
    // Nothing above was written.
    assert_eq!(store.version(), 1);
}

#[test]
fn stale_versions_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = store.create(pod("a")).unwrap();
    let b = store.patch(&key("a"), &json!({"status": {"phase": "Running"}}), Some(a.resource_version)).unwrap();
    assert_eq!(b.resource_version, 2);

    let mut stale = a.object.clone();
    stale["spec"]["nodeName"] = json!("n1");
    match store.update(stale.clone()) {
        Err(StoreError::Conflict { key: k, expected: 1, actual: 2 }) => assert_eq!(k, key("a")),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        store.patch(&key("a"), &json!({"spec": {"nodeName": "n1"}}), Some(1)),
        Err(StoreError::Conflict { expected: 1, actual: 2, .. })
    ));
    assert!(matches!(store.delete(&key("a"), Some(1)), Err(StoreError::Conflict { expected: 1, actual: 2, .. })));
    assert_eq!(store.version(), 2);

    // A numeric resourceVersion is read like the string one; an empty or
    // absent one means "whatever is stored".
    stale["metadata"]["resourceVersion"] = json!(2);
    assert_eq!(store.update(stale.clone()).unwrap().resource_version, 3);
    stale["metadata"]["resourceVersion"] = json!("");
    stale["spec"]["nodeName"] = json!("n2");
    assert_eq!(store.update(stale).unwrap().resource_version, 4);
    let mut fresh = pod("a");
    fresh["spec"]["nodeName"] = json!("n3");
    assert_eq!(store.apply(fresh).unwrap().resource_version, 5);
}

#[test]
fn no_op_writes_keep_the_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = store.create(pod("a")).unwrap();
    assert_eq!(store.patch(&key("a"), &json!({"status": {"phase": "Pending"}}), None).unwrap(), a);
    assert_eq!(store.update(a.object.clone()).unwrap(), a);
    assert_eq!(store.apply(pod("a")).unwrap(), a);
    assert_eq!(store.version(), 1);
}

#[test]
fn merge_patch_semantics() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let a = store.create(pod("a")).unwrap();
    let patched = store
        .patch(
            &key("a"),
            &json!({
                "spec": {"nodeName": "n1", "containers": [{"name": "main", "env": [{"name": "RANK", "value": "0"}]}]},
                "metadata": {"labels": {"app": null, "role": "worker"}, "annotations": {"ringleader.io/devices": "0,1"}},
                "status": null
            }),
            None,
        )
        .unwrap();
    let o = &patched.object;
    assert_eq!(o["spec"]["nodeName"], "n1");
    assert_eq!(o["spec"]["containers"], json!([{"name": "main", "env": [{"name": "RANK", "value": "0"}]}]));
    assert_eq!(o["metadata"]["labels"], json!({"role": "worker"}));
    assert_eq!(o["metadata"]["annotations"]["ringleader.io/devices"], "0,1");
    assert!(o.get("status").is_none());
    assert_eq!(o["metadata"]["uid"], a.object["metadata"]["uid"]);

    // Identity and store-owned fields in a patch are ignored.
    let same = store
        .patch(
            &key("a"),
            &json!({
                "apiVersion": "v2", "kind": "Other",
                "metadata": {"name": "b", "namespace": null, "uid": "x", "resourceVersion": "77",
                             "creationTimestamp": null, "labels": {"more": "1"}}
            }),
            None,
        )
        .unwrap();
    assert_eq!(same.key, key("a"));
    assert_eq!(same.object["apiVersion"], "v1");
    assert_eq!(same.object["kind"], "Pod");
    assert_eq!(same.object["metadata"]["name"], "a");
    assert_eq!(same.object["metadata"]["namespace"], "default");
    assert_eq!(same.object["metadata"]["uid"], a.object["metadata"]["uid"]);
    assert_eq!(same.object["metadata"]["creationTimestamp"], a.object["metadata"]["creationTimestamp"]);
    assert_eq!(same.object["metadata"]["resourceVersion"], json!(same.resource_version.to_string()));
    assert_eq!(same.object["metadata"]["labels"], json!({"role": "worker", "more": "1"}));
    // Even dropping the whole metadata keeps identity.
    let bare = store.patch(&key("a"), &json!({"metadata": null}), None).unwrap();
    assert_eq!(bare.object["metadata"]["name"], "a");
    assert!(bare.object["metadata"].get("labels").is_none());
    assert_eq!(store.get(&key("a")).unwrap(), Some(bare));
}

#[test]
fn versions_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let uid;
    {
        let store = Store::open(dir.path()).unwrap();
        uid = store.create(pod("a")).unwrap().object["metadata"]["uid"].clone();
        store.create(pod("b")).unwrap();
        store.delete(&key("b"), None).unwrap();
        assert_eq!(store.version(), 3);
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.version(), 3);
    let a = store.patch(&key("a"), &json!({"status": {"phase": "Running"}}), None).unwrap();
    assert_eq!(a.resource_version, 4);
    assert_eq!(a.object["metadata"]["uid"], uid);
    let (objects, version) = store.list(&Selector::all()).unwrap();
    assert_eq!(version, 4);
    assert_eq!(objects, vec![a]);
}

#[test]
fn open_creates_missing_dirs() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("x/y/z");
    let store = Store::open(&deep).unwrap();
    store.create(pod("a")).unwrap();
    assert!(deep.join("store.sqlite").exists());
}

#[test]
fn list_orders_by_key_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for name in ["c", "a", "b"] {
        store.create(pod(name)).unwrap();
    }
    let mut other = pod("a");
    other["metadata"]["namespace"] = json!("team");
    store.create(other).unwrap();
    store.create(json!({"apiVersion": "ringleader.io/v1alpha1", "kind": "Node", "metadata": {"name": "n1"}})).unwrap();

    let (all, version) = store.list(&Selector::all()).unwrap();
    assert_eq!(version, 5);
    let keys: Vec<String> = all.iter().map(|s| s.key.to_string()).collect();
    assert_eq!(keys, ["Node/n1", "Pod/default/a", "Pod/default/b", "Pod/default/c", "Pod/team/a"]);
    let mut sorted = all.iter().map(|s| s.key.clone()).collect::<Vec<_>>();
    sorted.sort();
    assert_eq!(sorted, all.iter().map(|s| s.key.clone()).collect::<Vec<_>>());

    let (pods, _) = store.list(&Selector::kind("v1", "Pod")).unwrap();
    assert_eq!(pods.len(), 4);
    let (team, _) = store.list(&Selector::kind("v1", "Pod").in_namespace("team")).unwrap();
    assert_eq!(team.len(), 1);
    let (cluster, _) = store.list(&Selector { namespace: Some(String::new()), ..Selector::all() }).unwrap();
    assert_eq!(cluster.len(), 1);
    assert_eq!(cluster[0].key, ObjectKey::new("ringleader.io/v1alpha1", "Node", "", "n1"));
    assert!(cluster[0].object["metadata"].get("namespace").is_none());
}

#[test]
fn batch_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create(pod("existing")).unwrap();
    let mut watch = store.watch(&Selector::all(), store.version()).unwrap();

    let ops = vec![Op::Create(pod("x1")), Op::Create(pod("x2")), Op::Create(pod("existing")), Op::Create(pod("x3"))];
    assert!(matches!(store.batch(ops), Err(StoreError::AlreadyExists(k)) if k == key("existing")));
    assert_eq!(store.version(), 1);
    assert_eq!(store.list(&Selector::all()).unwrap().0.len(), 1);
    assert!(watch.try_next().is_none());

    let ops = vec![
        Op::Create(pod("x1")),
        Op::Patch { key: key("x1"), patch: json!({"spec": {"nodeName": "n1"}}), expected: Some(2) },
        Op::Apply(pod("x2")),
        Op::Delete { key: key("existing"), expected: None },
        Op::Update({
            let mut p = pod("x2");
            p["metadata"]["resourceVersion"] = json!("4");
            p["status"]["phase"] = json!("Running");
            p
        }),
    ];
    let out = store.batch(ops).unwrap();
    assert_eq!(out.iter().map(|s| s.resource_version).collect::<Vec<_>>(), [2, 3, 4, 5, 6]);
    assert_eq!(store.version(), 6);
    let seen: Vec<(u64, &str)> =
        std::iter::from_fn(|| watch.try_next()).map(|e| (e.object.resource_version, e.kind.as_str())).collect();
    assert_eq!(seen, [(2, "ADDED"), (3, "MODIFIED"), (4, "ADDED"), (5, "DELETED"), (6, "MODIFIED")]);
    assert!(store.batch(Vec::new()).unwrap().is_empty());
}

#[test]
fn big_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let ops: Vec<Op> = (0..5000).map(|i| Op::Create(pod(&format!("p{i:05}")))).collect();
    let start = std::time::Instant::now();
    let out = store.batch(ops).unwrap();
    let took = start.elapsed();
    assert_eq!(out.len(), 5000);
    assert_eq!(out.last().map(|s| s.resource_version), Some(5000));
    let (pods, version) = store.list(&Selector::kind("v1", "Pod")).unwrap();
    assert_eq!((pods.len(), version), (5000, 5000));
    // Generous: debug builds are several times slower than release.
    assert!(took < std::time::Duration::from_secs(20), "5,000 creates took {took:?}");
}

#[test]
fn store_is_shareable() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<Store>();
}

/// Other users of the machine can read neither the directory nor the
/// database (nor its WAL), even where they were made world-readable before.
#[test]
fn store_files_are_private() -> Result<(), Box<dyn std::error::Error>> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    std::fs::create_dir(&data)?;
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755))?;
    let store = Store::open(&data)?;
    store.create(pod("a"))?;
    let mode = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(mode(&data)?, 0o700);
    for file in ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm"] {
        let path = data.join(file);
        assert!(path.exists(), "{file} missing");
        assert_eq!(mode(&path)?, 0o600, "{file}");
    }
    drop(store);
    std::fs::set_permissions(data.join("store.sqlite"), std::fs::Permissions::from_mode(0o644))?;
    let _store = Store::open(&data)?;
    assert_eq!(mode(&data.join("store.sqlite"))?, 0o600);
    Ok(())
}

/// A write starts from the writer's own copy of what it last wrote; that
/// copy must never outlive a rolled-back transaction or a row another
/// process rewrote.
#[test]
fn writes_start_from_the_rows_as_they_stand() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create(pod("a")).unwrap();
    // A transaction that patched `a` and then failed: its version of `a` is not kept.
    let failed = vec![
        Op::Patch { key: key("a"), patch: json!({"status": {"phase": "Running"}}), expected: None },
        Op::Create(pod("a")),
    ];
    assert!(matches!(store.batch(failed), Err(StoreError::AlreadyExists(_))));
    let patched = store.patch(&key("a"), &json!({"spec": {"nodeName": "n1"}}), Some(1)).unwrap();
    assert_eq!(patched.object["status"]["phase"], "Pending");
    assert_eq!(patched.object["spec"]["nodeName"], "n1");

    // A second process writing the same file: the next write builds on its row.
    let other = Store::open(dir.path()).unwrap();
    other.patch(&key("a"), &json!({"metadata": {"labels": {"by": "other"}}}), None).unwrap();
    let next = store.patch(&key("a"), &json!({"status": {"phase": "Running"}}), None).unwrap();
    assert_eq!(next.object["metadata"]["labels"]["by"], "other");
    assert_eq!(next.object["spec"]["nodeName"], "n1");
    assert_eq!(store.get(&key("a")).unwrap().unwrap().object, next.object);

    // A deleted and re-created object is read fresh, not from the old copy.
    store.delete(&key("a"), None).unwrap();
    let again = store.create(pod("a")).unwrap();
    let patched = store.patch(&key("a"), &json!({"status": {"reason": "x"}}), None).unwrap();
    assert!(patched.object["spec"].get("nodeName").is_none());
    assert_eq!(patched.object["metadata"]["uid"], again.object["metadata"]["uid"]);
}

#[test]
fn a_failed_batch_gives_its_ops_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create(pod("a")).unwrap();
    let ops = vec![
        Op::Patch { key: key("a"), patch: json!({"spec": {"nodeName": "n1"}}), expected: Some(1) },
        Op::Patch { key: key("missing"), patch: json!({"spec": {"nodeName": "n1"}}), expected: None },
    ];
    let failed = *store.batch_kept(ops.clone()).unwrap_err();
    let (e, back) = (failed.error, failed.ops);
    assert!(matches!(e, StoreError::NotFound(k) if k == key("missing")));
    assert_eq!(format!("{back:?}"), format!("{ops:?}"));
    assert_eq!(store.version(), 1, "nothing written");
    let out = store.batch_kept(back[..1].to_vec()).unwrap();
    assert_eq!(out[0].object["spec"]["nodeName"], "n1");
}
