//! Counts and quantities as validation accepts them: Kubernetes
//! quantities, and the most pods one job may create.

/// A non-negative Kubernetes quantity: number with optional SI/binary suffix or exponent.
pub fn is_quantity(s: &str) -> bool {
    let s = s.trim();
    let s = s.strip_prefix('+').unwrap_or(s);
    let digits_end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, suffix) = s.split_at(digits_end);
    let num_ok = !num.is_empty() && num != "." && num.matches('.').count() <= 1;
    let suffix_ok =
        matches!(suffix, "" | "m" | "k" | "M" | "G" | "T" | "P" | "E" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei")
            || (suffix.starts_with(['e', 'E']) && suffix[1..].trim_start_matches(['+', '-']).parse::<u32>().is_ok());
    num_ok && suffix_ok
}

/// Most pods one job may create; larger ones are almost certainly a typo and
/// would flood the store.
pub const MAX_JOB_PODS: i64 = 100_000;
