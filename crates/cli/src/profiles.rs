//! `ringleader profiles`: list the built-in hardware profiles, show one
//! (`profiles show NAME`: groups, link matrix, vNPU templates), or read
//! `nvidia-smi topo -m` / `npu-smi info` output into a profile
//! (`profiles parse --nvidia-smi FILE`).

use anyhow::{bail, Context};
use ringleader_topology::parse::{npu_smi, nvidia_smi};
use ringleader_topology::profile::{GroupKind, LinkSpeeds, Profile};
use ringleader_topology::{builtin, builtin_names, builtins, DeviceSet};
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ProfilesArgs {
    #[command(subcommand)]
    command: Option<ProfilesCommand>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text", global = true)]
    output: Output,
}

#[derive(clap::Subcommand)]
enum ProfilesCommand {
    /// List the built-in profiles (the default).
    List,
    /// Show one profile: devices, rings or cards, link matrix, NICs, vNPU templates.
    Show {
        /// Profile name, e.g. `atlas-800-910` or `hgx-h100-8`.
        name: String,
    },
    /// Read tool output from a file (`-` for stdin) into a profile and show it.
    Parse {
        /// Output of `nvidia-smi topo -m`.
        #[arg(long, conflicts_with = "npu_smi", required_unless_present = "npu_smi")]
        nvidia_smi: Option<PathBuf>,
        /// Output of `npu-smi info`.
        #[arg(long)]
        npu_smi: Option<PathBuf>,
        /// NVLink bandwidth per link and direction, GB/s (NVLink 2, 3 and 4: 25).
        #[arg(long, default_value_t = 25)]
        nvlink_gbps: u32,
        /// PCIe x16 bandwidth per direction, GB/s (Gen3 16, Gen4 32, Gen5 64).
        #[arg(long, default_value_t = 32)]
        pcie_gbps: u32,
        /// The GPUs cannot do PCIe peer-to-peer (e.g. RTX 4090).
        #[arg(long)]
        no_p2p: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Output {
    Text,
    Json,
}

pub fn run(args: ProfilesArgs) -> anyhow::Result<u8> {
    match args.command.unwrap_or(ProfilesCommand::List) {
        ProfilesCommand::List => {
            if args.output == Output::Json {
                println!("{}", serde_json::to_string_pretty(builtins())?);
            } else {
                print!("{}", list_text(builtins()));
            }
        }
        ProfilesCommand::Show { name } => {
            let Some(p) = builtin(&name) else {
                bail!("unknown profile {name:?} (known: {})", builtin_names().join(", "));
            };
            emit(p, args.output, DeviceSet::EMPTY)?;
        }
        ProfilesCommand::Parse { nvidia_smi, npu_smi, nvlink_gbps, pcie_gbps, no_p2p } => {
            if let Some(path) = nvidia_smi {
                let text = read(&path)?;
                let speeds = LinkSpeeds {
                    nvlink_mbps: nvlink_gbps.saturating_mul(1000),
                    pcie_mbps: pcie_gbps.saturating_mul(1000),
                    p2p: !no_p2p,
                };
                let p = nvidia_smi::profile_from_topo("parsed", &text, speeds, "GPU")
                    .with_context(|| format!("{}", path.display()))?;
                emit(&p, args.output, DeviceSet::EMPTY)?;
            } else if let Some(path) = npu_smi {
                let text = read(&path)?;
                let info = npu_smi::parse_info(&text).with_context(|| format!("{}", path.display()))?;
                let (p, unhealthy) =
                    npu_smi::profile_from_info(&info).with_context(|| format!("{}", path.display()))?;
                emit(&p, args.output, unhealthy)?;
            }
        }
    }
    Ok(0)
}

fn read(path: &PathBuf) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).context("reading stdin")?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

fn emit(p: &Profile, output: Output, unhealthy: DeviceSet) -> anyhow::Result<()> {
    match output {
        Output::Json => {
            #[derive(serde::Serialize)]
            struct Out<'a> {
                #[serde(flatten)]
                profile: &'a Profile,
                unhealthy: Vec<usize>,
            }
            println!("{}", serde_json::to_string_pretty(&Out { profile: p, unhealthy: unhealthy.to_vec() })?);
        }
        Output::Text => print!("{}", show_text(p, unhealthy)),
    }
    Ok(())
}

fn list_text(profiles: &[Profile]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<24}{:<8}{:>4}  {:<23}{:<17}{:<24}{:<12}DESCRIPTION",
        "NAME", "VENDOR", "DEV", "RESOURCE", "POLICY", "ACCELERATOR-TYPE", "VNPU"
    );
    for p in profiles {
        let vnpu = p.vnpu.as_ref().map_or("-".to_string(), |v| format!("{} tmpl", v.templates.len()));
        let _ = writeln!(
            out,
            "{:<24}{:<8}{:>4}  {:<23}{:<17}{:<24}{:<12}{}",
            p.name,
            p.vendor.to_string(),
            p.len(),
            p.resource_name,
            p.schedule_policy.map_or("-", |s| s.as_str()),
            p.accelerator_type.as_deref().unwrap_or("-"),
            vnpu,
            p.description
        );
    }
    out
}

