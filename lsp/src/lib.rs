//! The sift binary's library half: the command-line interface ([`cli`]) and the language server
//! ([`server`]), front ends over one engine. This crate is the only one that knows about the
//! terminal, the process, JSON-RPC and LSP; the work itself happens in `sift-engine` and the
//! crates below it. `server` does not import `cli`, nor `cli` anything of `server` but its
//! entry point.

pub mod alloc;
pub mod cli;
pub mod message;
pub mod server;
pub mod watch;
