//! The escape suite: attempts to get out of the sandbox, through the agent's file tools (the
//! library's `Policy`, which the agent calls) and through commands run by the real `sift
//! sandbox` binary, each of which must be denied within its time limit, with the host
//! unharmed and sift alive afterwards. The suite prints its table (run with `--nocapture`).
//!
//! Where this machine lacks a wall (`sift doctor`), the attempts that need it must at least be
//! reported by `sift sandbox` as unconfined; on the test machines every wall but Landlock's
//! Unix-socket rule (ABI 9) is there, and seccomp stands in for that one.

use std::io::Read as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use sift_runtime::sandbox::{Policy, SandboxSettings};
use sift_tests::sift;

const API_KEY: &str = "sk-test-escape-0123456789abcdef";
const OUTSIDE_SECRET: &str = "OUTSIDE-SECRET-7f3a";
const SSH_KEY: &str = "SSH-PRIVATE-KEY-91bc";
const DOTENV: &str = "DOTENV-SECRET-55d1";
const PEM: &str = "PEM-SECRET-0c2e";

/// The world the attempts run in: a workspace, a folder outside it, a home folder with an SSH
/// key, and a user configuration with tight limits.
struct World {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    home: PathBuf,
    xdg: PathBuf,
    sift_pids: std::cell::RefCell<Vec<u32>>,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws = base.join("ws");
    let outside = base.join("outside");
    let home = base.join("home");
    let xdg = base.join("xdg");
    for d in [
        ws.join(".git/hooks"),
        ws.join(".sift"),
        ws.join("src"),
        ws.join("deploy"),
        ws.join(".aws"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(xdg.join("sift")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(ws.join(".env"), format!("API_KEY={DOTENV}\n")).unwrap();
    std::fs::write(ws.join("deploy/server.pem"), format!("-----BEGIN PRIVATE KEY-----\n{PEM}\n"))
        .unwrap();
    std::fs::write(ws.join(".aws/credentials"), format!("aws_secret_access_key={DOTENV}\n"))
        .unwrap();
    std::fs::write(ws.join("id_ed25519"), SSH_KEY).unwrap();
    std::fs::write(outside.join("secret.txt"), OUTSIDE_SECRET).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), SSH_KEY).unwrap();
    std::fs::write(
        xdg.join("sift/config.toml"),
        "[sandbox]\nprocesses = 64\nmemory = \"256 MiB\"\noutput = \"64 KiB\"\nfile_size = \"10 MiB\"\ncpu_secs = 3\nkill_grace_ms = 300\n",
    )
    .unwrap();
    World { _dir: dir, ws, outside, home, xdg, sift_pids: Default::default() }
}

/// What one attempt came to.
struct Attempt {
    category: &'static str,
    what: String,
    via: &'static str,
    elapsed: Duration,
    limit: Duration,
    /// `Ok(how it was denied)` or `Err(how it got out)`.
    result: Result<String, String>,
}

/// One run of `sift sandbox --json` in the world.
struct Run {
    json: Value,
    elapsed: Duration,
}

impl Run {
    fn out(&self) -> String {
        format!(
            "{}{}",
            self.json["stdout"].as_str().unwrap_or(""),
            self.json["stderr"].as_str().unwrap_or("")
        )
    }
    fn denied(&self) -> Vec<String> {
        self.json["denied"]
            .as_array()
            .map(|a| a.iter().filter_map(|d| d.as_str().map(String::from)).collect())
            .unwrap_or_default()
    }
    fn stderr_line(&self) -> String {
        let err = self.json["stderr"].as_str().unwrap_or("").trim();
        let last = err.lines().last().unwrap_or("");
        let last = last.rsplit(": ").next().unwrap_or(last);
        if last.is_empty() {
            format!("status {}", self.json["status"])
        } else {
            last.chars().take(60).collect()
        }
    }
}

impl World {
    fn sandbox(&self, timeout: u64, argv: &[&str]) -> Run {
        let started = Instant::now();
        let mut child = sift()
            .args(["sandbox", "--json", "--timeout", &timeout.to_string(), "--path"])
            .arg(&self.ws)
            .arg("--")
            .args(argv)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.xdg)
            .env("SIFT_TEST_API_KEY", API_KEY)
            .env("OPENAI_API_KEY", API_KEY)
            // The pull-request bot's token, as a CI job sets it.
            .env("GITHUB_TOKEN", API_KEY)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        self.sift_pids.borrow_mut().push(child.id());
        let mut stdout = String::new();
        child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        child.wait().unwrap();
        let json = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!("sift sandbox did not answer with JSON ({e}): {stdout}\nstderr: {stderr}")
        });
        Run { json, elapsed: started.elapsed() }
    }

    fn sh(&self, timeout: u64, script: &str) -> Run {
        self.sandbox(timeout, &["sh", "-c", script])
    }

    /// Python code, which prints `STARTED` first so that an attempt that never ran (python
    /// missing or unreadable in the sandbox) cannot pass for a denial.
    fn py(&self, timeout: u64, code: &str) -> Run {
        let code = format!("print('STARTED', flush=True)\n{code}");
        let run = self.sandbox(timeout, &["python3", "-c", &code]);
        assert!(
            run.out().contains("STARTED"),
            "python3 did not start in the sandbox: {}",
            run.json
        );
        run
    }
}

