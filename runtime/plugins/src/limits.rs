//! What one plugin may do and spend: its [`Limits`] per call and its [`Grant`]s, with the
//! defaults a plugin gets when `.sift/review.toml` says nothing about it.

use std::time::Duration;

use serde::Deserialize;

/// A capability a plugin is granted. A plugin found in `.sift/plugins/` without a `[[plugins]]`
/// entry gets [`Grant::Log`] only: reading the workspace has to be granted by configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grant {
    /// `host.read-file`: read workspace files (under the sandbox's path rules).
    Read,
    /// `host.log`: write lines to sift's log.
    Log,
}

impl Grant {
    /// The name written in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Grant::Read => "read",
            Grant::Log => "log",
        }
    }
}

/// The budget of every call into one plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock deadline per call (epoch interruption).
    pub deadline: Duration,
    /// Fuel per call (about one unit per WebAssembly instruction).
    pub fuel: u64,
    /// The most linear memory (all memories together) an instance may have, in bytes.
    pub memory_bytes: usize,
    /// The most bytes one call may read through `host.read-file`, all reads together.
    pub read_bytes: usize,
    /// The most findings one call may return.
    pub max_findings: usize,
    /// The most log lines one call may write (the rest are counted and dropped).
    pub max_log_lines: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            deadline: Duration::from_millis(1_000),
            fuel: 2_000_000_000,
            memory_bytes: 64 << 20,
            read_bytes: 16 << 20,
            max_findings: 1_000,
            max_log_lines: 100,
        }
    }
}

/// One `[[plugins]]` entry of `.sift/review.toml`:
///
/// ```toml
/// [[plugins]]
/// path = ".sift/plugins/banned-api.wasm"   # relative to the repository root
/// grants = ["read", "log"]                 # default: ["log"]
/// deadline_ms = 1000                       # per call
/// fuel = 2000000000                        # per call
/// memory_mb = 64
/// enabled = true
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginEntry {
    /// The component's path, relative to the repository root.
    pub path: String,
    /// What it may do.
    #[serde(default = "default_grants")]
    pub grants: Vec<Grant>,
    /// Per-call deadline, in milliseconds.
    pub deadline_ms: Option<u64>,
    /// Per-call fuel.
    pub fuel: Option<u64>,
    /// Memory cap, in MiB.
    pub memory_mb: Option<usize>,
    /// Per-call read budget, in MiB.
    pub read_mb: Option<usize>,
    /// `false` turns a plugin found in `.sift/plugins/` off.
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn default_grants() -> Vec<Grant> {
    vec![Grant::Log]
}

fn yes() -> bool {
    true
}

/// The most a configuration may raise a limit to (a review must still end).
const MAX_DEADLINE_MS: u64 = 60_000;
const MAX_MEMORY_MB: usize = 4_096;

impl PluginEntry {
    /// An entry from one element of the `plugins` array (`from` names the file for errors).
    pub fn from_toml(value: toml::Value, from: &str) -> crate::Result<PluginEntry> {
        let entry: PluginEntry =
            value.try_into().map_err(|e: toml::de::Error| crate::PluginError::Config {
                from: from.to_string(),
                reason: format!("[[plugins]]: {e}"),
            })?;
        let bad = |reason: String| crate::PluginError::Config { from: from.to_string(), reason };
        if entry.path.is_empty()
            || entry.path.starts_with('/')
            || entry.path.split('/').any(|c| c == "..")
        {
            return Err(bad(format!(
                "[[plugins]] path {:?}: give a path inside the repository, relative to its root",
                entry.path
            )));
        }
        if entry.deadline_ms.is_some_and(|d| d == 0 || d > MAX_DEADLINE_MS) {
            return Err(bad(format!(
                "[[plugins]] {}: deadline_ms must be 1 to {MAX_DEADLINE_MS}",
                entry.path
            )));
        }
        if entry.memory_mb.is_some_and(|m| m == 0 || m > MAX_MEMORY_MB) {
            return Err(bad(format!(
                "[[plugins]] {}: memory_mb must be 1 to {MAX_MEMORY_MB}",
                entry.path
            )));
        }
        if entry.fuel == Some(0) {
            return Err(bad(format!("[[plugins]] {}: fuel must be above 0", entry.path)));
        }
        Ok(entry)
    }

    /// The entry for a plugin found in `.sift/plugins/` with no entry of its own.
    pub fn discovered(path: String) -> PluginEntry {
        PluginEntry {
            path,
            grants: default_grants(),
            deadline_ms: None,
            fuel: None,
            memory_mb: None,
            read_mb: None,
            enabled: true,
        }
    }

    /// Its limits: the defaults with what the entry sets.
    pub fn limits(&self) -> Limits {
        let d = Limits::default();
        Limits {
            deadline: self.deadline_ms.map_or(d.deadline, Duration::from_millis),
            fuel: self.fuel.unwrap_or(d.fuel),
            memory_bytes: self.memory_mb.map_or(d.memory_bytes, |m| m << 20),
            read_bytes: self.read_mb.map_or(d.read_bytes, |m| m << 20),
            ..d
        }
    }

    /// The plugin's name: the file name without `.wasm`.
    pub fn name(&self) -> String {
        let file = self.path.rsplit('/').next().unwrap_or(&self.path);
        file.strip_suffix(".wasm").unwrap_or(file).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> crate::Result<PluginEntry> {
        let value: toml::Value = toml::from_str::<toml::Table>(text).unwrap().into();
        PluginEntry::from_toml(value, ".sift/review.toml")
    }

    #[test]
    fn entries_default_to_log_only_and_reject_paths_outside() {
        let e = entry("path = \".sift/plugins/a.wasm\"").unwrap();
        assert_eq!(e.grants, vec![Grant::Log]);
        assert_eq!(e.name(), "a");
        assert_eq!(e.limits(), Limits::default());
        let e = entry(
            "path = \"p/b.wasm\"\ngrants = [\"read\", \"log\"]\ndeadline_ms = 50\nmemory_mb = 8",
        )
        .unwrap();
        assert_eq!(e.limits().deadline, Duration::from_millis(50));
        assert_eq!(e.limits().memory_bytes, 8 << 20);
        for bad in [
            "path = \"../x.wasm\"",
            "path = \"/etc/x.wasm\"",
            "path = \"a.wasm\"\ndeadline_ms = 0",
            "path = \"a.wasm\"\ngrants = [\"net\"]",
            "path = \"a.wasm\"\nwho = 1",
        ] {
            let err = entry(bad).unwrap_err().to_string();
            assert!(err.starts_with(".sift/review.toml: [[plugins]]"), "{bad}: {err}");
        }
    }
}
