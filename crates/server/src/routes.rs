//! Request routing and the object verbs. Paths are parsed by hand rather than
//! by the router's pattern table: `/apis/{group}/{version}/{plural}/{name}`
//! and `/apis/{group}/{version}/namespaces/{ns}/{plural}` overlap, and one
//! parser gives every unknown path the same `NotFound` Status.

use crate::paging::{encode_continue, ListParams};
use crate::patch::{self as patches, PatchType};
use crate::{
    admission, apply, audit, auth, delete_guard, discovery, duplicates, fields, logs, node_view, openapi, protect,
    watch, yaml_budget, ServerState,
};
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::StreamExt;
use ringleader_api::time::now_rfc3339;
use ringleader_api::{check_documents, Document};
use ringleader_registry::resources::{self, ResourceType, PODS};
use ringleader_registry::selector::ObjectSelector;
use ringleader_registry::status::{ApiError, Cause};
use ringleader_store::{ObjectKey, Op, Selector, StoreError, Stored};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// Bodies above this are refused (a large multi-document apply fits).
const MAX_BODY: usize = 64 << 20;

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

/// What a path addresses.
#[derive(Debug)]
enum Target {
    Collection { rt: &'static ResourceType, ns: Option<String> },
    Object { rt: &'static ResourceType, ns: String, name: String },
    Log { ns: String, name: String },
    BulkApply,
}

fn parse_path(path: &str) -> Result<Target, ApiError> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let no_route = || ApiError::no_route(path);
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(no_route()),
    };
    if (group, version, rest) == ("ringleader.io", "v1alpha1", &["apply"][..]) {
        return Ok(Target::BulkApply);
    }
    let lookup = |plural: &str| resources::by_path(group, version, plural).ok_or_else(no_route);
    let valid = |s: &str| !s.is_empty();
    match rest {
        ["namespaces", ns, "pods", name, "log"] if group.is_empty() && valid(ns) && valid(name) => {
            Ok(Target::Log { ns: ns.to_string(), name: name.to_string() })
        }
        ["namespaces", ns, plural] if valid(ns) => {
            let rt = lookup(plural)?;
            if !rt.namespaced {
                return Err(no_route());
            }
            Ok(Target::Collection { rt, ns: Some(ns.to_string()) })
        }
        ["namespaces", ns, plural, name] if valid(ns) && valid(name) => {
            let rt = lookup(plural)?;
            if !rt.namespaced {
                return Err(no_route());
            }
            Ok(Target::Object { rt, ns: ns.to_string(), name: name.to_string() })
        }
        [plural] => Ok(Target::Collection { rt: lookup(plural)?, ns: None }),
        [plural, name] if valid(name) => {
            let rt = lookup(plural)?;
            if rt.namespaced {
                return Err(no_route());
            }
            Ok(Target::Object { rt, ns: String::new(), name: name.to_string() })
        }
        _ => Err(no_route()),
    }
}

/// Everything under `/api` and `/apis`.
async fn api(State(state): State<ServerState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query: HashMap<String, String> =
        axum::extract::Query::<HashMap<String, String>>::try_from_uri(&parts.uri).map(|q| q.0).unwrap_or_default();
    let format = OutputFormat::of(&parts.headers, &query);
    // A body trickled in slower than this holds a connection and its
    // buffer; the head already had its own timeout.
    let within = state.conn_limits().body_timeout;
    let bytes = match tokio::time::timeout(within, read_body(body, MAX_BODY)).await {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return e.into_response(),
        Err(_) => return ApiError::body_timeout(within).into_response(),
    };
    let identity = parts.extensions.get::<ringleader_auth::Identity>().cloned();
    let req = Req { method: parts.method, path, query, headers: parts.headers, body: bytes, format, identity };
    let (method, path) = (req.method.clone(), req.path.clone());
    match handle(&state, req).await {
        Ok(response) => response,
        Err(e) => {
            if e.code.is_server_error() {
                tracing::warn!(%method, %path, "{}", e.message);
            }
            e.into_response()
        }
    }
}

