//! Semantic and hybrid search through the real binary with the real (installed) models:
//! `sift index` embeds after the lexical pass, `sift search` defaults to hybrid, SIGKILL while
//! embedding loses nothing that was written, `sift eval` scores correctly. Skipped when the
//! models are not installed, unless `SIFT_REQUIRE_MODEL=1`.

use std::process::{Output, Stdio};
use std::time::Duration;

use sift_tests::{
    json_lines, models_installed, rust_corpus, sift_with_models, stderr, stdout, write,
};

fn run(args: &[&str]) -> Output {
    sift_with_models().args(args).output().expect("sift runs")
}

/// Runs `sift search --json ARGS`, which must succeed: its hits and what it wrote to stderr.
fn search(args: &[&str]) -> (Vec<serde_json::Value>, String) {
    let mut all = vec!["search", "--json"];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(out.status.success(), "{}", stderr(&out));
    (json_lines(&out), stderr(&out))
}

fn index_json(root: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["index", root, "--json"];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

fn corpus() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "net/retry.py",
        "def backoff_delay(attempt):\n    \"\"\"Seconds to sleep before trying the request again: doubles each time.\"\"\"\n    return min(60, 2 ** attempt)\n",
    );
    write(
        root,
        "auth/login.py",
        "class LoginView:\n    def post(self, request):\n        return check_password(request.user, request.POST['password'])\n",
    );
    write(
        root,
        "render/color.rs",
        "pub fn blend(a: Rgba, b: Rgba, t: f32) -> Rgba {\n    Rgba { r: lerp(a.r, b.r, t), g: lerp(a.g, b.g, t), b: lerp(a.b, b.b, t) }\n}\n",
    );
    write(
        root,
        "store/cache.go",
        "// Get returns the cached value for key, if it has not expired.\nfunc (c *Cache) Get(key string) (string, bool) {\n\te, ok := c.items[key]\n\treturn e.value, ok && time.Now().Before(e.expires)\n}\n",
    );
    dir
}

#[test]
fn index_embeds_and_search_defaults_to_hybrid() {
    if !models_installed() {
        return;
    }
    let dir = corpus();
    let root = dir.path().to_str().unwrap();
    let report = index_json(root, &[]);
    let chunks = report["chunks_total"].as_u64().unwrap();
    assert_eq!(report["embeddings"]["with_vectors"].as_u64(), Some(chunks), "{report}");
    assert_eq!(report["embeddings"]["embedded"].as_u64(), Some(chunks), "{report}");
    // Nothing to do the second time: vectors are cached by content.
    let again = index_json(root, &[]);
    assert_eq!(again["embeddings"]["embedded"], 0, "{again}");

    // A question in words the code does not use finds the code by meaning.
    let (hits, _) =
        search(&["--path", root, "--mode", "semantic", "wait longer between repeated tries"]);
    assert_eq!(hits[0]["path"], "net/retry.py", "{hits:?}");

    // Default: hybrid, quietly (full coverage, no notes).
    let (hits, err) = search(&["--path", root, "check password"]);
    assert_eq!(hits[0]["path"], "auth/login.py");
    assert!(!err.contains("note:"), "{err}");
}

#[test]
fn no_embed_skips_embeddings_and_semantic_search_says_what_to_do() {
    if !models_installed() {
        return;
    }
    let dir = corpus();
    let root = dir.path().to_str().unwrap();
    let report = index_json(root, &["--no-embed"]);
    assert!(report["embeddings"].is_null(), "{report}");
    let out = run(&["search", "--path", root, "--no-refresh", "--mode", "semantic", "cache"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("run `sift index`"), "{}", stderr(&out));
    // Hybrid without vectors falls back to lexical and says so.
    let out =
        run(&["search", "--path", root, "--no-refresh", "--mode", "hybrid", "--json", "cache"]);
    assert!(out.status.success());
    assert!(stderr(&out).contains("falls back to lexical"), "{}", stderr(&out));
    assert_eq!(json_lines(&out)[0]["path"], "store/cache.go");
}

#[test]
fn sigkill_while_embedding_keeps_what_was_written_and_the_next_run_finishes() {
    if !models_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    rust_corpus(dir.path(), 100);
    let lexical = index_json(&root, &["--no-embed"]);
    let chunks = lexical["chunks_total"].as_u64().unwrap();
    let vectors = dir.path().join(".sift/vectors");
    let mut killed_mid_way = false;
    for attempt in 0..5 {
        let mut child = sift_with_models()
            .args(["index", &root, "--quiet"])
            .env("SIFT_EMBED_MODEL", "all-minilm-l6-v2") // the slow model: a wide window to kill in
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill once some vectors are on disk.
        let start = std::time::Instant::now();
        let size = |p: &std::path::Path| {
            std::fs::read_dir(p)
                .ok()
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "vec"))
                .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
                .sum::<u64>()
        };
        while size(&vectors) < 10_000 && start.elapsed() < Duration::from_secs(60) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(20 * attempt));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            killed_mid_way = true;
        }
        child.wait().unwrap();
        if killed_mid_way {
            break;
        }
    }
    assert!(killed_mid_way, "embedding finished before it could be killed");
    // The next run opens everything, keeps the vectors written before the kill, and finishes.
    let out = sift_with_models()
        .args(["index", &root, "--json"])
        .env("SIFT_EMBED_MODEL", "all-minilm-l6-v2")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let embedded = report["embeddings"]["embedded"].as_u64().unwrap();
    assert_eq!(report["embeddings"]["with_vectors"].as_u64(), Some(chunks), "{report}");
    assert!(embedded < chunks, "the run after the kill started over: {report}");
    assert_eq!(report["added"], 0, "the lexical index was untouched: {report}");
}

