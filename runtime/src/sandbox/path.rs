//! Paths under the policy: resolution component by component (symbolic links followed by hand,
//! at most 40 of them, `..` taken after the links before it are resolved, as the kernel does),
//! then the checks, and opening without a window between check and open.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};

use super::{Denied, Policy};

/// The most symbolic links one resolution follows (the kernel's limit).
const MAX_LINKS: usize = 40;

/// `path` resolved against the policy's root: absolute, no `.`/`..`, no symbolic links in the
/// part that exists. The error is the reason.
fn resolve(policy: &Policy, path: &str) -> Result<PathBuf, String> {
    if path.is_empty() {
        return Err("an empty path".into());
    }
    if path.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    let input: PathBuf = if path == "~" || path.starts_with("~/") {
        match policy.home() {
            Some(home) => home.join(path.trim_start_matches('~').trim_start_matches('/')),
            None => return Err("~ is the home folder, outside the workspace".into()),
        }
    } else if path.starts_with('~') {
        return Err("names another user's home folder, outside the workspace".into());
    } else if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        policy.root.join(path)
    };
    let trailing_slash = path.ends_with('/');

    let mut queue: VecDeque<OsString> = components(&input);
    let mut out = PathBuf::from("/");
    let mut links = 0;
    let mut missing = false;
    while let Some(c) = queue.pop_front() {
        if c == "." {
            continue;
        }
        if c == ".." {
            // `out` has no symbolic links in it, so its parent is the real parent.
            out.pop();
            continue;
        }
        let next = out.join(&c);
        if missing {
            out = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err("has too many levels of symbolic links".into());
                }
                let target = std::fs::read_link(&next)
                    .map_err(|e| format!("cannot read the link {}: {e}", next.display()))?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                for part in components(&target).into_iter().rev() {
                    queue.push_front(part);
                }
            }
            Ok(meta) => {
                if !meta.is_dir() && (!queue.is_empty() || trailing_slash) {
                    return Err(format!("{} is not a folder", next.display()));
                }
                out = next;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing = true;
                out = next;
            }
            Err(e) => return Err(format!("cannot be inspected: {e}")),
        }
    }
    Ok(out)
}

fn components(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some("..".into()),
            Component::CurDir => Some(".".into()),
            Component::RootDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// `resolved` relative to the root, or why it is outside.
fn inside<'a>(policy: &Policy, resolved: &'a Path) -> Result<&'a Path, String> {
    resolved.strip_prefix(&policy.root).map_err(|_| {
        format!(
            "is outside the workspace {} (it resolves to {})",
            policy.root.display(),
            resolved.display()
        )
    })
}

fn secret_reason() -> String {
    "matches a secret pattern ([sandbox] secret_patterns): secrets are never read or written by the agent".into()
}

fn hard_link_reason(n: u64) -> String {
    format!("has {n} hard links: another of its names may be outside the workspace")
}

/// The checks of a read on an already resolved path.
fn read_checks(policy: &Policy, resolved: &Path) -> Result<(), String> {
    let rel = inside(policy, resolved)?;
    if policy.secrets.is_secret(rel) {
        return Err(secret_reason());
    }
    if let Ok(meta) = std::fs::metadata(resolved)
        && meta.is_file()
        && meta.nlink() > 1
    {
        return Err(hard_link_reason(meta.nlink()));
    }
    Ok(())
}

/// The checks of a write on an already resolved path.
fn write_checks(policy: &Policy, resolved: &Path) -> Result<(), String> {
    let rel = inside(policy, resolved)?;
    if rel.as_os_str().is_empty() {
        return Err("is the workspace root itself".into());
    }
    for c in rel.components() {
        let name = c.as_os_str().as_bytes();
        if name.eq_ignore_ascii_case(b".git") || name.eq_ignore_ascii_case(b".sift") {
            let which = String::from_utf8_lossy(name).into_owned();
            return Err(format!(
                "is inside {which}/, which is read-only in the sandbox (a hook or a setting written there would run or apply outside it)"
            ));
        }
    }
    if policy.secrets.is_secret(rel) {
        return Err(secret_reason());
    }
    if let Ok(meta) = std::fs::metadata(resolved)
        && meta.is_file()
        && meta.nlink() > 1
    {
        return Err(hard_link_reason(meta.nlink()));
    }
    Ok(())
}

pub(super) fn check_read(policy: &Policy, path: &str) -> Result<PathBuf, Denied> {
    let resolved = resolve(policy, path).map_err(|r| Denied::new(path, r))?;
    read_checks(policy, &resolved).map_err(|r| Denied::new(path, r))?;
    Ok(resolved)
}

