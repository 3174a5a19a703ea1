//! The expansion budget of a YAML body, counted before any value is built.
//!
//! YAML aliases repeat a node by reference: 5,000 aliases of one 100 KB
//! string make a 115 KB request that decodes to 500 MB (and took 4 GB to
//! build and store). So before a YAML body is decoded, one pass over its
//! parser events sums what the decoded body would hold, aliases expanded,
//! and refuses it once that passes [`limit`] of its size. The pass keeps one
//! number per anchor and per open collection, nothing of the values.
//!
//! The events come from `unsafe-libyaml`, the parser `serde_yaml_ng` itself
//! decodes with, rather than a second parser (`yaml-rust2`,
//! `saphyr-parser`): both passes then read the same bytes the same way, so
//! no document can look small to the check and large to the decoder; and it
//! is already built into the server. Its C-shaped API is wrapped here, in
//! the one place the crate uses `unsafe`.

use ringleader_registry::status::ApiError;
use std::collections::HashMap;
use std::mem::MaybeUninit;
use unsafe_libyaml as unsafe_yaml;

/// What each decoded node costs beyond its scalar bytes: a node is a
/// `serde_json::Value` (and a map slot or list slot), never free, so a body
/// of millions of empty aliases counts too.
const NODE_COST: u64 = 8;
/// Budget floor: small bodies may expand this much whatever their size.
const FLOOR: u64 = 1 << 20;
/// Budget per body byte.
const FACTOR: u64 = 10;

/// The most a body of `len` bytes may expand to: 10 × its size + 1 MiB.
pub(crate) fn limit(len: usize) -> u64 {
    (len as u64).saturating_mul(FACTOR).saturating_add(FLOOR)
}

/// Refuses (400) a YAML text whose decoded size, aliases expanded, would
/// pass [`limit`], or whose alias names a node that contains it. A syntax
/// error ends the pass quietly: the decoder meets the same error at the
/// same place and words it better.
pub(crate) fn check(text: &str) -> Result<(), ApiError> {
    let budget = limit(text.len());
    let mut parser = Parser::new(text.as_bytes());
    let mut count = Count::default();
    while let Some(event) = parser.next() {
        count.add(event).map_err(|why| refuse(why, budget))?;
        if count.expanded > budget {
            return Err(refuse(Why::TooLarge, budget));
        }
    }
    Ok(())
}

fn refuse(why: Why, budget: u64) -> ApiError {
    let message = match why {
        Why::TooLarge => format!(
            "YAML aliases would expand the body past the limit of {budget} bytes \
             (10 times its size + 1 MiB); write the repeated values out, or send JSON"
        ),
        Why::Recursive(anchor) => {
            format!("YAML alias *{anchor} refers to a node that contains it (its expansion has no end)")
        }
    };
    ApiError::bad_field("body", message)
}

enum Why {
    TooLarge,
    Recursive(String),
}

/// One parser event, reduced to what the count needs.
#[derive(Debug, PartialEq, Eq)]
enum Event {
    DocumentStart,
    Scalar { anchor: Option<Vec<u8>>, len: u64 },
    Start { anchor: Option<Vec<u8>> },
    End,
    Alias(Vec<u8>),
    Other,
}

/// The running count of one stream.
#[derive(Default)]
struct Count {
    /// Decoded size so far, aliases expanded.
    expanded: u64,
    /// Size of each anchored node of the current document.
    anchors: HashMap<Vec<u8>, u64>,
    /// Open collections: their anchor and size so far.
    open: Vec<(Option<Vec<u8>>, u64)>,
}

impl Count {
    fn add(&mut self, event: Event) -> Result<(), Why> {
        match event {
            Event::DocumentStart => {
                // Anchors are scoped to their document.
                self.anchors.clear();
                self.open.clear();
            }
            Event::Scalar { anchor, len } => {
                let size = NODE_COST.saturating_add(len);
                if let Some(anchor) = anchor {
                    self.anchors.insert(anchor, size);
                }
                self.grow(size);
            }
            Event::Start { anchor } => {
                self.expanded = self.expanded.saturating_add(NODE_COST);
                self.open.push((anchor, NODE_COST));
            }
            Event::End => {
                if let Some((anchor, size)) = self.open.pop() {
                    if let Some(anchor) = anchor {
                        self.anchors.insert(anchor, size);
                    }
                    if let Some(parent) = self.open.last_mut() {
                        parent.1 = parent.1.saturating_add(size);
                    }
                }
            }
            Event::Alias(anchor) => {
                if self.open.iter().any(|(a, _)| a.as_ref() == Some(&anchor)) {
                    return Err(Why::Recursive(String::from_utf8_lossy(&anchor).into_owned()));
                }
                // An unknown anchor is the decoder's error to report.
                let size = self.anchors.get(&anchor).copied().unwrap_or(0);
                self.grow(size);
            }
            Event::Other => {}
        }
        Ok(())
    }

    /// Counts a finished node of `size` into the total and its collection.
    fn grow(&mut self, size: u64) {
        self.expanded = self.expanded.saturating_add(size);
        if let Some(parent) = self.open.last_mut() {
            parent.1 = parent.1.saturating_add(size);
        }
    }
}