#[test]
fn eval_scores_rankings_at_file_level() {
    if !models_installed() {
        return;
    }
    let dir = corpus();
    let root = dir.path().to_str().unwrap();
    let elsewhere = tempfile::tempdir().unwrap(); // not in the indexed tree
    let queries = elsewhere.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        concat!(
            "{\"q\": \"check password\", \"gold\": [\"auth/login.py\"], \"split\": \"tuning\"}\n",
            "{\"q\": \"backoff delay\", \"gold\": [\"net/retry.py\"], \"split\": \"tuning\"}\n",
            "{\"q\": \"zzzz qqqq\", \"gold\": [\"render/color.rs\", \"store/cache.go\"], \"split\": \"tuning\"}\n",
        ),
    )
    .unwrap();
    let out = run(&["eval", "--path", root, "--json", queries.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = json_lines(&out);
    let modes: Vec<&str> = rows.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["lexical", "semantic", "hybrid"]);
    // One split only: every record says which.
    assert!(rows.iter().all(|r| r["split"] == "tuning"), "{rows:?}");
    let lexical = &rows[0];
    // Two of three questions answered first; the third matches nothing lexically.
    assert!((lexical["recall_at_1"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9, "{lexical}");
    assert!((lexical["mrr"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9, "{lexical}");
    assert_eq!(lexical["queries"], 3);
    // Acc@5: a query counts once one gold file is in the first five (the third has none).
    assert!((lexical["acc_at_5"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9, "{lexical}");
    // Semantic search ranks every file, so the third question's two gold files are both in the
    // top 10 (recall@10 counts each gold file).
    let semantic = &rows[1];
    assert!((semantic["recall_at_10"].as_f64().unwrap() - 1.0).abs() < 1e-9, "{semantic}");
    assert!((semantic["acc_at_5"].as_f64().unwrap() - 1.0).abs() < 1e-9, "{semantic}");

    // --regressions names only queries lexical search answered, ranked worse by another mode.
    let out = run(&["eval", "--path", root, "--regressions", queries.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    for line in stderr(&out).lines().filter(|l| l.starts_with("worse [")) {
        assert!(line.contains("semantic]") || line.contains("hybrid]"), "{line}");
        assert!(line.contains("lexical #1,"), "both answered queries were first lexically: {line}");
        assert!(!line.contains("zzzz"), "lexical search found nothing for it: {line}");
    }

    // Bad input: a clear error naming the line.
    std::fs::write(&queries, "{\"q\": \"x\"}\n").unwrap();
    let out = run(&["eval", "--path", root, queries.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("queries.jsonl:1"), "{}", stderr(&out));
}

#[test]
fn the_upgrade_embeds_after_the_first_model_and_searches_switch_to_it() {
    if !models_installed() {
        return;
    }
    let dir = corpus();
    let root = dir.path().to_str().unwrap();
    // A translation catalog: searchable by its words, not worth the slow model's time.
    write(
        dir.path(),
        "locale/de/LC_MESSAGES/django.po",
        "msgid \"Wait longer between tries\"\nmsgstr \"Zwischen den Versuchen länger warten\"\n",
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let queries = elsewhere.path().join("queries.jsonl");
    std::fs::write(&queries, "{\"q\": \"check password\", \"gold\": [\"auth/login.py\"]}\n")
        .unwrap();
    // The model searches use, as `sift eval` names it.
    let model_in_use = |env: &[(&str, &str)]| {
        let out = sift_with_models()
            .args(["eval", "--path", root, "--no-refresh", queries.to_str().unwrap()])
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        let line = text.lines().find(|l| l.starts_with("model: ")).expect("a model line");
        line["model: ".len()..].split(';').next().unwrap().to_string()
    };

    // The first model only: searches use it and say the upgrade is not there yet.
    let first = index_json(root, &["--no-upgrade"]);
    let chunks = first["chunks_total"].as_u64().unwrap();
    assert_eq!(first["embeddings"]["with_vectors"].as_u64(), Some(chunks), "{first}");
    assert!(first["upgrade"].is_null(), "{first}");
    assert!(model_in_use(&[]).contains("-static"));
    let (hits, err) = search(&["--path", root, "check password"]);
    assert_eq!(hits[0]["path"], "auth/login.py");
    assert!(
        err.contains(&format!("until all-minilm-l6-v2 has vectors for every chunk (0 of {chunks}")),
        "a search never starts the upgrade itself: {err}"
    );

    // `sift index` computes the upgrade, leaving the catalog out; searches switch to it.
    let full = index_json(root, &[]);
    let up = &full["upgrade"];
    assert_eq!(up["left_out"], 1, "{full}");
    assert_eq!(up["embedded"].as_u64(), Some(chunks - 1), "{full}");
    assert_eq!(up["with_vectors"].as_u64(), Some(chunks), "{full}");
    assert_eq!(full["embeddings"]["embedded"], 0, "the first model's vectors were kept: {full}");
    assert!(model_in_use(&[]).starts_with("all-MiniLM-L6-v2-int8"), "{}", model_in_use(&[]));
    // `sift model info` names the upgrade and the query form a CLI search loads for it.
    let info = stdout(&run(&["model", "info", "--path", root]));
    assert!(info.contains("embedding upgrade: all-minilm-l6-v2 ("), "{info}");
    assert!(info.contains("query form: query.ort"), "{info}");
    let (hits, err) =
        search(&["--path", root, "--mode", "semantic", "wait longer between repeated tries"]);
    assert!(!err.contains("note:"), "{err}");
    assert_eq!(hits[0]["path"], "net/retry.py", "{hits:?}");
    assert!(
        hits.iter().all(|h| h["path"] != "locale/de/LC_MESSAGES/django.po"),
        "the left-out catalog has no vector: {hits:?}"
    );
    // Lexical search still finds it.
    let (hits, _) = search(&["--path", root, "Versuchen"]);
    assert_eq!(hits[0]["path"], "locale/de/LC_MESSAGES/django.po", "{hits:?}");

    // A small edit: the search embeds the new chunk with both models and keeps the upgrade.
    write(
        dir.path(),
        "net/jitter.py",
        "def add_jitter(delay):\n    \"\"\"Randomise the pause so clients do not retry in lockstep.\"\"\"\n    return delay * random.uniform(0.5, 1.5)\n",
    );
    let (hits, err) = search(&["--path", root, "add_jitter"]);
    assert_eq!(hits[0]["path"], "net/jitter.py");
    assert!(!err.contains("note:"), "{err}");
    assert!(model_in_use(&[]).starts_with("all-MiniLM-L6-v2-int8"));

    // Turned off, searches use the first model again.
    assert!(model_in_use(&[("SIFT_EMBED_UPGRADE", "none")]).contains("-static"));
}

/// onnxruntime's PyPI build starts Microsoft's telemetry client, which writes a device id and a
/// usage database under `~/.cache/Microsoft` unless `ORT_DISABLE_TELEMETRY` is set; sift sets
/// it, so running the transformer leaves the user's home as it was.
#[test]
fn onnxruntime_writes_nothing_in_the_users_home() {
    if !models_installed() {
        return;
    }
    let info = run(&["model", "info"]);
    let models = stdout(&info)
        .lines()
        .find_map(|l| l.strip_prefix("model directory: "))
        .expect("`sift model info` names the model directory")
        .to_owned();
    let home = tempfile::tempdir().unwrap();
    let dir = corpus();
    let root = dir.path().to_str().unwrap();
    let with_home = |args: &[&str]| {
        let out = sift_with_models()
            .args(args)
            .env("HOME", home.path())
            .env("SIFT_HOME", &models)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_DATA_HOME")
            .output()
            .expect("sift runs");
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    // The default index runs the transformer after the static model; the search loads it again.
    let report: serde_json::Value =
        serde_json::from_str(stdout(&with_home(&["index", root, "--json"])).trim()).unwrap();
    assert!(report["upgrade"]["embedded"].as_u64().unwrap() > 0, "{report}");
    with_home(&["search", "--path", root, "--mode", "semantic", "retry delay"]);
    let left: Vec<_> = walkdir_names(home.path());
    assert!(left.is_empty(), "sift left files in $HOME: {left:?}");
}

fn walkdir_names(dir: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        names.push(entry.path().display().to_string());
        if entry.path().is_dir() {
            names.extend(walkdir_names(&entry.path()));
        }
    }
    names
}
