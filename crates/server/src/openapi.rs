//! The OpenAPI documents, in kube-apiserver's layout: `/openapi/v3` is an
//! index of one OpenAPI 3.0 document per group-version
//! (`/openapi/v3/apis/kubeflow.org/v1?hash=…`), and `/openapi/v2` is one
//! Swagger 2.0 document of everything. Stock `kubectl` reads them for
//! `explain` (it follows `$ref`s into `components.schemas` and finds a kind
//! by `x-kubernetes-group-version-kind`) and for `apply`'s validation (a
//! PATCH operation with the kind's GVK and a `fieldValidation` parameter
//! tells it the server validates fields, see [`crate::fields`]).
//!
//! Schemas are real: Kubernetes' own kinds come from `k8s-openapi`'s
//! schemars impls, ringleader's and the CRD kinds from `JsonSchema` derives
//! on the typed specs in `ringleader-api` (their doc comments become the
//! descriptions). Both are then cleaned into the subset kubectl's templates
//! follow ([`clean`]). Everything is built once, on first use, and served as
//! cached bytes; each document's `hash` is computed from its bytes.

use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job as BatchJob;
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Event, Namespace, Node as CoreNode, NodeSystemInfo, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1 as rbac;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ListMeta, ObjectMeta, Status};
use ringleader_api::kinds::{ascend, cluster, kubeflow, platform, volcano};
use ringleader_registry::resources::{self, ResourceType};
use ringleader_registry::status::ApiError;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// Where every `$ref` of a v3 document points.
const V3_REFS: &str = "#/components/schemas/";
/// Where every `$ref` of the v2 document points.
const V2_REFS: &str = "#/definitions/";
/// The protobuf media type of `/openapi/v2`, which is not served.
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2";

/// The schemas of every kind, and the name of each kind's top-level schema.
pub(crate) struct Catalog {
    /// Every schema by name, `$ref`s pointing at [`V3_REFS`].
    pub(crate) schemas: Map<String, Value>,
    /// Name of the top-level schema of each type, by `(group, version, kind)`.
    tops: BTreeMap<(&'static str, &'static str, &'static str), String>,
}

impl Catalog {
    /// The top-level schema of a type.
    pub(crate) fn root(&self, rt: &ResourceType) -> Option<&Value> {
        self.tops.get(&(rt.group, rt.version, rt.kind)).and_then(|name| self.schemas.get(name))
    }

    /// The schema a `$ref` names, if it is one of ours.
    pub(crate) fn resolve(&self, reference: &str) -> Option<&Value> {
        reference.strip_prefix(V3_REFS).and_then(|name| self.schemas.get(name))
    }
}

/// The served documents, as bytes.
struct Documents {
    index: Vec<u8>,
    /// By index key (`api/v1`, `apis/kubeflow.org/v1`).
    group_versions: BTreeMap<String, Vec<u8>>,
    v2: Vec<u8>,
}

/// The schema catalog, built on first use.
pub(crate) fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(build_catalog)
}

fn documents() -> &'static Documents {
    static DOCUMENTS: OnceLock<Documents> = OnceLock::new();
    DOCUMENTS.get_or_init(|| build_documents(catalog()))
}

/// `GET /openapi/v3`: the index of group-version documents.
pub(crate) fn v3_index() -> Response {
    json_bytes(&documents().index)
}

/// `GET /openapi/v3/{api/v1|apis/G/V}` (the `hash` query is only a cache key).
pub(crate) fn v3_group_version(path: &str) -> Response {
    match documents().group_versions.get(path.trim_matches('/')) {
        Some(bytes) => json_bytes(bytes),
        None => ApiError::no_route(&format!("/openapi/v3/{path}")).into_response(),
    }
}

/// `GET /openapi/v2`: JSON when the client takes it; a client asking only
/// for the protobuf encoding gets 406, so kubectl falls back as it does with
/// any server that lacks it.
pub(crate) fn v2(headers: &HeaderMap) -> Response {
    let accept = headers.get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if accepts_json(accept) {
        return json_bytes(&documents().v2);
    }
    ApiError::new(
        StatusCode::NOT_ACCEPTABLE,
        "NotAcceptable",
        format!("only the following media types are accepted: application/json (not {accept:?})"),
    )
    .into_response()
}

/// Whether an Accept header admits JSON: no header, a wildcard, or a JSON
/// type that is not the protobuf one.
fn accepts_json(accept: &str) -> bool {
    if accept.trim().is_empty() {
        return true;
    }
    accept.split(',').any(|part| {
        let media = part.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        !media.starts_with(V2_PROTOBUF)
            && (media == "*/*" || media == "application/*" || media == "application/json" || media.ends_with("+json"))
    })
}

fn json_bytes(bytes: &[u8]) -> Response {
    (StatusCode::OK, [(CONTENT_TYPE, "application/json")], bytes.to_vec()).into_response()
}

