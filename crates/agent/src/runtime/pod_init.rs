//! The pod init: what runs between the agent and a pod's program when pods
//! are sandboxed. The agent starts it (as its program re-executed with
//! [`INIT_ARG`]) with the pod's environment, the log pipe as stdout and
//! stderr and the [`Spec`] on stdin. It
//!
//! 1. unshares mount, PID, IPC and UTS namespaces and forks the namespace's
//!    PID 1; it stays in the agent's PID namespace as the process (group
//!    leader) the agent waits on and signals, ignoring the signals PID 1
//!    forwards, and ends the way the pod's program ended (same exit code,
//!    or killed by the same signal);
//! 2. as PID 1: makes the host's mounts private and read-only, mounts a
//!    fresh `/proc`, private `/tmp` and `/dev/shm`, covers the hidden paths
//!    and `/run` (a read-only tmpfs holding the pod's view: its sandbox
//!    directory, writable, and the agent's programs, read-only, at fixed
//!    paths), binds the volumes, sets the host
//!    name, forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 to every
//!    process of the namespace, starts the program as the pod's user (no
//!    supplementary groups, no new privileges) and reaps until it exits.
//!    When PID 1 exits the kernel kills whatever the pod left running.

use super::isolate::{Bind, Spec, INIT_ARG, PROBE_OK};
use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;

/// Exit code of the init when the sandbox could not be built (as container
/// runtimes use 125 for their own failures).
pub const SETUP_FAILED: i32 = 125;

const FORWARDED: [libc::c_int; 6] =
    [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

const OPEN_TREE_CLONE: libc::c_uint = 1;
const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Runs the init when the program was started as one (first argument
/// [`INIT_ARG`]); otherwise returns at once. Call it first thing in `main`,
/// before any thread is started (unsharing a mount namespace needs a
/// single-threaded process).
pub fn run_if_invoked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(INIT_ARG)) {
        return;
    }
    let code = if args.next().as_deref() == Some(std::ffi::OsStr::new("probe")) { probe() } else { init() };
    std::process::exit(code);
}

fn c_path(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| std::io::Error::other(format!("{}: NUL in path", p.display())))
}

fn check(what: &str, rc: libc::c_long) -> std::io::Result<libc::c_long> {
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        Err(std::io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(rc)
    }
}

fn mount(source: &str, target: &Path, fstype: &str, flags: libc::c_ulong, data: &str) -> std::io::Result<()> {
    let (s, t, f, d) = (CString::new(source)?, c_path(target)?, CString::new(fstype)?, CString::new(data)?);
    let data_ptr = if data.is_empty() { std::ptr::null() } else { d.as_ptr().cast() };
    let src_ptr = if source.is_empty() { std::ptr::null() } else { s.as_ptr() };
    let fs_ptr = if fstype.is_empty() { std::ptr::null() } else { f.as_ptr() };
    // SAFETY: every pointer is a NUL-terminated string that outlives the call, or null.
    let rc = unsafe { libc::mount(src_ptr, t.as_ptr(), fs_ptr, flags, data_ptr) };
    check(&format!("mount {fstype} {source} on {}", target.display()), rc.into()).map(|_| ())
}

fn setattr(dfd: libc::c_int, path: &Path, flags: libc::c_uint, set: u64, clr: u64) -> std::io::Result<()> {
    let p = c_path(path)?;
    let attr = MountAttr { attr_set: set, attr_clr: clr, propagation: 0, userns_fd: 0 };
    // SAFETY: path and attr outlive the call; the size passed is attr's.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dfd,
            p.as_ptr(),
            flags,
            &attr as *const MountAttr,
            size_of::<MountAttr>(),
        )
    };
    check(&format!("mount_setattr {}", path.display()), rc).map(|_| ())
}

/// A detached copy of the mount at `source` (made before anything covers it).
fn clone_tree(source: &Path, recursive: bool) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let p = c_path(source)?;
    let flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | if recursive { libc::AT_RECURSIVE as libc::c_uint } else { 0 };
    // SAFETY: p outlives the call.
    let fd = check(&format!("open_tree {}", source.display()), unsafe {
        libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, p.as_ptr(), flags)
    })?;
    // SAFETY: open_tree returned a new descriptor we own.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as libc::c_int) })
}

