//! Parsers of the text tools operators already have: `nvidia-smi topo -m`
//! and `npu-smi info`. Bad input gives a [`ParseError`] naming the line, the
//! token and what is allowed; nothing here panics on input.

mod ansi;
mod error;
pub mod npu_smi;
pub mod nvidia_smi;

pub use error::ParseError;
