//! `sift doctor`: what this machine offers sift. Today its one section is the sandbox: each
//! wall, the mechanism that holds it here, or what is missing and what sift falls back to
//! (`sift_engine::sandbox::capabilities`).

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;
use sift_engine::sandbox::{WallState, capabilities};

/// Arguments of `sift doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs `sift doctor`: exit status 0, also when a wall is missing (it is said, not failed).
#[allow(clippy::print_stdout)]
pub fn run(args: DoctorArgs) -> Result<ExitCode> {
    let caps = capabilities();
    let walls = caps.walls();
    if args.json {
        let v = json!({
            "sandbox": {
                "root": caps.root,
                "landlock_abi": caps.landlock_abi,
                "user_namespaces": caps.user_namespaces,
                "net_namespace": caps.net_namespace,
                "mount_namespace": caps.mount_namespace,
                "seccomp": caps.seccomp,
                "cgroup_pids": caps.cgroup_pids,
                "cgroup_memory": caps.cgroup_memory,
                "openat2": caps.openat2,
                "bwrap": caps.bwrap,
                "walls": walls.iter().map(|w| json!({
                    "wall": w.name, "state": w.state.as_str(), "how": w.how,
                })).collect::<Vec<_>>(),
            }
        });
        println!("{v}");
        return Ok(ExitCode::SUCCESS);
    }
    let landlock = caps.landlock_abi.map_or("none".to_owned(), |v| format!("ABI {v}"));
    println!(
        "sandbox: Landlock {landlock}; user namespaces {}; network namespace {}; mount namespace {}; seccomp {}; cgroups {}; running as {}",
        yes(caps.user_namespaces),
        yes(caps.net_namespace),
        yes(caps.mount_namespace),
        yes(caps.seccomp),
        match (&caps.cgroup_pids, &caps.cgroup_memory) {
            (Some(_), Some(_)) => "pids + memory (v1)",
            (Some(_), None) => "pids (v1)",
            (None, Some(_)) => "memory (v1)",
            (None, None) => "none sift may make",
        },
        if caps.root { "root" } else { "a user" },
    );
    let width = walls.iter().map(|w| w.name.len()).max().unwrap_or(0);
    for w in &walls {
        let mark = match w.state {
            WallState::Enforced => "ok  ",
            WallState::Fallback => "weak",
            WallState::Missing => "NO  ",
        };
        println!("  {mark} {:width$}  {}", w.name, w.how);
    }
    let missing = walls.iter().filter(|w| w.state == WallState::Missing).count();
    if missing > 0 {
        println!(
            "{missing} wall(s) missing on this machine: the agent's commands run without them (its own file tools still apply the path policy)."
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
