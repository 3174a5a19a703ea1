//! Real multi-participant all-reduces, each participant a thread with its
//! own config, over TCP on loopback.

use ringleader_controller::ranktable::hccl::{render, HcclDevice, HcclServer, HcclTable};
use ringleader_probe::{
    allreduce, allreduce_with, format_table, serve_worker, Collective, Config, Options, Report, Role, Row, WorkerConfig,
};
use std::collections::HashMap;
use std::net::TcpListener;
use std::path::Path;
use std::thread;
use std::time::Duration;

type Env = HashMap<String, String>;

/// A virtual node's address.
const NODE_IP: &str = "127.0.1.7";

fn env(pairs: &[(&str, &str)]) -> Env {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// `processes` processes on loopback sharing `world` ranks evenly
/// (`LOCAL_WORLD_SIZE` ranks each), as torchrun's env gives them.
fn local_ranks_envs(port: u16, processes: usize, world: usize) -> Vec<Env> {
    let (port, world_size, local) = (port.to_string(), world.to_string(), (world / processes).to_string());
    (0..processes)
        .map(|r| {
            env(&[
                ("MASTER_ADDR", "127.0.0.1"),
                ("MASTER_PORT", &port),
                ("RANK", &r.to_string()),
                ("WORLD_SIZE", &world_size),
                ("LOCAL_WORLD_SIZE", &local),
            ])
        })
        .collect()
}

fn opts() -> Options {
    Options { sizes: vec![4096, 8192], iters: 2, warmup: 1, timeout: Duration::from_secs(20), ..Options::default() }
}

fn config(e: &Env, o: &Options) -> Config {
    Config::from_lookup(|k| e.get(k).cloned(), o).unwrap_or_else(|err| panic!("config: {err}"))
}

fn bind_local() -> (TcpListener, u16) {
    bind_at("127.0.0.1")
}

/// Ringleader's pods listen on their node's 127.0.1.N address but connect
/// out from 127.0.0.1, which the rendezvous must not mistake for theirs.
fn bind_at(ip: &str) -> (TcpListener, u16) {
    let l = TcpListener::bind((ip, 0)).unwrap_or_else(|e| panic!("bind: {e}"));
    let port = l.local_addr().map(|a| a.port()).unwrap_or_else(|e| panic!("{e}"));
    (l, port)
}

/// Runs every env as one participant; the first gets `master`.
fn run_all(envs: Vec<Env>, master: Option<TcpListener>, o: &Options) -> Vec<Report> {
    let mut master = master;
    let handles: Vec<_> = envs
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let (o, l) = (o.clone(), if i == 0 { master.take() } else { None });
            thread::spawn(move || allreduce_with(&config(&e, &o), l))
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|_| panic!("participant panicked")).unwrap_or_else(|e| panic!("run: {e}")))
        .collect()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {name}: {e}"));
    path.display().to_string()
}

fn env_mode(world: usize, extra: &[(&str, &str)], master_addr: &str, o: &Options) -> Vec<Report> {
    let pod_ip = if master_addr.starts_with("127.") { master_addr } else { NODE_IP };
    let (l, port) = bind_at(pod_ip);
    let envs = (0..world)
        .map(|r| {
            let mut e = env(extra);
            e.extend(env(&[
                ("MASTER_ADDR", master_addr),
                ("MASTER_PORT", &port.to_string()),
                ("RANK", &r.to_string()),
                ("WORLD_SIZE", &world.to_string()),
                ("RINGLEADER_POD_IP", pod_ip),
                ("RINGLEADER_POD", &format!("job-worker-{r}")),
            ]));
            e
        })
        .collect();
    run_all(envs, Some(l), o)
}

fn assert_leader(reports: &[Report], world: usize, processes: usize) {
    let lead = &reports[0];
    assert_eq!((lead.role, lead.world, lead.processes), (Role::Leader, world, processes));
    assert!(lead.success(), "{}", lead.table());
    assert_eq!(lead.rows.len(), 2);
    assert!(lead.table().lines().skip(1).all(|l| l.ends_with("| success")), "{}", lead.table());
    assert!(lead.summary().starts_with(&format!("allreduce: {world} ranks in {processes} processes")));
    for r in &reports[1..] {
        assert_eq!(r.role, Role::Member);
        assert!(r.success(), "{}", r.summary());
    }
}

#[test]
fn env_two_ranks() {
    let reports = env_mode(2, &[], "127.0.0.1", &opts());
    assert_leader(&reports, 2, 2);
    assert_eq!(reports[1].ranks, 1..2);
}

