//! The request pipeline of the API server: the stages every request passes,
//! in order, each a module with one entry point, none calling back into a
//! later one.
//!
//! | # | stage | entry point |
//! |---|---|---|
//! | 1 | metrics: count and time it (outermost, so refusals count too) | [`crate::metrics_http::track`] |
//! | 2 | authenticate: bearer token to identity, then impersonation | [`crate::auth::require_token`] |
//! | 3 | authorize: RBAC and the node scope of agents | [`crate::authz::check`] (called by 2) |
//! | 4 | decode: path, query, wanted encoding, body bounded in size and time | [`decode::request`] |
//! | 5 | admission: defaulting, fields, validation, devices, protection of scheduler-owned fields and platform rules; delete guards | [`admission::object`], [`admission::patched`], [`admission::delete_guard`] |
//! | 6 | storage and audit: the write and its audit record in one transaction (dry runs roll back) | [`audit::write`], [`storage::dry_run`] |
//! | 7 | encode: JSON, YAML or Table | [`crate::encode::OutputFormat::respond`] |
//!
//! Stages 1–3 are the layers of [`router`]; 4–7 run in [`api`] and the verb
//! it dispatches to (`create`, `replace`, `patch`, `delete`, `get`, `list`,
//! `watch`, the bulk apply and logs). A new resource kind needs no change
//! here (paths come from `ringleader_registry::resources`); a new admission
//! rule goes into [`admission`].

use crate::admission::fields;
use crate::admission::objects;
use crate::admission::protect;
use crate::admission::{self, defaulting, validation};
use crate::decode::{self, parse_path, Part, Req, Target, MAX_BODY};
use crate::encode::{Encoded, OutputFormat};
use crate::paging::{encode_continue, ListParams};
use crate::patch::{self as patches, builtin, PatchType};
use crate::state::ServerState;
use crate::storage::{dry_run, store_selector};
use crate::{
    apply, audit, auth, discovery, duplicates, logs, managed_fields, node_view, openapi, server_side_apply, watch,
};
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::StreamExt;
use ringleader_api::time::now_rfc3339;
use ringleader_registry::resources::{self, ResourceType, NAMESPACES, PODS};
use ringleader_registry::selector::ObjectSelector;
use ringleader_registry::status::{ApiError, Cause};
use ringleader_store::{ObjectKey, Op, Selector, StoreError, Stored};
use serde_json::{json, Map, Value};

/// The admission stage's view of a write request.
fn write<'a>(
    state: &'a ServerState,
    req: &'a Req,
    verb: &'static str,
    rt: &'static ResourceType,
) -> admission::Write<'a> {
    admission::Write {
        state,
        identity: req.identity.as_ref(),
        verb,
        rt,
        field_validation: req.param("fieldValidation"),
    }
}

/// Annotation marking a pod released to start (the agent runs it).
pub const START_ANNOTATION: &str = "ringleader.io/start";

/// Grace period when neither the request nor the pod names one.
const DEFAULT_GRACE_SECONDS: u64 = 30;

/// The whole HTTP API.
pub fn router(state: ServerState) -> Router {
    Router::new()
        .route("/", get(crate::console::index))
        .route("/console/{*path}", get(crate::console::asset))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(crate::health::readyz))
        .route("/livez", get(crate::health::livez))
        .route("/metrics", get(metrics))
        .route("/version", get(discovery::version))
        // The Python client's VersionApi asks with the slash.
        .route("/version/", get(discovery::version))
        .route("/api", get(discovery::core_versions))
        .route("/api/v1", get(discovery::core_resources))
        .route("/apis", get(discovery::group_list))
        .route("/apis/{group}/{version}", get(discovery::group_resources))
        .route("/openapi/v2", get(|headers: HeaderMap| async move { openapi::v2(&headers) }))
        .route("/openapi/v3", get(|| async { openapi::v3_index() }))
        .route(
            "/openapi/v3/{*group_version}",
            get(|axum::extract::Path(gv): axum::extract::Path<String>| async move { openapi::v3_group_version(&gv) }),
        )
        .route(crate::authz::SSAR_PATH, axum::routing::post(crate::authz::self_subject_access_review))
        .route(crate::reviews::RULES_REVIEW_PATH, axum::routing::post(crate::reviews::self_subject_rules_review))
        .route(crate::reviews::SELF_REVIEW_PATH, axum::routing::post(crate::reviews::self_subject_review))
        .route(
            crate::access_keys::COLLECTION_PATH,
            axum::routing::post(crate::access_keys::create).get(crate::access_keys::list),
        )
        .route(
            crate::access_keys::ITEM_PATH,
            axum::routing::delete(crate::access_keys::item).patch(crate::access_keys::item),
        )
        .fallback(api)
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::require_token))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::metrics_http::track))
        .with_state(state)
}

async fn metrics(State(state): State<ServerState>) -> Response {
    let m = state.metrics.clone();
    match state.blocking(move |store| m.render(store)).await {
        Ok(text) => ([(CONTENT_TYPE, ringleader_observability::metrics::CONTENT_TYPE)], text).into_response(),
        Err(e) => e.into_response(),
    }
}

