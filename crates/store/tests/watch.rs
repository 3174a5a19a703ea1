//! Watches: history then live, selectors, resuming across a reopen,
//! expiry after pruning, and concurrent writers.

use ringleader_store::{Event, EventType, ObjectKey, Op, Options, Selector, Store, StoreError, Watch};
use serde_json::{json, Value};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

fn obj(kind: &str, namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": {}})
}

fn next(watch: &mut Watch) -> Event {
    watch.recv_timeout(Duration::from_secs(10)).expect("an event within 10 s")
}

fn quiet(watch: &mut Watch) {
    assert!(matches!(watch.recv_timeout(Duration::from_millis(50)), Err(RecvTimeoutError::Timeout)));
}

#[test]
fn history_then_live() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create(obj("Pod", "default", "a")).unwrap();
    let key = ObjectKey::new("v1", "Pod", "default", "a");
    store.patch(&key, &json!({"spec": {"x": 1}}), None).unwrap();

    let mut w = store.watch(&Selector::all(), 0).unwrap();
    let e = next(&mut w);
    assert_eq!((e.kind, e.object.resource_version), (EventType::Added, 1));
    assert!(e.object.object["spec"].get("x").is_none());
    let e = next(&mut w);
    assert_eq!((e.kind, e.object.resource_version), (EventType::Modified, 2));
    assert_eq!(e.object.object["spec"]["x"], 1);
    assert_eq!(e.object.object["metadata"]["resourceVersion"], "2");
    quiet(&mut w);

    let mut from_now = store.watch(&Selector::all(), store.version()).unwrap();
    let mut from_one = store.watch(&Selector::all(), 1).unwrap();
    assert_eq!(next(&mut from_one).object.resource_version, 2);

    let gone = store.delete(&key, None).unwrap();
    for w in [&mut w, &mut from_now, &mut from_one] {
        let e = next(w);
        assert_eq!(e.kind, EventType::Deleted);
        assert_eq!(*e.object, gone);
        assert_eq!(e.object.resource_version, 3);
        assert_eq!(e.object.object["spec"]["x"], 1);
        quiet(w);
    }
}

#[test]
fn from_beyond_the_current_version_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut w = store.watch(&Selector::all(), 2).unwrap();
    store.create(obj("Pod", "d", "a")).unwrap();
    store.create(obj("Pod", "d", "b")).unwrap();
    store.create(obj("Pod", "d", "c")).unwrap();
    assert_eq!(next(&mut w).object.resource_version, 3);
    quiet(&mut w);
}

#[test]
fn selectors_filter_history_and_live() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.create(obj("Pod", "a", "p1")).unwrap();
    store.create(obj("ConfigMap", "a", "c1")).unwrap();
    store.create(obj("Pod", "b", "p2")).unwrap();

    let mut pods = store.watch(&Selector::kind("v1", "Pod"), 0).unwrap();
    let mut pods_a = store.watch(&Selector::kind("v1", "Pod").in_namespace("a"), 0).unwrap();
    let mut ns_b = store.watch(&Selector { namespace: Some("b".into()), ..Selector::all() }, 0).unwrap();
    let mut other = store.watch(&Selector::kind("v2", "Pod"), 0).unwrap();

    store.create(obj("Pod", "a", "p3")).unwrap();
    store.create(obj("ConfigMap", "b", "c2")).unwrap();

    let names = |w: &mut Watch| -> Vec<String> {
        std::iter::from_fn(|| w.recv_timeout(Duration::from_millis(50)).ok())
            .map(|e| e.object.key.name.clone())
            .collect()
    };
    assert_eq!(names(&mut pods), ["p1", "p2", "p3"]);
    assert_eq!(names(&mut pods_a), ["p1", "p3"]);
    assert_eq!(names(&mut ns_b), ["p2", "c2"]);
    assert!(names(&mut other).is_empty());
}

#[test]
fn resumes_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        let ops = (0..10).map(|i| Op::Create(obj("Pod", "d", &format!("p{i}")))).collect();
        store.batch(ops).unwrap();
        store.delete(&ObjectKey::new("v1", "Pod", "d", "p0"), None).unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let mut w = store.watch(&Selector::all(), 7).unwrap();
    let got: Vec<(u64, EventType)> =
        (0..4).map(|_| next(&mut w)).map(|e| (e.object.resource_version, e.kind)).collect();
    assert_eq!(got, [(8, EventType::Added), (9, EventType::Added), (10, EventType::Added), (11, EventType::Deleted)]);
    store.create(obj("Pod", "d", "late")).unwrap();
    assert_eq!(next(&mut w).object.resource_version, 12);
}

