//! A run's transcript: `.sift/agent/<id>.jsonl` (kept out of git), one record per line through
//! the store's one append-only log, written as the run goes so that nothing is lost when it is
//! interrupted, and read back to resume it ([`Transcript::resume`]).
//!
//! The transcript keeps everything, also what compaction summarised away: the user can always
//! see the whole run; a resumed run continues from the conversation as the model last saw it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sift_indexer::store::Store;
use sift_indexer::store::jsonl::JsonlLog;
use sift_runtime::llm::Message;

use super::changes::Changes;

pub use crate::store::{AGENT_DIR, AGENT_ENTRIES as STORE_ENTRIES};

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// The run started.
    Start {
        /// The task as the user gave it.
        task: String,
        /// The model's name.
        model: String,
        /// Seconds since the Unix epoch.
        time: u64,
    },
    /// A message joined the conversation. One line holds what a resumed run needs of it, so
    /// a run killed between two lines resumes from a consistent state.
    Message {
        /// The message.
        message: Message,
        /// For the model's message: the tokens its step cost (a resumed run's budget counts it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens: Option<u64>,
        /// For a tool's answer whose call changed the pending change: the change after it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        changes: Option<Changes>,
    },
    /// The conversation was compacted: the model's summary replaces what came before it
    /// (apart from the pinned part).
    Compacted {
        /// The message that now stands for the earlier conversation.
        summary: Message,
        /// Estimated tokens before and after.
        tokens_before: usize,
        /// After.
        tokens_after: usize,
    },
    /// The pending change after a step that changed it (transcripts written before tool
    /// answers carried their change; read, no longer written).
    Changes {
        /// The whole pending change.
        changes: Changes,
    },
    /// The run ended.
    End {
        /// Why (`done`, `max_steps`…).
        stop: String,
    },
}

/// A transcript being written.
#[derive(Debug, Clone)]
pub struct Transcript {
    log: JsonlLog<Record>,
    id: String,
}

/// A transcript read back: the conversation as the model last saw it and the pending change.
#[derive(Debug, Clone, Default)]
pub struct Resumed {
    /// The task.
    pub task: String,
    /// The conversation after the pinned part (system prompt and task), compactions applied.
    pub history: Vec<Message>,
    /// The pending change.
    pub changes: Changes,
    /// Whether the run had ended.
    pub ended: bool,
    /// The model's steps it had taken.
    pub steps: usize,
    /// The tokens they cost.
    pub tokens: u64,
}

impl Record {
    /// A message, with nothing else.
    pub fn message(message: Message) -> Record {
        Record::Message { message, tokens: None, changes: None }
    }
}

impl Transcript {
    /// A new transcript in the store's `agent/` folder, named by the time and process.
    pub fn create(store: &Store) -> sift_indexer::Result<Transcript> {
        store.ensure()?;
        let dir = store.path(&AGENT_DIR);
        std::fs::create_dir_all(&dir)
            .map_err(|e| sift_indexer::Error::io("create the agent folder", &dir, e))?;
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let id = format!("{}-{}", now.as_secs(), std::process::id());
        let mut n = 0;
        let mut name = id.clone();
        while dir.join(format!("{name}.jsonl")).exists() {
            n += 1;
            name = format!("{id}-{n}");
        }
        Ok(Transcript { log: JsonlLog::new(dir.join(format!("{name}.jsonl"))), id: name })
    }

    /// The transcript `id` (to continue it).
    pub fn open(store: &Store, id: &str) -> Transcript {
        let path = store.path(&AGENT_DIR).join(format!("{id}.jsonl"));
        Transcript { log: JsonlLog::new(path), id: id.to_owned() }
    }

    /// Its id (the file name without `.jsonl`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        self.log.path()
    }

    /// Appends a record; a failure is logged, never fatal to the run.
    pub fn write(&self, record: &Record) {
        if let Err(e) = self.log.append(record) {
            tracing::warn!("agent: cannot write the transcript {}: {e}", self.path().display());
        }
    }

    /// Reads the transcript back for resuming.
    pub fn resume(&self) -> sift_indexer::Result<Resumed> {
        let replay = self.log.read()?;
        if replay.records.is_empty() {
            return Err(sift_indexer::Error::io(
                "read the transcript",
                self.path(),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such transcript"),
            ));
        }
        let mut out = Resumed::default();
        for record in replay.records {
            match record {
                Record::Start { task, .. } => out.task = task,
                Record::Message { message, tokens, changes } => {
                    out.history.push(message);
                    if let Some(tokens) = tokens {
                        out.steps += 1;
                        out.tokens += tokens;
                    }
                    if let Some(changes) = changes {
                        out.changes = changes;
                    }
                }
                Record::Compacted { summary, .. } => out.history = vec![summary],
                Record::Changes { changes } => out.changes = changes,
                Record::End { .. } => out.ended = true,
            }
        }
        Ok(out)
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The transcripts of a store, newest first.
pub fn list(store: &Store) -> Vec<PathBuf> {
    let dir = store.path(&AGENT_DIR);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files.reverse();
    files
}