/// Everything under `/api` and `/apis`, once the layers of [`router`]
/// let it through: decode, then the verb (which admits, stores, audits and
/// encodes).
async fn api(State(state): State<ServerState>, request: Request) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    // Upgraded connections: the raw request goes on, undecoded.
    if let Some((ns, name, sub)) = crate::streams::target(&path) {
        if matches!(method, Method::GET | Method::POST) {
            return crate::streams::serve(&state, request, &ns, &name, &sub).await;
        }
    }
    let answer = match decode::request(request, state.conn_limits().body_timeout).await {
        Ok(req) => handle(&state, req).await,
        Err(e) => Err(e),
    };
    match answer {
        Ok(response) => response,
        Err(e) => {
            if e.code.is_server_error() {
                tracing::warn!(%method, %path, "{}", e.message);
            }
            e.into_response()
        }
    }
}

async fn handle(state: &ServerState, req: Req) -> Result<Response, ApiError> {
    if let Some(refusal) = crate::runtime_gaps::refusal(&req.method, &req.path) {
        return Err(refusal);
    }
    if let Some(answer) = core_node(state, &req).await {
        return answer;
    }
    if let Some((ns, name)) = crate::eviction::target(&req.path).filter(|_| req.method == Method::POST) {
        return evict(state, &req, &ns, &name).await;
    }
    if let Some((rt, ns, name)) = crate::scale::target(&req.path) {
        return crate::scale::serve(state, &req, rt, &ns, &name).await;
    }
    if let Some((ns, name)) = crate::sa_tokens::target(&req.path).filter(|_| req.method == Method::POST) {
        return crate::sa_tokens::serve(state, &req, &ns, &name).await;
    }
    if let Some(answer) = crate::resource_metrics::serve(state, &req.method, &req.path, &req.query, req.format).await {
        return answer;
    }
    let history = crate::history::serve(state, &req.method, &req.path, &req.query, req.identity.as_ref(), req.format);
    if let Some(answer) = history.await {
        return answer;
    }
    let target = parse_path(&req.path)?;
    let m = req.method.clone();
    if let Target::Collection { rt, .. } | Target::Object { rt, .. } = &target {
        if !rt.writable() && m != Method::GET {
            return Err(read_only(rt));
        }
    }
    match target {
        Target::BulkApply if m == Method::POST => {
            let namespace = req.param("namespace").filter(|n| !n.is_empty());
            let validation = req.param("fieldValidation");
            apply::bulk(state, req.identity.as_ref(), &req.body, req.param("source"), namespace, validation).await
        }
        Target::Log { ns, name } if m == Method::GET => {
            let options = logs::LogOptions::parse(&req.query, ringleader_api::time::now())?;
            logs::serve(state, &ns, &name, options).await
        }
        Target::Collection { rt, ns } if m == Method::GET => {
            let selector = ObjectSelector::parse(req.param("labelSelector"), req.param("fieldSelector"))
                .map_err(ApiError::bad_request)?;
            let hidden = crate::visibility::hidden(state, req.identity.as_ref(), rt, ns.as_deref()).await?;
            if req.flag("watch") {
                let options = watch::Options::parse(&req.query)?;
                let view = watch::View::of(req.format);
                return watch::serve_as(state, rt, ns, selector, hidden, options, view).await;
            }
            let params = ListParams::parse(&req.query, rt.api_version, rt.kind)?;
            list(state, rt, ns, &selector, hidden, params, req.format).await
        }
        Target::Collection { rt, .. } if m == Method::POST && rt == resources::REPLICA_SETS => {
            Err(crate::replica_sets::create_refused())
        }
        Target::Collection { rt, ns } if m == Method::POST => {
            let dry = req.dry_run("CreateOptions")?;
            let (object, dups) = decode::body(&req)?;
            let w = write(state, &req, "create", rt);
            let (object, unknown) =
                admission::object(&w, ns.as_deref(), None, object, &dups, protect::Before::Absent).await?;
            let manager = server_side_apply::writer(&req, rt, builtin(rt), Part::Whole, "CreateOptions")?;
            let object = managed_fields::record_update(None, object, &manager);
            if dry {
                let out = dry_run(state, Op::Create(object)).await?;
                return Ok(fields::warn(req.format.respond(StatusCode::CREATED, &out), &unknown));
            }
            let record = audit::entry(req.identity.as_ref(), "create", rt, None, Some(&object));
            let stored = state.blocking(move |s| audit::write(s, Op::Create(object), record)).await?;
            Ok(fields::warn(req.format.respond(StatusCode::CREATED, &stored.object), &unknown))
        }
        Target::Object { rt, ns, name, part } => {
            let key = ObjectKey::new(rt.api_version, rt.kind, &ns, &name);
            match m {
                Method::GET => {
                    let k = key.clone();
                    match state.blocking(move |s| s.get(&k)).await? {
                        Some(stored) => {
                            crate::visibility::check(state, req.identity.as_ref(), "get", rt, &stored.object).await?;
                            Ok(req.format.respond(StatusCode::OK, &stored.object))
                        }
                        None => Err(StoreError::NotFound(key).into()),
                    }
                }
                Method::PUT => {
                    let dry = req.dry_run("UpdateOptions")?;
                    let (mut object, dups) = decode::body(&req)?;
                    if part == Part::Status {
                        let k = key.clone();
                        let Some(current) = state.blocking(move |s| s.get(&k)).await? else {
                            return Err(StoreError::NotFound(key).into());
                        };
                        object = with_status_of(&current.object, &object);
                    }
                    let w = write(state, &req, "update", rt);
                    let (object, unknown) =
                        admission::object(&w, Some(&ns), Some(&name), object, &dups, protect::Before::Lookup).await?;
                    let stored = replace(state, rt, &req, key, object, part, dry).await?;
                    Ok(fields::warn(req.format.respond(StatusCode::OK, &stored.object), &unknown))
                }
                Method::PATCH => patch(state, rt, key, &req, part).await,
                Method::DELETE if part == Part::Whole => delete(state, rt, key, &req).await,
                _ => Err(ApiError::method(m.as_str(), &req.path)),
            }
        }
        _ => Err(ApiError::method(m.as_str(), &req.path)),
    }
}

