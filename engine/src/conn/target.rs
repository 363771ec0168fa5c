//! Where to connect: a Redis URL parsed into a [`RedisTarget`] (endpoint,
//! TLS, credentials, database) with the `url` crate (WHATWG URL parsing),
//! plus the few rules of Redis URLs it does not know: `redis://secret@host`
//! is a password (as `redis-cli -u`), `/N` is a database, an empty port or
//! an unknown query parameter is refused, and percent-escapes must be valid.

use std::fmt;
use std::path::PathBuf;

use url::Url;

/// Default Redis port.
pub const DEFAULT_PORT: u16 = 6379;

/// Where a Redis server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { host: String, port: u16 },
    Unix { path: PathBuf },
}

/// TLS settings for `rediss://` URLs.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TlsSettings {
    /// Skip certificate verification (URL fragment `#insecure`, as redis-rs).
    pub insecure: bool,
    /// PEM file of extra trusted CA certificates (URL query `?tls_ca=PATH`);
    /// without it the Mozilla roots of `webpki-roots` are trusted.
    pub ca_file: Option<PathBuf>,
}

/// A Redis server and the credentials to use, parsed from a URL.
///
/// `Debug` and `Display` never show the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisTarget {
    pub endpoint: Endpoint,
    /// `Some` for `rediss://`.
    pub tls: Option<TlsSettings>,
    /// ACL user (Redis 6+); `None` authenticates as `default`.
    pub username: Option<String>,
    pub password: Option<String>,
    /// Database number sent with `SELECT` (0 is not sent).
    pub db: u32,
    /// More nodes of the same Redis Cluster, from a URL naming several
    /// hosts (`redis://a:7000,b:7001`): tried in order after `endpoint`
    /// when the slot map is loaded (`crate::cluster::topology`). Empty for
    /// one host.
    pub seeds: Vec<Endpoint>,
}

/// Why a URL is not a Redis target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Redis URL: {0}")]
pub struct TargetError(pub String);

fn bad(msg: impl Into<String>) -> TargetError {
    TargetError(msg.into())
}

impl RedisTarget {
    /// Parses `redis://[user:pass@]host[:port][/db]`, `rediss://…` (TLS;
    /// `#insecure` skips verification, `?tls_ca=PATH` adds a CA file),
    /// `unix:///path.sock[?db=N&user=U&password=P]` (also `redis+unix://`)
    /// or a bare `/path.sock`. Query parameters on any scheme: `db`,
    /// `user`/`username`, `pass`/`password`, `tls_ca`.
    ///
    /// User, password, query and socket path are percent-decoded (`+` stays
    /// `+`). The host may be `[ipv6]`. Errors name the part that is wrong.
    pub fn parse(url: &str) -> Result<RedisTarget, TargetError> {
        let url = url.trim();
        if let Some((first, others)) = split_seeds(url) {
            let mut target = RedisTarget::parse(&first)?;
            for other in others {
                let seed = RedisTarget::parse(&other)?;
                target.seeds.push(seed.endpoint);
            }
            return Ok(target);
        }
        if url.starts_with('/') {
            return Ok(RedisTarget::unix(PathBuf::from(url)));
        }
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad(format!("`{url}` has no scheme (expected redis://, rediss:// or unix://)")))?;
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "redis" | "rediss" | "unix" | "redis+unix") {
            return Err(bad(format!("unsupported scheme `{scheme}` (expected redis, rediss or unix)")));
        }
        let raw = RawAuthority::of(rest);
        let parsed = Url::parse(url).map_err(|e| url_error(e, &raw))?;
        let params = parse_query(parsed.query().unwrap_or(""))?;
        let mut target = if matches!(scheme.as_str(), "redis" | "rediss") {
            let mut t = tcp_target(&parsed, &raw)?;
            let fragment = parsed.fragment();
            if scheme == "rediss" {
                t.tls = Some(TlsSettings { insecure: fragment == Some("insecure"), ca_file: None });
            } else if fragment.is_some_and(|f| !f.is_empty()) {
                return Err(bad("a #fragment is only meaningful for rediss:// (#insecure)"));
            }
            t
        } else {
            // `unix:///tmp/r.sock` has an empty host; `unix://tmp/r.sock`
            // (a relative path) has host `tmp`.
            let path = format!("{}{}", parsed.host_str().unwrap_or(""), parsed.path());
            if path.is_empty() {
                return Err(bad("unix:// needs a socket path, e.g. unix:///tmp/redis.sock"));
            }
            RedisTarget::unix(PathBuf::from(percent_decode(&path, "socket path")?))
        };
        for (key, value) in params {
            match key.as_str() {
                "db" => target.db = parse_db(&value)?,
                "user" | "username" => target.username = Some(value).filter(|v| !v.is_empty()),
                "pass" | "password" => target.password = Some(value),
                "tls_ca" => match &mut target.tls {
                    Some(tls) => tls.ca_file = Some(PathBuf::from(value)),
                    None => return Err(bad("tls_ca is only meaningful for rediss://")),
                },
                other => return Err(bad(format!("unknown query parameter `{other}` (known: db, user, password, tls_ca)"))),
            }
        }
        Ok(target)
    }

    fn unix(path: PathBuf) -> RedisTarget {
        RedisTarget { endpoint: Endpoint::Unix { path }, tls: None, username: None, password: None, db: 0, seeds: Vec::new() }
    }

    /// The same server settings (TLS, credentials, database) at another
    /// endpoint: a node of the same cluster. No seeds.
    pub fn at(&self, endpoint: Endpoint) -> RedisTarget {
        RedisTarget { endpoint, seeds: Vec::new(), ..self.clone() }
    }
}

