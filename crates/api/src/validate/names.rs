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

/// Longest label value (and name part of a qualified name).
pub const MAX_LABEL_VALUE: usize = 63;

/// Message for a bad label value.
pub const LABEL_VALUE_RULE: &str = "a label value must be empty or at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit";
/// Message for a bad label or annotation key.
pub const QUALIFIED_NAME_RULE: &str = "must be a qualified name: an optional DNS-1123 subdomain prefix and '/', then at most 63 characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit";

/// The `name` part of a Kubernetes qualified name, and a label value when
/// non-empty: `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 bytes.
fn is_name_part(s: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    !s.is_empty()
        && s.len() <= MAX_LABEL_VALUE
        && s.bytes().all(|b| alnum(b) || matches!(b, b'-' | b'_' | b'.'))
        && s.bytes().next().is_some_and(alnum)
        && s.bytes().last().is_some_and(alnum)
}

/// A label or annotation key: `[prefix/]name`, the prefix a DNS-1123
/// subdomain, the name as [`is_name_part`] (Kubernetes' IsQualifiedName).
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_name_part(name),
        None => is_name_part(s),
    }
}

/// A label value: empty, or as the name part of a qualified name.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_name_part(s)
}

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

    #[test]
    fn qualified_names_and_label_values() {
        for ok in ["app", "ring-controller.atlas", "volcano.sh/job-name", "a_b.C", "x"] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in ["", "/a", "a/", "a/b/c", "-a", "a-", "Bad.Prefix/x", "a b", &"a".repeat(64)] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
        assert!(is_label_value("") && is_label_value("v1.2_x") && !is_label_value("a\nb"));
        assert!(!is_label_value(&"v".repeat(64)) && !is_label_value("a/b"));
    }
}