/// 405 for a write of a type only the server writes.
fn read_only(rt: &ResourceType) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!("{} are written by the API server only; they are read-only through the API", rt.qualified()),
    )
}

/// `/api/v1/nodes`: the read-only core view of the ringleader.io Nodes.
async fn core_node(state: &ServerState, req: &Req) -> Option<Result<Response, ApiError>> {
    let (name, status) = match req.path.trim_matches('/').split('/').collect::<Vec<_>>().as_slice() {
        ["api", "v1", "nodes"] => (None, false),
        ["api", "v1", "nodes", name] if !name.is_empty() => (Some(name.to_string()), false),
        // Its `status` subresource reads as the object, as kube-apiserver's does.
        ["api", "v1", "nodes", name, "status"] if !name.is_empty() => (Some(name.to_string()), true),
        _ => return None,
    };
    let name = name.as_deref();
    Some(match (&req.method, name) {
        (&Method::PATCH | &Method::PUT, Some(name)) if !status => core_node_write(state, req, name).await,
        (&Method::GET, Some(name)) => node_view::get(state, name, req.format).await,
        (&Method::GET, None) => match ObjectSelector::parse(req.param("labelSelector"), req.param("fieldSelector")) {
            Err(e) => Err(ApiError::bad_request(e)),
            Ok(selector) if req.flag("watch") => match watch::Options::parse(&req.query) {
                Ok(options) => node_view::watch(state, selector, options, req.format).await,
                Err(e) => Err(e),
            },
            Ok(selector) => node_view::list(state, &selector, req.format).await,
        },
        (m, name) => Err(ringleader_registry::node_view::read_only(m.as_str(), name)),
    })
}

/// `PATCH` / `PUT /api/v1/nodes/{name}`: labels, annotations and
/// `spec.unschedulable` of the core view land on the ringleader.io Node
/// ([`ringleader_registry::node_view::apply_write`]), through the same
/// admission as a write of that Node.
async fn core_node_write(state: &ServerState, req: &Req, name: &str) -> Result<Response, ApiError> {
    use ringleader_registry::node_view::{apply_write, project};
    let rt = resources::NODES;
    let key = ObjectKey::new(rt.api_version, rt.kind, "", name);
    let verb = if req.method == Method::PUT { "update" } else { "patch" };
    let dry = req.dry_run(if verb == "update" { "UpdateOptions" } else { "PatchOptions" })?;
    // A patch (server-side apply is not served on the view) is read once.
    let patch = match req.method {
        Method::PUT => None,
        _ => match PatchType::of(req.content_type()) {
            Some(kind @ (PatchType::Json | PatchType::Merge | PatchType::Strategic)) => {
                Some((kind, patch_body(req, kind)?.0))
            }
            _ => return Err(ApiError::unsupported_patch(req.content_type(), patches::BUILTIN_PATCH_TYPES)),
        },
    };
    let patch = patch.as_ref();
    let not_found = || {
        ApiError::not_found(
            &ringleader_registry::status::Resource { plural: "nodes".into(), group: String::new() },
            name,
        )
    };
    for _ in 0..8 {
        let k = key.clone();
        let Some(current) = state.blocking(move |s| s.get(&k)).await? else {
            return Err(not_found());
        };
        let view = project(&current.object);
        let wanted = match patch {
            None => decode::body(req)?.0,
            Some((kind, body)) => apply_patch(*kind, &view, body, rt, name)?,
        };
        let claimed = wanted.pointer("/metadata/resourceVersion").and_then(Value::as_str);
        if claimed.is_some_and(|c| c != current.resource_version.to_string()) {
            return Err(ApiError::conflict(&ringleader_registry::status::Resource::of_key(&key), name));
        }
        let mut next = apply_write(&current.object, &wanted, &now_rfc3339())?;
        if let Some(meta) = next.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(current.resource_version.to_string()));
        }
        admission::patched(&write(state, req, verb, rt), &current.object, &next, &[]).await?;
        if dry || next == current.object {
            return Ok(req.format.respond(StatusCode::OK, &project(&next)));
        }
        let record = audit::entry(req.identity.as_ref(), verb, rt, Some(&current.object), Some(&next));
        match state.blocking(move |s| audit::write(s, Op::Update(next), record)).await {
            Err(e) if e.reason == "Conflict" => continue,
            other => return other.map(|stored| req.format.respond(StatusCode::OK, &project(&stored.object))),
        }
    }
    Err(ApiError::conflict(&ringleader_registry::status::Resource::of_key(&key), name))
}

