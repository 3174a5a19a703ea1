//! Random operation sequences against a model: after every step `list()`
//! equals the model, versions count exactly the writes that changed
//! something, failed batches change nothing, and replaying the whole watch
//! history rebuilds the same objects.

use proptest::prelude::*;
use ringleader_store::{EventType, ObjectKey, Op, Selector, Store, StoreError};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

type Spec = BTreeMap<String, u8>;

const KEYS: [(&str, &str, &str); 6] = [
    ("Pod", "a", "p"),
    ("Pod", "a", "q"),
    ("Pod", "b", "p"),
    ("ConfigMap", "a", "p"),
    ("Node", "", "n"),
    ("Node", "", "m"),
];

fn key(i: usize) -> ObjectKey {
    let (kind, ns, name) = KEYS[i];
    ObjectKey::new("v1", kind, ns, name)
}

fn body(i: usize, spec: &Spec) -> Value {
    let (kind, ns, name) = KEYS[i];
    let mut meta = json!({"name": name});
    if !ns.is_empty() {
        meta["namespace"] = json!(ns);
    }
    json!({"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": spec})
}

/// How an op states the version it expects: not at all, the current one, or a stale one.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Any,
    Current,
    Stale,
}

#[derive(Debug, Clone)]
enum MOp {
    Create(usize, Spec),
    Update(usize, Spec, Expect),
    Apply(usize, Spec),
    Patch(usize, Vec<(String, Option<u8>)>, Expect),
    Delete(usize, Expect),
}

#[derive(Debug, Clone)]
enum Step {
    One(MOp),
    Batch(Vec<MOp>),
    Reopen,
}

fn spec() -> impl Strategy<Value = Spec> {
    prop::collection::btree_map(prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from), 0u8..3, 0..3)
}

fn expect() -> impl Strategy<Value = Expect> {
    prop_oneof![Just(Expect::Any), Just(Expect::Current), Just(Expect::Stale)]
}

fn mop() -> impl Strategy<Value = MOp> {
    let k = 0..KEYS.len();
    prop_oneof![
        (k.clone(), spec()).prop_map(|(k, s)| MOp::Create(k, s)),
        (k.clone(), spec(), expect()).prop_map(|(k, s, e)| MOp::Update(k, s, e)),
        (k.clone(), spec()).prop_map(|(k, s)| MOp::Apply(k, s)),
        (
            k.clone(),
            prop::collection::vec(
                (prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from), prop::option::of(0u8..3)),
                0..3
            ),
            expect()
        )
            .prop_map(|(k, p, e)| MOp::Patch(k, p, e)),
        (k, expect()).prop_map(|(k, e)| MOp::Delete(k, e)),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => mop().prop_map(Step::One),
        3 => prop::collection::vec(mop(), 1..6).prop_map(Step::Batch),
        1 => Just(Step::Reopen),
    ]
}

#[derive(Debug, PartialEq)]
enum Fail {
    NotFound,
    AlreadyExists,
    Conflict,
}

fn fail_of(e: &StoreError) -> Fail {
    match e {
        StoreError::NotFound(_) => Fail::NotFound,
        StoreError::AlreadyExists(_) => Fail::AlreadyExists,
        StoreError::Conflict { .. } => Fail::Conflict,
        other => panic!("unexpected error {other}"),
    }
}

#[derive(Clone, Default, Debug)]
struct Model {
    objects: BTreeMap<ObjectKey, (u64, Spec)>,
    version: u64,
}

impl Model {
    fn expected(&self, e: Expect, i: usize) -> Option<u64> {
        let current = self.objects.get(&key(i)).map_or(0, |(v, _)| *v);
        match e {
            Expect::Any => None,
            Expect::Current => Some(current),
            Expect::Stale => Some(current + 1000),
        }
    }

    /// The store op for a model op, with versions taken from the model now.
    fn to_op(&self, op: &MOp) -> Op {
        match op {
            MOp::Create(i, s) => Op::Create(body(*i, s)),
            MOp::Update(i, s, e) => {
                let mut b = body(*i, s);
                if let Some(v) = self.expected(*e, *i) {
                    b["metadata"]["resourceVersion"] = json!(v.to_string());
                }
                Op::Update(b)
            }
            MOp::Apply(i, s) => Op::Apply(body(*i, s)),
            MOp::Patch(i, p, e) => {
                let spec: Map<String, Value> = p.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                Op::Patch { key: key(*i), patch: json!({"spec": spec}), expected: self.expected(*e, *i) }
            }
            MOp::Delete(i, e) => Op::Delete { key: key(*i), expected: self.expected(*e, *i) },
        }
    }

