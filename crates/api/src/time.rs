//! RFC 3339 stamps as Kubernetes writes them (`metav1.Time`), and the one
//! wall-clock read the I/O shells (agent, manager, server) share. Pure crates
//! only format and parse here; they take "now" as an argument.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, fractional. Not for pure logic.
pub fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Unix seconds → `2026-11-23T10:00:00Z`. Whole seconds, as Kubernetes writes
/// `metav1.Time`, so clients with strict parsers read it.
pub fn rfc3339(secs: f64) -> String {
    let total = secs.floor() as i64;
    let days = total.div_euclid(86_400);
    let rem = total.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `2026-11-23T10:00:00Z` (fraction allowed, `Z` or `±hh:mm`) → Unix seconds.
pub fn parse_rfc3339(s: &str) -> Option<f64> {
    let s = s.trim();
    let (date, rest) = s.split_once('T').or_else(|| s.split_once('t')).or_else(|| s.split_once(' '))?;
    let mut d = date.split('-');
    let y: i64 = d.next()?.parse().ok()?;
    let mo: u32 = d.next()?.parse().ok()?;
    let da: u32 = d.next()?.parse().ok()?;
    if d.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&da) {
        return None;
    }
    let (clock, offset) = match rest.find(['Z', 'z', '+', '-']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "Z"),
    };
    let mut c = clock.split(':');
    let h: f64 = c.next()?.parse().ok()?;
    let mi: f64 = c.next()?.parse().ok()?;
    let se: f64 = c.next().unwrap_or("0").parse().ok()?;
    let off = match offset.as_bytes().first() {
        Some(b'+') | Some(b'-') => {
            let sign = if offset.starts_with('-') { -1.0 } else { 1.0 };
            let body = &offset[1..];
            let (oh, om) = body.split_once(':').unwrap_or((body, "0"));
            sign * (oh.parse::<f64>().ok()? * 3600.0 + om.parse::<f64>().ok()? * 60.0)
        }
        _ => 0.0,
    };
    Some(days_from_civil(y, mo, da) as f64 * 86_400.0 + h * 3600.0 + mi * 60.0 + se - off)
}

// Howard Hinnant's civil-calendar algorithms (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
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
        assert_eq!(rfc3339(1_735_689_599.0), "2024-12-31T23:59:59Z");
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2023-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339(""), None);
    }
}
