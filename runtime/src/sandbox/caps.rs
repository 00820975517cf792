//! What this kernel (or container) offers the sandbox, probed once per process, and each wall
//! with the mechanism that holds it or what sift falls back to.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::child::{Plan, landlock_abi};

/// The mechanisms found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Whether sift runs as root (user namespaces are then not needed for the others).
    pub root: bool,
    /// The Landlock ABI version (`None`: the kernel has none, or it is disabled).
    pub landlock_abi: Option<i32>,
    /// Whether a process may make a user namespace (what an unprivileged user needs for the
    /// network and mount namespaces).
    pub user_namespaces: bool,
    /// Whether a command can get a network namespace of its own.
    pub net_namespace: bool,
    /// Whether a command can get a mount namespace of its own (for `.git/` and `.sift/`
    /// bound read-only).
    pub mount_namespace: bool,
    /// Whether seccomp filters can be loaded.
    pub seccomp: bool,
    /// The pids cgroup (v1) folder sift makes a cgroup per command in, when it can.
    pub cgroup_pids: Option<PathBuf>,
    /// The memory cgroup (v1) folder, likewise.
    pub cgroup_memory: Option<PathBuf>,
    /// Whether `openat2` (`RESOLVE_BENEATH`) is there for the agent's file tools.
    pub openat2: bool,
    /// `bwrap`, when installed (reported only: sift needs no extra program).
    pub bwrap: Option<PathBuf>,
}

/// Whether a wall holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WallState {
    /// Enforced by the kernel.
    Enforced,
    /// Held by a weaker mechanism (said how).
    Fallback,
    /// Not held here.
    Missing,
}

impl WallState {
    /// `enforced`, `fallback` or `missing`.
    pub fn as_str(self) -> &'static str {
        match self {
            WallState::Enforced => "enforced",
            WallState::Fallback => "fallback",
            WallState::Missing => "missing",
        }
    }
}

/// One wall of the sandbox and what holds it here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wall {
    /// What it keeps in or out.
    pub name: &'static str,
    /// Whether it holds.
    pub state: WallState,
    /// How, or what is missing and what sift does instead.
    pub how: String,
}

/// What this kernel/container offers (Landlock ABI, user/net/mount namespaces, seccomp,
/// cgroups, `openat2`, `bwrap`), probed once per process.
pub fn capabilities() -> Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(probe).clone()
}

fn probe() -> Capabilities {
    let root = rustix::process::geteuid().is_root();
    let user_namespaces = probe_unshare(libc::CLONE_NEWUSER, !root);
    let ns_flags = |f| if root { f } else { f | libc::CLONE_NEWUSER };
    let net_namespace = probe_unshare(ns_flags(libc::CLONE_NEWNET), !root);
    let mount_namespace = probe_unshare(ns_flags(libc::CLONE_NEWNS), !root);
    Capabilities {
        root,
        landlock_abi: landlock_abi(),
        user_namespaces,
        net_namespace,
        mount_namespace,
        seccomp: seccomp_available(),
        cgroup_pids: cgroup_parent("pids", "pids.max"),
        cgroup_memory: cgroup_parent("memory", "memory.limit_in_bytes"),
        openat2: rustix::fs::openat2(
            rustix::fs::CWD,
            ".",
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
            rustix::fs::ResolveFlags::BENEATH,
        )
        .is_ok(),
        bwrap: find_program("bwrap"),
    }
}

