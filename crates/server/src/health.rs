//! `/livez` and `/readyz` as kube-apiserver answers them: each check on a
//! line of its own (`[+]store ok`, `[-]manager failed: …`), `ok` when
//! every check passes and `?verbose` was not asked, 500 with every line and
//! `readyz check failed` when one does not, `?exclude=<check>` to leave one
//! out.
//!
//! The checks: `ping` (the server answers), `store` (a read comes back in
//! time and the last write did not fail on SQLite or the disk), each component registered in the [`Health`](crate::components::Health) registry (the
//! manager: its loop reports a heartbeat on each wake-up, and `up` marks it
//! stopped when its task ends), and, for readiness only, `agents`: nodes
//! whose agents stopped heartbeating are listed, but fail the check only
//! when no node is heartbeating. A lost node is the node lifecycle's
//! business (NotReady, pods rescheduled) and the plane still serves and
//! schedules on the others; taking the API out of service for it would turn
//! one lost machine into a lost cluster. With every node gone nothing can
//! run, and readiness says so.
//!
//! The registry is in memory and shared by `up` between the server and the
//! manager (one process): a heartbeat costs a lock, not a store write and
//! a watch event to every client as a Lease object would.
//! Messages name components and nodes, never object contents or secrets.
//! The paths are served without a token, as Kubernetes does, but only the
//! status and a plain `ok` (or `<probe> check failed`): the lines (how many
//! nodes heartbeat, which component failed) go to callers RBAC allows `get`
//! on the probe's URL (`system:monitoring`, the admin).

use crate::authz::{self, Attributes};
use crate::ServerState;
use axum::extract::{Extension, RawQuery, State};
use axum::http::header::{CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ringleader_auth::identity::Identity;
use ringleader_store::{ObjectKey, Selector};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Longest wait for the store's answer before its check fails.
const STORE_TIMEOUT: Duration = Duration::from_secs(2);
/// Stale nodes named in the `agents` line; more are counted.
const MAX_NAMED: usize = 10;

/// Which endpoint: liveness asks "restart me?", readiness "send me work?".
#[derive(Clone, Copy, PartialEq, Eq)]
enum Probe {
    Live,
    Ready,
}

impl Probe {
    fn name(self) -> &'static str {
        match self {
            Probe::Live => "livez",
            Probe::Ready => "readyz",
        }
    }
}

/// One check's outcome: `Ok(note)` (an optional note for verbose output) or `Err(why)`.
type Outcome = Result<Option<String>, String>;

/// `GET /livez`.
pub async fn livez(
    State(state): State<ServerState>,
    identity: Option<Extension<Identity>>,
    RawQuery(query): RawQuery,
) -> Response {
    answer(&state, identity.map(|e| e.0), Probe::Live, query.as_deref().unwrap_or_default()).await
}

/// `GET /readyz`.
pub async fn readyz(
    State(state): State<ServerState>,
    identity: Option<Extension<Identity>>,
    RawQuery(query): RawQuery,
) -> Response {
    answer(&state, identity.map(|e| e.0), Probe::Ready, query.as_deref().unwrap_or_default()).await
}

/// Whether `identity` may read a probe's details: `get` on its URL, as
/// kube-apiserver's `system:monitoring` (the admin holds it through `*`).
async fn may_see_details(state: &ServerState, identity: Option<&Identity>, probe: Probe) -> bool {
    let Some(identity) = identity else { return false };
    let a = Attributes { verb: "get".into(), path: format!("/{}", probe.name()), ..Attributes::default() };
    authz::decide(state, identity, &a).await.is_ok_and(|d| d.allowed)
}

async fn answer(state: &ServerState, identity: Option<Identity>, probe: Probe, query: &str) -> Response {
    let (verbose, excluded) = parse_query(query);
    let checks = run_checks(state, probe, &excluded).await;
    let failed = checks.iter().any(|(_, o)| matches!(o, Some(Err(_))));
    let detailed = (verbose || failed) && may_see_details(state, identity.as_ref(), probe).await;
    let (status, body) = if detailed || !(verbose || failed) {
        render(probe, &checks, verbose, &excluded)
    } else if failed {
        // Which check failed, and why, names nodes and components: only the
        // status says it to anyone (the server log has the rest).
        let (status, _) = render(probe, &checks, verbose, &excluded);
        (status, format!("{} check failed\n", probe.name()))
    } else {
        (StatusCode::OK, "ok".to_string())
    };
    (status, [(CONTENT_TYPE, "text/plain; charset=utf-8"), (X_CONTENT_TYPE_OPTIONS, "nosniff")], body).into_response()
}

