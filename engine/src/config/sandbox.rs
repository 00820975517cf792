//! `[sandbox]`: the agent's walls (`sift_runtime::sandbox::SandboxSettings`): the network
//! allowlist, the secret patterns, extra folders, the limits.
//!
//! A repository cannot loosen its own sandbox: `allow_net`, `read`, `write` and
//! `secret_patterns` (which could drop the defaults) are refused from `.sift/config.toml`,
//! which whoever wrote the repository controls; they are taken from the user file, the editor's
//! settings, the environment and flags. The repository may tighten: `extra_secret_patterns`
//! and the limits.

use std::time::Duration;

use sift_runtime::sandbox::{DEFAULT_SECRET_PATTERNS, Limits, Policy, SandboxSettings};

use super::spec::{Default, Key, Kind, Section};
use super::{Config, Invalid, Source};

/// The `[sandbox]` section's keys.
pub const SECTION: Section = Section {
    name: "sandbox",
    doc: "The agent's walls: what commands may reach, which files are secrets, the limits.",
    strict: true,
    elsewhere: &[],
    refused: &[],
    keys: &[
        Key {
            name: "allow_net",
            kind: Kind::List { item: "a host name" },
            default: Default::List(&[]),
            env: None,
            in_files: true,
            doc: "Hosts commands may reach, only through sift's checking proxy (`pypi.org`, `*.pythonhosted.org` for its subdomains, `example.com:8443`; ports 80 and 443 unless one is named; never a private or loopback address); empty: no network at all. Not read from the repository's file.",
        },
        Key {
            name: "secret_patterns",
            kind: Kind::List { item: "a glob" },
            default: Default::List(DEFAULT_SECRET_PATTERNS),
            env: None,
            in_files: true,
            doc: "Files that are secrets, never read by the agent nor indexed: globs on the file name, or on the relative path when they hold a /. Replaces the defaults; not read from the repository's file (use extra_secret_patterns there).",
        },
        Key {
            name: "extra_secret_patterns",
            kind: Kind::List { item: "a glob" },
            default: Default::List(&[]),
            env: None,
            in_files: true,
            doc: "More secret patterns, added to secret_patterns.",
        },
        Key {
            name: "read",
            kind: Kind::List { item: "a folder" },
            default: Default::List(&[]),
            env: None,
            in_files: true,
            doc: "Extra folders commands may read and run programs from (system folders, CARGO_HOME, RUSTUP_HOME and PATH are readable already); relative to the workspace. Not read from the repository's file.",
        },
        Key {
            name: "write",
            kind: Kind::List { item: "a folder" },
            default: Default::List(&[]),
            env: None,
            in_files: true,
            doc: "Extra folders commands may write (the workspace and a temporary folder of their own are writable already); relative to the workspace. Not read from the repository's file.",
        },
        Key {
            name: "timeout_secs",
            kind: Kind::Count { min: 1, max: u64::MAX },
            default: Default::Count(1800),
            env: None,
            in_files: true,
            doc: "The longest any command may run, in seconds; its whole process tree is killed then.",
        },
        Key {
            name: "cpu_secs",
            kind: Kind::Count { min: 1, max: u64::MAX },
            default: Default::Count(600),
            env: None,
            in_files: true,
            doc: "CPU time per process, in seconds (RLIMIT_CPU).",
        },
        Key {
            name: "memory",
            kind: Kind::Size,
            default: Default::Text("4 GiB"),
            env: None,
            in_files: true,
            doc: "Memory for a command's whole process tree (a memory cgroup; where none can be made, address space per process).",
        },
        Key {
            name: "processes",
            kind: Kind::Count { min: 1, max: u64::MAX },
            default: Default::Count(512),
            env: None,
            in_files: true,
            doc: "Processes and threads for a command's whole tree (a pids cgroup; where none can be made, RLIMIT_NPROC).",
        },
        Key {
            name: "file_size",
            kind: Kind::Size,
            default: Default::Text("1 GiB"),
            env: None,
            in_files: true,
            doc: "The largest file a command may write (RLIMIT_FSIZE).",
        },
        Key {
            name: "output",
            kind: Kind::Size,
            default: Default::Text("1 MiB"),
            env: None,
            in_files: true,
            doc: "Bytes kept of a command's stdout and of its stderr; past it the rest is cut off.",
        },
        Key {
            name: "kill_grace_ms",
            kind: Kind::Count { min: 0, max: 60_000 },
            default: Default::Count(1000),
            env: None,
            in_files: true,
            doc: "Milliseconds between SIGTERM and SIGKILL at the deadline.",
        },
    ],
};

/// The keys a repository's own file may not set.
const LOOSENING: &[&str] = &["allow_net", "secret_patterns", "read", "write"];

impl Config {
    /// `[sandbox]`. Fails when the repository's file sets a key that would loosen the
    /// sandbox.
    pub fn sandbox(&self) -> Result<SandboxSettings, Invalid> {
        let s = self.section(&SECTION)?;
        for key in LOOSENING {
            s.not_from_repo(key, "a repository cannot loosen its own sandbox: set it in your user file (~/.config/sift/config.toml) or the editor's settings")?;
        }
        let mut secret_patterns = s.list("secret_patterns");
        secret_patterns.extend(s.list("extra_secret_patterns"));
        let paths = |key| s.list(key).into_iter().map(std::path::PathBuf::from).collect();
        Ok(SandboxSettings {
            allow_net: s.list("allow_net"),
            secret_patterns,
            read: paths("read"),
            write: paths("write"),
            limits: Limits {
                cpu: Duration::from_secs(s.count("cpu_secs")),
                memory: s.count("memory"),
                processes: s.count("processes"),
                file_size: s.count("file_size"),
                output: s.count("output"),
                timeout: Duration::from_secs(s.count("timeout_secs")),
                kill_grace: Duration::from_millis(s.count("kill_grace_ms")),
            },
        })
    }