/// Descriptions of the kinds ringleader defines the top level of.
fn kind_description(rt: &ResourceType) -> &'static str {
    match (rt.group, rt.kind) {
        ("mindxdl.gitee.com", _) => {
            "AscendJob is MindCluster Ascend Operator's training job: Kubeflow-style replica specs (Master, Scheduler, Chief, Worker) on Ascend NPUs, with a rank table (hccl.json) the controller completes."
        }
        ("batch.volcano.sh", _) => {
            "Job is a Volcano job (vcjob): tasks of pods scheduled as one gang, with lifecycle policies and plugins."
        }
        (_, "PyTorchJob") => "PyTorchJob runs distributed PyTorch training: Master and Worker replicas (Kubeflow training-operator).",
        (_, "TFJob") => "TFJob runs distributed TensorFlow training: Chief, PS, Worker and Evaluator replicas (Kubeflow training-operator).",
        (_, "MPIJob") => "MPIJob runs an MPI program: a Launcher that reads the hostfile and Worker replicas (Kubeflow mpi-operator).",
        (_, "Queue") => "Queue is a Volcano queue: a share of the cluster that jobs are admitted to.",
        (_, "PodGroup") => "PodGroup is a Volcano gang: pods that are placed together or not at all.",
        (_, "Node") => "Node is a ringleader machine: its hardware profile (devices and their links), network position and devices in use or broken.",
        (_, "Workload") => "Workload is a job already running when the scheduler takes its snapshot: its pods' nodes and devices.",
        (_, "ResourceGroup") => "ResourceGroup is a pool of nodes (a virtual cluster) with an accelerator family and scheduling policies; its queues share it.",
        (_, "Workspace") => "Workspace is a team's namespace: its members with their roles and the queues of one resource group they may use.",
        (_, "TrainingJob") => "TrainingJob is a saved training job: framework, image, command, roles and mounts. Each run of it makes a Run.",
        (_, "Run") => "Run is one run of a TrainingJob: the framework job it made, its pods and its timeline of states.",
        (_, "Dataset") => "Dataset is a directory of training data a TrainingJob mounts (at /data by default).",
        (_, "Image") => "Image is a container image: a preset (namespace platform-system) or a workspace's custom image.",
        (_, "StorageMount") => "StorageMount is a node directory mounted on chosen nodes, mounted or unmounted per node.",
        (_, "Script") => "Script is a shell script administrators run on nodes (timeout at least 600 s).",
        (_, "ScriptRun") => "ScriptRun is one run of a Script on chosen nodes, with each node's exit code and output.",
        (_, "CheckRun") => "CheckRun is one run of a server, network or collective-communication check on chosen nodes, with its report; the CheckRuns are the checks' history.",
        (_, "PlatformNode") => "PlatformNode is a node of the platform's node list: its source (new or adopted) and its binding to a resource group (bound, bind-failed, unbind-failed, unbound).",
        (_, "AuditRecord") => "AuditRecord says who created, changed, ran, stopped or deleted what, and when. Written by the API server; read-only.",
        _ => "",
    }
}

/// A `$ref` with a description beside it, in the `allOf` form
/// kube-apiserver writes (siblings of a bare `$ref` are ignored in OpenAPI 3.0).
fn described(reference: Value, description: &str) -> Value {
    json!({"allOf": [reference], "description": description})
}

fn gvk(rt: &ResourceType) -> Value {
    json!({"group": rt.group, "version": rt.version, "kind": rt.kind})
}

/// The name kube-apiserver gives a custom resource's schema: the group
/// reversed, then version and kind (`org.kubeflow.v1.PyTorchJob`).
fn custom_schema_name(rt: &ResourceType) -> String {
    let group: Vec<&str> = rt.group.split('.').rev().collect();
    format!("{}.{}.{}", group.join("."), rt.version, rt.kind)
}

/// A top-level schema of one of ringleader's kinds: apiVersion, kind,
/// metadata, the typed spec and the status.
fn custom_top(rt: &ResourceType, spec: Value, status: Value, object_meta: &Value) -> Value {
    json!({
        "description": kind_description(rt),
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "description": format!("APIVersion of this object: {}.", rt.api_version)},
            "kind": {"type": "string", "description": format!("Kind of this object: {}.", rt.kind)},
            "metadata": described(object_meta.clone(), "Standard object's metadata: name, namespace, labels, annotations."),
            "spec": described(spec, &format!("Specification of the desired behavior of the {}.", rt.kind)),
            "status": status,
        },
        "x-kubernetes-group-version-kind": [gvk(rt)],
    })
}

/// Status the controllers write and the spec does not type: any fields.
fn free_status() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "description": "Most recently observed state, written by ringleader's controllers. Read-only."})
}

/// How a type's top-level schema is made.
enum Shape {
    /// A Kubernetes kind: k8s-openapi's schema, under this name.
    Builtin(String),
    /// One of ringleader's kinds: this spec schema inside [`custom_top`].
    Custom(Value),
}

