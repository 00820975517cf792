//! `[sandbox] allow_net`: the checking proxy that is a sandboxed command's only way out.
//!
//! The command still runs in a network namespace of its own, where nothing but loopback
//! exists. Its child process, before `exec`, brings that loopback up, listens on
//! `127.0.0.1:`[`PORT`] there and hands the listening socket to sift ([`super::child`]); the
//! command gets `HTTP_PROXY`/`HTTPS_PROXY` pointing at it. sift accepts on that socket from
//! the host side, so every connection the command makes arrives here, and only here is an
//! outside connection opened, in sift's own network:
//!
//! - the host name must be on the allowlist (`pypi.org` exactly, `*.pythonhosted.org` for
//!   its subdomains; ports 80 and 443 unless an entry names its port, `example.com:8443`);
//! - it is resolved here, and the connection goes only to an address that is public: loopback,
//!   private, link-local, carrier-grade NAT, multicast, documentation and other reserved
//!   ranges are refused (a name that resolves to `127.0.0.1` or the cloud's metadata address
//!   `169.254.169.254` leads nowhere), and the address checked is the address connected to, so
//!   a second lookup cannot rebind it;
//! - `CONNECT host:port` (HTTPS, any TLS: the proxy sees the name, never the content) and
//!   plain HTTP requests in absolute form (`GET http://host/path`) are served; anything else
//!   is refused with a status and a sentence saying why.
//!
//! Every decision is kept and reported with the command's output ([`super::Output::network`],
//! refusals also in [`super::Output::denied`]).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The port the proxy listens on inside the command's network namespace (the namespace is
/// the command's own, so any port is free; this is the one proxies conventionally use).
pub(super) const PORT: u16 = 3128;

/// The longest a request's head may be.
const MAX_HEAD: usize = 16 * 1024;

/// The most decisions kept for one command (repeats are counted, not listed again).
const MAX_EVENTS: usize = 200;

/// One allowlist entry: a host (or `*.` and a domain) and the ports it may be reached on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// Lower case, without a trailing dot; for a wildcard, the domain after `*.`.
    host: String,
    /// `*.domain`: any name under the domain (not the domain itself).
    subdomains: bool,
    /// `None`: 80 and 443.
    port: Option<u16>,
}

/// The hosts a command may reach, parsed from `[sandbox] allow_net`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Allowlist {
    entries: Vec<Entry>,
}

impl Allowlist {
    /// Parses the entries: `host`, `host:port`, `*.domain`, `*.domain:port`. A URL, a path,
    /// an empty entry or a bare `*` is an error that says what to write instead.
    pub fn parse(entries: &[String]) -> Result<Allowlist, String> {
        let mut out = Vec::new();
        for raw in entries {
            let bad = |why: &str| {
                format!(
                    "[sandbox] allow_net entry {raw:?}: {why} (write a host name such as \"pypi.org\", \"*.pythonhosted.org\" or \"example.com:8443\")"
                )
            };
            let text = raw.trim();
            if text.contains("://") || text.contains('/') {
                return Err(bad("a host name, not a URL or a path"));
            }
            let (name, port) = match text.rsplit_once(':') {
                Some((name, port)) if !name.contains(':') => {
                    let port: u16 =
                        port.parse().ok().filter(|p| *p > 0).ok_or_else(|| bad("bad port"))?;
                    (name, Some(port))
                }
                _ => (text, None),
            };
            let (name, subdomains) = match name.strip_prefix("*.") {
                Some(rest) => (rest, true),
                None => (name, false),
            };
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            let label_ok = |l: &str| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            };
            if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
                return Err(bad("not a host name"));
            }
            if subdomains && !name.contains('.') {
                return Err(bad("a wildcard needs a domain with a dot (\"*.example.com\")"));
            }
            out.push(Entry { host: name, subdomains, port });
        }
        Ok(Allowlist { entries: out })
    }

    /// Whether nothing is allowed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `host` (any case, a trailing dot allowed) may be reached on `port`.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.entries.iter().any(|e| {
            let name_ok = if e.subdomains {
                host.strip_suffix(&e.host).is_some_and(|head| head.ends_with('.') && head.len() > 1)
            } else {
                host == e.host
            };
            let port_ok = match e.port {
                Some(p) => p == port,
                None => port == 80 || port == 443,
            };
            name_ok && port_ok
        })
    }
}

