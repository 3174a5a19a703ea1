//! A file kept under one key of a ConfigMap, as pods take it
//! (`ringleader.io/config-files`): the text in `data[<key>]`, or — for a file
//! too large for a ConfigMap (kube-apiserver refuses more than 1 MiB; a
//! 5,000-pod `hccl.json` is about 3 MB) — gzip-compressed in
//! `binaryData["<key>.gz"]`, with a small placeholder in `data[<key>]`.
//!
//! Why a placeholder rather than no `data` key: kube-apiserver's side of a
//! rewrite is a merge patch, which keeps the keys it does not name, so a
//! table that grew past the threshold would otherwise leave the previous
//! text (`{"status":"initializing"}`) beside the packed one; and a reader
//! that only knows `data` (a stock kubelet's volume, MindCluster's scripts)
//! finds a JSON document whose `status` is neither `initializing` nor
//! `completed` and that names where the content went, rather than a stale
//! table or a missing file.

use k8s_openapi::ByteString;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// Texts longer than this (bytes) are packed: half of kube-apiserver's
/// 1 MiB ConfigMap limit, so the other keys and metadata always fit.
pub const PACK_ABOVE: usize = 512 * 1024;

/// Most bytes a packed file may expand to: a 20,000-pod `hccl.json` is
/// about 12 MB; anything far larger is hostile (a gzip bomb).
pub const MAX_UNPACKED: usize = 64 * 1024 * 1024;

/// `status` of the placeholder left in `data[<key>]`.
pub const PACKED_STATUS: &str = "packed";

/// Why a ConfigMap file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// `data[<key>]` is the placeholder but `binaryData["<key>.gz"]` is absent.
    #[error("data[{key:?}] says the file is packed, but binaryData has no key {packed:?}")]
    PackedMissing {
        /// The `data` key.
        key: String,
        /// The `binaryData` key it names.
        packed: String,
    },
    /// `binaryData["<key>.gz"]` is not base64 / not a string.
    #[error("binaryData[{packed:?}]: not base64: {message}")]
    NotBase64 {
        /// The `binaryData` key.
        packed: String,
        /// What the decoder said.
        message: String,
    },
    /// Not a gzip stream.
    #[error("binaryData[{packed:?}]: not gzip: {message}")]
    NotGzip {
        /// The `binaryData` key.
        packed: String,
        /// What the decoder said.
        message: String,
    },
    /// Expands past the limit.
    #[error("binaryData[{packed:?}]: expands to more than {limit} bytes (the limit for a packed file)")]
    TooLarge {
        /// The `binaryData` key.
        packed: String,
        /// The limit, bytes.
        limit: usize,
    },
    /// Expands to bytes that are not UTF-8.
    #[error("binaryData[{packed:?}]: the unpacked file is not UTF-8 text")]
    NotUtf8 {
        /// The `binaryData` key.
        packed: String,
    },
}

/// `binaryData` key of the packed form of `key`.
pub fn packed_key(key: &str) -> String {
    format!("{key}.gz")
}

/// The placeholder left in `data[<key>]` when the text is packed.
pub fn placeholder(key: &str, bytes: usize) -> String {
    let packed = Value::String(packed_key(key));
    format!(r#"{{"status":"{PACKED_STATUS}","encoding":"gzip","binaryData":{packed},"bytes":{bytes}}}"#)
}

/// Whether `text` is a [`placeholder`].
pub fn is_placeholder(text: &str) -> bool {
    // Cheap on a 3 MB table: only short texts of the right shape are parsed.
    text.len() <= 256
        && text.starts_with(r#"{"status":"packed""#)
        && serde_json::from_str::<Value>(text)
            .is_ok_and(|v| v.get("status").and_then(Value::as_str) == Some(PACKED_STATUS))
}

/// gzip of `text` (deterministic: no name, time 0, so the same text gives
/// the same bytes and an unchanged file rewrites to an unchanged object).
pub fn gzip(text: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(text.len() / 8), flate2::Compression::default());
    encoder.write_all(text)?;
    encoder.finish()
}

/// The bytes `packed` expands to, refused past `limit` without reading
/// further. `name` names the `binaryData` key in errors.
pub fn gunzip(packed: &[u8], limit: usize, name: &str) -> Result<Vec<u8>, FileError> {
    let mut out = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    flate2::read::GzDecoder::new(packed)
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|e| FileError::NotGzip { packed: name.to_string(), message: e.to_string() })?;
    if out.len() > limit {
        return Err(FileError::TooLarge { packed: name.to_string(), limit });
    }
    Ok(out)
}