/// A list, one page at a time when `limit` is set: `metadata.continue`
/// resumes after the page's last key; label and field selectors filter
/// within the store's scan, so a page holds up to `limit` matches.
async fn list(
    state: &ServerState,
    rt: &'static ResourceType,
    ns: Option<String>,
    selector: &ObjectSelector,
    hidden: Option<crate::visibility::Hidden>,
    params: ListParams,
    format: OutputFormat,
) -> Result<Response, ApiError> {
    let sel = store_selector(rt, ns.as_deref());
    let filter = Filter { selector: selector.clone(), hidden };
    if format == OutputFormat::Json {
        return json_list(state, rt, sel, filter, params).await;
    }
    // Read, build and encode on one blocking thread: a large list is
    // hundreds of thousands of small allocations, and freeing them on the
    // thread that made them is several times cheaper than on an async
    // worker (and keeps the workers free meanwhile).
    let encoded = state
        .blocking(move |s| {
            let after = params.after.as_ref().map(|(_, key)| key.clone());
            let page = s.list_page(&sel, after.as_ref(), params.limit, |o| filter.is_empty() || filter.matches(o))?;
            Ok(list_body(rt, &params, page, format))
        })
        .await??;
    Ok(encoded.into_response(StatusCode::OK))
}

/// What a list keeps: the request's selectors, less what is hidden from the caller.
struct Filter {
    selector: ObjectSelector,
    hidden: Option<crate::visibility::Hidden>,
}

impl Filter {
    fn is_empty(&self) -> bool {
        self.selector.is_empty() && self.hidden.is_none()
    }

    fn matches(&self, o: &Value) -> bool {
        self.selector.matches(o) && !self.hidden.as_ref().is_some_and(|h| h.hides(o))
    }
}

/// The `…List` (or Table) of one page, encoded.
fn list_body(
    rt: &ResourceType,
    params: &ListParams,
    page: ringleader_store::Page,
    format: OutputFormat,
) -> Result<Encoded, ApiError> {
    if params.after.is_none() {
        params.check_version(page.version)?;
    }
    let metadata = list_metadata(params, page.version, page.next.as_ref(), page.remaining);
    let items: Vec<Value> = page.items.into_iter().map(|s| s.object).collect();
    let list = json!({
        "apiVersion": rt.api_version,
        "kind": format!("{}List", rt.kind),
        "metadata": metadata,
        "items": items,
    });
    format.encode(list)
}

/// The list's `metadata`: every page of one list reports the version its
/// first page was read at.
fn list_metadata(
    params: &ListParams,
    read_at: u64,
    next: Option<&ObjectKey>,
    remaining: Option<u64>,
) -> Map<String, Value> {
    let version = params.after.as_ref().map_or(read_at, |(v, _)| *v);
    let mut metadata = Map::new();
    metadata.insert("resourceVersion".into(), json!(version.to_string()));
    if let Some(next) = next {
        metadata.insert("continue".into(), json!(encode_continue(version, next)));
        if let Some(remaining) = remaining {
            metadata.insert("remainingItemCount".into(), json!(remaining));
        }
    }
    metadata
}

/// How long a JSON list waits for the client to take the next chunk before
/// giving up (kube-apiserver's default `--request-timeout`): its rows are
/// read in one SQLite snapshot, which a stalled client must not hold open.
const LIST_STALL: std::time::Duration = std::time::Duration::from_secs(60);

