//! The dependency audit of the plugin host: wasmtime stays on 48.0.x from 48.0.8 on (the release
//! line with the 2026 sandbox advisories fixed that builds with this project's Rust; 49 needs a
//! newer one), and its default features stay off (no `cache`, which pulls zstd; no WASI).

// The tests print what they measured (the issue asks for it).
#![allow(clippy::print_stdout)]

use std::path::Path;

fn lock() -> String {
    // The workspace's one lock file, two folders up.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The versions of package `name` in the lock file.
fn versions(lock: &str, name: &str) -> Vec<String> {
    lock.split("[[package]]")
        .filter(|p| p.lines().any(|l| l.trim() == format!("name = \"{name}\"")))
        .filter_map(|p| {
            p.lines().find_map(|l| {
                l.trim().strip_prefix("version = \"")?.strip_suffix('"').map(str::to_string)
            })
        })
        .collect()
}

#[test]
fn wasmtime_is_pinned_to_48_0_8_or_a_later_48_0_patch() {
    let lock = lock();
    let found = versions(&lock, "wasmtime");
    println!("wasmtime in Cargo.lock: {found:?}");
    assert_eq!(found.len(), 1, "exactly one wasmtime: {found:?}");
    let parts: Vec<u64> =
        found[0].split('.').map(|p| p.parse().expect("a plain version")).collect();
    assert_eq!(
        &parts[..2],
        [48, 0],
        "wasmtime {} is not 48.0.x: see ARCHITECTURE.md before moving it",
        found[0]
    );
    assert!(
        parts[2] >= 8,
        "wasmtime {} predates 48.0.8, which fixes the 2026 sandbox advisories",
        found[0]
    );
}

#[test]
fn the_host_pulls_in_no_wasi_and_no_zstd() {
    let lock = lock();
    for name in [
        "wasmtime-wasi",
        "wasmtime-wasi-io",
        "wasmtime-cache",
        "wasmtime-internal-cache",
        "zstd",
        "zstd-sys",
    ] {
        let found = versions(&lock, name);
        println!("{name}: {found:?}");
        assert!(
            found.is_empty(),
            "{name} is in Cargo.lock ({found:?}): the plugin host must not need it"
        );
    }
}

#[test]
fn the_manifest_turns_wasmtime_default_features_off() {
    // The version and features are set once, in the workspace's manifest.
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml"))
            .unwrap();
    let line = manifest.lines().find(|l| l.starts_with("wasmtime =")).expect("a wasmtime line");
    println!("{line}");
    assert!(line.contains("default-features = false"), "{line}");
    assert!(line.contains("\"~48.0.8\"") || line.contains("\"=48.0."), "{line}");
}