/// Whether a connection to `ip` leaves for the public internet: not loopback, private,
/// link-local, shared (carrier-grade NAT), multicast, broadcast, unspecified, documentation,
/// benchmarking or reserved; IPv4 inside IPv6 (mapped, NAT64, 6to4) is judged by the IPv4
/// address it carries.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 192 && b == 88 && c == 99)
        || (a == 192 && b == 168)
        || (a == 198 && (18..20).contains(&b))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224)
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return public_v4(v4);
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return public_v4(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    if s[0] == 0x2002 {
        return public_v4(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || s[0..6] == [0, 0, 0, 0, 0, 0] // IPv4-compatible (deprecated) and ::/96
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00 // multicast
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])) // discard-only
}

/// How the proxy finds a host's addresses. The real one asks the system's resolver; tests
/// route a made-up name to a listener of their own.
#[derive(Clone, Default)]
pub struct Resolver {
    /// Names sent to a fixed address, unchecked (for tests only: set in code, never from
    /// configuration, so nothing a repository or a model writes can reach it).
    routes: Vec<(String, SocketAddr)>,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver").field("routes", &self.routes.len()).finish()
    }
}

impl PartialEq for Resolver {
    fn eq(&self, other: &Self) -> bool {
        self.routes == other.routes
    }
}

impl Eq for Resolver {}

impl Resolver {
    /// Sends `host` (still subject to the allowlist) to `addr` without a lookup or the public
    /// address check: how tests reach a listener on 127.0.0.1 through the proxy.
    #[doc(hidden)]
    pub fn route(mut self, host: &str, addr: SocketAddr) -> Resolver {
        self.routes.push((host.to_ascii_lowercase(), addr));
        self
    }

    /// The addresses to try for `host:port`, or why there are none.
    fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        let lower = host.trim_end_matches('.').to_ascii_lowercase();
        if let Some((_, addr)) = self.routes.iter().find(|(h, _)| *h == lower) {
            return Ok(vec![*addr]);
        }
        use std::net::ToSocketAddrs;
        let found: Vec<SocketAddr> = (lower.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve it: {e}"))?
            .collect();
        let public: Vec<SocketAddr> = found.iter().copied().filter(|a| is_public(a.ip())).collect();
        if public.is_empty() {
            let shown: Vec<String> = found.iter().map(|a| a.ip().to_string()).collect();
            return Err(format!(
                "it resolves to {} only, which is not a public address",
                if shown.is_empty() { "nothing".to_owned() } else { shown.join(", ") }
            ));
        }
        Ok(public)
    }
}

/// What the proxy decided, in the order it decided it.
#[derive(Debug, Default)]
struct Events {
    /// `(line, allowed, times)`.
    lines: Vec<(String, bool, usize)>,
}

impl Events {
    fn push(&mut self, line: String, allowed: bool) {
        if let Some(e) = self.lines.iter_mut().find(|(l, _, _)| *l == line) {
            e.2 += 1;
        } else if self.lines.len() < MAX_EVENTS {
            self.lines.push((line, allowed, 1));
        }
    }
}

/// A running proxy: accepts the command's connections until [`Proxy::stop`].
pub(super) struct Proxy {
    stop: Arc<AtomicBool>,
    events: Arc<Mutex<Events>>,
    /// The connections being relayed, by number, each the command's side and the host's:
    /// shut down at [`Proxy::stop`], forgotten when they end.
    open: Arc<Mutex<Open>>,
    accept: Option<std::thread::JoinHandle<()>>,
}

/// What the command's connections came to, for [`super::Output`].
pub(super) struct Report {
    /// Every decision (`allowed …`, `refused …`), with a count when repeated.
    pub network: Vec<String>,
    /// The refusals alone.
    pub refused: Vec<String>,
}

