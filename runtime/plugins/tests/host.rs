//! The plugin host's guarantees, on fixture components built from core WAT
//! (`sift_test_support::plugins`): deadlines, fuel, the memory cap, traps in a row, refused
//! interfaces and imports, grants, malformed results and the code cache. Each test prints what
//! it measured (`cargo test -p sift-plugins --test host -- --nocapture`).

// The tests print what they measured (the issue asks for it).
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use sift_plugins::host::NoWorkspace;
use sift_plugins::{ChangedFile, Grant, Limits, Plugin, PluginEngine, PluginError, Workspace};
use sift_test_support::plugins::{self as fixtures, Body};

fn engine() -> PluginEngine {
    PluginEngine::new(None).expect("the engine starts")
}

fn load(engine: &PluginEngine, body: &Body, limits: Limits, grants: &[Grant]) -> Plugin {
    Plugin::load(engine, "fixture", &fixtures::component(body), limits, grants.to_vec())
        .expect("the fixture loads")
}

fn file(path: &str) -> ChangedFile {
    ChangedFile {
        path: path.into(),
        language: "rust".into(),
        old_text: None,
        new_text: "fn main() {}\nlet x = 1;\n".into(),
        changed: vec![(1, 2)],
    }
}

fn none() -> Arc<dyn Workspace> {
    Arc::new(NoWorkspace)
}

/// The resident set size of this process, in KiB.
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4
}

#[test]
fn an_empty_check_returns_nothing_and_tools_are_listed() {
    let engine = engine();
    let plugin = load(&engine, &Body::Empty, Limits::default(), &[]);
    let out = plugin.check_file(none(), &file("src/main.rs")).unwrap();
    assert!(out.value.is_empty());
    assert!(plugin.tools(none()).unwrap().value.is_empty());
    let err = plugin.call_tool(none(), "x", &serde_json::json!({})).unwrap_err();
    assert!(matches!(err, PluginError::Reported { .. }), "{err}");
    let exports: Vec<&str> = plugin.interface().exports.iter().map(|(n, _)| n.as_str()).collect();
    println!("exports: {exports:?}");
    assert_eq!(exports, ["sift:plugin/checks@0.1.0", "sift:plugin/tools@0.1.0"]);
}

#[test]
fn an_endless_loop_is_stopped_within_the_deadline_plus_20ms() {
    let engine = engine();
    let deadline = Duration::from_millis(100);
    let limits = Limits { deadline, fuel: u64::MAX / 2, ..Limits::default() };
    let plugin = load(&engine, &Body::Endless, limits, &[]);
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        let started = Instant::now();
        let err = plugin.check_file(none(), &file("a.rs")).unwrap_err();
        let took = started.elapsed();
        worst = worst.max(took);
        assert!(matches!(err, PluginError::Deadline { .. }), "{err}");
    }
    println!("endless loop, deadline {deadline:?}: stopped after at most {worst:?} (5 runs)");
    assert!(worst < deadline + Duration::from_millis(20), "took {worst:?}");
    assert!(worst >= deadline, "stopped early: {worst:?}");
}

#[test]
fn an_endless_loop_runs_out_of_fuel() {
    let engine = engine();
    let limits = Limits { fuel: 1_000_000, deadline: Duration::from_secs(30), ..Limits::default() };
    let plugin = load(&engine, &Body::Endless, limits, &[]);
    let started = Instant::now();
    let err = plugin.check_file(none(), &file("a.rs")).unwrap_err();
    println!("endless loop, 1,000,000 fuel: {err} ({:?})", started.elapsed());
    assert!(matches!(err, PluginError::Fuel { fuel: 1_000_000, .. }), "{err}");
}

#[test]
fn a_memory_bomb_is_capped() {
    let engine = engine();
    let cap = 8 << 20;
    let limits = Limits { memory_bytes: cap, ..Limits::default() };
    let plugin = load(&engine, &Body::MemoryBomb, limits, &[]);
    let before = rss_kib();
    let err = plugin.check_file(none(), &file("a.rs")).unwrap_err();
    println!("memory bomb, cap {cap} bytes: {err}; RSS {before} KiB -> {} KiB", rss_kib());
    match err {
        PluginError::Memory { wanted, cap: c, .. } => {
            assert_eq!(c, cap);
            assert!(wanted > cap);
        }
        other => panic!("not a memory error: {other}"),
    }
}

