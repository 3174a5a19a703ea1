//! The pieces every Table row is built from: the column definition, the
//! name column, cell values read by JSON pointer without allocating, ages
//! as kubectl prints them, and text cells that print `<none>` when empty.

use ringleader_api::time::parse_rfc3339;
use serde_json::{json, Value};

/// One `columnDefinitions` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// Header as the server names it (kubectl upper-cases it).
    pub name: &'static str,
    /// OpenAPI type: `string`, `integer`, `boolean`, `date`.
    pub kind: &'static str,
    /// OpenAPI format; `name` marks the column holding the object's name.
    pub format: &'static str,
    /// What the column shows.
    pub description: &'static str,
    /// 0: always shown; higher: only with `-o wide`.
    pub priority: u32,
}

pub(crate) const fn col(name: &'static str, kind: &'static str, description: &'static str, priority: u32) -> Column {
    Column { name, kind, format: "", description, priority }
}

pub(crate) const NAME: Column = Column {
    name: "Name",
    kind: "string",
    format: "name",
    description: "Name must be unique within a namespace; it is the object's identity within its kind.",
    priority: 0,
};

/// `v.pointer(pointer)` for the plain pointers of this file (no `~`
/// escapes), without the allocations serde_json's unescaping makes for every
/// step: a Table of 50,000 pods looks up a million of them.
pub(crate) fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    pointer.split('/').skip(1).try_fold(v, |v, step| match v {
        Value::Object(map) => map.get(step),
        Value::Array(items) => step.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

pub(crate) fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    at(v, pointer).and_then(Value::as_str).unwrap_or("")
}

/// A duration as kubectl prints ages (apimachinery's `HumanDuration`):
/// `45s`, `3m20s`, `25m`, `5h12m`, `3d4h`, `1y30d`.
pub fn human_duration(secs: f64) -> String {
    let s = secs as i64;
    if s < -1 {
        return "<invalid>".into();
    }
    let s = s.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let (minutes, hours) = (s / 60, s / 3600);
    let with = |big: i64, unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{unit}")
        } else {
            format!("{big}{unit}{small}{small_unit}")
        }
    };
    match hours {
        _ if minutes < 10 => with(minutes, "m", s % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        0..=7 => with(hours, "h", minutes % 60, "m"),
        8..=47 => format!("{hours}h"),
        48..=191 => with(hours / 24, "d", hours % 24, "h"),
        192..=17_519 => format!("{}d", hours / 24),
        17_520..=70_079 => with(hours / 24 / 365, "y", (hours / 24) % 365, "d"),
        _ => format!("{}y", hours / 24 / 365),
    }
}

/// The age of an RFC 3339 stamp at `now` (Unix seconds); `<unknown>` when
/// there is none, as kubectl's `translateTimestampSince`.
pub fn since(stamp: &str, now: f64) -> String {
    match parse_rfc3339(stamp) {
        Some(t) => human_duration(now - t),
        None => "<unknown>".into(),
    }
}

pub(crate) fn age(v: &Value, now: f64) -> Value {
    json!(since(s(v, "/metadata/creationTimestamp"), now))
}

/// A text cell; `null` (kubectl prints `<none>`) when empty and no fallback.
pub(crate) fn text_or(x: &str, fallback: Option<&str>) -> Value {
    match (x, fallback) {
        ("", Some(f)) => json!(f),
        ("", None) => Value::Null,
        (x, _) => json!(x),
    }
}