fn build_catalog() -> Catalog {
    let mut gen = SchemaSettings::openapi3().into_generator();
    let object_meta = sub::<ObjectMeta>(&mut gen);
    let list_meta = sub::<ListMeta>(&mut gen);
    let node_info = sub::<NodeSystemInfo>(&mut gen);
    // Every document carries these two, as kube-apiserver's do.
    let _ = sub::<Status>(&mut gen);
    let _ = sub::<DeleteOptions>(&mut gen);

    let mut tops = BTreeMap::new();
    let mut customs: Vec<(&'static ResourceType, Value, Value)> = Vec::new();
    for rt in resources::discoverable() {
        let shape = match (rt.group, rt.kind) {
            ("", "Pod") => Shape::Builtin(registered::<Pod>(&mut gen)),
            ("", "ConfigMap") => Shape::Builtin(registered::<ConfigMap>(&mut gen)),
            ("", "Secret") => Shape::Builtin(registered::<Secret>(&mut gen)),
            ("", "ServiceAccount") => Shape::Builtin(registered::<ServiceAccount>(&mut gen)),
            ("", "Namespace") => Shape::Builtin(registered::<Namespace>(&mut gen)),
            ("policy", "PodDisruptionBudget") => Shape::Builtin(registered::<PodDisruptionBudget>(&mut gen)),
            ("", "Service") => Shape::Builtin(registered::<Service>(&mut gen)),
            ("", "Endpoints") => Shape::Builtin(registered::<Endpoints>(&mut gen)),
            ("discovery.k8s.io", "EndpointSlice") => Shape::Builtin(registered::<EndpointSlice>(&mut gen)),
            ("", "Event") => Shape::Builtin(registered::<Event>(&mut gen)),
            ("", "Node") => Shape::Builtin(registered::<CoreNode>(&mut gen)),
            ("apps", "Deployment") => Shape::Builtin(registered::<Deployment>(&mut gen)),
            ("apps", "ReplicaSet") => Shape::Builtin(registered::<ReplicaSet>(&mut gen)),
            ("batch", "Job") => Shape::Builtin(registered::<BatchJob>(&mut gen)),
            ("scheduling.k8s.io", "PriorityClass") => Shape::Builtin(registered::<PriorityClass>(&mut gen)),
            ("rbac.authorization.k8s.io", "Role") => Shape::Builtin(registered::<rbac::Role>(&mut gen)),
            ("rbac.authorization.k8s.io", "ClusterRole") => Shape::Builtin(registered::<rbac::ClusterRole>(&mut gen)),
            ("rbac.authorization.k8s.io", "RoleBinding") => Shape::Builtin(registered::<rbac::RoleBinding>(&mut gen)),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
                Shape::Builtin(registered::<rbac::ClusterRoleBinding>(&mut gen))
            }
            ("mindxdl.gitee.com", "AscendJob") => Shape::Custom(sub::<ascend::AscendJobSpec>(&mut gen)),
            ("batch.volcano.sh", "Job") => Shape::Custom(sub::<volcano::VolcanoJobSpec>(&mut gen)),
            ("kubeflow.org", "PyTorchJob") => Shape::Custom(sub::<kubeflow::PyTorchJobSpec>(&mut gen)),
            ("kubeflow.org", "TFJob") => Shape::Custom(sub::<kubeflow::TfJobSpec>(&mut gen)),
            ("kubeflow.org", "MPIJob") => Shape::Custom(sub::<kubeflow::MpiJobSpec>(&mut gen)),
            ("scheduling.volcano.sh", "Queue") => Shape::Custom(sub::<volcano::QueueSpec>(&mut gen)),
            ("scheduling.volcano.sh", "PodGroup") => Shape::Custom(sub::<volcano::PodGroupSpec>(&mut gen)),
            ("ringleader.io", "Node") => Shape::Custom(sub::<cluster::NodeSpec>(&mut gen)),
            ("ringleader.io", "Workload") => Shape::Custom(sub::<cluster::WorkloadSpec>(&mut gen)),
            ("platform.ringleader.io", "ResourceGroup") => Shape::Custom(sub::<platform::ResourceGroupSpec>(&mut gen)),
            ("platform.ringleader.io", "Workspace") => Shape::Custom(sub::<platform::WorkspaceSpec>(&mut gen)),
            ("platform.ringleader.io", "TrainingJob") => Shape::Custom(sub::<platform::TrainingJobSpec>(&mut gen)),
            ("platform.ringleader.io", "Run") => Shape::Custom(sub::<platform::RunSpec>(&mut gen)),
            ("platform.ringleader.io", "Dataset") => Shape::Custom(sub::<platform::DatasetSpec>(&mut gen)),
            ("platform.ringleader.io", "Image") => Shape::Custom(sub::<platform::ImageSpec>(&mut gen)),
            ("platform.ringleader.io", "StorageMount") => Shape::Custom(sub::<platform::StorageMountSpec>(&mut gen)),
            ("platform.ringleader.io", "Script") => Shape::Custom(sub::<platform::ScriptSpec>(&mut gen)),
            ("platform.ringleader.io", "ScriptRun") => Shape::Custom(sub::<platform::ScriptRunSpec>(&mut gen)),
            ("platform.ringleader.io", "AuditRecord") => Shape::Custom(sub::<platform::AuditRecordSpec>(&mut gen)),
            ("platform.ringleader.io", "PlatformNode") => Shape::Custom(sub::<platform::PlatformNodeSpec>(&mut gen)),
            ("ringleader.io", "CheckRun") => Shape::Custom(sub::<ringleader_api::kinds::check::CheckRunSpec>(&mut gen)),
            // A new row of the resource table without a schema yet: listed
            // by discovery, absent from the documents.
            _ => continue,
        };
        match shape {
            Shape::Builtin(name) => {
                tops.insert((rt.group, rt.version, rt.kind), name);
            }
            Shape::Custom(spec) => {
                let status = if rt.kind == "Node" {
                    let node_status = sub::<cluster::NodeStatus>(&mut gen);
                    described(node_status, "Devices in use or broken, readiness and the machine's system info.")
                } else if let Some(status) = platform_status(rt, &mut gen) {
                    described(status, "Most recently observed state, written by the platform controller. Read-only.")
                } else {
                    free_status()
                };
                customs.push((rt, spec, status));
            }
        }
    }
    let mut schemas = gen.take_definitions(true);
    for (rt, spec, status) in customs {
        let name = custom_schema_name(rt);
        schemas.insert(name.clone(), custom_top(rt, spec, status, &object_meta));
        tops.insert((rt.group, rt.version, rt.kind), name);
    }
    // The agent also writes the machine's `nodeInfo` (a Kubernetes
    // NodeSystemInfo) into a ringleader Node's status, which the typed
    // NodeStatus does not carry; and status is the controllers' to extend.
    if let Some(status) = schemas.get_mut(&cluster::NodeStatus::schema_name().to_string()) {
        if let Some(props) = status.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert(
                "nodeInfo".into(),
                described(node_info, "The machine and its agent, in a Kubernetes NodeSystemInfo."),
            );
        }
        status["x-kubernetes-preserve-unknown-fields"] = json!(true);
    }
    for (&(group, version, kind), name) in &tops {
        if let Some(schema) = schemas.get_mut(name).and_then(Value::as_object_mut) {
            schema.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": group, "version": version, "kind": kind}]),
            );
            // Status is the controllers' and they extend Kubernetes' types
            // (a Deployment's `status.ringleader`, `status.replicaStatuses`):
            // what a client sends back of it is not its to get wrong.
            if let Some(status) = schema.get_mut("properties").and_then(|p| p.get_mut("status")) {
                if let Some(status) = status.as_object_mut() {
                    status.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
                }
            }
        }
        // A list schema per kind, for the list operations' answers.
        schemas.insert(
            format!("{name}List"),
            json!({
                "description": format!("A list of {kind} objects."),
                "type": "object",
                "required": ["items"],
                "properties": {
                    "apiVersion": {"type": "string", "description": "APIVersion of the list."},
                    "kind": {"type": "string", "description": format!("{kind}List.")},
                    "metadata": described(list_meta.clone(), "Standard list metadata: resourceVersion and continue."),
                    "items": {"type": "array", "description": format!("The {kind} objects."),
                        "items": {"$ref": format!("{V3_REFS}{name}")}},
                },
                "x-kubernetes-group-version-kind": [{"group": group, "version": version, "kind": format!("{kind}List")}],
            }),
        );
    }
    for schema in schemas.values_mut() {
        clean(schema);
    }
    Catalog { schemas, tops }
}

