//! sift's `.sift/` folder: how files in it are written.
//!
//! - [`atomic`]: the one atomic write (temporary file, fsync, rename, fsync of the folder) that
//!   every file sift replaces whole goes through.
//! - [`jsonl`]: the one append-only log of typed records (whole lines under a lock, torn lines
//!   skipped and counted on read) that every file sift only ever appends to goes through.

pub mod atomic;
pub mod jsonl;

pub use atomic::{sync_dir, write_atomic, write_atomic_with};
pub use jsonl::{JsonlLog, Replay};
