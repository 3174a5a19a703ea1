//! Watch streams (`application/vnd.kubernetes.protobuf;stream=watch`).
//!
//! Verified in k8s.io/apiserver@v0.33.13 pkg/endpoints/handlers/watch.go
//! (`serveWatchHandler`) and response.go (`watchEncoder.doEncode`), with
//! k8s.io/apimachinery@v0.32.4 pkg/runtime/serializer/codec_factory.go and
//! protobuf/protobuf.go:
//! - the event's object is encoded with the negotiated serializer, i.e. the
//!   enveloped form (`k8s\0` + Unknown), also for BOOKMARK and ERROR (Status);
//! - it goes into `metav1.WatchEvent{Type, Object: RawExtension{Raw}}`, which
//!   is encoded with the *stream* serializer, `protobuf.RawSerializer`: the
//!   WatchEvent itself has NO magic and NO Unknown envelope;
//! - `protobuf.LengthDelimitedFramer` (pkg/util/framer/framer.go) writes a
//!   4-byte big-endian length before each WatchEvent.
//!
//! client-go reads it back the same way (rest/request.go `newStreamWatcher`:
//! framer reader + streaming decoder with the raw serializer).

use serde_json::Value;

use crate::envelope;
use crate::path::Path;
use crate::to_json::{self, Decoder};
use crate::wire::{self, put_bytes, Reader};
use crate::Error;

/// Encodes one watch event as a length-prefixed frame; the object as
/// [`crate::encode_lenient`] writes it (a stream cannot fall back to JSON
/// for one event).
pub fn encode_watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, Error> {
    let embedded = envelope::encode_object(object, &mut Path::default(), 0, true)?;
    let mut raw_ext = Vec::with_capacity(embedded.len() + 4);
    put_bytes(&mut raw_ext, 1, &embedded);
    let mut event = Vec::with_capacity(raw_ext.len() + event_type.len() + 8);
    put_bytes(&mut event, 1, event_type.as_bytes());
    put_bytes(&mut event, 2, &raw_ext);
    let len = u32::try_from(event.len())
        .map_err(|_| Error::Frame(format!("event of {} bytes does not fit a 4-byte length", event.len())))?;
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event);
    Ok(frame)
}

/// A decoded watch event.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchEvent {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: String,
    /// The object as Kubernetes JSON (a `Status` for `ERROR`).
    pub object: Value,
}

/// Decodes the first frame of `stream`; returns the event and the number of
/// bytes it used, or `Ok(None)` if `stream` does not yet hold a whole frame.
pub fn decode_watch_frame(stream: &[u8]) -> Result<Option<(WatchEvent, usize)>, Error> {
    let Some((len, rest)) = stream.split_first_chunk::<4>() else {
        return Ok(None);
    };
    let len = u32::from_be_bytes(*len) as usize;
    let Some(event) = rest.get(..len) else {
        return Ok(None);
    };
    let frame_err = |e: wire::WireError| Error::Frame(format!("malformed WatchEvent: {e:?}"));
    let (mut event_type, mut raw) = (None, None);
    let mut r = Reader::new(event);
    while !r.is_empty() {
        match r.key().map_err(frame_err)? {
            (1, wire::LEN) => {
                event_type = Some(String::from_utf8_lossy(r.len_delimited().map_err(frame_err)?).into_owned())
            }
            (2, wire::LEN) => {
                let ext = r.len_delimited().map_err(frame_err)?;
                let mut er = Reader::new(ext);
                while !er.is_empty() {
                    match er.key().map_err(frame_err)? {
                        (1, wire::LEN) => raw = Some(er.len_delimited().map_err(frame_err)?),
                        (_, wt) => er.skip(wt).map_err(frame_err)?,
                    }
                }
            }
            (_, wt) => r.skip(wt).map_err(frame_err)?,
        }
    }
    let event_type = event_type.ok_or_else(|| Error::Frame("WatchEvent has no type".into()))?;
    let raw = raw.ok_or_else(|| Error::Frame(format!("{event_type} WatchEvent has no object")))?;
    let object = to_json::decode_object(&mut Decoder::for_body(raw.len()), raw, &mut Path::default(), 0)?;
    Ok(Some((WatchEvent { event_type, object }, 4 + len)))
}
