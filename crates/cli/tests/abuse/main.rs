//! Hostile tenants: requests that expand, writes of fields only the
//! scheduler or the agent may set, connections that never finish. Each
//! module runs one kind of abuse against a real `ringleader up` and asserts
//! the cluster keeps answering and keeps its data.

#[path = "../common/mod.rs"]
mod common;
mod patch_bomb;
mod peak_memory;
mod ranges;
mod requests;
mod slow_clients;
mod templates;
