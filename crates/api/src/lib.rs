//! Object types of ringleader: parsing of multi-document YAML/JSON, per-kind validation, and the internal job model every job kind normalises into.
