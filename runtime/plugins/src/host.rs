//! What a plugin can ask of sift: `read-file` (through [`Workspace`], under the plugin's grants
//! and read budget) and `log`; and the per-call state of a store (its memory cap, its log).
//!
//! The host functions never panic and never fail the call: a refused read is an `err` the plugin
//! sees, with the reason.

use std::sync::Arc;

use crate::bindings::sift::plugin::host::{self, Level};
use crate::limits::{Grant, Limits};

/// The workspace as a plugin may see it. The engine implements it with the sandbox's path
/// rules (`Policy::open_read`: inside the workspace after resolving `..` and symbolic links,
/// not a secret, no NUL bytes); tests use an in-memory one.
pub trait Workspace: Send + Sync {
    /// The text of `path` (as the plugin gave it), or why it may not be read. At most `limit`
    /// bytes are wanted: a longer file is refused.
    fn read(&self, path: &str, limit: usize) -> Result<String, String>;
}

/// A workspace with nothing in it: every read is refused.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoWorkspace;

impl Workspace for NoWorkspace {
    fn read(&self, path: &str, _limit: usize) -> Result<String, String> {
        Err(format!("{path:?}: this plugin runs without a workspace"))
    }
}

/// One line a plugin logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// `debug`, `info`, `warn` or `error`.
    pub level: &'static str,
    /// What it said.
    pub message: String,
}

/// The state of one call's store.
pub(crate) struct HostState {
    pub(crate) name: String,
    pub(crate) workspace: Arc<dyn Workspace>,
    pub(crate) grants: Vec<Grant>,
    pub(crate) limits: Limits,
    pub(crate) read_used: usize,
    pub(crate) log: Vec<LogLine>,
    pub(crate) log_dropped: usize,
    pub(crate) memory: MemoryCap,
}

/// The store's resource limiter: linear memory is capped at `cap` bytes; an attempt past it
/// traps the call with [`MemoryCapHit`] (so it is reported as a memory overrun, not as whatever
/// the plugin does when an allocation fails).
pub(crate) struct MemoryCap {
    pub(crate) cap: usize,
}

/// The error a growth past the cap traps with.
#[derive(Debug)]
pub(crate) struct MemoryCapHit {
    pub(crate) wanted: usize,
    pub(crate) cap: usize,
}

impl std::fmt::Display for MemoryCapHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "memory growth to {} bytes past the cap of {} bytes", self.wanted, self.cap)
    }
}

impl std::error::Error for MemoryCapHit {}

/// Tables (function references) are small; this bounds them too.
const MAX_TABLE_ELEMENTS: usize = 100_000;

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            return Err(wasmtime::Error::new(MemoryCapHit { wanted: desired, cap: self.cap }));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        100
    }

    fn tables(&self) -> usize {
        100
    }

    fn memories(&self) -> usize {
        10
    }
}

impl host::Host for HostState {
    fn read_file(&mut self, path: String) -> Result<String, String> {
        if !self.grants.contains(&Grant::Read) {
            return Err(format!(
                "{path:?}: plugin {} was not granted \"read\" (grant it in its [[plugins]] entry of .sift/review.toml)",
                self.name
            ));
        }
        let left = self.limits.read_bytes.saturating_sub(self.read_used);
        let text = self.workspace.read(&path, left)?;
        self.read_used += text.len();
        Ok(text)
    }

    fn log(&mut self, level: Level, message: String) {
        if !self.grants.contains(&Grant::Log) {
            return;
        }
        if self.log.len() >= self.limits.max_log_lines {
            self.log_dropped += 1;
            return;
        }
        let level = match level {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        };
        let mut message = message;
        if message.len() > 2_000 {
            let mut end = 2_000;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.push('…');
        }
        match level {
            "error" | "warn" => tracing::warn!(plugin = %self.name, "{message}"),
            "info" => tracing::info!(plugin = %self.name, "{message}"),
            _ => tracing::debug!(plugin = %self.name, "{message}"),
        }
        self.log.push(LogLine { level, message });
    }
}
