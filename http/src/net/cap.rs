//! Caps on open HTTP connections, in all and per client IP address, and a
//! reserve: the last eighth of the cap ([`ConnCap::reserve`]) only takes
//! connections from an address that holds fewer than [`FEW`], so that
//! clients who hold many (four addresses of 256 idle sockets each filled a
//! cap of 1024) leave room for everyone else and for health checks.
//!
//! Why: each connection holds a file descriptor until the header timeout
//! closes it; about 21,600 idle ones reached the process's fd limit and
//! locked every client out (and left no descriptor for Redis connections).
//! Past a cap the new connection is closed at once, before any byte is
//! read, and counted in `pipelab_http_connections_refused_total{reason}`
//! (`max_connections` or `max_connections_per_ip`);
//! `pipelab_http_connections_open` is the number open.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The open connections, shared by the acceptor and every serving thread.
#[derive(Debug)]
pub struct ConnCap {
    max: usize,
    max_per_ip: usize,
    reserve: usize,
    open: Mutex<Open>,
}

/// An address holding fewer connections than this may use the reserve.
pub const FEW: usize = 4;

#[derive(Debug, Default)]
struct Open {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Which cap refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Total,
    PerIp,
}

impl Refused {
    /// The metric label.
    pub fn reason(self) -> &'static str {
        match self {
            Refused::Total => "max_connections",
            Refused::PerIp => "max_connections_per_ip",
        }
    }
}

/// One open connection; dropping it (when the connection ends) frees its place.
#[derive(Debug)]
pub struct Permit {
    cap: Arc<ConnCap>,
    ip: IpAddr,
}

impl ConnCap {
    /// At most `max` connections, `max_per_ip` from one address (each at least 1).
    pub fn new(max: usize, max_per_ip: usize) -> Arc<ConnCap> {
        metrics::counter!("pipelab_http_connections_refused_total", "reason" => Refused::Total.reason()).increment(0);
        metrics::counter!("pipelab_http_connections_refused_total", "reason" => Refused::PerIp.reason()).increment(0);
        let max = max.max(1);
        Arc::new(ConnCap { max, max_per_ip: max_per_ip.max(1), reserve: max / 8, open: Mutex::default() })
    }

    /// Places kept for addresses with fewer than [`FEW`] connections.
    pub fn reserve(&self) -> usize {
        self.reserve
    }

    /// A place for a connection from `ip`, or which cap is reached (then counted in /metrics).
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Permit, Refused> {
        let mut open = self.open.lock().expect("connection cap lock");
        let from_ip = open.per_ip.get(&ip).copied().unwrap_or(0);
        let refused = if open.total >= self.max || (open.total >= self.max - self.reserve && from_ip >= FEW) {
            Some(Refused::Total)
        } else if from_ip >= self.max_per_ip {
            Some(Refused::PerIp)
        } else {
            None
        };
        if let Some(r) = refused {
            drop(open);
            metrics::counter!("pipelab_http_connections_refused_total", "reason" => r.reason()).increment(1);
            return Err(r);
        }
        open.total += 1;
        open.per_ip.insert(ip, from_ip + 1);
        metrics::gauge!("pipelab_http_connections_open").set(open.total as f64);
        Ok(Permit { cap: self.clone(), ip })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.lock().expect("connection cap lock").total
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.cap.open.lock().expect("connection cap lock");
        open.total -= 1;
        if let Some(n) = open.per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.per_ip.remove(&self.ip);
            }
        }
        metrics::gauge!("pipelab_http_connections_open").set(open.total as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_for_addresses_with_few_connections() {
        let cap = ConnCap::new(16, 16);
        assert_eq!(cap.reserve(), 2);
        let (a, b, c): (IpAddr, IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap(), "10.0.0.3".parse().unwrap());
        let held: Vec<Permit> = (0..14).map(|_| cap.admit(a).unwrap()).collect();
        assert_eq!(cap.admit(a).unwrap_err(), Refused::Total, "the reserve is not for a");
        let _b = cap.admit(b).expect("an address with few connections");
        let _c = cap.admit(c).expect("another");
        assert_eq!(cap.admit(c).unwrap_err(), Refused::Total, "the cap itself");
        drop(held);
    }

    #[test]
    fn caps_in_all_and_per_address() {
        let cap = ConnCap::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let a1 = cap.admit(a).unwrap();
        let _a2 = cap.admit(a).unwrap();
        assert_eq!(cap.admit(a).unwrap_err(), Refused::PerIp);
        let _b1 = cap.admit(b).unwrap();
        assert_eq!(cap.admit(b).unwrap_err(), Refused::Total);
        drop(a1);
        assert_eq!(cap.open(), 2);
        let _a3 = cap.admit(a).expect("a place was freed");
        assert_eq!(cap.open(), 3);
    }
}
