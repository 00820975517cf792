//! What a sandboxed command's process does to itself between `fork` and `exec`, and the few
//! probes that need a raw system call.
//!
//! This is the one module of the crate allowed `unsafe` code, because the confinement must be
//! applied by the child to itself before the command's program starts (`pre_exec`), and the
//! calls it makes (`unshare`, `mount`, `setrlimit`, `prctl`, `write`) have no safe wrapper
//! that is usable there. Everything is prepared by the parent (paths as C strings, the
//! Landlock ruleset, the seccomp program, open cgroup files): after `fork` in a threaded
//! process the child must not allocate, so [`Plan::apply`] only makes system calls on
//! prepared data and returns `io::Error::last_os_error()` (which does not allocate) when one
//! fails. A failure makes the spawn fail: a command never runs with less confinement than the
//! parent planned.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

/// `setrlimit`'s resource type (glibc names it, musl uses `c_int`).
#[cfg(target_env = "gnu")]
pub(super) type Resource = libc::__rlimit_resource_t;
/// `setrlimit`'s resource type (glibc names it, musl uses `c_int`).
#[cfg(not(target_env = "gnu"))]
pub(super) type Resource = libc::c_int;

/// A bind mount made read-only inside the command's mount namespace.
pub(super) struct ReadOnlyBind {
    /// The folder (absolute).
    pub path: CString,
    /// Mount flags to keep on the remount (nosuid, nodev, noexec of the mount it is on).
    pub keep: libc::c_ulong,
}

/// Everything the child does, prepared by the parent.
#[derive(Default)]
pub(super) struct Plan {
    /// `cgroup.procs` files to write "0" to (joining the run's cgroups).
    pub cgroups: Vec<OwnedFd>,
    /// `unshare` flags (`CLONE_NEWNET`, `CLONE_NEWNS`, `CLONE_NEWUSER`), 0: none.
    pub unshare: libc::c_int,
    /// For a user namespace: `/proc/self/uid_map` and `gid_map` contents.
    pub id_maps: Option<(CString, CString)>,
    /// Folders bound read-only (needs the mount namespace).
    pub read_only: Vec<ReadOnlyBind>,
    /// Secret files hidden behind `/dev/null` (needs the mount namespace): they read as empty and
    /// writes to them are discarded.
    pub hide: Vec<CString>,
    /// `(resource, soft, hard)`.
    pub rlimits: Vec<(Resource, u64, u64)>,
    /// Empty the capability bounding set (a root parent: its child must not keep root's
    /// powers across `exec`).
    pub drop_capabilities: bool,
    /// The Landlock ruleset to enforce.
    pub landlock: Option<landlock::RulesetCreated>,
    /// The seccomp program to load.
    pub seccomp: Option<seccompiler::BpfProgram>,
}

impl Plan {
    /// Sets the plan to run in the child of `cmd`.
    pub(super) fn install(self, cmd: &mut std::process::Command) {
        let mut plan = Some(self);
        // SAFETY: the closure runs in the forked child before exec; `apply` makes only system
        // calls on data prepared before the fork and allocates nothing.
        unsafe {
            cmd.pre_exec(move || match plan.take() {
                Some(mut plan) => plan.apply(),
                None => Ok(()),
            });
        }
    }

    fn apply(&mut self) -> io::Result<()> {
        for fd in &self.cgroups {
            // SAFETY: writing two bytes from a static buffer to an open file descriptor.
            if unsafe { libc::write(fd.as_raw_fd(), b"0\n".as_ptr().cast(), 2) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if self.unshare != 0 {
            // SAFETY: plain system call; the child is single-threaded.
            if unsafe { libc::unshare(self.unshare) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some((uid_map, gid_map)) = &self.id_maps {
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", uid_map.as_bytes())?;
            write_file(c"/proc/self/gid_map", gid_map.as_bytes())?;
        }
        if self.unshare & libc::CLONE_NEWNS != 0 {
            // Nothing mounted here propagates back to the host.
            mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE)?;
            for file in &self.hide {
                mount(Some(c"/dev/null"), file, libc::MS_BIND)?;
                mount(None, file, libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY)?;
            }
            for bind in &self.read_only {
                mount(Some(bind.path.as_c_str()), &bind.path, libc::MS_BIND | libc::MS_REC)?;
                mount(
                    None,
                    &bind.path,
                    libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | bind.keep,
                )?;
            }
        }
        for &(resource, soft, hard) in &self.rlimits {
            let limit = libc::rlimit { rlim_cur: soft, rlim_max: hard };
            // SAFETY: a pointer to a live stack value.
            if unsafe { libc::setrlimit(resource, &limit) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if self.drop_capabilities {
            // SAFETY: plain prctl calls; EINVAL past the kernel's last capability ends the loop.
            unsafe {
                libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
                for cap in 0..64 {
                    if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                        break;
                    }
                }
            }
        }
        if let Some(ruleset) = self.landlock.take() {
            // Also sets no_new_privs, which seccomp needs.
            ruleset.restrict_self().map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
        }
        if let Some(program) = &self.seccomp {
            seccompiler::apply_filter(program)
                .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
        }
        Ok(())
    }
}

fn write_file(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: C strings and buffers that outlive the calls.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn mount(
    source: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    flags: libc::c_ulong,
) -> io::Result<()> {
    let source = source.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: C strings that outlive the call; null file system type and data are allowed for
    // bind mounts and propagation changes.
    if unsafe { libc::mount(source, target.as_ptr(), std::ptr::null(), flags, std::ptr::null()) }
        != 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's Landlock ABI version (`None`: no Landlock).
pub(super) fn landlock_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: `landlock_create_ruleset(NULL, 0, VERSION)` only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v as i32)
}