fn attach(tree: &std::os::fd::OwnedFd, target: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let (empty, t) = (CString::default(), c_path(target)?);
    // SAFETY: the strings outlive the call; tree is an open_tree descriptor.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    check(&format!("move_mount onto {}", target.display()), rc).map(|_| ())
}

/// `mkdir -p` that accepts directories already there on a read-only mount.
fn make_dir(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(path).map_err(|e| std::io::Error::new(e.kind(), format!("mkdir {}: {e}", path.display())))
}

fn make_file(path: &Path) -> std::io::Result<()> {
    if path.exists() {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        make_dir(parent)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map(drop)
        .map_err(|e| std::io::Error::new(e.kind(), format!("create {}: {e}", path.display())))
}

fn unshare_all() -> std::io::Result<()> {
    let flags = libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    // SAFETY: unshare takes flags only.
    check("unshare", unsafe { libc::unshare(flags) }.into()).map(|_| ())
}

fn set_handler(signal: libc::c_int, handler: libc::sighandler_t) {
    // SAFETY: a zeroed sigaction with a handler (or SIG_IGN/SIG_DFL) is valid.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler;
        act.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(signal, &act, std::ptr::null_mut());
    }
}

extern "C" fn forward(signal: libc::c_int) {
    // SAFETY: kill is async-signal-safe; from PID 1, -1 is every other
    // process of its namespace.
    unsafe {
        libc::kill(-1, signal);
    }
}

/// Waits for `pid`, retrying when a signal interrupts; the raw status.
fn wait_for(pid: libc::pid_t) -> Option<libc::c_int> {
    loop {
        let mut status = 0;
        // SAFETY: status is a valid out pointer.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            return Some(status);
        }
        if got < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// Ends this process the way `status` says a child ended: same exit code,
/// or the same signal (no core file).
fn end_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: plain calls on this process's own limits, handlers and mask.
        unsafe {
            let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            set_handler(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
        }
        std::process::exit(128 + signal);
    }
    std::process::exit(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 })
}

fn fail(e: &std::io::Error) -> i32 {
    eprintln!("ringleader sandbox: {e}");
    SETUP_FAILED
}

fn read_spec() -> std::io::Result<Spec> {
    let mut text = Vec::new();
    std::io::stdin().lock().read_to_end(&mut text)?;
    let spec =
        serde_json::from_slice(&text).map_err(|e| std::io::Error::other(format!("reading the pod spec: {e}")))?;
    // The pod's stdin is /dev/null, as without a sandbox.
    let null = std::fs::File::open("/dev/null")?;
    use std::os::fd::AsRawFd;
    // SAFETY: both descriptors are open.
    check("dup2 /dev/null", unsafe { libc::dup2(null.as_raw_fd(), 0) }.into())?;
    Ok(spec)
}

fn init() -> i32 {
    let spec = match read_spec() {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    for s in FORWARDED {
        set_handler(s, libc::SIG_IGN);
    }
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return fail(&std::io::Error::last_os_error());
    }
    let (status_r, status_w) = (fds[0], fds[1]);
    // Before any fork: every process of the pod starts inside its limits.
    if let Err(e) = super::limits::join_cgroup(&spec.cgroup_procs) {
        return fail(&e);
    }
    if let Err(e) = unshare_all() {
        return fail(&e);
    }
    // SAFETY: this process is single-threaded (the hook runs first in main).
    let pid1 = unsafe { libc::fork() };
    if pid1 < 0 {
        return fail(&std::io::Error::last_os_error());
    }
    if pid1 == 0 {
        // SAFETY: closing our copy of the read end.
        unsafe { libc::close(status_r) };
        namespace_init(&spec, status_w);
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(status_w) };
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        // SAFETY: reading into the rest of buf.
        let n = unsafe { libc::read(status_r, buf[got..].as_mut_ptr().cast(), 4 - got) };
        if n > 0 {
            got += n as usize;
        } else if n == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    let init_status = wait_for(pid1);
    if got == 4 {
        end_like(libc::c_int::from_ne_bytes(buf));
    }
    end_like(init_status.unwrap_or(SETUP_FAILED << 8))
}

