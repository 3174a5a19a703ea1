//! `ringleader sim`: owned by the simulator work (issue 7). Placeholder until it lands.

#[derive(clap::Args)]
pub struct SimArgs {}

pub fn run(_args: SimArgs) -> anyhow::Result<u8> {
    anyhow::bail!("sim: not built yet")
}
