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
    /// For `[sandbox] allow_net` (needs the network namespace): the child's end of a socket
    /// pair and the port to listen on. The child brings the namespace's loopback up, listens on
    /// `127.0.0.1:port` there and sends the listening socket to the parent, which serves it
    /// as the checking proxy.
    pub proxy: Option<(OwnedFd, u16)>,
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
        if let Some((chan, port)) = &self.proxy {
            listen_for_proxy(chan.as_raw_fd(), *port)?;
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

/// Closes `fd` and returns `err` (the error of the call that failed before it).
fn close_with(fd: libc::c_int, err: io::Error) -> io::Error {
    // SAFETY: closing a descriptor this module opened.
    unsafe { libc::close(fd) };
    err
}

/// In the child, inside its new network namespace: loopback up, a socket listening on
/// `127.0.0.1:port`, sent over `chan` (`SCM_RIGHTS`) and closed here. Only system calls on
/// stack data.
fn listen_for_proxy(chan: libc::c_int, port: u16) -> io::Result<()> {
    // SAFETY: system calls on descriptors this function opens and on stack values that
    // outlive the calls; `ifreq` and `sockaddr_in` are plain C structs for which all-zero is a
    // valid value.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        ifr.ifr_name[0] = b'l' as libc::c_char;
        ifr.ifr_name[1] = b'o' as libc::c_char;
        if libc::ioctl(s, libc::SIOCGIFFLAGS as _, &mut ifr) < 0 {
            return Err(close_with(s, io::Error::last_os_error()));
        }
        ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(s, libc::SIOCSIFFLAGS as _, &ifr) < 0 {
            return Err(close_with(s, io::Error::last_os_error()));
        }
        libc::close(s);

        let l = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if l < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr = libc::in_addr { s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be() };
        if libc::bind(
            l,
            (&raw const addr).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) < 0
            || libc::listen(l, 128) < 0
        {
            return Err(close_with(l, io::Error::last_os_error()));
        }

        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = Control([0; 64]);
        let room = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
        let msg = one_byte_message(&mut iov, &mut control, room);
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), l);
        if libc::sendmsg(chan, &raw const msg, libc::MSG_NOSIGNAL) < 0 {
            return Err(close_with(l, io::Error::last_os_error()));
        }
        libc::close(l);
    }
    Ok(())
}

/// A control-message buffer aligned for `cmsghdr`.
#[repr(C, align(8))]
struct Control([u8; 64]);

/// A message carrying `iov` (one byte) with `room` bytes of `control` for a descriptor: what
/// the child sends and the parent receives. No allocation (the child calls it after `fork`).
fn one_byte_message(iov: &mut libc::iovec, control: &mut Control, room: usize) -> libc::msghdr {
    // SAFETY: `msghdr` is a plain C struct for which all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = room as _;
    msg
}

/// In the parent, once the child has started: the listening socket it sent over `chan`.
pub(super) fn receive_listener(chan: &OwnedFd) -> io::Result<std::net::TcpListener> {
    use std::os::fd::FromRawFd;
    // SAFETY: `recvmsg` into stack buffers that outlive the call; the descriptor taken from
    // the control message is a new one the kernel installed for this process, owned from here.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = Control([0; 64]);
        let room = control.0.len();
        let mut msg = one_byte_message(&mut iov, &mut control, room);
        let n = libc::recvmsg(
            chan.as_raw_fd(),
            &raw mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        );
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(io::Error::other("the command's process sent no listening socket"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        Ok(std::net::TcpListener::from_raw_fd(fd))
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
