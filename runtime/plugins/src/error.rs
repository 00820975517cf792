//! What goes wrong with a plugin: every failure, the plugin's or the host's, is one of these,
//! and names the plugin.

use std::path::PathBuf;
use std::time::Duration;

/// The crate's result.
pub type Result<T, E = PluginError> = std::result::Result<T, E>;

/// A plugin's failure. None of them stops a review: the caller reports it and goes on without
/// the plugin.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The file is not a component this host accepts (wrong interface version, WASI imports, a
    /// core module, not WebAssembly at all).
    #[error("plugin {name}: {reason}")]
    Refused {
        /// The plugin.
        name: String,
        /// Why, and what to do.
        reason: String,
    },
    /// wasmtime could not compile or link it.
    #[error("plugin {name}: cannot load it: {reason}")]
    Load {
        /// The plugin.
        name: String,
        /// wasmtime's message.
        reason: String,
    },
    /// A call ran past its deadline and was interrupted.
    #[error("plugin {name}: {call} ran past its deadline of {}ms and was stopped (raise deadline_ms in its [[plugins]] entry if it needs longer)", deadline.as_millis())]
    Deadline {
        /// The plugin.
        name: String,
        /// The export that was called.
        call: String,
        /// The deadline.
        deadline: Duration,
    },
    /// A call used up its fuel.
    #[error(
        "plugin {name}: {call} used up its fuel ({fuel} units) and was stopped (raise fuel in its [[plugins]] entry if it needs more)"
    )]
    Fuel {
        /// The plugin.
        name: String,
        /// The export that was called.
        call: String,
        /// The budget.
        fuel: u64,
    },
    /// A call tried to grow memory past its cap.
    #[error(
        "plugin {name}: {call} tried to grow its memory to {wanted} bytes, past its cap of {cap} bytes, and was stopped (raise memory_mb in its [[plugins]] entry if it needs more)"
    )]
    Memory {
        /// The plugin.
        name: String,
        /// The export that was called.
        call: String,
        /// The size it asked for.
        wanted: usize,
        /// The cap.
        cap: usize,
    },
    /// A call trapped (a panic in the plugin, `unreachable`, an out-of-bounds access…).
    #[error("plugin {name}: {call} trapped: {reason}")]
    Trap {
        /// The plugin.
        name: String,
        /// The export that was called.
        call: String,
        /// wasmtime's description of the trap.
        reason: String,
    },
    /// A call returned something that breaks the interface's rules (a finding outside the
    /// file, too many findings…).
    #[error("plugin {name}: {call} returned a malformed result: {reason}")]
    Malformed {
        /// The plugin.
        name: String,
        /// The export that was called.
        call: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The plugin itself reported an error (the `err` of its result).
    #[error("plugin {name}: {call} failed: {message}")]
    Reported {
        /// The plugin.
        name: String,
        /// The export that was called.
        call: String,
        /// The plugin's message.
        message: String,
    },
    /// Its file could not be read.
    #[error("plugin {}: cannot read it: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Its configuration is wrong.
    #[error("{from}: {reason}")]
    Config {
        /// Where the configuration was read (`.sift/review.toml`, `abc1234:.sift/review.toml`).
        from: String,
        /// What is wrong.
        reason: String,
    },
}

impl PluginError {
    /// The plugin's name, when the error is about one plugin.
    pub fn plugin(&self) -> Option<&str> {
        match self {
            PluginError::Refused { name, .. }
            | PluginError::Load { name, .. }
            | PluginError::Deadline { name, .. }
            | PluginError::Fuel { name, .. }
            | PluginError::Memory { name, .. }
            | PluginError::Trap { name, .. }
            | PluginError::Malformed { name, .. }
            | PluginError::Reported { name, .. } => Some(name),
            PluginError::Read { .. } | PluginError::Config { .. } => None,
        }
    }
}
