//! The sandbox: one policy for every path the agent touches and every command it runs.
//!
//! - [`Policy`] — built from configuration only (`[sandbox]`, [`SandboxSettings`]), never from
//!   anything a model says. It confines paths to the workspace after resolving `..`, `~`,
//!   absolute paths and symbolic links ([`Policy::resolve_read`], [`Policy::resolve_write`]),
//!   keeps `.git/` and `.sift/` read-only, and refuses files matching the secret patterns (the
//!   indexer's [`SecretPatterns`], the same definition the index uses). [`Policy::open_read`]
//!   and [`Policy::open_write`] open through `openat2(RESOLVE_BENEATH)`, so a symbolic link
//!   swapped in after the check cannot lead outside.
//! - [`run`] — a command under the policy on Linux: a new network namespace (loopback only,
//!   and down) plus a seccomp filter that refuses every socket but socket pairs — or, with
//!   `[sandbox] allow_net`, that namespace's loopback up with sift's checking proxy as the only
//!   thing listening on it (`proxy.rs`) —, Landlock (best
//!   effort by ABI) so that only the workspace, the command's temporary folder and the extra
//!   writable folders can be written and only system folders, toolchains and the workspace
//!   read, `.git/` and `.sift/` bound read-only in a mount namespace, rlimits and cgroups on
//!   CPU, memory, processes and file size, an environment of a few allowed variables, output
//!   capped, and the whole process tree killed at the deadline or on cancellation.
//! - [`capabilities`] — what this kernel offers and what sift falls back to, for `sift doctor`
//!   and `sift sandbox`: where a wall is missing, sift says so ([`Output::unconfined`]), never
//!   silently less.
//!
//! The only `unsafe` code is in `child.rs`: the system calls between fork and exec.

mod caps;
mod child;
mod path;
mod proxy;
mod run;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use caps::{Capabilities, Wall, WallState, capabilities};
pub use proxy::{Allowlist, Resolver, is_public};
pub use run::{Command, Output, run, run_outside};
pub use sift_indexer::secrets::{DEFAULT_SECRET_PATTERNS, SecretPatterns};

/// Resource limits for a command (and the whole tree of processes it starts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// CPU time per process (`RLIMIT_CPU`; SIGXCPU, then SIGKILL a second later).
    pub cpu: Duration,
    /// Memory for the whole tree (a memory cgroup), or address space per process where no
    /// cgroup can be made (`RLIMIT_AS`).
    pub memory: u64,
    /// Processes and threads for the whole tree (a pids cgroup), or where no cgroup can be
    /// made this many more than the user runs already (`RLIMIT_NPROC`, which counts all of the
    /// user's processes and which the kernel does not apply to root).
    pub processes: u64,
    /// The largest file a command may write (`RLIMIT_FSIZE`).
    pub file_size: u64,
    /// Bytes kept of stdout and of stderr each; past it the pipe is closed (the command gets
    /// `EPIPE`/SIGPIPE) and the output is marked truncated.
    pub output: u64,
    /// The longest a command may run, whatever its [`Command::timeout`] asks.
    pub timeout: Duration,
    /// How long a command has between SIGTERM and SIGKILL at the deadline.
    pub kill_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpu: Duration::from_secs(600),
            memory: 4 << 30,
            processes: 512,
            file_size: 1 << 30,
            output: 1 << 20,
            timeout: Duration::from_secs(1800),
            kill_grace: Duration::from_secs(1),
        }
    }
}

/// The `[sandbox]` section of the configuration (`sift_engine::config` fills it; this crate
/// reads no configuration file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// Host names commands may reach through the checking proxy (`pypi.org`,
    /// `*.pythonhosted.org`, `example.com:8443`; see [`Allowlist`]). Empty (the default): no
    /// network at all.
    pub allow_net: Vec<String>,
    /// Files that are secrets (globs; see [`SecretPatterns`]): never read by the agent, never
    /// indexed.
    pub secret_patterns: Vec<String>,
    /// Extra folders commands may read and execute from (toolchains are added by themselves).
    pub read: Vec<PathBuf>,
    /// Extra folders commands may write.
    pub write: Vec<PathBuf>,
    /// Resource limits.
    pub limits: Limits,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            allow_net: Vec::new(),
            secret_patterns: DEFAULT_SECRET_PATTERNS.iter().map(|p| (*p).to_owned()).collect(),
            read: Vec::new(),
            write: Vec::new(),
            limits: Limits::default(),
        }
    }
}

/// A path the policy refused, and why (shown to the model as the tool's error, and to users).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct Denied {
    /// The path as asked (NUL bytes shown escaped).
    pub path: String,
    /// Why, in words.
    pub reason: String,
}

impl Denied {
    pub(crate) fn new(path: &str, reason: impl Into<String>) -> Denied {
        Denied { path: path.escape_debug().to_string(), reason: reason.into() }
    }
}

