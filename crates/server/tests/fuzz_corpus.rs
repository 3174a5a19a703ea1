//! The cargo-fuzz entry points (fuzz/src/lib.rs) on stable Rust, as CI can
//! run them: every seed of fuzz/corpus/<target>/ and a few thousand
//! proptest inputs (seeds cut, spliced and salted with each grammar's own
//! tokens, plus free text) must return without a panic. A panic names the
//! target and the input, so a crash found by `cargo fuzz` becomes a seed
//! here and stays fixed.

#[path = "../../../fuzz/src/lib.rs"]
mod entries;

use proptest::prelude::*;
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Seed files by name.
type Seeds = Vec<(String, Vec<u8>)>;

/// Every target's seeds, read once.
static CORPUS: LazyLock<Vec<(&'static str, Seeds)>> =
    LazyLock::new(|| entries::TARGETS.iter().map(|(t, _)| (*t, read_seeds(t))).collect());

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The seeds of one target.
fn seeds(target: &str) -> &'static [(String, Vec<u8>)] {
    CORPUS.iter().find(|(t, _)| *t == target).map_or(&[], |(_, s)| s.as_slice())
}

/// The seed files of one target, by name, in name order.
fn read_seeds(target: &str) -> Seeds {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect(),
        Err(e) => panic!("cannot read the seed corpus {}: {e}", dir.display()),
    };
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
            (name, bytes)
        })
        .collect()
}

fn entry(target: &str) -> entries::Entry {
    match entries::TARGETS.iter().find(|(name, _)| *name == target) {
        Some((_, f)) => *f,
        None => panic!("no fuzz entry point named {target}"),
    }
}

/// Runs `f` on `input`, turning a panic into a message naming the input.
fn run_one(target: &str, label: &str, f: entries::Entry, input: &[u8]) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| f(input))).map_err(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let shown: String = String::from_utf8_lossy(input).chars().take(300).collect();
        format!("{target} panicked on {label}: {why}\n  input: {shown:?}")
    })
}

#[test]
fn every_target_has_a_fuzz_target_file_and_seeds() {
    for (target, _) in entries::TARGETS {
        let file = fuzz_dir().join("fuzz_targets").join(format!("{target}.rs"));
        assert!(file.is_file(), "{} is missing", file.display());
        let n = seeds(target).len();
        assert!(n >= 5, "fuzz/corpus/{target} has {n} seeds; keep a handful of real and malformed inputs");
    }
}

