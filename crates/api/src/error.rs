//! Errors a user sees: problems with one field of one document, and problems
//! reading or parsing a whole source.

use serde::Serialize;
use std::fmt;

/// One problem with one field of a document: where, what was there, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    /// Field path, e.g. `spec.replicaSpecs.Worker.template.spec.containers[0].name`.
    pub field: String,
    /// The offending value as written (JSON text), or empty when the field is missing.
    pub value: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl FieldError {
    /// An error about `field` holding `value`.
    pub fn new(field: impl Into<String>, value: impl fmt::Display, message: impl Into<String>) -> Self {
        FieldError { field: field.into(), value: value.to_string(), message: message.into() }
    }

    /// An error about a required field that is absent.
    pub fn missing(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { field: field.into(), value: String::new(), message: message.into() }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}: {}", self.field, self.message)
        } else {
            write!(f, "{}: {}: {}", self.field, self.value, self.message)
        }
    }
}

/// A source that could not be read or is not well-formed YAML/JSON.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The path could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The path as the user gave it.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The text is not well-formed YAML or JSON.
    #[error("{path}: document {index}: not valid YAML/JSON: {message}")]
    Syntax {
        /// The path as the user gave it.
        path: String,
        /// Index of the document in the stream (0-based).
        index: usize,
        /// The parser's message, with line and column.
        message: String,
    },
}