    fn check(&self, i: usize, e: Expect) -> Result<(u64, Spec), Fail> {
        let (v, s) = self.objects.get(&key(i)).cloned().ok_or(Fail::NotFound)?;
        if matches!(e, Expect::Stale) {
            return Err(Fail::Conflict);
        }
        Ok((v, s))
    }

    fn set(&mut self, i: usize, spec: Spec) {
        if self.objects.get(&key(i)).is_some_and(|(_, s)| *s == spec) {
            return;
        }
        self.version += 1;
        self.objects.insert(key(i), (self.version, spec));
    }

    fn apply(&mut self, op: &MOp) -> Result<(), Fail> {
        match op {
            MOp::Create(i, s) => {
                if self.objects.contains_key(&key(*i)) {
                    return Err(Fail::AlreadyExists);
                }
                self.set(*i, s.clone());
            }
            MOp::Update(i, s, e) => {
                self.check(*i, *e)?;
                self.set(*i, s.clone());
            }
            MOp::Apply(i, s) => self.set(*i, s.clone()),
            MOp::Patch(i, p, e) => {
                let (_, mut spec) = self.check(*i, *e)?;
                for (k, v) in p {
                    match v {
                        Some(v) => spec.insert(k.clone(), *v),
                        None => spec.remove(k),
                    };
                }
                self.set(*i, spec);
            }
            MOp::Delete(i, e) => {
                self.check(*i, *e)?;
                self.version += 1;
                self.objects.remove(&key(*i));
            }
        }
        Ok(())
    }
}

fn spec_of(object: &Value) -> Spec {
    serde_json::from_value(object["spec"].clone()).expect("spec is a map of small numbers")
}

fn assert_same(store: &Store, model: &Model) {
    let (objects, version) = store.list(&Selector::all()).unwrap();
    assert_eq!(version, model.version);
    assert_eq!(store.version(), model.version);
    let got: BTreeMap<ObjectKey, (u64, Spec)> =
        objects.iter().map(|s| (s.key.clone(), (s.resource_version, spec_of(&s.object)))).collect();
    assert_eq!(got, model.objects);
    let keys: Vec<&ObjectKey> = objects.iter().map(|s| &s.key).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "list is ordered by key");
    for s in &objects {
        assert_eq!(s.object["metadata"]["resourceVersion"], json!(s.resource_version.to_string()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn store_matches_model(steps in prop::collection::vec(step(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let mut model = Model::default();
        for step in &steps {
            match step {
                Step::One(op) => {
                    let got = store.batch(vec![model.to_op(op)]).map_err(|e| fail_of(&e));
                    let want = model.apply(op);
                    prop_assert_eq!(got.err(), want.err());
                }
                Step::Batch(ops) => {
                    // Versions are read from the model as each op would see
                    // the earlier ones, as they do inside the transaction.
                    let mut trial = model.clone();
                    let mut store_ops = Vec::new();
                    let mut want = Ok(());
                    for op in ops {
                        store_ops.push(trial.to_op(op));
                        if want.is_ok() {
                            want = trial.apply(op);
                        }
                    }
                    let got = store.batch(store_ops).map_err(|e| fail_of(&e));
                    match want {
                        Ok(()) => {
                            prop_assert!(got.is_ok(), "{:?}", got.err());
                            model = trial;
                        }
                        Err(w) => prop_assert_eq!(got.err(), Some(w)),
                    }
                }
                Step::Reopen => {
                    drop(store);
                    store = Store::open(dir.path()).unwrap();
                }
            }
            assert_same(&store, &model);
        }

        // The history alone rebuilds the final state.
        let mut w = store.watch(&Selector::all(), 0).unwrap();
        let mut replayed: BTreeMap<ObjectKey, (u64, Spec)> = BTreeMap::new();
        let mut last = 0;
        while let Some(e) = w.try_next() {
            prop_assert_eq!(e.object.resource_version, last + 1);
            last = e.object.resource_version;
            match e.kind {
                EventType::Deleted => {
                    replayed.remove(&e.object.key);
                }
                _ => {
                    replayed.insert(e.object.key.clone(), (last, spec_of(&e.object.object)));
                }
            }
        }
        prop_assert_eq!(last, model.version);
        prop_assert_eq!(replayed, model.objects);
    }
}