/// A `redis://` or `rediss://` URL naming several hosts
/// (`redis://user:pw@a:7000,b:7001/0`): the URL with the first host, and
/// one URL per other host with the same scheme, credentials and the rest.
/// `None` for a URL with one host.
fn split_seeds(url: &str) -> Option<(String, Vec<String>)> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "redis" | "rediss") {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rfind('@') {
        Some(i) => (&authority[..=i], &authority[i + 1..]),
        None => ("", authority),
    };
    if !hosts.contains(',') {
        return None;
    }
    let mut urls = hosts.split(',').map(|h| format!("{scheme}://{userinfo}{}{tail}", h.trim()));
    let first = urls.next()?;
    Some((first, urls.collect()))
}

/// The authority as written, between `://` and the first `/`, `?` or `#`.
/// `url` normalises away two things a Redis URL distinguishes: an empty
/// password (`user:@h` is user `user`, password ``, not password `user`)
/// and an empty port (`h:` is refused, not the default port); and its port
/// error does not quote the port.
struct RawAuthority<'a> {
    /// `user:pass` has a `:`.
    userinfo_has_colon: bool,
    /// The text after the host's `:`, if any.
    port: Option<&'a str>,
    /// `[…]` host: whether the `]` is there, and the text after it.
    ipv6: Option<Option<&'a str>>,
}

