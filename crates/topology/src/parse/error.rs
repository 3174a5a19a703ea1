//! [`ParseError`]: tool output that did not parse, with the line and why.

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