#[test]
fn expired_after_pruning() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options { history: 10 };
    {
        let store = Store::open_with(dir.path(), options.clone()).unwrap();
        for i in 0..50 {
            store.create(obj("Pod", "d", &format!("p{i}"))).unwrap();
        }
        match store.watch(&Selector::all(), 0) {
            Err(StoreError::Expired { requested: 0, oldest }) => assert!((39..=40).contains(&oldest), "{oldest}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
    // The retained history is still there after a reopen, and nothing older.
    let store = Store::open_with(dir.path(), options).unwrap();
    let Err(StoreError::Expired { oldest, .. }) = store.watch(&Selector::all(), 5) else { panic!("not expired") };
    let mut w = store.watch(&Selector::all(), oldest).unwrap();
    let first = next(&mut w);
    assert_eq!(first.object.resource_version, oldest + 1);
    let versions: Vec<u64> = std::iter::from_fn(|| w.try_next()).map(|e| e.object.resource_version).collect();
    assert_eq!(versions, ((oldest + 2)..=50).collect::<Vec<_>>());
    assert!(store.watch(&Selector::all(), 40).is_ok());
    assert!(store.watch(&Selector::all(), 50).is_ok());
}

#[test]
fn concurrent_writers_give_an_ordered_gapless_stream() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut early = store.watch(&Selector::all(), 0).unwrap();
    const THREADS: usize = 4;
    const WRITES: usize = 60;
    let mut late = None;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let store = store.clone();
            s.spawn(move || {
                for i in 0..WRITES {
                    let name = format!("t{t}-{i}");
                    if i % 3 == 0 {
                        let ops = vec![
                            Op::Create(obj("Pod", "d", &name)),
                            Op::Patch {
                                key: ObjectKey::new("v1", "Pod", "d", &name),
                                patch: json!({"spec": {"i": i}}),
                                expected: None,
                            },
                        ];
                        store.batch(ops).unwrap();
                    } else {
                        store.create(obj("Pod", "d", &name)).unwrap();
                    }
                }
            });
        }
        // A watch that starts mid-way from whatever version is current.
        std::thread::sleep(Duration::from_millis(20));
        let from = store.version();
        late = Some((from, store.watch(&Selector::all(), from).unwrap()));
    });
    let total = (THREADS * WRITES + THREADS * WRITES.div_ceil(3)) as u64;
    assert_eq!(store.version(), total);
    let versions: Vec<u64> = (0..total).map(|_| next(&mut early).object.resource_version).collect();
    assert_eq!(versions, (1..=total).collect::<Vec<_>>());
    quiet(&mut early);
    let (from, mut late) = late.unwrap();
    let versions: Vec<u64> = (from..total).map(|_| next(&mut late).object.resource_version).collect();
    assert_eq!(versions, ((from + 1)..=total).collect::<Vec<_>>());
    quiet(&mut late);
    assert_eq!(store.list(&Selector::all()).unwrap().0.len(), THREADS * WRITES);
}

#[test]
fn streams_end_when_the_store_goes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut a = store.watch(&Selector::all(), 0).unwrap();
    store.close();
    assert!(matches!(a.recv_timeout(Duration::from_secs(1)), Err(RecvTimeoutError::Disconnected)));
    let mut b = store.watch(&Selector::all(), 0).unwrap();
    let clone = store.clone();
    drop(store);
    clone.create(obj("Pod", "d", "x")).unwrap();
    assert_eq!(next(&mut b).object.resource_version, 1);
    drop(clone);
    assert!(matches!(b.recv_timeout(Duration::from_secs(1)), Err(RecvTimeoutError::Disconnected)));
}

#[test]
fn dropped_receivers_do_not_block_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for _ in 0..10 {
        drop(store.watch(&Selector::all(), 0).unwrap());
    }
    store.create(obj("Pod", "d", "x")).unwrap();
    let mut w = store.watch(&Selector::all(), 0).unwrap();
    assert_eq!(next(&mut w).object.resource_version, 1);
}

#[tokio::test]
async fn async_consumers() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut w = store.watch(&Selector::all(), 0).unwrap();
    let writer = store.clone();
    let task = tokio::task::spawn_blocking(move || {
        for i in 0..20 {
            writer.create(obj("Pod", "d", &format!("p{i}"))).unwrap();
        }
    });
    for v in 1..=20 {
        let e = tokio::time::timeout(Duration::from_secs(10), w.next()).await.unwrap().unwrap();
        assert_eq!(e.object.resource_version, v);
    }
    task.await.unwrap();
}