/// The whole body, or 413 once it passes `limit` bytes (a declared
/// Content-Length over the limit is refused before reading).
async fn read_body(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    use http_body_util::BodyExt;
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError::too_large(limit)),
        Err(e) => Err(ApiError::bad_request(format!("cannot read the request body: {e}"))),
    }
}

struct Req {
    method: Method,
    path: String,
    query: HashMap<String, String>,
    headers: HeaderMap,
    body: Bytes,
    format: OutputFormat,
    /// Who asks (set by the auth middleware).
    identity: Option<ringleader_auth::Identity>,
}

impl Req {
    fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1" | ""))
    }

    fn content_type(&self) -> &str {
        self.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// `dryRun=All`: true; absent: false; any other value is refused with
    /// the options kind of the verb named, as kube-apiserver does.
    fn dry_run(&self, options: &str) -> Result<bool, ApiError> {
        match self.param("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => {
                let message = format!("Unsupported value: []string{{{other:?}}}: supported values: \"All\"");
                let mut e = ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Invalid",
                    format!("{options}.meta.k8s.io \"\" is invalid: dryRun: {message}"),
                );
                e.kind = Some(format!("{options}.meta.k8s.io"));
                e.name = Some(String::new());
                e.causes.push(Cause { field: "dryRun".into(), message, reason: "FieldValueNotSupported".into() });
                Err(e)
            }
        }
    }

    fn u64_param(&self, name: &str) -> Result<Option<u64>, ApiError> {
        match self.param(name) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad_field(name, format!("{v:?} is not a non-negative integer"))),
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
            apply::bulk(state, req.identity.as_ref(), &req.body, req.param("source"), namespace).await
        }
        Target::Log { ns, name } if m == Method::GET => {
            let options = logs::LogOptions::parse(&req.query, ringleader_api::time::now())?;
            logs::serve(state, &ns, &name, options).await
        }
        Target::Collection { rt, ns } if m == Method::GET => {
            let selector = ObjectSelector::parse(req.param("labelSelector"), req.param("fieldSelector"))
                .map_err(ApiError::bad_request)?;
            if req.flag("watch") {
                let options = watch::Options::parse(&req.query)?;
                return watch::serve_as(state, rt, ns, selector, options, watch::View::of(req.format)).await;
            }
            let params = ListParams::parse(&req.query, rt.api_version, rt.kind)?;
            list(state, rt, ns, &selector, params, req.format).await
        }
        Target::Collection { rt, ns } if m == Method::POST => {
            let dry = req.dry_run("CreateOptions")?;
            let (object, dups) = parse_body(&req)?;
            let object = prepare(rt, ns.as_deref(), None, object)?;
            let unknown = fields::check(rt, &object, &dups, req.param("fieldValidation"))?;
            validate(rt, &object)?;
            admission::pod_devices(state, rt, &object, None).await?;
            protect::admit(state, req.identity.as_ref(), "create", rt, &object, protect::Before::Absent).await?;
            if dry {
                let out = dry_run(state, Op::Create(object)).await?;
                return Ok(fields::warn(req.format.respond(StatusCode::CREATED, &out), &unknown));
            }
            let record = audit::entry(req.identity.as_ref(), "create", rt, None, Some(&object));
            let stored = state.blocking(move |s| audit::write(s, Op::Create(object), record)).await?;
            Ok(fields::warn(req.format.respond(StatusCode::CREATED, &stored.object), &unknown))
        }
        Target::Object { rt, ns, name } => {
            let key = ObjectKey::new(rt.api_version, rt.kind, &ns, &name);
            match m {
                Method::GET => {
                    let k = key.clone();
                    match state.blocking(move |s| s.get(&k)).await? {
                        Some(stored) => Ok(req.format.respond(StatusCode::OK, &stored.object)),
                        None => Err(StoreError::NotFound(key).into()),
                    }
                }
                Method::PUT => {
                    let dry = req.dry_run("UpdateOptions")?;
                    let (object, dups) = parse_body(&req)?;
                    let object = prepare(rt, Some(&ns), Some(&name), object)?;
                    let unknown = fields::check(rt, &object, &dups, req.param("fieldValidation"))?;
                    validate(rt, &object)?;
                    admission::pod_devices(state, rt, &object, None).await?;
                    protect::admit(state, req.identity.as_ref(), "update", rt, &object, protect::Before::Lookup)
                        .await?;
                    let stored = replace(state, rt, req.identity.as_ref(), key, object, dry).await?;
                    Ok(fields::warn(req.format.respond(StatusCode::OK, &stored.object), &unknown))
                }
                Method::PATCH => patch(state, rt, key, &req).await,
                Method::DELETE => delete(state, rt, key, &req).await,
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
    let name = match req.path.trim_matches('/').split('/').collect::<Vec<_>>().as_slice() {
        ["api", "v1", "nodes"] => None,
        ["api", "v1", "nodes", name] if !name.is_empty() => Some(name.to_string()),
        _ => return None,
    };
    let name = name.as_deref();
    Some(match (&req.method, name) {
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

/// Store selector of a resource type, in one namespace or all.
pub(crate) fn store_selector(rt: &ResourceType, ns: Option<&str>) -> Selector {
    let sel = Selector::kind(rt.api_version, rt.kind);
    match ns {
        Some(ns) if rt.namespaced => sel.in_namespace(ns),
        _ => sel,
    }
}

/// Runs one write as a dry run and answers the object it would leave. A
/// create's answer has no resourceVersion (none was taken); other writes
/// keep the version the object has now, since nothing changed.
async fn dry_run(state: &ServerState, op: Op) -> Result<Value, ApiError> {
    let current = match &op {
        Op::Create(_) => None,
        Op::Update(o) | Op::Apply(o) => ObjectKey::of(o).ok(),
        Op::Patch { key, .. } | Op::Delete { key, .. } => Some(key.clone()),
    };
    let (mut out, version) = state
        .blocking(move |s| {
            let version = match &current {
                Some(key) => s.get(key)?.map(|c| c.resource_version),
                None => None,
            };
            Ok((s.dry_run(vec![op])?, version))
        })
        .await?;
    let mut object = out.pop().map(|s| s.object).unwrap_or(Value::Null);
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        match version {
            Some(v) => meta.insert("resourceVersion".into(), json!(v.to_string())),
            None => meta.remove("resourceVersion"),
        };
    }
    Ok(object)
}

/// A list, one page at a time when `limit` is set: `metadata.continue`
/// resumes after the page's last key; label and field selectors filter
/// within the store's scan, so a page holds up to `limit` matches.
async fn list(
    state: &ServerState,
    rt: &'static ResourceType,
    ns: Option<String>,
    selector: &ObjectSelector,
    params: ListParams,
    format: OutputFormat,
) -> Result<Response, ApiError> {
    let sel = store_selector(rt, ns.as_deref());
    let filter = selector.clone();
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
    filter: ObjectSelector,
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
        let keep: Option<&mut dyn FnMut(&Value) -> bool> = (!filter.is_empty()).then_some(&mut matches);
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

/// Whether a body is JSON or YAML.
fn is_yaml(content_type: &str, body: &[u8]) -> bool {
    let ct = content_type.to_ascii_lowercase();
    if ct.contains("yaml") {
        return true;
    }
    if ct.contains("json") {
        return false;
    }
    body.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|b| *b != b'{' && *b != b'[')
}

/// Deepest `[`/`{` nesting a YAML body may have.
const MAX_FLOW_DEPTH: usize = 1000;

/// Refuses YAML nested deeper than [`MAX_FLOW_DEPTH`] before parsing it: the
/// YAML scanner's time grows with the square of the depth, so a small body of
/// brackets would otherwise hold a worker for minutes. Brackets inside
/// strings count too, which only errs on the side of refusing.
pub(crate) fn check_yaml_depth(text: &str) -> Result<(), ApiError> {
    let mut depth = 0usize;
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_FLOW_DEPTH {
                    return Err(ApiError::bad_field(
                        "body",
                        format!("nested deeper than {MAX_FLOW_DEPTH} levels of [ and {{"),
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Parses a one-object body, JSON or YAML by Content-Type (sniffed when
/// absent), with the paths of the keys it has twice. A YAML body's alias
/// expansion is bounded ([`yaml_budget`]) before anything is built.
pub(crate) fn parse_value(content_type: &str, body: &[u8]) -> Result<(Value, Vec<String>), ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_field("body", "required: send the object as JSON or YAML"));
    }
    // Kubernetes' protobuf encoding (kubectl's typed clients send it for core
    // kinds, e.g. `kubectl create configmap`) is not decoded here: say so
    // instead of misreading it as YAML.
    if content_type.to_ascii_lowercase().contains("protobuf") {
        return Err(ApiError::unsupported_patch(content_type, &["application/json", "application/yaml"]));
    }
    let (value, dups) = if is_yaml(content_type, body) {
        let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_field("body", format!("not UTF-8: {e}")))?;
        check_yaml_depth(text)?;
        yaml_budget::check(text)?;
        duplicates::from_yaml(text).map_err(|e| ApiError::bad_field("body", format!("not valid YAML: {e}")))?
    } else {
        duplicates::from_json(body).map_err(|e| ApiError::bad_field("body", format!("not valid JSON: {e}")))?
    };
    if !value.is_object() {
        return Err(ApiError::bad_field("body", "must be an object with apiVersion, kind and metadata"));
    }
    Ok((value, dups))
}

fn parse_body(req: &Req) -> Result<(Value, Vec<String>), ApiError> {
    parse_value(req.content_type(), &req.body)
}

/// Makes an object agree with the path it was sent to: `apiVersion`/`kind`
/// default to the path's and must match; the path's namespace and name win
/// over absent ones and must equal present ones; a namespaced object without
/// a namespace gets `default`; a cluster-scoped one loses its namespace.
pub(crate) fn prepare(
    rt: &ResourceType,
    path_ns: Option<&str>,
    path_name: Option<&str>,
    mut object: Value,
) -> Result<Value, ApiError> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_field("body", "must be an object"));
    };
    for (field, expected) in [("apiVersion", rt.api_version), ("kind", rt.kind)] {
        match map.get(field) {
            None | Some(Value::Null) => {
                map.insert(field.to_string(), json!(expected));
            }
            Some(Value::String(s)) if s == expected => {}
            Some(other) => {
                return Err(ApiError::bad_field(
                    field,
                    format!("{other} does not match the resource of the path ({} {})", rt.api_version, rt.kind),
                ))
            }
        }
    }
    let metadata = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = metadata.as_object_mut() else {
        return Err(ApiError::bad_field("metadata", "must be an object"));
    };
    let text_at = |meta: &Map<String, Value>, f: &str| -> Result<Option<String>, ApiError> {
        match meta.get(f) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ApiError::bad_field(&format!("metadata.{f}"), format!("{other} is not a string"))),
        }
    };
    let body_ns = text_at(meta, "namespace")?;
    if rt.namespaced {
        let ns = match (path_ns, body_ns) {
            (Some(p), Some(b)) if p != b => {
                return Err(ApiError::bad_field(
                    "metadata.namespace",
                    format!("{b:?} does not match the namespace of the path ({p:?})"),
                ))
            }
            (Some(p), _) => p.to_string(),
            (None, Some(b)) => b,
            (None, None) => "default".to_string(),
        };
        meta.insert("namespace".into(), json!(ns));
    } else {
        meta.remove("namespace");
    }
    let body_name = text_at(meta, "name")?;
    match (path_name, body_name) {
        (Some(p), Some(b)) if p != b => {
            return Err(ApiError::bad_field(
                "metadata.name",
                format!("{b:?} does not match the name of the path ({p:?})"),
            ))
        }
        (Some(p), None) => {
            meta.insert("name".into(), json!(p));
        }
        (_, Some(_)) => {}
        (None, None) => {
            let mut e = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "metadata.name: required");
            e.causes.push(ringleader_registry::status::Cause {
                field: "metadata.name".into(),
                message: "required".into(),
                reason: "FieldValueRequired".into(),
            });
            return Err(e);
        }
    }
    if rt == PODS {
        // kube-apiserver defaults it, and `kubectl debug` reads it unchecked.
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("securityContext").or_insert_with(|| json!({}));
        }
    }
    Ok(object)
}