    /// The secret patterns of `[sandbox]` (`secret_patterns` and `extra_secret_patterns`), the
    /// one definition the index and the sandbox share. Unlike [`Config::sandbox`], a
    /// repository's `secret_patterns` is ignored here rather than an error (the defaults
    /// apply), so the index never indexes fewer secrets because of it.
    pub fn secret_patterns(&self) -> Vec<String> {
        let Ok(s) = self.section(&SECTION) else {
            return DEFAULT_SECRET_PATTERNS.iter().map(|p| (*p).to_owned()).collect();
        };
        let mut patterns = match s.source("secret_patterns") {
            Source::Repo(_) => DEFAULT_SECRET_PATTERNS.iter().map(|p| (*p).to_owned()).collect(),
            _ => s.list("secret_patterns"),
        };
        patterns.extend(s.list("extra_secret_patterns"));
        patterns
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Flag, Inputs};
    use super::*;

    fn load(repo: &str, user: &str) -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".sift")).unwrap();
        std::fs::write(root.join(".sift/config.toml"), repo).unwrap();
        let xdg = dir.path().join("xdg");
        std::fs::create_dir_all(xdg.join("sift")).unwrap();
        std::fs::write(xdg.join("sift/config.toml"), user).unwrap();
        let xdg_text = xdg.display().to_string();
        let env = move |k: &str| (k == "XDG_CONFIG_HOME").then(|| xdg_text.clone());
        let config = Config::load(&Inputs::new(Some(&root), &env)).unwrap();
        (dir, config)
    }

    #[test]
    fn defaults_are_no_network_the_default_secrets_and_the_default_limits() {
        let (_d, config) = load("", "");
        let s = config.sandbox().unwrap();
        assert_eq!(s, SandboxSettings::default());
    }

    #[test]
    fn the_user_file_sets_everything_and_lists_parse() {
        let (_d, config) = load(
            "[sandbox]\nextra_secret_patterns = [\"*.secret\"]\nmemory = \"256 MiB\"\n",
            "[sandbox]\nwrite = [\"/tmp/scratch\"]\nsecret_patterns = [\"*.pem\"]\ntimeout_secs = 5\n",
        );
        let s = config.sandbox().unwrap();
        assert_eq!(s.write, [std::path::PathBuf::from("/tmp/scratch")]);
        assert_eq!(s.secret_patterns, ["*.pem", "*.secret"]);
        assert_eq!(s.limits.memory, 256 << 20);
        assert_eq!(s.limits.timeout, Duration::from_secs(5));
        assert_eq!(config.secret_patterns(), ["*.pem", "*.secret"]);
    }

    #[test]
    fn a_repository_cannot_loosen_its_own_sandbox() {
        for key in [
            "allow_net = [\"evil.example\"]",
            "write = [\"/\"]",
            "read = [\"/root\"]",
            "secret_patterns = []",
        ] {
            let (_d, config) = load(&format!("[sandbox]\n{key}\n"), "");
            let err = config.sandbox().unwrap_err();
            assert!(err.reason.contains("cannot loosen"), "{key}: {err:?}");
        }
        // The index keeps the default secrets whatever the repository says.
        let (_d, config) = load("[sandbox]\nsecret_patterns = []\n", "");
        assert!(config.secret_patterns().contains(&".env".to_owned()));
    }

    #[test]
    fn a_flag_sets_allow_net_and_a_bad_list_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let env = |_: &str| None;
        let flags = [Flag {
            section: "sandbox",
            key: "allow_net",
            flag: "--allow-net",
            value: toml::Value::Array(vec![toml::Value::String("pypi.org".into())]),
        }];
        let config =
            Config::load(&Inputs { flags: &flags, ..Inputs::new(Some(dir.path()), &env) }).unwrap();
        assert_eq!(config.sandbox().unwrap().allow_net, ["pypi.org"]);
        let (_d, config) = load("[sandbox]\nextra_secret_patterns = [1]\n", "");
        assert!(config.errors().iter().any(|e| e.reason.contains("list of strings")));
    }
}

/// Why the agent's walls could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The `[sandbox]` configuration is invalid.
    #[error("[sandbox]: {0}")]
    Config(String),
    /// The policy refused the settings or the root.
    #[error(transparent)]
    Sandbox(#[from] sift_runtime::sandbox::SandboxError),
}

/// The one policy for the workspace at `root` (canonical) under `config`'s `[sandbox]`: what
/// the agent's tools, its commands and memory's citations are held to.
pub fn policy(root: &std::path::Path, config: &super::Config) -> Result<Policy, PolicyError> {
    let settings = config.sandbox().map_err(|e| PolicyError::Config(e.to_string()))?;
    Ok(Policy::for_workspace(root, &settings)?)
}
