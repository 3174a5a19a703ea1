use super::*;
use proptest::prelude::*;
use serde_json::json;

fn writer(manager: &str, now: &str) -> Writer {
    Writer {
        manager: manager.into(),
        api_version: "apps/v1".into(),
        subresource: String::new(),
        now: now.into(),
        schema: Schema { builtin: true },
    }
}

const T1: &str = "2024-01-01T00:00:01Z";
const T2: &str = "2024-01-01T00:00:02Z";
const T3: &str = "2024-01-01T00:00:03Z";

fn deployment(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"}, "spec": spec})
}

/// What the store adds to a created object.
fn stored(mut o: Value) -> Value {
    o["metadata"]["uid"] = json!("u");
    o["metadata"]["resourceVersion"] = json!("1");
    o
}

fn entry<'a>(o: &'a Value, manager: &str) -> Option<&'a Value> {
    o["metadata"]["managedFields"].as_array()?.iter().find(|e| e["manager"] == manager)
}

fn conflicts(r: Result<Value, ApplyError>) -> Vec<Conflict> {
    match r {
        Err(ApplyError::Conflicts(c)) => c,
        other => panic!("no conflict: {other:?}"),
    }
}

#[test]
fn apply_creates_and_owns_what_it_sets() {
    let config =
        deployment(json!({"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}));
    let out = apply(None, &config, &writer("a", T1), false).unwrap();
    assert_eq!(out["spec"]["replicas"], 2);
    assert_eq!(
        entry(&out, "a").unwrap(),
        &json!({"manager": "a", "operation": "Apply", "apiVersion": "apps/v1", "time": T1, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers":
                {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}})
    );
}

#[test]
fn a_conflict_names_the_field_and_the_owner_and_force_moves_it() {
    let live = stored(apply(None, &deployment(json!({"replicas": 2})), &writer("a", T1), false).unwrap());
    let c = conflicts(apply(Some(&live), &deployment(json!({"replicas": 3})), &writer("b", T2), false));
    assert_eq!(c, vec![Conflict { manager: "\"a\"".into(), field: ".spec.replicas".into() }]);
    assert_eq!(conflict_message(&c), "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas");
    // The same value is shared, not a conflict.
    let shared = apply(Some(&live), &deployment(json!({"replicas": 2})), &writer("b", T2), false).unwrap();
    assert!(entry(&shared, "a").is_some() && entry(&shared, "b").is_some());
    let forced = apply(Some(&live), &deployment(json!({"replicas": 3})), &writer("b", T2), true).unwrap();
    assert_eq!(forced["spec"]["replicas"], 3);
    assert!(entry(&forced, "a").is_none(), "{forced}");
    assert_eq!(entry(&forced, "b").unwrap()["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn fields_applied_before_and_omitted_now_are_removed_unless_someone_else_owns_them() {
    let first =
        deployment(json!({"replicas": 2, "paused": true, "template": {"metadata": {"labels": {"x": "1", "y": "2"}},
        "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "j"}]}}}));
    let live = stored(apply(None, &first, &writer("a", T1), false).unwrap());
    // b shares `paused`.
    let live = apply(Some(&live), &deployment(json!({"paused": true})), &writer("b", T2), false).unwrap();
    let second = deployment(json!({"replicas": 2, "template": {"metadata": {"labels": {"x": "1"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}}));
    let out = apply(Some(&live), &second, &writer("a", T3), false).unwrap();
    assert_eq!(out["spec"]["paused"], true);
    assert_eq!(out["spec"]["template"]["metadata"]["labels"], json!({"x": "1"}));
    assert_eq!(out["spec"]["template"]["spec"]["containers"], json!([{"name": "c", "image": "i"}]));
    // Once nobody else holds it, it goes.
    let out = apply(Some(&out), &deployment(json!({})), &writer("b", T3), false).unwrap();
    assert!(out["spec"].get("paused").is_none(), "{out}");
    assert!(entry(&out, "b").is_none());
}

#[test]
fn updates_take_fields_from_appliers_and_record_their_own() {
    let live =
        stored(apply(None, &deployment(json!({"replicas": 2, "paused": false})), &writer("a", T1), false).unwrap());
    let mut edited = live.clone();
    edited["spec"]["replicas"] = json!(5);
    edited["metadata"]["labels"] = json!({"l": "v"});
    let out = record_update(Some(&live), edited, &writer("kubectl-edit", T2));
    let edit = entry(&out, "kubectl-edit").unwrap();
    assert_eq!(edit["operation"], "Update");
    assert_eq!(edit["time"], T2);
    assert_eq!(
        edit["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:l": {}}}, "f:spec": {"f:replicas": {}}})
    );
    assert_eq!(entry(&out, "a").unwrap()["fieldsV1"], json!({"f:spec": {"f:paused": {}}}));
    // Now a's apply of replicas conflicts with the editor.
    let c = conflicts(apply(Some(&out), &deployment(json!({"replicas": 2, "paused": false})), &writer("a", T3), false));
    assert_eq!(c[0].manager, "\"kubectl-edit\" using apps/v1");
    // A write that changes nothing records nothing.
    let again = record_update(Some(&out), out.clone(), &writer("other", T3));
    assert_eq!(again, out);
}

#[test]
fn creates_record_everything_but_server_metadata() {
    let o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "b"}}, "data": {"k": "v"}});
    let out = record_update(None, o, &writer("kubectl-create", T1));
    assert_eq!(
        entry(&out, "kubectl-create").unwrap()["fieldsV1"],
        json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
    );
}

#[test]
fn managed_fields_sent_by_a_client_are_kept_only_when_valid() {
    let live = stored(apply(None, &deployment(json!({"replicas": 2})), &writer("a", T1), false).unwrap());
    let mut garbage = live.clone();
    garbage["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Steal"}]);
    assert_eq!(record_update(Some(&live), garbage, &writer("u", T2)), live);
    let mut reset = live.clone();
    reset["metadata"]["managedFields"] = json!([]);
    assert!(record_update(Some(&live), reset, &writer("u", T2))["metadata"].get("managedFields").is_none());
    let mut moved = live.clone();
    moved["metadata"]["managedFields"][0]["manager"] = json!("b");
    let out = record_update(Some(&live), moved, &writer("u", T2));
    assert!(entry(&out, "b").is_some() && entry(&out, "a").is_none());
}

#[test]
fn status_applies_touch_only_status() {
    let live = stored(apply(None, &deployment(json!({"replicas": 2})), &writer("a", T1), false).unwrap());
    let mut w = writer("agent", T2);
    w.subresource = "status".into();
    let mut config = deployment(json!({"replicas": 9}));
    config["status"] = json!({"readyReplicas": 1});
    let out = apply(Some(&live), &config, &w, false).unwrap();
    assert_eq!(out["spec"]["replicas"], 2);
    assert_eq!(out["status"]["readyReplicas"], 1);
    let e = entry(&out, "agent").unwrap();
    assert_eq!(
        (e["subresource"].as_str(), &e["fieldsV1"]),
        (Some("status"), &json!({"f:status": {"f:readyReplicas": {}}}))
    );
}

#[test]
fn objects_nobody_recorded_belong_to_before_first_apply() {
    let live = stored(deployment(json!({"replicas": 1})));
    let c = conflicts(apply(Some(&live), &deployment(json!({"replicas": 2})), &writer("a", T1), false));
    assert_eq!(c[0].manager, "\"before-first-apply\" using apps/v1");
}

#[test]
fn kubectl_takes_over_what_its_client_side_apply_set() {
    let mut csa = deployment(json!({"replicas": 1}));
    csa["metadata"]["annotations"] = json!({LAST_APPLIED: deployment(json!({"replicas": 1})).to_string()});
    let live = record_update(None, csa.clone(), &writer("kubectl-client-side-apply", T1));
    let live = stored(live);
    let mut config = deployment(json!({"replicas": 3}));
    let out = apply(Some(&live), &config, &writer("kubectl", T2), false).unwrap();
    assert_eq!(out["spec"]["replicas"], 3);
    // Another manager gets the conflict, and so does kubectl once the
    // value drifted from what it applied client-side.
    assert!(matches!(apply(Some(&live), &config, &writer("other", T2), false), Err(ApplyError::Conflicts(_))));
    let mut drifted = live.clone();
    drifted["spec"]["replicas"] = json!(7);
    config["spec"]["replicas"] = json!(4);
    assert!(matches!(apply(Some(&drifted), &config, &writer("kubectl", T2), false), Err(ApplyError::Conflicts(_))));
}

#[test]
fn bad_configurations() {
    let mut with_managed = deployment(json!({}));
    with_managed["metadata"]["managedFields"] = json!([]);
    assert!(matches!(apply(None, &with_managed, &writer("a", T1), false), Err(ApplyError::BadRequest(_))));
    assert!(matches!(apply(None, &json!([]), &writer("a", T1), false), Err(ApplyError::BadRequest(_))));
    let unkeyed = deployment(json!({"template": {"spec": {"containers": [{"image": "i"}]}}}));
    match apply(None, &unkeyed, &writer("a", T1), false) {
        Err(ApplyError::Invalid(m)) => assert!(m.starts_with(".spec.template.spec.containers: element 0"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn several_conflicts_are_listed_by_manager() {
    let c = vec![
        Conflict { manager: "\"b\"".into(), field: ".x".into() },
        Conflict { manager: "\"a\"".into(), field: ".y".into() },
        Conflict { manager: "\"a\"".into(), field: ".z".into() },
    ];
    assert_eq!(
        conflict_message(&c),
        "Apply failed with 3 conflicts: conflicts with \"a\":\n- .y\n- .z\nconflicts with \"b\":\n- .x"
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0i64..4).prop_map(|n| json!(n)),
        "[a-c]{0,2}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        let keys = prop_oneof![
            Just("name".to_string()),
            Just("containers".to_string()),
            Just("env".to_string()),
            Just("ports".to_string()),
            Just("finalizers".to_string()),
            Just("selector".to_string()),
            Just("protocol".to_string()),
            Just("containerPort".to_string()),
            "[a-c]".prop_map(String::from),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(keys, inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn applying_the_same_configuration_twice_is_a_no_op(live in arb_json(), config in arb_json(), builtin in any::<bool>()) {
        let mut w = writer("m", T1);
        w.schema = Schema { builtin };
        let live = live.is_object().then_some(live);
        if let Ok(once) = apply(live.as_ref(), &config, &w, true) {
            w.now = T2.into();
            let twice = apply(Some(&once), &config, &w, false);
            prop_assert_eq!(twice.as_ref().ok(), Some(&once));
        }
        // Updates never panic either, whatever they are given, and one
        // that changes nothing records nothing.
        let _ = record_update(live.as_ref(), config.clone(), &w);
        if let Some(l) = &live {
            let once = record_update(None, l.clone(), &w);
            prop_assert_eq!(record_update(Some(&once), once.clone(), &writer("other", T3)), once);
        }
    }

    #[test]
    fn garbage_managed_fields_never_panic(managed in arb_json(), config in arb_json()) {
        let live = json!({"metadata": {"name": "x", "managedFields": managed.clone()}, "spec": {"a": 1}});
        let _ = apply(Some(&live), &config, &writer("m", T1), false);
        let mut new = live.clone();
        new["metadata"]["managedFields"] = config;
        let _ = record_update(Some(&live), new, &writer("m", T1));
    }
}

#[test]
fn past_ten_updaters_the_oldest_merge_into_ancient_changes() {
    let mut o = deployment(json!({}));
    for i in 0..12 {
        let mut next = o.clone();
        next["spec"][format!("f{i}")] = json!(i);
        o = record_update(Some(&o), next, &writer(&format!("m{i:02}"), &format!("2024-01-01T00:00:{i:02}Z")));
    }
    let entries = o["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 10, "{o}");
    let ancient = entry(&o, "ancient-changes").unwrap();
    assert_eq!(ancient["fieldsV1"], json!({"f:spec": {"f:f0": {}, "f:f1": {}, "f:f2": {}}}));
    assert!(entry(&o, "m00").is_none() && entry(&o, "m02").is_none() && entry(&o, "m03").is_some());
}

#[test]
fn kubectl_server_side_apply_keeps_the_client_side_record_current() {
    let mut csa = deployment(json!({"replicas": 1}));
    csa["metadata"]["annotations"] = json!({LAST_APPLIED: "{}"});
    let live = stored(record_update(None, csa, &writer("kubectl-client-side-apply", T1)));
    let config = deployment(json!({"replicas": 1, "paused": true}));
    let out = apply(Some(&live), &config, &writer("kubectl", T2), false).unwrap();
    let record: Value = serde_json::from_str(out["metadata"]["annotations"][LAST_APPLIED].as_str().unwrap()).unwrap();
    assert_eq!(record, config);
    assert_eq!(apply(Some(&out), &config, &writer("kubectl", T3), false).unwrap(), out);
    // Other managers leave it alone.
    let other = apply(Some(&live), &config, &writer("other", T2), false).unwrap();
    assert_eq!(other["metadata"]["annotations"][LAST_APPLIED], "{}");
}
