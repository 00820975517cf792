//! Running one command under the policy: the confinement is planned here (cgroups, Landlock
//! ruleset, seccomp program, namespaces, rlimits), applied by the child to itself
//! (`child.rs`), and the command is watched: output read and capped, the deadline and the
//! caller's cancellation turned into SIGTERM then SIGKILL for the whole tree, and what the
//! walls refused (when the kernel says so) reported.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::caps::{Capabilities, WallState, capabilities, find_program, id_maps};
use super::child::{Plan, ReadOnlyBind, Resource};
use super::{Denied, Policy, SandboxError};

/// A command to run in the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The program (a name looked up on PATH, or a path).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Where it runs: inside the workspace or one of [`Command::writable`] (empty: the root).
    pub cwd: PathBuf,
    /// Variables added to the small environment every command gets (PATH, LANG, HOME set to
    /// a temporary folder…). The caller's own environment is never passed.
    pub env: Vec<(String, String)>,
    /// The longest it may run (capped by [`super::Limits::timeout`]).
    pub timeout: Duration,
    /// Extra folders it may write (a scratch copy of the workspace, say).
    pub writable: Vec<PathBuf>,
}

impl Command {
    /// `program` with `args`, in the workspace root, two minutes at most.
    pub fn new<S: Into<String>>(
        program: impl Into<String>,
        args: impl IntoIterator<Item = S>,
    ) -> Command {
        Command {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: PathBuf::new(),
            env: Vec::new(),
            timeout: Duration::from_secs(120),
            writable: Vec::new(),
        }
    }
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Output {
    /// Its exit status (`None`: killed by a signal).
    pub status: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Standard output (lossy UTF-8), at most [`super::Limits::output`] bytes.
    pub stdout: String,
    /// Standard error, likewise.
    pub stderr: String,
    /// Whether either was cut off at the limit.
    pub truncated: bool,
    /// Whether it was killed at the deadline.
    pub timed_out: bool,
    /// Whether it was killed because the caller cancelled.
    pub cancelled: bool,
    /// What the walls refused, when known (limits reached, output cut, deadline).
    pub denied: Vec<String>,
    /// Walls this machine could not put up for it (see [`super::capabilities`]), or, for a
    /// command run outside the sandbox with the user's approval ([`run_outside`]), that it had
    /// none.
    pub unconfined: Vec<String>,
    /// With `[sandbox] allow_net`: what the checking proxy decided for each connection
    /// (`allowed pypi.org:443 (151.101.0.223)`, `refused evil.example:443: not in [sandbox]
    /// allow_net`); refusals are in [`Output::denied`] too. Empty without `allow_net`.
    pub network: Vec<String>,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Output {
    /// Whether it exited with status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }
}

/// Folders every command may read and execute from.
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
    "/proc", "/sys", "/dev",
];

/// Device files every command may write.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Variables passed from sift's own environment, when set.
const PASSED_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
    "USER",
    "LOGNAME",
];

/// Runs a command under the policy: no network unless allowed (and then only through the
/// checking proxy, see `proxy.rs`), writes only to the root, the command's writable folders
/// and a temporary folder of its own, rlimits and cgroups, the whole tree killed at the
/// deadline or when `is_cancelled()` turns true.
pub fn run(
    policy: &Policy,
    cmd: &Command,
    is_cancelled: &dyn Fn() -> bool,
) -> Result<Output, SandboxError> {
    execute(policy, cmd, is_cancelled, Walls::Up)
}

/// Runs a command *outside* the sandbox: no namespaces, Landlock, seccomp or hidden secrets,
/// so it reaches the network and every file the user can. Only for a command the user approved
/// (the agent's `run` tool asks the front end's approver; nothing the model or a repository
/// says can call this). What stays: the small environment without API keys, the temporary
/// `HOME`, rlimits and cgroups, the output cap and the deadline for the whole tree.
pub fn run_outside(
    policy: &Policy,
    cmd: &Command,
    is_cancelled: &dyn Fn() -> bool,
) -> Result<Output, SandboxError> {
    execute(policy, cmd, is_cancelled, Walls::Down)
}

