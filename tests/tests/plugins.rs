//! `sift review` with WebAssembly plugins on real git repositories, and `sift plugin list|check`:
//! a plugin's findings in the report, a failing plugin reported without failing the review, and
//! the base-revision rule (a pull request cannot bring its own plugin, or new grants for one,
//! into the review of itself). Fixture plugins are built from core WAT in the test
//! (`sift_test_support::plugins`); the example plugin (`examples/plugins/banned-api`) is tested
//! when it has been built for wasm32-wasip2.

// The tests print what sift answered, for the log of a failing run.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Output;

use sift_test_support::openai::{FakeServer, Reply};
use sift_test_support::plugins::{self as fixtures, Body};
use sift_tests::{found, git, json, sift, stderr, stdout, write};

/// A file with two lines, the second added by the change under review.
const BEFORE: &str = "fn main() {}\n";
const AFTER: &str = "fn main() {}\nfn added() {}\n";

fn commit_all(root: &Path, message: &str) {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", message]);
}

/// A repository whose first commit has `src/main.rs` = [`BEFORE`], plus `files`.
fn repo(files: &[(&str, Vec<u8>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    write(dir.path(), "src/main.rs", BEFORE);
    for (path, bytes) in files {
        write(dir.path(), path, bytes);
    }
    commit_all(dir.path(), "base");
    dir
}

/// `sift ARGS` in `root` with a private plugin cache.
fn run(root: &Path, cache: &Path, args: &[&str]) -> Output {
    sift()
        .args(args)
        .arg("--path")
        .arg(root)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("sift runs")
}

fn finder() -> Vec<u8> {
    fixtures::component(&Body::Finding { start_line: 2, end_line: 2, start_col: 4, end_col: 9 })
}

#[test]
fn a_plugins_findings_are_reported_and_a_failing_plugin_does_not_fail_the_review() {
    let dir = repo(&[
        (".sift/plugins/finder.wasm", finder()),
        (".sift/plugins/crash.wasm", fixtures::component(&Body::Trap)),
    ]);
    let cache = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "src/main.rs", AFTER);
    let out = run(root, cache.path(), &["review", "--format", "json"]);
    println!("{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(found(&out), vec![("src/main.rs".into(), 2, "plugin/finder/test-rule".into())]);
    let report = json(&out);
    let f = &report["findings"][0];
    assert_eq!((f["start_col"].as_u64(), f["end_col"].as_u64()), (Some(4), Some(9)));
    assert_eq!(f["message"], "a message");
    assert_eq!(report["plugins"]["ran"], serde_json::json!(["crash", "finder"]));
    let failures = report["plugins"]["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].as_str().unwrap().starts_with("plugin crash: check-file trapped"),
        "{failures:?}"
    );
    assert!(stderr(&out).contains("warning: plugin crash: check-file trapped"), "{}", stderr(&out));
    // The compiled code went to the cache folder given, not into the repository.
    let cached = std::fs::read_dir(cache.path().join("sift/plugins")).unwrap().count();
    assert_eq!(cached, 2);
    assert!(!root.join(".sift/cache/plugins").exists());

    // Silenced like any rule.
    write(root, ".sift/review.toml", "[rules]\ndisable = [\"plugin/finder/*\"]\n");
    let out = run(root, cache.path(), &["review", "--format", "json"]);
    assert_eq!(found(&out), vec![]);
    assert_eq!(json(&out)["suppressed"], 1);
}

#[test]
fn a_branch_cannot_bring_its_own_plugin_or_grants_into_a_base_review() {
    // The base has a reader plugin with the default grants (log only).
    let dir = repo(&[(".sift/plugins/reader.wasm", fixtures::component(&Body::ReadPath))]);
    let cache = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["checkout", "-q", "-b", "feature"]);
    write(root, "src/main.rs", AFTER);
    // The branch adds its own plugin and grants the base's plugin `read`.
    write(root, ".sift/plugins/sneaky.wasm", finder());
    write(
        root,
        ".sift/review.toml",
        "[[plugins]]\npath = \".sift/plugins/reader.wasm\"\ngrants = [\"read\", \"log\"]\n",
    );
    commit_all(root, "feature, with a plugin of its own");

    // Reviewed as CI reviews the pull request: the base's plugins and grants.
    let out = run(root, cache.path(), &["review", "--base", "main", "--format", "json"]);
    println!("--base main:\n{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let changed = |path: &str| (path.to_string(), 1, "sift/review-config-changed".to_string());
    assert_eq!(
        found(&out),
        vec![changed(".sift/plugins/sneaky.wasm"), changed(".sift/review.toml")]
    );
    let report = json(&out);
    assert_eq!(report["plugins"]["ran"], serde_json::json!(["reader"]));
    let failures = report["plugins"]["failures"].to_string();
    assert!(failures.contains("was not granted \\\"read\\\""), "{failures}");
    let listed = stdout(&run(root, cache.path(), &["plugin", "list", "--base", "main"]));
    println!("plugin list --base main:\n{listed}");
    assert!(listed.contains("reader") && listed.contains("grants: log"), "{listed}");
    assert!(!listed.contains("sneaky"), "{listed}");

    // The working tree (the author's own review) uses the branch's plugins and grants.
    let out = run(root, cache.path(), &["review", "--format", "json"]);
    let report = json(&out);
    assert_eq!(report["plugins"]["ran"], serde_json::json!(["reader", "sneaky"]));
    let listed = stdout(&run(root, cache.path(), &["plugin", "list"]));
    println!("plugin list:\n{listed}");
    assert!(listed.contains("sneaky") && listed.contains("grants: read, log"), "{listed}");

    // Once merged, they hold.
    git(root, &["checkout", "-q", "main"]);
    git(root, &["merge", "-q", "--ff-only", "feature"]);
    write(root, "src/main.rs", format!("{AFTER}fn more() {{}}\n"));
    let out = run(root, cache.path(), &["review", "--base", "main", "--format", "json"]);
    assert_eq!(json(&out)["plugins"]["ran"], serde_json::json!(["reader", "sneaky"]));
    assert_eq!(json(&out)["plugins"]["failures"], serde_json::json!([]));
}

#[test]
fn plugin_check_prints_the_interface_and_refuses_other_versions_and_wasi() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.wasm");
    std::fs::write(&good, fixtures::component(&Body::Empty)).unwrap();
    let check = |file: &Path| {
        sift()
            .args(["plugin", "check"])
            .arg(file)
            .env("XDG_CACHE_HOME", cache.path())
            .output()
            .unwrap()
    };
    let out = check(&good);
    println!("{}", stdout(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("built for sift:plugin@0.1.0"), "{text}");
    assert!(text.contains("sift:plugin/checks@0.1.0: check-file"), "{text}");
    assert!(text.contains("sift:plugin/tools@0.1.0: list-tools, call-tool"), "{text}");
    assert!(text.contains("sift:plugin/host@0.1.0: read-file, log"), "{text}");
    assert!(text.contains("accepted"), "{text}");

    let future = dir.path().join("future.wasm");
    std::fs::write(&future, fixtures::component_for_version(&Body::Empty, "0.2.0")).unwrap();
    let out = check(&future);
    println!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("built for sift:plugin@0.2.0"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(
            "it was built for sift:plugin@0.2.0, and this sift supports sift:plugin@0.1.0 only"
        ),
        "{}",
        stderr(&out)
    );

    let wasi = dir.path().join("wasi.wasm");
    std::fs::write(&wasi, fixtures::component_importing_wasi()).unwrap();
    let out = check(&wasi);
    println!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("imports `wasi:cli/environment@0.2.0`"), "{}", stderr(&out));

    let missing = check(&dir.path().join("missing.wasm"));
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("missing.wasm"), "{}", stderr(&missing));
}

