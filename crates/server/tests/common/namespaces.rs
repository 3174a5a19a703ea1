//! The namespaces the server tests write into: they exist, as an admin
//! would have made them (no manager runs in these tests to make a
//! workspace's); what namespaces themselves do is tested with names not
//! in this list.

use ringleader_store::{Store, StoreError};

/// See the module doc.
pub const TEST_NAMESPACES: &[&str] = &[
    "d",
    "a",
    "x",
    "y",
    "prod",
    "team",
    "other",
    "elsewhere",
    "ns2",
    "team-a",
    "team-b",
    "ws-a",
    "ws-b",
    "contract",
    "tls-a",
    "strategic",
    "read-only",
];

/// Creates [`TEST_NAMESPACES`] in a store no server has opened yet.
pub fn create(store: &Store) -> Result<(), StoreError> {
    for ns in TEST_NAMESPACES {
        store.create(ringleader_api::kinds::namespace::object(ns))?;
    }
    Ok(())
}
