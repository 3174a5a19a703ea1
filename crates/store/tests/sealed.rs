//! Secrets are encrypted at rest: what SQLite holds for a Secret (its row
//! and its history) is ciphertext, while every read path (get, lists,
//! streamed lists, watch replay) gives the object back; a store written
//! before sealing is sealed when it opens.

use ringleader_store::{Keep, ObjectKey, Selector, Store, ENCRYPTION_KEY_FILE};
use rusqlite::Connection;
use serde_json::{json, Value};

const PASSWORD: &str = "aHVudGVyMi1zZWNyZXQ="; // base64 of the secret value

fn secret(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
           "metadata": {"name": name, "namespace": "default"}, "data": {"password": PASSWORD}})
}

/// Every object text SQLite holds for Secrets: rows, then history.
fn raw_secret_texts(dir: &std::path::Path) -> Vec<String> {
    let conn = Connection::open(dir.join("store.sqlite")).unwrap();
    let mut out = Vec::new();
    for table in ["objects", "events"] {
        let mut st = conn.prepare(&format!("SELECT object FROM {table} WHERE kind = 'Secret'")).unwrap();
        let rows = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

/// The texts a streamed list of Secrets sends, kept by `keep`.
fn stream_secrets(store: &Store, keep: Option<Keep<'_>>) -> Vec<String> {
    let mut sent = Vec::new();
    store
        .list_stream::<ringleader_store::StoreError>(
            &Selector::kind("v1", "Secret"),
            None,
            Some(5),
            keep,
            |_| Ok(()),
            |text| {
                sent.push(text.to_string());
                Ok(())
            },
        )
        .unwrap();
    sent
}

#[test]
fn a_secret_is_ciphertext_on_disk_and_itself_through_every_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create(secret("db")).unwrap();
    store
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "plain", "namespace": "default"}, "data": {"k": "not-secret"}}))
        .unwrap();
    let key = ObjectKey::new("v1", "Secret", "default", "db");
    let got = store.get(&key).unwrap().unwrap();
    assert_eq!(got.object["data"]["password"], PASSWORD);
    let (listed, _) = store.list(&Selector::kind("v1", "Secret")).unwrap();
    assert_eq!(listed[0].object["data"]["password"], PASSWORD);
    let streamed = stream_secrets(&store, None);
    assert!(streamed[0].contains(PASSWORD), "{streamed:?}");
    // The text test sees the object opened, not its sealed text.
    let mut keep = |_: &Value| true;
    let opened = |text: &str| text.contains(PASSWORD);
    assert_eq!(stream_secrets(&store, Some((Some(&opened), Some(&mut keep)))).len(), 1);
    // A row the text test turns away is never handed to `keep`.
    let mut parsed = 0;
    let mut count = |_: &Value| {
        parsed += 1;
        true
    };
    let nothing = |_: &str| false;
    let sent = stream_secrets(&store, Some((Some(&nothing), Some(&mut count)))).len();
    assert_eq!((parsed, sent), (0, 0));
    let mut watch = store.watch(&Selector::kind("v1", "Secret"), 0).unwrap();
    let event = watch.try_next().expect("the create replayed");
    assert_eq!(event.object.object["data"]["password"], PASSWORD);
    store.delete(&key, None).unwrap();
    drop(watch);
    drop(store);

    let texts = raw_secret_texts(dir.path());
    assert_eq!(texts.len(), 2, "the row is gone, its two history events stay: {texts:?}");
    let on_disk = std::fs::read(dir.path().join("store.sqlite")).unwrap();
    assert!(!String::from_utf8_lossy(&on_disk).contains(PASSWORD), "the secret's value is in the file");
    for t in &texts {
        assert!(t.starts_with("k8s:enc:aesgcm:v1:key1:"), "{t}");
    }
}

#[test]
fn a_store_written_before_sealing_is_sealed_when_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.create(secret("old")).unwrap();
    }
    // As an older ringleader left it: plain JSON in the row and its event.
    let key = ObjectKey::new("v1", "Secret", "default", "old");
    {
        let conn = Connection::open(dir.path().join("store.sqlite")).unwrap();
        let plain = serde_json::to_string(&secret("old")).unwrap();
        conn.execute("UPDATE objects SET object = ?1 WHERE kind = 'Secret'", [&plain]).unwrap();
        conn.execute("UPDATE events SET object = ?1 WHERE kind = 'Secret'", [&plain]).unwrap();
        // An older ringleader never marked its store sealed.
        conn.execute("DELETE FROM meta WHERE key = 'sealed'", []).unwrap();
    }
    assert!(raw_secret_texts(dir.path()).iter().all(|t| t.contains(PASSWORD)));
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.get(&key).unwrap().unwrap().object["data"]["password"], PASSWORD);
    drop(store);
    let texts = raw_secret_texts(dir.path());
    assert!(texts.iter().all(|t| t.starts_with("k8s:enc:") && !t.contains(PASSWORD)), "{texts:?}");
}

#[test]
fn without_its_key_a_sealed_secret_is_an_error_that_names_the_key_file() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.create(secret("db")).unwrap();
    }
    // A backup restored elsewhere without the original key: a new key is made.
    std::fs::remove_file(dir.path().join(ENCRYPTION_KEY_FILE)).unwrap();
    let store = Store::open(dir.path()).unwrap();
    let err = store.get(&ObjectKey::new("v1", "Secret", "default", "db")).unwrap_err().to_string();
    assert!(err.contains("cannot be decrypted") && err.contains(ENCRYPTION_KEY_FILE), "{err}");
}
