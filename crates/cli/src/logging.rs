//! Diagnostics to stderr through `tracing`: what the server, manager and
//! agents log (warnings, 5xx, node and pod lifecycle) is otherwise invisible.
//! `RUST_LOG` filters as everywhere in the Rust ecosystem (`info` when unset
//! for long-running commands, `warn` for the others); `--log-format json`
//! writes one JSON object a line for log collectors.

use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line (timestamp, level, target, fields).
    Json,
}

/// Installs the global subscriber. `serving` picks the default level when
/// `RUST_LOG` is unset: `info` for `up`, `warn` for one-shot commands whose
/// stdout is their answer. A malformed `RUST_LOG` is reported, not fatal.
pub fn init(format: LogFormat, serving: bool) {
    let default = if serving { "info" } else { "warn" };
    let (filter, bad) = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => match EnvFilter::try_new(&spec) {
            Ok(f) => (f, None),
            Err(e) => (EnvFilter::new(default), Some(format!("RUST_LOG={spec:?}: {e}; using {default:?}"))),
        },
        _ => (EnvFilter::new(default), None),
    };
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    if installed.is_err() {
        return;
    }
    if let Some(warning) = bad {
        tracing::warn!("{warning}");
    }
}