fn gbps(mbps: u32) -> String {
    let (whole, frac) = (mbps / 1000, mbps % 1000);
    if frac == 0 {
        whole.to_string()
    } else {
        format!("{:.1}", f64::from(mbps) / 1000.0)
    }
}

fn show_text(p: &Profile, unhealthy: DeviceSet) -> String {
    let mut o = String::new();
    let field = |o: &mut String, k: &str, v: &str| {
        let _ = writeln!(o, "{:<18}{v}", format!("{k}:"));
    };
    field(&mut o, "name", &p.name);
    field(&mut o, "description", &p.description);
    field(&mut o, "vendor", &p.vendor.to_string());
    field(&mut o, "chip", &p.chip);
    field(&mut o, "resource", &p.resource_name);
    field(&mut o, "schedule_policy", p.schedule_policy.map_or("-", |s| s.as_str()));
    field(&mut o, "accelerator-type", p.accelerator_type.as_deref().unwrap_or("-"));
    field(&mut o, "allocator", &format!("{:?}", p.allocator));
    let names: Vec<String> = p
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let mut s = format!("{i}={}(id {})", d.name, d.id);
            if unhealthy.contains(i) {
                s.push_str(" UNHEALTHY");
            }
            s
        })
        .collect();
    field(&mut o, "devices", &format!("{}: {}", p.len(), names.join(", ")));
    let group_word = match p.group_kind {
        GroupKind::None => None,
        GroupKind::HccsRing => Some("HCCS rings"),
        GroupKind::UbRing => Some("UB rings"),
        GroupKind::Card => Some("cards"),
        GroupKind::Socket => Some("sockets"),
    };
    if let Some(word) = group_word {
        let groups: Vec<String> = p.groups.iter().enumerate().map(|(g, s)| format!("{g}: [{s}]")).collect();
        field(&mut o, word, &groups.join("  "));
    }
    let width = p.devices.iter().map(|d| d.name.len()).max().unwrap_or(4).max(6) + 2;
    let header = |o: &mut String, title: &str| {
        let _ = writeln!(o, "\n{title}");
        let _ = write!(o, "{:width$}", "");
        for d in &p.devices {
            let _ = write!(o, "{:>width$}", d.name);
        }
        let _ = writeln!(o);
    };
    header(&mut o, "links (connection):");
    for (i, row) in p.links.iter().enumerate() {
        let _ = write!(o, "{:width$}", p.devices[i].name);
        for l in row {
            let _ = write!(o, "{:>width$}", l.kind.code());
        }
        let _ = writeln!(o);
    }
    header(&mut o, "bandwidth (GB/s per direction, used for scoring):");
    for (i, row) in p.links.iter().enumerate() {
        let _ = write!(o, "{:width$}", p.devices[i].name);
        for (j, l) in row.iter().enumerate() {
            let cell = if i == j { "-".to_string() } else { gbps(l.mbps) };
            let _ = write!(o, "{cell:>width$}");
        }
        let _ = writeln!(o);
    }
    if !p.nics.is_empty() {
        let _ = writeln!(o, "\nNICs:");
        for nic in &p.nics {
            let near: Vec<String> =
                nic.links.iter().enumerate().map(|(i, k)| format!("{}:{k}", p.devices[i].name)).collect();
            let _ = writeln!(o, "  {:<10}{}", nic.name, near.join(" "));
        }
    }
    if let Some(v) = &p.vnpu {
        let _ = writeln!(
            o,
            "\nvNPU ({:?}; chip: {} AI cores, {} AI CPUs, {} GiB):",
            v.family, v.aicore, v.aicpu, v.mem_gib
        );
        let _ = writeln!(o, "  {:<18}{:>8}{:>8}{:>8}  DVPP", "TEMPLATE", "CORES", "AICPU", "GiB");
        for t in &v.templates {
            let _ = writeln!(o, "  {:<18}{:>8}{:>8}{:>8}  {:?}", t.name, t.aicore, t.aicpu, t.mem_gib, t.dvpp);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_names_every_profile() {
        let text = list_text(builtins());
        for name in builtin_names() {
            assert!(text.contains(name), "{name}");
        }
    }

    #[test]
    fn show_prints_rings_and_matrix() {
        let p = builtin("atlas-800-910").expect("builtin");
        let text = show_text(p, DeviceSet::EMPTY);
        assert!(text.contains("HCCS rings:       0: [0,1,2,3]  1: [4,5,6,7]"), "{text}");
        assert!(text.contains("chip4-node8"));
        let dgx = show_text(builtin("dgx-1-v100").expect("builtin"), DeviceSet::from_indices([2]));
        assert!(dgx.contains("NV2"), "{dgx}");
        assert!(dgx.contains("2=GPU2(id 2) UNHEALTHY"), "{dgx}");
    }
}
