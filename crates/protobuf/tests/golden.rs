//! Against bytes written by Kubernetes' own Go serializer (k8s.io/api and
//! apimachinery v0.32.4; see testdata/gen/main.go, which also wrote the
//! .json next to each .pb with encoding/json).

use serde_json::Value;

fn golden(name: &str) -> (Vec<u8>, Value) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/");
    let pb = std::fs::read(format!("{dir}{name}.pb")).unwrap();
    let json = std::fs::read(format!("{dir}{name}.json")).unwrap();
    (pb, serde_json::from_slice(&json).unwrap())
}

const OBJECTS: &[&str] = &["configmap", "namespace", "pod", "service", "deployment", "status", "configmaplist"];

#[test]
fn decodes_go_bytes_to_go_json() {
    for name in OBJECTS {
        let (pb, json) = golden(name);
        assert_eq!(&pb[..4], b"k8s\0", "{name}");
        assert_eq!(ringleader_protobuf::decode(&pb).unwrap(), json, "{name}");
    }
}

#[test]
fn encodes_go_json_to_go_bytes() {
    for name in OBJECTS {
        let (pb, json) = golden(name);
        let ours = ringleader_protobuf::encode(&json).unwrap();
        assert_eq!(ours, pb, "{name}: bytes differ from Go's");
    }
}

#[test]
fn watch_frame_matches_go() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/");
    let frame = std::fs::read(format!("{dir}watch-added.pb")).unwrap();
    let (_, cm) = golden("configmap");
    assert_eq!(ringleader_protobuf::encode_watch_frame("ADDED", &cm).unwrap(), frame);
    let (event, used) = ringleader_protobuf::decode_watch_frame(&frame).unwrap().unwrap();
    assert_eq!(used, frame.len());
    assert_eq!(event.event_type, "ADDED");
    assert_eq!(event.object, cm);
}
