//! A job object as the manager handles it: stored, typed and as controller state.

use crate::cache::str_at;
use ringleader_api::Resource;
use ringleader_controller::JobState;
use ringleader_store::Stored;

/// A job object with its parsed forms.
pub struct JobObject {
    /// As stored.
    pub stored: Stored,
    /// Typed.
    pub resource: Resource,
    /// Controller state (spec + persisted status).
    pub state: JobState,
}

impl JobObject {
    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        str_at(&self.stored.object, &["metadata", "uid"]).unwrap_or_default()
    }
}