impl Proxy {
    /// Serves connections arriving on `listener` (the socket the command's child made in its
    /// namespace) under `allow`.
    pub(super) fn start(listener: TcpListener, allow: Allowlist, resolver: Resolver) -> Proxy {
        let stop = Arc::new(AtomicBool::new(false));
        let events = Arc::new(Mutex::new(Events::default()));
        let open = Arc::new(Mutex::new(Open::default()));
        let rules = Arc::new((allow, resolver));
        let accept = {
            let (stop, events, open) = (Arc::clone(&stop), Arc::clone(&events), Arc::clone(&open));
            std::thread::spawn(move || {
                if listener.set_nonblocking(true).is_err() {
                    return;
                }
                let mut nap = Duration::from_micros(500);
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            nap = Duration::from_micros(500);
                            let (events, open, rules) =
                                (Arc::clone(&events), Arc::clone(&open), Arc::clone(&rules));
                            std::thread::spawn(move || {
                                let _ = conn.set_nonblocking(false);
                                serve(conn, &rules.0, &rules.1, &events, &open);
                            });
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(nap);
                            nap = (nap * 2).min(Duration::from_millis(10));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
        };
        Proxy { stop, events, open, accept: Some(accept) }
    }

    /// Stops accepting, closes every connection still open, and says what happened.
    pub(super) fn stop(mut self) -> Report {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        for (a, b) in self.open.lock().unwrap_or_else(|p| p.into_inner()).streams.values() {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        }
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        let shown = |(line, _, n): &(String, bool, usize)| {
            if *n > 1 { format!("{line} ({n} times)") } else { line.clone() }
        };
        Report {
            network: events.lines.iter().map(shown).collect(),
            refused: events.lines.iter().filter(|e| !e.1).map(shown).collect(),
        }
    }
}

/// A request's first line and headers.
struct Head {
    method: String,
    target: String,
    version: String,
    /// The header lines, as sent.
    headers: Vec<String>,
    /// Bytes read past the head (the start of a body, or of a TLS handshake).
    rest: Vec<u8>,
}

fn read_head(conn: &mut TcpStream) -> Result<Head, String> {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err("a request head over 16 KiB".into());
        }
        match conn.read(&mut chunk) {
            Ok(0) => return Err("the connection closed before a request".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("no request: {e}")),
        }
    };
    let _ = conn.set_read_timeout(None);
    let text = std::str::from_utf8(&buf[..end]).map_err(|_| "a request head that is not text")?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("a malformed request line {first:?}"));
    };
    Ok(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers: lines.map(str::to_owned).collect(),
        rest: buf[end + 4..].to_vec(),
    })
}

/// Splits `host:port` (`[v6]:port` too), `default` when no port is given.
fn host_port(authority: &str, default: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => default?,
    };
    (!host.is_empty() && !host.contains('@')).then(|| (host.to_owned(), port))
}

fn refuse(conn: &mut TcpStream, status: &str, why: &str) {
    let body = format!("sift sandbox: {why}\n");
    // One write: a client that reads once gets the whole answer.
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(answer.as_bytes());
    let _ = conn.shutdown(Shutdown::Write);
}

