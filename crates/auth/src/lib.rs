//! Authentication and authorization, for the API server and for the
//! agent's and manager's own endpoints: who a bearer token is
//! ([`identity`]: the admin token, the token registry, node and component
//! identities), what a request asks in RBAC's terms ([`attributes`]),
//! whether the store's Roles and Bindings allow it ([`rbac`]), a 403 worded
//! as Kubernetes words it, and checks delegated to the API server by the
//! endpoints that hold no store ([`delegated`]: TokenReview and
//! SubjectAccessReview). The protobuf SelfSubjectAccessReview kubectl sends
//! is decoded in [`ssar_protobuf`].

pub mod access_key;
pub mod attributes;
pub mod delegated;
pub mod identity;
pub mod rbac;
pub mod sa_token;
pub mod ssar_protobuf;

pub use attributes::{forbidden, Attributes};
pub use identity::Identity;
