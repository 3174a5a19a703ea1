//! apimachinery types whose JSON form is not their message shape: times,
//! durations, quantities, int-or-strings and embedded raw JSON.

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::OffsetDateTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    /// `{seconds, nanos}` ↔ RFC 3339, whole seconds (Go drops nanos both ways).
    Time,
    /// `{seconds, nanos}` ↔ RFC 3339 with microseconds.
    MicroTime,
    /// `{duration: ns}` ↔ Go's `time.Duration` string.
    Duration,
    /// `{string}` ↔ the string.
    Quantity,
    /// `{type, intVal, strVal}` ↔ number or string.
    IntOrString,
    /// `{raw}` ↔ the JSON value raw holds (or an enveloped protobuf object).
    RawExtension,
    /// `{Raw}` ↔ the JSON value Raw holds.
    FieldsV1,
}

pub(crate) fn special(full_name: &str) -> Option<Special> {
    Some(match full_name {
        "k8s.io.apimachinery.pkg.apis.meta.v1.Time" => Special::Time,
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => Special::MicroTime,
        "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => Special::Duration,
        "k8s.io.apimachinery.pkg.api.resource.Quantity" => Special::Quantity,
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
        "k8s.io.apimachinery.pkg.runtime.RawExtension" => Special::RawExtension,
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1" => Special::FieldsV1,
        _ => return None,
    })
}

/// Go's zero `time.Time` as Unix seconds; Go's JSON shows it as `null`.
pub(crate) const GO_ZERO_TIME: i64 = -62_135_596_800;

pub(crate) fn format_time(seconds: i64) -> Result<String, String> {
    OffsetDateTime::from_unix_timestamp(seconds)
        .map_err(|e| format!("time {seconds}s is out of range: {e}"))?
        .format(&Rfc3339)
        .map_err(|e| format!("time {seconds}s cannot be written as RFC 3339: {e}"))
}

pub(crate) fn format_micro_time(seconds: i64, nanos: i32) -> Result<String, String> {
    let nanos = i64::from(nanos.clamp(0, 999_999_999) / 1000 * 1000);
    let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(seconds) * 1_000_000_000 + i128::from(nanos))
        .map_err(|e| format!("time {seconds}s is out of range: {e}"))?;
    t.format(format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"))
        .map_err(|e| format!("time {seconds}s cannot be written as RFC 3339: {e}"))
}

/// Parses RFC 3339 into (Unix seconds, nanoseconds).
pub(crate) fn parse_time(s: &str) -> Result<(i64, i32), String> {
    let t = OffsetDateTime::parse(s, &Rfc3339).map_err(|e| format!("{s:?} is not an RFC 3339 time ({e})"))?;
    Ok((t.unix_timestamp(), t.nanosecond() as i32))
}

/// Go's `time.Duration.String`: `1h0m0s`, `30s`, `1.5ms`, `0s`.
pub(crate) fn format_duration(ns: i64) -> String {
    let neg = ns < 0;
    let mut u = ns.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0 => return "0s".into(),
            1..=999 => (0, "ns"),
            1_000..=999_999 => (3, "µs"),
            _ => (6, "ms"),
        };
        let frac = fraction(&mut u, prec);
        out.push_str(&u.to_string());
        out.push_str(&frac);
        out.push_str(unit);
    } else {
        let frac = fraction(&mut u, 9);
        let secs = u % 60;
        u /= 60;
        if u > 0 {
            let mins = u % 60;
            u /= 60;
            if u > 0 {
                out.push_str(&format!("{u}h"));
            }
            out.push_str(&format!("{mins}m"));
        }
        out.push_str(&format!("{secs}{frac}s"));
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// Splits off `prec` decimal digits of `u` as ".ddd" without trailing zeros.
fn fraction(u: &mut u64, prec: u32) -> String {
    let scale = 10u64.pow(prec);
    let frac = *u % scale;
    *u /= scale;
    if frac == 0 {
        return String::new();
    }
    let digits = format!("{frac:0width$}", width = prec as usize);
    format!(".{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`.
pub(crate) fn parse_duration(s: &str) -> Result<i64, String> {
    let bad = || format!("{s:?} is not a Go duration (like \"1h30m\", \"45s\", \"1.5ms\")");
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (int, after) = rest.split_at(int_end);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => {
                let end = a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len());
                a.split_at(end)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return Err(bad());
        }
        let unit_end = after.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(bad()),
        };
        let int: u128 = if int.is_empty() { 0 } else { int.parse().map_err(|_| bad())? };
        let mut value = int.checked_mul(scale).ok_or_else(bad)?;
        // Go keeps at most the digits that can matter; 20 is ample for ns.
        let frac = &frac[..frac.len().min(20)];
        if !frac.is_empty() {
            let f: u128 = frac.parse().map_err(|_| bad())?;
            value += f * scale / 10u128.pow(frac.len() as u32);
        }
        total = total.checked_add(value).ok_or_else(bad)?;
        if total > 1u128 << 63 {
            return Err(format!("{s:?} overflows a Go duration"));
        }
        rest = after;
    }
    if neg {
        Ok((total as i128).wrapping_neg() as i64)
    } else {
        i64::try_from(total).map_err(|_| format!("{s:?} overflows a Go duration"))
    }
}