#[test]
fn seed_corpus_does_not_panic() {
    let mut failures = Vec::new();
    let mut count = 0;
    for (target, f) in entries::TARGETS {
        for (name, bytes) in seeds(target) {
            count += 1;
            // Every prefix of a seed too: truncated output is the commonest
            // malformed input a parser meets.
            let cuts = [bytes.len(), bytes.len() / 2, bytes.len() / 3, 1];
            for cut in cuts.into_iter().filter(|&c| c <= bytes.len()) {
                if let Err(e) = run_one(target, &format!("{name} (first {cut} bytes)"), *f, &bytes[..cut]) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(count > 0, "no seeds found");
    assert!(failures.is_empty(), "{} of the seed runs panicked:\n{}", failures.len(), failures.join("\n"));
}

/// One change to a seed; positions are fractions of its length so that
/// they stay in range whatever the seed.
#[derive(Debug, Clone)]
enum Edit {
    Insert(u16, Vec<u8>),
    Delete(u16, u16),
    Duplicate(u16, u16),
    Splice(u16, usize, u16),
    Flip(u16, u8),
}

fn at(fraction: u16, len: usize) -> usize {
    (fraction as usize * len) / (u16::MAX as usize + 1)
}

fn apply(mut data: Vec<u8>, edits: &[Edit], donors: &[(String, Vec<u8>)]) -> Vec<u8> {
    for edit in edits {
        let len = data.len();
        match edit {
            Edit::Insert(p, bytes) => {
                let i = at(*p, len + 1);
                data.splice(i..i, bytes.iter().copied());
            }
            Edit::Delete(p, n) => {
                let i = at(*p, len);
                let end = (i + *n as usize % 64).min(len);
                data.drain(i..end);
            }
            Edit::Duplicate(p, n) => {
                let i = at(*p, len);
                let end = (i + *n as usize % 128).min(len);
                let copy = data[i..end].to_vec();
                data.splice(end..end, copy);
            }
            Edit::Splice(p, donor, q) => {
                let (_, other) = &donors[donor % donors.len()];
                let i = at(*p, len);
                let j = at(*q, other.len());
                data.truncate(i);
                data.extend_from_slice(&other[j..]);
            }
            Edit::Flip(p, bits) => {
                if len > 0 {
                    data[at(*p, len)] ^= bits;
                }
            }
        }
    }
    data
}

/// Tokens that mean something to each target's grammar, so that mutations
/// reach past the first syntax error.
fn dictionary(target: &str) -> &'static [&'static str] {
    match target {
        "documents" => &[
            ":",
            ": ",
            "- ",
            "\n",
            "\n  ",
            "---\n",
            "&a ",
            "*a",
            "[",
            "]",
            "{",
            "}",
            ",",
            "'",
            "\"",
            "!!str ",
            "#",
            "\t",
            "~",
            "null",
            "-1",
            "1e9",
            "0x10",
            "replicas: ",
            "kind: List\nitems: ",
            "<<: *a",
            "apiVersion: v1\n",
            "kind: Pod\n",
            "metadata:\n  name: ",
            "nvidia.com/gpu: ",
            "huawei.com/Ascend910: ",
            "? ",
            "|\n",
            ">-\n",
        ],
        "selectors" => &[
            " in ",
            " notin ",
            "(",
            ")",
            ",",
            "!",
            "=",
            "==",
            "!=",
            ">",
            "<",
            "/",
            ".",
            "-",
            "_",
            " ",
            "\n",
            "a",
            "example.com/",
            "9223372036854775808",
            "-1",
            "metadata.",
            "spec.nodeName",
        ],
        "patches" => &[
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "null",
            "\"$patch\":",
            "\"delete\"",
            "\"replace\"",
            "\"merge\"",
            "\"$retainKeys\":",
            "\"$setElementOrder/containers\":",
            "\"$deleteFromPrimitiveList/finalizers\":",
            "\"name\":",
            "\"op\":",
            "\"path\":",
            "\"from\":",
            "\"value\":",
            "\"/\"",
            "\"/-\"",
            "\"/0\"",
            "\"containers\":",
            "\"finalizers\":",
            "\"conditions\":",
            "\"remove\"",
            "\"add\"",
            "\"move\"",
            "1e400",
        ],
        "nvidia_smi_topo" => &[
            "GPU0",
            "GPU1",
            "GPU99",
            "NIC0",
            "mlx5_0",
            " X ",
            "NV1",
            "NV18",
            "NV",
            "SYS",
            "NODE",
            "PHB",
            "PXB",
            "PIX",
            "\t",
            "\n",
            "Legend:\n",
            "NIC Legend:\n",
            "CPU Affinity",
            "NUMA Affinity",
            "GPU NUMA ID",
            "N/A",
            "0-31,64-95",
            "\u{1b}[4m",
            "\u{1b}[0m",
            ":",
        ],
        "npu_smi_info" => &[
            "|",
            "| ",
            "\n",
            "/",
            " / ",
            "OK",
            "Warning",
            "Critical",
            "910B3",
            "310P3",
            "Ascend910",
            "NA",
            "0000:01:00.0",
            "npu-smi 23.0.0",
            "Version: ",
            "+====+",
            "Chip",
            "Device",
            "4294967296",
            "-1",
        ],
        _ => &[],
    }
}

fn edit(target: &'static str) -> impl Strategy<Value = Edit> {
    let words = dictionary(target);
    prop_oneof![
        3 => (any::<u16>(), prop::sample::select(words)).prop_map(|(p, w)| Edit::Insert(p, w.as_bytes().to_vec())),
        1 => (any::<u16>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(p, b)| Edit::Insert(p, b)),
        2 => (any::<u16>(), any::<u16>()).prop_map(|(p, n)| Edit::Delete(p, n)),
        1 => (any::<u16>(), any::<u16>()).prop_map(|(p, n)| Edit::Duplicate(p, n)),
        1 => (any::<u16>(), any::<usize>(), any::<u16>()).prop_map(|(p, d, q)| Edit::Splice(p, d, q)),
        1 => (any::<u16>(), 1u8..).prop_map(|(p, b)| Edit::Flip(p, b)),
    ]
}

/// A seed of `target` with a few edits, a document or patch seed changed
/// value by value (so that most of them still parse and reach validation),
/// or text made of the target's tokens alone.
fn input(target: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let count = seeds(target).len();
    let words = dictionary(target);
    let structured = matches!(target, "documents" | "patches");
    prop_oneof![
        3 => (0..count, prop::collection::vec(edit(target), 1..4)).prop_map(move |(i, edits)| {
            let donors = seeds(target);
            apply(donors[i].1.clone(), &edits, donors)
        }),
        if structured { 4 } else { 0 } => (0..count, prop::collection::vec(value_edit(), 1..6))
            .prop_map(move |(i, edits)| restructure(target, &seeds(target)[i].1, &edits)),
        1 => prop::collection::vec(prop::sample::select(words), 0..40).prop_map(|w| w.concat().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..256),
    ]
}

/// One change to a parsed value: the node is picked by its pre-order index
/// (modulo the node count).
#[derive(Debug, Clone)]
enum ValueEdit {
    Replace(usize, Value),
    Remove(usize),
    Duplicate(usize),
}

/// Values that sit on the edges of what the validators allow.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(1_000_000_000)),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        Just(json!(true)),
        Just(json!("")),
        Just(json!("a/b")),
        Just(json!("../etc")),
        Just(json!("1e9")),
        Just(json!("-1")),
        Just(json!("x".repeat(300))),
        Just(json!("nul\u{0}byte")),
        Just(json!([])),
        Just(json!({})),
        Just(json!([{"name": "a"}, {"name": "a"}])),
        "[a-z0-9./-]{0,12}".prop_map(Value::String),
    ]
}