#[test]
fn env_four_ranks_master_by_name_through_hosts_file() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let hosts = write(dir.path(), "hosts", "127.0.1.7 job-master-0 job-master-0.job.default.svc\n");
    let reports = env_mode(4, &[("RINGLEADER_HOSTS", &hosts)], "job-master-0.job.default.svc", &opts());
    assert_leader(&reports, 4, 4);
}

#[test]
fn env_local_world_size_gives_several_ranks_per_process() {
    let (l, port) = bind_local();
    let envs = local_ranks_envs(port, 2, 6);
    let reports = run_all(envs, Some(l), &opts());
    assert_leader(&reports, 6, 2);
    assert_eq!(reports[1].ranks, 3..6);
}

fn hccl(servers: &[&str], chips: usize) -> String {
    let server_list = servers
        .iter()
        .enumerate()
        .map(|(pod, ip)| HcclServer {
            server_id: ip.to_string(),
            host_ip: ip.to_string(),
            container_ip: ip.to_string(),
            device: (0..chips)
                .map(|pos| HcclDevice {
                    device_id: (pod * chips + pos).to_string(),
                    device_ip: Some(format!("192.168.100.{}", 101 + pod * chips + pos)),
                    super_device_id: None,
                    rank_id: (pod * chips + pos).to_string(),
                })
                .collect(),
        })
        .collect();
    let table = HcclTable {
        status: "completed".into(),
        version: "1.0".into(),
        server_count: servers.len().to_string(),
        server_list,
        super_pod_list: None,
    };
    render(Some(&table))
}

fn rank_table_envs(path: &str, port: u16, pods: usize, with_rank: bool) -> Vec<Env> {
    (0..pods)
        .map(|r| {
            let mut e = env(&[
                ("RANK_TABLE_FILE", path),
                ("MASTER_PORT", &port.to_string()),
                ("RINGLEADER_POD_IP", NODE_IP),
                ("RINGLEADER_POD", &format!("acjob-worker-{r}")),
            ]);
            if with_rank {
                e.insert("RANK".into(), r.to_string());
            }
            e
        })
        .collect()
}

#[test]
fn rank_table_two_pods_of_eight_chips_on_one_address_by_rank() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = write(dir.path(), "hccl.json", &hccl(&[NODE_IP, NODE_IP], 8));
    let (l, port) = bind_at(NODE_IP);
    let mut envs = rank_table_envs(&path, port, 2, true);
    // Rank 1 first, so the master cannot rely on arrival order.
    envs.swap(0, 1);
    let o = opts();
    let h1 = thread::spawn({
        let (e, o) = (envs[0].clone(), o.clone());
        move || allreduce(&config(&e, &o))
    });
    let lead = allreduce_with(&config(&envs[1], &o), Some(l)).unwrap_or_else(|e| panic!("{e}"));
    let member = h1.join().unwrap_or_else(|_| panic!("panicked")).unwrap_or_else(|e| panic!("{e}"));
    assert_leader(&[lead, member.clone()], 16, 2);
    assert_eq!(member.ranks, 8..16);
}

#[test]
fn rank_table_two_pods_on_one_address_without_rank_share_out_entries() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = write(dir.path(), "hccl.json", &hccl(&[NODE_IP, NODE_IP], 8));
    // The first participant holds the master port, so the second finds it
    // taken and joins as the other entry.
    let (l, port) = bind_at(NODE_IP);
    let reports = run_all(rank_table_envs(&path, port, 2, false), Some(l), &opts());
    assert_leader(&reports, 16, 2);
    assert_eq!((reports[0].ranks.clone(), reports[1].ranks.clone()), (0..8, 8..16));
}

#[test]
fn rank_table_master_addr_defaults_to_first_server() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = write(dir.path(), "hccl.json", &hccl(&[NODE_IP, NODE_IP, NODE_IP], 2));
    let (l, port) = bind_at(NODE_IP);
    let reports = run_all(rank_table_envs(&path, port, 3, true), Some(l), &opts());
    assert_leader(&reports, 6, 3);
}

