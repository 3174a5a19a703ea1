//! Kubernetes quantities as exact numbers (`500m`, `1.5Gi`, `2e3`), for
//! the figures a node enforces (cgroup limits, storage sizes) where a
//! float's rounding would move a limit by a byte.

/// `s` in thousandths of its unit (`500m` → 500, `2` → 2000, `1Ki` →
/// 1_024_000); `None` for anything that is not a non-negative quantity or
/// does not fit.
pub fn milli(s: &str) -> Option<u128> {
    let s = s.trim();
    let s = s.strip_prefix('+').unwrap_or(s);
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, suffix) = s.split_at(end);
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') || frac.len() > 30 {
        return None;
    }
    // num = digits / 10^scale, exactly.
    let digits: u128 = format!("{int}{frac}").parse().ok()?;
    let scale = u32::try_from(frac.len()).ok()?;
    let (mul, div10): (u128, u32) = match suffix {
        "" => (1000, 0),
        "m" => (1, 0),
        "k" => (1000 * 1000, 0),
        "M" => (1000 * 1000u128.pow(2), 0),
        "G" => (1000 * 1000u128.pow(3), 0),
        "T" => (1000 * 1000u128.pow(4), 0),
        "P" => (1000 * 1000u128.pow(5), 0),
        "E" => (1000 * 1000u128.pow(6), 0),
        "Ki" => (1000 << 10, 0),
        "Mi" => (1000 << 20, 0),
        "Gi" => (1000 << 30, 0),
        "Ti" => (1000 << 40, 0),
        "Pi" => (1000 << 50, 0),
        "Ei" => (1000 << 60, 0),
        e if e.starts_with(['e', 'E']) => {
            let exp: i32 = e[1..].parse().ok()?;
            if exp >= 0 {
                (1000 * 10u128.checked_pow(u32::try_from(exp).ok()?)?, 0)
            } else {
                (1000, exp.unsigned_abs())
            }
        }
        _ => return None,
    };
    let scaled = digits.checked_mul(mul)?;
    // Kubernetes rounds fractions of the smallest unit up.
    let div = 10u128.checked_pow(scale.checked_add(div10)?)?;
    Some(scaled.div_ceil(div))
}

/// `s` as a whole count of its unit, rounded up (`1.5Gi` bytes, `100m`
/// CPUs → 1).
pub fn whole(s: &str) -> Option<u128> {
    milli(s).map(|m| m.div_ceil(1000))
}

/// A quantity field of a JSON object: a string or a plain number.
pub fn of_json(v: &serde_json::Value) -> Option<u128> {
    match v {
        serde_json::Value::String(s) => milli(s),
        serde_json::Value::Number(n) => milli(&n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_exact() {
        assert_eq!(milli("500m"), Some(500));
        assert_eq!(milli("2"), Some(2000));
        assert_eq!(milli("0.5"), Some(500));
        assert_eq!(milli("1.5Gi"), Some(1000 * 3 * (1 << 29)));
        assert_eq!(whole("64Mi"), Some(64 << 20));
        assert_eq!(whole("1k"), Some(1000));
        assert_eq!(whole("2e3"), Some(2000));
        assert_eq!(milli("1e-3"), Some(1));
        assert_eq!(whole("100m"), Some(1));
        assert_eq!(milli("0.0001"), Some(1), "rounded up, never to zero");
        assert_eq!(of_json(&serde_json::json!(3)), Some(3000));
        for bad in ["", ".", "-1", "1..2", "1Q", "Gi", "1e", "1e99999", "1.2.3"] {
            assert_eq!(milli(bad), None, "{bad}");
        }
    }
}
