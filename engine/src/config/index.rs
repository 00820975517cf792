//! `[index]`: which files are indexed (`sift_indexer::IndexConfig`: also the sandbox's walls —
//! no link out of the repository, no secret file — with the user's opt-ins) and how an update runs
//! (`sift_indexer::UpdateOptions`: the worker threads and the commit interval, which only the
//! environment sets).

use std::time::Duration;

use sift_indexer::{IndexConfig, SecretPatterns, UpdateOptions};

use super::spec::{Default, Key, Kind, Section, Value};
use super::{Config, Invalid};

/// The `[index]` section's keys.
pub const SECTION: Section = Section {
    name: "index",
    doc: "Which files are indexed and how an update runs.",
    strict: true,
    elsewhere: &[],
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
            name: "outside_links",
            kind: Kind::List { item: "a relative path" },
            default: Default::List(&[]),
            env: None,
            in_files: true,
            doc: "Symbolic links (relative paths, or folders holding them) that may lead outside the repository; every other link whose target resolves outside is skipped and counted (sift status). Not read from the repository's file.",
        },
        Key {
            name: "index_secrets",
            kind: Kind::List { item: "a glob" },
            default: Default::List(&[]),
            env: None,
            in_files: true,
            doc: "Files indexed although they match [sandbox] secret_patterns (globs, as there); every other secret file is skipped and counted (sift status). Not read from the repository's file.",
        },
        Key {
            name: "keep_watching_secs",
            kind: Kind::Count { min: 0, max: 86_400 },
            default: Default::Count(0),
            env: None,
            in_files: true,
            doc: "After a `sift search` that had to check the tree for changes itself, leave a `sift index --watch` running in the background (one per repository, log in .sift/logs/watch.log) until no search has used it for this many seconds; later searches then skip the check. 0: never. `sift search --keep-watching SECS` overrides it. Not read from the repository's file.",
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
        let bad = |key: &str, reason: String| Invalid {
            origin: s.source(key),
            section: SECTION.name,
            key: Some(key.to_owned()),
            reason,
        };
        // A repository cannot widen what its own index takes in (a link to ~/.aws, say).
        for key in ["outside_links", "index_secrets"] {
            s.not_from_repo(key, "a repository cannot widen what its own index takes in: set it in your user file (~/.config/sift/config.toml) or the editor's settings")?;
        }
        let secrets = SecretPatterns::new(&self.secret_patterns())
            .map_err(|e| bad("index_secrets", format!("[sandbox] secret patterns: {e}")))?;
        let secret_exceptions =
            SecretPatterns::new(&s.list("index_secrets")).map_err(|e| bad("index_secrets", e))?;
        Ok(IndexConfig {
            max_file_size: s.count("max_file_size"),
            follow_symlinks: s.bool("follow_symlinks"),
            secrets,
            secret_exceptions,
            outside_links: s.list("outside_links"),
        })
    }

    /// How long a watcher that a `sift search` leaves behind may stay idle (`None`: leave none).
    /// A repository's own file cannot ask for one: a clone does not start background processes.
    pub fn keep_watching(&self) -> Result<Option<Duration>, Invalid> {
        let s = self.section(&SECTION)?;
        let key = "keep_watching_secs";
        s.not_from_repo(key, "a repository cannot start background processes on your machine: set it in your user file (~/.config/sift/config.toml) or pass --keep-watching")?;
        let secs = s.count(key);
        Ok((secs > 0).then(|| Duration::from_secs(secs)))
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
