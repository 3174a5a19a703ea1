//! `/api/v1/nodes`: serves the core `v1 Node` view
//! ([`ringleader_registry::node_view`]) of the stored ringleader.io Nodes.

use crate::encode::OutputFormat;
use crate::ServerState;
use axum::http::StatusCode;
use axum::response::Response;
use ringleader_registry::node_view::{project, CORE_NODES};
use ringleader_registry::resources::NODES;
use ringleader_registry::selector::ObjectSelector;
use ringleader_registry::status::{ApiError, Resource};
use ringleader_store::{ObjectKey, Selector};
use serde_json::{json, Value};

/// `GET /api/v1/nodes`: the projected Nodes matching `selector`.
pub(crate) async fn list(
    state: &ServerState,
    selector: &ObjectSelector,
    format: OutputFormat,
) -> Result<Response, ApiError> {
    let sel = Selector::kind(NODES.api_version, NODES.kind);
    let (items, version) = state.blocking(move |s| s.list(&sel)).await?;
    let items: Vec<Value> = items.iter().map(|n| project(&n.object)).filter(|n| selector.matches(n)).collect();
    let list = json!({
        "apiVersion": "v1",
        "kind": "NodeList",
        "metadata": {"resourceVersion": version.to_string()},
        "items": items,
    });
    Ok(format.respond(StatusCode::OK, &list))
}

/// `GET /api/v1/nodes/{name}`.
pub(crate) async fn get(state: &ServerState, name: &str, format: OutputFormat) -> Result<Response, ApiError> {
    let key = ObjectKey::new(NODES.api_version, NODES.kind, "", name);
    match state.blocking(move |s| s.get(&key)).await? {
        Some(stored) => Ok(format.respond(StatusCode::OK, &project(&stored.object))),
        None => Err(ApiError::not_found(&Resource { plural: "nodes".into(), group: String::new() }, name)),
    }
}

/// `GET /api/v1/nodes?watch=true`: a watch of the ringleader.io Nodes, each
/// event's object projected.
pub(crate) async fn watch(
    state: &ServerState,
    selector: ObjectSelector,
    options: crate::watch::Options,
    format: OutputFormat,
) -> Result<Response, ApiError> {
    let view =
        crate::watch::View { project: Some(project), shown_as: Some(&CORE_NODES), ..crate::watch::View::of(format) };
    crate::watch::serve_as(state, NODES, None, selector, None, options, view).await
}
