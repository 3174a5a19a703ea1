//! One probe run: its configuration from the env a job's pods are given
//! (rank table, hostfile, `MASTER_ADDR`/`MASTER_PORT`, `TF_CONFIG`), the
//! rendezvous of its ranks, and the ring all-reduce it measures.

use crate::error::ProbeError;
use crate::hostfile::{self, WorkerHost};
use crate::hosts::Hosts;

use crate::collective::Collective;
use crate::ranktable::RankTable;
use crate::report::{Report, Role, Row};
use crate::ring::{self, Ring};
use crate::wire::{self, Conn, Msg, Outcome, PeerInfo, Plan, PROTOCOL};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::ops::Range;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Prefix of the one line of JSON a check's probe prints for the manager
/// to read from its log (`{"rows": …}`, `{"pairs": …}` or `{"facts": …}`).
pub const REPORT_PREFIX: &str = "ringleader-check ";

/// Rendezvous port in rank-table mode when `MASTER_PORT` is unset.
pub const DEFAULT_MASTER_PORT: u16 = 29500;
/// Control port of `probe worker`.
pub const DEFAULT_WORKER_PORT: u16 = 29400;
/// How many ports above its base a worker tries (pods sharing a node).
pub const WORKER_PORT_TRIES: u16 = 64;

/// What the command line adds to the env.
#[derive(Debug, Clone)]
pub struct Options {
    /// Bytes per rank, one table row each; multiples of 4 (f32 elements).
    pub sizes: Vec<u64>,
    /// Timed iterations per size.
    pub iters: u32,
    /// Untimed (but checked) iterations first.
    pub warmup: u32,
    /// MPI hostfile; else `OMPI_MCA_orte_default_hostfile`,
    /// `I_MPI_HYDRA_HOST_FILE`, `HYDRA_HOST_FILE`.
    pub hostfile: Option<PathBuf>,
    /// Ranks per process in env mode; else `LOCAL_WORLD_SIZE`, a numeric
    /// `PET_NPROC_PER_NODE`, or 1.
    pub ranks_per_process: Option<usize>,
    /// Workers' control port in launcher mode.
    pub worker_port: u16,
    /// How long to wait for peers to show up, and for any one transfer.
    pub timeout: Duration,
    /// Fault injection: the process owning this rank corrupts a chunk.
    pub fault_rank: Option<usize>,
    /// Operations run, each over every size.
    pub ops: Vec<Collective>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            sizes: vec![64 << 20],
            iters: 10,
            warmup: 1,
            hostfile: None,
            ranks_per_process: None,
            worker_port: DEFAULT_WORKER_PORT,
            timeout: Duration::from_secs(60),
            fault_rank: None,
            ops: vec![Collective::AllReduce],
        }
    }
}

/// How the processes find each other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rendezvous {
    /// Through the process owning rank 0, listening on `master:port`.
    Master {
        master: String,
        port: u16,
        world: usize,
        processes: usize,
        /// Rank ranges this process may own; one unless the rank table
        /// leaves it open (see the crate doc).
        candidates: Vec<Range<usize>>,
        /// Where the ranks came from, for messages.
        source: String,
    },
    /// This process launches: it drives the `probe worker`s of a hostfile.
    Launcher { workers: Vec<WorkerHost>, source: String },
}

/// A resolved probe run.
#[derive(Debug, Clone)]
pub struct Config {
    pub rendezvous: Rendezvous,
    /// `RINGLEADER_POD_IP`: where this process listens.
    pub bind_ip: Option<IpAddr>,
    pub hosts: Hosts,
    /// `RINGLEADER_POD`, for messages.
    pub name: String,
    pub sizes: Vec<u64>,
    pub iters: u32,
    pub warmup: u32,
    pub timeout: Duration,
    pub fault_rank: Option<usize>,
    pub ops: Vec<Collective>,
}

fn env_parse<T: std::str::FromStr>(var: &'static str, value: &str, what: &str) -> Result<T, ProbeError> {
    value.trim().parse().map_err(|_| ProbeError::BadEnv {
        var,
        value: value.to_string(),
        reason: format!("not {what}"),
    })
}