/// A JSON list streamed from the store: each item is its stored text (a JSON
/// list serves objects exactly as stored), copied into 64 KiB chunks that a
/// bounded channel hands to the response as the client takes them. Neither
/// the page's objects nor its body are ever held whole; filters parse one
/// object at a time. Errors before the first byte answer as usual; a later
/// one (the store failing mid-scan) cuts the response short.
async fn json_list(
    state: &ServerState,
    rt: &'static ResourceType,
    sel: Selector,
    filter: Filter,
    params: ListParams,
) -> Result<Response, ApiError> {
    // Small items share a chunk: one per item would be one TLS record and
    // one body poll per pod in a 50,000-pod list.
    const CHUNK: usize = 64 << 10;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Bytes, ApiError>>(4);
    let store = state.store().clone();
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let send = |chunk: Result<Bytes, ApiError>| -> Result<(), ApiError> {
            match runtime.block_on(tokio::time::timeout(LIST_STALL, tx.send(chunk))) {
                Ok(Ok(())) => Ok(()),
                _ => Err(ApiError::internal("the client stopped reading the list")),
            }
        };
        let after = params.after.as_ref().map(|(_, key)| key.clone());
        let mut matches = |o: &Value| filter.matches(o);
        // The selector reads the stored text; only what is hidden from the
        // caller needs the object built. Text the selector cannot read is
        // kept, for the store to report as corrupt.
        let test = filter.selector.text_test();
        let selected = |text: &str| test.may_match(text) && test.matches(text).unwrap_or(true);
        let selected: Option<&dyn Fn(&str) -> bool> = (!filter.selector.is_empty()).then_some(&selected);
        let object: Option<&mut dyn FnMut(&Value) -> bool> = filter.hidden.is_some().then_some(&mut matches);
        let keep: Option<ringleader_store::Keep<'_>> = (!filter.is_empty()).then_some((selected, object));
        let mut buf = Vec::new();
        let mut first = true;
        let result = store.list_stream(
            &sel,
            after.as_ref(),
            params.limit,
            keep,
            |head| {
                if params.after.is_none() {
                    params.check_version(head.version)?;
                }
                let metadata = list_metadata(&params, head.version, head.next.as_ref(), head.remaining);
                let head =
                    json!({"apiVersion": rt.api_version, "kind": format!("{}List", rt.kind), "metadata": metadata});
                let mut head = head.to_string();
                // `{…}` becomes `{…,"items":[`: the head is an object serde wrote.
                head.pop();
                head.push_str(",\"items\":[");
                send(Ok(Bytes::from(head)))
            },
            |text| {
                if !first {
                    buf.push(b',');
                }
                first = false;
                buf.extend_from_slice(text.as_bytes());
                if buf.len() >= CHUNK {
                    send(Ok(Bytes::from(std::mem::take(&mut buf))))?;
                }
                Ok(())
            },
        );
        let last = result.map(|()| {
            buf.extend_from_slice(b"]}");
            Bytes::from(buf)
        });
        let _ = send(last);
    });
    let head = match rx.recv().await {
        Some(Ok(head)) => head,
        Some(Err(e)) => return Err(e),
        None => return Err(ApiError::internal("the list ended before it began")),
    };
    let rest = futures_util::stream::unfold(rx, |mut rx| async move {
        let chunk = rx.recv().await?;
        Some((chunk.map_err(|e| std::io::Error::other(e.message)), rx))
    });
    let body = Body::from_stream(futures_util::stream::once(async move { Ok(head) }).chain(rest));
    Ok(([(CONTENT_TYPE, "application/json")], body).into_response())
}

/// PUT: replaces the object, keeping its stored `status` (a kind with a
/// status subresource: always; others: when the body has none). Without a resourceVersion in the body the write is pinned to the
/// version whose status was carried over, and retried if that one moved on,
/// so a status written meanwhile is never rolled back.
async fn replace(
    state: &ServerState,
    rt: &ResourceType,
    req: &Req,
    key: ObjectKey,
    object: Value,
    part: Part,
    dry: bool,
) -> Result<Stored, ApiError> {
    let manager = server_side_apply::writer(req, rt, builtin(rt), part, "UpdateOptions")?;
    let pinned = object.pointer("/metadata/resourceVersion").is_some_and(|v| !v.is_null());
    for _ in 0..8 {
        let k = key.clone();
        let Some(existing) = state.blocking(move |s| s.get(&k)).await? else {
            return Err(StoreError::NotFound(key).into());
        };
        let mut object = object.clone();
        if part == Part::Whole && rt.has_status() {
            keep_status(&existing.object, &mut object);
        } else {
            defaulting::carry_status(Some(&existing.object), &mut object);
        }
        let mut object = managed_fields::record_update(Some(&existing.object), object, &manager);
        if !pinned {
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("resourceVersion".into(), json!(existing.resource_version.to_string()));
            }
        }
        if dry {
            let version = existing.resource_version;
            let object = dry_run(state, Op::Update(object)).await?;
            return Ok(Stored { key, resource_version: version, object });
        }
        let record = audit::entry(req.identity.as_ref(), "update", rt, Some(&existing.object), Some(&object));
        match state.blocking(move |s| audit::write(s, Op::Update(object), record)).await {
            Err(e) if e.reason == "Conflict" && !pinned => continue,
            other => return other,
        }
    }
    Err(ApiError::conflict(&ringleader_registry::status::Resource::of_key(&key), &key.name))
}