fn value_edit() -> impl Strategy<Value = ValueEdit> {
    prop_oneof![
        3 => (any::<usize>(), odd_value()).prop_map(|(i, v)| ValueEdit::Replace(i, v)),
        2 => any::<usize>().prop_map(ValueEdit::Remove),
        1 => any::<usize>().prop_map(ValueEdit::Duplicate),
    ]
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Object(m) => m.values().map(count_nodes).sum(),
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Applies `edit` to the node numbered `*n` (pre-order) under `v`.
fn edit_value(v: &mut Value, n: &mut usize, edit: &ValueEdit) -> bool {
    let children: Vec<String> = match v {
        Value::Object(m) => m.keys().cloned().collect(),
        Value::Array(a) => (0..a.len()).map(|i| i.to_string()).collect(),
        _ => Vec::new(),
    };
    for key in children {
        *n -= 1;
        if *n == 0 {
            match (edit, &mut *v) {
                (ValueEdit::Replace(_, new), Value::Object(m)) => drop(m.insert(key, new.clone())),
                (ValueEdit::Replace(_, new), Value::Array(a)) => a[key.parse::<usize>().unwrap_or(0)] = new.clone(),
                (ValueEdit::Remove(_), Value::Object(m)) => drop(m.remove(&key)),
                (ValueEdit::Remove(_), Value::Array(a)) => drop(a.remove(key.parse::<usize>().unwrap_or(0))),
                (ValueEdit::Duplicate(_), Value::Object(m)) => {
                    let copy = m.get(&key).cloned().unwrap_or_default();
                    m.insert(format!("{key}2"), copy);
                }
                (ValueEdit::Duplicate(_), Value::Array(a)) => {
                    let i = key.parse::<usize>().unwrap_or(0);
                    a.insert(i, a[i].clone());
                }
                _ => {}
            }
            return true;
        }
        let child = match v {
            Value::Object(m) => m.get_mut(&key),
            Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        };
        if let Some(child) = child {
            if edit_value(child, n, edit) {
                return true;
            }
        }
    }
    false
}

/// The seed parsed (every YAML document of it), edited, and written back:
/// documents as multi-document YAML, patches as JSON.
fn restructure(target: &str, seed: &[u8], edits: &[ValueEdit]) -> Vec<u8> {
    let text = String::from_utf8_lossy(seed);
    let Ok(docs) = ringleader_api::document::parse_str("seed", &text) else {
        return seed.to_vec();
    };
    let mut values: Vec<Value> = docs.into_iter().map(|d| d.value).collect();
    for edit in edits {
        let (ValueEdit::Replace(i, _) | ValueEdit::Remove(i) | ValueEdit::Duplicate(i)) = edit;
        let total: usize = values.iter().map(count_nodes).sum();
        if total == 0 {
            break;
        }
        let mut n = i % total + 1;
        for v in values.iter_mut() {
            // The document itself is a node: an edit that lands on it is void.
            n -= 1;
            if n == 0 || edit_value(v, &mut n, edit) {
                break;
            }
        }
    }
    if target == "patches" {
        return values.first().map(|v| v.to_string().into_bytes()).unwrap_or_default();
    }
    values.iter().filter_map(|v| serde_yaml_ng::to_string(v).ok()).collect::<Vec<_>>().join("---\n").into_bytes()
}

fn check(target: &'static str, data: &[u8]) -> Result<(), TestCaseError> {
    run_one(target, "a generated input", entry(target), data).map_err(TestCaseError::fail)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn documents_never_panic(data in input("documents")) { check("documents", &data)?; }

    #[test]
    fn selectors_never_panic(data in input("selectors")) { check("selectors", &data)?; }

    #[test]
    fn patches_never_panic(data in input("patches")) { check("patches", &data)?; }

    #[test]
    fn nvidia_smi_topo_never_panics(data in input("nvidia_smi_topo")) { check("nvidia_smi_topo", &data)?; }

    #[test]
    fn npu_smi_info_never_panics(data in input("npu_smi_info")) { check("npu_smi_info", &data)?; }
}
