//! The store flags of the embedded plane (`--reinit`, `--backup-interval`,
//! `--backup-dir`, `--backup-keep`) and the periodic backups they ask for.

use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Clone, Debug)]
pub struct StoreFlags {
    /// Start with an empty store: the existing one (refused as damaged, or
    /// not) is moved aside as `store.sqlite.reinit-<time>`, never deleted.
    #[arg(long)]
    pub reinit: bool,
    /// Seconds between online backups of the store (0: none).
    #[arg(long = "backup-interval", value_name = "SECONDS", default_value_t = 3600)]
    pub backup_interval: u64,
    /// Where periodic backups go. Default: `<data-dir>/backups` (put them on
    /// another disk to survive the data directory's).
    #[arg(long = "backup-dir", value_name = "DIR")]
    pub backup_dir: Option<PathBuf>,
    /// How many periodic backups are kept (the oldest go first).
    #[arg(long = "backup-keep", value_name = "N", default_value_t = 3)]
    pub backup_keep: usize,
}

impl Default for StoreFlags {
    fn default() -> Self {
        StoreFlags { reinit: false, backup_interval: 3600, backup_dir: None, backup_keep: 3 }
    }
}

/// Names sort by time, so the oldest are first.
const PREFIX: &str = "store-";

/// Makes one backup into `dir` and removes all but the newest `keep`.
pub fn periodic_backup(store: &ringleader_store::Store, dir: &Path, keep: usize) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    // Zero-padded Unix seconds: names sort as times do.
    let out = dir.join(format!("{PREFIX}{secs:012}.sqlite"));
    store.backup_to(&out).with_context(|| format!("backing up into {}", out.display()))?;
    let mut old: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(".sqlite"))
        })
        .collect();
    old.sort();
    let excess = old.len().saturating_sub(keep.max(1));
    for p in &old[..excess] {
        let _ = std::fs::remove_file(p);
    }
    Ok(out)
}

/// Backs the store up every `every` until `stop`; a failed backup is
/// logged and the next one tried on time (a full disk must not stop `up`).
pub async fn run_periodic(
    store: ringleader_store::Store,
    dir: PathBuf,
    keep: usize,
    every: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return Ok(()),
            _ = tick.tick() => {}
        }
        let (store, dir) = (store.clone(), dir.clone());
        match tokio::task::spawn_blocking(move || periodic_backup(&store, &dir, keep)).await {
            Ok(Ok(out)) => tracing::info!(file = %out.display(), "store backed up"),
            Ok(Err(e)) => tracing::warn!("periodic backup failed: {e:#}"),
            Err(e) => tracing::warn!("periodic backup failed: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periodic_backups_keep_the_newest_n() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let store = ringleader_store::Store::open(&dir.path().join("data"))?;
        let backups = dir.path().join("backups");
        std::fs::create_dir_all(&backups)?;
        // Older ones, as earlier runs left them; and a file of someone else's.
        for secs in [1u64, 2, 3] {
            std::fs::write(backups.join(format!("{PREFIX}{secs:012}.sqlite")), b"old")?;
        }
        std::fs::write(backups.join("notes.txt"), b"mine")?;
        let out = periodic_backup(&store, &backups, 2)?;
        let mut left: Vec<String> =
            std::fs::read_dir(&backups)?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        let newest = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        assert_eq!(left, vec!["notes.txt".to_string(), format!("{PREFIX}000000000003.sqlite"), newest]);
        assert!(ringleader_store::Store::open(&dir.path().join("data")).is_ok());
        Ok(())
    }
}