#[test]
fn hostfile_launcher_with_two_workers() {
    for fault in [None, Some(3)] {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (l0, p0) = bind_at(NODE_IP);
        let (l1, p1) = bind_at(NODE_IP);
        let hosts = write(dir.path(), "hosts", "127.0.1.7 mpi-worker-0.mpi.default.svc mpi-worker-1.mpi.default.svc\n");
        let hostfile = write(
            dir.path(),
            "hostfile",
            &format!(
                "mpi-worker-0.mpi.default.svc slots=2 port={p0}\nmpi-worker-1.mpi.default.svc slots=3 port={p1}\n"
            ),
        );
        let workers: Vec<_> = [l0, l1]
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                let e = env(&[("RINGLEADER_POD_IP", NODE_IP), ("RINGLEADER_POD", &format!("mpi-worker-{i}"))]);
                let mut wc = WorkerConfig::from_lookup(|k| e.get(k).cloned(), 0).unwrap_or_else(|e| panic!("{e}"));
                wc.wait = Some(Duration::from_secs(20));
                thread::spawn(move || serve_worker(&wc, l))
            })
            .collect();
        let e = env(&[("OMPI_MCA_orte_default_hostfile", &hostfile), ("RINGLEADER_HOSTS", &hosts)]);
        let o = Options { fault_rank: fault, ..opts() };
        let report = allreduce(&config(&e, &o)).unwrap_or_else(|e| panic!("launcher: {e}"));
        assert_eq!((report.role, report.world, report.processes), (Role::Launcher, 5, 2));
        assert_eq!(report.success(), fault.is_none(), "{}", report.table());
        for (i, w) in workers.into_iter().enumerate() {
            let w = w.join().unwrap_or_else(|_| panic!("panicked")).unwrap_or_else(|e| panic!("worker {i}: {e}"));
            assert_eq!(w.role, Role::Worker);
            assert_eq!(w.ranks, if i == 0 { 0..2 } else { 2..5 });
            assert_eq!(w.success(), fault.is_none());
        }
    }
}

#[test]
fn worker_on_a_shared_address_takes_the_next_port() {
    let (_held, port) = bind_local();
    let e = env(&[("RINGLEADER_POD_IP", "127.0.0.1")]);
    let wc = WorkerConfig::from_lookup(|k| e.get(k).cloned(), port).unwrap_or_else(|e| panic!("{e}"));
    let l = wc.bind().unwrap_or_else(|e| panic!("{e}"));
    let got = l.local_addr().map(|a| a.port()).unwrap_or(0);
    assert!(got > port && got < port + wc.port_tries, "{got} vs {port}");
}

#[test]
fn corrupted_chunk_fails_the_check_everywhere() {
    let o = Options { fault_rank: Some(1), ..opts() };
    let reports = env_mode(3, &[], "127.0.0.1", &o);
    assert!(reports.iter().all(|r| !r.success()));
    let table = reports[0].table();
    assert!(table.lines().skip(1).all(|l| l.ends_with("| fail")), "{table}");
    assert!(reports[0].summary().ends_with("check_result fail"));
}

#[test]
fn single_process_fault_is_caught_too() {
    let o = Options { fault_rank: Some(0), ..opts() };
    let reports = env_mode(1, &[], "127.0.0.1", &o);
    assert!(!reports[0].success());
}

