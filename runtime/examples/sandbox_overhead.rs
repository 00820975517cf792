//! What starting a command in the sandbox costs: `true` run N times unsandboxed
//! (`std::process::Command`) and through `sift_runtime::sandbox::run` (cgroups, namespaces,
//! Landlock, seccomp, the secret-file walk, the temporary folder), interleaved, with the
//! medians and their ratio. `bench/sandbox-bench.sh` runs it.
//!
//!   cargo run --release -p sift-runtime --example sandbox_overhead -- [RUNS] [WORKSPACE]
//!
//! WORKSPACE (default: an empty temporary folder with a `.git`) is the tree the policy
//! confines to: the secret-file walk grows with it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use sift_runtime::sandbox::{Command, Policy, SandboxSettings, capabilities, run};

#[allow(clippy::print_stdout)]
fn main() {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let temp = tempfile::tempdir().expect("a temporary folder");
    let root = match args.next() {
        Some(p) => PathBuf::from(p),
        None => {
            std::fs::create_dir(temp.path().join(".git")).expect("a .git folder");
            temp.path().to_owned()
        }
    };
    let policy = Policy::for_workspace(&root, &SandboxSettings::default()).expect("a policy");
    let caps = capabilities();
    let never = || false;
    let cmd = Command::new("true", Vec::<String>::new());
    let plain = |_: ()| {
        let t = Instant::now();
        let status = std::process::Command::new("true").status().expect("true runs");
        assert!(status.success());
        t.elapsed()
    };
    let sandboxed = |_: ()| {
        let t = Instant::now();
        let out = run(&policy, &cmd, &never).expect("true runs in the sandbox");
        assert!(out.success(), "{out:?}");
        t.elapsed()
    };
    // Warm up (the capability probe runs once per process).
    for _ in 0..5 {
        plain(());
        sandboxed(());
    }
    let (mut a, mut b) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        a.push(plain(()));
        b.push(sandboxed(()));
    }
    let stats = |v: &mut Vec<Duration>| {
        v.sort();
        (v[v.len() / 2], v[v.len() * 9 / 10])
    };
    let (pm, p90) = stats(&mut a);
    let (sm, s90) = stats(&mut b);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("workspace: {} ({} runs each, interleaved)", root.display(), runs);
    println!(
        "walls: landlock {:?}, netns {}, mountns {}, seccomp {}, cgroups {}",
        caps.landlock_abi,
        caps.net_namespace,
        caps.mount_namespace,
        caps.seccomp,
        caps.cgroup_pids.is_some() && caps.cgroup_memory.is_some()
    );
    println!("unsandboxed true: median {:.2} ms, p90 {:.2} ms", ms(pm), ms(p90));
    println!("sandboxed true:   median {:.2} ms, p90 {:.2} ms", ms(sm), ms(s90));
    println!(
        "ratio (median):   {:.1}x, {:.2} ms more per command",
        ms(sm) / ms(pm),
        ms(sm) - ms(pm)
    );
}
