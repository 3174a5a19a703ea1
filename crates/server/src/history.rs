//! `GET /apis/ringleader.io/v1alpha1/history`: series of the embedded
//! history as JSON, for the console's charts and `ringleader top`.
//!
//! Query: `series=<name>[,<name>…]` (the series named; one not held yet is
//! answered with no points) and/or `prefix=<p>` (every series held whose
//! name starts with `p`, those the caller may not read left out);
//! `since=<unix seconds>` or `sinceSeconds=<n>` (default: the last hour).
//!
//! The request path passes the authorization middleware (as the bulk apply
//! does); each series is then authorized here as a `list` of the objects it
//! describes (pods of its namespace, its job's type in its namespace,
//! nodes, queues): whoever may not list a namespace's pods reads none of
//! their series, and naming one, or a prefix inside that namespace, is a
//! 403 worded as Kubernetes words it.

use crate::authz::{self, Attributes};
use crate::encode::OutputFormat;
use crate::ServerState;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use ringleader_auth::identity::Identity;
use ringleader_observability::history::names::{self, Scope};
use ringleader_observability::history::ring::{Resolution, COARSE_STEP};
use ringleader_registry::status::ApiError;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// The path, under the ringleader.io group.
pub const PATH: &str = ringleader_registry::resources::HISTORY_PATH;
/// The resource name RBAC's attributes carry for the path.
pub const RESOURCE: &str = ringleader_registry::resources::HISTORY_RESOURCE;
/// Default window, seconds.
const DEFAULT_WINDOW: u64 = 3600;
/// Most series one request may name.
const MAX_NAMED: usize = 1000;

/// Whether authorization attributes are those of this endpoint (the
/// middleware lets it through; [`serve`] authorizes each series).
pub fn is_history(a: &Attributes) -> bool {
    a.is_history()
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq)]
struct Query {
    named: Vec<String>,
    prefix: Option<String>,
    since: u32,
}

fn parse_query(query: &HashMap<String, String>, now: f64) -> Result<Query, ApiError> {
    let named: Vec<String> = query
        .get("series")
        .map(|s| s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect())
        .unwrap_or_default();
    let prefix = query.get("prefix").cloned();
    if named.is_empty() && prefix.is_none() {
        return Err(ApiError::bad_field(
            "series",
            format!(
                "name at least one series (series=a,b) or a prefix (prefix=pod/<namespace>/); the forms are {}",
                names::FORMS
            ),
        ));
    }
    if named.len() > MAX_NAMED {
        return Err(ApiError::bad_field("series", format!("{} series named; at most {MAX_NAMED}", named.len())));
    }
    for n in &named {
        names::parse(n).map_err(|e| ApiError::bad_field("series", e))?;
    }
    let number = |field: &str, v: &str| -> Result<u64, ApiError> {
        v.trim()
            .parse::<u64>()
            .map_err(|_| ApiError::bad_field(field, format!("{v:?} is not a whole number of seconds")))
    };
    let now_secs = if now.is_finite() && now > 0.0 { now as u64 } else { 0 };
    let since = match (query.get("since"), query.get("sinceSeconds")) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_field("sinceSeconds", "give since (unix seconds) or sinceSeconds, not both"))
        }
        (Some(t), None) => number("since", t)?,
        (None, Some(s)) => now_secs.saturating_sub(number("sinceSeconds", s)?),
        (None, None) => now_secs.saturating_sub(DEFAULT_WINDOW),
    };
    Ok(Query { named, prefix, since: u32::try_from(since).unwrap_or(u32::MAX) })
}

/// The RBAC question a scope asks.
fn attributes(scope: &Scope) -> Attributes {
    let (group, resource, namespace) = match scope {
        Scope::Nodes => (ringleader_registry::resources::NODES.group, "nodes", ""),
        Scope::Queues => ("scheduling.volcano.sh", "queues", ""),
        Scope::Pods { namespace } => ("", "pods", namespace.as_str()),
        Scope::Jobs { namespace, group, plural } => (group.as_str(), plural.as_str(), namespace.as_str()),
    };
    Attributes {
        verb: "list".into(),
        api_group: group.to_string(),
        resource: resource.to_string(),
        namespace: namespace.to_string(),
        resource_request: true,
        path: PATH.to_string(),
        ..Attributes::default()
    }
}

/// Decisions of one request, asked once per scope.
struct Gate<'a> {
    state: &'a ServerState,
    id: &'a Identity,
    decided: BTreeMap<Scope, bool>,
}

impl Gate<'_> {
    async fn allows(&mut self, scope: &Scope) -> Result<bool, ApiError> {
        if let Some(d) = self.decided.get(scope) {
            return Ok(*d);
        }
        let allowed = authz::decide(self.state, self.id, &attributes(scope)).await?.allowed;
        self.decided.insert(scope.clone(), allowed);
        Ok(allowed)
    }

    async fn require(&mut self, scope: &Scope) -> Result<(), ApiError> {
        if self.allows(scope).await? {
            return Ok(());
        }
        Err(authz::forbidden(self.id, &attributes(scope), "the history of these objects needs the same permission"))
    }
}

