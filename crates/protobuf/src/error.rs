//! The one error type: every message names what was wrong and where, since
//! callers mostly turn these into a `Status` for a client to read.

/// Why a body could not be decoded or an object could not be encoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("body is not a Kubernetes protobuf object: missing the k8s\\0 prefix (6b 38 73 00)")]
    MissingMagic,
    #[error("truncated protobuf in {message} at {path}: {detail}")]
    Truncated { message: String, path: String, detail: String },
    #[error("malformed protobuf in {message} at {path}: {detail}")]
    Malformed { message: String, path: String, detail: String },
    #[error("wrong wire type for {message}.{field} (#{number}) at {path}: expected {expected}, got wire type {got}")]
    WireType { message: String, field: String, number: u32, path: String, expected: &'static str, got: u8 },
    #[error("no protobuf message for {api_version} {kind}")]
    UnknownKind { api_version: String, kind: String },
    #[error("object has no string `{0}`, so its protobuf message is unknown")]
    MissingTypeMeta(&'static str),
    #[error("nesting deeper than {limit} levels at {path}")]
    TooDeep { limit: usize, path: String },
    #[error("body expands to more than {limit} JSON values; refusing to decode it")]
    TooLarge { limit: usize },
    #[error("JSON at {path} does not fit {message}: {detail}")]
    Json { path: String, message: String, detail: String },
    #[error("watch frame: {0}")]
    Frame(String),
}
