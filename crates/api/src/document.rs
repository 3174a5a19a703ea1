//! Reading sources (files, directories, stdin) into documents: multi-document
//! YAML and JSON, with `v1 List` objects expanded into their items.

use crate::error::LoadError;
use serde::Deserialize;
use std::io::Read;
use std::path::{Path, PathBuf};

/// One document of a source, not yet typed.
#[derive(Debug, Clone)]
pub struct Document {
    /// Where it came from, as the user named it (`-` for stdin).
    pub source: String,
    /// Position among the non-empty documents of the source (0-based).
    pub index: usize,
    /// The document as a JSON value.
    pub value: serde_json::Value,
}

/// Splits `text` into its documents. Empty documents (a stray `---`) are skipped.
pub fn parse_str(source: &str, text: &str) -> Result<Vec<Document>, LoadError> {
    let mut docs = Vec::new();
    for (stream_index, de) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value = serde_json::Value::deserialize(de).map_err(|e| LoadError::Syntax {
            path: source.to_string(),
            index: stream_index,
            message: e.to_string(),
        })?;
        match value {
            serde_json::Value::Null => {}
            serde_json::Value::Object(ref map) if map.get("kind").and_then(|k| k.as_str()) == Some("List") => {
                if let Some(items) = map.get("items").and_then(|i| i.as_array()) {
                    for item in items {
                        docs.push(Document { source: source.to_string(), index: docs.len(), value: item.clone() });
                    }
                }
            }
            value => docs.push(Document { source: source.to_string(), index: docs.len(), value }),
        }
    }
    Ok(docs)
}

/// Extensions read when a directory is given.
const EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// Reads every document of `path`: a file, a directory (its `.yaml`, `.yml`
/// and `.json` files, recursively, in name order) or `-` for stdin.
/// Each source is read whole before parsing, so a broken one yields an error
/// and nothing of it.
pub fn load_path(path: &Path) -> Vec<Result<Vec<Document>, LoadError>> {
    let shown = path.display().to_string();
    if shown == "-" {
        let mut text = String::new();
        return vec![std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|source| LoadError::Read { path: shown.clone(), source })
            .and_then(|_| parse_str(&shown, &text))];
    }
    if path.is_dir() {
        let mut files = Vec::new();
        if let Err(source) = collect_files(path, &mut files) {
            return vec![Err(LoadError::Read { path: shown, source })];
        }
        return files.iter().map(|f| load_file(f)).collect();
    }
    vec![load_file(path)]
}

/// Reads every document of every path, in order; the first source that
/// cannot be read or parsed is the error.
pub fn load_all<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<Document>, LoadError> {
    let mut docs = Vec::new();
    for path in paths {
        for source in load_path(path.as_ref()) {
            docs.extend(source?);
        }
    }
    Ok(docs)
}

fn load_file(path: &Path) -> Result<Vec<Document>, LoadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read { path: shown.clone(), source })?;
    parse_str(&shown, &text)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            collect_files(&entry, out)?;
        } else if entry.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e)) {
            out.push(entry);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_documents_and_skips_empty_ones() {
        let docs = parse_str("t.yaml", "---\na: 1\n---\n---\nb: 2\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].index, 1);
        assert_eq!(docs[1].value["b"], 2);
    }

    #[test]
    fn reads_json_and_expands_lists() {
        let docs = parse_str("t.json", r#"{"apiVersion":"v1","kind":"List","items":[{"x":1},{"x":2}]}"#).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].value["x"], 2);
    }

    #[test]
    fn syntax_errors_name_the_document() {
        let err = parse_str("bad.yaml", "a: 1\n---\nb: [1, 2\n").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("bad.yaml: document 1: not valid YAML/JSON"), "{text}");
    }
}
