//! Errors as Kubernetes `Status` objects, so `kubectl`-shaped clients and
//! the CLI read one format: a message, a machine-readable reason, the HTTP
//! code, and the field paths of validation errors in `details.causes`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ringleader_api::FieldError;
use ringleader_store::{ObjectKey, StoreError};
use serde_json::{json, Value};

/// One field-level cause of a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// Field path, e.g. `spec.replicaSpecs.Worker.replicas`.
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// `FieldValueInvalid`, `FieldValueRequired` …
    pub reason: String,
}

/// A failed request, rendered as a `Status`.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP code.
    pub code: StatusCode,
    /// `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, `BadRequest` …
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
    /// `details.kind`; a group-qualified `kind.group` (`pytorchjobs.kubeflow.org`)
    /// is written as `details.kind` and `details.group`.
    pub kind: Option<String>,
    /// `details.name`.
    pub name: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
}

impl ApiError {
    /// An error without details.
    pub fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { code, reason, message: message.into(), kind: None, name: None, causes: Vec::new() }
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }

    /// 400 BadRequest about one field of the body.
    pub fn bad_field(field: &str, message: impl Into<String>) -> ApiError {
        let message = message.into();
        let cause = Cause { field: field.to_string(), message: message.clone(), reason: "FieldValueInvalid".into() };
        ApiError { causes: vec![cause], ..ApiError::bad_request(format!("{field}: {message}")) }
    }

    /// 404 NotFound of a path the server does not serve.
    pub fn no_route(path: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("the server could not find the requested resource: {path}"),
        )
    }

    /// 405 MethodNotAllowed, worded as kube-apiserver words it (the method and
    /// path are logged, not echoed).
    pub fn method(_method: &str, _path: &str) -> ApiError {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 408 Timeout for a request body not received in time.
    pub fn body_timeout(within: std::time::Duration) -> ApiError {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "Timeout",
            format!("the request body was not received within {} s", within.as_secs_f64()),
        )
    }

    /// 415 UnsupportedMediaType for a patch type the resource does not take.
    pub fn unsupported_patch(content_type: &str, accepted: &[&str]) -> ApiError {
        let _ = content_type;
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 404 NotFound of an object: `pods "x" not found`.
    pub fn not_found(resource: &Resource, name: &str) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "NotFound", format!("{} {name:?} not found", resource.qualified()))
            .with_resource(resource, name)
    }

    /// 409 AlreadyExists: `pods "x" already exists`.
    pub fn already_exists(resource: &Resource, name: &str) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            "AlreadyExists",
            format!("{} {name:?} already exists", resource.qualified()),
        )
        .with_resource(resource, name)
    }

    /// 409 Conflict of a stale resourceVersion, in kube-apiserver's words.
    pub fn conflict(resource: &Resource, name: &str) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: the object has been modified; \
                 please apply your changes to the latest version and try again",
                resource.qualified()
            ),
        )
        .with_resource(resource, name)
    }

    /// Names the resource (plural) and its group in `details`, as
    /// kube-apiserver does for NotFound, AlreadyExists and Conflict.
    fn with_resource(mut self, resource: &Resource, name: &str) -> ApiError {
        self.kind = Some(resource.qualified());
        self.name = Some(name.to_string());
        self
    }

    /// 401 Unauthorized.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", message)
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    /// 422 Invalid: validation errors of one object, worded as
    /// kube-apiserver words them: `Pod "x" is invalid: <field>: Invalid
    /// value: <value>: <what>` (several errors as `[a, b]`), with the kind
    /// qualified by its group (`PyTorchJob.kubeflow.org`).
    pub fn invalid(kind: &str, name: &str, errors: &[FieldError]) -> ApiError {
        let causes: Vec<Cause> = errors.iter().map(cause_of).collect();
        let lines: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        let joined = if lines.len() == 1 { lines[0].clone() } else { format!("[{}]", lines.join(", ")) };
        ApiError {
            code: StatusCode::UNPROCESSABLE_ENTITY,
            reason: "Invalid",
            message: format!("{kind} {name:?} is invalid: {joined}"),
            kind: Some(kind.to_string()),
            name: Some(name.to_string()),
            causes,
        }
    }

    /// Names the object in `details`.
    pub fn with_object(mut self, kind: &str, name: &str) -> ApiError {
        self.kind = Some(kind.to_string());
        self.name = Some(name.to_string());
        self
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut details = serde_json::Map::new();
        if let Some(name) = &self.name {
            details.insert("name".into(), json!(name));
        }
        if let Some(kind) = &self.kind {
            // Go's StatusDetails omits an empty group, as here.
            match kind.split_once('.') {
                Some((kind, group)) => {
                    details.insert("group".into(), json!(group));
                    details.insert("kind".into(), json!(kind));
                }
                None => {
                    details.insert("kind".into(), json!(kind));
                }
            }
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| json!({"field": c.field, "message": c.message, "reason": c.reason}))
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code.as_u16(),
        });
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

