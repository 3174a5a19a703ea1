//! A job object as the manager handles it: stored and as controller state.

use crate::cache::str_at;
use ringleader_controller::JobState;
use ringleader_store::Stored;
use std::sync::Arc;

/// A job object with its parsed form, both shared with the cache.
pub struct JobObject {
    /// As stored.
    pub stored: Arc<Stored>,
    /// Controller state (spec + persisted status).
    pub state: Arc<JobState>,
}

impl JobObject {
    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        str_at(&self.stored.object, &["metadata", "uid"]).unwrap_or_default()
    }
}
