//! Commands under the sandbox, through the library (the escape suite through the `sift
//! sandbox` binary is in `tests/tests/sandbox.rs`). Each test checks one wall against what
//! this machine offers: where a mechanism is missing the wall's test says so and is skipped
//! by `capabilities()` only when the kernel lacks it, which `sift doctor` reports.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sift_runtime::sandbox::{
    Command, Limits, Policy, SandboxSettings, WallState, capabilities, run,
};

struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn ws() -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.join(".sift")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    Ws { _dir: dir, root, outside }
}

fn policy(root: &Path, limits: Limits) -> Policy {
    Policy::for_workspace(root, &SandboxSettings { limits, ..SandboxSettings::default() }).unwrap()
}

fn sh(script: &str) -> Command {
    Command::new("sh", ["-c", script])
}

fn never() -> bool {
    false
}

/// Whether the wall named `name_part` holds here; where it does not, `out` must say so (never
/// silently less), and the caller checks nothing more.
fn enforced(name_part: &str, out: &sift_runtime::sandbox::Output) -> bool {
    let held = capabilities()
        .walls()
        .iter()
        .any(|w| w.name.contains(name_part) && w.state != WallState::Missing);
    if !held {
        assert!(out.unconfined.iter().any(|u| u.contains(name_part)), "{:?}", out.unconfined);
        eprintln!("the wall {name_part:?} is missing on this machine, and the output says so");
    }
    held
}

#[test]
fn a_plain_command_runs_and_its_output_comes_back() {
    let w = ws();
    let out =
        run(&policy(&w.root, Limits::default()), &sh("echo hello; echo oops >&2; exit 3"), &never)
            .unwrap();
    assert_eq!(out.status, Some(3));
    assert_eq!(out.stdout, "hello\n");
    assert_eq!(out.stderr, "oops\n");
    assert!(!out.timed_out && !out.truncated);
}

#[test]
fn writes_land_in_the_workspace_and_nowhere_else() {
    let w = ws();
    let p = policy(&w.root, Limits::default());
    let script = format!(
        "echo a > inside.txt; echo b > {}/escape.txt; echo c > .git/hooks/pre-commit; echo d > .sift/x; echo e > \"$TMPDIR/t\" && echo tmp-ok",
        w.outside.display()
    );
    let out = run(&p, &sh(&script), &never).unwrap();
    assert_eq!(std::fs::read_to_string(w.root.join("inside.txt")).unwrap(), "a\n");
    assert!(out.stdout.contains("tmp-ok"), "{out:?}");
    if enforced("writes outside", &out) {
        assert!(!w.outside.join("escape.txt").exists(), "{out:?}");
    }
    if enforced(".git/", &out) {
        assert!(!w.root.join(".git/hooks/pre-commit").exists(), "{out:?}");
        assert!(!w.root.join(".sift/x").exists(), "{out:?}");
    }
}

#[test]
fn the_environment_is_a_small_allowlist() {
    let w = ws();
    // The test process's own environment is what a command must not see; a variable that is
    // set in it for certain is HOME (replaced) and CARGO_PKG_NAME (cargo sets it for tests).
    assert!(std::env::var("CARGO_PKG_NAME").is_ok());
    let mut cmd = sh("env");
    cmd.env.push(("GIVEN".into(), "yes".into()));
    let out = run(&policy(&w.root, Limits::default()), &cmd, &never).unwrap();
    assert!(!out.stdout.contains("CARGO_PKG_NAME"), "{}", out.stdout);
    assert!(out.stdout.contains("GIVEN=yes"));
    let home = out.stdout.lines().find_map(|l| l.strip_prefix("HOME=")).unwrap();
    assert!(home.contains("sift-sandbox-"), "{home}");
}

#[test]
fn the_deadline_kills_the_whole_tree_even_a_process_ignoring_sigterm() {
    let w = ws();
    let limits = Limits { kill_grace: Duration::from_millis(300), ..Limits::default() };
    let mut cmd = sh("trap '' TERM; (trap '' TERM; sleep 100) & sleep 100");
    cmd.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let out = run(&policy(&w.root, limits), &cmd, &never).unwrap();
    assert!(out.timed_out);
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(out.denied.iter().any(|d| d.contains("deadline")), "{:?}", out.denied);
}

#[test]
fn cancellation_stops_the_command() {
    let w = ws();
    let started = Instant::now();
    let cancel = move || started.elapsed() > Duration::from_millis(200);
    let out = run(&policy(&w.root, Limits::default()), &sh("sleep 100"), &cancel).unwrap();
    assert!(out.cancelled && !out.timed_out);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn output_is_capped_and_the_writer_stopped() {
    let w = ws();
    let limits = Limits { output: 10_000, ..Limits::default() };
    let started = Instant::now();
    let out = run(&policy(&w.root, limits), &sh("yes sift-sift-sift-sift"), &never).unwrap();
    assert!(out.truncated);
    assert_eq!(out.stdout.len(), 10_000);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn no_network_socket_opens() {
    let w = ws();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let out = run(
        &policy(&w.root, Limits::default()),
        &Command::new("bash", ["-c", script.as_str()]),
        &never,
    )
    .unwrap();
    if enforced("network", &out) {
        assert!(!out.stdout.contains("connected"), "{out:?}");
        assert_ne!(out.status, Some(0));
    }
}

#[test]
fn a_fork_bomb_is_contained() {
    let w = ws();
    let limits =
        Limits { processes: 64, kill_grace: Duration::from_millis(200), ..Limits::default() };
    let p = policy(&w.root, limits);
    // Where nothing would contain it, the bomb is not set off: the output must say so instead.
    let probe = run(&p, &sh("true"), &never).unwrap();
    if !enforced("processes", &probe) {
        return;
    }
    let mut cmd = Command::new("bash", ["-c", "b() { b | b & }; b; sleep 5"]);
    cmd.timeout = Duration::from_secs(2);
    let started = Instant::now();
    let out = run(&p, &cmd, &never).unwrap();
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    assert!(out.denied.iter().any(|d| d.contains("process limit")), "{:?}", out.denied);
}

#[test]
fn the_cwd_must_be_inside() {
    let w = ws();
    let mut cmd = sh("pwd");
    cmd.cwd = w.outside.clone();
    assert!(run(&policy(&w.root, Limits::default()), &cmd, &never).is_err());
    std::fs::create_dir(w.root.join("sub")).unwrap();
    cmd.cwd = PathBuf::from("sub");
    let out = run(&policy(&w.root, Limits::default()), &cmd, &never).unwrap();
    assert_eq!(out.stdout.trim(), w.root.join("sub").display().to_string());
}
