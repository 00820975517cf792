//! sift's `.sift/` folder: how files in it are written.
//!
//! - [`atomic`]: the one atomic write (temporary file, fsync, rename, fsync of the folder) that
//!   every file sift replaces whole goes through.

pub mod atomic;

pub use atomic::{sync_dir, write_atomic, write_atomic_with};
