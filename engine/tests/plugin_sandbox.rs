//! A plugin's reads go through the sandbox's path rules: every escape attempt through the host
//! functions is denied. `host.read-file` is the one host function that takes a path (`host.log`
//! takes none and touches no file); each attempt below is a fixture plugin asking it for the
//! path, and the test prints the host's answer
//! (`cargo test -p sift-engine --test plugin_sandbox -- --nocapture`).

// The tests print what they tried (the issue asks for the table).
#![allow(clippy::print_stdout)]

use std::os::unix::fs::symlink;
use std::sync::Arc;

use sift_engine::review::plugins::SandboxWorkspace;
use sift_plugins::{ChangedFile, Grant, Limits, Plugin, PluginEngine, PluginError, Workspace};
use sift_runtime::sandbox::SandboxSettings;
use sift_test_support::plugins::{self as fixtures, Body};

fn file(path: &str) -> ChangedFile {
    ChangedFile {
        path: path.into(),
        language: "rust".into(),
        old_text: None,
        new_text: "fn main() {}\n".into(),
        changed: vec![(1, 1)],
    }
}

#[test]
fn escape_attempts_through_read_file_are_all_denied() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("repo");
    let outside = outer.path().join("outside");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn inside() {}\n").unwrap();
    std::fs::write(root.join(".env"), "API_KEY=hunter2\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "outside the workspace\n").unwrap();
    symlink(outside.join("secret.txt"), root.join("link-to-file")).unwrap();
    symlink(&outside, root.join("link-to-dir")).unwrap();
    symlink("../outside/secret.txt", root.join("src/relative-link")).unwrap();
    symlink("/etc", root.join("etc-link")).unwrap();

    let ws: Arc<dyn Workspace> =
        Arc::new(SandboxWorkspace::new(&root, &SandboxSettings::default()).unwrap());
    let engine = PluginEngine::new(None).unwrap();
    let reader = Plugin::load(
        &engine,
        "reader",
        &fixtures::component(&Body::ReadPath),
        Limits::default(),
        vec![Grant::Read, Grant::Log],
    )
    .unwrap();

    // The one legitimate read works, so the denials below are the rules, not a broken reader.
    let out = reader.check_file(ws.clone(), &file("src/lib.rs")).unwrap();
    assert_eq!(out.log[0].message, "pub fn inside() {}\n");
    println!("allowed  src/lib.rs");

    let secret_abs = outside.join("secret.txt").display().to_string();
    let attempts = [
        "../outside/secret.txt".to_string(),
        "src/../../outside/secret.txt".to_string(),
        "../../../../../../etc/passwd".to_string(),
        "/etc/passwd".to_string(),
        secret_abs,
        "link-to-file".to_string(),
        "link-to-dir/secret.txt".to_string(),
        "link-to-dir/".to_string(),
        "link-to-file/".to_string(),
        "src/relative-link".to_string(),
        "etc-link/passwd".to_string(),
        "etc-link/".to_string(),
        "src/lib.rs\0../../outside/secret.txt".to_string(),
        "\0".to_string(),
        "~/.ssh/id_rsa".to_string(),
        ".env".to_string(),
        String::new(),
    ];
    for path in &attempts {
        match reader.check_file(ws.clone(), &file(path)) {
            Err(PluginError::Reported { message, .. }) => {
                println!("denied   {path:?}: {message}");
                assert!(!message.contains("outside the workspace\n"), "{path:?} leaked: {message}");
            }
            Ok(out) => panic!("{path:?} was read: {:?}", out.log),
            Err(other) => panic!("{path:?}: not a denial: {other}"),
        }
    }
    println!("{} escape attempts, all denied", attempts.len());
}

#[test]
fn log_takes_no_path_and_reads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws: Arc<dyn Workspace> =
        Arc::new(SandboxWorkspace::new(dir.path(), &SandboxSettings::default()).unwrap());
    let engine = PluginEngine::new(None).unwrap();
    let logger = Plugin::load(
        &engine,
        "logger",
        &fixtures::component(&Body::LogPath),
        Limits::default(),
        vec![Grant::Log],
    )
    .unwrap();
    let out = logger.check_file(ws, &file("/etc/passwd")).unwrap();
    println!("log got {:?}: the text it was given, nothing read", out.log);
    assert_eq!(out.log[0].message, "/etc/passwd");
}