#[test]
fn a_thousand_traps_in_a_row_leave_the_host_alive_and_its_memory_flat() {
    let engine = engine();
    let plugin = load(&engine, &Body::Trap, Limits::default(), &[]);
    let f = file("a.rs");
    for _ in 0..50 {
        assert!(plugin.check_file(none(), &f).is_err());
    }
    let before = rss_kib();
    let started = Instant::now();
    for i in 0..1_000 {
        match plugin.check_file(none(), &f) {
            Err(PluginError::Trap { reason, .. }) => {
                if i == 0 {
                    println!("first trap: {reason}");
                }
            }
            other => panic!("call {i}: not a trap: {other:?}"),
        }
    }
    let after = rss_kib();
    println!(
        "1,000 trapping calls in {:?}: RSS {before} KiB -> {after} KiB ({:+} KiB)",
        started.elapsed(),
        after as i64 - before as i64
    );
    assert!(after < before + 8 * 1024, "RSS grew from {before} KiB to {after} KiB");
    // And the host still works.
    let ok = load(&engine, &Body::Empty, Limits::default(), &[]);
    assert!(ok.check_file(none(), &f).unwrap().value.is_empty());
}

#[test]
fn a_component_for_another_interface_version_is_refused_with_a_clear_message() {
    let engine = engine();
    let bytes = fixtures::component_for_version(&Body::Empty, "0.2.0");
    let err = Plugin::load(&engine, "future", &bytes, Limits::default(), vec![]).unwrap_err();
    println!("{err}");
    let text = err.to_string();
    assert!(matches!(err, PluginError::Refused { .. }));
    assert!(text.contains("built for sift:plugin@0.2.0"), "{text}");
    assert!(text.contains("supports sift:plugin@0.1.0"), "{text}");
    let (interface, refusal) = engine.inspect("future", &bytes).unwrap();
    assert_eq!(interface.version(), Some("0.2.0"));
    assert!(refusal.is_some());
}

#[test]
fn a_component_that_imports_wasi_is_refused() {
    let engine = engine();
    let bytes = fixtures::component_importing_wasi();
    let err = Plugin::load(&engine, "wasi", &bytes, Limits::default(), vec![]).unwrap_err();
    println!("{err}");
    let text = err.to_string();
    assert!(text.contains("imports `wasi:cli/environment@0.2.0`"), "{text}");
    assert!(text.contains("no WASI"), "{text}");
}

#[test]
fn core_modules_and_other_files_are_refused() {
    let engine = engine();
    let core = wat_module();
    for (what, bytes, expected) in [
        ("core module", core.as_slice(), "core WebAssembly module, not a component"),
        ("text", b"hello, world".as_slice(), "not a WebAssembly component"),
        ("truncated", b"\0asm\x0d\0\x01\0\x01".as_slice(), "cannot load it"),
    ] {
        let err = Plugin::load(&engine, "x", bytes, Limits::default(), vec![]).unwrap_err();
        println!("{what}: {err}");
        assert!(err.to_string().contains(expected), "{what}: {err}");
    }
}

fn wat_module() -> Vec<u8> {
    b"\0asm\x01\0\0\0".to_vec()
}

/// A workspace of one file, `src/lib.rs`.
struct OneFile;

impl Workspace for OneFile {
    fn read(&self, path: &str, limit: usize) -> Result<String, String> {
        match path {
            "src/lib.rs" if limit >= 11 => Ok("pub fn f() {}".into()),
            "src/lib.rs" => Err(format!("{path}: over the read limit")),
            _ => Err(format!("{path}: no such file")),
        }
    }
}