/// The typed status of a platform kind, where it has one.
fn platform_status(rt: &ResourceType, gen: &mut SchemaGenerator) -> Option<Value> {
    if rt.kind == "CheckRun" {
        return Some(sub::<ringleader_api::kinds::check::CheckRunStatus>(gen));
    }
    if !rt.platform() {
        return None;
    }
    Some(match rt.kind {
        "ResourceGroup" => sub::<platform::ResourceGroupStatus>(gen),
        "Workspace" => sub::<platform::WorkspaceStatus>(gen),
        "TrainingJob" => sub::<platform::TrainingJobStatus>(gen),
        "Run" => sub::<platform::RunStatus>(gen),
        "Image" => sub::<platform::ImageStatus>(gen),
        "StorageMount" => sub::<platform::StorageMountStatus>(gen),
        "ScriptRun" => sub::<platform::ScriptRunStatus>(gen),
        "PlatformNode" => sub::<platform::PlatformNodeStatus>(gen),
        _ => return None,
    })
}

/// Registers a Kubernetes kind's schema and answers its name.
fn registered<T: JsonSchema>(gen: &mut SchemaGenerator) -> String {
    let _ = gen.subschema_for::<T>();
    T::schema_name().to_string()
}

/// Registers a type's schema and answers the `$ref` to it.
fn sub<T: JsonSchema>(gen: &mut SchemaGenerator) -> Value {
    serde_json::to_value(gen.subschema_for::<T>()).unwrap_or(Value::Null)
}