/// Every object passes the [`admission`] checks, and kinds `ringleader
/// validate` knows its checks too, before they are stored: 413 for an
/// object over the size limit, else 422 naming each field, value and rule.
pub(crate) fn validate(rt: &ResourceType, object: &Value) -> Result<(), ApiError> {
    admission::check_size(rt, object)?;
    refuse_errors(rt, object, object_errors(rt, object))
}

/// [`validate`] for the result of a patch: only errors the stored object
/// did not have already count (see [`admission::new_errors`]).
fn validate_patch(rt: &ResourceType, before: &Value, after: &Value) -> Result<(), ApiError> {
    admission::check_size(rt, after)?;
    let errors = admission::new_errors(&object_errors(rt, before), object_errors(rt, after));
    refuse_errors(rt, after, errors)
}

fn object_errors(rt: &ResourceType, object: &Value) -> Vec<ringleader_api::FieldError> {
    let ours = admission::errors(rt, object);
    let known = ringleader_api::kinds::SUPPORTED.iter().any(|(a, k)| *a == rt.api_version && *k == rt.kind);
    if !known {
        return ours;
    }
    let doc = Document { source: "body".into(), index: 0, value: object.clone() };
    let typed = check_documents(std::slice::from_ref(&doc)).into_iter().flat_map(|r| r.errors).collect();
    admission::merge(ours, typed)
}