/// What can go wrong building a policy or running a command.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The workspace root does not resolve.
    #[error("cannot open the workspace {path}: {source} (pass an existing folder)")]
    Root {
        /// The root given.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The root is a folder that cannot be confined to (`/`, the home folder itself).
    #[error("refusing {path} as a sandbox root: {reason}")]
    BadRoot {
        /// The root.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// A secret pattern does not parse.
    #[error("{0} (fix [sandbox] secret_patterns)")]
    Pattern(String),
    /// The policy asks for something this build cannot enforce.
    #[error("{0}")]
    Unsupported(String),
    /// A path the command needs was refused.
    #[error("{0}")]
    Denied(#[from] Denied),
    /// Setting up the command's confinement failed.
    #[error("cannot set up the sandbox ({what}): {source}")]
    Setup {
        /// Which step.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// The command could not be started.
    #[error("cannot start {program}: {source} (is it installed and on PATH?)")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// The agent's policy for one workspace: built from configuration only.
#[derive(Debug, Clone)]
pub struct Policy {
    root: PathBuf,
    read_only: Vec<PathBuf>,
    secrets: SecretPatterns,
    allow_net: Allowlist,
    resolver: Resolver,
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    limits: Limits,
    home: Option<PathBuf>,
}

impl Policy {
    /// The agent's policy for a workspace, from the `[sandbox]` configuration
    /// ([`SandboxSettings::default`] when there is none).
    pub fn for_workspace(root: &Path, settings: &SandboxSettings) -> Result<Policy, SandboxError> {
        let root = root
            .canonicalize()
            .map_err(|source| SandboxError::Root { path: root.to_owned(), source })?;
        if !root.is_dir() {
            return Err(SandboxError::Root {
                path: root,
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a folder"),
            });
        }
        let home = sift_env::get_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute())
            .map(|h| h.canonicalize().unwrap_or(h));
        if root.parent().is_none() {
            return Err(SandboxError::BadRoot {
                path: root,
                reason: "it is the whole file system",
            });
        }
        if home.as_deref() == Some(root.as_path()) {
            return Err(SandboxError::BadRoot {
                path: root,
                reason: "it is the home folder, which holds ~/.ssh and other secrets (open a project folder)",
            });
        }
        let allow_net = Allowlist::parse(&settings.allow_net).map_err(SandboxError::Unsupported)?;
        let secrets =
            SecretPatterns::new(&settings.secret_patterns).map_err(SandboxError::Pattern)?;
        let absolute = |dirs: &[PathBuf]| -> Vec<PathBuf> {
            dirs.iter()
                .filter_map(|d| {
                    let d = if d.is_relative() { root.join(d) } else { d.clone() };
                    d.canonicalize().ok()
                })
                .collect()
        };
        Ok(Policy {
            read_only: vec![root.join(".git"), root.join(".sift")],
            read: absolute(&settings.read),
            write: absolute(&settings.write),
            secrets,
            allow_net,
            resolver: Resolver::default(),
            limits: settings.limits.clone(),
            home,
            root,
        })
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folders inside the root that nothing in the sandbox may write (`.git`, `.sift`).
    pub fn read_only(&self) -> &[PathBuf] {
        &self.read_only
    }

    /// Hosts commands may reach through the proxy (empty: none).
    pub fn allow_net(&self) -> &Allowlist {
        &self.allow_net
    }

    /// The same policy with the proxy finding hosts through `resolver` (tests route a made-up
    /// name to a listener of their own; nothing in configuration can set this).
    #[doc(hidden)]
    pub fn with_resolver(mut self, resolver: Resolver) -> Policy {
        self.resolver = resolver;
        self
    }

    pub(crate) fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// The resource limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The secret patterns.
    pub fn secrets(&self) -> &SecretPatterns {
        &self.secrets
    }

    /// Extra folders commands may read (beyond the system's and the workspace).
    pub fn extra_read(&self) -> &[PathBuf] {
        &self.read
    }

    /// Extra folders commands may write (beyond the workspace and their temporary folder).
    pub fn extra_write(&self) -> &[PathBuf] {
        &self.write
    }

    /// A path the agent asked to read (relative to the root, or absolute): resolved (`..`,
    /// symbolic links, `~`) and checked. Refused: anything outside the workspace, secret files,
    /// files with other hard links (another name may be outside), NUL bytes.
    pub fn resolve_read(&self, path: &str) -> Result<PathBuf, Denied> {
        path::check_read(self, path)
    }

    /// The same for writes, creations and deletions; also refuses `.git/` and `.sift/` (any
    /// folder of those names), the root itself, and paths whose parent resolves outside.
    pub fn resolve_write(&self, path: &str) -> Result<PathBuf, Denied> {
        path::check_write(self, path)
    }

    /// Whether a workspace-relative path matches the secret patterns (never read into a
    /// prompt, never indexed).
    pub fn is_secret(&self, rel: &Path) -> bool {
        self.secrets.is_secret(rel)
    }

    /// Opens a file for reading as [`Policy::resolve_read`] allows, without a window between
    /// the check and the open: the open itself cannot leave the root (`openat2` with
    /// `RESOLVE_BENEATH`, or, on kernels without it, `O_NOFOLLOW` and a check of what was
    /// opened).
    pub fn open_read(&self, path: &str) -> Result<std::fs::File, Denied> {
        path::open_read(self, path)
    }

    /// Opens (creating it when missing, truncating it) a file for writing as
    /// [`Policy::resolve_write`] allows, with the same guarantee as [`Policy::open_read`]; the
    /// file is truncated only once it is known to be inside.
    pub fn open_write(&self, path: &str) -> Result<std::fs::File, Denied> {
        path::open_write(self, path)
    }

    pub(crate) fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }
}

impl Policy {
    /// The same walls around another folder (a scratch copy of the workspace that a checker
    /// runs in): the same secrets, network, limits and extra folders, with `.git/` and
    /// `.sift/` read-only there.
    pub fn for_root(&self, root: &Path) -> Result<Policy, SandboxError> {
        let root = root
            .canonicalize()
            .map_err(|source| SandboxError::Root { path: root.to_owned(), source })?;
        Ok(Policy { read_only: vec![root.join(".git"), root.join(".sift")], root, ..self.clone() })
    }
}
