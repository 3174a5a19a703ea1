//! A store written by a build of schema 1 (objects in a `WITHOUT ROWID`
//! table) opens in this one: its objects are moved, as they were, into the
//! rowid table of schema 2, and reads, lists, writes and conflicts behave
//! as before.

use ringleader_store::{ObjectKey, Op, Selector, Store, StoreError, DB_FILE, SCHEMA_VERSION};
use rusqlite::Connection;
use serde_json::{json, Value};
use std::path::Path;

/// Schema 1's tables, as that build created them.
const SCHEMA_1: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE objects (
    api_version TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    object TEXT NOT NULL,
    PRIMARY KEY (api_version, kind, namespace, name)
) WITHOUT ROWID;
CREATE INDEX object_keys ON objects (api_version, kind, namespace, name);
CREATE TABLE events (
    version INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    api_version TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    object TEXT NOT NULL
);
PRAGMA user_version = 1;
";

fn config_map(name: &str, version: u64, data: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "resourceVersion": version.to_string()},
        "data": {"payload": data},
    })
}

/// A schema-1 store holding `n` ConfigMaps, every other one over 1,002
/// bytes (the size that spilled out of schema 1's rows), at versions 1..=n.
fn schema_1_store(dir: &Path, n: u64) -> Vec<Value> {
    let conn = Connection::open(dir.join(DB_FILE)).expect("open");
    conn.execute_batch(SCHEMA_1).expect("schema 1");
    let mut objects = Vec::new();
    for v in 1..=n {
        let data = if v % 2 == 0 { "x".repeat(3000) } else { format!("small-{v}") };
        // Inserted out of key order: the migrated table must still list in key order.
        let o = config_map(&format!("cm-{:03}", (v * 7) % n), v, &data);
        let text = serde_json::to_string(&o).expect("json");
        let name = o["metadata"]["name"].as_str().expect("name").to_string();
        conn.execute(
            "INSERT INTO objects VALUES ('v1', 'ConfigMap', 'default', ?1, ?2, ?3)",
            rusqlite::params![name, v, text],
        )
        .expect("object");
        conn.execute(
            "INSERT INTO events VALUES (?1, 'ADDED', 'v1', 'ConfigMap', 'default', ?2, ?3)",
            rusqlite::params![v, name, text],
        )
        .expect("event");
        objects.push(o);
    }
    conn.execute_batch(&format!("INSERT INTO meta VALUES ('version', {n}), ('pruned', 0);")).expect("meta");
    objects.sort_by(|a, b| a["metadata"]["name"].as_str().cmp(&b["metadata"]["name"].as_str()));
    objects
}

fn table_sql(dir: &Path) -> (String, i64, Vec<String>) {
    let conn = Connection::open(dir.join(DB_FILE)).expect("open");
    let sql: String = conn
        .query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'objects'", [], |r| r.get(0))
        .expect("objects table");
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).expect("user_version");
    let mut st =
        conn.prepare("SELECT name FROM sqlite_master WHERE tbl_name = 'objects' AND type = 'index'").expect("q");
    let indexes =
        st.query_map([], |r| r.get::<_, String>(0)).expect("indexes").collect::<Result<_, _>>().expect("rows");
    (sql, version, indexes)
}

#[test]
fn a_schema_1_store_is_migrated_whole_and_works_as_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let before = schema_1_store(dir.path(), 40);
    let (sql, version, _) = table_sql(dir.path());
    assert!(sql.to_ascii_uppercase().contains("WITHOUT ROWID") && version == 1, "not a schema-1 store: {sql}");

    let store = Store::open(dir.path()).expect("open the schema-1 store");
    // Everything, in key order, with the versions and texts it had.
    let (listed, at) = store.list(&Selector::kind("v1", "ConfigMap")).expect("list");
    assert_eq!(at, 40);
    assert_eq!(listed.len(), before.len());
    for (got, want) in listed.iter().zip(&before) {
        assert_eq!(&got.object, want);
        assert_eq!(got.resource_version.to_string(), want["metadata"]["resourceVersion"].as_str().unwrap_or(""));
    }
    // A write goes on from the store's version; a create of a key that
    // exists is refused as before (the key index is unique).
    let key = ObjectKey::new("v1", "ConfigMap", "default", "cm-001");
    let patched = store.patch(&key, &json!({"data": {"payload": "y".repeat(5000)}}), None).expect("patch");
    assert_eq!(patched.resource_version, 41);
    match store.create(config_map("cm-001", 0, "again")) {
        Err(StoreError::AlreadyExists(k)) => assert_eq!(k, key),
        other => panic!("a second cm-001 was not refused: {other:?}"),
    }
    let created = store.batch(vec![Op::Create(config_map("cm-new", 0, "new"))]).expect("create");
    assert_eq!(created[0].resource_version, 42);
    store.delete(&ObjectKey::new("v1", "ConfigMap", "default", "cm-002"), None).expect("delete");
    drop(store);

    let (sql, version, indexes) = table_sql(dir.path());
    assert!(!sql.to_ascii_uppercase().contains("WITHOUT ROWID"), "still schema 1: {sql}");
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(indexes, ["object_key"], "schema 1's index went with its table");

    // And again after a restart: nothing migrated twice, nothing lost.
    let store = Store::open(dir.path()).expect("reopen");
    let (listed, at) = store.list(&Selector::kind("v1", "ConfigMap")).expect("list");
    assert_eq!(at, 43);
    assert_eq!(listed.len(), 40);
    let names: Vec<&str> = listed.iter().filter_map(|s| s.object["metadata"]["name"].as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "listed in key order");
    assert!(names.contains(&"cm-new") && !names.contains(&"cm-002"));
    let got = store.get(&key).expect("get").expect("cm-001");
    assert_eq!(got.object["data"]["payload"].as_str().map(str::len), Some(5000));
}