impl Config {
    /// From the process env.
    pub fn from_env(opts: &Options) -> Result<Config, ProbeError> {
        Config::from_lookup(|k| std::env::var(k).ok(), opts)
    }

    /// From env looked up through `lookup` (tests pass a map). Order: MPI
    /// hostfile, `RANK_TABLE_FILE`, then `MASTER_ADDR`/`MASTER_PORT`/`RANK`/
    /// `WORLD_SIZE`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>, opts: &Options) -> Result<Config, ProbeError> {
        let get = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
        if opts.sizes.is_empty() {
            return Err(ProbeError::Invalid("no message size given".into()));
        }
        if let Some(s) = opts.sizes.iter().find(|&&s| s == 0 || s % 4 != 0) {
            return Err(ProbeError::Invalid(format!(
                "size {s}: must be a positive multiple of 4 bytes (f32 elements)"
            )));
        }
        if opts.ops.is_empty() {
            return Err(ProbeError::Invalid("no collective operation given".into()));
        }
        if opts.iters == 0 {
            return Err(ProbeError::Invalid("iters must be at least 1".into()));
        }
        let hosts = match get("RINGLEADER_HOSTS") {
            Some(path) => Hosts::from_file(std::path::Path::new(&path))?,
            None => Hosts::default(),
        };
        let bind_ip = match get("RINGLEADER_POD_IP") {
            Some(v) => Some(env_parse::<IpAddr>("RINGLEADER_POD_IP", &v, "an IP address")?),
            None => None,
        };
        let rendezvous = rendezvous(&get, opts, bind_ip)?;
        Ok(Config {
            rendezvous,
            bind_ip,
            hosts,
            name: get("RINGLEADER_POD").unwrap_or_else(|| "probe".to_string()),
            sizes: opts.sizes.clone(),
            iters: opts.iters,
            warmup: opts.warmup,
            timeout: opts.timeout,
            fault_rank: opts.fault_rank,
            ops: opts.ops.clone(),
        })
    }

    fn plan(&self, world: usize) -> Plan {
        Plan {
            sizes: self.sizes.clone(),
            iters: self.iters,
            warmup: self.warmup,
            world,
            fault_rank: self.fault_rank,
            timeout_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            ops: self.ops.clone(),
        }
    }

    fn listen_ip(&self) -> IpAddr {
        self.bind_ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    }
}