/// libyaml's event parser over a borrowed text.
struct Parser<'a> {
    // Boxed: libyaml's parser must not move once initialised.
    sys: Box<MaybeUninit<unsafe_yaml::yaml_parser_t>>,
    ready: bool,
    done: bool,
    _input: std::marker::PhantomData<&'a [u8]>,
}

impl<'a> Parser<'a> {
    fn new(input: &'a [u8]) -> Parser<'a> {
        let mut sys = Box::new(MaybeUninit::<unsafe_yaml::yaml_parser_t>::uninit());
        let parser = sys.as_mut_ptr();
        // SAFETY: `parser` points at writable, boxed (so pinned) memory that
        // initialize fills in; the input outlives the parser through 'a.
        let ready = unsafe {
            let ready = unsafe_yaml::yaml_parser_initialize(parser).ok;
            if ready {
                unsafe_yaml::yaml_parser_set_encoding(parser, unsafe_yaml::YAML_UTF8_ENCODING);
                unsafe_yaml::yaml_parser_set_input_string(parser, input.as_ptr(), input.len() as u64);
            }
            ready
        };
        Parser { sys, ready, done: !ready, _input: std::marker::PhantomData }
    }

    /// The next event, or `None` at the end of the stream or at the first error.
    fn next(&mut self) -> Option<Event> {
        if self.done {
            return None;
        }
        let parser = self.sys.as_mut_ptr();
        let mut raw = MaybeUninit::<unsafe_yaml::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised (else `done`); a successfully
        // parsed event is read according to its type, then freed once.
        unsafe {
            if unsafe_yaml::yaml_parser_parse(parser, raw.as_mut_ptr()).fail {
                self.done = true;
                return None;
            }
            let event = raw.as_mut_ptr();
            let out = match (*event).type_ {
                unsafe_yaml::YAML_STREAM_END_EVENT => {
                    self.done = true;
                    Event::Other
                }
                unsafe_yaml::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
                unsafe_yaml::YAML_SCALAR_EVENT => {
                    Event::Scalar { anchor: anchor((*event).data.scalar.anchor), len: (*event).data.scalar.length }
                }
                unsafe_yaml::YAML_SEQUENCE_START_EVENT => {
                    Event::Start { anchor: anchor((*event).data.sequence_start.anchor) }
                }
                unsafe_yaml::YAML_MAPPING_START_EVENT => {
                    Event::Start { anchor: anchor((*event).data.mapping_start.anchor) }
                }
                unsafe_yaml::YAML_SEQUENCE_END_EVENT | unsafe_yaml::YAML_MAPPING_END_EVENT => Event::End,
                unsafe_yaml::YAML_ALIAS_EVENT => Event::Alias(anchor((*event).data.alias.anchor).unwrap_or_default()),
                _ => Event::Other,
            };
            unsafe_yaml::yaml_event_delete(event);
            Some(out)
        }
    }
}

/// An anchor name: a NUL-terminated string owned by the event, or null.
///
/// # Safety
/// `ptr` is null or points at a NUL-terminated string.
unsafe fn anchor(ptr: *const u8) -> Option<Vec<u8>> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: as the caller promises.
    Some(unsafe { std::ffi::CStr::from_ptr(ptr.cast()) }.to_bytes().to_vec())
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        if self.ready {
            // SAFETY: initialised in `new`, deleted once here.
            unsafe { unsafe_yaml::yaml_parser_delete(self.sys.as_mut_ptr()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bomb(aliases: usize, len: usize) -> String {
        let mut text =
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\nbig: &s {}\ndata:\n", "a".repeat(len));
        for i in 0..aliases {
            text.push_str(&format!("  k{i}: *s\n"));
        }
        text
    }

    #[test]
    fn aliases_of_a_large_value_are_refused() {
        let text = bomb(5000, 100_000);
        let e = check(&text).err().map(|e| e.message).unwrap_or_default();
        assert!(e.contains("past the limit of") && e.contains("10 times its size + 1 MiB"), "{e}");
    }

    #[test]
    fn ordinary_documents_and_a_few_aliases_pass() {
        assert!(check(&bomb(5, 1000)).is_ok());
        assert!(check("a: 1\n---\nb: [1, 2, {c: d}]\n").is_ok());
        assert!(check("{\"json\": [1, 2, 3]}").is_ok());
        // Syntax errors are left to the decoder.
        assert!(check("a: [1, 2\n").is_ok());
    }

    #[test]
    fn nested_laughs_are_counted_by_nodes() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        assert!(check(&text).is_err());
    }

    #[test]
    fn an_alias_inside_its_own_anchor_is_refused() {
        let e = check("a: &x [1, *x]\n").err().map(|e| e.message).unwrap_or_default();
        assert!(e.contains("*x refers to a node that contains it"), "{e}");
    }

    #[test]
    fn anchors_do_not_leak_between_documents() {
        let mut count = Count::default();
        let _ = count.add(Event::Scalar { anchor: Some(b"a".to_vec()), len: 100 });
        let _ = count.add(Event::DocumentStart);
        let _ = count.add(Event::Alias(b"a".to_vec()));
        assert_eq!(count.expanded, NODE_COST + 100);
    }
}
