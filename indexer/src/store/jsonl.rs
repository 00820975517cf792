//! The one append-only log: typed records, one JSON object per line, in a file under `.sift/`
//! (dismissed findings today; memory notes and usage records next).
//!
//! Crash safety, and why each step is there:
//!
//! - **Whole lines under an exclusive lock.** An append takes an exclusive `flock` on the file
//!   (threads and processes alike: each [`JsonlLog::append`] opens the file afresh), then writes
//!   its line or lines with one `write_all` on a file opened for appending, then fsyncs. Two
//!   writers never interleave, so every line is one writer's record.
//! - **A torn line stays on its own line.** A writer killed mid-write leaves a last line without
//!   its newline. The next writer, under the lock, sees that the file does not end in `\n` and
//!   starts with one, so the torn fragment never runs into (and swallows) a good record. Nothing
//!   is ever cut off or rewritten: these files may be committed and merged by git as a union of
//!   lines, where rewriting would lose records.
//! - **Readers skip what does not parse, and count it.** [`JsonlLog::read`] (under a shared lock,
//!   so it never sees an append half-way) and [`parse`] skip blank lines, torn lines and lines
//!   that are not a record of the expected type (a hand edit, a record kind from a newer sift),
//!   and report how many they skipped. A last line without its newline that parses is a whole
//!   record: only the newline was lost.
//! - **Durable on return.** The file is fsynced after the write; when the append created the
//!   file (or its folder), the folder is fsynced too, so the new name survives a power cut. A
//!   log of records worth less than an fsync ([`JsonlLog::unsynced`]: the record of fates)
//!   skips both: its lines are as whole and as locked, and survive a killed process, but a
//!   power cut may take its last records.
//!
//! A record is whatever `serde` makes of `T`; `serde_json` never writes a raw newline inside one
//! (newlines in strings are escaped), so one record is one line.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::atomic::sync_dir;
use crate::error::{Error, Result};

/// An append-only JSONL file of `T` records (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct JsonlLog<T> {
    path: PathBuf,
    sync: bool,
    _records: PhantomData<fn() -> T>,
}

/// What reading a log found: its records in order, and how many lines were skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay<T> {
    /// The records, in the order they were appended.
    pub records: Vec<T>,
    /// Lines that were not a record (torn by a crash, edited by hand, or of a newer kind).
    pub skipped: usize,
}

impl<T> Default for Replay<T> {
    fn default() -> Self {
        Replay { records: Vec::new(), skipped: 0 }
    }
}

impl<T: Serialize + DeserializeOwned> JsonlLog<T> {
    /// The log in the file at `path` (nothing is opened or created until used).
    pub fn new(path: impl Into<PathBuf>) -> JsonlLog<T> {
        JsonlLog { path: path.into(), sync: true, _records: PhantomData }
    }

    /// The same log, appended to without fsync (see the [module docs](self)).
    pub fn unsynced(self) -> JsonlLog<T> {
        JsonlLog { sync: false, ..self }
    }

    /// The file the log lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record (creating the file and its folder when missing): one whole line,
    /// written under an exclusive lock and synced before this returns.
    pub fn append(&self, record: &T) -> Result<()> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Appends `records` in one write under one lock and one fsync (all of them, or, after a
    /// crash, a prefix of whole lines and at most one torn line).
    pub fn append_all(&self, records: &[T]) -> Result<()> {
        let path = &self.path;
        let mut lines = Vec::new();
        for record in records {
            serde_json::to_writer(&mut lines, record).map_err(|e| {
                Error::io("append to", path, io::Error::new(io::ErrorKind::InvalidData, e))
            })?;
            lines.push(b'\n');
        }
        if lines.is_empty() {
            return Ok(());
        }
        append_lines(path, lines, self.sync).map_err(|e| Error::io("append to", path, e))
    }

    /// Reads every record (under a shared lock); a missing file is an empty log. Skipped lines
    /// are counted in [`Replay::skipped`] and logged as a warning.
    pub fn read(&self) -> Result<Replay<T>> {
        let path = &self.path;
        let bytes = match read_locked(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Replay::default()),
            Err(e) => return Err(Error::io("read", path, e)),
        };
        let replay = parse(&bytes);
        if replay.skipped > 0 {
            tracing::warn!(
                "{}: skipped {} line(s) that are not valid records (a write cut short by a crash, or a hand edit)",
                path.display(),
                replay.skipped
            );
        }
        Ok(replay)
    }
}

