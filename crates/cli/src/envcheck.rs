//! `ringleader envcheck`: run inside a pod, it checks the NCCL / HCCL / Gloo
//! settings of its env against the pod's real network (the interfaces of
//! `/sys/class/net`, the RDMA devices of `/sys/class/infiniband`) and its
//! rank table (`RANK_TABLE_FILE`). [`findings`] is pure over the env, the
//! `/sys` root and the rank table's text, so tests give it a temp dir.

use anyhow::Result;
use clap::Args;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct EnvcheckArgs {
    /// Root of the sysfs tree read (`class/net`, `class/infiniband`).
    #[arg(long, default_value = "/sys")]
    sys: PathBuf,
    /// Exit 1 when anything is warned about.
    #[arg(long)]
    strict: bool,
}

/// One thing found wrong with the env.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The variable.
    pub var: String,
    /// Its value (empty when unset).
    pub value: String,
    /// What is wrong and what would be right.
    pub message: String,
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Whether an interface list in NCCL's syntax (`eth`, `=eth0`, `^docker`,
/// comma-separated; prefix match unless `=`) selects any of `have`.
fn selects_any(spec: &str, have: &[String], prefix_match: bool) -> bool {
    let (exclude, list) = match spec.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, spec),
    };
    let (exact, list) = match list.strip_prefix('=') {
        Some(rest) => (true, rest),
        None => (!prefix_match, list),
    };
    let wanted: Vec<&str> =
        list.split(',').map(|w| w.trim().split(':').next().unwrap_or_default()).filter(|w| !w.is_empty()).collect();
    let matches = |i: &String| wanted.iter().any(|w| if exact { i == w } else { i.starts_with(w) });
    if exclude {
        have.iter().any(|i| !matches(i) && i != "lo")
    } else {
        have.iter().any(matches)
    }
}

/// Everything wrong with `env` on a pod whose sysfs is at `sys` and whose
/// rank table (if `RANK_TABLE_FILE` is set) has the text `rank_table`.
pub fn findings(env: &BTreeMap<String, String>, sys: &Path, rank_table: Option<&str>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut warn = |var: &str, message: String| {
        out.push(Finding { var: var.into(), value: env.get(var).cloned().unwrap_or_default(), message })
    };
    let nets = entries(&sys.join("class/net"));
    let ib = entries(&sys.join("class/infiniband"));
    let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    if get("NCCL_IB_DISABLE") == Some("1") && !ib.is_empty() {
        warn(
            "NCCL_IB_DISABLE",
            format!(
                "this node has RDMA devices ({}) but NCCL is told not to use them: its traffic goes over TCP sockets; unset it or set 0",
                ib.join(", ")
            ),
        );
    }
    if let Some(hca) = get("NCCL_IB_HCA") {
        if get("NCCL_IB_DISABLE") != Some("1") && !selects_any(hca, &ib, true) {
            let have = if ib.is_empty() { "none".to_string() } else { ib.join(", ") };
            warn("NCCL_IB_HCA", format!("selects no RDMA device of this node (have: {have})"));
        }
    }
    for (var, prefix) in [("NCCL_SOCKET_IFNAME", true), ("HCCL_SOCKET_IFNAME", true), ("GLOO_SOCKET_IFNAME", false)] {
        if let Some(v) = get(var) {
            if !selects_any(v, &nets, prefix) {
                warn(var, format!("names no network interface of this pod (have: {})", nets.join(", ")));
            }
        }
    }
    let num = |k: &str| get(k).map(|v| v.parse::<usize>().map_err(|_| v.to_string()));
    let rank = num("RANK");
    let world = num("WORLD_SIZE");
    for (var, v) in [("RANK", &rank), ("WORLD_SIZE", &world)] {
        if let Some(Err(bad)) = v {
            warn(var, format!("{bad:?} is not a number"));
        }
    }
    let (rank, world) = (rank.and_then(Result::ok), world.and_then(Result::ok));
    if let (Some(r), Some(w)) = (rank, world) {
        if r >= w {
            warn("RANK", format!("must be below WORLD_SIZE ({w})"));
        }
    }
    if let Some(path) = get("RANK_TABLE_FILE") {
        match rank_table.map(|text| ringleader_probe::RankTable::parse(text, path)) {
            None => warn("RANK_TABLE_FILE", "cannot be read".into()),
            Some(Err(e)) => warn("RANK_TABLE_FILE", format!("does not parse: {e}")),
            Some(Ok(table)) => {
                if let Some(w) = world.filter(|w| *w != table.world && *w != table.servers.len()) {
                    warn(
                        "WORLD_SIZE",
                        format!(
                            "{w} matches neither the rank table's {} devices nor its {} servers",
                            table.world,
                            table.servers.len()
                        ),
                    );
                }
                if let Some(r) = rank.filter(|r| *r >= table.servers.len()) {
                    warn("RANK", format!("{r} is past the rank table's {} servers", table.servers.len()));
                }
            }
        }
    } else if world.is_some_and(|w| w > 1) && get("MASTER_ADDR").is_none() {
        warn(
            "MASTER_ADDR",
            "WORLD_SIZE is above 1 but neither MASTER_ADDR nor RANK_TABLE_FILE says where to meet".into(),
        );
    }
    out
}