pub(super) fn check_write(policy: &Policy, path: &str) -> Result<PathBuf, Denied> {
    let resolved = resolve(policy, path).map_err(|r| Denied::new(path, r))?;
    write_checks(policy, &resolved).map_err(|r| Denied::new(path, r))?;
    Ok(resolved)
}

/// Opens `resolved` (inside the root) without leaving the root whatever the file system does
/// meanwhile, then checks what was opened.
fn open_beneath(policy: &Policy, path: &str, resolved: &Path, write: bool) -> Result<File, Denied> {
    let denied = |r: String| Denied::new(path, r);
    let rel = resolved.strip_prefix(&policy.root).map_err(|_| denied("is outside".into()))?;
    let mut flags = OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::NONBLOCK;
    flags |= if write { OFlags::WRONLY | OFlags::CREATE } else { OFlags::RDONLY };
    let root = File::open(&policy.root)
        .map_err(|e| denied(format!("cannot open the workspace root: {e}")))?;
    let file = match rustix::fs::openat2(
        &root,
        rel,
        flags,
        // openat2 refuses a mode without O_CREAT.
        if write { Mode::from_raw_mode(0o644) } else { Mode::empty() },
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(fd) => File::from(fd),
        Err(rustix::io::Errno::NOSYS) => {
            // No openat2 (Linux before 5.6): O_NOFOLLOW for the last component, then a check of
            // what was opened (below) for the folders above it.
            let mut options = std::fs::OpenOptions::new();
            options.read(!write).write(write).create(write);
            options.custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_NONBLOCK);
            options.mode(0o644);
            options.open(resolved).map_err(|e| denied(format!("cannot be opened: {e}")))?
        }
        Err(rustix::io::Errno::XDEV) | Err(rustix::io::Errno::LOOP) => {
            return Err(denied(
                "changed during the check: a symbolic link now leads outside the workspace".into(),
            ));
        }
        Err(e) => return Err(denied(format!("cannot be opened: {}", io::Error::from(e)))),
    };
    // What was opened, by the kernel's own account.
    let fd_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&file));
    if let Ok(real) = std::fs::read_link(&fd_path) {
        let checks = if write { write_checks(policy, &real) } else { read_checks(policy, &real) };
        checks.map_err(denied)?;
    }
    let meta = file.metadata().map_err(|e| denied(format!("cannot be inspected: {e}")))?;
    if !meta.is_file() {
        return Err(denied("is not a regular file".into()));
    }
    if meta.nlink() > 1 {
        return Err(denied(hard_link_reason(meta.nlink())));
    }
    // Back to blocking I/O for the caller.
    let _ = rustix::fs::fcntl_setfl(
        &file,
        rustix::fs::fcntl_getfl(&file).map_or(OFlags::empty(), |f| f) - OFlags::NONBLOCK,
    );
    Ok(file)
}

pub(super) fn open_read(policy: &Policy, path: &str) -> Result<File, Denied> {
    let resolved = check_read(policy, path)?;
    open_beneath(policy, path, &resolved, false)
}

