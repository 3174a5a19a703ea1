//! `ringleader profiles`: owned by the topology work (issue 3). Placeholder until it lands.

#[derive(clap::Args)]
pub struct ProfilesArgs {}

pub fn run(_args: ProfilesArgs) -> anyhow::Result<u8> {
    anyhow::bail!("profiles: not built yet")
}
