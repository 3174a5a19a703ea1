//! The errors one validation collects.

use crate::error::FieldError;

/// Every field error found so far, in the order found.
pub(super) type Errors = Vec<FieldError>;