#[test]
fn reads_need_the_read_grant_and_go_through_the_workspace() {
    let engine = engine();
    let ws: Arc<dyn Workspace> = Arc::new(OneFile);
    let denied = load(&engine, &Body::ReadPath, Limits::default(), &[Grant::Log]);
    let err = denied.check_file(ws.clone(), &file("src/lib.rs")).unwrap_err().to_string();
    println!("without the grant: {err}");
    assert!(err.contains("was not granted \"read\""), "{err}");

    let reader = load(&engine, &Body::ReadPath, Limits::default(), &[Grant::Read, Grant::Log]);
    let out = reader.check_file(ws.clone(), &file("src/lib.rs")).unwrap();
    assert_eq!(out.log.len(), 1);
    assert_eq!(out.log[0].message, "pub fn f() {}");
    let err = reader.check_file(ws.clone(), &file("src/missing.rs")).unwrap_err().to_string();
    assert!(err.contains("no such file"), "{err}");

    let small = Limits { read_bytes: 4, ..Limits::default() };
    let limited = load(&engine, &Body::ReadPath, small, &[Grant::Read]);
    let err = limited.check_file(ws, &file("src/lib.rs")).unwrap_err().to_string();
    assert!(err.contains("over the read limit"), "{err}");
}

#[test]
fn logging_needs_the_log_grant() {
    let engine = engine();
    let quiet = load(&engine, &Body::LogPath, Limits::default(), &[]);
    assert!(quiet.check_file(none(), &file("a.rs")).unwrap().log.is_empty());
    let loud = load(&engine, &Body::LogPath, Limits::default(), &[Grant::Log]);
    let log = loud.check_file(none(), &file("a.rs")).unwrap().log;
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].level, log[0].message.as_str()), ("info", "a.rs"));
}

#[test]
fn findings_are_checked_against_the_file() {
    let engine = engine();
    let good = Body::Finding { start_line: 2, end_line: 2, start_col: 5, end_col: 6 };
    let plugin = load(&engine, &good, Limits::default(), &[]);
    let found = plugin.check_file(none(), &file("a.rs")).unwrap().value;
    assert_eq!(found.len(), 1);
    let f = &found[0];
    assert_eq!((f.rule.as_str(), f.start_line, f.start_col, f.end_col), ("test-rule", 2, 5, 6));
    assert_eq!((f.message.as_str(), f.rationale.as_str()), ("a message", "a rationale"));
    assert_eq!(f.severity, sift_plugins::Severity::Warning);

    for bad in [
        Body::Finding { start_line: 0, end_line: 1, start_col: 1, end_col: 1 },
        Body::Finding { start_line: 2, end_line: 99, start_col: 1, end_col: 1 },
        Body::Finding { start_line: 2, end_line: 1, start_col: 1, end_col: 1 },
        Body::Finding { start_line: 1, end_line: 1, start_col: 1, end_col: 500 },
    ] {
        let plugin = load(&engine, &bad, Limits::default(), &[]);
        let err = plugin.check_file(none(), &file("a.rs")).unwrap_err();
        println!("{bad:?}: {err}");
        assert!(matches!(err, PluginError::Malformed { .. }), "{err}");
    }
    let fails = load(&engine, &Body::Fails, Limits::default(), &[]);
    let err = fails.check_file(none(), &file("a.rs")).unwrap_err().to_string();
    assert_eq!(err, "plugin fixture: check-file failed: it went wrong");
}

#[test]
fn compiled_code_is_cached_in_the_given_folder_and_a_bad_cache_file_is_recompiled() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("plugins");
    let engine = PluginEngine::new(Some(cache.clone())).unwrap();
    let bytes = fixtures::component(&Body::Empty);
    let started = Instant::now();
    Plugin::load(&engine, "a", &bytes, Limits::default(), vec![]).unwrap();
    let cold = started.elapsed();
    let files: Vec<_> = std::fs::read_dir(&cache).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let started = Instant::now();
    let plugin = Plugin::load(&engine, "a", &bytes, Limits::default(), vec![]).unwrap();
    let warm = started.elapsed();
    println!("compile {cold:?}, from the cache {warm:?}");
    assert!(plugin.check_file(none(), &file("a.rs")).unwrap().value.is_empty());

    std::fs::write(&files[0], b"not compiled code").unwrap();
    let plugin = Plugin::load(&engine, "a", &bytes, Limits::default(), vec![]).unwrap();
    assert!(plugin.check_file(none(), &file("a.rs")).unwrap().value.is_empty());
    assert!(std::fs::metadata(&files[0]).unwrap().len() > 100, "the cache file was rewritten");
}