/// Puts `text` under `key`: in `data` as is up to [`PACK_ABOVE`] bytes;
/// above, a [`placeholder`] in `data` and the gzip in `binaryData`.
pub fn put(
    data: &mut BTreeMap<String, String>,
    binary: &mut BTreeMap<String, ByteString>,
    key: &str,
    text: &str,
) -> std::io::Result<()> {
    if text.len() <= PACK_ABOVE {
        data.insert(key.to_string(), text.to_string());
        return Ok(());
    }
    binary.insert(packed_key(key), ByteString(gzip(text.as_bytes())?));
    data.insert(key.to_string(), placeholder(key, text.len()));
    Ok(())
}

/// The text of `key` in a ConfigMap object (JSON as stored): `data[<key>]`,
/// or the unpacked `binaryData["<key>.gz"]` when `data[<key>]` is the
/// placeholder or absent. `Ok(None)`: neither is there.
pub fn read(config_map: &Value, key: &str) -> Result<Option<String>, FileError> {
    read_within(config_map, key, MAX_UNPACKED)
}

/// [`read`] with the unpacked size bounded by `limit`.
pub fn read_within(config_map: &Value, key: &str, limit: usize) -> Result<Option<String>, FileError> {
    let plain = config_map.get("data").and_then(|d| d.get(key)).and_then(Value::as_str);
    let packed_name = packed_key(key);
    let shown_placeholder = match plain {
        Some(text) if !is_placeholder(text) => return Ok(Some(text.to_string())),
        Some(_) => true,
        None => false,
    };
    let Some(encoded) = config_map.get("binaryData").and_then(|d| d.get(&packed_name)) else {
        if shown_placeholder {
            return Err(FileError::PackedMissing { key: key.to_string(), packed: packed_name });
        }
        return Ok(None);
    };
    let bytes: ByteString = serde_json::from_value(encoded.clone())
        .map_err(|e| FileError::NotBase64 { packed: packed_name.clone(), message: e.to_string() })?;
    let unpacked = gunzip(&bytes.0, limit, &packed_name)?;
    String::from_utf8(unpacked).map(Some).map_err(|_| FileError::NotUtf8 { packed: packed_name })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_map(text: &str) -> Value {
        let (mut data, mut binary) = (BTreeMap::new(), BTreeMap::new());
        put(&mut data, &mut binary, "hccl.json", text).expect("gzip into memory");
        let cm = k8s_openapi::api::core::v1::ConfigMap {
            data: Some(data),
            binary_data: (!binary.is_empty()).then_some(binary),
            ..Default::default()
        };
        serde_json::to_value(cm).expect("a ConfigMap serializes")
    }

    /// A JSON text of exactly `len` bytes.
    fn text_of(len: usize) -> String {
        let body = "x".repeat(len - r#"{"a":""}"#.len());
        format!(r#"{{"a":"{body}"}}"#)
    }

    #[test]
    fn texts_up_to_the_threshold_stay_plain() {
        for len in [10, PACK_ABOVE] {
            let text = text_of(len);
            let cm = config_map(&text);
            assert_eq!(cm.pointer("/data/hccl.json").and_then(Value::as_str), Some(text.as_str()));
            assert!(cm.get("binaryData").is_none(), "{len} bytes: no binaryData");
            assert_eq!(read(&cm, "hccl.json"), Ok(Some(text)));
        }
    }

    #[test]
    fn texts_past_the_threshold_are_packed_and_read_back_whole() {
        let text = text_of(PACK_ABOVE + 1);
        let cm = config_map(&text);
        let shown = cm.pointer("/data/hccl.json").and_then(Value::as_str).unwrap_or_default();
        assert!(is_placeholder(shown), "{shown}");
        assert_eq!(
            serde_json::from_str::<Value>(shown).ok(),
            Some(
                json!({"status": "packed", "encoding": "gzip", "binaryData": "hccl.json.gz", "bytes": PACK_ABOVE + 1})
            )
        );
        let encoded = cm.pointer("/binaryData/hccl.json.gz").and_then(Value::as_str).unwrap_or_default();
        assert!(encoded.len() < text.len() / 10, "{} base64 bytes for {} of text", encoded.len(), text.len());
        assert_eq!(read(&cm, "hccl.json"), Ok(Some(text.clone())));
        // Without the placeholder (a writer that leaves `data` out) the packed key is read too.
        let mut bare = cm.clone();
        bare["data"] = json!({});
        assert_eq!(read(&bare, "hccl.json"), Ok(Some(text)));
        assert_eq!(gzip(b"same").ok(), gzip(b"same").ok(), "deterministic");
    }

    #[test]
    fn plain_data_wins_over_a_stale_packed_key() {
        let mut cm = config_map(&text_of(PACK_ABOVE * 2));
        cm["data"]["hccl.json"] = json!(r#"{"status":"initializing"}"#);
        assert_eq!(read(&cm, "hccl.json"), Ok(Some(r#"{"status":"initializing"}"#.to_string())));
        assert_eq!(read(&json!({"data": {"other": "x"}}), "hccl.json"), Ok(None));
        assert_eq!(read(&json!({}), "hccl.json"), Ok(None));
    }

    #[test]
    fn hostile_packed_files_are_refused_with_the_key_named() {
        let packed = config_map(&text_of(PACK_ABOVE + 10));
        // Expands past the bound: stopped there, not read to the end.
        let err = read_within(&packed, "hccl.json", 1024).err();
        assert_eq!(err, Some(FileError::TooLarge { packed: "hccl.json.gz".into(), limit: 1024 }));
        assert!(err.is_some_and(|e| e.to_string().contains("more than 1024 bytes")));

        let mut missing = packed.clone();
        missing["binaryData"] = json!({});
        let err = read(&missing, "hccl.json").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("binaryData has no key \"hccl.json.gz\""), "{err}");

        let mut not_base64 = packed.clone();
        not_base64["binaryData"]["hccl.json.gz"] = json!("%%%");
        assert!(matches!(read(&not_base64, "hccl.json"), Err(FileError::NotBase64 { .. })));

        let mut not_gzip = packed.clone();
        not_gzip["binaryData"]["hccl.json.gz"] = json!("aGVsbG8gd29ybGQ="); // "hello world"
        let err = read(&not_gzip, "hccl.json").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.starts_with("binaryData[\"hccl.json.gz\"]: not gzip"), "{err}");

        let bytes = gzip(&[0xff, 0xfe, 0x00]).unwrap_or_default();
        let not_utf8 =
            json!({"binaryData": {"hccl.json.gz": serde_json::to_value(ByteString(bytes)).unwrap_or_default()}});
        assert!(matches!(read(&not_utf8, "hccl.json"), Err(FileError::NotUtf8 { .. })));
    }

    #[test]
    fn gunzip_stops_at_the_limit() {
        let zeros = gzip(&vec![b'0'; 1 << 20]).unwrap_or_default();
        assert!(zeros.len() < 4096, "a megabyte of zeros packs small");
        assert_eq!(gunzip(&zeros, 1 << 20, "k").map(|v| v.len()), Ok(1 << 20));
        assert!(matches!(gunzip(&zeros, (1 << 20) - 1, "k"), Err(FileError::TooLarge { .. })));
    }
}
