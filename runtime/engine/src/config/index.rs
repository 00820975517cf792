//! `[index]`: which files are indexed (`sift_indexer::IndexConfig`) and how an update runs
//! (`sift_indexer::UpdateOptions`: the worker threads and the commit interval, which only the
//! environment sets).

use std::time::Duration;

use sift_indexer::{IndexConfig, UpdateOptions};

use super::spec::{Default, Key, Kind, Section, Value};
use super::{Config, Invalid};

/// The `[index]` section's keys.
pub const SECTION: Section = Section {
    name: "index",
    doc: "Which files are indexed and how an update runs.",
    strict: true,
    refused: &[],
    keys: &[
        Key {
            name: "max_file_size",
            kind: Kind::Size,
            default: Default::Text("1 MiB"),
            env: None,
            in_files: true,
            doc: "Files larger than this are skipped (and counted): bytes, or a size such as \"2 MiB\". `sift index --max-file-size` overrides it.",
        },
        Key {
            name: "follow_symlinks",
            kind: Kind::Bool,
            default: Default::Bool(true),
            env: None,
            in_files: true,
            doc: "Follow symbolic links (loops are skipped either way). `--no-follow-symlinks` turns it off.",
        },
        Key {
            name: "threads",
            kind: Kind::Count { min: 0, max: u64::MAX },
            default: Default::Computed {
                doc: "the number of cores, at most 8",
                value: || Value::Count(UpdateOptions::default().threads as u64),
            },
            env: Some("SIFT_THREADS"),
            in_files: false,
            doc: "Threads that read and chunk files (0 counts as 1).",
        },
        Key {
            name: "commit_interval_ms",
            kind: Kind::Count { min: 0, max: u64::MAX },
            default: Default::Unset,
            env: Some("SIFT_COMMIT_INTERVAL_MS"),
            in_files: false,
            doc: "How often a long update commits, in milliseconds (unset: 10000 for the CLI, 750 for sift lsp).",
        },
    ],
};

impl Config {
    /// `[index]`: which files are indexed.
    pub fn index(&self) -> Result<IndexConfig, Invalid> {
        let s = self.section(&SECTION)?;
        Ok(IndexConfig {
            max_file_size: s.count("max_file_size"),
            follow_symlinks: s.bool("follow_symlinks"),
        })
    }

    /// How an update runs: [`Config::index`], the worker threads, and the commit interval
    /// (`default_commit_interval` unless `SIFT_COMMIT_INTERVAL_MS` says otherwise: each front
    /// end has its own, the language server commits more often than the CLI).
    pub fn update_options(
        &self,
        default_commit_interval: Duration,
    ) -> Result<UpdateOptions, Invalid> {
        let config = self.index()?;
        let s = self.section(&SECTION)?;
        Ok(UpdateOptions {
            config,
            threads: (s.count("threads") as usize).max(1),
            commit_interval: s
                .opt_count("commit_interval_ms")
                .map_or(default_commit_interval, Duration::from_millis),
        })
    }
}
