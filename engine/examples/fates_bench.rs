//! What recording a fate costs the caller, and what `sift stats` costs to read: release build,
//! `cargo run --release -p sift-engine --example fates_bench [EVENTS]`.
//!
//! 1. `Recorder::record` (the call every front end makes: hands the event to the writer thread)
//!    timed per call over EVENTS events (default 10,000), recorded one at a time with a pause
//!    between bursts, as an editor would; p50 / p99 / max in microseconds.
//! 2. Side by side, the store's synchronous append with an fsync per record (what a dismissal
//!    costs, `JsonlLog::append`), over 500 records: the baseline a recorder on the caller's
//!    thread would have paid.
//! 3. Reading a record of 1,000 events and summing them (`fates::read` + `stats::compute`, what
//!    `sift stats` does besides starting), median of 20.
//!
//! Prints a Markdown table; nothing fails on its figures.

use std::time::Instant;

use sift_engine::fates::{self, Event, Fate, Front, Kind, Recorder, stats};
use sift_indexer::store::JsonlLog;

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p / 100.0).round() as usize]
}

fn event(n: usize) -> Event {
    match n % 4 {
        0 => Event::new(Kind::Search, fates::text_id(&format!("query {n}")), Fate::Shown)
            .count(10)
            .path("django/db/models/query.py"),
        1 => Event::new(Kind::Finding, format!("{n:016x}"), Fate::Shown)
            .rule("python/bare-except")
            .path("app/views.py"),
        2 => Event::new(Kind::AgentRun, format!("1765000000-{n}"), Fate::Shown)
            .model("qwen2.5-coder-7b")
            .count(2),
        _ => Event::new(Kind::AgentRun, format!("1765000000-{}", n - 1), Fate::Accepted),
    }
}

#[allow(clippy::print_stdout)]
fn main() {
    let events: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let root = dir.path();

    let recorder = Recorder::open(root, &fates::FeedbackSettings::default(), Front::CLI);
    let mut record = Vec::with_capacity(events);
    for n in 0..events {
        let e = event(n);
        let t = Instant::now();
        recorder.record(e);
        record.push(t.elapsed().as_secs_f64() * 1e6);
        if n % 50 == 49 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    let t = Instant::now();
    drop(recorder);
    let drain_ms = t.elapsed().as_secs_f64() * 1e3;
    record.sort_by(f64::total_cmp);

    let log = JsonlLog::<Event>::new(root.join("sync-baseline.jsonl"));
    let mut synced = Vec::new();
    for n in 0..500 {
        let e = event(n);
        let t = Instant::now();
        log.append(&e).expect("append");
        synced.push(t.elapsed().as_secs_f64() * 1e6);
    }
    synced.sort_by(f64::total_cmp);

    let small = tempfile::tempdir().expect("a temporary folder");
    let recorder = Recorder::open(small.path(), &fates::FeedbackSettings::default(), Front::CLI);
    for n in 0..1000 {
        recorder.record(event(n));
    }
    drop(recorder);
    let store = sift_engine::store::open(small.path()).expect("the store");
    let mut read = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let replay = fates::read(&store).expect("read");
        let s = stats::compute(&replay.records, None, fates::now());
        assert_eq!(s.events, 1000);
        read.push(t.elapsed().as_secs_f64() * 1e3);
    }
    read.sort_by(f64::total_cmp);

    println!("| what | p50 | p99 | max |");
    println!("|---|---|---|---|");
    println!(
        "| `Recorder::record`, {events} events (µs per call) | {:.1} | {:.1} | {:.1} |",
        pct(&record, 50.0),
        pct(&record, 99.0),
        record[record.len() - 1]
    );
    println!(
        "| synchronous `JsonlLog::append` + fsync, 500 records (µs per call) | {:.0} | {:.0} | {:.0} |",
        pct(&synced, 50.0),
        pct(&synced, 99.0),
        synced[synced.len() - 1]
    );
    println!(
        "| read + sum 1,000 events (ms, 20 runs) | {:.2} | {:.2} | {:.2} |",
        pct(&read, 50.0),
        pct(&read, 99.0),
        read[read.len() - 1]
    );
    println!(
        "\np99 ratio, record / synchronous append: {:.4}; the writer drained the queue {drain_ms:.1} ms after the last event",
        pct(&record, 99.0) / pct(&synced, 99.0)
    );
}
