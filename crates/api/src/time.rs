//! RFC 3339 stamps as Kubernetes writes them (`metav1.Time`), and the one
//! wall-clock read the I/O shells (agent, manager, server) share. Pure crates
//! only format and parse here; they take "now" as an argument. The calendar
//! work is `jiff`'s.

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// Seconds since the Unix epoch, fractional. Not for pure logic.
pub fn now() -> f64 {
    Timestamp::now().as_duration().as_secs_f64()
}

/// Unix seconds → `2026-11-23T10:00:00Z`. Whole seconds, as Kubernetes writes
/// `metav1.Time`, so clients with strict parsers read it. Seconds outside
/// the years jiff represents (-9999..=9999) clamp to its range.
pub fn rfc3339(secs: f64) -> String {
    let whole = secs.floor();
    let clamped = whole.clamp(Timestamp::MIN.as_second() as f64, Timestamp::MAX.as_second() as f64) as i64;
    Timestamp::from_second(clamped).unwrap_or(Timestamp::UNIX_EPOCH).to_string()
}

/// `2026-11-23T10:00:00Z` (fraction allowed, `Z` or `±hh:mm`; without an
/// offset the time is read as UTC) → Unix seconds.
pub fn parse_rfc3339(s: &str) -> Option<f64> {
    let s = s.trim();
    let ts = match s.parse::<Timestamp>() {
        Ok(ts) => ts,
        Err(_) => s.parse::<DateTime>().ok()?.to_zoned(TimeZone::UTC).ok()?.timestamp(),
    };
    Some(ts.duration_since(Timestamp::UNIX_EPOCH).as_secs_f64())
}

/// Now as RFC 3339.
pub fn now_rfc3339() -> String {
    rfc3339(now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_back() {
        assert_eq!(rfc3339(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000.7), "2023-11-14T22:13:20Z");
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20Z"), Some(1_700_000_000.0));
        assert_eq!(parse_rfc3339("2023-11-14T23:13:20.5+01:00"), Some(1_700_000_000.5));
        assert_eq!(rfc3339(951_782_400.0), "2000-02-29T00:00:00Z");
        for t in [0.0, 86_399.0, 951_782_400.0, 4_102_444_800.0] {
            assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t));
        }
    }

    #[test]
    fn offsets_and_leap_days() {
        assert_eq!(parse_rfc3339("2026-11-23T10:00:00.5Z"), Some(1_795_428_000.5));
        assert_eq!(parse_rfc3339("2026-11-23T12:00:00+02:00"), Some(1_795_428_000.0));
        assert_eq!(parse_rfc3339("2026-11-23T10:00:00"), Some(1_795_428_000.0));
        assert_eq!(rfc3339(1_735_689_599.0), "2024-12-31T23:59:59Z");
    }

    #[test]
    fn rejects_garbage_and_clamps_huge_values() {
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2023-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339(""), None);
        assert!(rfc3339(1e300).starts_with("9999-12-"));
        assert!(rfc3339(f64::NAN).len() >= 20);
    }
}