/// A command attempt that must not show `secret` in its output.
fn no_leak(run: &Run, secret: &str) -> Result<String, String> {
    if run.out().contains(secret) {
        Err(format!("the secret came back: {}", run.out().chars().take(80).collect::<String>()))
    } else {
        Ok(run.stderr_line())
    }
}

/// A command attempt that must not have created or changed `path` (`before`: its content
/// before, `None`: it did not exist).
fn unchanged(run: &Run, path: &Path, before: Option<&str>) -> Result<String, String> {
    let now = std::fs::read_to_string(path).ok();
    if now.as_deref() == before && (before.is_some() || !path.exists()) {
        Ok(run.stderr_line())
    } else {
        Err(format!("{} changed: {now:?}", path.display()))
    }
}

/// An attempt of the agent's file tools: must be refused.
fn tool(
    result: Result<impl std::fmt::Debug, sift_runtime::sandbox::Denied>,
) -> Result<String, String> {
    match result {
        Ok(v) => Err(format!("allowed: {v:?}")),
        Err(d) => Ok(d.reason.chars().take(70).collect()),
    }
}

fn python3_available() -> bool {
    std::process::Command::new("python3").arg("-c").arg("pass").status().is_ok_and(|s| s.success())
}

#[test]
fn the_escape_suite_is_denied_every_time() {
    assert!(
        python3_available(),
        "the escape suite needs python3 (Debian: apt-get install python3)"
    );
    let w = world();
    let mut attempts: Vec<Attempt> = Vec::new();
    let quick = Duration::from_secs(5);
    let mut cmd = |category,
                   what: String,
                   limit: Duration,
                   f: &dyn Fn() -> (Duration, Result<String, String>)| {
        let (elapsed, result) = f();
        attempts.push(Attempt { category, what, via: "command", elapsed, limit, result });
    };
    let o = w.outside.display().to_string();
    let h = w.home.display().to_string();

    // ---- path tricks, as commands --------------------------------------------------------
    let read = |script: String| {
        let run = w.sh(10, &script);
        (run.elapsed, no_leak(&run, OUTSIDE_SECRET).and_then(|_| no_leak(&run, SSH_KEY)))
    };
    cmd("path", "cat ../outside/secret.txt".into(), quick, &|| {
        read("cat ../outside/secret.txt".into())
    });
    cmd("path", "cat an absolute path outside".into(), quick, &|| {
        read(format!("cat {o}/secret.txt"))
    });
    cmd("path", "cat ~/.ssh/id_rsa (the user's home)".into(), quick, &|| {
        read(format!("cat {h}/.ssh/id_rsa"))
    });
    cmd("path", "ls the user's ~/.ssh".into(), quick, &|| {
        let run = w.sh(10, &format!("ls {h}/.ssh"));
        (
            run.elapsed,
            if run.out().contains("id_rsa") { Err("listed".into()) } else { Ok(run.stderr_line()) },
        )
    });
    cmd("path", "symlink to a folder outside, then read through it".into(), quick, &|| {
        read(format!("ln -s {o} linked && cat linked/secret.txt"))
    });
    cmd("path", "trailing-slash symlink out (ls linked2/)".into(), quick, &|| {
        let run = w.sh(10, &format!("ln -s {o} linked2 && ls linked2/"));
        (
            run.elapsed,
            if run.out().contains("secret.txt") {
                Err("listed".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    cmd("path", "symlink to a file outside".into(), quick, &|| {
        read(format!("ln -s {o}/secret.txt link.txt && cat link.txt"))
    });
    cmd("path", "file swapped for a symlink after a read".into(), quick, &|| {
        read(format!(
            "echo mine > swap.txt && cat swap.txt && rm swap.txt && ln -s {o}/secret.txt swap.txt && cat swap.txt"
        ))
    });
    cmd("path", "hard link to a file outside".into(), quick, &|| {
        read(format!("ln {o}/secret.txt hard.txt; cat hard.txt"))
    });
    cmd("path", "/proc/self/root/… outside".into(), quick, &|| {
        read(format!("cat /proc/self/root{o}/secret.txt"))
    });
    cmd("path", "/proc/self/cwd/../outside".into(), quick, &|| {
        read("cat /proc/self/cwd/../outside/secret.txt".into())
    });
    cmd("path", "write a file outside".into(), quick, &|| {
        let run = w.sh(10, &format!("echo pwned > {o}/pwned.txt"));
        (run.elapsed, unchanged(&run, &w.outside.join("pwned.txt"), None))
    });
    cmd("path", "append to the user's ~/.bashrc".into(), quick, &|| {
        let run = w.sh(10, &format!("echo pwned >> {h}/.bashrc"));
        (run.elapsed, unchanged(&run, &w.home.join(".bashrc"), None))
    });
    cmd("path", "write into /etc (sift runs as root here)".into(), quick, &|| {
        let marker = format!("/etc/sift-escape-{}", std::process::id());
        let run = w.sh(10, &format!("echo pwned > {marker}"));
        (run.elapsed, unchanged(&run, Path::new(&marker), None))
    });
    cmd("path", "write into the shared /tmp".into(), quick, &|| {
        let marker = format!("/tmp/sift-escape-{}", std::process::id());
        let run = w.sh(10, &format!("echo pwned > {marker}"));
        (run.elapsed, unchanged(&run, Path::new(&marker), None))
    });
    cmd("path", "unshare -Ur, then write outside".into(), quick, &|| {
        let run = w.sh(10, &format!("unshare -Ur sh -c 'echo pwned > {o}/userns.txt'"));
        (run.elapsed, unchanged(&run, &w.outside.join("userns.txt"), None))
    });

    // ---- .git/ and .sift/ ----------------------------------------------------------------
    cmd(".git", "write .git/hooks/pre-commit".into(), quick, &|| {
        let run = w.sh(10, "printf '#!/bin/sh\\necho owned\\n' > .git/hooks/pre-commit");
        (run.elapsed, unchanged(&run, &w.ws.join(".git/hooks/pre-commit"), None))
    });
    cmd(".git", "rewrite .git/config".into(), quick, &|| {
        let run = w.sh(10, "echo '[core] hooksPath = /tmp' >> .git/config");
        (run.elapsed, unchanged(&run, &w.ws.join(".git/config"), Some("[core]\n")))
    });
    cmd(".git", "rm -rf .git".into(), quick, &|| {
        let run = w.sh(10, "rm -rf .git");
        (run.elapsed, unchanged(&run, &w.ws.join(".git/config"), Some("[core]\n")))
    });
    cmd(".git", "mv .git away and plant a new one".into(), quick, &|| {
        let run =
            w.sh(10, "mv .git gone && mkdir -p .git/hooks && echo owned > .git/hooks/pre-commit");
        (run.elapsed, unchanged(&run, &w.ws.join(".git/hooks/pre-commit"), None))
    });
    cmd(".git", "remount .git read-write".into(), quick, &|| {
        let run = w.sh(10, "mount -o remount,rw,bind .git; echo owned > .git/hooks/post-checkout");
        (run.elapsed, unchanged(&run, &w.ws.join(".git/hooks/post-checkout"), None))
    });
    cmd(".sift", "write .sift/config.toml".into(), quick, &|| {
        let run = w.sh(10, "echo '[sandbox]' > .sift/config.toml");
        (run.elapsed, unchanged(&run, &w.ws.join(".sift/config.toml"), None))
    });

    // ---- secrets in the workspace --------------------------------------------------------
    cmd("secret", "cat .env".into(), quick, &|| {
        let run = w.sh(10, "cat .env");
        (run.elapsed, no_leak(&run, DOTENV).map(|_| "read as empty".into()))
    });
    cmd("secret", "cat deploy/server.pem".into(), quick, &|| {
        let run = w.sh(10, "cat deploy/server.pem");
        (run.elapsed, no_leak(&run, PEM).map(|_| "read as empty".into()))
    });
    cmd("secret", "grep -r the workspace for the secrets".into(), quick, &|| {
        let run = w.sh(10, "grep -r SECRET . ; grep -r PRIVATE .");
        (
            run.elapsed,
            no_leak(&run, DOTENV)
                .and_then(|_| no_leak(&run, PEM))
                .and_then(|_| no_leak(&run, SSH_KEY))
                .map(|_| "nothing found".into()),
        )
    });
    cmd("secret", "overwrite .env".into(), quick, &|| {
        let run = w.sh(10, "echo gone > .env");
        (
            run.elapsed,
            unchanged(&run, &w.ws.join(".env"), Some(&format!("API_KEY={DOTENV}\n")))
                .map(|_| "the write was discarded".into()),
        )
    });

    // ---- network -------------------------------------------------------------------------
    let tcp4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp4.set_nonblocking(true).unwrap();
    let port4 = tcp4.local_addr().unwrap().port();
    cmd("network", format!("TCP to 127.0.0.1:{port4} (a listener of the test)"), quick, &|| {
        let run = w.py(10, &format!("import socket; s=socket.create_connection(('127.0.0.1',{port4}),2); print('CONNECTED')"));
        let accepted = tcp4.accept().is_ok();
        (
            run.elapsed,
            if accepted || run.out().contains("CONNECTED") {
                Err("connected".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    cmd("network", "TCP through bash's /dev/tcp".into(), quick, &|| {
        let run = w.sandbox(
            10,
            &["bash", "-c", &format!("exec 3<>/dev/tcp/127.0.0.1/{port4} && echo CONNECTED")],
        );
        let accepted = tcp4.accept().is_ok();
        (
            run.elapsed,
            if accepted || run.out().contains("CONNECTED") {
                Err("connected".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    let tcp6 = std::net::TcpListener::bind("[::1]:0").ok();
    if let Some(l) = &tcp6 {
        l.set_nonblocking(true).unwrap();
    }
    let port6 = tcp6.as_ref().map_or(9, |l| l.local_addr().unwrap().port());
    cmd("network", format!("TCP to [::1]:{port6} (IPv6 loopback)"), quick, &|| {
        let run = w.py(
            10,
            &format!(
                "import socket; s=socket.create_connection(('::1',{port6}),2); print('CONNECTED')"
            ),
        );
        let accepted = tcp6.as_ref().is_some_and(|l| l.accept().is_ok());
        (
            run.elapsed,
            if accepted || run.out().contains("CONNECTED") {
                Err("connected".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    cmd("network", format!("UDP to 127.0.0.1:{udp_port}"), quick, &|| {
        let run = w.py(10, &format!("import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'hi', ('127.0.0.1',{udp_port})); print('SENT')"));
        std::thread::sleep(Duration::from_millis(50));
        let got = udp.recv(&mut [0u8; 16]).is_ok();
        (
            run.elapsed,
            if got || run.out().contains("SENT") {
                Err("sent".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    cmd("network", "DNS lookup of example.com".into(), quick, &|| {
        let run =
            w.py(10, "import socket; print('RESOLVED', socket.getaddrinfo('example.com', 80))");
        (
            run.elapsed,
            if run.out().contains("RESOLVED") {
                Err("resolved".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    cmd("network", "TCP to a public address (1.1.1.1:443)".into(), quick, &|| {
        let run = w.py(
            10,
            "import socket; socket.create_connection(('1.1.1.1',443),2); print('CONNECTED')",
        );
        (
            run.elapsed,
            if run.out().contains("CONNECTED") {
                Err("connected".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    let unix_path = w.outside.join("daemon.sock");
    let unix = UnixListener::bind(&unix_path).unwrap();
    unix.set_nonblocking(true).unwrap();
    cmd("network", "a Unix socket outside the workspace".into(), quick, &|| {
        let run = w.py(10, &format!("import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); print('CONNECTED')", unix_path.display()));
        let accepted = unix.accept().is_ok();
        (
            run.elapsed,
            if accepted || run.out().contains("CONNECTED") {
                Err("connected".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    let abstract_name = format!("sift-escape-{}", std::process::id());
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        UnixListener::bind_addr(&addr).unwrap()
    };
    abstract_listener.set_nonblocking(true).unwrap();
    cmd("network", "an abstract Unix socket of the host".into(), quick, &|| {
        let run = w.py(10, &format!("import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0{abstract_name}'); print('CONNECTED')"));
        let accepted = abstract_listener.accept().is_ok();
        (
            run.elapsed,
            if accepted || run.out().contains("CONNECTED") {
                Err("connected".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    cmd("network", "a netlink socket (routes, interfaces)".into(), quick, &|| {
        let run = w.py(
            10,
            "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print('OPENED')",
        );
        (
            run.elapsed,
            if run.out().contains("OPENED") { Err("opened".into()) } else { Ok(run.stderr_line()) },
        )
    });
    cmd("network", "a raw packet socket".into(), quick, &|| {
        let run = w.py(
            10,
            "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0); print('OPENED')",
        );
        (
            run.elapsed,
            if run.out().contains("OPENED") { Err("opened".into()) } else { Ok(run.stderr_line()) },
        )
    });
    // A socket pair stays possible (pipes by another name).
    cmd("network", "(allowed) a socket pair inside the command".into(), quick, &|| {
        let run = w.py(
            10,
            "import socket; a,b=socket.socketpair(); a.send(b'ok'); print('PAIR', b.recv(2))",
        );
        (
            run.elapsed,
            if run.out().contains("PAIR b'ok'") {
                Ok("it works, as it should".into())
            } else {
                Err(format!("socketpair broke: {}", run.out()))
            },
        )
    });

    // ---- resources -----------------------------------------------------------------------
    // Where no process wall holds (sift doctor), the bomb is not set off: it would harm the
    // host. The attempt then fails, saying why.
    let doctor: Value =
        serde_json::from_slice(&sift().args(["doctor", "--json"]).output().unwrap().stdout)
            .unwrap();
    let process_wall = doctor["sandbox"]["walls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["wall"].as_str().is_some_and(|n| n.starts_with("processes")))
        .map_or("missing", |w| w["state"].as_str().unwrap_or("missing"))
        .to_owned();
    cmd("resource", "fork bomb (64 processes, 5 s)".into(), Duration::from_secs(8), &|| {
        if process_wall == "missing" {
            return (
                Duration::ZERO,
                Err("not run: this machine has no process wall (sift doctor)".into()),
            );
        }
        let run = w.sandbox(5, &["bash", "-c", "b() { b | b & }; b; sleep 30"]);
        let ok = run.denied().iter().any(|d| d.contains("process limit"));
        (
            run.elapsed,
            if ok { Ok(run.denied().join("; ")) } else { Err(format!("{:?}", run.denied())) },
        )
    });
    cmd("resource", "memory bomb (256 MiB)".into(), Duration::from_secs(8), &|| {
        let run = w.py(20, "a=[]\nwhile True: a.append(bytearray(32<<20))");
        let ok =
            run.denied().iter().any(|d| d.contains("memory limit")) && !run.json["status"].is_i64();
        (run.elapsed, if ok { Ok(run.denied().join("; ")) } else { Err(format!("{}", run.json)) })
    });
    cmd("resource", "endless loop (deadline 2 s)".into(), Duration::from_secs(4), &|| {
        let run = w.sh(2, "while :; do :; done");
        (
            run.elapsed,
            if run.json["timed_out"] == true {
                Ok("killed at the deadline".into())
            } else {
                Err(format!("{}", run.json))
            },
        )
    });
    cmd(
        "resource",
        "CPU burner (3 s of CPU, deadline 20 s)".into(),
        Duration::from_secs(6),
        &|| {
            let run = w.py(20, "while True: pass");
            let ok = run.denied().iter().any(|d| d.contains("CPU time"))
                || run.json["signal"] == libc_sigkill();
            (
                run.elapsed,
                if ok && run.json["timed_out"] == false {
                    Ok(run.denied().join("; "))
                } else {
                    Err(format!("{}", run.json))
                },
            )
        },
    );
    cmd("resource", "1 GB of output".into(), Duration::from_secs(5), &|| {
        let run = w.sh(20, "head -c 1000000000 /dev/zero");
        let kept = run.json["stdout"].as_str().map_or(0, str::len);
        (
            run.elapsed,
            if run.json["truncated"] == true && kept <= 64 * 1024 {
                Ok(format!("cut at {kept} bytes"))
            } else {
                Err(format!("kept {kept}"))
            },
        )
    });
    cmd(
        "resource",
        "a process ignoring SIGTERM (deadline 1 s)".into(),
        Duration::from_secs(3),
        &|| {
            let run = w.py(1, "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(100)");
            (
                run.elapsed,
                if run.json["timed_out"] == true && run.json["signal"] == 9 {
                    Ok("SIGKILL after the grace".into())
                } else {
                    Err(format!("{}", run.json))
                },
            )
        },
    );
    cmd("resource", "a child that calls setsid to outlive the command".into(), quick, &|| {
        let run =
            w.sh(10, "setsid sh -c 'echo $$ > escapee.pid; exec sleep 100' & sleep 0.5; exit 0");
        let pid = std::fs::read_to_string(w.ws.join("escapee.pid")).unwrap_or_default();
        let pid = pid.trim().to_owned();
        let mut alive = !pid.is_empty();
        for _ in 0..40 {
            alive = !pid.is_empty() && is_running(&pid);
            if !alive {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        (
            run.elapsed,
            if pid.is_empty() {
                Err("the child did not start".into())
            } else if alive {
                Err(format!("pid {pid} survived"))
            } else {
                Ok(format!("pid {pid} killed with the tree"))
            },
        )
    });
    cmd("resource", "a 50 MB file (limit 10 MiB)".into(), quick, &|| {
        let run = w.sh(10, "head -c 50000000 /dev/zero > big.bin");
        let size = std::fs::metadata(w.ws.join("big.bin")).map_or(0, |m| m.len());
        (
            run.elapsed,
            if size <= 10 << 20 {
                Ok(format!("stopped at {size} bytes: {}", run.denied().join("; ")))
            } else {
                Err(format!("{size} bytes written"))
            },
        )
    });

    // ---- environment and the host --------------------------------------------------------
    cmd("env", "the API key variable in env".into(), quick, &|| {
        let run = w.sh(10, "env");
        (
            run.elapsed,
            no_leak(&run, API_KEY).and_then(|_| {
                if run.out().contains("OPENAI_API_KEY") {
                    Err("the variable is there".into())
                } else {
                    Ok("not in the environment".into())
                }
            }),
        )
    });
    cmd("env", "the API key from sift's /proc/PPID/environ".into(), quick, &|| {
        let run = w.sh(10, "tr '\\0' '\\n' < /proc/$PPID/environ");
        (run.elapsed, no_leak(&run, API_KEY))
    });
    cmd("env", "the API key from /proc/*/environ of every process".into(), quick, &|| {
        let run = w.sh(10, "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'");
        (run.elapsed, no_leak(&run, API_KEY).map(|_| "nothing readable".into()))
    });
    cmd("env", "kill -9 sift (the parent)".into(), quick, &|| {
        let run = w.sh(10, "kill -9 $PPID && echo KILLED");
        // The JSON came back, so sift lived.
        (
            run.elapsed,
            if run.out().contains("KILLED") {
                Err("the signal was delivered".into())
            } else {
                Ok(run.stderr_line())
            },
        )
    });
    cmd("env", "the kernel keyring".into(), quick, &|| {
        let add_key = if cfg!(target_arch = "aarch64") { 217 } else { 248 };
        let run = w.py(10, &format!("import ctypes; libc=ctypes.CDLL(None, use_errno=True); r=libc.syscall({add_key}, b'user', b'sift', b'x', 1, -2); print('KEYCTL', r)"));
        (
            run.elapsed,
            if run.out().contains("KEYCTL -1") || !run.out().contains("KEYCTL") {
                Ok(run.stderr_line())
            } else {
                Err(run.out())
            },
        )
    });

    // ---- the agent's file tools (the library the agent calls) ------------------------------
    let policy = Policy::for_workspace(&w.ws, &SandboxSettings::default()).unwrap();
    std::os::unix::fs::symlink(&w.outside, w.ws.join("tool-link")).unwrap();
    std::os::unix::fs::symlink(w.ws.join(".git/hooks"), w.ws.join("hooks-link")).unwrap();
    std::fs::hard_link(w.outside.join("secret.txt"), w.ws.join("tool-hard.txt")).unwrap();
    let mut tool_attempt = |category, what: &str, f: &dyn Fn() -> Result<String, String>| {
        let started = Instant::now();
        let result = f();
        attempts.push(Attempt {
            category,
            what: what.into(),
            via: "tool",
            elapsed: started.elapsed(),
            limit: Duration::from_millis(500),
            result,
        });
    };
    tool_attempt("path", "read ../outside/secret.txt", &|| {
        tool(policy.open_read("../outside/secret.txt"))
    });
    tool_attempt("path", "read an absolute path outside", &|| {
        tool(policy.open_read(&format!("{o}/secret.txt")))
    });
    tool_attempt("path", "read ~/.ssh/id_rsa", &|| tool(policy.resolve_read("~/.ssh/id_rsa")));
    tool_attempt("path", "read a path with a NUL byte", &|| {
        tool(policy.resolve_read("src/lib.rs\0/../../../etc/passwd"))
    });
    tool_attempt("path", "read through a symlink out", &|| {
        tool(policy.open_read("tool-link/secret.txt"))
    });
    tool_attempt("path", "read a trailing-slash symlink out", &|| {
        tool(policy.resolve_read("tool-link/"))
    });
    tool_attempt("path", "read a hard link to a file outside", &|| {
        tool(policy.open_read("tool-hard.txt"))
    });
    tool_attempt("path", "read /proc/self/root/… outside", &|| {
        tool(policy.open_read(&format!("/proc/self/root{o}/secret.txt")))
    });
    tool_attempt("path", "open a file swapped for a link out after its check", &|| {
        std::fs::write(w.ws.join("tool-swap.txt"), "mine").unwrap();
        let checked = policy.resolve_read("tool-swap.txt");
        assert!(checked.is_ok());
        std::fs::remove_file(w.ws.join("tool-swap.txt")).unwrap();
        std::os::unix::fs::symlink(w.outside.join("secret.txt"), w.ws.join("tool-swap.txt"))
            .unwrap();
        let mut opened = policy.open_read("tool-swap.txt");
        // Whatever the check said, what is opened is judged again.
        let mut text = String::new();
        if let Ok(f) = opened.as_mut() {
            f.read_to_string(&mut text).unwrap();
        }
        tool(opened.map(|_| text))
    });
    tool_attempt(".git", "write .git/hooks/pre-commit", &|| {
        tool(policy.open_write(".git/hooks/pre-commit"))
    });
    tool_attempt(".git", "write through a link to .git/hooks", &|| {
        tool(policy.open_write("hooks-link/post-merge"))
    });
    tool_attempt(".sift", "write .sift/config.toml", &|| {
        tool(policy.open_write(".sift/config.toml"))
    });
    tool_attempt("secret", "read .env", &|| tool(policy.open_read(".env")));
    tool_attempt("secret", "read deploy/server.pem", &|| {
        tool(policy.open_read("deploy/server.pem"))
    });
    tool_attempt("secret", "read id_ed25519", &|| tool(policy.open_read("id_ed25519")));
    tool_attempt("secret", "read .aws/credentials", &|| tool(policy.open_read(".aws/credentials")));

    // ---- the table -----------------------------------------------------------------------
    eprintln!("\n  #  {:<9} {:<7} {:<52} {:>8}  result", "wall", "via", "attempt", "ms");
    let mut failures = Vec::new();
    let mut denied = 0;
    for (i, a) in attempts.iter().enumerate() {
        let late = a.elapsed > a.limit;
        let verdict = match (&a.result, late) {
            (Ok(how), false) if a.what.starts_with("(allowed)") => format!("allowed: {how}"),
            (Ok(how), false) => {
                denied += 1;
                format!("denied: {how}")
            }
            (Ok(how), true) => format!("DENIED LATE (limit {:?}): {how}", a.limit),
            (Err(how), _) => format!("ESCAPED: {how}"),
        };
        if a.result.is_err() || late {
            failures.push(format!("#{} {}: {verdict}", i + 1, a.what));
        }
        eprintln!(
            "{:>3}  {:<9} {:<7} {:<52} {:>8.1}  {verdict}",
            i + 1,
            a.category,
            a.via,
            a.what,
            a.elapsed.as_secs_f64() * 1000.0
        );
    }
    let escapes = attempts.iter().filter(|a| !a.what.starts_with("(allowed)")).count();
    eprintln!("{denied} of {escapes} escape attempts denied in time\n");

    // ---- the host is unharmed and sift alive ---------------------------------------------
    assert_eq!(std::fs::read_to_string(w.outside.join("secret.txt")).unwrap(), OUTSIDE_SECRET);
    assert_eq!(std::fs::read_to_string(w.ws.join(".git/config")).unwrap(), "[core]\n");
    let alive = w.sh(10, "echo alive");
    assert_eq!(alive.json["stdout"], "alive\n", "sift sandbox works after the suite");
    for pid in w.sift_pids.borrow().iter() {
        for controller in ["pids", "memory"] {
            let parent = Path::new("/sys/fs/cgroup").join(controller).join("sift");
            let leaked = std::fs::read_dir(&parent)
                .map(|d| {
                    d.flatten().any(|e| {
                        e.file_name().to_string_lossy().starts_with(&format!("run-{pid}-"))
                    })
                })
                .unwrap_or(false);
            assert!(!leaked, "sift {pid} left its {controller} cgroup behind");
        }
    }
    assert!(escapes >= 40, "the suite has {escapes} escape attempts");
    assert!(
        failures.is_empty(),
        "{} attempts got out or were late:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn libc_sigkill() -> i64 {
    9
}

fn is_running(pid: &str) -> bool {
    // A zombie is dead: only its entry remains until it is reaped.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(") ").next().is_some_and(|rest| !rest.starts_with('Z')))
}

#[test]
fn a_plain_command_still_works_in_the_sandbox() {
    let w = world();
    let run = w.sh(10, "mkdir -p build && echo built > build/out.txt && cat src/lib.rs && echo tmp > \"$TMPDIR/x\" && cat \"$TMPDIR/x\"");
    assert_eq!(run.json["status"], 0, "{}", run.json);
    assert_eq!(std::fs::read_to_string(w.ws.join("build/out.txt")).unwrap(), "built\n");
    assert!(run.out().contains("pub fn f()"));
    let _ = UnixStream::pair().unwrap();
}

/// A listener of the test's on 127.0.0.1 that answers each connection's first line with
/// `pong:LINE` and counts the connections it got.
fn echo_listener() -> (std::net::SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&count);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut line = String::new();
                let mut reader = std::io::BufReader::new(conn.try_clone().unwrap());
                let _ = reader.read_line(&mut line);
                let _ = (&conn).write_all(format!("pong:{}\n", line.trim_end()).as_bytes());
            });
        }
    });
    (addr, count)
}

/// Python that talks to the proxy the sandbox names in `HTTPS_PROXY` and prints one line per
/// attempt: what came back, or the error.
const PROXY_CLIENT: &str = r#"
import os, socket
print('STARTED', flush=True)
host, port = os.environ['HTTPS_PROXY'].rsplit('/', 1)[1].split(':')
def ask(label, request, then=None):
    try:
        s = socket.create_connection((host, int(port)), 5)
        s.sendall(request.encode())
        got = b''
        while b'\r\n\r\n' not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        if then is not None and got.startswith(b'HTTP/1.1 200'):
            s.sendall(then.encode())
            while not got.endswith(b'\n') or b'pong' not in got:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        else:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        got = got.decode(errors='replace')
        print(label, repr(got), flush=True)
    except Exception as e:
        print(label, 'ERROR', e, flush=True)
ask('CONNECT-ALLOWED', 'CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n', 'ping\n')
ask('GET-ALLOWED', 'GET http://allowed.test/hello HTTP/1.1\r\nHost: allowed.test\r\nProxy-Connection: keep-alive\r\n\r\n')
ask('NOT-LISTED', 'CONNECT evil.test:443 HTTP/1.1\r\n\r\n')
ask('OTHER-PORT', 'CONNECT allowed.test:22 HTTP/1.1\r\n\r\n')
ask('LOOPBACK', 'CONNECT localhost:443 HTTP/1.1\r\n\r\n')
try:
    socket.create_connection(('127.0.0.1', DIRECT_PORT), 3)
    print('DIRECT CONNECTED')
except Exception as e:
    print('DIRECT ERROR', e)
"#;

/// `[sandbox] allow_net` through the library the agent calls: an allowed host is reached
/// through sift's checking proxy (the test routes its made-up name to its own listener, which
/// the real resolver would refuse as loopback), everything else is refused by the proxy with
/// the reason, a name that resolves to loopback leads nowhere, and the host's loopback stays
/// out of reach. Every decision comes back with the output.
#[test]
fn allow_net_reaches_listed_hosts_through_the_checking_proxy_only() {
    use sift_runtime::sandbox::{Command, Resolver, run};
    assert!(python3_available(), "python3 is needed");
    let w = world();
    let (addr, connections) = echo_listener();
    let settings = SandboxSettings {
        allow_net: vec!["allowed.test".into(), "localhost".into()],
        ..SandboxSettings::default()
    };
    let policy = Policy::for_workspace(&w.ws, &settings)
        .unwrap()
        .with_resolver(Resolver::default().route("allowed.test", addr));
    let code = PROXY_CLIENT.replace("DIRECT_PORT", &addr.port().to_string());
    let mut cmd = Command::new("python3", ["-c", code.as_str()]);
    cmd.timeout = Duration::from_secs(30);
    cmd.env.push(("HTTPS_PROXY".into(), "http://evil.example:1".into()));
    let out = run(&policy, &cmd, &|| false).unwrap();
    let stdout = &out.stdout;
    assert!(stdout.contains("STARTED"), "python did not start: {out:?}");
    let line = |label: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} line: {stdout}\n{}", out.stderr))
            .to_owned()
    };
    let allowed = line("CONNECT-ALLOWED");
    assert!(
        allowed.contains("200 Connection established") && allowed.contains("pong:ping"),
        "{allowed}"
    );
    let get = line("GET-ALLOWED");
    assert!(get.contains("pong:GET /hello HTTP/1.1"), "absolute form rewritten: {get}");
    let not_listed = line("NOT-LISTED");
    assert!(
        not_listed.contains("403") && not_listed.contains("not in [sandbox] allow_net"),
        "{not_listed}"
    );
    let other_port = line("OTHER-PORT");
    assert!(other_port.contains("403"), "a bare name allows ports 80 and 443 only: {other_port}");
    let loopback = line("LOOPBACK");
    assert!(
        loopback.contains("403") && loopback.contains("not a public address"),
        "a listed name resolving to loopback leads nowhere: {loopback}"
    );
    assert!(line("DIRECT").contains("ERROR"), "the host's loopback is out of reach");
    assert_eq!(
        connections.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "only the two allowed requests arrived"
    );
    assert!(out.network.iter().any(|n| n.starts_with("allowed allowed.test:443")), "{out:?}");
    for refused in ["evil.test:443", "allowed.test:22", "localhost:443"] {
        assert!(
            out.denied.iter().any(|d| d.starts_with("network: refused") && d.contains(refused)),
            "{refused} not reported: {:?}",
            out.denied
        );
    }
}

/// The same through the real `sift sandbox --allow-net`: the proxy answers, a host not listed
/// is refused, and the decisions are in the JSON. (No connection leaves this machine: the
/// listed name does not resolve, and the other is refused before any lookup.)
#[test]
fn sift_sandbox_allow_net_reports_the_proxy_s_decisions() {
    assert!(python3_available(), "python3 is needed");
    let w = world();
    let run = {
        let started = Instant::now();
        let out = sift()
            .args(["sandbox", "--json", "--timeout", "20", "--allow-net", "allowed.invalid"])
            .arg("--path")
            .arg(&w.ws)
            .args(["--", "python3", "-c"])
            .arg(PROXY_CLIENT.replace("DIRECT_PORT", "9"))
            .env("HOME", &w.home)
            .env("XDG_CONFIG_HOME", &w.xdg)
            .output()
            .unwrap();
        let json: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
        Run { json, elapsed: started.elapsed() }
    };
    let out = run.out();
    assert!(out.contains("STARTED"), "{}", run.json);
    assert!(out.contains("NOT-LISTED") && out.contains("403"), "{out}");
    let network = run.json["network"].as_array().expect("network is reported");
    assert!(
        network.iter().any(|n| n.as_str().is_some_and(|n| n.contains("evil.test:443"))),
        "{network:?}"
    );
    assert!(run.denied().iter().any(|d| d.contains("evil.test:443 is not in [sandbox] allow_net")));
    assert!(
        Policy::for_workspace(
            &w.ws,
            &SandboxSettings { allow_net: vec!["https://x.org".into()], ..Default::default() }
        )
        .is_err(),
        "a URL is not a host"
    );
}