/// The example plugin, built by `scripts/build-example-plugin.sh` (or `SIFT_EXAMPLE_PLUGIN`).
fn example_plugin() -> PathBuf {
    let path = std::env::var_os("SIFT_EXAMPLE_PLUGIN").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/plugins/banned-api/target/wasm32-wasip2/release/banned_api.wasm")
    });
    assert!(
        path.exists(),
        "{} is missing: build it with scripts/build-example-plugin.sh (needs the wasm32-wasip2 target)",
        path.display()
    );
    path
}

#[test]
#[ignore = "needs the example plugin built for wasm32-wasip2 (rustup target add wasm32-wasip2; scripts/build-example-plugin.sh); scripts/test.sh builds it and runs this with --ignored"]
fn the_example_plugin_reports_banned_apis_with_the_teams_replacement() {
    let wasm = std::fs::read(example_plugin()).unwrap();
    let dir = repo(&[(".sift/plugins/banned-api.wasm", wasm)]);
    let cache = tempfile::tempdir().unwrap();
    let root = dir.path();
    let out = sift()
        .args(["plugin", "check"])
        .arg(root.join(".sift/plugins/banned-api.wasm"))
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .unwrap();
    println!("{}", stdout(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("banned-apis: "), "{}", stdout(&out));

    write(
        root,
        "src/main.rs",
        "fn main() {}\nfn added() {\n    println!(\"hi\");\n    // println!(\"in a comment\");\n    std::thread::sleep(d);\n}\n",
    );
    let out = run(root, cache.path(), &["review", "--format", "json"]);
    println!("{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rule = "plugin/banned-api/banned-api".to_string();
    assert_eq!(
        found(&out),
        vec![("src/main.rs".into(), 3, rule.clone()), ("src/main.rs".into(), 5, rule.clone())]
    );
    let report = json(&out);
    assert!(report["findings"][0]["message"].as_str().unwrap().contains("use `tracing::info!(`"));
    assert!(report["findings"][0]["fix"].is_object(), "{}", report["findings"][0]);

    // The team's own list, read through the host once the plugin is granted `read`.
    write(
        root,
        ".sift/plugins/banned-api.txt",
        "rust | unsafe_helper( | safe_helper( | the helper is unsound\n",
    );
    write(root, "src/main.rs", "fn main() {}\nfn added() { unsafe_helper(1); }\n");
    let out = run(root, cache.path(), &["review", "--format", "json"]);
    assert_eq!(found(&out), vec![], "without the grant the list is not read");
    write(
        root,
        ".sift/review.toml",
        "[[plugins]]\npath = \".sift/plugins/banned-api.wasm\"\ngrants = [\"read\", \"log\"]\n",
    );
    let out = run(root, cache.path(), &["review", "--format", "json"]);
    println!("{}", stdout(&out));
    assert_eq!(found(&out), vec![("src/main.rs".into(), 2, rule)]);

    // The agent offers the plugin's tool; a model (a scripted endpoint on 127.0.0.1) calls it
    // through the real `sift agent`, and the plugin's answer (with the granted list) is what
    // the model gets back.
    let tool = "plugin_banned-api_banned-apis";
    let server = FakeServer::start([
        Reply::tool_calls(&[("c1", tool, r#"{"language": "rust"}"#)]),
        Reply::text(&["Use safe_helper( instead of unsafe_helper(."]),
    ])
    .unwrap();
    let out = sift()
        .args(["agent", "--json", "--path"])
        .arg(root)
        .arg("which Rust calls are banned here?")
        .env("XDG_CACHE_HOME", cache.path())
        .env("XDG_CONFIG_HOME", cache.path().join("xdg"))
        .env("SIFT_MODEL_BACKEND", "openai")
        .env("SIFT_MODEL_BASE_URL", server.base_url())
        .env("SIFT_MODEL_NAME", "fixture-model")
        .output()
        .unwrap();
    println!("{}\n{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    let offered = requests[0].json()["tools"].to_string();
    assert!(offered.contains(tool) && offered.contains("(plugin banned-api)"), "{offered}");
    let answered = requests[1].json()["messages"].to_string();
    assert!(answered.contains("unsafe_helper(") && answered.contains("println!("), "{answered}");
}