pub(super) fn open_write(policy: &Policy, path: &str) -> Result<File, Denied> {
    let resolved = check_write(policy, path)?;
    let file = open_beneath(policy, path, &resolved, true)?;
    file.set_len(0).map_err(|e| Denied::new(path, format!("cannot be truncated: {e}")))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::super::SandboxSettings;
    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        ws: PathBuf,
        outside: PathBuf,
        policy: Policy,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(ws.join(".sift")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(ws.join("src/lib.rs"), "fn main() {}\n").unwrap();
        std::fs::write(ws.join(".env"), "API_KEY=sk-123\n").unwrap();
        std::fs::write(outside.join("creds.txt"), "password=hunter2\n").unwrap();
        let policy = Policy::for_workspace(&ws, &SandboxSettings::default()).unwrap();
        Fixture { _dir: dir, ws, outside, policy }
    }

    fn denied_read(f: &Fixture, path: &str) -> String {
        match f.policy.resolve_read(path) {
            Ok(p) => panic!("{path:?} was allowed as {}", p.display()),
            Err(d) => d.reason,
        }
    }

    fn denied_write(f: &Fixture, path: &str) -> String {
        match f.policy.resolve_write(path) {
            Ok(p) => panic!("{path:?} was allowed as {}", p.display()),
            Err(d) => d.reason,
        }
    }

    #[test]
    fn ordinary_paths_resolve_inside() {
        let f = fixture();
        assert_eq!(f.policy.resolve_read("src/lib.rs").unwrap(), f.ws.join("src/lib.rs"));
        assert_eq!(f.policy.resolve_read("./src/../src/lib.rs").unwrap(), f.ws.join("src/lib.rs"));
        let abs = f.ws.join("src/lib.rs");
        assert_eq!(f.policy.resolve_read(abs.to_str().unwrap()).unwrap(), abs);
        assert_eq!(
            f.policy.resolve_write("src/new/file.rs").unwrap(),
            f.ws.join("src/new/file.rs")
        );
        // A missing path may climb back inside lexically.
        assert_eq!(f.policy.resolve_write("new/../src/x.rs").unwrap(), f.ws.join("src/x.rs"));
    }

    #[test]
    fn dot_dot_absolute_home_and_nul_are_refused() {
        let f = fixture();
        assert!(denied_read(&f, "../outside/creds.txt").contains("outside the workspace"));
        assert!(denied_read(&f, "src/../../outside/creds.txt").contains("outside"));
        assert!(denied_read(&f, "/etc/passwd").contains("outside"));
        assert!(denied_read(&f, f.outside.join("creds.txt").to_str().unwrap()).contains("outside"));
        assert!(denied_read(&f, "~/.ssh/id_rsa").contains("outside"));
        assert!(denied_read(&f, "~root/.ssh").contains("home"));
        assert!(denied_read(&f, "src/lib.rs\0.txt").contains("NUL"));
        assert!(denied_write(&f, "missing/../../outside/new.txt").contains("outside"));
        assert!(denied_read(&f, "").contains("empty"));
    }

    #[test]
    fn symbolic_links_out_are_refused_also_with_a_trailing_slash() {
        let f = fixture();
        symlink(&f.outside, f.ws.join("linked")).unwrap();
        symlink(f.outside.join("creds.txt"), f.ws.join("creds-link.txt")).unwrap();
        symlink("../outside", f.ws.join("relative-link")).unwrap();
        symlink("src", f.ws.join("inner")).unwrap();
        assert!(denied_read(&f, "linked/creds.txt").contains("outside"));
        assert!(denied_read(&f, "linked/").contains("outside"));
        assert!(denied_read(&f, "linked").contains("outside"));
        assert!(denied_read(&f, "creds-link.txt").contains("outside"));
        assert!(denied_read(&f, "relative-link/creds.txt").contains("outside"));
        assert!(denied_write(&f, "linked/new.txt").contains("outside"));
        // A link that stays inside is fine.
        assert_eq!(f.policy.resolve_read("inner/lib.rs").unwrap(), f.ws.join("src/lib.rs"));
        // `..` after a link is taken from the link's target, as the kernel does.
        assert!(denied_read(&f, "inner/../../outside/creds.txt").contains("outside"));
        symlink(f.ws.join("src"), f.ws.join("deep")).unwrap();
        assert_eq!(f.policy.resolve_read("deep/../src/lib.rs").unwrap(), f.ws.join("src/lib.rs"));
    }

    #[test]
    fn link_loops_and_proc_self_root_are_refused() {
        let f = fixture();
        symlink("loop-b", f.ws.join("loop-a")).unwrap();
        symlink("loop-a", f.ws.join("loop-b")).unwrap();
        assert!(denied_read(&f, "loop-a").contains("too many"));
        assert!(denied_read(&f, "/proc/self/root/etc/passwd").contains("outside"));
        symlink("/proc/self/root", f.ws.join("proc-root")).unwrap();
        assert!(denied_read(&f, "proc-root/etc/passwd").contains("outside"));
    }

    #[test]
    fn git_and_sift_are_read_only_even_through_links() {
        let f = fixture();
        assert!(denied_write(&f, ".git/hooks/pre-commit").contains(".git/"));
        assert!(denied_write(&f, ".sift/config.toml").contains(".sift/"));
        assert!(denied_write(&f, "src/../.git/config").contains(".git/"));
        assert!(denied_write(&f, "sub/.git/hooks/post-checkout").contains(".git/"));
        assert!(denied_write(&f, ".GIT/hooks/x").contains("read-only"));
        symlink(f.ws.join(".git/hooks"), f.ws.join("hooks")).unwrap();
        assert!(denied_write(&f, "hooks/pre-commit").contains(".git/"));
        assert!(denied_write(&f, ".").contains("root itself"));
        // Reading them is fine.
        assert!(f.policy.resolve_read(".git/hooks").is_ok());
    }

    #[test]
    fn secrets_are_refused_for_reading_and_writing() {
        let f = fixture();
        assert!(denied_read(&f, ".env").contains("secret"));
        assert!(denied_write(&f, ".env").contains("secret"));
        assert!(denied_read(&f, "deploy/server.pem").contains("secret"));
        symlink(f.ws.join(".env"), f.ws.join("env-link.txt")).unwrap();
        assert!(denied_read(&f, "env-link.txt").contains("secret"));
        assert!(f.policy.is_secret(Path::new("config/id_ed25519")));
        assert!(!f.policy.is_secret(Path::new("src/lib.rs")));
    }

    #[test]
    fn secret_patterns_come_from_the_settings() {
        let f = fixture();
        let settings = SandboxSettings {
            secret_patterns: vec!["*.secret".into()],
            ..SandboxSettings::default()
        };
        let policy = Policy::for_workspace(&f.ws, &settings).unwrap();
        assert!(policy.resolve_read("a.secret").is_err());
        assert!(policy.resolve_read(".env").is_ok());
    }

    #[test]
    fn hard_links_are_refused() {
        let f = fixture();
        std::fs::hard_link(f.outside.join("creds.txt"), f.ws.join("hard.txt")).unwrap();
        assert!(denied_read(&f, "hard.txt").contains("hard links"));
        assert!(denied_write(&f, "hard.txt").contains("hard links"));
        assert!(f.policy.open_read("hard.txt").is_err());
    }

    #[test]
    fn a_link_swapped_in_after_the_check_cannot_be_opened() {
        let f = fixture();
        std::fs::write(f.ws.join("notes.txt"), "mine\n").unwrap();
        std::fs::create_dir(f.ws.join("dir")).unwrap();
        std::fs::write(f.ws.join("dir/file.txt"), "mine\n").unwrap();
        // Checked while innocent…
        assert!(f.policy.resolve_read("notes.txt").is_ok());
        assert!(f.policy.resolve_write("dir/file.txt").is_ok());
        // …then swapped for links out before the open.
        std::fs::remove_file(f.ws.join("notes.txt")).unwrap();
        symlink(f.outside.join("creds.txt"), f.ws.join("notes.txt")).unwrap();
        std::fs::remove_dir_all(f.ws.join("dir")).unwrap();
        symlink(&f.outside, f.ws.join("dir")).unwrap();
        let d = open_beneath(&f.policy, "notes.txt", &f.ws.join("notes.txt"), false).unwrap_err();
        assert!(d.reason.contains("changed") || d.reason.contains("outside"), "{d}");
        let d =
            open_beneath(&f.policy, "dir/file.txt", &f.ws.join("dir/file.txt"), true).unwrap_err();
        assert!(d.reason.contains("changed") || d.reason.contains("outside"), "{d}");
        // The outside file is untouched (not truncated) and nothing was created outside.
        assert_eq!(
            std::fs::read_to_string(f.outside.join("creds.txt")).unwrap(),
            "password=hunter2\n"
        );
        assert!(!f.outside.join("file.txt").exists());
    }

    #[test]
    fn open_read_and_write_work_inside() {
        let f = fixture();
        use std::io::{Read, Write};
        let mut w = f.policy.open_write("src/new.txt").unwrap();
        w.write_all(b"hello").unwrap();
        drop(w);
        let mut text = String::new();
        f.policy.open_read("src/new.txt").unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "hello");
        let mut w = f.policy.open_write("src/new.txt").unwrap();
        w.write_all(b"hi").unwrap();
        drop(w);
        assert_eq!(std::fs::read_to_string(f.ws.join("src/new.txt")).unwrap(), "hi");
        assert!(f.policy.open_read(".env").is_err());
        assert!(f.policy.open_write(".git/hooks/pre-commit").is_err());
    }

    #[test]
    fn roots_that_cannot_be_confined_to_are_refused() {
        assert!(Policy::for_workspace(Path::new("/"), &SandboxSettings::default()).is_err());
        assert!(
            Policy::for_workspace(Path::new("/no/such/dir"), &SandboxSettings::default()).is_err()
        );
        let f = fixture();
        let net = |hosts: &[&str]| SandboxSettings {
            allow_net: hosts.iter().map(|h| (*h).to_owned()).collect(),
            ..SandboxSettings::default()
        };
        let policy = Policy::for_workspace(&f.ws, &net(&["pypi.org"])).unwrap();
        assert!(policy.allow_net().allows("pypi.org", 443));
        let err = Policy::for_workspace(&f.ws, &net(&["https://pypi.org/simple"])).unwrap_err();
        assert!(err.to_string().contains("not a URL"), "{err}");
    }
}
