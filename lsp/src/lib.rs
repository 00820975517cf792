//! The sift binary's library half: the command-line interface ([`cli`]) and the language server
//! ([`server`]). This crate is the only one that knows about the terminal, the process, JSON-RPC
//! and LSP; the work itself happens in `sift-indexer` and `sift-runtime`.

pub mod alloc;
pub mod cli;
pub mod server;
pub mod watch;