/// Rewrites a schema into what kubectl's explain templates and field walks
/// follow: an `Option`'s `anyOf: [X, null]` becomes X (a described `$ref`
/// becomes `allOf: [$ref]`), and `nullable`, `const: null`, `default` and
/// `$schema` go (defaults of the Rust types are not the server's defaults).
pub(crate) fn clean(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    for key in ["$schema", "default", "nullable", "examples", "example"] {
        map.remove(key);
    }
    if map.get("const") == Some(&Value::Null) {
        map.remove("const");
    }
    if let Some(Value::Array(alternatives)) = map.remove("anyOf") {
        let mut kept: Vec<Value> = alternatives.into_iter().filter(|a| !is_null_schema(a)).collect();
        if kept.len() == 1 {
            let only = kept.remove(0);
            match only {
                Value::Object(inner) if inner.contains_key("$ref") => {
                    if map.is_empty() {
                        map.extend(inner);
                    } else {
                        map.insert("allOf".into(), json!([Value::Object(inner)]));
                    }
                }
                Value::Object(inner) => {
                    for (k, v) in inner {
                        map.entry(k).or_insert(v);
                    }
                }
                _ => {}
            }
        } else if !kept.is_empty() {
            map.insert("anyOf".into(), Value::Array(kept));
        }
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        props.values_mut().for_each(clean);
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(sub) = map.get_mut(key) {
            match sub {
                Value::Array(list) => list.iter_mut().for_each(clean),
                other => clean(other),
            }
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(list)) = map.get_mut(key) {
            list.iter_mut().for_each(clean);
        }
    }
}

/// `{"type": "null"}`, or what schemars' nullable and const transforms
/// leave of it (`{"nullable": true, "enum": [null]}`).
fn is_null_schema(schema: &Value) -> bool {
    match schema.as_object() {
        Some(m) => {
            let only_null = m.get("const") == Some(&Value::Null) || m.get("enum") == Some(&json!([null]));
            m.get("type") == Some(&json!("null"))
                || (only_null && m.keys().all(|k| k == "const" || k == "enum" || k == "nullable"))
        }
        None => false,
    }
}

/// Every schema name a schema refers to, transitively, into `out`.
fn collect_refs(catalog: &Catalog, schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix(V3_REFS)) {
                if out.insert(name.to_string()) {
                    if let Some(target) = catalog.schemas.get(name) {
                        collect_refs(catalog, target, out);
                    }
                }
            }
            map.values().for_each(|v| collect_refs(catalog, v, out));
        }
        Value::Array(list) => list.iter().for_each(|v| collect_refs(catalog, v, out)),
        _ => {}
    }
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("{V3_REFS}{name}")})
}

fn query(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "description": description,
        "schema": {"type": "string", "uniqueItems": true}})
}

/// The parameters of every write, as kube-apiserver lists them. kubectl's
/// `apply` looks for `fieldValidation` on the PATCH operation to decide
/// that the server validates fields.
fn write_params() -> Vec<Value> {
    vec![
        query("dryRun", "When present, the write is checked but not persisted. The only valid value is All."),
        query("fieldManager", "A name for the actor making the change."),
        query(
            "fieldValidation",
            "How to treat fields the schema does not declare: Ignore drops them silently, Warn (the default) \
             answers a `Warning: 299` header per field, Strict fails the request with BadRequest.",
        ),
    ]
}

fn content(schema: Value) -> Value {
    json!({"application/json": {"schema": schema.clone()}, "application/yaml": {"schema": schema}})
}

fn answer(codes: &[&str], schema: &Value) -> Value {
    let mut out = Map::new();
    for code in codes {
        out.insert((*code).into(), json!({"description": "OK", "content": content(schema.clone())}));
    }
    out.insert("401".into(), json!({"description": "Unauthorized"}));
    Value::Object(out)
}