fn serve(
    mut conn: TcpStream,
    allow: &Allowlist,
    resolver: &Resolver,
    events: &Mutex<Events>,
    open: &Mutex<Open>,
) {
    let log = |line: String, allowed: bool| {
        events.lock().unwrap_or_else(|p| p.into_inner()).push(line, allowed);
    };
    let head = match read_head(&mut conn) {
        Ok(h) => h,
        Err(why) => {
            log(format!("refused a connection to the proxy: {why}"), false);
            refuse(&mut conn, "400 Bad Request", &why);
            return;
        }
    };
    let connect = head.method.eq_ignore_ascii_case("CONNECT");
    let target = if connect {
        host_port(&head.target, None)
    } else if let Some(rest) = head.target.strip_prefix("http://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        host_port(authority, Some(80))
    } else {
        None
    };
    let Some((host, port)) = target else {
        let why = format!(
            "{} {}: only CONNECT host:port and plain-HTTP requests in absolute form (http://host/…) go through this proxy",
            head.method, head.target
        );
        log(format!("refused {why}"), false);
        refuse(&mut conn, "400 Bad Request", &why);
        return;
    };
    let shown = format!("{host}:{port}");
    if !allow.allows(&host, port) {
        let why = format!("{shown} is not in [sandbox] allow_net");
        log(format!("refused {why}"), false);
        refuse(&mut conn, "403 Forbidden", &why);
        return;
    }
    let addrs = match resolver.resolve(&host, port) {
        Ok(a) => a,
        Err(why) => {
            log(format!("refused {shown}: {why}"), false);
            refuse(&mut conn, "403 Forbidden", &format!("{shown}: {why}"));
            return;
        }
    };
    let mut upstream = None;
    let mut last = String::new();
    for addr in &addrs {
        match TcpStream::connect_timeout(addr, Duration::from_secs(10)) {
            Ok(s) => {
                upstream = Some((s, *addr));
                break;
            }
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    let Some((mut up, addr)) = upstream else {
        log(format!("allowed {shown}, but it could not be reached ({last})"), true);
        refuse(&mut conn, "502 Bad Gateway", &format!("{shown} could not be reached: {last}"));
        return;
    };
    log(format!("allowed {shown} ({})", addr.ip()), true);
    let sent = if connect {
        conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .and_then(|()| up.write_all(&head.rest))
    } else {
        // The origin-form request line, the headers without the proxy's own, and one request
        // per connection (a kept-alive connection could carry the next request elsewhere).
        let rest = head.target.strip_prefix("http://").unwrap_or_default();
        let path = rest.find(['/', '?']).map_or("/", |i| &rest[i..]);
        let mut out = format!("{} {} {}\r\n", head.method, path, head.version);
        for h in &head.headers {
            let name = h.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
            if !matches!(
                name.as_str(),
                "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
            ) {
                out.push_str(h);
                out.push_str("\r\n");
            }
        }
        out.push_str("Connection: close\r\n\r\n");
        up.write_all(out.as_bytes()).and_then(|()| up.write_all(&head.rest))
    };
    if sent.is_err() {
        return;
    }
    let (Ok(conn_r), Ok(up_r)) = (conn.try_clone(), up.try_clone()) else { return };
    let id = match (conn.try_clone(), up.try_clone()) {
        (Ok(a), Ok(b)) => {
            let mut open = open.lock().unwrap_or_else(|p| p.into_inner());
            open.next += 1;
            let id = open.next;
            open.streams.insert(id, (a, b));
            Some(id)
        }
        _ => None,
    };
    let down = std::thread::spawn(move || pipe(up_r, conn));
    pipe(conn_r, up);
    let _ = down.join();
    if let Some(id) = id {
        open.lock().unwrap_or_else(|p| p.into_inner()).streams.remove(&id);
    }
}

/// The connections being relayed (a command that opens thousands over its life holds only
/// the live ones).
#[derive(Default)]
struct Open {
    next: u64,
    streams: std::collections::HashMap<u64, (TcpStream, TcpStream)>,
}

/// Copies until `from` ends, then ends `to`'s writing side.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Allowlist {
        Allowlist::parse(&entries.iter().map(|e| (*e).to_owned()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn the_allowlist_matches_names_ports_and_subdomains_only() {
        let allow = list(&["pypi.org", "*.pythonhosted.org", "example.com:8443"]);
        assert!(allow.allows("pypi.org", 443));
        assert!(allow.allows("PyPI.org.", 80));
        assert!(!allow.allows("pypi.org", 22), "a bare name means ports 80 and 443");
        assert!(!allow.allows("evilpypi.org", 443));
        assert!(!allow.allows("pypi.org.evil.example", 443));
        assert!(allow.allows("files.pythonhosted.org", 443));
        assert!(!allow.allows("pythonhosted.org", 443), "a wildcard is for subdomains");
        assert!(!allow.allows("xpythonhosted.org", 443));
        assert!(allow.allows("example.com", 8443));
        assert!(!allow.allows("example.com", 443));
    }

    #[test]
    fn bad_entries_say_what_to_write() {
        for bad in [
            "https://pypi.org",
            "pypi.org/simple",
            "",
            "*",
            "*.org",
            "a_b.com",
            "x.com:0",
            "x.com:99999",
        ] {
            let err = Allowlist::parse(&[bad.to_owned()]).unwrap_err();
            assert!(
                err.contains("allow_net entry") && err.contains("write a host name"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn only_public_addresses_count() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "192.0.2.1",
            "198.18.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:db8::1",
            "::127.0.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in [
            "151.101.0.223",
            "8.8.8.8",
            "172.32.0.1",
            "2a04:4e42::223",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn a_name_that_resolves_to_loopback_is_refused() {
        let err = Resolver::default().resolve("localhost", 80).unwrap_err();
        assert!(err.contains("not a public address"), "{err}");
    }

    #[test]
    fn authorities_split_with_defaults() {
        assert_eq!(host_port("pypi.org:443", None), Some(("pypi.org".into(), 443)));
        assert_eq!(host_port("pypi.org", Some(80)), Some(("pypi.org".into(), 80)));
        assert_eq!(host_port("pypi.org", None), None, "CONNECT needs a port");
        assert_eq!(host_port("[2a04::1]:443", None), Some(("2a04::1".into(), 443)));
        assert_eq!(host_port("user@evil:80", None), None);
        assert_eq!(host_port(":80", None), None);
    }
}