/// Whether a command runs inside the walls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walls {
    /// Every wall this machine has.
    Up,
    /// None (the user approved this one command): limits, environment and deadline only.
    Down,
}

/// The variables that point programs at the checking proxy.
const PROXY_ENV: &[&str] =
    &["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"];

fn execute(
    policy: &Policy,
    cmd: &Command,
    is_cancelled: &dyn Fn() -> bool,
    walls: Walls,
) -> Result<Output, SandboxError> {
    let caps = capabilities();
    let confined = walls == Walls::Up;
    let proxied = confined && !policy.allow_net().is_empty();
    if proxied && !caps.net_namespace {
        return Err(SandboxError::Unsupported(
            "[sandbox] allow_net needs a network namespace, which this machine does not give sift (see sift doctor); remove allow_net to run commands without any network".into(),
        ));
    }
    let limits = policy.limits();
    let started = Instant::now();

    let mut writable = Vec::new();
    for dir in cmd.writable.iter().chain(policy.extra_write()) {
        let dir = dir.canonicalize().map_err(|e| {
            Denied::new(
                &dir.display().to_string(),
                format!("writable folder does not resolve: {e}"),
            )
        })?;
        if dir.parent().is_none() || policy.home() == Some(dir.as_path()) {
            return Err(
                Denied::new(&dir.display().to_string(), "is too wide to be writable").into()
            );
        }
        writable.push(dir);
    }
    let cwd = if cmd.cwd.as_os_str().is_empty() {
        policy.root().to_owned()
    } else {
        let asked = cmd.cwd.to_string_lossy();
        let in_writable =
            cmd.cwd.canonicalize().ok().filter(|c| writable.iter().any(|w| c.starts_with(w)));
        match in_writable {
            Some(c) => c,
            None => policy.resolve_read(&asked)?,
        }
    };

    let temp = tempfile::Builder::new()
        .prefix("sift-sandbox-")
        .tempdir()
        .map_err(|source| SandboxError::Setup { what: "a temporary folder".into(), source })?;
    let temp_root = temp.path().canonicalize().unwrap_or_else(|_| temp.path().to_owned());
    let home = temp_root.join("home");
    let tmp = temp_root.join("tmp");
    for d in [&home, &tmp] {
        std::fs::create_dir(d)
            .map_err(|source| SandboxError::Setup { what: "a temporary folder".into(), source })?;
    }

    // The environment: a few variables, never the caller's secrets.
    let mut env: Vec<(String, String)> =
        PASSED_ENV.iter().filter_map(|k| sift_env::get(k).map(|v| ((*k).to_owned(), v))).collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    let toolchains = toolchain_dirs(policy.home());
    for (var, dir) in &toolchains {
        env.push(((*var).to_owned(), dir.display().to_string()));
    }
    for (k, v) in [("HOME", &home), ("TMPDIR", &tmp), ("TMP", &tmp), ("TEMP", &tmp)] {
        env.push((k.into(), v.display().to_string()));
    }
    env.extend(cmd.env.iter().cloned());
    if proxied {
        // Last, so that nothing the caller passed points elsewhere; NO_PROXY could not reach
        // anything anyway (the namespace has only the proxy), it is emptied for clarity.
        let url = format!("http://127.0.0.1:{}", super::proxy::PORT);
        env.retain(|(k, _)| {
            !PROXY_ENV.contains(&k.as_str()) && !k.eq_ignore_ascii_case("no_proxy")
        });
        env.extend(PROXY_ENV.iter().map(|k| ((*k).to_owned(), url.clone())));
    }

    let mut read_dirs: Vec<PathBuf> = toolchains.into_iter().map(|(_, d)| d).collect();
    read_dirs.extend(policy.extra_read().iter().cloned());
    // Folders on PATH (a toolchain's bin folder) and the tool folders they lie in.
    if let Some((_, path)) = env.iter().find(|(k, _)| k == "PATH") {
        for dir in std::env::split_paths(path) {
            read_dirs.extend(path_entry_dirs(&dir, policy.home()));
        }
    }

    let mut write_dirs = vec![policy.root().to_owned(), temp_root.clone()];
    write_dirs.extend(writable.iter().cloned());

    let cgroup = RunCgroup::create(&caps, limits.processes, limits.memory)?;
    let mut plan = Plan { cgroups: cgroup.procs_files()?, ..Plan::default() };
    if confined && caps.net_namespace {
        plan.unshare |= libc::CLONE_NEWNET;
    }
    // With allow_net the child listens for the proxy in its namespace and hands sift the socket.
    let proxy_channel = if proxied {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()
            .map_err(|source| SandboxError::Setup { what: "the proxy's channel".into(), source })?;
        plan.proxy = Some((theirs.into(), super::proxy::PORT));
        Some(std::os::fd::OwnedFd::from(ours))
    } else {
        None
    };
    let mut hidden = 0;
    if confined && caps.mount_namespace {
        plan.unshare |= libc::CLONE_NEWNS;
        for file in secret_files(policy) {
            if let Ok(path) = CString::new(file.as_os_str().as_bytes()) {
                plan.hide.push(path);
                hidden += 1;
            }
        }
        for dir in policy.read_only() {
            if dir.is_dir() {
                plan.read_only.push(ReadOnlyBind {
                    path: CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
                        Denied::new(&dir.display().to_string(), "contains a NUL byte")
                    })?,
                    keep: locked_flags(dir),
                });
            }
        }
    }
    if plan.unshare != 0 && !caps.root {
        plan.unshare |= libc::CLONE_NEWUSER;
        plan.id_maps = Some(id_maps());
    }
    let secs = limits.cpu.as_secs().max(1);
    plan.rlimits.push((libc::RLIMIT_CPU as Resource, secs, secs + 1));
    plan.rlimits.push((libc::RLIMIT_FSIZE as Resource, limits.file_size, limits.file_size));
    plan.rlimits.push((libc::RLIMIT_CORE as Resource, 0, 0));
    if cgroup.memory.is_none() {
        plan.rlimits.push((libc::RLIMIT_AS as Resource, limits.memory, limits.memory));
    }
    if cgroup.pids.is_none() {
        // RLIMIT_NPROC counts every process of the user, so the command gets its share on top
        // of what the user runs already (else a busy desktop could not fork at all).
        let nproc = user_processes() + limits.processes;
        plan.rlimits.push((libc::RLIMIT_NPROC as Resource, nproc, nproc));
    }
    plan.drop_capabilities = confined && caps.root;
    let abi = if confined { caps.landlock_abi.unwrap_or(0) } else { 0 };
    let proxy_port = proxied.then_some(super::proxy::PORT);
    if abi > 0 {
        plan.landlock =
            Some(landlock_ruleset(abi, &read_dirs, &write_dirs, proxy_port).map_err(|e| {
                SandboxError::Setup {
                    what: "the Landlock ruleset".into(),
                    source: std::io::Error::other(e),
                }
            })?);
    }
    if confined && caps.seccomp {
        plan.seccomp = seccomp_program(abi >= 9, proxied).map_err(|e| SandboxError::Setup {
            what: "the seccomp filter".into(),
            source: std::io::Error::other(e),
        })?;
    }

    let mut command = std::process::Command::new(resolve_program(&cmd.program, &env));
    command
        .args(&cmd.args)
        .current_dir(&cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    plan.install(&mut command);
    let mut child = command
        .spawn()
        .map_err(|source| SandboxError::Spawn { program: cmd.program.clone(), source })?;
    // The child's end of the channel went into the closure: dropped with the command.
    drop(command);
    let pgid = rustix::process::Pid::from_child(&child);
    // `spawn` returned after the child's `exec`, so its listening socket is already sent.
    let proxy = match &proxy_channel {
        Some(chan) => match super::child::receive_listener(chan) {
            Ok(listener) => Some(super::proxy::Proxy::start(
                listener,
                policy.allow_net().clone(),
                policy.resolver().clone(),
            )),
            Err(source) => {
                kill_tree(pgid, &cgroup, rustix::process::Signal::KILL);
                let _ = child.wait();
                return Err(SandboxError::Setup { what: "the checking proxy".into(), source });
            }
        },
        None => None,
    };

    let cap = limits.output;
    let out = child.stdout.take().map(|p| read_capped(p, cap));
    let err = child.stderr.take().map(|p| read_capped(p, cap));

    let deadline = started + cmd.timeout.min(limits.timeout);
    let mut output = Output::default();
    let mut nap = Duration::from_micros(200);
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|source| SandboxError::Setup {
            what: "waiting for the command".into(),
            source,
        })? {
            break status;
        }
        let now = Instant::now();
        let cancelled = is_cancelled();
        if cancelled || now >= deadline {
            output.cancelled = cancelled;
            output.timed_out = !cancelled;
            kill_tree(pgid, &cgroup, rustix::process::Signal::TERM);
            let grace_end = Instant::now() + limits.kill_grace;
            let mut ended = None;
            while Instant::now() < grace_end {
                if let Ok(Some(s)) = child.try_wait() {
                    ended = Some(s);
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            kill_tree(pgid, &cgroup, rustix::process::Signal::KILL);
            break match ended {
                Some(s) => s,
                None => child.wait().map_err(|source| SandboxError::Setup {
                    what: "waiting for the command".into(),
                    source,
                })?,
            };
        }
        std::thread::sleep(nap.min(deadline.saturating_duration_since(now)));
        nap = (nap * 2).min(Duration::from_millis(10));
    };
    // Whatever it left behind goes with it.
    kill_tree(pgid, &cgroup, rustix::process::Signal::KILL);
    cgroup.empty();
    if let Some(proxy) = proxy {
        let report = proxy.stop();
        output.denied.extend(report.refused.iter().map(|r| format!("network: {r}")));
        output.network = report.network;
    }

    let collect = |reader: Option<std::sync::mpsc::Receiver<(Vec<u8>, bool)>>,
                   output: &mut Output| {
        let Some(rx) = reader else { return String::new() };
        match rx.recv_timeout(Duration::from_secs(2)) {
            Ok((bytes, cut)) => {
                output.truncated |= cut;
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Err(_) => {
                output.truncated = true;
                output.denied.push(
                    "a process that escaped the tree kept the output open: it was cut".into(),
                );
                String::new()
            }
        }
    };
    output.stdout = collect(out, &mut output);
    output.stderr = collect(err, &mut output);
    output.status = status.code();
    output.signal = status.signal();
    output.elapsed = started.elapsed();

    if output.timed_out {
        output.denied.push(format!(
            "deadline of {:?} reached: the whole tree was killed",
            cmd.timeout.min(limits.timeout)
        ));
    }
    if output.cancelled {
        output.denied.push("cancelled: the whole tree was killed".into());
    }
    if output.truncated {
        output.denied.push(format!(
            "output over {} bytes: the rest was cut off (the command's later writes failed)",
            limits.output
        ));
    }
    match output.signal {
        Some(libc::SIGXCPU) => output.denied.push(format!("CPU time limit of {secs} s reached")),
        Some(libc::SIGXFSZ) => {
            output.denied.push(format!("file size limit of {} bytes reached", limits.file_size))
        }
        _ => {}
    }
    output.denied.extend(cgroup.events(limits));
    if hidden > 0 {
        output.denied.push(format!(
            "{hidden} secret file(s) in the workspace were hidden (they read as empty; writes to them are discarded)"
        ));
    }
    cgroup.remove();
    output.unconfined = match walls {
        Walls::Up => caps
            .walls()
            .into_iter()
            .filter(|w| w.state == WallState::Missing)
            .map(|w| format!("{}: {}", w.name, w.how))
            .collect(),
        Walls::Down => vec![
            "every wall: run outside the sandbox with the user's approval (network, files and secrets were reachable; limits, environment and deadline applied)".into(),
        ],
    };
    drop(temp);
    Ok(output)
}

/// Folders the walk for secret files does not enter: version control, dependencies and
/// build output (large, and not where a project keeps its credentials).
const NOT_WALKED: &[&str] = &[".git", ".sift", ".hg", ".svn", ".jj", "node_modules", "target"];

/// The most entries the walk for secret files looks at (a bound on the start-up cost).
const MAX_WALKED: usize = 200_000;

/// The workspace's files that match the secret patterns (not following symbolic links):
/// commands see them empty. Ignore files are not consulted: `.env` is usually ignored by git
/// and is exactly what must be hidden.
fn secret_files(policy: &Policy) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![policy.root().to_owned()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WALKED {
                return found;
            }
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            if kind.is_dir() {
                if !NOT_WALKED.iter().any(|n| entry.file_name() == *n) {
                    stack.push(path);
                }
            } else if kind.is_file()
                && let Ok(rel) = path.strip_prefix(policy.root())
                && policy.is_secret(rel)
            {
                found.push(path);
            }
        }
    }
    found
}