/// Upper-camel words of the group and version, so every operation ID is
/// unique (two kinds are called `Job`).
fn op_suffix(rt: &ResourceType) -> String {
    let group: String = rt.group.split(['.', '-']).map(capitalize).collect();
    format!("{group}{}{}", capitalize(rt.version), rt.kind)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn operation(rt: &ResourceType, id: &str, action: &str, summary: String) -> Map<String, Value> {
    let mut op = Map::new();
    op.insert("operationId".into(), json!(id));
    op.insert("description".into(), json!(summary));
    op.insert("tags".into(), json!([rt.api_version]));
    op.insert("x-kubernetes-action".into(), json!(action));
    op.insert("x-kubernetes-group-version-kind".into(), gvk(rt));
    op
}

/// The paths of one type: the collection (in a namespace, and across all
/// of them for namespaced types) and one object.
fn type_paths(rt: &ResourceType, top: &str, paths: &mut Map<String, Value>) {
    let ns_word = if rt.namespaced { "Namespaced" } else { "" };
    let suffix = op_suffix(rt);
    let object = schema_ref(top);
    let list_schema = schema_ref(&format!("{top}List"));
    let list_params = vec![
        query("labelSelector", "Select objects by their labels (=, ==, !=, in, notin, exists)."),
        query("fieldSelector", "Select objects by field values, e.g. spec.nodeName=n1."),
        query("watch", "Stream ADDED/MODIFIED/DELETED events, one JSON object a line."),
        query("resourceVersion", "List at, or watch from after, this version."),
        query("timeoutSeconds", "End a watch after this many seconds."),
        query("limit", "At most this many objects per page."),
        query("continue", "The token of the next page."),
        query("allowWatchBookmarks", "Send BOOKMARK events."),
    ];
    let list = |scope: &str| {
        let mut op = operation(
            rt,
            &format!("list{scope}{suffix}"),
            "list",
            format!("list or watch objects of kind {}", rt.kind),
        );
        op.insert("parameters".into(), json!(list_params));
        op.insert("responses".into(), answer(&["200"], &list_schema));
        Value::Object(op)
    };
    let (collection, item) = if rt.namespaced {
        let base = format!("{}/namespaces/{{namespace}}/{}", rt.prefix(), rt.plural);
        let mut all = Map::new();
        all.insert("get".into(), list("ForAllNamespaces"));
        paths.insert(format!("{}/{}", rt.prefix(), rt.plural), Value::Object(all));
        (base.clone(), format!("{base}/{{name}}"))
    } else {
        let base = format!("{}/{}", rt.prefix(), rt.plural);
        (base.clone(), format!("{base}/{{name}}"))
    };
    let mut coll = Map::new();
    let mut item_ops = Map::new();
    coll.insert("get".into(), list(ns_word));
    let mut read = operation(rt, &format!("read{ns_word}{suffix}"), "get", format!("read the specified {}", rt.kind));
    read.insert("responses".into(), answer(&["200"], &object));
    item_ops.insert("get".into(), Value::Object(read));
    if rt.writable() {
        let mut create = operation(rt, &format!("create{ns_word}{suffix}"), "post", format!("create a {}", rt.kind));
        create.insert("parameters".into(), json!(write_params()));
        create.insert("requestBody".into(), json!({"required": true, "content": content(object.clone())}));
        create.insert("responses".into(), answer(&["200", "201", "202"], &object));
        coll.insert("post".into(), Value::Object(create));

        let mut replace =
            operation(rt, &format!("replace{ns_word}{suffix}"), "put", format!("replace the specified {}", rt.kind));
        replace.insert("parameters".into(), json!(write_params()));
        replace.insert("requestBody".into(), json!({"required": true, "content": content(object.clone())}));
        replace.insert("responses".into(), answer(&["200", "201"], &object));
        item_ops.insert("put".into(), Value::Object(replace));

        let mut patch = operation(
            rt,
            &format!("patch{ns_word}{suffix}"),
            "patch",
            format!("partially update the specified {}", rt.kind),
        );
        let mut params = write_params();
        params.push(query("force", "Force an apply patch over conflicts."));
        patch.insert("parameters".into(), json!(params));
        // Strategic merge patch is served for Kubernetes' own kinds but not
        // listed: kubectl would then build it from these schemas, which lack
        // the patch-merge keys, instead of from its compiled-in types.
        let patch_body = json!({"type": "object", "description": "The patch."});
        patch.insert(
            "requestBody".into(),
            json!({"required": true, "content": {
                "application/json-patch+json": {"schema": patch_body},
                "application/merge-patch+json": {"schema": patch_body},
                "application/apply-patch+yaml": {"schema": patch_body},
            }}),
        );
        patch.insert("responses".into(), answer(&["200", "201"], &object));
        item_ops.insert("patch".into(), Value::Object(patch));

        let mut delete = operation(rt, &format!("delete{ns_word}{suffix}"), "delete", format!("delete a {}", rt.kind));
        delete.insert(
            "parameters".into(),
            json!([
                query(
                    "dryRun",
                    "When present, the deletion is checked but not persisted. The only valid value is All."
                ),
                query("gracePeriodSeconds", "Seconds a running pod gets to stop."),
            ]),
        );
        delete.insert("requestBody".into(), json!({"content": content(schema_ref(&DeleteOptions::schema_name()))}));
        delete.insert("responses".into(), answer(&["200", "202"], &object));
        item_ops.insert("delete".into(), Value::Object(delete));
    }
    let mut item_params = vec![path_param("name", &format!("name of the {}", rt.kind))];
    if rt.namespaced {
        let ns = path_param("namespace", "object name and auth scope, such as for teams and projects");
        coll.insert("parameters".into(), json!([ns]));
        item_params.push(ns);
    }
    item_ops.insert("parameters".into(), json!(item_params));
    paths.insert(collection, Value::Object(coll));
    paths.insert(item, Value::Object(item_ops));
}

/// The group-versions served, in index order, with their types.
fn group_versions() -> BTreeMap<String, Vec<&'static ResourceType>> {
    let mut out: BTreeMap<String, Vec<&'static ResourceType>> = BTreeMap::new();
    for rt in resources::discoverable() {
        out.entry(rt.prefix().trim_start_matches('/').to_string()).or_default().push(rt);
    }
    out
}

