//! [`Invalid`]: a malformed source of a Node's hardware, before the node's
//! name is attached.

use std::fmt;

/// A malformed source, before the node name is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    /// `None`: the Node itself.
    pub(super) object: Option<String>,
    pub(super) field: String,
    pub(super) value: String,
    pub(super) message: String,
}

impl Invalid {
    pub(crate) fn new(
        object: &str,
        field: impl Into<String>,
        value: impl fmt::Display,
        message: impl Into<String>,
    ) -> Invalid {
        Invalid {
            object: Some(object.to_string()),
            field: field.into(),
            value: value.to_string(),
            message: message.into(),
        }
    }

    /// A problem in the Node object itself.
    pub(crate) fn node(field: impl Into<String>, value: impl fmt::Display, message: impl Into<String>) -> Invalid {
        Invalid { object: None, field: field.into(), value: value.to_string(), message: message.into() }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {:?}: {}", self.object.as_deref().unwrap_or("Node"), self.field, self.value, self.message)
    }
}
