//! Crash safety: `sift index` killed with SIGKILL at many moments leaves an index that opens,
//! answers, and catches up on the next run without starting over; two concurrent writers never
//! corrupt it.

#![cfg(unix)]

use std::process::Stdio;
use std::time::Duration;

use sift_tests::{json_lines, run, rust_corpus, sift, stderr, stdout};

fn report(root: &str) -> serde_json::Value {
    let out = run(&["index", root, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

fn status(root: &str) -> serde_json::Value {
    let out = run(&["status", "--path", root, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

fn top_paths(root: &str, query: &str) -> Vec<String> {
    let out = run(&["search", "--path", root, "--no-refresh", "--json", "-k", "20", query]);
    assert!(out.status.success(), "search after a crash failed: {}", stderr(&out));
    json_lines(&out).iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()
}

#[test]
fn sigkill_at_any_moment_leaves_a_usable_index_that_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    rust_corpus(dir.path(), 1500);

    // The reference: the same tree indexed without interruption, in another folder.
    let clean = tempfile::tempdir().unwrap();
    rust_corpus(clean.path(), 1500);
    let clean_root = clean.path().to_str().unwrap();
    let reference = report(clean_root);
    assert_eq!(reference["files_total"], 1500);

    let mut kills = 0;
    for delay_ms in [5u64, 40, 90, 160, 250, 400, 600, 900] {
        let mut child = sift()
            .args(["index", &root, "--quiet"])
            .env("SIFT_COMMIT_INTERVAL_MS", "15")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            kills += 1;
        }
        child.wait().unwrap();
        // Whatever was committed opens and answers (possibly with nothing yet). Only a process
        // killed before it created the index may leave none, and then it says so.
        if dir.path().join(".sift/index").exists() {
            let found = top_paths(&root, "fn_7_3");
            let f7 = "src/m7/f7.rs".to_string();
            assert!(!found.contains(&f7) || found[0] == f7, "{found:?}");
        } else {
            let out = run(&["search", "--path", &root, "--no-refresh", "fn_7_3"]);
            assert!(stderr(&out).contains("run `sift index` first"), "{}", stderr(&out));
        }
    }
    assert!(kills > 0, "no run was interrupted; the test proved nothing");

    let last = report(&root);
    assert_eq!(last["files_total"], reference["files_total"]);
    assert_eq!(last["chunks_total"], reference["chunks_total"]);
    let before: u64 = last["unchanged"].as_u64().unwrap() + last["touched"].as_u64().unwrap();
    assert!(before > 0, "the interrupted runs kept no progress: {last}");
    assert_eq!(status(&root)["chunks"], status(clean_root)["chunks"]);
    // Same content: every chunk that mentions a word is there once, and unique names rank first.
    // (Scores of ties may differ: BM25 statistics count deleted documents until segments merge.)
    for query in ["common_helper", "HashMap", "step"] {
        let count = |r: &str| {
            let out =
                run(&["search", "--path", r, "--no-refresh", "--json", "-k", "100000", query]);
            json_lines(&out).len()
        };
        assert_eq!(count(&root), count(clean_root), "{query}");
    }
    for (query, file) in [("fn_1234_5", "src/m10/f1234.rs"), ("fn_7_0", "src/m7/f7.rs")] {
        assert_eq!(top_paths(&root, query)[0], file);
    }
    let again = report(&root);
    assert_eq!(again["added"].as_u64().unwrap() + again["changed"].as_u64().unwrap(), 0, "{again}");
}

#[test]
fn concurrent_indexers_share_one_writer_safely() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    rust_corpus(dir.path(), 600);
    let spawn = || {
        sift()
            .args(["index", &root, "--quiet"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let ok = outs.iter().filter(|o| o.status.success()).count();
    assert!(ok >= 1, "{outs:?}");
    for out in outs.iter().filter(|o| !o.status.success()) {
        assert!(stderr(out).contains("another sift process is updating"), "{}", stderr(out));
    }
    let last = report(&root);
    assert_eq!(last["files_total"], 600);
    assert_eq!(top_paths(&root, "fn_599_0")[0], "src/m4/f599.rs");
}