impl<'a> RawAuthority<'a> {
    fn of(rest: &'a str) -> RawAuthority<'a> {
        let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
        let (userinfo, hostport) = match authority.rfind('@') {
            Some(i) => (&authority[..i], &authority[i + 1..]),
            None => ("", authority),
        };
        let ipv6 = hostport.strip_prefix('[').map(|h| h.find(']').map(|i| &h[i + 1..]));
        let after_host = ipv6.flatten().unwrap_or(hostport);
        let port = after_host.rfind(':').map(|i| &after_host[i + 1..]);
        RawAuthority { userinfo_has_colon: userinfo.contains(':'), port, ipv6 }
    }
}

fn port_error(p: &str) -> TargetError {
    bad(format!("port `{p}` is not a number in 1..65535"))
}

fn url_error(e: url::ParseError, raw: &RawAuthority<'_>) -> TargetError {
    use url::ParseError::*;
    match e {
        EmptyHost => bad("host is empty"),
        InvalidIpv6Address | InvalidPort if raw.ipv6 == Some(None) => bad("IPv6 host is missing `]`"),
        InvalidIpv6Address | InvalidPort if raw.ipv6.flatten().is_some_and(|p| !p.is_empty() && !p.starts_with(':')) => {
            bad("expected `:port` after `]`")
        }
        InvalidIpv6Address => bad("the host in `[…]` is not an IPv6 address"),
        InvalidPort => port_error(raw.port.unwrap_or("")),
        other => bad(format!("{other}")),
    }
}

fn tcp_target(url: &Url, raw: &RawAuthority<'_>) -> Result<RedisTarget, TargetError> {
    let host = match url.host() {
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        Some(h) => h.to_string(),
        None => String::new(),
    };
    if host.is_empty() {
        return Err(bad("host is empty"));
    }
    let port = match (url.port(), raw.port) {
        (Some(p), _) if p != 0 => p,
        (None, None) => DEFAULT_PORT,
        (_, p) => return Err(port_error(p.unwrap_or(""))),
    };
    let (mut username, mut password) = (None, None);
    let (user, pass) = (url.username(), url.password());
    match pass {
        Some(p) => {
            username = Some(percent_decode(user, "user")?).filter(|u| !u.is_empty());
            password = Some(percent_decode(p, "password")?);
        }
        // `user:@h`: an empty password.
        None if raw.userinfo_has_colon => {
            username = Some(percent_decode(user, "user")?).filter(|u| !u.is_empty());
            password = Some(String::new());
        }
        // `redis://secret@host` is read as a password, as redis-cli -u does.
        None if !user.is_empty() => password = Some(percent_decode(user, "password")?),
        None => {}
    }
    let db = match url.path().trim_start_matches('/').trim_end_matches('/') {
        "" => 0,
        d => parse_db(d)?,
    };
    Ok(RedisTarget { endpoint: Endpoint::Tcp { host, port }, tls: None, username, password, db, seeds: Vec::new() })
}

fn parse_db(s: &str) -> Result<u32, TargetError> {
    s.parse::<u32>().map_err(|_| bad(format!("database `{s}` is not a non-negative integer")))
}

/// `k=v&k=v`, each side percent-decoded; not `application/x-www-form-urlencoded`
/// (`+` is not a space: passwords keep their `+`).
fn parse_query(q: &str) -> Result<Vec<(String, String)>, TargetError> {
    let mut out = Vec::new();
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.push((percent_decode(k, "query")?, percent_decode(v, "query")?));
    }
    Ok(out)
}

/// Percent-decodes `s`, refusing a `%` not followed by two hex digits
/// (`url` and `percent-encoding` pass those through unchanged).
fn percent_decode(s: &str, what: &str) -> Result<String, TargetError> {
    let b = s.as_bytes();
    if let Some(i) = (0..b.len()).find(|&i| {
        b[i] == b'%' && !b.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    }) {
        return Err(bad(format!("bad percent-escape in {what} at byte {i}")));
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| bad(format!("{what} is not UTF-8 after percent-decoding")))
}