/// PID 1 of the pod's namespaces. Never returns.
fn namespace_init(spec: &Spec, status_w: libc::c_int) -> ! {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) };
    if let Err(e) = build(spec) {
        std::process::exit(fail(&e));
    }
    for s in FORWARDED {
        set_handler(s, forward as *const () as libc::sighandler_t);
    }
    let mut cmd = std::process::Command::new(&spec.program);
    if let Some((first, rest)) = spec.argv.split_first() {
        cmd.arg0(first).args(rest);
    }
    cmd.current_dir(&spec.cwd).uid(spec.uid).gid(spec.gid).process_group(0);
    // SAFETY: prctl and sigprocmask are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ringleader sandbox: {}: {e}", spec.program.display());
            std::process::exit(if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 });
        }
    };
    let pid = child.id() as libc::pid_t;
    // Reap every orphan the namespace hands us until the program itself ends.
    let status = loop {
        let mut status = 0;
        // SAFETY: status is a valid out pointer.
        let got = unsafe { libc::waitpid(-1, &mut status, 0) };
        if got == pid {
            break status;
        }
        if got < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break SETUP_FAILED << 8;
        }
    };
    let bytes = status.to_ne_bytes();
    // SAFETY: writing 4 bytes from a live buffer; the pipe holds far more.
    unsafe { libc::write(status_w, bytes.as_ptr().cast(), bytes.len()) };
    // SAFETY: leaving without running destructors; the kernel kills the rest of the namespace.
    unsafe { libc::_exit(0) }
}

/// Host files that are often links into the covered `/run` (systemd-resolved's
/// `stub-resolv.conf`): their targets are bound back so the pod still
/// resolves names.
const KEPT_LINKS: [&str; 1] = ["/etc/resolv.conf"];