pub fn run(args: EnvcheckArgs) -> Result<u8> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let table = env.get("RANK_TABLE_FILE").and_then(|p| std::fs::read_to_string(p).ok());
    let found = findings(&env, &args.sys, table.as_deref());
    let nets = entries(&args.sys.join("class/net"));
    let ib = entries(&args.sys.join("class/infiniband"));
    println!(
        "interfaces: {}; RDMA devices: {}",
        if nets.is_empty() { "none".to_string() } else { nets.join(", ") },
        if ib.is_empty() { "none".to_string() } else { ib.join(", ") }
    );
    for f in &found {
        println!("WARN {}={:?}: {}", f.var, f.value, f.message);
    }
    if found.is_empty() {
        println!("OK: no NCCL/HCCL/Gloo setting contradicts this pod's network or rank table");
    }
    Ok(if args.strict && !found.is_empty() { 1 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sys(nets: &[&str], ib: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for (sub, names) in [("class/net", nets), ("class/infiniband", ib)] {
            for n in names {
                std::fs::create_dir_all(dir.path().join(sub).join(n)).expect("mkdir");
            }
        }
        dir
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn ib_disabled_on_an_ib_node_is_warned() {
        let d = sys(&["lo", "eth0", "ib0"], &["mlx5_0", "mlx5_1"]);
        let f = findings(&env(&[("NCCL_IB_DISABLE", "1")]), d.path(), None);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].var.as_str(), f[0].value.as_str()), ("NCCL_IB_DISABLE", "1"));
        assert!(f[0].message.contains("mlx5_0, mlx5_1"), "{f:?}");
        // Without IB devices it is right.
        let plain = sys(&["lo", "eth0"], &[]);
        assert!(findings(&env(&[("NCCL_IB_DISABLE", "1")]), plain.path(), None).is_empty());
    }

    #[test]
    fn a_socket_ifname_naming_a_missing_interface_is_warned() {
        let d = sys(&["lo", "eth0", "bond0"], &[]);
        let ok =
            env(&[("NCCL_SOCKET_IFNAME", "eth"), ("HCCL_SOCKET_IFNAME", "=bond0"), ("GLOO_SOCKET_IFNAME", "eth0")]);
        assert!(findings(&ok, d.path(), None).is_empty());
        let excluded = env(&[("NCCL_SOCKET_IFNAME", "^docker,lo")]);
        assert!(findings(&excluded, d.path(), None).is_empty());
        let bad = env(&[("NCCL_SOCKET_IFNAME", "ens"), ("HCCL_SOCKET_IFNAME", "=eth"), ("GLOO_SOCKET_IFNAME", "eth")]);
        let f = findings(&bad, d.path(), None);
        let vars: Vec<&str> = f.iter().map(|f| f.var.as_str()).collect();
        assert_eq!(vars, ["NCCL_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"]);
        assert!(f[0].message.contains("have: bond0, eth0, lo"), "{f:?}");
        let hca = findings(&env(&[("NCCL_IB_HCA", "mlx5_3:1")]), sys(&["lo"], &["mlx5_0"]).path(), None);
        assert!(hca.iter().any(|f| f.var == "NCCL_IB_HCA" && f.message.contains("have: mlx5_0")), "{hca:?}");
    }

    #[test]
    fn world_size_and_rank_are_checked_against_the_rank_table() {
        let d = sys(&["lo", "eth0"], &[]);
        let table = r#"{"status": "completed", "server_count": "2", "version": "1.0", "server_list": [
            {"server_id": "127.0.1.1", "device": [{"device_id": "0", "device_ip": "10.0.0.1", "rank_id": "0"},
                                                 {"device_id": "1", "device_ip": "10.0.0.2", "rank_id": "1"}]},
            {"server_id": "127.0.1.2", "device": [{"device_id": "0", "device_ip": "10.0.0.3", "rank_id": "2"},
                                                 {"device_id": "1", "device_ip": "10.0.0.4", "rank_id": "3"}]}]}"#;
        let base = [("RANK_TABLE_FILE", "/user/hccl.json")];
        let good = env(&[base[0], ("WORLD_SIZE", "4"), ("RANK", "1")]);
        assert!(findings(&good, d.path(), Some(table)).is_empty(), "{:?}", findings(&good, d.path(), Some(table)));
        let bad = env(&[base[0], ("WORLD_SIZE", "8"), ("RANK", "2")]);
        let f = findings(&bad, d.path(), Some(table));
        assert!(
            f.iter().any(|f| f.var == "WORLD_SIZE" && f.message.contains("neither the rank table's 4 devices")),
            "{f:?}"
        );
        assert!(f.iter().any(|f| f.var == "RANK" && f.message.contains("past the rank table's 2 servers")), "{f:?}");
        let unreadable = findings(&env(&base), d.path(), None);
        assert_eq!(unreadable[0].message, "cannot be read");
        let f = findings(&env(&[("WORLD_SIZE", "2"), ("RANK", "5")]), d.path(), None);
        assert!(f.iter().any(|f| f.var == "RANK" && f.message == "must be below WORLD_SIZE (2)"), "{f:?}");
        assert!(f.iter().any(|f| f.var == "MASTER_ADDR"), "{f:?}");
        let f = findings(&env(&[("WORLD_SIZE", "two")]), d.path(), None);
        assert_eq!(f[0].message, "\"two\" is not a number");
    }
}