/// A program on PATH.
pub(super) fn find_program(name: &str) -> Option<PathBuf> {
    let path = sift_env::get_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Whether a child can `unshare(flags)` (with an identity mapping when a user namespace is
/// made), tried on `true`.
fn probe_unshare(flags: libc::c_int, map_ids: bool) -> bool {
    let Some(program) = find_program("true") else { return false };
    let mut cmd = std::process::Command::new(program);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut plan = Plan { unshare: flags, ..Plan::default() };
    if map_ids && flags & libc::CLONE_NEWUSER != 0 {
        plan.id_maps = Some(id_maps());
    }
    plan.install(&mut cmd);
    cmd.status().is_ok_and(|s| s.success())
}

/// The uid and gid maps that keep the user who they are inside a user namespace.
pub(super) fn id_maps() -> (std::ffi::CString, std::ffi::CString) {
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let map = |id: u32| std::ffi::CString::new(format!("{id} {id} 1\n")).expect("no NUL");
    (map(uid), map(gid))
}

fn seccomp_available() -> bool {
    let mut status = String::new();
    std::fs::File::open("/proc/self/status").and_then(|mut f| f.read_to_string(&mut status)).is_ok()
        && status.lines().any(|l| l.starts_with("Seccomp:"))
}

/// `/sys/fs/cgroup/<controller>/sift`, made when missing, when sift may make cgroups in it.
fn cgroup_parent(controller: &str, marker: &str) -> Option<PathBuf> {
    let base = Path::new("/sys/fs/cgroup").join(controller);
    if !base.join(marker).exists() && !base.join("cgroup.procs").exists() {
        return None;
    }
    let parent = base.join("sift");
    if !parent.is_dir() && std::fs::create_dir(&parent).is_err() {
        return None;
    }
    let probe = parent.join(format!("probe-{}", std::process::id()));
    std::fs::create_dir(&probe).ok()?;
    let ok = probe.join("cgroup.procs").exists();
    let _ = std::fs::remove_dir(&probe);
    ok.then_some(parent)
}

impl Capabilities {
    /// Every wall and what holds it here.
    pub fn walls(&self) -> Vec<Wall> {
        use WallState::*;
        let abi = self.landlock_abi.unwrap_or(0);
        let mut walls = Vec::new();
        let mut wall = |name, state, how: String| walls.push(Wall { name, state, how });
        let landlock = if abi > 0 {
            (Enforced, format!("Landlock ABI {abi}"))
        } else {
            (Missing, "no Landlock in this kernel: commands can write and read wherever the user can (the agent's own file tools still apply the path policy)".into())
        };
        wall(
            "writes outside the workspace",
            landlock.0,
            if abi > 0 {
                format!(
                    "{}: only the workspace, the command's temporary folder and [sandbox] write",
                    landlock.1
                )
            } else {
                landlock.1.clone()
            },
        );
        wall(
            "reads outside the workspace (~/.ssh…)",
            landlock.0,
            if abi > 0 {
                format!(
                    "{}: only system folders, toolchains, [sandbox] read and the workspace",
                    landlock.1
                )
            } else {
                landlock.1.clone()
            },
        );
        if self.mount_namespace {
            wall(
                ".git/ and .sift/ read-only",
                Enforced,
                "bound read-only in a mount namespace".into(),
            );
        } else {
            wall(
                ".git/ and .sift/ read-only",
                Missing,
                "no mount namespace here: commands can write .git/ and .sift/ (the agent's own file tools refuse to)".into(),
            );
        }
        let net = match (self.net_namespace, self.seccomp) {
            (true, true) => (Enforced, "a network namespace of its own (loopback down) and seccomp refusing every socket but Unix ones".into()),
            (false, true) => (Enforced, "seccomp refuses every socket but Unix ones (no network namespace here)".into()),
            (true, false) => (Fallback, "a network namespace of its own (no seccomp here)".into()),
            (false, false) => (Missing, "neither network namespaces nor seccomp here: commands reach the network".into()),
        };
        wall("network", net.0, net.1);
        let allowlist = match (self.net_namespace, abi >= 4) {
            (true, true) => (
                Enforced,
                "only through sift's checking proxy, the one listener in the command's network namespace; Landlock allows TCP to its port alone".into(),
            ),
            (true, false) => (
                Fallback,
                format!("only through sift's checking proxy, the one listener in the command's network namespace (Landlock ABI {abi} < 4 cannot also pin the port)"),
            ),
            (false, _) => (
                Missing,
                "no network namespace here: [sandbox] allow_net is refused with an error rather than opening the network".into(),
            ),
        };
        wall("hosts of [sandbox] allow_net", allowlist.0, allowlist.1);
        if abi >= 9 {
            wall(
                "Unix sockets outside the workspace",
                Enforced,
                format!("Landlock ABI {abi} resolves Unix sockets only inside"),
            );
        } else if self.seccomp {
            wall(
                "Unix sockets outside the workspace",
                Fallback,
                format!(
                    "Landlock ABI {abi} < 9 cannot tell sockets inside from outside, so seccomp refuses socket(AF_UNIX) altogether (socketpair still works)"
                ),
            );
        } else {
            wall(
                "Unix sockets outside the workspace",
                Missing,
                "no seccomp and Landlock < 9".into(),
            );
        }
        if self.cgroup_pids.is_some() {
            wall("processes (fork bombs)", Enforced, "a pids cgroup per command".into());
        } else if self.root {
            wall(
                "processes (fork bombs)",
                Missing,
                "no pids cgroup sift may make, and RLIMIT_NPROC does not apply to root".into(),
            );
        } else {
            wall(
                "processes (fork bombs)",
                Fallback,
                "RLIMIT_NPROC (counts all of the user's processes)".into(),
            );
        }
        if self.cgroup_memory.is_some() {
            wall("memory", Enforced, "a memory cgroup per command".into());
        } else {
            wall(
                "memory",
                Fallback,
                "RLIMIT_AS per process (no memory cgroup sift may make)".into(),
            );
        }
        wall("CPU time and file size", Enforced, "RLIMIT_CPU, RLIMIT_FSIZE".into());
        wall(
            "the whole process tree at the deadline",
            if self.cgroup_pids.is_some() { Enforced } else { Fallback },
            if self.cgroup_pids.is_some() {
                "SIGTERM, then SIGKILL to every process of the command's cgroup".into()
            } else {
                "SIGTERM, then SIGKILL to the process group (a process that calls setsid escapes it)".into()
            },
        );
        if abi >= 6 {
            wall(
                "signals and ptrace to outside processes",
                Enforced,
                format!("Landlock ABI {abi} scopes them"),
            );
        } else if abi > 0 {
            wall(
                "signals and ptrace to outside processes",
                Fallback,
                "Landlock refuses ptrace; signals need ABI 6".into(),
            );
        } else {
            wall("signals and ptrace to outside processes", Missing, "no Landlock".into());
        }
        if self.root {
            wall(
                "root's powers",
                Enforced,
                "the capability bounding set is emptied before exec".into(),
            );
        }
        wall(
            "environment (API keys)",
            Enforced,
            "only PATH, LANG and a few others are passed; HOME is a temporary folder".into(),
        );
        wall(
            "agent file tools: links swapped in after a check",
            if self.openat2 { Enforced } else { Fallback },
            if self.openat2 {
                "openat2 with RESOLVE_BENEATH".into()
            } else {
                "O_NOFOLLOW and a check of what was opened (no openat2 here)".into()
            },
        );
        walls
    }
}