fn config_err(pairs: &[(&str, &str)]) -> String {
    let e = env(pairs);
    match Config::from_lookup(|k| e.get(k).cloned(), &opts()) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn bad_or_missing_env_is_named() {
    let err = config_err(&[("MASTER_PORT", "1"), ("RANK", "0"), ("WORLD_SIZE", "2")]);
    assert!(err.contains("MASTER_ADDR"), "{err}");
    let err = config_err(&[("MASTER_ADDR", "x"), ("MASTER_PORT", "1"), ("RANK", "0")]);
    assert!(err.contains("WORLD_SIZE"), "{err}");
    let err = config_err(&[("MASTER_ADDR", "x"), ("MASTER_PORT", "1"), ("RANK", "2"), ("WORLD_SIZE", "2")]);
    assert!(err.contains("RANK"), "{err}");
    let err = config_err(&[("MASTER_ADDR", "x"), ("MASTER_PORT", "port"), ("RANK", "0"), ("WORLD_SIZE", "2")]);
    assert!(err.contains("MASTER_PORT"), "{err}");
    let err = config_err(&[("RANK_TABLE_FILE", "/nonexistent/hccl.json")]);
    assert!(err.contains("RANK_TABLE_FILE") && err.contains("/nonexistent/hccl.json"), "{err}");
    let err = config_err(&[("OMPI_MCA_orte_default_hostfile", "/nonexistent/hostfile")]);
    assert!(err.contains("/nonexistent/hostfile"), "{err}");
    let err = config_err(&[("RINGLEADER_HOSTS", "/nonexistent/hosts")]);
    assert!(err.contains("RINGLEADER_HOSTS"), "{err}");
}

#[test]
fn rank_table_without_identity_is_named() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = write(dir.path(), "hccl.json", &hccl(&["127.0.0.1", "127.0.0.2"], 2));
    let err = config_err(&[("RANK_TABLE_FILE", &path)]);
    assert!(err.contains("RANK") && err.contains("RINGLEADER_POD_IP"), "{err}");
    let err = config_err(&[("RANK_TABLE_FILE", &path), ("RINGLEADER_POD_IP", "127.0.0.9")]);
    assert!(err.contains("RINGLEADER_POD_IP"), "{err}");
    let init = write(dir.path(), "init.json", r#"{"status":"initializing"}"#);
    let err = config_err(&[("RANK_TABLE_FILE", &init), ("RANK", "0")]);
    assert!(err.contains("initializing"), "{err}");
}

#[test]
fn master_waiting_for_a_missing_peer_times_out_with_a_message() {
    let (l, port) = bind_local();
    let e =
        env(&[("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", &port.to_string()), ("RANK", "0"), ("WORLD_SIZE", "2")]);
    let o = Options { timeout: Duration::from_millis(300), ..opts() };
    let err = allreduce_with(&config(&e, &o), Some(l)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("timed out") && err.contains("1 of 2"), "{err}");
}

#[test]
fn member_without_master_gives_up_naming_it() {
    let (l, port) = bind_local();
    drop(l);
    let e =
        env(&[("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", &port.to_string()), ("RANK", "1"), ("WORLD_SIZE", "2")]);
    let o = Options { timeout: Duration::from_millis(300), ..opts() };
    let err = allreduce(&config(&e, &o)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains(&format!("master 127.0.0.1:{port}")), "{err}");
}

#[test]
fn table_format() {
    let rows = [
        Row { op: Collective::AllReduce, data_size: 67_108_864, aveg_time_us: 20_000.0, ok: true },
        Row { op: Collective::AllReduce, data_size: 4096, aveg_time_us: 12.5, ok: false },
    ];
    let expected = "data_size(Bytes) | aveg_time(us) | alg_bandwidth(GB/s) | check_result\n\
                    \x20       67108864 |      20000.00 |              3.3554 | success\n\
                    \x20           4096 |         12.50 |              0.3277 | fail\n";
    assert_eq!(format_table(&rows), expected);
    assert_eq!(Row { op: Collective::AllReduce, data_size: 1, aveg_time_us: 0.0, ok: true }.alg_bandwidth(), 0.0);
}

#[test]
fn every_collective_operation_checks_out_across_three_processes_of_two_ranks() {
    // 4 ops × sizes not divisible by 3 processes: uneven chunks and blocks.
    let o = Options { sizes: vec![4096, 6000], ops: Collective::ALL.to_vec(), ..opts() };
    let (l, port) = bind_local();
    let envs = local_ranks_envs(port, 3, 6);
    let reports = run_all(envs, Some(l), &o);
    let lead = &reports[0];
    assert_eq!(lead.world, 6);
    assert_eq!(lead.rows.len(), 8, "{}", lead.tables());
    assert!(lead.success(), "{}", lead.tables());
    let ops: Vec<Collective> = lead.rows.iter().map(|r| r.op).collect();
    assert_eq!(&ops[..2], &[Collective::AllReduce, Collective::AllReduce]);
    assert_eq!(ops[6], Collective::AllToAll);
    for name in ["# all_gather", "# reduce_scatter", "# all_to_all"] {
        assert!(lead.tables().contains(name), "{}", lead.tables());
    }
    let rows = lead.check_rows();
    let row = &rows["rows"][2];
    assert_eq!(row["operation"], "all_gather");
    let alg = row["alg_bandwidth"].as_f64().unwrap_or_default();
    let bus = row["bus_bandwidth"].as_f64().unwrap_or_default();
    assert!((bus - alg * 5.0 / 6.0).abs() < 1e-9, "{row}");
    for r in &reports[1..] {
        assert!(r.success(), "{}", r.tables());
    }
}

#[test]
fn a_corrupted_process_fails_every_operation() {
    let o = Options { sizes: vec![4096], ops: Collective::ALL.to_vec(), fault_rank: Some(1), ..opts() };
    let reports = env_mode(2, &[], "127.0.0.1", &o);
    assert!(reports[0].rows.iter().all(|r| !r.ok), "{}", reports[0].tables());
}
