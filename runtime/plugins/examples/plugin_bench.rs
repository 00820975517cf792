//! The plugin host's costs (`bench/plugin-bench.sh` runs it): compiling a component, loading it
//! from the code cache, the per-call overhead of an empty check (a fresh instance from the
//! pre-linked component + the call), and the example plugin (`banned-api`) over a 1,000-line
//! diff.
//!
//! `cargo run --release -p sift-plugins --example plugin_bench -- [BANNED_API.wasm]`

// A bench prints its numbers.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use sift_plugins::host::NoWorkspace;
use sift_plugins::{ChangedFile, Grant, Limits, Plugin, PluginEngine, Workspace};
use sift_test_support::plugins::{self as fixtures, Body};

fn stats(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let n = samples.len();
    let mean = samples.iter().sum::<Duration>() / n as u32;
    format!(
        "mean {:.1} µs, p50 {:.1} µs, p99 {:.1} µs ({n} calls)",
        mean.as_secs_f64() * 1e6,
        samples[n / 2].as_secs_f64() * 1e6,
        samples[n * 99 / 100].as_secs_f64() * 1e6
    )
}

/// Compile, then load from the cache (a fresh engine each, as a new `sift review` is).
fn load_times(name: &str, bytes: &[u8]) {
    let cache = std::env::temp_dir().join(format!("sift-plugin-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let engine = PluginEngine::new(Some(cache.clone())).unwrap();
    let started = Instant::now();
    Plugin::load(&engine, name, bytes, Limits::default(), vec![]).unwrap();
    let cold = started.elapsed();
    let mut warm = Vec::new();
    for _ in 0..20 {
        let engine = PluginEngine::new(Some(cache.clone())).unwrap();
        let started = Instant::now();
        Plugin::load(&engine, name, bytes, Limits::default(), vec![]).unwrap();
        warm.push(started.elapsed());
    }
    warm.sort();
    println!(
        "{name} ({} bytes): compile {:.1} ms; load from the cache, median of 20: {:.2} ms",
        bytes.len(),
        cold.as_secs_f64() * 1e3,
        warm[10].as_secs_f64() * 1e3
    );
    let _ = std::fs::remove_dir_all(&cache);
}

fn main() {
    let ws: Arc<dyn Workspace> = Arc::new(NoWorkspace);
    let empty = fixtures::component(&Body::Empty);
    load_times("empty", &empty);
    let engine = PluginEngine::new(None).unwrap();
    let plugin = Plugin::load(&engine, "empty", &empty, Limits::default(), vec![]).unwrap();
    let small = ChangedFile {
        path: "src/lib.rs".into(),
        language: "rust".into(),
        old_text: None,
        new_text: "fn main() {}\n".into(),
        changed: vec![(1, 1)],
    };
    for _ in 0..100 {
        plugin.check_file(ws.clone(), &small).unwrap();
    }
    let samples: Vec<Duration> = (0..2_000)
        .map(|_| {
            let started = Instant::now();
            plugin.check_file(ws.clone(), &small).unwrap();
            started.elapsed()
        })
        .collect();
    println!("empty check, instantiate + call: {}", stats(samples));

    let Some(path) = std::env::args().nth(1) else {
        println!("(no example plugin given: skipping the 1,000-line diff)");
        return;
    };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    load_times("banned-api", &bytes);
    let plugin =
        Plugin::load(&engine, "banned-api", &bytes, Limits::default(), vec![Grant::Log]).unwrap();
    let mut text = String::new();
    for i in 0..1_000 {
        match i % 10 {
            0 => text.push_str(&format!("    println!(\"step {i}\");\n")),
            5 => text.push_str(&format!("    std::thread::sleep(Duration::from_millis({i}));\n")),
            _ => text
                .push_str(&format!("    let value_{i} = compute(input, {i}); // a plain line\n")),
        }
    }
    let file = ChangedFile {
        path: "src/big.rs".into(),
        language: "rust".into(),
        old_text: Some(String::new()),
        new_text: text,
        changed: vec![(1, 1_000)],
    };
    let mut found = 0;
    let samples: Vec<Duration> = (0..200)
        .map(|_| {
            let started = Instant::now();
            found = plugin.check_file(ws.clone(), &file).unwrap().value.len();
            started.elapsed()
        })
        .collect();
    println!(
        "banned-api over a 1,000-line diff ({} KiB, {found} findings): {}",
        file.new_text.len() / 1024,
        stats(samples)
    );
}