fn refuse_errors(rt: &ResourceType, object: &Value, errors: Vec<ringleader_api::FieldError>) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    Err(ApiError::invalid(&admission::qualified_kind(rt), name, &errors))
}

/// Keeps the stored `status` when a replacing object carries none: users
/// re-apply specs, and must not wipe what the manager wrote.
pub(crate) fn carry_status(existing: Option<&Value>, object: &mut Value) {
    let has_status = object.get("status").is_some_and(|s| !s.is_null());
    if has_status {
        return;
    }
    if let (Some(status), Some(map)) = (existing.and_then(|e| e.get("status")), object.as_object_mut()) {
        map.insert("status".into(), status.clone());
    }
}

/// PUT: replaces the object, keeping its stored `status` when the body has
/// none. Without a resourceVersion in the body the write is pinned to the
/// version whose status was carried over, and retried if that one moved on,
/// so a status written meanwhile is never rolled back.
async fn replace(
    state: &ServerState,
    rt: &ResourceType,
    identity: Option<&ringleader_auth::Identity>,
    key: ObjectKey,
    object: Value,
    dry: bool,
) -> Result<Stored, ApiError> {
    let pinned = object.pointer("/metadata/resourceVersion").is_some_and(|v| !v.is_null());
    for _ in 0..8 {
        let k = key.clone();
        let Some(existing) = state.blocking(move |s| s.get(&k)).await? else {
            return Err(StoreError::NotFound(key).into());
        };
        let mut object = object.clone();
        carry_status(Some(&existing.object), &mut object);
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
        let record = audit::entry(identity, "update", rt, Some(&existing.object), Some(&object));
        match state.blocking(move |s| audit::write(s, Op::Update(object), record)).await {
            Err(e) if e.reason == "Conflict" && !pinned => continue,
            other => return other,
        }
    }
    Err(ApiError::conflict(&ringleader_registry::status::Resource::of_key(&key), &key.name))
}

