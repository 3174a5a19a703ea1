//! The pod status merge patches the agent writes. Container statuses are a
//! list, which a merge patch replaces whole, so each patch carries the full
//! entry.

use ringleader_api::time::rfc3339;
use serde_json::{json, Map, Value};

/// How a container ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// Exit code; `128 + N` for a death by signal N.
    pub code: i32,
    /// `Completed`, `Error`, or the agent's reason (`AgentRestarted`, `StartError` …).
    pub reason: String,
    /// Human-readable detail.
    pub message: Option<String>,
}

impl Exit {
    /// From a wait status: an exit code or a terminating signal.
    pub fn from_wait(code: Option<i32>, signal: Option<i32>) -> Exit {
        match (code, signal) {
            (Some(0), _) => Exit { code: 0, reason: "Completed".into(), message: None },
            (Some(c), _) => Exit { code: c, reason: "Error".into(), message: None },
            (None, Some(s)) => Exit {
                code: 128 + s,
                reason: "Error".into(),
                message: Some(format!("terminated by signal {s} ({})", signal_name(s))),
            },
            (None, None) => Exit { code: 128, reason: "Unknown".into(), message: Some("no exit status".into()) },
        }
    }

    /// An ending the agent decides (the process never ran or was lost).
    pub fn agent(code: i32, reason: &str, message: impl Into<String>) -> Exit {
        Exit { code, reason: reason.into(), message: Some(message.into()) }
    }

    /// `Succeeded` for exit 0, else `Failed`.
    pub fn phase(&self) -> &'static str {
        if self.code == 0 {
            "Succeeded"
        } else {
            "Failed"
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        _ => "signal",
    }
}

/// Running since `started` on a node of address `address`, with extra annotations.
pub fn running(container: &str, address: &str, started: f64, annotations: &[(&str, String)]) -> Value {
    let at = rfc3339(started);
    let mut patch = json!({
        "status": {
            "phase": "Running",
            "hostIP": address,
            "podIP": address,
            "startTime": at,
            "containerStatuses": [{
                "name": container,
                "ready": true,
                "started": true,
                "restartCount": 0,
                "state": { "running": { "startedAt": at } },
            }],
        }
    });
    if !annotations.is_empty() {
        let a: Map<String, Value> = annotations.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        patch["metadata"] = json!({ "annotations": a });
    }
    patch
}

/// Terminated at `finished` after running since `started` (`None`: it
/// never ran, so the patch also sets the addresses and start time).
pub fn terminated(container: &str, address: &str, started: Option<f64>, finished: f64, exit: &Exit) -> Value {
    let mut term = json!({ "exitCode": exit.code, "reason": exit.reason, "finishedAt": rfc3339(finished) });
    term["startedAt"] = json!(rfc3339(started.unwrap_or(finished)));
    if let Some(m) = &exit.message {
        term["message"] = json!(m);
    }
    let mut status = json!({
        "phase": exit.phase(),
        "containerStatuses": [{
            "name": container,
            "ready": false,
            "started": false,
            "restartCount": 0,
            "state": { "terminated": term },
        }],
    });
    if started.is_none() {
        status["hostIP"] = json!(address);
        status["podIP"] = json!(address);
        status["startTime"] = json!(rfc3339(finished));
    }
    if exit.code != 0 && !matches!(exit.reason.as_str(), "Error" | "Completed") {
        // The agent's own reasons are pod-level facts too (`kubectl get` shows them).
        status["reason"] = json!(exit.reason);
        if let Some(m) = &exit.message {
            status["message"] = json!(m);
        }
    }
    json!({ "status": status })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_map_to_codes_and_phases() {
        assert_eq!(Exit::from_wait(Some(0), None).phase(), "Succeeded");
        let e = Exit::from_wait(Some(3), None);
        assert_eq!((e.code, e.reason.as_str(), e.phase()), (3, "Error", "Failed"));
        let k = Exit::from_wait(None, Some(9));
        assert_eq!(k.code, 137);
        assert!(k.message.unwrap().contains("SIGKILL"));
        assert_eq!(Exit::from_wait(None, Some(15)).code, 143);
    }

    #[test]
    fn patches_carry_the_contract_fields() {
        let r = running("c", "127.0.1.1", 0.0, &[("ringleader.io/pid", "42".into())]);
        assert_eq!(r["status"]["phase"], "Running");
        assert_eq!(r["status"]["podIP"], "127.0.1.1");
        assert_eq!(r["status"]["containerStatuses"][0]["state"]["running"]["startedAt"], "1970-01-01T00:00:00Z");
        assert_eq!(r["metadata"]["annotations"]["ringleader.io/pid"], "42");
        assert!(running("c", "a", 0.0, &[]).get("metadata").is_none());

        let t = terminated("c", "a", Some(0.0), 5.0, &Exit::from_wait(Some(3), None));
        let term = &t["status"]["containerStatuses"][0]["state"]["terminated"];
        assert_eq!((term["exitCode"].as_i64(), term["reason"].as_str()), (Some(3), Some("Error")));
        assert_eq!(term["finishedAt"], "1970-01-01T00:00:05Z");
        assert_eq!(t["status"]["phase"], "Failed");
        assert!(t["status"].get("podIP").is_none() && t["status"].get("reason").is_none());

        let a = terminated("c", "a", None, 5.0, &Exit::agent(137, "AgentRestarted", "gone"));
        assert_eq!(a["status"]["reason"], "AgentRestarted");
        assert_eq!(a["status"]["podIP"], "a");
    }
}