fn gv_document(catalog: &Catalog, key: &str, types: &[&'static ResourceType]) -> Value {
    let mut paths = Map::new();
    let mut wanted = BTreeSet::new();
    for rt in types {
        let Some(top) = catalog.tops.get(&(rt.group, rt.version, rt.kind)) else {
            continue;
        };
        type_paths(rt, top, &mut paths);
        for name in [top.clone(), format!("{top}List")] {
            if let Some(schema) = catalog.schemas.get(&name) {
                collect_refs(catalog, schema, &mut wanted);
            }
            wanted.insert(name);
        }
    }
    if key == "api/v1" {
        let mut log = operation(resources::PODS, "readNamespacedPodLog", "get", "read log of the specified Pod".into());
        log.insert(
            "parameters".into(),
            json!([
                query("container", "The container whose log to read (default: the only one)."),
                query("follow", "Stream the log until the pod ends."),
                query("previous", "The log of the previous run of the container."),
                query("sinceSeconds", "Only lines newer than this many seconds."),
                query("sinceTime", "Only lines after this RFC 3339 time."),
                query("tailLines", "Only the last N lines."),
                query("timestamps", "Prefix each line with its time."),
                query("limitBytes", "At most this many bytes."),
            ]),
        );
        log.insert(
            "responses".into(),
            json!({"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}},
                "401": {"description": "Unauthorized"}}),
        );
        paths.insert(
            "/api/v1/namespaces/{namespace}/pods/{name}/log".into(),
            json!({"get": log, "parameters": [path_param("name", "name of the Pod"),
                path_param("namespace", "object name and auth scope, such as for teams and projects")]}),
        );
    }
    if key == "apis/ringleader.io/v1alpha1" {
        paths.insert(
            "/apis/ringleader.io/v1alpha1/apply".into(),
            json!({"post": {"operationId": "applyRingleaderIoV1alpha1Documents",
                "description": "validate and apply a multi-document YAML/JSON stream, all or nothing",
                "tags": ["ringleader.io/v1alpha1"],
                "requestBody": {"required": true, "content": {"application/yaml": {"schema": {"type": "string"}}}},
                "responses": {"200": {"description": "what happened to each object",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
                    "401": {"description": "Unauthorized"}}}}),
        );
    }
    for name in [Status::schema_name().to_string(), DeleteOptions::schema_name().to_string()] {
        if let Some(schema) = catalog.schemas.get(&name) {
            collect_refs(catalog, schema, &mut wanted);
        }
        wanted.insert(name);
    }
    let schemas: Map<String, Value> =
        wanted.into_iter().filter_map(|name| catalog.schemas.get(&name).map(|s| (name, s.clone()))).collect();
    let title = key.trim_start_matches("apis/").trim_start_matches("api/");
    json!({
        "openapi": "3.0.0",
        "info": {"title": "ringleader", "version": format!("{} ({title})", env!("CARGO_PKG_VERSION"))},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
                "description": "Bearer Token authentication"}},
        },
        "security": [{"BearerToken": []}],
    })
}

/// FNV-1a over the bytes, as hex: a cache key that changes with the document.
fn hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016X}")
}

fn build_documents(catalog: &Catalog) -> Documents {
    let mut by_key = BTreeMap::new();
    let mut index = Map::new();
    let mut v3_docs = Vec::new();
    for (key, types) in group_versions() {
        let doc = gv_document(catalog, &key, &types);
        let bytes = serde_json::to_vec(&doc).unwrap_or_default();
        index.insert(key.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", hash(&bytes))}));
        by_key.insert(key, bytes);
        v3_docs.push(doc);
    }
    let index = serde_json::to_vec(&json!({"paths": index})).unwrap_or_default();
    let v2 = serde_json::to_vec(&swagger2(catalog, &v3_docs)).unwrap_or_default();
    Documents { index, group_versions: by_key, v2 }
}

/// One Swagger 2.0 document of every path and schema, converted from the
/// v3 documents: `$ref`s move to `#/definitions/`, a request body becomes a
/// `body` parameter, and parameters carry their type inline.
fn swagger2(catalog: &Catalog, v3_docs: &[Value]) -> Value {
    let mut paths = Map::new();
    for doc in v3_docs {
        let Some(doc_paths) = doc.get("paths").and_then(Value::as_object) else {
            continue;
        };
        for (path, item) in doc_paths {
            let Some(item) = item.as_object() else {
                continue;
            };
            let mut out = Map::new();
            for (method, op) in item {
                if method == "parameters" {
                    out.insert(method.clone(), v2_params(op));
                    continue;
                }
                let Some(op) = op.as_object() else {
                    continue;
                };
                let mut op2 = op.clone();
                let mut params = op.get("parameters").map(v2_params).unwrap_or_else(|| json!([]));
                let mut consumes = Vec::new();
                if let Some(body) = op2.remove("requestBody") {
                    if let Some(types) = body.get("content").and_then(Value::as_object) {
                        consumes.extend(types.keys().cloned());
                        let schema = types.values().next().and_then(|c| c.get("schema")).cloned();
                        if let (Some(list), Some(schema)) = (params.as_array_mut(), schema) {
                            list.push(json!({"name": "body", "in": "body",
                                "required": body.get("required").cloned().unwrap_or(json!(false)),
                                "schema": schema}));
                        }
                    }
                }
                op2.insert("parameters".into(), params);
                if !consumes.is_empty() {
                    op2.insert("consumes".into(), json!(consumes));
                }
                let mut produces = BTreeSet::new();
                if let Some(responses) = op.get("responses").and_then(Value::as_object) {
                    let mut out_responses = Map::new();
                    for (code, r) in responses {
                        let mut r2 = json!({"description": r.get("description").cloned().unwrap_or(json!(""))});
                        if let Some(types) = r.get("content").and_then(Value::as_object) {
                            produces.extend(types.keys().cloned());
                            if let Some(schema) = types.values().next().and_then(|c| c.get("schema")) {
                                r2["schema"] = schema.clone();
                            }
                        }
                        out_responses.insert(code.clone(), r2);
                    }
                    op2.insert("responses".into(), Value::Object(out_responses));
                }
                op2.insert("produces".into(), json!(produces));
                op2.insert("schemes".into(), json!(["https", "http"]));
                out.insert(method.clone(), Value::Object(op2));
            }
            paths.insert(path.clone(), Value::Object(out));
        }
    }
    let mut v2 = json!({
        "swagger": "2.0",
        "info": {"title": "ringleader", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "definitions": catalog.schemas,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
            "description": "Bearer Token authentication"}},
        "security": [{"BearerToken": []}],
    });
    move_refs(&mut v2);
    v2
}

