//! The env-var warnings (NCCL settings, undefined variables) of valid jobs,
//! as `validate` prints them and `apply` shows them.

use ringleader_api::{check_documents, FieldError, Report};
use ringleader_controller::env_warnings_for_resource;

/// The env-var warnings (NCCL settings, undefined variables) of a valid job.
pub fn env_warnings(report: &Report) -> Vec<FieldError> {
    match (&report.resource, report.valid) {
        (Some(res), true) => env_warnings_for_resource(res)
            .into_iter()
            .map(|w| FieldError::new(w.field, format!("{:?}", w.value), w.advice))
            .collect(),
        _ => Vec::new(),
    }
}

/// `Warning: <path>[<i>] Kind/ns/name: <warning>` for each env-var warning of
/// the valid jobs in `text` (what `validate` prints; `apply` shows them too,
/// as kubectl shows an API server's warnings). Text that does not parse has
/// none: the server's refusal says what is wrong with it.
pub fn warning_lines(source: &str, text: &str) -> Vec<String> {
    let Ok(docs) = ringleader_api::document::parse_str(source, text) else { return Vec::new() };
    check_documents(&docs)
        .iter()
        .flat_map(|r| {
            env_warnings(r).into_iter().map(move |w| format!("Warning: {}[{}] {}: {w}", r.path, r.index, r.object()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::warning_lines;

    const NOISY: &str = include_str!("../tests/data/noisy-pytorchjob.yaml");

    #[test]
    fn apply_shows_the_env_warnings_validate_finds() {
        let lines = warning_lines("job.yaml", NOISY);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("Warning: job.yaml[0] PyTorchJob/default/noisy: spec.pytorchReplicaSpecs.Worker"),
            "{lines:?}"
        );
        assert!(lines[0].contains("env[0].value"), "{lines:?}");
        // Invalid or unparseable text has no warnings (the server's refusal speaks).
        assert!(warning_lines("x.yaml", "kind: [").is_empty());
        assert!(warning_lines("x.yaml", &NOISY.replace("replicas: 2", "replicas: -2")).is_empty());
    }
}