/// PATCH in any of its four formats. Every format reads the object, patches
/// it, validates the result as a create would, and writes it only if the
/// object did not change meanwhile (retrying then, unless the patch itself
/// named a resourceVersion, which is a precondition as in Kubernetes).
/// A write of the main resource of a kind with a status subresource leaves
/// `status` as stored, as kube-apiserver does: status is written through
/// `/status` (by the agents and controllers), so a client's stale copy
/// cannot roll it back nor a user set what only controllers may.
fn keep_status(current: &Value, object: &mut Value) {
    if let Some(map) = object.as_object_mut() {
        match current.get("status") {
            Some(status) => map.insert("status".into(), status.clone()),
            None => map.remove("status"),
        };
    }
}

/// `current` with `candidate`'s `status` (none if it has none) and, as a
/// precondition, its `metadata.resourceVersion` when it gives one.
fn with_status_of(current: &Value, candidate: &Value) -> Value {
    let mut out = current.clone();
    if let Some(map) = out.as_object_mut() {
        match candidate.get("status") {
            Some(status) => map.insert("status".into(), status.clone()),
            None => map.remove("status"),
        };
    }
    if let (Some(rv), Some(meta)) = (
        candidate.pointer("/metadata/resourceVersion").filter(|v| v.is_string()),
        out.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        meta.insert("resourceVersion".into(), rv.clone());
    }
    out
}

async fn patch(
    state: &ServerState,
    rt: &'static ResourceType,
    key: ObjectKey,
    req: &Req,
    part: Part,
) -> Result<Response, ApiError> {
    let accepted = if builtin(rt) { patches::BUILTIN_PATCH_TYPES } else { patches::CUSTOM_PATCH_TYPES };
    let kind = match PatchType::of(req.content_type()) {
        Some(PatchType::Strategic) if !builtin(rt) => None,
        other => other,
    };
    let Some(kind) = kind else {
        return Err(ApiError::unsupported_patch(req.content_type(), accepted));
    };
    if kind == PatchType::Apply {
        return server_side_apply::serve(state, rt, builtin(rt), key, req, part).await;
    }
    server_side_apply::check_patch_options(req, kind)?;
    let dry = req.dry_run("PatchOptions")?;
    let manager = server_side_apply::writer(req, rt, builtin(rt), part, "PatchOptions")?;
    let (body, dups) = patch_body(req, kind)?;
    let resource = ringleader_registry::status::Resource::of_key(&key);
    for _ in 0..8 {
        let k = key.clone();
        let Some(current) = state.blocking(move |s| s.get(&k)).await? else {
            return Err(StoreError::NotFound(key).into());
        };
        let mut patched = apply_patch(kind, &current.object, &body, rt, &key.name)?;
        if kind == PatchType::Json {
            validation::immutable_identity(rt, &key.name, &current.object, &patched)?;
        }
        if part == Part::Status {
            patched = with_status_of(&current.object, &patched);
        } else if rt.has_status() {
            keep_status(&current.object, &mut patched);
        }
        if part == Part::Whole && rt == NAMESPACES {
            ringleader_api::kinds::namespace::defaulted(&mut patched, Some(&current.object));
        }
        // Identity is not the patch's to change: put it back, as the store does.
        for pointer in ["/apiVersion", "/kind", "/metadata/name", "/metadata/namespace"] {
            if let (Some(slot), Some(was)) = (patched.pointer_mut(pointer), current.object.pointer(pointer)) {
                *slot = was.clone();
            }
        }
        // A resourceVersion the patch left different from the stored one is
        // a precondition that failed.
        let claimed = patched.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_string);
        let pinned = claimed.as_deref().is_some_and(|c| c != current.resource_version.to_string());
        if pinned {
            return Err(ApiError::conflict(&resource, &key.name));
        }
        if let Some(meta) = patched.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(current.resource_version.to_string()));
        }
        let unknown = admission::patched(&write(state, req, "patch", rt), &current.object, &patched, &dups).await?;
        let patched = managed_fields::record_update(Some(&current.object), patched, &manager);
        if dry {
            let out = dry_run(state, Op::Update(patched)).await?;
            return Ok(fields::warn(req.format.respond(StatusCode::OK, &out), &unknown));
        }
        let record = audit::entry(req.identity.as_ref(), "patch", rt, Some(&current.object), Some(&patched));
        match state.blocking(move |s| audit::write(s, Op::Update(patched), record)).await {
            Err(e) if e.reason == "Conflict" => continue,
            other => {
                return other.map(|stored| fields::warn(req.format.respond(StatusCode::OK, &stored.object), &unknown))
            }
        }
    }
    Err(ApiError::conflict(&resource, &key.name))
}

/// The body of a patch of `kind` (not apply) with its duplicate fields,
/// refused unless it has the patch's shape: a JSON patch a list, the others
/// an object.
fn patch_body(req: &Req, kind: PatchType) -> Result<(Value, Vec<String>), ApiError> {
    let (body, dups) =
        duplicates::from_json(&req.body).map_err(|e| ApiError::bad_field("body", format!("not valid JSON: {e}")))?;
    match (kind, &body) {
        (PatchType::Json, Value::Array(_)) | (PatchType::Merge | PatchType::Strategic, Value::Object(_)) => {}
        (PatchType::Json, _) => return Err(ApiError::bad_field("body", "a JSON patch must be a list of operations")),
        _ => return Err(ApiError::bad_field("body", "a merge patch must be a JSON object")),
    }
    Ok((body, dups))
}