fn v2_params(params: &Value) -> Value {
    let list = params.as_array().cloned().unwrap_or_default();
    Value::Array(
        list.into_iter()
            .map(|mut p| {
                if let Some(map) = p.as_object_mut() {
                    if let Some(Value::Object(schema)) = map.remove("schema") {
                        for (k, v) in schema {
                            map.insert(k, v);
                        }
                    }
                }
                p
            })
            .collect(),
    )
}

/// Points every `$ref` at `#/definitions/`.
fn move_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some(name) = r.strip_prefix(V3_REFS) {
                    *r = format!("{V2_REFS}{name}");
                }
            }
            map.values_mut().for_each(move_refs);
        }
        Value::Array(list) => list.iter_mut().for_each(move_refs),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(key: &str) -> Value {
        let bytes = documents().group_versions.get(key).cloned().unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }

    #[test]
    fn the_index_names_every_group_version_with_a_hash() {
        let index: Value = serde_json::from_slice(&documents().index).unwrap_or(Value::Null);
        let url = index["paths"]["apis/kubeflow.org/v1"]["serverRelativeURL"].as_str().unwrap_or("");
        assert!(url.starts_with("/openapi/v3/apis/kubeflow.org/v1?hash="), "{url}");
        assert!(index["paths"]["api/v1"].is_object());
        assert!(index["paths"]["apis/kubeflow.org/v2beta1"].is_object());
    }

    #[test]
    fn operations_carry_the_kind_and_the_write_parameters() {
        let d = doc("api/v1");
        let patch = &d["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"], json!({"group": "", "version": "v1", "kind": "Pod"}));
        let names: Vec<&str> =
            patch["parameters"].as_array().into_iter().flatten().filter_map(|p| p["name"].as_str()).collect();
        assert!(names.contains(&"fieldValidation") && names.contains(&"dryRun"), "{names:?}");
        assert!(d["paths"]["/api/v1/pods"]["get"].is_object());
        assert!(d["paths"]["/api/v1/pods"].get("post").is_none());
        // The core Node view is read-only.
        assert!(d["paths"]["/api/v1/nodes/{name}"]["get"].is_object());
        assert!(d["paths"]["/api/v1/nodes/{name}"].get("patch").is_none());
        let rl = doc("apis/ringleader.io/v1alpha1");
        assert!(rl["paths"]["/apis/ringleader.io/v1alpha1/nodes/{name}"]["patch"].is_object());
    }

    #[test]
    fn options_become_plain_schemas() {
        let spec = &catalog().schemas["ElasticPolicy"];
        assert_eq!(spec["properties"]["minReplicas"]["type"], "integer");
        assert!(spec["properties"]["minReplicas"].get("nullable").is_none());
        let job = &catalog().schemas["PyTorchJobSpec"];
        assert!(job["properties"]["elasticPolicy"]["allOf"][0]["$ref"].is_string(), "{}", job["properties"]);
        assert!(job["properties"]["runPolicy"].get("default").is_none());
    }

    #[test]
    fn accept_headers() {
        assert!(accepts_json(""));
        assert!(accepts_json("application/json"));
        assert!(accepts_json("application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json"));
        assert!(!accepts_json("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"));
        assert!(!accepts_json("application/com.github.proto-openapi.spec.v2.v1.0+protobuf"));
        assert!(accepts_json("*/*"));
    }
}
