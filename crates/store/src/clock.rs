//! Store-assigned metadata: uids (random v4 UUIDs) and creation timestamps
//! (RFC 3339 UTC, whole seconds, as Kubernetes writes `metav1.Time`).

/// A random version-4 UUID string.
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Now as RFC 3339 UTC with second precision, e.g. `2026-11-23T10:00:00Z`.
pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second()).unwrap_or(now).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_whole_seconds_utc() {
        let t = now_rfc3339();
        assert_eq!(t.len(), "2026-11-23T10:00:00Z".len(), "{t}");
        assert!(t.ends_with('Z'), "{t}");
        assert!(t.parse::<jiff::Timestamp>().is_ok(), "{t}");
    }

    #[test]
    fn uids_are_v4_and_distinct() {
        let a = new_uid();
        let b = new_uid();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
    }
}
