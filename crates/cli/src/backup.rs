//! `ringleader backup` and `ringleader restore`: an online copy of a data
//! directory's store, and putting one back (the periodic backups `up` makes
//! are the plane's, in `plane/backups.rs`).

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct BackupArgs {
    /// Data directory of the store to copy (safe while `ringleader up` runs on it).
    #[arg(long, env = "RINGLEADER_DATA_DIR", default_value = "ringleader-data")]
    pub data_dir: PathBuf,
    /// File to write (replaced atomically: never half-written).
    pub out: PathBuf,
}

#[derive(Args)]
pub struct RestoreArgs {
    /// Data directory whose store is replaced (`ringleader up` must not be running on it).
    #[arg(long, env = "RINGLEADER_DATA_DIR", default_value = "ringleader-data")]
    pub data_dir: PathBuf,
    /// A file made by `ringleader backup` (checked before anything is replaced).
    pub file: PathBuf,
}

/// `up`'s store flags: starting empty on purpose, and periodic backups.
pub fn backup(args: BackupArgs) -> Result<()> {
    let version = ringleader_store::backup(&args.data_dir, &args.out)
        .with_context(|| format!("backing up {} into {}", args.data_dir.display(), args.out.display()))?;
    println!("backed up {} (resourceVersion {version}) into {}", args.data_dir.display(), args.out.display());
    Ok(())
}

pub fn restore(args: RestoreArgs) -> Result<()> {
    let (version, aside) = ringleader_store::restore(&args.data_dir, &args.file)
        .with_context(|| format!("restoring {} into {}", args.file.display(), args.data_dir.display()))?;
    println!("restored {} (resourceVersion {version}) into {}", args.file.display(), args.data_dir.display());
    if let Some(aside) = aside {
        println!("the store it replaced is kept as {}", aside.display());
    }
    Ok(())
}