/// How many processes (threads included, as the kernel counts them for `RLIMIT_NPROC`) the
/// effective user runs now.
fn user_processes() -> u64 {
    use std::os::unix::fs::MetadataExt;
    let uid = rustix::process::geteuid().as_raw();
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .map(|e| std::fs::read_dir(e.path().join("task")).map_or(1, |t| t.count() as u64))
        .sum()
}

/// The program as a path, looked up on the command's own PATH (so sift's PATH and the
/// command's agree).
fn resolve_program(program: &str, env: &[(String, String)]) -> PathBuf {
    if program.contains('/') {
        return PathBuf::from(program);
    }
    if let Some((_, path)) = env.iter().find(|(k, _)| k == "PATH") {
        for dir in std::env::split_paths(path) {
            let candidate = dir.join(program);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    find_program(program).unwrap_or_else(|| PathBuf::from(program))
}

/// Toolchain folders commands need to build and test (`CARGO_HOME`, `RUSTUP_HOME`,
/// `PYENV_ROOT`, `NVM_DIR`, or their defaults in the home folder), with the variable that names
/// each: HOME points elsewhere inside, so the variable is passed.
fn toolchain_dirs(home: Option<&Path>) -> Vec<(&'static str, PathBuf)> {
    let mut dirs = Vec::new();
    for (var, default) in [
        ("CARGO_HOME", ".cargo"),
        ("RUSTUP_HOME", ".rustup"),
        ("PYENV_ROOT", ".pyenv"),
        ("NVM_DIR", ".nvm"),
    ] {
        let dir =
            sift_env::get_os(var).map(PathBuf::from).or_else(|| home.map(|h| h.join(default)));
        if let Some(dir) = dir.and_then(|d| d.canonicalize().ok()).filter(|d| d.is_dir()) {
            dirs.push((var, dir));
        }
    }
    dirs
}

/// Folders of the home folder that hold credentials or settings with tokens: never readable,
/// even when PATH leads into them.
const HOME_PRIVATE: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config",
    ".docker",
    ".kube",
    ".password-store",
    ".local",
    ".cache",
    ".mozilla",
    ".thunderbird",
];

/// The folders a PATH entry makes readable: the entry itself, and when it lies in a tool's
/// folder of the home folder (`~/.pyenv/shims`), that tool's folder (`~/.pyenv`), whose
/// programs the entry's scripts run. Nothing when the entry holds the home folder, or lies in
/// one of its private folders (`~/.local/bin` itself stays readable).
fn path_entry_dirs(dir: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    if !dir.is_absolute() || !dir.is_dir() {
        return Vec::new();
    }
    let Some(home) = home else { return vec![dir.to_owned()] };
    if home.starts_with(dir) {
        return Vec::new();
    }
    let Ok(rel) = dir.strip_prefix(home) else { return vec![dir.to_owned()] };
    let Some(first) = rel.components().next() else { return Vec::new() };
    let first = first.as_os_str();
    if HOME_PRIVATE.iter().any(|p| first == *p) {
        return if first == ".local" { vec![dir.to_owned()] } else { Vec::new() };
    }
    vec![home.join(first)]
}

/// The mount flags a read-only remount of `dir` must keep (those locked in a user namespace).
fn locked_flags(dir: &Path) -> libc::c_ulong {
    let Ok(stat) = rustix::fs::statvfs(dir) else { return 0 };
    let mut keep = 0;
    for (st, ms) in [
        (rustix::fs::StatVfsMountFlags::NOSUID, libc::MS_NOSUID),
        (rustix::fs::StatVfsMountFlags::NODEV, libc::MS_NODEV),
        (rustix::fs::StatVfsMountFlags::NOEXEC, libc::MS_NOEXEC),
    ] {
        if stat.f_flag.contains(st) {
            keep |= ms;
        }
    }
    keep
}

/// The Landlock ruleset: reads and writes as planned; no TCP at all, except connecting to the
/// checking proxy's port (`proxy_port`, with `allow_net`) in the command's own namespace.
fn landlock_ruleset(
    abi: i32,
    read: &[PathBuf],
    write: &[PathBuf],
    proxy_port: Option<u16>,
) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
        path_beneath_rules,
    };
    let all = AccessFs::from_all(ABI::V9);
    let read_access = AccessFs::from_read(ABI::V9);
    let mut ruleset = Ruleset::default().handle_access(all)?;
    if abi >= 4 {
        // No TCP at all (bind or connect): the network namespace and seccomp already refuse.
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI::V9))?;
    }
    if abi >= 6 {
        ruleset = ruleset.scope(Scope::from_all(ABI::V9))?;
    }
    let mut created = ruleset
        .create()?
        .add_rules(path_beneath_rules(SYSTEM_READ, read_access))?
        .add_rules(path_beneath_rules(read, read_access))?
        .add_rules(path_beneath_rules(DEVICES, all))?
        .add_rules(path_beneath_rules(write, all))?;
    if let Some(port) = proxy_port.filter(|_| abi >= 4) {
        created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
    }
    Ok(created)
}

