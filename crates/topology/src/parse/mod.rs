//! Parsers of the text tools operators already have: `nvidia-smi topo -m`
//! and `npu-smi info`. Bad input gives a [`ParseError`] naming the line, the
//! token and what is allowed; nothing here panics on input.

pub mod npu_smi;
pub mod nvidia_smi;

use std::fmt;

/// A parse failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number (0 when the problem is not on one line).
    pub line: usize,
    /// The offending token (empty when none).
    pub token: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ParseError {
    pub(crate) fn new(line: usize, token: impl Into<String>, message: impl Into<String>) -> ParseError {
        ParseError { line, token: token.into(), message: message.into() }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        f.write_str(&self.message)?;
        if !self.token.is_empty() {
            write!(f, " (found {:?})", self.token)?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}

/// Removes ANSI escape sequences (`nvidia-smi` underlines its header with them).
pub(crate) fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}
