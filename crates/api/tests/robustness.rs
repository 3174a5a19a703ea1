//! Random bytes and random mutations of the bundled examples never panic the
//! parser, the validator or the normaliser; every failure is an error value.

use proptest::prelude::*;
use ringleader_api::document::{load_path, parse_str};
use ringleader_api::{check_documents, Document, Job};
use serde_json::Value;
use std::path::Path;
use std::sync::LazyLock;

static EXAMPLES: LazyLock<Vec<Value>> = LazyLock::new(|| {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    load_path(&dir).into_iter().flat_map(|r| r.expect("examples parse")).map(|d| d.value).collect()
});

fn run_all(docs: &[Document]) {
    for report in check_documents(docs) {
        if let Some(res) = &report.resource {
            if let Some(job) = Job::from_resource(res) {
                // Only valid jobs are expanded; validation bounds their size.
                if report.valid {
                    assert_eq!(job.pod_names().len() as u32, job.total_replicas());
                }
            }
        }
    }
}

/// Every path (as indices into objects/arrays) of a JSON value.
fn paths(v: &Value, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(prefix.clone());
    let children: Vec<&Value> = match v {
        Value::Object(m) => m.values().collect(),
        Value::Array(a) => a.iter().collect(),
        _ => return,
    };
    for (i, c) in children.into_iter().enumerate() {
        prefix.push(i);
        paths(c, prefix, out);
        prefix.pop();
    }
}

fn at_mut<'a>(v: &'a mut Value, path: &[usize]) -> &'a mut Value {
    let mut cur = v;
    for &i in path {
        let len = match &*cur {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        };
        if i >= len {
            break;
        }
        cur = match cur {
            Value::Object(m) => m.values_mut().nth(i).unwrap(),
            Value::Array(a) => &mut a[i],
            _ => unreachable!("length checked above"),
        };
    }
    cur
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        "[a-zA-Z0-9_./-]{0,12}".prop_map(Value::String),
        prop::sample::select(vec!["Always", "Never", "ExitCode", "huawei.com/Ascend910", "-1", "on", "8", "ascend"])
            .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z./-]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(docs) = parse_str("fuzz", &text) {
            run_all(&docs);
        }
    }

    #[test]
    fn mutated_examples_never_panic(pick in any::<prop::sample::Index>(), spot in any::<prop::sample::Index>(), replacement in arb_value()) {
        let all = &*EXAMPLES;
        let mut doc = pick.get(all).clone();
        let mut all_paths = Vec::new();
        paths(&doc, &mut Vec::new(), &mut all_paths);
        let path = spot.get(&all_paths).clone();
        *at_mut(&mut doc, &path) = replacement;
        run_all(&[Document { source: "mutated".into(), index: 0, value: doc }]);
    }

    #[test]
    fn mutated_yaml_text_never_panics(pick in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>(), insert in "[ :\\-\\[\\]{}#'\"a-z0-9\n]{0,8}") {
        let all = &*EXAMPLES;
        let text = serde_yaml_ng::to_string(pick.get(all)).unwrap_or_default();
        let at = cut.index(text.len().max(1)).min(text.len());
        let at = (0..=at).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        let mutated = format!("{}{}{}", &text[..at], insert, &text[at..]);
        if let Ok(docs) = parse_str("mutated", &mutated) {
            run_all(&docs);
        }
    }
}