/// Whether a resource is one of Kubernetes' own kinds, which take strategic
/// merge patches; custom resources refuse them as kube-apiserver does.
fn builtin(rt: &ResourceType) -> bool {
    matches!(rt.group, "" | "apps" | "batch" | "scheduling.k8s.io")
}

/// PATCH in any of its four formats. Every format reads the object, patches
/// it, validates the result as a create would, and writes it only if the
/// object did not change meanwhile (retrying then, unless the patch itself
/// named a resourceVersion, which is a precondition as in Kubernetes).
async fn patch(
    state: &ServerState,
    rt: &'static ResourceType,
    key: ObjectKey,
    req: &Req,
) -> Result<Response, ApiError> {
    let dry = req.dry_run("PatchOptions")?;
    let accepted = if builtin(rt) { patches::BUILTIN_PATCH_TYPES } else { patches::CUSTOM_PATCH_TYPES };
    let kind = match PatchType::of(req.content_type()) {
        Some(PatchType::Strategic) if !builtin(rt) => None,
        other => other,
    };
    let Some(kind) = kind else {
        return Err(ApiError::unsupported_patch(req.content_type(), accepted));
    };
    if kind == PatchType::Apply {
        let (object, dups) = parse_body(req)?;
        let mut object = prepare(rt, Some(key.namespace.as_str()).filter(|_| rt.namespaced), Some(&key.name), object)?;
        let unknown = fields::check(rt, &object, &dups, req.param("fieldValidation"))?;
        validate(rt, &object)?;
        admission::pod_devices(state, rt, &object, None).await?;
        let k = key.clone();
        let existing = state.blocking(move |s| s.get(&k)).await?;
        let before = protect::Before::Known(existing.as_ref().map(|e| &e.object));
        protect::admit(state, req.identity.as_ref(), "patch", rt, &object, before).await?;
        carry_status(existing.as_ref().map(|e| &e.object), &mut object);
        let code = if existing.is_some() { StatusCode::OK } else { StatusCode::CREATED };
        if dry {
            return Ok(fields::warn(req.format.respond(code, &dry_run(state, Op::Apply(object)).await?), &unknown));
        }
        let record =
            audit::entry(req.identity.as_ref(), "patch", rt, existing.as_ref().map(|e| &e.object), Some(&object));
        let stored = state.blocking(move |s| audit::write(s, Op::Apply(object), record)).await?;
        return Ok(fields::warn(req.format.respond(code, &stored.object), &unknown));
    }
    let (body, dups) =
        duplicates::from_json(&req.body).map_err(|e| ApiError::bad_field("body", format!("not valid JSON: {e}")))?;
    match (kind, &body) {
        (PatchType::Json, Value::Array(_)) | (PatchType::Merge | PatchType::Strategic, Value::Object(_)) => {}
        (PatchType::Json, _) => return Err(ApiError::bad_field("body", "a JSON patch must be a list of operations")),
        _ => return Err(ApiError::bad_field("body", "a merge patch must be a JSON object")),
    }
    let resource = ringleader_registry::status::Resource::of_key(&key);
    for _ in 0..8 {
        let k = key.clone();
        let Some(current) = state.blocking(move |s| s.get(&k)).await? else {
            return Err(StoreError::NotFound(key).into());
        };
        // Merge and strategic results are at most the object plus the
        // patch (they copy nothing), so only a JSON patch needs a budget.
        let patched = match kind {
            PatchType::Json => patches::json_patch(&current.object, &body, admission::MAX_OBJECT_BYTES),
            PatchType::Strategic => {
                patches::strategic_merge(&current.object, &body).map_err(patches::PatchError::Invalid)
            }
            _ => Ok(patches::merge_patch(&current.object, &body)),
        };
        let mut patched = patched.map_err(|e| match e {
            patches::PatchError::TooLarge(size) => admission::too_large(rt, &key.name, size),
            patches::PatchError::Invalid(e) => {
                let mut err = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", e.clone());
                err.causes.push(Cause { field: "patch".into(), message: e, reason: "FieldValueInvalid".into() });
                err.with_object(rt.kind, &key.name)
            }
        })?;
        if kind == PatchType::Json {
            immutable_identity(rt, &key.name, &current.object, &patched)?;
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
        let unknown = fields::check_patch(rt, &current.object, &patched, &dups, req.param("fieldValidation"))?;
        validate_patch(rt, &current.object, &patched)?;
        admission::pod_devices(state, rt, &patched, Some(&current.object)).await?;
        let before = protect::Before::Known(Some(&current.object));
        protect::admit(state, req.identity.as_ref(), "patch", rt, &patched, before).await?;
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

/// 422 when a JSON patch changed (or removed) a field that names the
/// object: kube-apiserver refuses these rather than ignoring them.
fn immutable_identity(rt: &ResourceType, name: &str, before: &Value, after: &Value) -> Result<(), ApiError> {
    const IDENTITY: [(&str, &str); 5] = [
        ("/apiVersion", "apiVersion"),
        ("/kind", "kind"),
        ("/metadata/name", "metadata.name"),
        ("/metadata/namespace", "metadata.namespace"),
        ("/metadata/uid", "metadata.uid"),
    ];
    let errors: Vec<ringleader_api::FieldError> = IDENTITY
        .iter()
        .filter(|(pointer, _)| before.pointer(pointer) != after.pointer(pointer))
        .map(|(pointer, field)| {
            let value = after.pointer(pointer).map_or_else(|| "null".to_string(), Value::to_string);
            ringleader_api::FieldError::new(*field, value, "field is immutable")
        })
        .collect();
    refuse_errors(rt, &json!({"metadata": {"name": name}}), errors)
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
    let dry = req.dry_run("DeleteOptions")?
        || serde_json::from_slice::<Value>(&req.body).ok().and_then(|o| o.get("dryRun").cloned())
            == Some(json!(["All"]));
    // A guarded object is deleted only at the version found emptied.
    let mut guard_version = None;
    if delete_guard::guarded(rt) {
        let k = key.clone();
        let Some(current) = state.blocking(move |s| s.get(&k)).await? else {
            return Err(StoreError::NotFound(key).into());
        };
        if let Some(refused) = delete_guard::refusal(rt, &current.object) {
            return Err(refused);
        }
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
    let options = serde_json::from_slice::<Value>(&req.body).unwrap_or(Value::Null);
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
        if let Some(refused) =
            Some(&pod.object).filter(|_| delete_guard::guarded(rt)).and_then(|o| delete_guard::refusal(rt, o))
        {
            return Err(refused);
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

/// JSON, or YAML when asked for with `?output=yaml` or `Accept: application/yaml`,
/// or a `meta.k8s.io` Table when `Accept` asks `as=Table` (kubectl's `get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputFormat {
    Json,
    Yaml,
    /// `include` is `None` when `?includeObject=` names no known value.
    Table {
        version: &'static str,
        include: Option<crate::table::IncludeObject>,
    },
}

impl OutputFormat {
    fn of(headers: &HeaderMap, query: &HashMap<String, String>) -> OutputFormat {
        let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
        if let Some(version) = crate::table::requested_version(accept) {
            let include = crate::table::IncludeObject::parse(query.get("includeObject").map(String::as_str)).ok();
            return OutputFormat::Table { version, include };
        }
        let yaml = query.get("output").is_some_and(|o| o.eq_ignore_ascii_case("yaml"))
            || (accept.contains("yaml") && !accept.contains("json"));
        if yaml {
            OutputFormat::Yaml
        } else {
            OutputFormat::Json
        }
    }

    /// The body of `value` in this format, ready to send.
    pub(crate) fn encode(self, value: Value) -> Result<Encoded, ApiError> {
        let json = |v: &Value| {
            serde_json::to_vec(v)
                .map(|body| Encoded { content_type: "application/json", body })
                .map_err(|e| ApiError::internal(format!("cannot render JSON: {e}")))
        };
        match self {
            OutputFormat::Json => json(&value),
            OutputFormat::Table { version, include } => match include {
                Some(include) => json(&crate::table::render(value, include, version, ringleader_api::time::now())),
                None => Err(ApiError::bad_field("includeObject", "must be one of None, Metadata, Object")),
            },
            OutputFormat::Yaml => serde_yaml_ng::to_string(&value)
                .map(|text| Encoded { content_type: "application/yaml", body: text.into_bytes() })
                .map_err(|e| ApiError::internal(format!("cannot render YAML: {e}"))),
        }
    }

    pub(crate) fn respond(self, code: StatusCode, value: &Value) -> Response {
        match self {
            OutputFormat::Json => (code, axum::Json(value)).into_response(),
            OutputFormat::Table { version, include } => match include {
                Some(include) => {
                    let now = ringleader_api::time::now();
                    (code, axum::Json(crate::table::render(value.clone(), include, version, now))).into_response()
                }
                None => ApiError::bad_field("includeObject", "must be one of None, Metadata, Object").into_response(),
            },
            OutputFormat::Yaml => match serde_yaml_ng::to_string(value) {
                Ok(text) => (code, [(CONTENT_TYPE, "application/yaml")], text).into_response(),
                Err(e) => ApiError::internal(format!("cannot render YAML: {e}")).into_response(),
            },
        }
    }
}

/// A response body already encoded (see [`OutputFormat::encode`]).
pub(crate) struct Encoded {
    content_type: &'static str,
    body: Vec<u8>,
}

impl Encoded {
    fn into_response(self, code: StatusCode) -> Response {
        (code, [(CONTENT_TYPE, self.content_type)], self.body).into_response()
    }
}

/// A body for a streamed response.
pub(crate) fn stream_body<S>(stream: S) -> Body
where
    S: futures_util::Stream<Item = Result<Bytes, std::convert::Infallible>> + Send + 'static,
{
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse() {
        assert!(matches!(parse_path("/api/v1/namespaces/a/pods"), Ok(Target::Collection { ns: Some(_), .. })));
        assert!(matches!(parse_path("/api/v1/pods"), Ok(Target::Collection { ns: None, .. })));
        assert!(matches!(parse_path("/api/v1/namespaces/a/pods/p/log"), Ok(Target::Log { .. })));
        assert!(matches!(parse_path("/apis/ringleader.io/v1alpha1/nodes/n1"), Ok(Target::Object { .. })));
        assert!(matches!(parse_path("/apis/ringleader.io/v1alpha1/apply"), Ok(Target::BulkApply)));
        assert!(parse_path("/apis/ringleader.io/v1alpha1/namespaces/a/nodes").is_err());
        assert!(parse_path("/api/v1/pods/p").is_err());
        assert!(parse_path("/api/v1/widgets").is_err());
        assert!(parse_path("/nothing").is_err());
    }

    #[test]
    fn prepare_defaults_and_checks_namespace_and_name() {
        let pods = *PODS;
        let o = prepare(&pods, Some("a"), None, json!({"metadata": {"name": "p"}})).unwrap_or_default();
        assert_eq!(o["metadata"]["namespace"], "a");
        assert_eq!(o["kind"], "Pod");
        let e = prepare(&pods, Some("a"), None, json!({"metadata": {"name": "p", "namespace": "b"}}));
        assert!(matches!(e, Err(ref e) if e.causes[0].field == "metadata.namespace"));
        let o = prepare(&pods, None, None, json!({"metadata": {"name": "p"}})).unwrap_or_default();
        assert_eq!(o["metadata"]["namespace"], "default");
        let e = prepare(&pods, Some("a"), Some("q"), json!({"metadata": {"name": "p"}}));
        assert!(matches!(e, Err(ref e) if e.causes[0].field == "metadata.name"));
        let e = prepare(&pods, Some("a"), None, json!({"kind": "Node", "metadata": {"name": "p"}}));
        assert!(matches!(e, Err(ref e) if e.causes[0].field == "kind"));
        let o = prepare(resources::NODES, None, None, json!({"metadata": {"name": "n", "namespace": "x"}}))
            .unwrap_or_default();
        assert!(o["metadata"].get("namespace").is_none());
    }
}