impl fmt::Display for RedisTarget {
    /// The URL with the password replaced by `***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let user = self.username.as_deref().unwrap_or("");
        let cred = match (&self.username, &self.password) {
            (_, Some(_)) => format!("{user}:***@"),
            (Some(u), None) => format!("{u}@"),
            (None, None) => String::new(),
        };
        match &self.endpoint {
            Endpoint::Tcp { host, port } => {
                let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
                let host = if host.contains(':') { format!("[{host}]") } else { host.clone() };
                write!(f, "{scheme}://{cred}{host}:{port}")?;
                for seed in &self.seeds {
                    if let Endpoint::Tcp { host, port } = seed {
                        let host = if host.contains(':') { format!("[{host}]") } else { host.clone() };
                        write!(f, ",{host}:{port}")?;
                    }
                }
                if self.db != 0 {
                    write!(f, "/{}", self.db)?;
                }
                Ok(())
            }
            Endpoint::Unix { path } => {
                write!(f, "unix://{}", path.display())?;
                if self.db != 0 {
                    write!(f, "?db={}", self.db)?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for RedisTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTarget")
            .field("endpoint", &self.endpoint)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("db", &self.db)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Endpoint {
        Endpoint::Tcp { host: host.into(), port }
    }

    #[test]
    fn several_hosts_are_cluster_seeds() {
        let t = RedisTarget::parse("redis://u:pw@a:7000,b:7001, c:7002/2").unwrap();
        assert_eq!(t.endpoint, Endpoint::Tcp { host: "a".into(), port: 7000 });
        assert_eq!(
            t.seeds,
            vec![Endpoint::Tcp { host: "b".into(), port: 7001 }, Endpoint::Tcp { host: "c".into(), port: 7002 }]
        );
        assert_eq!((t.username.as_deref(), t.password.as_deref(), t.db), (Some("u"), Some("pw"), 2));
        assert_eq!(t.to_string(), "redis://u:***@a:7000,b:7001,c:7002/2");
        let node = t.at(Endpoint::Tcp { host: "d".into(), port: 1 });
        assert!(node.seeds.is_empty() && node.password.as_deref() == Some("pw"));
        assert!(RedisTarget::parse("redis://a:7000,b:").is_err(), "each host is checked");
        assert!(RedisTarget::parse("redis://a:7000").unwrap().seeds.is_empty());
    }

    #[test]
    fn parses_redis_urls() {
        let t = RedisTarget::parse("redis://127.0.0.1:6390").unwrap();
        assert_eq!(t.endpoint, tcp("127.0.0.1", 6390));
        assert_eq!((t.username, t.password, t.db, t.tls), (None, None, 0, None));

        let t = RedisTarget::parse("redis://alice:p%40ss%3Aw@redis.example:7000/3").unwrap();
        assert_eq!(t.endpoint, tcp("redis.example", 7000));
        assert_eq!(t.username.as_deref(), Some("alice"));
        assert_eq!(t.password.as_deref(), Some("p@ss:w"));
        assert_eq!(t.db, 3);

        let t = RedisTarget::parse("redis://:secret@localhost").unwrap();
        assert_eq!(t.endpoint, tcp("localhost", 6379));
        assert_eq!((t.username.as_deref(), t.password.as_deref()), (None, Some("secret")));

        let t = RedisTarget::parse("rediss://[::1]:6380/1#insecure").unwrap();
        assert_eq!(t.endpoint, tcp("::1", 6380));
        assert_eq!(t.tls, Some(TlsSettings { insecure: true, ca_file: None }));
        assert_eq!(t.db, 1);

        let t = RedisTarget::parse("rediss://h?tls_ca=/etc/ca.pem").unwrap();
        assert_eq!(t.tls.unwrap().ca_file, Some(PathBuf::from("/etc/ca.pem")));
    }

    /// The forms the `url` crate reads differently from a Redis URL, each
    /// as the hand-written parser before it read them.
    #[test]
    fn keeps_the_redis_readings_of_url_forms() {
        // (url, endpoint, user, password, db)
        type Case = (&'static str, Endpoint, Option<&'static str>, Option<&'static str>, u32);
        let cases: &[Case] = &[
            // redis-cli -u: a lone userinfo is the password
            ("redis://secret@h", tcp("h", 6379), None, Some("secret"), 0),
            // an empty password is a password
            ("redis://bob:@h", tcp("h", 6379), Some("bob"), Some(""), 0),
            ("redis://:@h", tcp("h", 6379), None, Some(""), 0),
            // `@` unescaped in the password: the last `@` ends the userinfo
            ("redis://a:p@ss@h:2", tcp("h", 2), Some("a"), Some("p@ss"), 0),
            // `+` is not a space, in userinfo and in the query
            ("redis://a:b+c@h?user=x+y", tcp("h", 6379), Some("x+y"), Some("b+c"), 0),
            // case and escapes of the host kept, trailing `/` ignored
            ("REDIS://Redis.Example:7/4/", tcp("Redis.Example", 7), None, None, 4),
            ("redis://h/", tcp("h", 6379), None, None, 0),
            ("redis://h?db=5&password=p%26q", tcp("h", 6379), None, Some("p&q"), 5),
            ("redis://h?user=&password=", tcp("h", 6379), None, Some(""), 0),
            ("  redis://h:1  ", tcp("h", 1), None, None, 0),
            ("redis://[2001:db8::1]", tcp("2001:db8::1", 6379), None, None, 0),
            ("redis://h#", tcp("h", 6379), None, None, 0),
        ];
        for (url, endpoint, user, pass, db) in cases {
            let t = RedisTarget::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(&t.endpoint, endpoint, "{url}");
            assert_eq!((t.username.as_deref(), t.password.as_deref(), t.db), (*user, *pass, *db), "{url}");
            assert_eq!(t.tls, None, "{url}");
        }
        let t = RedisTarget::parse("rediss://h#other").unwrap();
        assert_eq!(t.tls, Some(TlsSettings { insecure: false, ca_file: None }));
    }

    #[test]
    fn parses_unix_sockets() {
        let t = RedisTarget::parse("/tmp/redis.sock").unwrap();
        assert_eq!(t.endpoint, Endpoint::Unix { path: "/tmp/redis.sock".into() });
        let t = RedisTarget::parse("unix:///tmp/r.sock?db=2&password=x").unwrap();
        assert_eq!(t.endpoint, Endpoint::Unix { path: "/tmp/r.sock".into() });
        assert_eq!((t.db, t.password.as_deref()), (2, Some("x")));
        for (url, path) in [
            ("redis+unix:///var/run/redis.sock", "/var/run/redis.sock"),
            ("unix:///tmp/my%20redis.sock", "/tmp/my redis.sock"),
            ("unix:///tmp/my redis.sock", "/tmp/my redis.sock"),
            ("unix://run/r.sock", "run/r.sock"),
        ] {
            let t = RedisTarget::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(t.endpoint, Endpoint::Unix { path: path.into() }, "{url}");
        }
        let t = RedisTarget::parse("unix:///s?user=u&pass=p").unwrap();
        assert_eq!((t.username.as_deref(), t.password.as_deref()), (Some("u"), Some("p")));
    }

    #[test]
    fn rejects_bad_urls_naming_the_part() {
        for (url, part) in [
            ("localhost:6379", "scheme"),
            ("http://x", "scheme"),
            ("redis://h:99999", "port `99999`"),
            ("redis://h:0", "port `0`"),
            ("redis://h:", "port ``"),
            ("redis://h:x1", "port `x1`"),
            ("redis://[::1]:70000", "port `70000`"),
            ("redis://h/abc", "database `abc`"),
            ("redis://h/1/2", "database `1/2`"),
            ("redis://h?db=-1", "database `-1`"),
            ("redis://:6379", "host"),
            ("redis://", "host"),
            ("redis:///3", "host"),
            ("redis://u:p@/3", "host"),
            ("redis://h?foo=1", "foo"),
            ("redis://a:%zz@h", "percent"),
            ("redis://a%2@h", "percent"),
            ("redis://h?password=%", "percent"),
            ("redis://a:%ff@h", "UTF-8"),
            ("redis://[::1", "missing `]`"),
            ("redis://[::1]x", "expected `:port` after `]`"),
            ("redis://[nope]", "not an IPv6 address"),
            // `url` refuses a sign (Rust's `u16::from_str` took `+1`)
            ("redis://h:+1", "port `+1`"),
            ("redis://h?tls_ca=x", "tls_ca"),
            ("unix:///s?tls_ca=x", "tls_ca"),
            ("redis://h#insecure", "fragment"),
            ("unix://", "socket path"),
        ] {
            let e = RedisTarget::parse(url).unwrap_err().to_string();
            assert!(e.starts_with("invalid Redis URL: ") && e.contains(part), "{url}: {e}");
        }
    }

    #[test]
    fn debug_and_display_hide_the_password() {
        let t = RedisTarget::parse("redis://bob:hunter2@h:1/2").unwrap();
        let d = format!("{t:?} {t}");
        assert!(!d.contains("hunter2"), "{d}");
        assert_eq!(t.to_string(), "redis://bob:***@h:1/2");
        assert_eq!(RedisTarget::parse("unix:///s?db=3").unwrap().to_string(), "unix:///s?db=3");
        assert_eq!(RedisTarget::parse("rediss://[::1]").unwrap().to_string(), "rediss://[::1]:6379");
    }
}
