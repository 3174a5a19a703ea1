//! Hostile or broken input: always a clear error, never a panic.

use proptest::prelude::*;
use ringleader_protobuf::{decode, decode_watch_frame, encode, Error};
use serde_json::json;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
    put_varint(out, (field << 3) | 2);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Envelope built independently of the crate, from the field numbers in
/// k8s.io/apimachinery/pkg/runtime/generated.proto.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut tm = Vec::new();
    put_bytes(&mut tm, 1, api_version.as_bytes());
    put_bytes(&mut tm, 2, kind.as_bytes());
    let mut out = vec![0x6b, 0x38, 0x73, 0x00];
    put_bytes(&mut out, 1, &tm);
    put_bytes(&mut out, 2, raw);
    out
}

#[test]
fn hand_built_configmap_decodes() {
    // ConfigMap: metadata=1 (ObjectMeta: name=1, namespace=3), data=2 map entries.
    let mut meta = Vec::new();
    put_bytes(&mut meta, 1, b"cm");
    put_bytes(&mut meta, 3, b"ns");
    let mut entry = Vec::new();
    put_bytes(&mut entry, 1, b"k");
    put_bytes(&mut entry, 2, b"v");
    let mut raw = Vec::new();
    put_bytes(&mut raw, 1, &meta);
    put_bytes(&mut raw, 2, &entry);
    let got = decode(&envelope("v1", "ConfigMap", &raw)).unwrap();
    // A Time absent from the wire stays absent (only Go's empty message is null).
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cm", "namespace": "ns"}, "data": {"k": "v"}})
    );
}

#[test]
fn missing_magic() {
    let err = decode(b"{\"kind\":\"Pod\"}").unwrap_err();
    assert_eq!(err, Error::MissingMagic);
    assert!(err.to_string().contains("missing the k8s\\0 prefix"));
}

#[test]
fn truncated_varint_and_body() {
    let mut body = vec![0x6b, 0x38, 0x73, 0x00, 0x0a, 0xff];
    assert!(matches!(decode(&body).unwrap_err(), Error::Truncated { .. }));
    body = envelope("v1", "ConfigMap", &[0x0a, 0x10, 0x0a]);
    let err = decode(&body).unwrap_err();
    assert!(matches!(err, Error::Truncated { .. }), "{err}");
    assert!(decode(b"k8s").is_err());
}

#[test]
fn wrong_wire_type() {
    // ConfigMap.metadata (1) sent as a varint.
    let err = decode(&envelope("v1", "ConfigMap", &[0x08, 0x01])).unwrap_err();
    assert!(matches!(err, Error::WireType { number: 1, got: 0, .. }), "{err}");
    assert!(err.to_string().contains("metadata"), "{err}");
}

#[test]
fn unknown_kind() {
    let err = decode(&envelope("apps/v1", "Foo", &[])).unwrap_err();
    assert_eq!(err.to_string(), "no protobuf message for apps/v1 Foo");
    let err = encode(&json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"})).unwrap_err();
    assert_eq!(err.to_string(), "no protobuf message for kubeflow.org/v1 PyTorchJob");
    assert!(matches!(encode(&json!({"kind": "Pod"})).unwrap_err(), Error::MissingTypeMeta("apiVersion")));
}

#[test]
fn json_that_does_not_fit() {
    let err = encode(&json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": 5}]}})).unwrap_err();
    assert!(err.to_string().contains("$.spec.containers[0].name"), "{err}");
    assert!(err.to_string().contains("expected a string, got 5"), "{err}");
    let err = encode(&json!({"apiVersion": "v1", "kind": "Pod", "spec": {"bogus": 1}})).unwrap_err();
    assert!(err.to_string().contains("unknown field \"bogus\""), "{err}");
    let err = encode(&json!({"apiVersion": "v1", "kind": "Pod", "spec": {"priority": 4294967296u64}})).unwrap_err();
    assert!(err.to_string().contains("out of range for an int32"), "{err}");
    let err = encode(&json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}})).unwrap_err();
    assert!(err.to_string().contains("base64"), "{err}");
    let err = encode(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"creationTimestamp": "yesterday"}}))
        .unwrap_err();
    assert!(err.to_string().contains("RFC 3339"), "{err}");
}

#[test]
fn deeply_nested_raw_extension() {
    // meta.v1 WatchEvent.object is a RawExtension; nest enveloped
    // WatchEvents inside each other 100 deep.
    let mut body = envelope("v1", "Namespace", &[]);
    for _ in 0..100 {
        let mut raw_ext = Vec::new();
        put_bytes(&mut raw_ext, 1, &body);
        let mut ev = Vec::new();
        put_bytes(&mut ev, 1, b"ADDED");
        put_bytes(&mut ev, 2, &raw_ext);
        body = envelope("v1", "WatchEvent", &ev);
    }
    let err = decode(&body).unwrap_err();
    assert!(matches!(err, Error::TooDeep { limit: 64, .. }), "{err}");
}

#[test]
fn many_empty_items_stay_bounded() {
    // 100k empty list items: 2 bytes each, one JSON value each.
    let raw: Vec<u8> = [0x12u8, 0x00].repeat(100_000);
    let got = decode(&envelope("v1", "NamespaceList", &raw)).unwrap();
    assert_eq!(got["items"].as_array().map(Vec::len), Some(100_000));
}

#[test]
fn watch_frames() {
    let status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                        "message": "too old resource version", "reason": "Expired", "code": 410});
    let frame = ringleader_protobuf::encode_watch_frame("ERROR", &status).unwrap();
    assert_eq!(u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize, frame.len() - 4);
    // The WatchEvent itself is not enveloped; its object is.
    assert_eq!(&frame[4..6], &[0x0a, 0x05]);
    let (ev, used) = decode_watch_frame(&frame).unwrap().unwrap();
    assert_eq!((ev.event_type.as_str(), used), ("ERROR", frame.len()));
    assert_eq!(ev.object, status);
    assert_eq!(decode_watch_frame(&frame[..frame.len() - 1]).unwrap(), None);
    let bookmark = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"resourceVersion": "12", "annotations": {"k8s.io/initial-events-end": "true"},
                     "creationTimestamp": null},
        "spec": {"containers": null}, "status": {}});
    let frame = ringleader_protobuf::encode_watch_frame("BOOKMARK", &bookmark).unwrap();
    assert_eq!(decode_watch_frame(&frame).unwrap().unwrap().0.event_type, "BOOKMARK");
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&body);
        let _ = decode_watch_frame(&body);
        let mut enveloped = vec![0x6b, 0x38, 0x73, 0x00];
        enveloped.extend_from_slice(&body);
        let _ = decode(&enveloped);
    }

    #[test]
    fn arbitrary_pod_bodies_never_panic(raw in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&envelope("v1", "Pod", &raw));
    }
}