fn rendezvous(
    get: &impl Fn(&str) -> Option<String>,
    opts: &Options,
    bind_ip: Option<IpAddr>,
) -> Result<Rendezvous, ProbeError> {
    let hostfile = opts.hostfile.as_ref().map(|p| p.display().to_string()).or_else(|| {
        ["OMPI_MCA_orte_default_hostfile", "I_MPI_HYDRA_HOST_FILE", "HYDRA_HOST_FILE"].iter().find_map(|v| get(v))
    });
    if let Some(path) = hostfile {
        let slots = match get("OMPI_MCA_orte_set_default_slots") {
            Some(v) => env_parse::<usize>("OMPI_MCA_orte_set_default_slots", &v, "a slot count")?,
            None => 1,
        };
        let text = std::fs::read_to_string(&path).map_err(|cause| ProbeError::File {
            what: "MPI hostfile",
            path: path.clone(),
            cause,
        })?;
        let workers = hostfile::parse(&text, &path, slots, opts.worker_port)?;
        return Ok(Rendezvous::Launcher { workers, source: format!("MPI hostfile {path}") });
    }
    let port = |default: Option<u16>| match (get("MASTER_PORT"), default) {
        (Some(v), _) => env_parse::<u16>("MASTER_PORT", &v, "a port number"),
        (None, Some(d)) => Ok(d),
        (None, None) => Err(ProbeError::MissingEnv { var: "MASTER_PORT", hint: String::new() }),
    };
    if let Some(path) = get("RANK_TABLE_FILE") {
        let text = read_rank_table(&path, opts.timeout)?;
        let table = RankTable::parse(&text, &path)?;
        let first = table.first().map(|s| s.server_id.clone()).unwrap_or_default();
        let master = get("MASTER_ADDR").unwrap_or(first);
        let candidates = own_entries(get, &table, &path, bind_ip)?;
        if table.world > ring::MAX_WORLD {
            return Err(ProbeError::Invalid(format!("{path}: {} ranks; at most {}", table.world, ring::MAX_WORLD)));
        }
        return Ok(Rendezvous::Master {
            master,
            port: port(Some(DEFAULT_MASTER_PORT))?,
            world: table.world,
            processes: table.servers.len(),
            candidates,
            source: format!("rank table {path}"),
        });
    }
    let hint = " (nor RANK_TABLE_FILE, nor an MPI hostfile: nothing to rendezvous with)".to_string();
    let need = |var: &'static str| get(var).ok_or_else(|| ProbeError::MissingEnv { var, hint: hint.clone() });
    let master = need("MASTER_ADDR")?;
    let port = port(None)?;
    let rank: usize = env_parse("RANK", &need("RANK")?, "a rank number")?;
    let world: usize = env_parse("WORLD_SIZE", &need("WORLD_SIZE")?, "a rank count")?;
    let (per, per_var): (usize, &'static str) = match opts.ranks_per_process {
        Some(n) => (n, "--ranks-per-process"),
        None => match (get("LOCAL_WORLD_SIZE"), get("PET_NPROC_PER_NODE").and_then(|v| v.parse::<usize>().ok())) {
            (Some(v), _) => (env_parse("LOCAL_WORLD_SIZE", &v, "a rank count")?, "LOCAL_WORLD_SIZE"),
            (None, Some(n)) => (n, "PET_NPROC_PER_NODE"),
            (None, None) => (1, "ranks per process"),
        },
    };
    if world == 0 || world > ring::MAX_WORLD {
        let reason = format!("must be 1..={}", ring::MAX_WORLD);
        return Err(ProbeError::BadEnv { var: "WORLD_SIZE", value: world.to_string(), reason });
    }
    if world.checked_rem(per) != Some(0) {
        return Err(ProbeError::Invalid(format!("WORLD_SIZE={world} is not a multiple of {per_var}={per}")));
    }
    let first = rank.checked_mul(per).filter(|f| f + per <= world).ok_or_else(|| ProbeError::BadEnv {
        var: "RANK",
        value: rank.to_string(),
        reason: format!(
            "with {per} ranks per process ({per_var}) and WORLD_SIZE={world}, must be below {}",
            world / per
        ),
    })?;
    Ok(Rendezvous::Master {
        master,
        port,
        world,
        processes: world / per,
        candidates: std::iter::once(first..first + per).collect(),
        source: "env MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE".into(),
    })
}

