//! `/openapi/v3`: an OpenAPI 3 document generated from the resource table, so
//! it lists exactly the paths the router serves. Object schemas are open
//! (`type: object`); the kinds' rules live in validation, not in the schema.

use crate::resources::{ResourceType, RESOURCES};
use serde_json::{json, Map, Value};

fn schema_ref(rt: &ResourceType) -> Value {
    json!({"$ref": format!("#/components/schemas/{}", schema_name(rt))})
}

/// Unique per type: two kinds are called `Job`.
fn op_id(verb: &str, rt: &ResourceType) -> String {
    let group: String = rt.group.split('.').map(capitalize).collect();
    format!("{verb}{group}{}{}", capitalize(rt.version), rt.kind)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn schema_name(rt: &ResourceType) -> String {
    let group = if rt.group.is_empty() { "core" } else { rt.group };
    format!("{group}.{}.{}", rt.version, rt.kind)
}

fn ok(description: &str, schema: Value) -> Value {
    json!({"200": {"description": description, "content": {"application/json": {"schema": schema}}},
        "default": {"$ref": "#/components/responses/Status"}})
}

fn param(name: &str, location: &str, description: &str) -> Value {
    json!({"name": name, "in": location, "required": location == "path", "description": description,
        "schema": {"type": "string"}})
}

fn list_op(rt: &ResourceType, scope: &str) -> Value {
    json!({
        "operationId": format!("{}{scope}", op_id("list", rt)),
        "summary": format!("List or watch {}", rt.plural),
        "tags": [rt.api_version],
        "parameters": [
            param("labelSelector", "query", "equality-based: a=b,c!=d,e"),
            param("fieldSelector", "query", "equality on dotted paths, e.g. spec.nodeName=n1"),
            param("watch", "query", "stream ADDED/MODIFIED/DELETED events, one JSON object a line"),
            param("resourceVersion", "query", "watch from after this version (410 Expired when too old)"),
            param("timeoutSeconds", "query", "end a watch after this many seconds"),
        ],
        "responses": ok("the list, or a watch stream", json!({"type": "object"})),
    })
}

fn body() -> Value {
    json!({"required": true, "content": {
        "application/json": {"schema": {"type": "object"}},
        "application/yaml": {"schema": {"type": "object"}},
    }})
}

fn collection(rt: &ResourceType, namespaced_path: bool) -> Value {
    let scope = if rt.namespaced && !namespaced_path { "ForAllNamespaces" } else { "" };
    let mut item = Map::new();
    item.insert("get".into(), list_op(rt, scope));
    if namespaced_path || !rt.namespaced {
        item.insert(
            "post".into(),
            json!({
                "operationId": op_id("create", rt),
                "summary": format!("Create a {}", rt.kind),
                "tags": [rt.api_version],
                "requestBody": body(),
                "responses": {"201": {"description": "created", "content": {"application/json": {"schema": schema_ref(rt)}}},
                    "default": {"$ref": "#/components/responses/Status"}},
            }),
        );
    }
    if namespaced_path {
        item.insert("parameters".into(), json!([param("namespace", "path", "namespace")]));
    }
    Value::Object(item)
}

fn object(rt: &ResourceType) -> Value {
    let mut params = vec![param("name", "path", "object name")];
    if rt.namespaced {
        params.push(param("namespace", "path", "namespace"));
    }
    let op = |verb: &str, summary: String| {
        json!({"operationId": op_id(verb, rt), "summary": summary, "tags": [rt.api_version],
            "responses": ok("the object", schema_ref(rt))})
    };
    let mut put = op("replace", format!("Replace a {} (409 Conflict on a stale resourceVersion)", rt.kind));
    put["requestBody"] = body();
    let mut patch = op("patch", format!("Patch a {}: merge patch, or apply (create or replace)", rt.kind));
    patch["requestBody"] = json!({"required": true, "content": {
        "application/merge-patch+json": {"schema": {"type": "object"}},
        "application/apply-patch+yaml": {"schema": {"type": "object"}},
    }});
    let mut delete = op("delete", format!("Delete a {}", rt.kind));
    delete["parameters"] = json!([param("gracePeriodSeconds", "query", "grace period of a running pod")]);
    json!({
        "parameters": params,
        "get": op("read", format!("Read a {}", rt.kind)),
        "put": put,
        "patch": patch,
        "delete": delete,
    })
}

/// The document.
pub fn document() -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for rt in RESOURCES {
        let prefix = rt.prefix();
        if rt.namespaced {
            let coll = format!("{prefix}/namespaces/{{namespace}}/{}", rt.plural);
            paths.insert(coll.clone(), collection(rt, true));
            paths.insert(format!("{coll}/{{name}}"), object(rt));
            paths.insert(format!("{prefix}/{}", rt.plural), collection(rt, false));
        } else {
            paths.insert(format!("{prefix}/{}", rt.plural), collection(rt, false));
            paths.insert(format!("{prefix}/{}/{{name}}", rt.plural), object(rt));
        }
        schemas.insert(
            schema_name(rt),
            json!({"type": "object", "additionalProperties": true,
                "x-kubernetes-group-version-kind": [{"group": rt.group, "version": rt.version, "kind": rt.kind}]}),
        );
    }
    paths.insert(
        "/api/v1/namespaces/{namespace}/pods/{name}/log".into(),
        json!({"parameters": [param("namespace", "path", "namespace"), param("name", "path", "pod name")],
            "get": {"operationId": "readPodLog", "summary": "Read (or follow) a pod's log",
                "parameters": [param("follow", "query", "stream until the pod finishes"),
                    param("tailLines", "query", "only the last N lines")],
                "responses": {"200": {"description": "log text", "content": {"text/plain": {"schema": {"type": "string"}}}},
                    "default": {"$ref": "#/components/responses/Status"}}}}),
    );
    paths.insert(
        "/apis/ringleader.io/v1alpha1/apply".into(),
        json!({"post": {"operationId": "applyDocuments",
            "summary": "Validate and apply a multi-document YAML/JSON stream, all or nothing",
            "requestBody": {"required": true, "content": {"application/yaml": {"schema": {"type": "string"}}}},
            "responses": ok("what happened to each object", json!({"type": "object"}))}}),
    );
    for p in ["/healthz", "/readyz", "/metrics"] {
        paths.insert(
            p.into(),
            json!({"get": {"operationId": p.trim_start_matches('/'), "security": if p == "/metrics" { json!([{"bearer": []}]) } else { json!([]) },
                "responses": {"200": {"description": "ok", "content": {"text/plain": {"schema": {"type": "string"}}}}}}}),
        );
    }
    schemas.insert(
        "Status".into(),
        json!({"type": "object", "properties": {
            "kind": {"type": "string"}, "apiVersion": {"type": "string"}, "status": {"type": "string"},
            "message": {"type": "string"}, "reason": {"type": "string"}, "code": {"type": "integer"},
            "details": {"type": "object"}}}),
    );
    json!({
        "openapi": "3.0.3",
        "info": {"title": "ringleader", "version": env!("CARGO_PKG_VERSION")},
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "responses": {"Status": {"description": "a failure, as a Kubernetes Status",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}}},
        },
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn lists_namespaced_and_cluster_paths() {
        let d = super::document();
        assert!(d["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["delete"].is_object());
        assert!(d["paths"]["/apis/ringleader.io/v1alpha1/nodes/{name}"]["get"].is_object());
        assert!(d["paths"]["/api/v1/pods"]["get"].is_object());
        assert!(d["paths"]["/api/v1/pods"].get("post").is_none());
    }
}