/// One series in the answer's shape.
fn series_json(name: &str, unit: &str, interval: u32, read: Option<(Resolution, Vec<(u32, f32)>)>) -> Value {
    let (resolution, points) = read.unwrap_or((Resolution::Fine, Vec::new()));
    let step = match resolution {
        Resolution::Fine => interval,
        Resolution::Coarse => COARSE_STEP,
    };
    // f32 printed as its shortest decimal, so 0.1 is not 0.10000000149.
    let points: Vec<Value> =
        points.into_iter().map(|(t, v)| json!([t, v.to_string().parse::<f64>().unwrap_or(f64::from(v))])).collect();
    json!({"name": name, "unit": unit, "step": step, "points": points})
}

/// Answers a request to [`PATH`]; `None` for any other path.
pub(crate) async fn serve(
    state: &ServerState,
    method: &Method,
    path: &str,
    query: &HashMap<String, String>,
    identity: Option<&Identity>,
    format: OutputFormat,
) -> Option<Result<Response, ApiError>> {
    if path.trim_end_matches('/') != PATH {
        return None;
    }
    if *method != Method::GET {
        return Some(Err(ApiError::method(method.as_str(), path)));
    }
    Some(answer(state, query, identity, format).await)
}

async fn answer(
    state: &ServerState,
    query: &HashMap<String, String>,
    identity: Option<&Identity>,
    format: OutputFormat,
) -> Result<Response, ApiError> {
    let Some(id) = identity else { return Err(ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", "no identity")) };
    let q = parse_query(query, ringleader_api::time::now())?;
    let mut gate = Gate { state, id, decided: BTreeMap::new() };
    let mut wanted: Vec<(String, &'static str)> = Vec::new();
    for name in &q.named {
        let (scope, unit) = names::parse(name).map_err(|e| ApiError::bad_field("series", e))?;
        gate.require(&scope).await?;
        wanted.push((name.clone(), unit));
    }
    if let Some(prefix) = &q.prefix {
        if let Some(scope) = names::prefix_scope(prefix) {
            gate.require(&scope).await?;
        }
        let held: Vec<String> =
            state.metrics().with_history_read(|h| h.names_with_prefix(prefix).map(str::to_string).collect());
        for name in held {
            // Held names always parse: the sampler writes only valid ones.
            let Ok((scope, unit)) = names::parse(&name) else { continue };
            if gate.allows(&scope).await? && !wanted.iter().any(|(n, _)| *n == name) {
                wanted.push((name, unit));
            }
        }
    }
    let body = state.metrics().with_history_read(|h| {
        let interval = h.config().interval_secs;
        let series: Vec<Value> =
            wanted.iter().map(|(name, unit)| series_json(name, unit, interval, h.read(name, q.since))).collect();
        json!({
            "kind": "History",
            "apiVersion": "ringleader.io/v1alpha1",
            "interval": interval,
            "since": q.since,
            "series": series,
        })
    });
    Ok(format.respond(StatusCode::OK, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn queries_are_read_or_refused_naming_the_field() {
        let got = parse_query(&q(&[("series", "pod/a/p/cpu, node/n/ready"), ("sinceSeconds", "600")]), 10_000.5);
        assert_eq!(
            got.ok(),
            Some(Query { named: vec!["pod/a/p/cpu".into(), "node/n/ready".into()], prefix: None, since: 9_400 })
        );
        let got = parse_query(&q(&[("prefix", "")]), 10_000.0);
        assert_eq!(got.ok().map(|q| (q.prefix, q.since)), Some((Some(String::new()), 6_400)));
        for (pairs, field) in [
            (vec![], "series"),
            (vec![("series", "pod/a/p/gpu")], "series"),
            (vec![("prefix", "node/"), ("since", "yesterday")], "since"),
            (vec![("prefix", "node/"), ("sinceSeconds", "-5")], "sinceSeconds"),
            (vec![("prefix", "node/"), ("since", "1"), ("sinceSeconds", "5")], "sinceSeconds"),
        ] {
            let e = parse_query(&q(&pairs), 10_000.0).err().map(|e| e.message).unwrap_or_default();
            assert!(e.starts_with(&format!("{field}: ")), "{pairs:?}: {e}");
        }
    }

    #[test]
    fn scopes_ask_rbac_to_list_the_objects() {
        let a = attributes(&Scope::Pods { namespace: "team".into() });
        assert_eq!(
            (a.verb.as_str(), a.api_group.as_str(), a.resource.as_str(), a.namespace.as_str()),
            ("list", "", "pods", "team")
        );
        let a = attributes(&Scope::Jobs {
            namespace: "t".into(),
            group: "kubeflow.org".into(),
            plural: "pytorchjobs".into(),
        });
        assert_eq!((a.api_group.as_str(), a.resource.as_str()), ("kubeflow.org", "pytorchjobs"));
        let path: axum::http::Uri = "/apis/ringleader.io/v1alpha1/history?prefix=node/".parse().unwrap_or_default();
        assert!(is_history(&Attributes::of(&Method::GET, &path)));
        assert!(!is_history(&Attributes::of(&Method::DELETE, &path)));
    }

    #[test]
    fn points_print_as_short_decimals() {
        let v = series_json("pod/a/p/cpu", "cores", 10, Some((Resolution::Fine, vec![(100, 0.1), (110, 2.5)])));
        assert_eq!(v, json!({"name": "pod/a/p/cpu", "unit": "cores", "step": 10, "points": [[100, 0.1], [110, 2.5]]}));
        let v = series_json("node/n/cpu", "cores", 10, Some((Resolution::Coarse, vec![])));
        assert_eq!(v["step"], 60);
        assert_eq!(series_json("node/n/cpu", "cores", 10, None)["points"], json!([]));
    }
}
