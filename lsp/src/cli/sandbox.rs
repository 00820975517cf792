//! `sift sandbox [--path P] [--allow-net HOST]… -- COMMAND…`: one command under exactly the
//! agent's policy (`sift_engine::sandbox`), with what the walls refused reported, so users and
//! tests can check the walls. Thin: the policy comes from the configuration, the run from the
//! engine.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use serde_json::json;
use sift_engine::sandbox::{self, Command, Policy};

use super::{RepoArgs, load_config};

/// Arguments of `sift sandbox`.
#[derive(Debug, Args)]
pub struct SandboxArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// A host the command may reach through sift's checking proxy (repeatable; `[sandbox]
    /// allow_net`): `pypi.org`, `*.pythonhosted.org`, `example.com:8443`.
    #[arg(long = "allow-net", value_name = "HOST")]
    allow_net: Vec<String>,
    /// Kill the command after this many seconds [default: `[sandbox] timeout_secs`].
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Print one JSON object (exit status, output, what was denied) instead of passing the
    /// command's output through.
    #[arg(long)]
    json: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Runs `sift sandbox`: the command's exit status (128 + the signal when one killed it, 124 at
/// the deadline).
#[allow(clippy::print_stdout)]
pub fn run(args: SandboxArgs) -> Result<ExitCode> {
    let root = args.repo.root();
    let mut flags = Vec::new();
    if !args.allow_net.is_empty() {
        flags.push(sift_engine::config::Flag {
            section: "sandbox",
            key: "allow_net",
            flag: "--allow-net",
            value: toml::Value::Array(
                args.allow_net.iter().map(|h| toml::Value::String(h.clone())).collect(),
            ),
        });
    }
    let config = load_config(&root, &flags)?;
    let settings = config.sandbox()?;
    let policy = Policy::for_workspace(&root, &settings)?;
    let Some((program, rest)) = args.command.split_first() else {
        bail!("no command given (write it after --)");
    };
    let mut cmd = Command::new(program.clone(), rest.iter().cloned());
    cmd.timeout = args.timeout.map_or(settings.limits.timeout, Duration::from_secs);

    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = Arc::clone(&stop);
    // A second handler cannot be installed in one process; the first call's is enough.
    let _ = ctrlc::set_handler(move || on_signal.store(true, Ordering::SeqCst));
    let out = sandbox::run(&policy, &cmd, &|| stop.load(Ordering::SeqCst))?;

    let code = if out.timed_out {
        124
    } else if let Some(signal) = out.signal {
        128 + signal
    } else {
        out.status.unwrap_or(1)
    };
    if args.json {
        let v = json!({
            "status": out.status,
            "signal": out.signal,
            "stdout": out.stdout,
            "stderr": out.stderr,
            "truncated": out.truncated,
            "timed_out": out.timed_out,
            "cancelled": out.cancelled,
            "denied": out.denied,
            "unconfined": out.unconfined,
            "network": out.network,
            "elapsed_ms": out.elapsed.as_secs_f64() * 1000.0,
        });
        println!("{v}");
    } else {
        use std::io::Write;
        let _ = std::io::stdout().write_all(out.stdout.as_bytes());
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(out.stderr.as_bytes());
        for n in out.network.iter().filter(|n| n.starts_with("allowed")) {
            let _ = writeln!(err, "sift sandbox: network: {n}");
        }
        for d in &out.denied {
            let _ = writeln!(err, "sift sandbox: denied: {d}");
        }
        for u in &out.unconfined {
            let _ = writeln!(err, "sift sandbox: not confined here: {u}");
        }
    }
    Ok(ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1)))
}