/// `verbose` (present with any value) and the `exclude` values.
fn parse_query(query: &str) -> (bool, Vec<String>) {
    let mut verbose = false;
    let mut excluded = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "verbose" => verbose = true,
            "exclude" => excluded.push(v.to_string()),
            _ => {}
        }
    }
    (verbose, excluded)
}

/// Every check of the probe, in order, `None` for those excluded.
async fn run_checks(state: &ServerState, probe: Probe, excluded: &[String]) -> Vec<(String, Option<Outcome>)> {
    let skip = |name: &str| excluded.iter().any(|e| e == name);
    let mut out: Vec<(String, Option<Outcome>)> = vec![("ping".into(), (!skip("ping")).then_some(Ok(None)))];
    out.push(("store".into(), if skip("store") { None } else { Some(store_check(state).await) }));
    let (components, agents) = state.health().outcomes(probe == Probe::Ready, Instant::now());
    for (name, outcome) in components {
        let keep = !skip(&name);
        out.push((name, keep.then_some(outcome)));
    }
    if let (Probe::Ready, Some(timeout)) = (probe, agents) {
        out.push(("agents".into(), if skip("agents") { None } else { Some(agents_check(state, timeout).await) }));
    }
    out
}

async fn store_check(state: &ServerState) -> Outcome {
    // A store that reads but cannot write (a full disk) takes the API out
    // of service: every create and update would fail.
    if let Some(why) = state.store().write_error() {
        return Err(format!("cannot write: {why}"));
    }
    // An indexed read of a key that need not exist: it goes through SQLite.
    let key = ObjectKey::new("v1", "Namespace", "", "default");
    match tokio::time::timeout(STORE_TIMEOUT, state.blocking(move |store| store.get(&key))).await {
        Ok(Ok(_)) => Ok(None),
        Ok(Err(e)) => Err(e.message),
        Err(_) => Err(format!("no answer in {} s", STORE_TIMEOUT.as_secs())),
    }
}

async fn agents_check(state: &ServerState, timeout: Duration) -> Outcome {
    let read = state.blocking(|store| store.list(&Selector::kind("ringleader.io/v1alpha1", "Node")));
    let nodes = match tokio::time::timeout(STORE_TIMEOUT, read).await {
        Ok(Ok((nodes, _))) => nodes,
        Ok(Err(e)) => return Err(format!("cannot list nodes: {}", e.message)),
        Err(_) => return Err(format!("cannot list nodes: no answer in {} s", STORE_TIMEOUT.as_secs())),
    };
    let now = ringleader_api::time::now();
    let nodes: Vec<(String, Value)> = nodes.into_iter().map(|n| (n.key.name, n.object)).collect();
    agents_outcome(&nodes, timeout.as_secs_f64(), now)
}

/// The `agents` outcome over `(name, object)` Nodes at `now` (seconds).
fn agents_outcome(nodes: &[(String, Value)], timeout: f64, now: f64) -> Outcome {
    let mut fresh = 0;
    let mut stale = Vec::new();
    for (name, node) in nodes {
        // A node stopped on purpose is not missing.
        if node.pointer("/spec/stopped").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let ready = node.pointer("/status/ready").and_then(Value::as_bool) != Some(false);
        match node.pointer("/status/lastHeartbeat").and_then(Value::as_f64) {
            Some(t) if now - t <= timeout && ready => fresh += 1,
            Some(t) => stale.push(format!("{name} (last heartbeat {:.0} s ago)", (now - t).max(0.0))),
            None => stale.push(format!("{name} (no heartbeat yet)")),
        }
    }
    let total = fresh + stale.len();
    let named = if stale.len() > MAX_NAMED {
        let more = stale.len() - MAX_NAMED;
        format!("{} and {more} more", stale[..MAX_NAMED].join(", "))
    } else {
        stale.join(", ")
    };
    match (total, fresh) {
        (0, _) => Ok(Some("no nodes".into())),
        (_, 0) => Err(format!("no node is heartbeating: {named}")),
        _ if stale.is_empty() => Ok(Some(format!("{fresh} of {total} nodes heartbeating"))),
        _ => Ok(Some(format!("{fresh} of {total} nodes heartbeating; stale: {named}"))),
    }
}

