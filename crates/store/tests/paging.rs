//! `list_page`: key order, limits, continuation, filters and writes between
//! pages, against a real SQLite file.

use ringleader_store::{ObjectKey, Selector, Store};
use serde_json::{json, Value};

fn pod(ns: &str, name: &str, app: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
    })
}

fn names(items: &[ringleader_store::Stored]) -> Vec<String> {
    items.iter().map(|s| format!("{}/{}", s.key.namespace, s.key.name)).collect()
}

fn filled() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for ns in ["b", "a"] {
        for i in 0..5 {
            store.create(pod(ns, &format!("p{i}"), if i % 2 == 0 { "even" } else { "odd" })).unwrap();
        }
    }
    // Another kind in between must never leak into a pod list.
    store
        .create(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "a"}}))
        .unwrap();
    (dir, store)
}

#[test]
fn pages_walk_every_object_once_in_key_order() {
    let (_dir, store) = filled();
    let sel = Selector::kind("v1", "Pod");
    let mut seen = Vec::new();
    let mut after: Option<ObjectKey> = None;
    let mut pages = 0;
    for _ in 0..10 {
        let page = store.list_page(&sel, after.as_ref(), Some(3), |_| true).unwrap();
        pages += 1;
        assert!(page.items.len() <= 3);
        seen.extend(names(&page.items));
        match page.next {
            Some(next) => {
                assert_eq!(page.remaining, Some(10 - seen.len() as u64));
                after = Some(next);
            }
            None => {
                assert_eq!(page.remaining, None);
                break;
            }
        }
    }
    assert_eq!(pages, 4);
    let mut want: Vec<String> = ["a", "b"].iter().flat_map(|ns| (0..5).map(move |i| format!("{ns}/p{i}"))).collect();
    want.sort();
    assert_eq!(seen, want);
}

#[test]
fn an_exact_fit_leaves_no_next_page_and_no_limit_returns_all() {
    let (_dir, store) = filled();
    let sel = Selector::kind("v1", "Pod").in_namespace("a");
    let page = store.list_page(&sel, None, Some(5), |_| true).unwrap();
    assert_eq!(page.items.len(), 5);
    assert_eq!(page.next, None);
    let page = store.list_page(&Selector::kind("v1", "Pod"), None, None, |_| true).unwrap();
    assert_eq!(page.items.len(), 10);
    assert_eq!(page.version, store.version());
}

#[test]
fn a_filter_fills_pages_with_matches_and_drops_the_count() {
    let (_dir, store) = filled();
    let sel = Selector::kind("v1", "Pod");
    let even = |o: &Value| o["metadata"]["labels"]["app"] == "even";
    let first = store.list_page(&sel, None, Some(4), even).unwrap();
    assert_eq!(names(&first.items), ["a/p0", "a/p2", "a/p4", "b/p0"]);
    assert_eq!(first.remaining, None, "not counted when a filter skipped rows");
    let next = first.next.clone().unwrap();
    assert_eq!(next.name, "p0");
    let second = store.list_page(&sel, Some(&next), Some(4), even).unwrap();
    assert_eq!(names(&second.items), ["b/p2", "b/p4"]);
    assert_eq!(second.next, None);
}

#[test]
fn writes_between_pages_are_seen_only_past_the_cursor() {
    let (_dir, store) = filled();
    let sel = Selector::kind("v1", "Pod");
    let first = store.list_page(&sel, None, Some(5), |_| true).unwrap();
    let after = first.next.clone().unwrap();
    assert_eq!(after, ObjectKey::new("v1", "Pod", "a", "p4"));
    // Before the cursor: not in later pages. After it: in them.
    store.create(pod("a", "p00", "odd")).unwrap();
    store.create(pod("b", "p9", "odd")).unwrap();
    store.delete(&ObjectKey::new("v1", "Pod", "b", "p1"), None).unwrap();
    let rest = store.list_page(&sel, Some(&after), Some(100), |_| true).unwrap();
    assert_eq!(names(&rest.items), ["b/p0", "b/p2", "b/p3", "b/p4", "b/p9"]);
    assert!(rest.version > first.version);
}

