//! sift's WebAssembly plugin host: team review checks (and agent tools) that run as wasmtime
//! components and cannot escape.
//!
//! A plugin is a component built for the `sift:plugin@0.1.0` world (`runtime/wit/plugin.wit`).
//! It exports `checks` and `tools` and may import only `sift:plugin/host`: no WASI, so no file
//! system, sockets, environment or clocks. What it reads of the workspace it reads through
//! [`Workspace`], which the caller implements with the sandbox's path rules.
//!
//! - [`interface`]: what a component exports and imports, and whether this host accepts it.
//! - [`engine`]: the wasmtime engine (epoch ticker, fuel), compiling with the code cache.
//! - [`cache`]: compiled code kept in the user's cache folder (the one `unsafe` in the crate).
//! - [`plugin`]: one loaded plugin; every call gets a fresh instance under its [`Limits`].
//! - [`limits`]: deadlines, fuel, memory caps and grants, as configured per plugin.
//! - [`host`]: the imports a plugin gets (`read-file`, `log`) and the [`Workspace`] seam.
//! - [`error`]: [`PluginError`], which is what every failure of a plugin becomes.
//!
//! Invariant: nothing a plugin does panics the host or stops the caller; a trap, an overrun, an
//! exhausted budget or a malformed answer is a [`PluginError`] for that call. This crate knows
//! nothing of the engine, of git or of LSP.

// `unsafe` is denied, not forbidden, for one reason: loading compiled code from the cache
// (`Component::deserialize_file`) is `unsafe` in wasmtime, since compiled code is native code.
// `cache.rs` alone allows it, and says what makes it sound.
#![deny(unsafe_code)]

pub mod cache;
pub mod engine;
pub mod error;
pub mod host;
pub mod interface;
pub mod limits;
pub mod plugin;

mod bindings;

pub use engine::PluginEngine;
pub use error::{PluginError, Result};
pub use host::{LogLine, Workspace};
pub use interface::{INTERFACE_VERSION, Interface};
pub use limits::PluginEntry;
pub use limits::{Grant, Limits};
pub use plugin::{ChangedFile, Fix, Output, Plugin, PluginFinding, Severity, Tool};