/// `target` (an object `name` of `rt`) with a patch of `kind` applied, its
/// errors in kube-apiserver's words.
fn apply_patch(
    kind: PatchType,
    target: &Value,
    body: &Value,
    rt: &'static ResourceType,
    name: &str,
) -> Result<Value, ApiError> {
    // Merge and strategic results are at most the object plus the
    // patch (they copy nothing), so only a JSON patch needs a budget.
    let patched = match kind {
        PatchType::Json => patches::json_patch(target, body, objects::MAX_OBJECT_BYTES),
        PatchType::Strategic => patches::strategic_merge(target, body).map_err(patches::PatchError::Invalid),
        _ => Ok(patches::merge_patch(target, body)),
    };
    patched.map_err(|e| match e {
        patches::PatchError::TooLarge(size) => objects::too_large(rt, name, size),
        patches::PatchError::Invalid(e) => {
            let mut err = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", e.clone());
            err.causes.push(Cause { field: "patch".into(), message: e, reason: "FieldValueInvalid".into() });
            err.with_object(rt.kind, name)
        }
    })
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

async fn delete(
    state: &ServerState,
    rt: &'static ResourceType,
    key: ObjectKey,
    req: &Req,
) -> Result<Response, ApiError> {
    // DeleteOptions in the body (kubectl sends them there), read once.
    let options = decode::options(req);
    let dry = req.dry_run("DeleteOptions")? || options.get("dryRun") == Some(&json!(["All"]));
    if rt == NAMESPACES {
        return delete_namespace(state, key, req, dry).await;
    }
    if crate::visibility::concerned(rt) {
        let k = key.clone();
        if let Some(current) = state.blocking(move |s| s.get(&k)).await? {
            crate::visibility::check(state, req.identity.as_ref(), "delete", rt, &current.object).await?;
        }
    }
    // A guarded object is deleted only at the version found emptied.
    let mut guard_version = None;
    if admission::delete_guard::guarded(rt) {
        let k = key.clone();
        let Some(current) = state.blocking(move |s| s.get(&k)).await? else {
            return Err(StoreError::NotFound(key).into());
        };
        admission::delete_guard::check(state, rt, &current.object).await?;
        guard_version = Some(current.resource_version);
    }
    if dry {
        let out = dry_run(state, Op::Delete { key, expected: None }).await?;
        return Ok(req.format.respond(StatusCode::OK, &out));
    }
    let record = audit::entry(
        req.identity.as_ref(),
        "delete",
        rt,
        Some(&json!({"metadata": {
        "namespace": key.namespace, "name": key.name}})),
        None,
    );
    let mut grace = req.u64_param("gracePeriodSeconds")?;
    if grace.is_none() {
        // kubectl sends DeleteOptions in the body.
        grace = options.get("gracePeriodSeconds").and_then(Value::as_u64);
    }
    let precondition = |p: &str| options.pointer(p).and_then(Value::as_str).filter(|v| !v.is_empty());
    let (want_uid, want_version) = (precondition("/preconditions/uid"), precondition("/preconditions/resourceVersion"));
    if rt != PODS && want_uid.is_none() && want_version.is_none() {
        let op = Op::Delete { key, expected: guard_version };
        let stored = state.blocking(move |s| audit::write(s, op, record)).await?;
        return Ok(req.format.respond(StatusCode::OK, &stored.object));
    }
    let k = key.clone();
    let Some(pod) = state.blocking(move |s| s.get(&k)).await? else {
        return Err(StoreError::NotFound(key).into());
    };
    // DeleteOptions.preconditions: the object must still be the one the
    // caller saw (an agent removing a pod never removes its successor).
    let resource = ringleader_registry::status::Resource::of_key(&key);
    if want_uid.is_some_and(|u| Some(u) != str_at(&pod.object, "/metadata/uid"))
        || want_version.is_some_and(|v| v != pod.resource_version.to_string())
    {
        return Err(ApiError::conflict(&resource, &key.name));
    }
    let marked = str_at(&pod.object, "/metadata/deletionTimestamp").is_some();
    if rt != PODS || (grace == Some(0) && marked) {
        // A pod already marked, deleted again with zero grace: its agent has
        // stopped it and removes it now (a kubelet's final delete).
        let version = pod.resource_version;
        if admission::delete_guard::guarded(rt) {
            admission::delete_guard::check(state, rt, &pod.object).await?;
        }
        let op = Op::Delete { key, expected: Some(version) };
        let stored = state.blocking(move |s| audit::write(s, op, record)).await?;
        return Ok(req.format.respond(StatusCode::OK, &stored.object));
    }
    let node = str_at(&pod.object, "/spec/nodeName").filter(|n| !n.is_empty()).map(str::to_string);
    let started =
        str_at(&pod.object, &format!("/metadata/annotations/{}", START_ANNOTATION.replace('/', "~1"))) == Some("true");
    let node_ready = match (&node, started) {
        (Some(node), true) => {
            let nk = ObjectKey::new(resources::NODES.api_version, resources::NODES.kind, "", node);
            state.blocking(move |s| s.get(&nk)).await?.is_some_and(|n| {
                n.object.pointer("/spec/stopped").and_then(Value::as_bool) != Some(true)
                    && n.object.pointer("/status/ready").and_then(Value::as_bool) != Some(false)
            })
        }
        _ => false,
    };
    if !node_ready {
        // Nothing runs it (never started, or its machine is gone): remove it now.
        let version = pod.resource_version;
        let stored = state.blocking(move |s| s.delete(&key, Some(version))).await?;
        return Ok(req.format.respond(StatusCode::OK, &stored.object));
    }
    // The agent serving the node stops the process and removes the pod.
    let current_grace = pod.object.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_u64);
    let marked_at = str_at(&pod.object, "/metadata/deletionTimestamp").map(str::to_string);
    let grace = match (grace, current_grace) {
        (Some(g), Some(c)) => g.min(c),
        (Some(g), None) => g,
        (None, Some(c)) => c,
        (None, None) => pod
            .object
            .pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_GRACE_SECONDS),
    };
    let patch = json!({"metadata": {
        "deletionTimestamp": marked_at.unwrap_or_else(now_rfc3339),
        "deletionGracePeriodSeconds": grace,
    }});
    let stored = state.blocking(move |s| s.patch(&key, &patch, None)).await?;
    Ok(req.format.respond(StatusCode::OK, &stored.object))
}

