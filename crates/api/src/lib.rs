//! Object types of ringleader: parsing of multi-document YAML/JSON, per-kind
//! validation, and the internal job model every job kind normalises into.
//!
//! The walk of one document: [`document::load_path`] reads sources into
//! [`Document`]s; [`validate::check_documents`] types each one
//! ([`Resource::from_value`], dispatching on `apiVersion` + `kind`) and
//! validates it, reporting every [`FieldError`] with its field path;
//! [`Job::from_resource`] normalises a valid job of any kind into the one
//! [`Job`] model the controller and the scheduler read.

pub mod ascend;
pub mod configmap_file;
pub mod devices;
pub mod document;
pub mod error;
pub mod kinds;
pub mod model;
pub mod path;
pub mod protected;
pub mod quantity;
pub mod roles;
pub mod time;
pub mod validate;

pub use devices::{DeviceKind, DeviceRequest};
pub use document::Document;
pub use error::{FieldError, LoadError};
pub use kinds::Resource;
pub use model::Job;
pub use validate::{check_documents, validate, Report};
