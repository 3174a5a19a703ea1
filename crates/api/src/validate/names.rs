//! Kubernetes name rules.

/// DNS-1123 label: lower-case alphanumerics and `-`, starting and ending
/// alphanumeric, at most 63 characters (job, container and task names).
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// DNS-1123 subdomain: dot-separated labels, at most 253 characters (ConfigMap, Queue names).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// Message for a bad label name.
pub const LABEL_RULE: &str = "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters";
/// Message for a bad subdomain name.
pub const SUBDOMAIN_RULE: &str =
    "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most 253 characters";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_rule() {
        assert!(is_dns1123_label("train-a-1"));
        assert!(!is_dns1123_label("Train"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label("a_b"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("rings-config.v1"));
        assert!(!is_dns1123_subdomain("a..b"));
    }
}