/// DELETE of a namespace: as on Kubernetes it is marked (`deletionTimestamp`,
/// phase Terminating) and answered at once; the manager then deletes what
/// it holds and, once it is empty, the namespace
/// (`ringleader_manager::namespaces`). The built-in ones are refused.
async fn delete_namespace(state: &ServerState, key: ObjectKey, req: &Req, dry: bool) -> Result<Response, ApiError> {
    use ringleader_api::kinds::namespace;
    if let Some(refused) = admission::namespaces::undeletable(&key.name) {
        return Err(refused);
    }
    let k = key.clone();
    let Some(current) = state.blocking(move |s| s.get(&k)).await? else {
        return Err(StoreError::NotFound(key).into());
    };
    if namespace::terminating(&current.object) {
        return Ok(req.format.respond(StatusCode::OK, &current.object));
    }
    let patch = namespace::terminate_patch(&now_rfc3339());
    if dry {
        let marked = patches::merge_patch(&current.object, &patch);
        return Ok(req.format.respond(StatusCode::OK, &marked));
    }
    let record = audit::entry(req.identity.as_ref(), "delete", NAMESPACES, Some(&current.object), None);
    let version = current.resource_version;
    let stored =
        state.blocking(move |s| audit::write(s, Op::Patch { key, patch, expected: Some(version) }, record)).await?;
    Ok(req.format.respond(StatusCode::OK, &stored.object))
}

/// `POST …/pods/{name}/eviction`: the pod deleted gracefully with the
/// Eviction's `deleteOptions` ([`crate::eviction`]), as a `DELETE` of it.
async fn evict(state: &ServerState, req: &Req, ns: &str, name: &str) -> Result<Response, ApiError> {
    let (eviction, _) = decode::body(req)?;
    let options = crate::eviction::delete_options(&eviction, name)?;
    let key = ObjectKey::new(PODS.api_version, PODS.kind, ns, name);
    let (k, namespace) = (key.clone(), ns.to_string());
    let (pod, budgets, pods) = state
        .blocking(move |s| {
            let budgets = s.list(&store_selector(resources::POD_DISRUPTION_BUDGETS, Some(&namespace)))?.0;
            if budgets.is_empty() {
                return Ok((s.get(&k)?, Vec::new(), Vec::new()));
            }
            let pods = s.list(&store_selector(PODS, Some(&namespace)))?.0;
            Ok((s.get(&k)?, budgets, pods))
        })
        .await?;
    let Some(pod) = pod else {
        return Err(StoreError::NotFound(key).into());
    };
    let objects = |l: Vec<Stored>| l.into_iter().map(|s| s.object).collect::<Vec<_>>();
    if let Some(refused) = crate::eviction::budget_refusal(&pod.object, &objects(budgets), &objects(pods)) {
        return Err(refused);
    }
    let as_delete = Req {
        method: Method::DELETE,
        path: PODS.object_path(ns, name),
        query: req.query.clone(),
        headers: HeaderMap::new(),
        body: Bytes::from(options.to_string()),
        format: req.format,
        identity: req.identity.clone(),
    };
    delete(state, PODS, key, &as_delete).await?;
    let (code, status) = crate::eviction::success();
    Ok((code, axum::Json(status)).into_response())
}