/// The seccomp program: every socket refused but `AF_UNIX` ones (those too unless Landlock can
/// confine them, `unix_ok`) and, with `allow_net` (`inet_ok`), IPv4 and IPv6 ones, which in the
/// command's namespace reach nothing but the checking proxy; and the calls that reach around
/// the other walls (io_uring, which seccomp cannot see into; `setns`; `bpf`; the kernel
/// keyring). `None` on an architecture seccompiler does not know.
fn seccomp_program(
    unix_ok: bool,
    inet_ok: bool,
) -> Result<Option<seccompiler::BpfProgram>, seccompiler::BackendError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let arch = if cfg!(target_arch = "x86_64") {
        TargetArch::x86_64
    } else if cfg!(target_arch = "aarch64") {
        TargetArch::aarch64
    } else if cfg!(target_arch = "riscv64") {
        TargetArch::riscv64
    } else {
        return Ok(None);
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // A socket call matches (and is refused) when its family is none of those allowed.
    let mut allowed = Vec::new();
    if unix_ok {
        allowed.push(libc::AF_UNIX);
    }
    if inet_ok {
        allowed.extend([libc::AF_INET, libc::AF_INET6]);
    }
    let socket_rule = if allowed.is_empty() {
        Vec::new()
    } else {
        let not_allowed = allowed
            .iter()
            .map(|&family| {
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
            })
            .collect::<Result<Vec<_>, _>>()?;
        vec![SeccompRule::new(not_allowed)?]
    };
    rules.insert(libc::SYS_socket, socket_rule);
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_setns,
        libc::SYS_bpf,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
    ] {
        rules.insert(nr, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )?;
    Ok(Some(filter.try_into()?))
}