/// The status and body Kubernetes' healthz handler writes.
fn render(
    probe: Probe,
    checks: &[(String, Option<Outcome>)],
    verbose: bool,
    excluded: &[String],
) -> (StatusCode, String) {
    let failed = checks.iter().any(|(_, o)| matches!(o, Some(Err(_))));
    if !failed && !verbose {
        return (StatusCode::OK, "ok".into());
    }
    let mut body = String::new();
    for (name, outcome) in checks {
        match outcome {
            None => body.push_str(&format!("[+]{name} excluded: ok\n")),
            Some(Ok(None)) => body.push_str(&format!("[+]{name} ok\n")),
            Some(Ok(Some(note))) => body.push_str(&format!("[+]{name} ok: {note}\n")),
            Some(Err(why)) => body.push_str(&format!("[-]{name} failed: {why}\n")),
        }
    }
    let unknown: Vec<&str> =
        excluded.iter().map(String::as_str).filter(|e| !checks.iter().any(|(name, _)| name == e)).collect();
    if !unknown.is_empty() {
        let quoted: Vec<String> = unknown.iter().map(|u| format!("{u:?}")).collect();
        body.push_str(&format!("warn: some health checks cannot be excluded: no matches for {}\n", quoted.join(",")));
    }
    let name = probe.name();
    if failed {
        let failing: Vec<String> =
            checks.iter().filter(|(_, o)| matches!(o, Some(Err(_)))).map(|(n, _)| n.clone()).collect();
        tracing::warn!(probe = name, failing = %failing.join(","), "health check failed");
        body.push_str(&format!("{name} check failed\n"));
        (StatusCode::INTERNAL_SERVER_ERROR, body)
    } else {
        body.push_str(&format!("{name} check passed\n"));
        (StatusCode::OK, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, beat: Option<f64>, ready: bool) -> (String, Value) {
        let mut status = json!({"ready": ready});
        if let Some(b) = beat {
            status["lastHeartbeat"] = json!(b);
        }
        (name.to_string(), json!({"spec": {"profile": "hgx-h100-8"}, "status": status}))
    }

    #[test]
    fn stale_nodes_are_listed_and_fail_only_when_none_is_left() {
        let now = 1000.0;
        assert_eq!(agents_outcome(&[], 40.0, now), Ok(Some("no nodes".into())));
        let some = [node("a", Some(990.0), true), node("b", Some(900.0), true), node("c", None, true)];
        assert_eq!(
            agents_outcome(&some, 40.0, now),
            Ok(Some("1 of 3 nodes heartbeating; stale: b (last heartbeat 100 s ago), c (no heartbeat yet)".into()))
        );
        let gone = [node("a", Some(990.0), false), node("b", Some(900.0), true)];
        let Err(why) = agents_outcome(&gone, 40.0, now) else { panic!("all nodes gone but ready") };
        assert!(why.starts_with("no node is heartbeating: a (last heartbeat 10 s ago), b"), "{why}");
        let mut stopped = node("s", Some(100.0), true);
        stopped.1["spec"]["stopped"] = json!(true);
        assert_eq!(
            agents_outcome(&[stopped, node("a", Some(999.0), true)], 40.0, now),
            Ok(Some("1 of 1 nodes heartbeating".into()))
        );
    }

    #[test]
    fn output_follows_kubernetes() {
        let checks = vec![
            ("ping".to_string(), Some(Ok(None))),
            ("store".to_string(), None),
            ("manager".to_string(), Some(Err("stopped: boom".to_string()))),
        ];
        let (status, body) = render(Probe::Ready, &checks, false, &["store".into(), "nope".into()]);
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "[+]ping ok\n[+]store excluded: ok\n[-]manager failed: stopped: boom\n\
             warn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check failed\n"
        );
        let ok = vec![("ping".to_string(), Some(Ok(None)))];
        assert_eq!(render(Probe::Live, &ok, false, &[]), (StatusCode::OK, "ok".to_string()));
        assert_eq!(render(Probe::Live, &ok, true, &[]), (StatusCode::OK, "[+]ping ok\nlivez check passed\n".into()));
        assert_eq!(parse_query("verbose&exclude=store&exclude=agents"), (true, vec!["store".into(), "agents".into()]));
        assert_eq!(parse_query("verbose=1"), (true, vec![]));
    }
}