/// The sandbox's file system and host name.
fn build(spec: &Spec) -> std::io::Result<()> {
    let view = &spec.view;
    mount("", Path::new("/"), "", libc::MS_REC | libc::MS_PRIVATE, "")?;
    // Copies of what pods see, taken before anything covers them.
    let sandbox = clone_tree(&spec.sandbox, false)?;
    let writable = (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, MOUNT_ATTR_RDONLY);
    let read_only = (MOUNT_ATTR_RDONLY | writable.0, 0);
    let whole = (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as libc::c_uint;
    setattr(sandbox_fd(&sandbox), Path::new(""), libc::AT_EMPTY_PATH as libc::c_uint, writable.0, writable.1)?;
    let programs = match &spec.program_dir {
        Some(dir) => {
            let tree = clone_tree(dir, false)?;
            setattr(sandbox_fd(&tree), Path::new(""), whole, read_only.0, read_only.1)?;
            Some(tree)
        }
        None => None,
    };
    let mut kept = Vec::new();
    for link in KEPT_LINKS {
        if let Ok(target) = std::fs::canonicalize(link) {
            if target.starts_with(&view.cover) && target.is_file() {
                let tree = clone_tree(&target, false)?;
                setattr(sandbox_fd(&tree), Path::new(""), whole, read_only.0, read_only.1)?;
                kept.push((target, tree));
            }
        }
    }
    let mut volumes = Vec::with_capacity(spec.binds.len());
    for b in &spec.binds {
        let tree = clone_tree(&b.source, b.dir)?;
        let (set, clr) = if b.writable { writable } else { read_only };
        setattr(sandbox_fd(&tree), Path::new(""), whole, set, clr)?;
        volumes.push((b, tree));
    }
    setattr(libc::AT_FDCWD, Path::new("/"), libc::AT_RECURSIVE as libc::c_uint, MOUNT_ATTR_RDONLY, 0)?;
    let fresh = libc::MS_NOSUID | libc::MS_NODEV;
    mount("proc", Path::new("/proc"), "proc", fresh | libc::MS_NOEXEC, "")?;
    // Sized by the pod's limits: a tmpfs left at the kernel's default takes half the host's memory.
    let tmp_options = super::limits::tmpfs_options(spec.tmp_size);
    mount("tmpfs", Path::new("/tmp"), "tmpfs", fresh, &tmp_options)?;
    if Path::new("/dev/shm").is_dir() {
        mount("tmpfs", Path::new("/dev/shm"), "tmpfs", fresh | libc::MS_NOEXEC, &tmp_options)?;
    }
    // Hidden paths under the cover are gone with it.
    let hidden: Vec<_> = spec.hidden.iter().filter(|h| !h.path.starts_with(&view.cover)).collect();
    for h in &hidden {
        if h.dir {
            make_dir(&h.path)?;
            mount("tmpfs", &h.path, "tmpfs", fresh | libc::MS_NOEXEC, "mode=755,size=1m")?;
        } else if h.path.exists() {
            mount("/dev/null", &h.path, "", libc::MS_BIND, "")?;
        }
    }
    // The host's /run (its sockets are not the pod's business) gives way to
    // the pod's view: its sandbox and the agent's programs at fixed paths,
    // reachable whatever the modes of the directories above them on the host.
    mount("tmpfs", &view.cover, "tmpfs", fresh | libc::MS_NOEXEC, "mode=755,size=1m")?;
    make_dir(&view.pod)?;
    attach(&sandbox, &view.pod)?;
    if let Some(tree) = &programs {
        make_dir(&view.bin)?;
        attach(tree, &view.bin)?;
    }
    for (path, tree) in &kept {
        make_file(path)?;
        attach(tree, path)?;
    }
    for (b, tree) in &volumes {
        target(b)?;
        attach(tree, &b.target)?;
    }
    for h in hidden.iter().filter(|h| h.dir) {
        setattr(libc::AT_FDCWD, &h.path, 0, MOUNT_ATTR_RDONLY, 0)?;
    }
    setattr(libc::AT_FDCWD, &view.cover, 0, MOUNT_ATTR_RDONLY, 0)?;
    let name = CString::new(spec.hostname.as_str())?;
    // SAFETY: name is valid for its length.
    check("sethostname", unsafe { libc::sethostname(name.as_ptr(), spec.hostname.len()) }.into())?;
    Ok(())
}

fn sandbox_fd(tree: &std::os::fd::OwnedFd) -> libc::c_int {
    use std::os::fd::AsRawFd;
    tree.as_raw_fd()
}

fn target(b: &Bind) -> std::io::Result<()> {
    if b.dir {
        make_dir(&b.target)
    } else {
        make_file(&b.target)
    }
}

/// Probe mode: the same namespaces and mounts in a child that then exits.
fn probe() -> i32 {
    if let Err(e) = unshare_all() {
        return fail(&e);
    }
    // SAFETY: single-threaded (the hook runs first in main).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return fail(&std::io::Error::last_os_error());
    }
    if pid == 0 {
        let steps = || -> std::io::Result<()> {
            mount("", Path::new("/"), "", libc::MS_REC | libc::MS_PRIVATE, "")?;
            let tree = clone_tree(Path::new("/tmp"), false)?;
            setattr(libc::AT_FDCWD, Path::new("/"), libc::AT_RECURSIVE as libc::c_uint, MOUNT_ATTR_RDONLY, 0)?;
            mount("proc", Path::new("/proc"), "proc", libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC, "")?;
            mount("tmpfs", Path::new("/tmp"), "tmpfs", libc::MS_NOSUID | libc::MS_NODEV, "mode=1777")?;
            make_dir(Path::new("/tmp/probe"))?;
            attach(&tree, Path::new("/tmp/probe"))?;
            let name = "probe";
            // SAFETY: name is valid for its length.
            check("sethostname", unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) }.into())?;
            Ok(())
        };
        std::process::exit(match steps() {
            Ok(()) => 0,
            Err(e) => fail(&e),
        });
    }
    match wait_for(pid) {
        Some(s) if libc::WIFEXITED(s) && libc::WEXITSTATUS(s) == 0 => {
            println!("{PROBE_OK}");
            0
        }
        _ => SETUP_FAILED,
    }
}
