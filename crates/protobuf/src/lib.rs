//! Codec between Kubernetes' protobuf wire format
//! (`application/vnd.kubernetes.protobuf`) and the JSON objects
//! (`serde_json::Value`) the server stores: the `k8s\0` envelope, the
//! per-kind messages of the built-in API groups (compiled from the vendored
//! .protos under `proto/`), Kubernetes' JSON conventions for apimachinery's
//! special types, and watch-stream framing. Custom resources have no
//! protobuf form (see [`supports`]) and stay JSON, as on Kubernetes.
//!
//! Decoding never panics and is bounded: nesting stops at 64 levels and the
//! decoded JSON may hold at most a few values per input byte.

mod envelope;
mod error;
mod from_json;
mod path;
mod schema;
mod shape;
mod special;
mod to_json;
mod watch;
mod wire;

pub use error::Error;
pub use watch::{decode_watch_frame, encode_watch_frame, WatchEvent};

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Whether `kind` in `api_version` has a protobuf message (a built-in
/// object or list kind, or a meta kind such as `Status`).
pub fn supports(api_version: &str, kind: &str) -> bool {
    schema::lookup(api_version, kind).is_ok()
}

/// Decodes an enveloped protobuf object into Kubernetes JSON, with
/// `apiVersion` and `kind` taken from the envelope.
pub fn decode(body: &[u8]) -> Result<serde_json::Value, Error> {
    let mut dec = to_json::Decoder::for_body(body.len());
    to_json::decode_object(&mut dec, body, &mut path::Path::default(), 0)
}

/// Encodes a Kubernetes JSON object (which names its `apiVersion` and
/// `kind`) as an enveloped protobuf object.
/// A field the Kubernetes type lacks is refused, naming its path.
pub fn encode(object: &serde_json::Value) -> Result<Vec<u8>, Error> {
    envelope::encode_object(object, &mut path::Path::default(), 0, false)
}

/// [`encode`], leaving out fields the Kubernetes type lacks (an object a
/// server stored with fields of its own), as Go's JSON decoding into the
/// type drops them; a value of the wrong type is still an error.
pub fn encode_lenient(object: &serde_json::Value) -> Result<Vec<u8>, Error> {
    envelope::encode_object(object, &mut path::Path::default(), 0, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_beyond_the_node_budget_is_refused() {
        // 200 empty namespaces in a list: 400 bytes of items, ~200 values.
        let mut raw = Vec::new();
        for _ in 0..200 {
            raw.extend_from_slice(&[0x12, 0x00]);
        }
        let body = encode_raw("v1", "NamespaceList", &raw);
        let mut dec = to_json::Decoder::with_limit(150);
        let err = to_json::decode_object(&mut dec, &body, &mut path::Path::default(), 0).unwrap_err();
        assert_eq!(err, Error::TooLarge { limit: 150 });
        // The default budget, proportional to the body, accepts it.
        assert!(decode(&body).is_ok());
    }

    fn encode_raw(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut tm = Vec::new();
        wire::put_bytes(&mut tm, 1, api_version.as_bytes());
        wire::put_bytes(&mut tm, 2, kind.as_bytes());
        let mut out = wire::MAGIC.to_vec();
        wire::put_bytes(&mut out, 1, &tm);
        wire::put_bytes(&mut out, 2, raw);
        out
    }

    #[test]
    fn go_durations() {
        for (ns, s) in [
            (0, "0s"),
            (3_600_000_000_000, "1h0m0s"),
            (30_000_000_000, "30s"),
            (1_500_000, "1.5ms"),
            (2_000, "2µs"),
            (5, "5ns"),
            (-90_000_000_000, "-1m30s"),
            (3_723_400_000_000, "1h2m3.4s"),
        ] {
            assert_eq!(special::format_duration(ns), s);
            assert_eq!(special::parse_duration(s), Ok(ns), "{s}");
        }
        assert_eq!(special::parse_duration("1.5h"), Ok(5_400_000_000_000));
        assert!(special::parse_duration("5 minutes").is_err());
        assert!(special::parse_duration("").is_err());
        assert!(special::parse_duration("9999999999h").is_err());
    }
}
