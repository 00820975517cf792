//! The `sift` binary as users and scripts meet it: output contracts, exit codes, messages.

use sift_tests::{json_lines, run, stderr, stdout, write};

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "src/config.rs",
        "/// Reads the config file.\npub fn parse_config(path: &str) -> Config {\n    todo!()\n}\n",
    );
    write(
        dir.path(),
        "web/views.py",
        "class LoginView:\n    def post(self, request):\n        return check_password(request)\n",
    );
    write(dir.path(), "docs/guide.md", "# Guide\n\nHow to parse the config.\n");
    dir
}

#[test]
fn version_and_help_work_everywhere() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert!(stdout(&out).starts_with("sift "), "{}", stdout(&out));
    let out = run(&["--help"]);
    assert!(out.status.success());
    for sub in ["index", "search", "status"] {
        assert!(stdout(&out).contains(sub), "{sub} missing from --help");
    }
    for sub in [&["index", "--help"][..], &["search", "--help"], &["status", "--help"]] {
        let out = run(sub);
        assert!(out.status.success(), "{sub:?}");
        assert!(stdout(&out).contains("--path"), "{sub:?} lacks --path:\n{}", stdout(&out));
    }
}

#[test]
fn search_json_is_one_object_per_line_with_the_documented_fields() {
    let dir = tree();
    let root = dir.path().to_str().unwrap();
    let out = run(&["search", "--path", root, "--json", "-k", "5", "parseConfig"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits = json_lines(&out);
    assert!(!hits.is_empty());
    let top = &hits[0];
    assert_eq!(top["path"], "src/config.rs");
    assert_eq!(top["start_line"], 1);
    assert_eq!(top["end_line"], 4);
    assert_eq!(top["symbol"], "parse_config");
    assert_eq!(top["kind"], "function");
    assert!(top["score"].as_f64().unwrap() > 0.0);
    assert!(top["snippet"].as_str().unwrap().contains("parse_config"));
    for hit in &hits {
        for field in ["path", "start_line", "end_line", "score", "symbol", "kind", "snippet"] {
            assert!(hit.get(field).is_some(), "{field} missing in {hit}");
        }
        let path = hit["path"].as_str().unwrap();
        assert!(!path.contains('\\') && !path.starts_with('/'), "{path}");
    }
    // Scores are ordered best first.
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
}

#[test]
fn index_takes_the_path_positionally_or_by_flag_and_reports() {
    let dir = tree();
    let root = dir.path().to_str().unwrap();
    let out = run(&["index", root]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("3 added"), "{}", stdout(&out));
    let out = run(&["index", "--path", root, "--json"]);
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["files_total"], 3);
    assert_eq!(report["added"], 0);
    let out = run(&["status", "--path", root, "--json"]);
    let status: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(status["files"], 3);
    assert_eq!(status["indexed"], true);
}

#[test]
fn search_refreshes_after_an_edit() {
    let dir = tree();
    let root = dir.path().to_str().unwrap();
    assert!(run(&["index", root, "--quiet"]).status.success());
    write(dir.path(), "src/new.rs", "fn brand_new_function() {}\n");
    let out = run(&["search", "--path", root, "--json", "brand_new_function"]);
    assert_eq!(json_lines(&out)[0]["path"], "src/new.rs");
    // --no-refresh searches what is committed, without walking the tree.
    write(dir.path(), "src/newer.rs", "fn even_newer_function() {}\n");
    let out = run(&["search", "--path", root, "--json", "--no-refresh", "even_newer_function"]);
    assert!(out.status.success());
    assert!(json_lines(&out).iter().all(|h| h["path"] != "src/newer.rs"), "{}", stdout(&out));
}

#[test]
fn hybrid_falls_back_to_lexical_and_says_so_once() {
    let dir = tree();
    let root = dir.path().to_str().unwrap();
    let out = run(&["search", "--path", root, "--mode", "hybrid", "--json", "password"]);
    assert!(out.status.success());
    assert_eq!(stderr(&out).matches("falls back to lexical").count(), 1, "{}", stderr(&out));
    assert_eq!(json_lines(&out)[0]["path"], "web/views.py");
    let out = run(&["search", "--path", root, "--mode", "semantic", "password"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("sift model install"), "{}", stderr(&out));
}

/// Every error is one line on stderr starting with `error:`, with exit status 1.
#[track_caller]
fn assert_one_line_error(out: &std::process::Output, needle: &str) {
    assert_eq!(out.status.code(), Some(1), "stdout: {}\nstderr: {}", stdout(out), stderr(out));
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    assert!(err.contains(needle), "expected {needle:?} in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn errors_are_one_clear_line_and_exit_one() {
    let dir = tree();
    let root = dir.path();
    let missing = root.join("missing");
    assert_one_line_error(&run(&["index", missing.to_str().unwrap()]), "path does not exist");
    assert_one_line_error(
        &run(&["search", "--path", missing.to_str().unwrap(), "x"]),
        "path does not exist",
    );
    let file = root.join("docs/guide.md");
    assert_one_line_error(&run(&["index", file.to_str().unwrap()]), "not a directory");

    let r = root.to_str().unwrap();
    assert_one_line_error(
        &run(&["search", "--path", r, "--no-refresh", "x"]),
        "run `sift index` first",
    );
    assert_one_line_error(&run(&["search", "--path", r, "--", "-> {}"]), "no words to search for");

    write(root, ".sift/config.toml", "[index]\nmax_file_size = \"huge\"\n");
    assert_one_line_error(&run(&["index", r]), "config.toml");
    write(root, ".sift/config.toml", "[index]\nmax_file_size = \"2 MiB\"\n");
    assert!(run(&["index", r, "--quiet"]).status.success());

    std::fs::write(root.join(".sift/index/meta.json"), "{ not json").unwrap();
    assert_one_line_error(&run(&["search", "--path", r, "config"]), "--rebuild");
    let out = run(&["index", r, "--rebuild", "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["search", "--path", r, "--json", "--no-refresh", "parse_config"]);
    assert_eq!(json_lines(&out)[0]["path"], "src/config.rs");
}

#[test]
fn a_newer_sifts_entries_are_reported_and_another_tools_sift_folder_refused() {
    let dir = tree();
    let root = dir.path();
    let r = root.to_str().unwrap();
    assert!(run(&["index", r, "--quiet", "--no-embed"]).status.success());
    // What a newer sift may add to the folder this one made: reported once, left alone.
    write(root, ".sift/later/notes.jsonl", "{}\n");
    write(root, ".sift/unheard-of.toml", "");
    let out = run(&["search", "--path", r, "--json", "parse_config"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_lines(&out)[0]["path"], "src/config.rs");
    let err = stderr(&out);
    assert_eq!(err.matches("holds later, unheard-of.toml").count(), 1, "{err}");
    let out = run(&["status", "--path", r, "--json"]);
    let status: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(status["unknown_entries"], serde_json::json!(["later", "unheard-of.toml"]));
    assert!(stdout(&run(&["status", "--path", r])).contains("later, unheard-of.toml"));
    assert!(
        root.join(".sift/later/notes.jsonl").is_file()
            && root.join(".sift/unheard-of.toml").is_file()
    );

    // A fresh clone that committed only shared files is sift's, though it has no marker yet.
    let clone = tree();
    write(clone.path(), ".sift/review.toml", "");
    write(clone.path(), ".sift/feedback/dismissed.jsonl", "");
    let out = run(&["index", clone.path().to_str().unwrap(), "--quiet", "--no-embed"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // Another tool's `.sift/` (nothing of sift's in it): refused before anything is written.
    let other = tree();
    write(other.path(), ".sift/state.db", "x");
    let o = other.path().to_str().unwrap();
    assert_one_line_error(&run(&["index", o]), "does not look like sift's");
    assert_one_line_error(&run(&["search", "--path", o, "x"]), "state.db");
    let left: Vec<_> = std::fs::read_dir(other.path().join(".sift")).unwrap().collect();
    assert_eq!(left.len(), 1, "nothing added to another tool's folder");
}

#[test]
fn usage_errors_exit_two() {
    let out = run(&["search"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["index", "--max-file-size", "lots"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a size"), "{}", stderr(&out));
}

#[test]
fn non_utf8_and_large_and_binary_files_do_not_break_indexing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "ok.rs", "fn fine() {}\n");
    write(root, "bad.txt", b"\xff\xfe broken \xc3\x28 utf8 sentinelword\n");
    write(root, "big.txt", "x ".repeat(3 << 20));
    write(root, "img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR");
    let r = root.to_str().unwrap();
    let out = run(&["index", r, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(report["skipped"]["too_large"], 1);
    assert_eq!(report["skipped"]["binary"], 1);
    assert_eq!(report["files_total"], 2);
    let out = run(&["search", "--path", r, "--json", "sentinelword"]);
    assert_eq!(json_lines(&out)[0]["path"], "bad.txt");
}

#[test]
fn index_watch_keeps_the_index_fresh_and_search_trusts_it() {
    use std::io::BufRead;
    let dir = tree();
    let root = dir.path().to_str().unwrap().to_string();
    let mut watcher = sift_tests::sift()
        .args(["index", &root, "--watch", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(watcher.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("the watcher talks").unwrap();
        if line.starts_with("watching ") {
            break;
        }
    }
    write(dir.path(), "src/watched.rs", "pub fn picked_up_by_the_watcher() {}\n");
    let mut found = false;
    for _ in 0..200 {
        let out =
            run(&["search", "--path", &root, "--json", "--no-refresh", "picked_up_by_the_watcher"]);
        if json_lines(&out).first().is_some_and(|h| h["path"] == "src/watched.rs") {
            found = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(found, "the watcher did not index the new file");
    // While a watcher runs, a plain search does not walk the tree.
    let out = sift_tests::sift()
        .args(["search", "--path", &root, "--json", "picked_up_by_the_watcher"])
        .env("SIFT_LOG", "debug")
        .output()
        .unwrap();
    assert!(stderr(&out).contains("kept fresh by a watching sift process"), "{}", stderr(&out));
    watcher.kill().unwrap();
    watcher.wait().unwrap();
    // Once it is gone, search checks the tree itself again.
    write(dir.path(), "src/after.rs", "pub fn written_after_the_watcher() {}\n");
    let out = run(&["search", "--path", &root, "--json", "written_after_the_watcher"]);
    assert_eq!(json_lines(&out)[0]["path"], "src/after.rs", "{}", stderr(&out));
}

/// Whether some process holds `.sift/watch.lock` (a watcher keeps the index fresh).
fn watched(root: &std::path::Path) -> bool {
    let Ok(file) = std::fs::File::open(root.join(".sift/watch.lock")) else { return false };
    match file.try_lock() {
        Ok(()) => false,
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(e) => panic!("{e:?}"),
    }
}

/// Polls `ready` every 50 ms for up to 30 s.
fn eventually(mut ready: impl FnMut() -> bool) -> bool {
    (0..600).any(|_| {
        let ok = ready();
        if !ok {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        ok
    })
}

#[test]
fn a_search_can_leave_one_watcher_behind_that_stops_once_unused() {
    let dir = tree();
    let root = dir.path().to_str().unwrap().to_string();
    let log = dir.path().join(".sift/logs/watch.log");
    let out = run(&["search", "--path", &root, "--keep-watching", "3", "helper"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("left a watcher keeping the index fresh"), "{}", stderr(&out));
    assert!(
        eventually(|| std::fs::read_to_string(&log).is_ok_and(|l| l.contains("watching "))),
        "the watcher did not start: {:?}",
        std::fs::read_to_string(&log)
    );
    assert!(watched(dir.path()));
    // A second search asking for one finds it there and starts no other.
    let out = run(&["search", "--path", &root, "--keep-watching", "3", "helper"]);
    assert!(!stderr(&out).contains("left a watcher"), "{}", stderr(&out));
    // Searches now trust the watcher (and keep it alive), and what it indexes they find.
    write(dir.path(), "src/watched.rs", "pub fn picked_up_by_the_left_watcher() {}\n");
    let found = eventually(|| {
        let out = sift_tests::sift()
            .args(["search", "--path", &root, "--json", "picked_up_by_the_left_watcher"])
            .env("SIFT_LOG", "debug")
            .output()
            .unwrap();
        assert!(stderr(&out).contains("kept fresh by a watching sift process"), "{}", stderr(&out));
        json_lines(&out).first().is_some_and(|h| h["path"] == "src/watched.rs")
    });
    assert!(found, "the watcher did not index the new file");
    // Unused, it stops by itself and says why.
    assert!(eventually(|| !watched(dir.path())), "the watcher is still running");
    assert!(std::fs::read_to_string(&log).unwrap().contains("stopped watching: no search"));
    // A repository's own file cannot start one.
    write(dir.path(), ".sift/config.toml", "[index]\nkeep_watching_secs = 60\n");
    let out = run(&["search", "--path", &root, "helper"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot start background processes"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("left a watcher"), "{}", stderr(&out));
    assert!(!watched(dir.path()));
}

/// `sift eval` scores the list a user is shown (the files of the default ten results) beside
/// its deeper file ranking: here one file fills the ten results, so the answer, second in the
/// ranking, is not in the shown list.
#[test]
fn eval_scores_the_shown_list_beside_the_file_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let many: String = (0..12)
        .map(|i| {
            format!(
                "def frobnicate_widget_{i}(widget):\n    \"\"\"Frobnicate the widget.\"\"\"\n    return widget.frobnicate({i})\n\n\n"
            )
        })
        .collect();
    write(&repo, "widgets/many.py", &many);
    write(&repo, "widgets/answer.py", "def spin(x):\n    # frobnicate once\n    return x\n");
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        "{\"q\": \"frobnicate widget\", \"gold\": [\"widgets/answer.py\"], \"split\": \"tuning\"}\n",
    )
    .unwrap();
    let r = repo.to_str().unwrap();
    let out = run(&["eval", "--path", r, "--json", queries.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let lexical = rows.iter().find(|r| r["mode"] == "lexical").expect("a lexical row");
    // The ranking reaches the answer: second file.
    assert_eq!(lexical["recall_at_5"], 1.0, "{lexical}");
    assert_eq!(lexical["mrr"], 0.5, "{lexical}");
    // Each file once: the answer is shown second, as ranked.
    assert_eq!(lexical["shown_files"], 2.0, "{lexical}");
    assert_eq!(lexical["shown_recall_at_5"], 1.0, "{lexical}");
    assert_eq!(lexical["shown_mrr"], 0.5, "{lexical}");
    // Chunk by chunk (`sift search --chunks`), the ten results shown are all from one file.
    let out = run(&["eval", "--path", r, "--json", "--chunks", queries.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let lexical = rows.iter().find(|r| r["mode"] == "lexical").expect("a lexical row");
    assert_eq!(lexical["shown_files"], 1.0, "{lexical}");
    assert_eq!(lexical["shown_recall_at_5"], 0.0, "{lexical}");
    assert_eq!(lexical["shown_mrr"], 0.0, "{lexical}");
    // What `sift search` prints: each file once, its other chunks named under it.
    let out = run(&["search", "--path", r, "--mode", "lexical", "frobnicate widget"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("widgets/")).collect();
    assert_eq!(heads.len(), 2, "{text}");
    assert!(heads[0].starts_with("widgets/many.py:") && heads[1].starts_with("widgets/answer.py:"));
    assert!(text.contains("+ 11 more in this file: "), "{text}");
    let out = run(&["search", "--path", r, "--mode", "lexical", "--json", "frobnicate widget"]);
    let lines: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["more"].as_array().map(Vec::len), Some(11), "{}", lines[0]);
    assert!(lines[0]["more"][0]["more"].is_null(), "one level");
    assert!(lines[1].get("more").is_none(), "absent when empty: {}", lines[1]);
    let out = run(&["search", "--path", r, "--mode", "lexical", "--chunks", "frobnicate widget"]);
    let heads = stdout(&out).lines().filter(|l| l.starts_with("widgets/many.py:")).count();
    assert_eq!(heads, 10, "{}", stdout(&out));
    // The table says what the columns are.
    let out = run(&["eval", "--path", r, queries.to_str().unwrap()]);
    assert!(stdout(&out).contains("sR@5"), "{}", stdout(&out));
    assert!(stdout(&out).contains("the shown list"), "{}", stdout(&out));
}
