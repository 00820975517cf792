//! The sift binary's library half: the command-line interface ([`cli`]), the language server
//! ([`server`]) and the MCP server ([`mcp`]), front ends over one engine (both servers serve the
//! engine's `live` workspace, kept fresh by its update task and its watcher). This crate is the
//! only one that knows about the terminal, the process, JSON-RPC, LSP and MCP; the work itself
//! happens in `sift-engine` and the crates below it. `server` and `mcp` do not import `cli` nor each other, nor `cli` anything of
//! them but their entry points.

pub mod alloc;
pub mod cli;
pub mod mcp;
pub mod message;
pub mod server;
