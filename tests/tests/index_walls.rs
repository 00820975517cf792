//! The index obeys the sandbox's walls, tried as a new user would (issue 16, item 7): a
//! repository holding `linked -> /some/dir/outside`, `creds-link.txt -> …/outside/creds.txt`
//! and a `.env` must not get any of them into `sift search`, and `sift status` must say what it
//! left out; the user's own configuration opts in per path, the repository's cannot.

use std::path::Path;

use serde_json::Value;
use sift_tests::{sift, write};

struct Repo {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    xdg: std::path::PathBuf,
}

fn repo() -> Repo {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("repo");
    let outside = base.join("some/dir/outside");
    let xdg = base.join("xdg");
    std::fs::create_dir_all(xdg.join("sift")).unwrap();
    write(&outside, "creds.txt", "aws_password = hunter2outside\n");
    write(&root, "src/app.py", "def connect(password):\n    return password\n");
    write(&root, ".env", "DATABASE_PASSWORD=hunter2dotenv\n");
    std::os::unix::fs::symlink(&outside, root.join("linked")).unwrap();
    std::os::unix::fs::symlink(outside.join("creds.txt"), root.join("creds-link.txt")).unwrap();
    Repo { _dir: dir, root, xdg }
}

fn run(repo: &Repo, args: &[&str]) -> std::process::Output {
    let out = sift()
        .args(args)
        .current_dir(&repo.root)
        .env("XDG_CONFIG_HOME", &repo.xdg)
        .output()
        .unwrap();
    assert!(out.status.success(), "sift {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn hits(repo: &Repo, query: &str) -> Vec<(String, String)> {
    let out = run(repo, &["search", "--json", query]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| (v["path"].as_str().unwrap_or("").to_owned(), v.to_string()))
        .collect()
}

fn status(repo: &Repo) -> Value {
    serde_json::from_slice(&run(repo, &["status", "--json"]).stdout).unwrap()
}

#[test]
fn outside_links_and_secrets_stay_out_of_search_and_status_says_so() {
    let r = repo();
    let index = run(&r, &["index", "."]);
    let said = String::from_utf8_lossy(&index.stdout);
    assert!(
        said.contains("2 symbolic link(s) leading outside the repository, 1 secret file(s)"),
        "{said}"
    );
    for query in ["hunter2outside", "hunter2dotenv"] {
        assert_eq!(hits(&r, query), Vec::<(String, String)>::new(), "{query}");
    }
    for query in ["aws_password", "DATABASE_PASSWORD", "creds", "password hunter2"] {
        for (path, hit) in hits(&r, query) {
            assert_eq!(path, "src/app.py", "{query}: {hit}");
            assert!(!hit.contains("hunter2"), "{query}: {hit}");
        }
    }
    let found: Vec<String> = hits(&r, "password").into_iter().map(|(p, _)| p).collect();
    assert_eq!(found, ["src/app.py"]);
    let s = status(&r);
    assert_eq!(s["walls"]["outside_links"], serde_json::json!(["creds-link.txt", "linked"]));
    assert_eq!(s["walls"]["secrets"], serde_json::json!([".env"]));
    let text = String::from_utf8_lossy(&run(&r, &["status"]).stdout).into_owned();
    assert!(
        text.contains("2 symbolic link(s) leading outside the repository not followed"),
        "{text}"
    );
    assert!(text.contains("1 secret file(s) not indexed: .env"), "{text}");
}

#[test]
fn the_user_opts_in_per_path_and_the_repository_cannot() {
    let r = repo();
    // The repository's own file asking for it is refused, loudly.
    write(&r.root, ".sift/config.toml", "[index]\noutside_links = [\"linked\"]\n");
    let out = sift()
        .args(["index", "."])
        .current_dir(&r.root)
        .env("XDG_CONFIG_HOME", &r.xdg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot widen"), "{err}");
    std::fs::remove_file(r.root.join(".sift/config.toml")).unwrap();

    // The user's file opts in, per path.
    std::fs::write(
        r.xdg.join("sift/config.toml"),
        "[index]\noutside_links = [\"linked\"]\nindex_secrets = [\".env\"]\n",
    )
    .unwrap();
    run(&r, &["index", "."]);
    let linked: Vec<String> = hits(&r, "hunter2outside").into_iter().map(|(p, _)| p).collect();
    assert_eq!(linked, ["linked/creds.txt"], "creds-link.txt was not opted in");
    let env: Vec<String> = hits(&r, "hunter2dotenv").into_iter().map(|(p, _)| p).collect();
    assert_eq!(env, [".env"]);
    let s = status(&r);
    assert_eq!(s["walls"]["outside_links"], serde_json::json!(["creds-link.txt"]));
    assert_eq!(s["walls"]["secrets"], serde_json::json!([]));
    assert!(Path::new(&r.root).join(".sift").is_dir());
}