#[test]
fn dry_runs_check_everything_and_write_nothing() {
    let (_dir, store) = filled();
    let before = store.version();
    let mut watch = store.watch(&Selector::all(), before).unwrap();
    let out = store.dry_run(vec![ringleader_store::Op::Create(pod("a", "new", "x"))]).unwrap();
    assert_eq!(out[0].object["metadata"]["name"], "new");
    assert_eq!(out[0].object["metadata"]["uid"].as_str().map(str::len), Some(36));
    assert!(matches!(
        store.dry_run(vec![ringleader_store::Op::Create(pod("a", "p0", "x"))]),
        Err(ringleader_store::StoreError::AlreadyExists(_))
    ));
    let gone = store
        .dry_run(vec![ringleader_store::Op::Delete { key: ObjectKey::new("v1", "Pod", "a", "p0"), expected: None }]);
    assert_eq!(gone.unwrap()[0].key.name, "p0");
    assert_eq!(store.version(), before);
    assert!(store.get(&ObjectKey::new("v1", "Pod", "a", "new")).unwrap().is_none());
    assert!(store.get(&ObjectKey::new("v1", "Pod", "a", "p0")).unwrap().is_some());
    store.create(pod("a", "real", "x")).unwrap();
    // The first event a watcher sees is the real write's, with the next version.
    let e = watch.try_next().unwrap();
    assert_eq!((e.object.key.name.as_str(), e.object.resource_version), ("real", before + 1));
}

/// `list_stream` hands over, page by page, exactly what `list_page` builds:
/// the same head (version, continue point, remaining count) and each row's
/// stored text equal to the page's object, with and without a filter.
#[test]
fn streamed_pages_match_built_pages() {
    let (_dir, store) = filled();
    let odd = |o: &Value| o["metadata"]["labels"]["app"] == "odd";
    for sel in [Selector::kind("v1", "Pod"), Selector::kind("v1", "Pod").in_namespace("b")] {
        for limit in [None, Some(1), Some(2), Some(3), Some(5), Some(10), Some(11)] {
            for filtered in [false, true] {
                let mut after: Option<ObjectKey> = None;
                for _ in 0..12 {
                    let page = store.list_page(&sel, after.as_ref(), limit, |o| !filtered || odd(o)).unwrap();
                    let mut head = None;
                    let mut rows: Vec<Value> = Vec::new();
                    let mut keep = |o: &Value| odd(o);
                    // The text test turns the even ones away before they are
                    // parsed; with an odd limit it decides alone.
                    let may_be_odd = |text: &str| text.contains(r#""app":"odd""#);
                    let object: Option<&mut dyn FnMut(&Value) -> bool> =
                        limit.is_none_or(|l| l % 2 == 0).then_some(&mut keep);
                    let keep: Option<ringleader_store::Keep<'_>> = filtered.then_some((Some(&may_be_odd), object));
                    store
                        .list_stream::<ringleader_store::StoreError>(
                            &sel,
                            after.as_ref(),
                            limit,
                            keep,
                            |h| {
                                head = Some(h.clone());
                                Ok(())
                            },
                            |text| {
                                rows.push(serde_json::from_str(text).unwrap());
                                Ok(())
                            },
                        )
                        .unwrap();
                    let head = head.expect("head before rows");
                    let what = format!("{sel:?} limit {limit:?} filtered {filtered} after {after:?}");
                    assert_eq!(
                        (head.version, &head.next, head.remaining),
                        (page.version, &page.next, page.remaining),
                        "{what}"
                    );
                    let objects: Vec<Value> = page.items.iter().map(|s| s.object.clone()).collect();
                    assert_eq!(rows, objects, "{what}");
                    match page.next {
                        Some(next) => after = Some(next),
                        None => break,
                    }
                }
            }
        }
    }
}

/// A callback's error stops the stream and is what the call returns.
#[test]
fn a_row_error_stops_the_stream() {
    let (_dir, store) = filled();
    let mut rows = 0;
    let result = store.list_stream(
        &Selector::kind("v1", "Pod"),
        None,
        None,
        None,
        |_| Ok(()),
        |_| {
            rows += 1;
            if rows == 3 {
                return Err(ringleader_store::StoreError::Io("client gone".into()));
            }
            Ok(())
        },
    );
    assert!(matches!(result, Err(ringleader_store::StoreError::Io(m)) if m == "client gone"));
    assert_eq!(rows, 3);
}
