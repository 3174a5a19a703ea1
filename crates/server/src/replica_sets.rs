//! `apps/v1 ReplicaSet`s are the deployment controller's record of each
//! revision of a Deployment (`crates/manager/src/deployments.rs`); a bare
//! ReplicaSet would have no job to run its pods, so creating one through
//! the API is refused (405), as a read-mostly kind. Reading, deleting (the
//! controller makes it again) and scaling them are served.

use axum::http::StatusCode;
use ringleader_registry::status::ApiError;

/// The refusal of `POST …/replicasets`.
pub(crate) fn create_refused() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        "ReplicaSets are made by the deployment controller, one per revision of a Deployment: \
         create a Deployment (kubectl create deployment) instead",
    )
}
