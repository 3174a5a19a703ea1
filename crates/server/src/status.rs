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
    /// `details.kind`.
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

    /// 405 MethodNotAllowed.
    pub fn method(method: &str, path: &str) -> ApiError {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("{method} is not supported on {path}"),
        )
    }

    /// 401 Unauthorized.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", message)
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    /// 422 Invalid: validation errors of one object.
    pub fn invalid(kind: &str, name: &str, errors: &[FieldError]) -> ApiError {
        let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        ApiError {
            code: StatusCode::UNPROCESSABLE_ENTITY,
            reason: "Invalid",
            message: format!("{kind} \"{name}\" is invalid: {}", lines.join("; ")),
            kind: Some(kind.to_string()),
            name: Some(name.to_string()),
            causes: errors.iter().map(cause_of).collect(),
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
            details.insert("kind".into(), json!(kind));
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

/// The `details.causes` entry of a validation error.
pub fn cause_of(e: &FieldError) -> Cause {
    let message = if e.value.is_empty() { e.message.clone() } else { format!("{}: {}", e.value, e.message) };
    let reason = if e.value.is_empty() { "FieldValueRequired" } else { "FieldValueInvalid" };
    Cause { field: e.field.clone(), message, reason: reason.into() }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.code, axum::Json(self.to_status())).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let message = e.to_string();
        let named = |key: &ObjectKey, err: ApiError| err.with_object(&key.kind, &key.name);
        match &e {
            StoreError::NotFound(key) => named(key, ApiError::new(StatusCode::NOT_FOUND, "NotFound", message)),
            StoreError::AlreadyExists(key) => named(key, ApiError::new(StatusCode::CONFLICT, "AlreadyExists", message)),
            StoreError::Conflict { key, .. } => named(key, ApiError::new(StatusCode::CONFLICT, "Conflict", message)),
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
        let s = ApiError::from(StoreError::NotFound(key)).to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["name"], "p");
        let s = ApiError::from(StoreError::Invalid("metadata.name: required".into())).to_status();
        assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
        let e = ApiError::from(StoreError::Expired { requested: 1, oldest: 5 });
        assert_eq!((e.code.as_u16(), e.reason), (410, "Expired"));
    }
}