/// Reads a pipe on a thread, keeping at most `cap` bytes; past it, closes the pipe.
fn read_capped<R: Read + Send + 'static>(
    mut pipe: R,
    cap: u64,
) -> std::sync::mpsc::Receiver<(Vec<u8>, bool)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut cut = false;
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = (cap as usize).saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    if n > room {
                        cut = true;
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        drop(pipe);
        let _ = tx.send((kept, cut));
    });
    rx
}

fn kill_tree(pgid: rustix::process::Pid, cgroup: &RunCgroup, signal: rustix::process::Signal) {
    let _ = rustix::process::kill_process_group(pgid, signal);
    for pid in cgroup.pids() {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

/// The command's own cgroups (v1 pids and memory), when sift may make them.
struct RunCgroup {
    pids: Option<PathBuf>,
    memory: Option<PathBuf>,
}

impl RunCgroup {
    fn create(caps: &Capabilities, processes: u64, memory: u64) -> Result<RunCgroup, SandboxError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("run-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let setup =
            |what: &str, source| SandboxError::Setup { what: format!("the {what} cgroup"), source };
        let mut made = RunCgroup { pids: None, memory: None };
        if let Some(parent) = &caps.cgroup_pids {
            let dir = parent.join(&name);
            std::fs::create_dir(&dir).map_err(|e| setup("pids", e))?;
            made.pids = Some(dir.clone());
            std::fs::write(dir.join("pids.max"), processes.to_string())
                .map_err(|e| setup("pids", e))?;
        }
        if let Some(parent) = &caps.cgroup_memory {
            let dir = parent.join(&name);
            std::fs::create_dir(&dir).map_err(|e| setup("memory", e))?;
            made.memory = Some(dir.clone());
            std::fs::write(dir.join("memory.limit_in_bytes"), memory.to_string())
                .map_err(|e| setup("memory", e))?;
            // No swapping around the limit, where the kernel accounts swap.
            let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), memory.to_string());
        }
        Ok(made)
    }

    fn procs_files(&self) -> Result<Vec<std::os::fd::OwnedFd>, SandboxError> {
        let mut files = Vec::new();
        for dir in self.pids.iter().chain(&self.memory) {
            let file =
                std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs")).map_err(
                    |source| SandboxError::Setup { what: "joining the cgroup".into(), source },
                )?;
            files.push(file.into());
        }
        Ok(files)
    }

    fn pids(&self) -> Vec<i32> {
        let Some(dir) = self.pids.as_ref().or(self.memory.as_ref()) else { return Vec::new() };
        std::fs::read_to_string(dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Kills what is left until nothing is (a fork bomb refills as it is killed).
    fn empty(&self) {
        for _ in 0..400 {
            let pids = self.pids();
            if pids.is_empty() {
                return;
            }
            for pid in pids {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The limits the kernel says were reached.
    fn events(&self, limits: &super::Limits) -> Vec<String> {
        let mut events = Vec::new();
        if let Some(dir) = &self.pids {
            let text = std::fs::read_to_string(dir.join("pids.events")).unwrap_or_default();
            let hits: u64 = text
                .lines()
                .filter_map(|l| l.strip_prefix("max "))
                .filter_map(|n| n.trim().parse::<u64>().ok())
                .sum();
            if hits > 0 {
                events.push(format!(
                    "process limit of {} reached ({hits} forks refused)",
                    limits.processes
                ));
            }
        }
        if let Some(dir) = &self.memory {
            let oom = std::fs::read_to_string(dir.join("memory.oom_control")).unwrap_or_default();
            let kills: u64 = oom
                .lines()
                .filter_map(|l| l.strip_prefix("oom_kill "))
                .filter_map(|n| n.trim().parse::<u64>().ok())
                .sum();
            let fails: u64 = std::fs::read_to_string(dir.join("memory.failcnt"))
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or(0);
            if kills > 0 {
                events.push(format!(
                    "memory limit of {} bytes reached ({kills} processes killed)",
                    limits.memory
                ));
            } else if fails > 0 {
                events.push(format!("memory limit of {} bytes reached", limits.memory));
            }
        }
        events
    }

    fn remove(&self) {
        for dir in self.pids.iter().chain(&self.memory) {
            for _ in 0..50 {
                if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.empty();
        self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_entries_open_their_tool_folder_but_never_private_ones() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        for d in [".pyenv/shims", ".local/bin", ".ssh/bin", "bin"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        let h = Some(home.as_path());
        assert_eq!(path_entry_dirs(&home.join(".pyenv/shims"), h), [home.join(".pyenv")]);
        assert_eq!(path_entry_dirs(&home.join(".local/bin"), h), [home.join(".local/bin")]);
        assert!(path_entry_dirs(&home.join(".ssh/bin"), h).is_empty());
        assert!(path_entry_dirs(&home, h).is_empty());
        assert!(path_entry_dirs(Path::new("/"), h).is_empty());
        assert_eq!(path_entry_dirs(&home.join("bin"), h), [home.join("bin")]);
        assert_eq!(path_entry_dirs(Path::new("/usr/bin"), h), [PathBuf::from("/usr/bin")]);
        assert!(path_entry_dirs(Path::new("relative/bin"), h).is_empty());
    }
}