/// The `details.causes` entry of a validation error, with kube-apiserver's
/// `Required value: …` / `Invalid value: <value>: …` message prefixes.
pub fn cause_of(e: &FieldError) -> Cause {
    if e.value.is_empty() {
        Cause {
            field: e.field.clone(),
            message: format!("Required value: {}", e.message),
            reason: "FieldValueRequired".into(),
        }
    } else {
        Cause {
            field: e.field.clone(),
            message: format!("Invalid value: {}: {}", e.value, e.message),
            reason: "FieldValueInvalid".into(),
        }
    }
}

/// A resource as errors name it: plural and group (`pods`, ``;
/// `pytorchjobs`, `kubeflow.org`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// Plural, e.g. `pods`.
    pub plural: String,
    /// API group, `""` for the core group.
    pub group: String,
}

impl Resource {
    /// The resource of a store key, from the served resource table; kinds the
    /// table lacks fall back to the lower-cased kind with an `s`.
    pub fn of_key(key: &ObjectKey) -> Resource {
        match crate::resources::RESOURCES.iter().find(|r| r.api_version == key.api_version && r.kind == key.kind) {
            Some(rt) => Resource { plural: rt.plural.to_string(), group: rt.group.to_string() },
            None => {
                let group = key.api_version.rsplit_once('/').map(|(g, _)| g.to_string()).unwrap_or_default();
                Resource { plural: format!("{}s", key.kind.to_ascii_lowercase()), group }
            }
        }
    }

    /// `pods`, or `pytorchjobs.kubeflow.org` outside the core group.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.code, axum::Json(self.to_status())).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let message = e.to_string();
        match &e {
            StoreError::NotFound(key) => ApiError::not_found(&Resource::of_key(key), &key.name),
            StoreError::AlreadyExists(key) => ApiError::already_exists(&Resource::of_key(key), &key.name),
            StoreError::Conflict { key, .. } => ApiError::conflict(&Resource::of_key(key), &key.name),
            StoreError::Expired { .. } => ApiError::new(StatusCode::GONE, "Expired", message),
            StoreError::Invalid(m) => {
                // The store's messages read `field: what is wrong`.
                let (field, what) = m.split_once(": ").unwrap_or(("", m.as_str()));
                let mut err = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", message.clone());
                if !field.is_empty() && !field.contains(' ') {
                    err.causes.push(Cause {
                        field: field.to_string(),
                        message: what.to_string(),
                        reason: "FieldValueInvalid".into(),
                    });
                }
                err
            }
            // Nothing of the write was stored; deleting objects frees room.
            StoreError::Io(_) if e.is_disk_full() => ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "InternalError",
                format!("{message}: nothing was written; delete objects or free disk space on the data directory"),
            ),
            StoreError::Io(_) => ApiError::internal(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_map_to_kubernetes_reasons() {
        let key = ObjectKey::new("v1", "Pod", "default", "p");
        let e = ApiError::from(StoreError::Conflict { key: key.clone(), expected: 1, actual: 2 });
        assert_eq!((e.code.as_u16(), e.reason), (409, "Conflict"));
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on pods \"p\": the object has been modified; \
             please apply your changes to the latest version and try again"
        );
        let s = ApiError::from(StoreError::NotFound(key.clone())).to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["message"], "pods \"p\" not found");
        assert_eq!(s["details"], json!({"name": "p", "kind": "pods"}));
        let s = ApiError::from(StoreError::AlreadyExists(key)).to_status();
        assert_eq!(
            (s["reason"].as_str(), s["message"].as_str()),
            (Some("AlreadyExists"), Some("pods \"p\" already exists"))
        );
        let job = ObjectKey::new("kubeflow.org/v1", "PyTorchJob", "default", "j");
        let s = ApiError::from(StoreError::NotFound(job)).to_status();
        assert_eq!(s["message"], "pytorchjobs.kubeflow.org \"j\" not found");
        assert_eq!(s["details"]["group"], "kubeflow.org");
        let s = ApiError::from(StoreError::Invalid("metadata.name: required".into())).to_status();
        assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
        let e = ApiError::from(StoreError::Expired { requested: 1, oldest: 5 });
        assert_eq!((e.code.as_u16(), e.reason), (410, "Expired"));
    }

    #[test]
    fn invalid_reads_as_kube_apiserver_writes_it() {
        let one = [FieldError::new("spec.replicas", "-1", "must be greater than or equal to 0")];
        let s = ApiError::invalid("PyTorchJob.kubeflow.org", "j", &one).to_status();
        assert_eq!(
            s["message"],
            "PyTorchJob.kubeflow.org \"j\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(s["details"]["kind"], "PyTorchJob");
        assert_eq!(s["details"]["group"], "kubeflow.org");
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueInvalid");
        let two = [FieldError::missing("spec.a", "set it"), FieldError::new("spec.b", "\"x\"", "not allowed")];
        let e = ApiError::invalid("Pod", "p", &two);
        assert_eq!(
            e.message,
            "Pod \"p\" is invalid: [spec.a: Required value: set it, spec.b: Invalid value: \"x\": not allowed]"
        );
        assert_eq!(e.causes[0].reason, "FieldValueRequired");
        let s = ApiError::too_large(10).to_status();
        assert_eq!((s["code"].as_u64(), s["reason"].as_str()), (Some(413), Some("RequestEntityTooLarge")));
    }
}
