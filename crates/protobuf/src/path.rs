//! A JSON-path stack for error messages; only formatted when something fails,
//! so the happy path pays a push/pop per field, not a string build.

use std::fmt;

#[derive(Debug, Clone)]
pub(crate) enum Seg {
    Field(String),
    Index(usize),
    Key(String),
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Path(Vec<Seg>);

impl Path {
    pub(crate) fn push(&mut self, seg: Seg) {
        self.0.push(seg);
    }
    pub(crate) fn pop(&mut self) {
        self.0.pop();
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        for seg in &self.0 {
            match seg {
                Seg::Field(name) => write!(f, ".{name}")?,
                Seg::Index(i) => write!(f, "[{i}]")?,
                Seg::Key(k) => write!(f, "[{k:?}]")?,
            }
        }
        Ok(())
    }
}