/// `hccl.json` once it is complete: while it says `initializing` (pods on a
/// pod network get their addresses as they start) it is read again, as
/// MindCluster's launch scripts wait, for at most `timeout`.
fn read_rank_table(path: &str, timeout: Duration) -> Result<String, ProbeError> {
    let deadline = Instant::now() + timeout;
    loop {
        let text = std::fs::read_to_string(path).map_err(|cause| ProbeError::File {
            what: "rank table (RANK_TABLE_FILE)",
            path: path.to_string(),
            cause,
        })?;
        if !crate::ranktable::initializing(&text) || Instant::now() >= deadline {
            return Ok(text);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The crate doc's identification rule.
fn own_entries(
    get: &impl Fn(&str) -> Option<String>,
    table: &RankTable,
    path: &str,
    bind_ip: Option<IpAddr>,
) -> Result<Vec<Range<usize>>, ProbeError> {
    for var in ["RANK", "MS_NODE_RANK", "CM_RANK"] {
        if let Some(v) = get(var) {
            let rank: usize = env_parse(var, &v, "a pod rank")?;
            return match table.by_pod_rank(rank) {
                Some(s) => Ok(vec![s.ranks.clone()]),
                None => Err(ProbeError::BadEnv {
                    var,
                    value: v,
                    reason: format!("no server_list entry of {path} starts at rank_id {rank} × its chips"),
                }),
            };
        }
    }
    if let Some(ip) = bind_ip {
        let mine = table.by_address(ip);
        if mine.is_empty() {
            return Err(ProbeError::BadEnv {
                var: "RINGLEADER_POD_IP",
                value: ip.to_string(),
                reason: format!("no server_list entry of {path} has this server_id/host_ip/container_ip"),
            });
        }
        return Ok(mine.into_iter().map(|s| s.ranks.clone()).collect());
    }
    match table.servers.as_slice() {
        [only] => Ok(vec![only.ranks.clone()]),
        _ => Err(ProbeError::MissingEnv {
            var: "RANK",
            hint: format!(" (nor RINGLEADER_POD_IP): cannot tell which server_list entry of {path} is this pod's"),
        }),
    }
}

/// Runs the all-reduce this process's config describes. Rank 0's process
/// (or the launcher) gets the job-wide report; the others their own.
pub fn allreduce(config: &Config) -> Result<Report, ProbeError> {
    allreduce_with(config, None)
}

/// [`allreduce`] with the rendezvous listener already bound: this process
/// is then the master (it must be able to own rank 0). Lets a caller use
/// port 0 and pass the real port to the others.
pub fn allreduce_with(config: &Config, master: Option<TcpListener>) -> Result<Report, ProbeError> {
    match &config.rendezvous {
        Rendezvous::Launcher { workers, .. } => launch(config, workers),
        Rendezvous::Master { master: host, port, world, processes, candidates, source } => {
            let zero = candidates.iter().find(|r| r.start == 0).cloned();
            let listener = match (master, zero) {
                (Some(l), Some(z)) => Some((l, z)),
                (Some(_), None) => {
                    return Err(ProbeError::Rendezvous(format!(
                        "given the master listener but {source} gives this process no rank 0"
                    )))
                }
                (None, Some(z)) => {
                    let addr = SocketAddr::new(config.listen_ip(), *port);
                    match TcpListener::bind(addr) {
                        Ok(l) => Some((l, z)),
                        // Another pod of this node holds it: that one is master.
                        Err(e) if e.kind() == io::ErrorKind::AddrInUse && candidates.len() > 1 => None,
                        Err(cause) => return Err(ProbeError::Listen { addr, cause }),
                    }
                }
                (None, None) => None,
            };
            match listener {
                Some((l, mine)) => lead(config, l, mine, *world, *processes),
                None => {
                    let open: Vec<Range<usize>> = candidates.iter().filter(|r| r.start != 0).cloned().collect();
                    join(config, host, *port, &open)
                }
            }
        }
    }
}

fn data_listener(config: &Config) -> Result<TcpListener, ProbeError> {
    let addr = SocketAddr::new(config.listen_ip(), 0);
    TcpListener::bind(addr).map_err(|cause| ProbeError::Listen { addr, cause })
}

fn data_port(l: &TcpListener) -> Result<u16, ProbeError> {
    l.local_addr().map(|a| a.port()).map_err(|e| ProbeError::Rendezvous(format!("data listener: {e}")))
}

/// A process that said hello to the master.
struct Joined {
    conn: Conn,
    name: String,
    candidates: Vec<(usize, usize)>,
    data_port: u16,
    data_ip: Option<IpAddr>,
}

/// Master side: gather every process, give out ranks, run, aggregate.
fn lead(
    config: &Config,
    listener: TcpListener,
    mine: Range<usize>,
    world: usize,
    processes: usize,
) -> Result<Report, ProbeError> {
    let deadline = Instant::now() + config.timeout;
    let data = data_listener(config)?;
    let my_port = data_port(&data)?;
    let mut conns: Vec<Joined> = Vec::new();
    let gathered = gather(&listener, &mut conns, processes.saturating_sub(1), deadline, world, &mine);
    let assigned = gathered.and_then(|()| assign(&conns, &mine, world));
    let assignment = match assigned {
        Ok(a) => a,
        Err(e) => {
            for j in &mut conns {
                let _ = j.conn.send(&Msg::Failed { error: format!("master: {e}") });
            }
            return Err(e);
        }
    };
    let my_ip = match config.bind_ip.filter(|ip| !ip.is_unspecified()) {
        Some(ip) => ip,
        None => conns.first().and_then(|j| j.conn.local_ip()).unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)),
    };
    // Ring order = rank order; the master is entry `None`.
    let mut order: Vec<(Range<usize>, Option<usize>)> = vec![(mine.clone(), None)];
    order.extend(assignment.into_iter().enumerate().map(|(i, r)| (r, Some(i))));
    order.sort_by_key(|(r, _)| r.start);
    let peers: Vec<PeerInfo> = order
        .iter()
        .map(|(r, who)| {
            let (name, addr) = match who {
                None => (config.name.clone(), SocketAddr::new(my_ip, my_port)),
                Some(i) => {
                    // A process bound to its pod address may still connect from another one.
                    let j = &conns[*i];
                    (j.name.clone(), SocketAddr::new(j.data_ip.unwrap_or(j.conn.addr.ip()), j.data_port))
                }
            };
            PeerInfo { name, data_addr: addr.to_string(), first_rank: r.start, ranks: r.len() }
        })
        .collect();
    let plan = config.plan(world);
    let mut my_index = 0;
    for (index, (_, who)) in order.iter().enumerate() {
        match who {
            None => my_index = index,
            Some(i) => conns[*i].conn.send(&Msg::Assigned { index, peers: peers.clone(), plan: plan.clone() })?,
        }
    }
    let mine_outcomes = run_ring(my_index, peers, data, &plan, &mine);
    let mut all = vec![mine_outcomes?];
    for j in &mut conns {
        all.push(expect_done(&mut j.conn)?);
    }
    Ok(Report {
        role: Role::Leader,
        world,
        processes,
        index: my_index,
        ranks: mine,
        iters: plan.iters,
        warmup: plan.warmup,
        rows: merge(&plan, &all),
    })
}

fn gather(
    listener: &TcpListener,
    conns: &mut Vec<Joined>,
    want: usize,
    deadline: Instant,
    world: usize,
    mine: &Range<usize>,
) -> Result<(), ProbeError> {
    let here = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    listener.set_nonblocking(true).map_err(|e| ProbeError::peer(&here, "listen", e))?;
    while conns.len() < want {
        match listener.accept() {
            Ok((stream, from)) => {
                let _ = stream.set_nonblocking(false);
                let mut conn = Conn::new(stream, format!("process at {from}"))?;
                match conn.recv(Some(Duration::from_secs(30)))? {
                    Msg::Hello { probe, name, candidates, data_port, data_ip } if probe == PROTOCOL => {
                        conn.peer = format!("{name} at {from}");
                        let data_ip =
                            data_ip.and_then(|ip| ip.parse::<IpAddr>().ok()).filter(|ip| !ip.is_unspecified());
                        conns.push(Joined { conn, name, candidates, data_port, data_ip });
                    }
                    other => {
                        return Err(ProbeError::protocol(&conn.peer, format!("expected a probe hello, got {other:?}")))
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let mut have: Vec<(usize, usize)> = vec![(mine.start, mine.end)];
                    have.extend(conns.iter().filter(|j| j.candidates.len() == 1).map(|j| j.candidates[0]));
                    return Err(ProbeError::Rendezvous(format!(
                        "timed out on {here}: {} of {} processes joined; ranks of 0..{world} claimed so far: {have:?}",
                        conns.len() + 1,
                        want + 1
                    )));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(ProbeError::peer(&here, "accept", e)),
        }
    }
    Ok(())
}

/// Each joined process's ranks: single claims first, then open ones take
/// the lowest free candidate in arrival order; every rank exactly once.
fn assign(conns: &[Joined], mine: &Range<usize>, world: usize) -> Result<Vec<Range<usize>>, ProbeError> {
    let mut taken: Vec<Range<usize>> = vec![mine.clone()];
    let mut out: Vec<Option<Range<usize>>> = vec![None; conns.len()];
    let overlaps = |taken: &[Range<usize>], r: &Range<usize>| taken.iter().any(|t| t.start < r.end && r.start < t.end);
    for single in [true, false] {
        for (i, Joined { conn, candidates: cands, .. }) in conns.iter().enumerate() {
            if (cands.len() == 1) != single {
                continue;
            }
            let pick =
                cands.iter().map(|&(s, e)| s..e).find(|r| !overlaps(&taken, r) && r.end <= world && !r.is_empty());
            let Some(r) = pick else {
                return Err(ProbeError::Rendezvous(format!(
                    "{} claims ranks {cands:?}, all taken or outside 0..{world} (taken: {taken:?})",
                    conn.peer
                )));
            };
            taken.push(r.clone());
            out[i] = Some(r);
        }
    }
    let covered: usize = taken.iter().map(|r| r.len()).sum();
    if covered != world {
        return Err(ProbeError::Rendezvous(format!("processes own {covered} ranks, the job has {world}: {taken:?}")));
    }
    Ok(out.into_iter().flatten().collect())
}

fn expect_done(conn: &mut Conn) -> Result<Vec<Outcome>, ProbeError> {
    match conn.recv(None)? {
        Msg::Done { outcomes } => Ok(outcomes),
        Msg::Failed { error } => Err(ProbeError::protocol(&conn.peer, format!("failed: {error}"))),
        other => Err(ProbeError::protocol(&conn.peer, format!("expected results, got {other:?}"))),
    }
}

/// Per operation and size: the slowest process's mean time; ok only if all were.
fn merge(plan: &Plan, all: &[Vec<Outcome>]) -> Vec<Row> {
    plan.ops
        .iter()
        .flat_map(|&op| plan.sizes.iter().map(move |&s| (op, s)))
        .enumerate()
        .map(|(i, (op, data_size))| {
            let these: Vec<Option<&Outcome>> = all.iter().map(|o| o.get(i)).collect();
            Row {
                op,
                data_size,
                aveg_time_us: these.iter().flatten().map(|o| o.avg_us).fold(0.0, f64::max),
                ok: these.iter().all(|o| o.is_some_and(|o| o.ok)),
            }
        })
        .collect()
}

fn run_ring(
    index: usize,
    peers: Vec<PeerInfo>,
    data: TcpListener,
    plan: &Plan,
    mine: &Range<usize>,
) -> Result<Vec<Outcome>, ProbeError> {
    let timeout = Duration::from_millis(plan.timeout_ms);
    let corrupt = plan.fault_rank.is_some_and(|r| mine.contains(&r));
    let mut ring = Ring::connect(index, peers, data, timeout)?;
    ring.run(plan, mine.clone(), corrupt)
}

/// Client side: say hello to the master, take the assignment, run.
fn join(config: &Config, host: &str, port: u16, candidates: &[Range<usize>]) -> Result<Report, ProbeError> {
    let deadline = Instant::now() + config.timeout;
    let label = format!("master {host}:{port}");
    let data = data_listener(config)?;
    let stream = wire::connect_named(&config.hosts, host, port, deadline, &label)?;
    let mut conn = Conn::new(stream, label)?;
    let candidates = candidates.iter().map(|r| (r.start, r.end)).collect();
    conn.send(&Msg::Hello {
        probe: PROTOCOL,
        name: config.name.clone(),
        candidates,
        data_port: data_port(&data)?,
        data_ip: config.bind_ip.map(|ip| ip.to_string()),
    })?;
    // The master may itself wait up to its timeout for the last process.
    let (index, peers, plan) = match conn.recv(Some(config.timeout * 2 + Duration::from_secs(10)))? {
        Msg::Assigned { index, peers, plan } => (index, peers, plan),
        Msg::Failed { error } => return Err(ProbeError::Rendezvous(error)),
        other => return Err(ProbeError::protocol(&conn.peer, format!("expected an assignment, got {other:?}"))),
    };
    let mine = peers.get(index).map(|p| p.first_rank..p.first_rank + p.ranks).unwrap_or(0..0);
    let processes = peers.len();
    serve(&mut conn, index, peers, data, &plan, &mine).map(|rows| Report {
        role: Role::Member,
        world: plan.world,
        processes,
        index,
        ranks: mine,
        iters: plan.iters,
        warmup: plan.warmup,
        rows,
    })
}

/// Runs the ring and reports to `conn` (master or launcher) either way.
fn serve(
    conn: &mut Conn,
    index: usize,
    peers: Vec<PeerInfo>,
    data: TcpListener,
    plan: &Plan,
    mine: &Range<usize>,
) -> Result<Vec<Row>, ProbeError> {
    match run_ring(index, peers, data, plan, mine) {
        Ok(outcomes) => {
            conn.send(&Msg::Done { outcomes: outcomes.clone() })?;
            Ok(merge(plan, &[outcomes]))
        }
        Err(e) => {
            let _ = conn.send(&Msg::Failed { error: e.to_string() });
            Err(e)
        }
    }
}

/// Launcher side: drive the hostfile's workers.
fn launch(config: &Config, workers: &[WorkerHost]) -> Result<Report, ProbeError> {
    let deadline = Instant::now() + config.timeout;
    let world: usize = workers.iter().map(|w| w.slots).sum();
    if world > ring::MAX_WORLD {
        return Err(ProbeError::Invalid(format!("{world} slots; at most {}", ring::MAX_WORLD)));
    }
    let plan = config.plan(world);
    let mut conns = Vec::with_capacity(workers.len());
    let mut first_rank = 0;
    for (index, w) in workers.iter().enumerate() {
        let ip = config.hosts.resolve(&w.host)?;
        let label = format!("worker {}:{}", w.host, w.port);
        let stream = wire::connect_retry(SocketAddr::new(ip, w.port), deadline, &label)?;
        let mut conn = Conn::new(stream, label)?;
        conn.send(&Msg::Assign { probe: PROTOCOL, index, first_rank, ranks: w.slots, plan: plan.clone() })?;
        conns.push((conn, first_rank, w.slots));
        first_rank += w.slots;
    }
    let mut peers = Vec::with_capacity(conns.len());
    for (conn, first_rank, ranks) in &mut conns {
        match conn.recv(Some(config.timeout))? {
            Msg::Ready { name, data_port, data_ip } => peers.push(PeerInfo {
                name,
                data_addr: SocketAddr::new(
                    data_ip
                        .and_then(|ip| ip.parse::<IpAddr>().ok())
                        .filter(|ip| !ip.is_unspecified())
                        .unwrap_or(conn.addr.ip()),
                    data_port,
                )
                .to_string(),
                first_rank: *first_rank,
                ranks: *ranks,
            }),
            Msg::Failed { error } => return Err(ProbeError::protocol(&conn.peer, format!("failed: {error}"))),
            other => return Err(ProbeError::protocol(&conn.peer, format!("expected ready, got {other:?}"))),
        }
    }
    for (conn, ..) in &mut conns {
        conn.send(&Msg::Peers { peers: peers.clone() })?;
    }
    let mut all = Vec::with_capacity(conns.len());
    for (conn, ..) in &mut conns {
        all.push(expect_done(conn)?);
    }
    Ok(Report {
        role: Role::Launcher,
        world,
        processes: workers.len(),
        index: 0,
        ranks: 0..0,
        iters: plan.iters,
        warmup: plan.warmup,
        rows: merge(&plan, &all),
    })
}

/// A `probe worker`: serves one launcher run.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// `RINGLEADER_POD_IP`.
    pub bind_ip: Option<IpAddr>,
    /// Base control port; the first free of `port..port+tries` is taken.
    pub port: u16,
    pub port_tries: u16,
    /// `RINGLEADER_POD`.
    pub name: String,
    /// How long to wait for the launcher (`None`: as long as it takes, like
    /// an MPIJob worker's sshd).
    pub wait: Option<Duration>,
}

impl WorkerConfig {
    /// From the process env.
    pub fn from_env(port: u16) -> Result<WorkerConfig, ProbeError> {
        WorkerConfig::from_lookup(|k| std::env::var(k).ok(), port)
    }

    /// From env looked up through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>, port: u16) -> Result<WorkerConfig, ProbeError> {
        let get = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
        let bind_ip = match get("RINGLEADER_POD_IP") {
            Some(v) => Some(env_parse::<IpAddr>("RINGLEADER_POD_IP", &v, "an IP address")?),
            None => None,
        };
        let name = get("RINGLEADER_POD").unwrap_or_else(|| "probe-worker".to_string());
        Ok(WorkerConfig { bind_ip, port, port_tries: WORKER_PORT_TRIES, name, wait: None })
    }

    /// Binds the first free port from `port` on.
    pub fn bind(&self) -> Result<TcpListener, ProbeError> {
        let ip = self.bind_ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        let mut last = None;
        for k in 0..self.port_tries.max(1) {
            let Some(port) = self.port.checked_add(k) else { break };
            let addr = SocketAddr::new(ip, port);
            match TcpListener::bind(addr) {
                Ok(l) => return Ok(l),
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = Some((addr, e)),
                Err(cause) => return Err(ProbeError::Listen { addr, cause }),
            }
        }
        let (addr, cause) = last.unwrap_or_else(|| {
            (SocketAddr::new(ip, self.port), io::Error::new(io::ErrorKind::AddrInUse, "no port to try"))
        });
        Err(ProbeError::Listen { addr, cause })
    }
}

/// Binds ([`WorkerConfig::bind`]) and serves one launcher run.
pub fn worker(config: &WorkerConfig) -> Result<Report, ProbeError> {
    serve_worker(config, config.bind()?)
}

/// Serves one launcher run on an already bound control listener.
pub fn serve_worker(config: &WorkerConfig, listener: TcpListener) -> Result<Report, ProbeError> {
    let here = listener.local_addr().map_err(|e| ProbeError::peer("worker", "listen", e))?;
    let stream = match config.wait {
        None => listener.accept().map(|(s, _)| s).map_err(|e| ProbeError::peer(&here.to_string(), "accept", e))?,
        Some(wait) => accept_within(&listener, here, wait)?,
    };
    let from = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let mut conn = Conn::new(stream, format!("launcher at {from}"))?;
    let (index, first_rank, ranks, plan) = match conn.recv(Some(Duration::from_secs(30)))? {
        Msg::Assign { probe, index, first_rank, ranks, plan } if probe == PROTOCOL => (index, first_rank, ranks, plan),
        other => return Err(ProbeError::protocol(&conn.peer, format!("expected an assignment, got {other:?}"))),
    };
    let data = TcpListener::bind(SocketAddr::new(here.ip(), 0))
        .map_err(|cause| ProbeError::Listen { addr: SocketAddr::new(here.ip(), 0), cause })?;
    conn.send(&Msg::Ready {
        name: config.name.clone(),
        data_port: data_port(&data)?,
        data_ip: Some(here.ip().to_string()),
    })?;
    let timeout = Duration::from_millis(plan.timeout_ms);
    let peers = match conn.recv(Some(timeout * 2 + Duration::from_secs(10)))? {
        Msg::Peers { peers } => peers,
        other => return Err(ProbeError::protocol(&conn.peer, format!("expected the peer list, got {other:?}"))),
    };
    let processes = peers.len();
    let mine = first_rank..first_rank + ranks;
    serve(&mut conn, index, peers, data, &plan, &mine).map(|rows| Report {
        role: Role::Worker,
        world: plan.world,
        processes,
        index,
        ranks: mine,
        iters: plan.iters,
        warmup: plan.warmup,
        rows,
    })
}

fn accept_within(listener: &TcpListener, here: SocketAddr, wait: Duration) -> Result<std::net::TcpStream, ProbeError> {
    let deadline = Instant::now() + wait;
    let label = here.to_string();
    listener.set_nonblocking(true).map_err(|e| ProbeError::peer(&label, "listen", e))?;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = s.set_nonblocking(false);
                return Ok(s);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => return Err(ProbeError::peer(&label, "wait for the launcher", e)),
        }
    }
}