/// Parses the text of a log (for a log read some other way, such as from a git revision):
/// blank lines are ignored, lines that are not a `T` are counted and skipped.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Replay<T> {
    let mut replay = Replay::default();
    for line in bytes.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<T>(line) {
            Ok(record) => replay.records.push(record),
            Err(_) => replay.skipped += 1,
        }
    }
    replay
}

fn append_lines(path: &Path, mut lines: Vec<u8>, sync: bool) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let new_dir = !dir.exists();
    if new_dir {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new().create(true).append(true).read(true).open(path)?;
    file.lock()?;
    let len = file.metadata()?.len();
    if len > 0 && !ends_with_newline(&mut file, len)? {
        // A torn last line (a writer killed mid-line) must not run into this record.
        lines.insert(0, b'\n');
    }
    file.write_all(&lines)?;
    if sync {
        file.sync_all()?;
    }
    drop(file); // releases the lock
    if len == 0 && sync {
        sync_dir(dir)?;
        if new_dir && let Some(parent) = dir.parent() {
            sync_dir(parent)?;
        }
    }
    Ok(())
}

fn ends_with_newline(file: &mut File, len: u64) -> io::Result<bool> {
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

fn read_locked(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    file.lock_shared()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    struct Note {
        who: String,
        n: u32,
        text: String,
    }

    fn note(who: &str, n: u32) -> Note {
        // Long enough that unlocked writers would interleave within a line.
        Note { who: who.into(), n, text: format!("{who} says {n}\n").repeat(200) }
    }

    fn log(dir: &Path) -> JsonlLog<Note> {
        JsonlLog::new(dir.join("notes/log.jsonl"))
    }

    fn append_raw(path: &Path, bytes: &[u8]) {
        let mut file = OpenOptions::new().append(true).open(path).unwrap();
        file.write_all(bytes).unwrap();
    }

    /// The records of `who`, in order, are exactly 0..n.
    fn assert_whole(replay: &Replay<Note>, writers: &[String], n: u32) {
        assert_eq!(replay.skipped, 0);
        assert_eq!(replay.records.len(), writers.len() * n as usize);
        for who in writers {
            let mine: Vec<u32> =
                replay.records.iter().filter(|r| &r.who == who).map(|r| r.n).collect();
            assert_eq!(mine, (0..n).collect::<Vec<_>>(), "{who}");
        }
        assert!(replay.records.iter().all(|r| r == &note(&r.who, r.n)));
    }

    #[test]
    fn records_round_trip_in_order_and_a_missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        assert_eq!(log.read().unwrap(), Replay::default());
        log.append(&note("a", 0)).unwrap();
        log.append_all(&[note("a", 1), note("a", 2)]).unwrap();
        log.append_all(&[]).unwrap();
        let replay = log.read().unwrap();
        assert_eq!(replay.records, [note("a", 0), note("a", 1), note("a", 2)]);
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().count(), 3, "one line per record, newlines escaped");
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn concurrent_appenders_in_threads_write_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        // Few appends (each is an fsync), but enough to overlap.
        let writers: Vec<String> = (0..4).map(|t| format!("thread-{t}")).collect();
        std::thread::scope(|s| {
            for who in &writers {
                let dir = dir.path();
                s.spawn(move || {
                    let log = log(dir); // a handle of its own, as separate callers have
                    for n in 0..12 {
                        log.append(&note(who, n)).unwrap();
                    }
                });
            }
        });
        assert_whole(&log(dir.path()).read().unwrap(), &writers, 12);
    }

    /// The other process of [`concurrent_appenders_in_two_processes_write_whole_lines`]: does
    /// nothing unless that test started it.
    #[test]
    fn child_appender() {
        let (Ok(dir), Ok(who)) =
            (std::env::var("SIFT_TEST_JSONL_DIR"), std::env::var("SIFT_TEST_JSONL_WHO"))
        else {
            return;
        };
        let log = log(Path::new(&dir));
        for n in 0..20 {
            log.append(&note(&who, n)).unwrap();
        }
    }

    #[test]
    fn concurrent_appenders_in_two_processes_write_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = ["process-1", "process-2"]
            .iter()
            .map(|who| {
                std::process::Command::new(&exe)
                    .args(["--exact", "store::jsonl::tests::child_appender", "--test-threads=1"])
                    .env("SIFT_TEST_JSONL_DIR", dir.path())
                    .env("SIFT_TEST_JSONL_WHO", who)
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let log = log(dir.path());
        for n in 0..20 {
            log.append(&note("parent", n)).unwrap();
        }
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let writers = ["parent", "process-1", "process-2"].map(String::from);
        assert_whole(&log.read().unwrap(), &writers, 20);
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        log.append(&note("a", 0)).unwrap();
        let line = serde_json::to_string(&note("a", 1)).unwrap();
        append_raw(log.path(), &line.as_bytes()[..line.len() / 2]);
        let replay = log.read().unwrap();
        assert_eq!((replay.records, replay.skipped), (vec![note("a", 0)], 1));
    }

    #[test]
    fn a_malformed_line_in_the_middle_is_skipped_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        log.append(&note("a", 0)).unwrap();
        append_raw(log.path(), b"not json at all\n{\"who\": 7, \"n\": \"x\"}\n\n  \n");
        append_raw(log.path(), b"{\"kind\":\"from-a-newer-sift\"}\n\xff\xfe\n");
        log.append(&note("a", 1)).unwrap();
        let replay = log.read().unwrap();
        assert_eq!(replay.records, [note("a", 0), note("a", 1)]);
        assert_eq!(replay.skipped, 4, "blank lines are not counted");
    }

    #[test]
    fn a_crash_mid_append_never_swallows_the_next_record() {
        let dir = tempfile::tempdir().unwrap();
        let log = log(dir.path());
        log.append(&note("a", 0)).unwrap();
        // A writer killed part-way through its line: a prefix of a record, no newline.
        let line = serde_json::to_string(&note("a", 1)).unwrap();
        append_raw(log.path(), &line.as_bytes()[..17]);
        log.append(&note("a", 2)).unwrap();
        log.append(&note("a", 3)).unwrap();
        let replay = log.read().unwrap();
        assert_eq!(replay.records, [note("a", 0), note("a", 2), note("a", 3)]);
        assert_eq!(replay.skipped, 1);
        // Killed after the whole record but before its newline: the record counts, and the next
        // one still starts a line of its own.
        append_raw(log.path(), serde_json::to_string(&note("a", 4)).unwrap().as_bytes());
        assert_eq!(log.read().unwrap().records.len(), 4);
        log.append(&note("a", 5)).unwrap();
        let replay = log.read().unwrap();
        let ns: Vec<u32> = replay.records.iter().map(|r| r.n).collect();
        assert_eq!((ns, replay.skipped), (vec![0, 2, 3, 4, 5], 1));
    }

    #[test]
    fn parse_reads_text_from_elsewhere() {
        let text = format!(
            "{}\n{{\"torn\n{}",
            serde_json::to_string(&note("a", 0)).unwrap(),
            serde_json::to_string(&note("a", 1)).unwrap()
        );
        let replay = parse::<Note>(text.as_bytes());
        assert_eq!((replay.records.len(), replay.skipped), (2, 1));
    }
}
