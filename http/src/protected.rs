//! Protected mode, as Redis's own (`protected-mode yes`): `pipelab serve`
//! on an address other hosts can reach, with no token and no `--sandbox`,
//! refuses to start, since anyone who reaches it could read and delete
//! every key of its Redis. `--allow-unauthenticated` accepts the risk.

use std::net::SocketAddr;

/// Why `pipelab serve` refuses to listen: each the one line to print.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The API on a public address with nothing protecting it.
    #[error(
        "protected mode: refusing to listen on {0} with no token: anyone who reaches it could read and delete every key. \
         Pass --token TOKEN (PIPELAB_TOKENS) for an API, --sandbox (PIPELAB_SANDBOX) for a public playground, \
         or --allow-unauthenticated (PIPELAB_ALLOW_UNAUTHENTICATED) to accept the risk"
    )]
    Open(SocketAddr),
    /// `--doctor-listen` with `--sandbox`.
    #[error(
        "--doctor-listen {0} cannot run with --sandbox: it opens a raw Redis port, and a public sandbox must never hand one to strangers \
         (run pipelab doctor, or pipelab serve --doctor-listen, on your own machine)"
    )]
    DoctorInSandbox(SocketAddr),
    /// `--doctor-listen` on a public address without `--allow-unauthenticated`.
    #[error(
        "protected mode: refusing --doctor-listen {0}: a Redis port takes no token, and anyone who reaches it could read and delete \
         every key. Listen on 127.0.0.1, or pass --allow-unauthenticated (PIPELAB_ALLOW_UNAUTHENTICATED) to accept the risk"
    )]
    DoctorOpen(SocketAddr),
}

/// `Err` with the one line to print if `listen` is not a loopback address
/// and nothing protects it.
pub fn check(listen: SocketAddr, tokens: bool, sandbox: bool, allow_unauthenticated: bool) -> Result<(), Refused> {
    if listen.ip().is_loopback() || tokens || sandbox || allow_unauthenticated {
        return Ok(());
    }
    Err(Refused::Open(listen))
}

/// `Err` with the one line to print if `--doctor-listen ADDR` may not open:
/// never with `--sandbox` (a public page must not hand strangers a raw Redis
/// port), and on a non-loopback address only with `--allow-unauthenticated`
/// (a Redis port takes no token).
pub fn check_doctor(doctor: SocketAddr, sandbox: bool, allow_unauthenticated: bool) -> Result<(), Refused> {
    if sandbox {
        return Err(Refused::DoctorInSandbox(doctor));
    }
    if doctor.ip().is_loopback() || allow_unauthenticated {
        return Ok(());
    }
    Err(Refused::DoctorOpen(doctor))
}

#[cfg(test)]
mod tests {
    use super::{check, check_doctor};

    #[test]
    fn the_doctor_is_refused_in_the_sandbox_and_open_only_on_loopback() {
        let (public, local) = ("0.0.0.0:6380".parse().unwrap(), "127.0.0.1:6380".parse().unwrap());
        for allow in [false, true] {
            let msg = check_doctor(local, true, allow).unwrap_err().to_string();
            assert!(msg.contains("--doctor-listen") && msg.contains("--sandbox") && !msg.contains('\n'), "{msg}");
        }
        assert!(check_doctor(local, false, false).is_ok());
        assert!(check_doctor(public, false, false).unwrap_err().to_string().contains("--allow-unauthenticated"));
        assert!(check_doctor(public, false, true).is_ok());
    }

    #[test]
    fn only_an_open_public_address_is_refused() {
        let public = "0.0.0.0:8080".parse().unwrap();
        let msg = check(public, false, false, false).unwrap_err().to_string();
        assert!(msg.contains("--token") && msg.contains("--sandbox") && msg.contains("--allow-unauthenticated") && !msg.contains('\n'), "{msg}");
        assert!(check(public, true, false, false).is_ok());
        assert!(check(public, false, true, false).is_ok());
        assert!(check(public, false, false, true).is_ok());
        assert!(check("127.0.0.1:8080".parse().unwrap(), false, false, false).is_ok());
        assert!(check("[::1]:8080".parse().unwrap(), false, false, false).is_ok());
        assert!(check("[::]:8080".parse().unwrap(), false, false, false).is_err());
    }
}
