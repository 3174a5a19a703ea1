//! Byte sizes as people write them on a command line.

use crate::ProbeError;

/// Parses `64MiB`, `1GiB`, `4KiB`, `64M` (binary), `1GB`/`500KB` (decimal)
/// or plain bytes `4096`.
pub fn parse_size(text: &str) -> Result<u64, ProbeError> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let bad = |reason: &str| ProbeError::Invalid(format!("size {text:?}: {reason}"));
    if digits.is_empty() {
        return Err(bad("expected a number of bytes such as 4096, 4KiB, 64MiB or 1GiB"));
    }
    let n: u64 = digits.parse().map_err(|_| bad("number out of range"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return Err(bad("unknown unit (use B, KiB, MiB, GiB, KB, MB or GB)")),
    };
    n.checked_mul(mult).ok_or_else(|| bad("too large"))
}

/// `min`, `2·min`, … up to `max` inclusive (the collective check's sweep).
pub fn size_sweep(min: u64, max: Option<u64>) -> Vec<u64> {
    let mut sizes = vec![min];
    if let Some(max) = max {
        let mut s = min;
        while s > 0 {
            match s.checked_mul(2) {
                Some(next) if next <= max => {
                    sizes.push(next);
                    s = next;
                }
                _ => break,
            }
        }
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_size("64MiB").ok(), Some(64 << 20));
        assert_eq!(parse_size("1GiB").ok(), Some(1 << 30));
        assert_eq!(parse_size("4KiB").ok(), Some(4096));
        assert_eq!(parse_size("4k").ok(), Some(4096));
        assert_eq!(parse_size("1000").ok(), Some(1000));
        assert_eq!(parse_size("2GB").ok(), Some(2_000_000_000));
        assert!(parse_size("").is_err());
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("99999999999999999999GiB").is_err());
    }

    #[test]
    fn sweep() {
        assert_eq!(size_sweep(1024, Some(4096)), vec![1024, 2048, 4096]);
        assert_eq!(size_sweep(1024, Some(5000)), vec![1024, 2048, 4096]);
        assert_eq!(size_sweep(1024, None), vec![1024]);
        assert_eq!(size_sweep(0, Some(10)), vec![0]);
    }
}
