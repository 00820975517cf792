//! What `sift stats` and the language server's `sift/stats` show: the retention of accepted
//! agent code that is due measured now (no daemon does it), then the record of fates read and
//! summed over a period ([`crate::fates::stats`]), and the lessons proposed from accepted runs
//! the user replaced with their own code ([`crate::agent::lessons::proposed`]). One use case for
//! both front ends.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::fates::{self, Recorder, stats};

/// Where the record lives and how large it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// The record's folder.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// Records read.
    pub events: usize,
    /// Lines torn by a killed process, skipped.
    pub skipped: usize,
}

/// The record and its figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The record.
    pub record: Record,
    /// The figures of the period.
    pub stats: stats::Stats,
    /// Lessons proposed: accepted runs whose code the user replaced with their own, not kept
    /// or declined yet.
    pub lessons: Vec<crate::agent::lessons::Lesson>,
}

/// The period `since` says (`7d`, `24h`, a date; `None`: the last 30 days), or the whole
/// record when `all`, ending `now`.
pub fn period(since: Option<&str>, all: bool, now: u64) -> Result<Option<u64>, String> {
    match (since, all) {
        (_, true) => Ok(None),
        (Some(text), _) => stats::parse_since(text, now).map(Some),
        (None, _) => Ok(Some(now.saturating_sub(30 * stats::DAY))),
    }
}

/// The figures of the repository at `root` from `since` (`None`: the whole record) to `now`,
/// retention measured first through `recorder`.
pub fn report(
    root: &Path,
    recorder: &Recorder,
    since: Option<u64>,
    now: u64,
) -> crate::Result<Report> {
    let store = crate::store::open(root)?;
    crate::agent::retention::update(root, recorder, now);
    recorder.flush();
    let replay = fates::read(&store)?;
    let figures = stats::compute(&replay.records, since, now);
    let (path, bytes) = fates::usage(&store);
    let lessons = crate::agent::lessons::proposed(root, &crate::memory::Memory::open(&store), now);
    Ok(Report {
        record: Record { path, bytes, events: replay.records.len(), skipped: replay.skipped },
        stats: figures,
        lessons,
    })
}
