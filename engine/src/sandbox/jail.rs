//! The jail every sandbox child runs in: a redis-server that a visitor has
//! taken over (a Redis or Lua bug) reaches nothing but its own directory.
//!
//! - Landlock: read and write in the child's own directory only (its socket,
//!   log and RDB files); read and execute of the system's programs and
//!   libraries (`/usr`, `/lib*`, `/bin`, `/sbin`) and of the redis-server
//!   binary (and read of its installation's `lib`); a few files Redis reads (`/etc/ld.so.cache`, `/etc/localtime`,
//!   its own `/proc/<pid>`, the THP and clock files under `/sys`, `/dev/null`,
//!   `/dev/urandom`). From ABI 4 no TCP bind or connect, from ABI 6 no signal
//!   to a process outside the jail and no abstract Unix socket outside it.
//!   Landlock also keeps ptrace and `/proc/<pid>/mem` of other processes out.
//! - seccomp: no `connect` at all, no socket but `AF_UNIX` (so no TCP or UDP),
//!   no `sendto` with an address, no `sendmsg`, no ptrace or
//!   `process_vm_readv`, no `io_uring` (it would go around this filter), no
//!   new namespaces, no mount, BPF, keyring or module calls; x32 system
//!   calls are refused (they would go around it too).
//! - `no_new_privs`: no setuid program gains anything.
//!
//! Everything is built before the fork (`Jail::prepare`): between fork and
//! exec only raw system calls run (the process may have other threads).
//! Every start of a child takes its jail as an argument (never a
//! thread's or a global setting): a child started from any thread or task
//! is confined the same, and after the fork pipelab checks in
//! `/proc/<pid>/status` that the filter and `no_new_privs` are in force.
//! Which mechanisms work is probed once ([`Jail::probe`]); without any,
//! the sandbox does not start unless told to run its children unjailed.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What confines the sandbox's children.
pub struct Jail {
    /// The Landlock ABI the children are restricted with; 0: none.
    pub landlock_abi: u8,
    /// Whether the seccomp filter is installed.
    pub seccomp: bool,
    /// Whether the children run with `no_new_privs`.
    pub no_new_privs: bool,
    #[cfg(target_os = "linux")]
    imp: linux::Prepared,
}

impl std::fmt::Debug for Jail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jail").field("landlock_abi", &self.landlock_abi).field("seccomp", &self.seccomp).field("no_new_privs", &self.no_new_privs).finish()
    }
}

/// Why the sandbox has no jail for its children.
#[derive(Debug, thiserror::Error)]
#[error("the sandbox cannot jail its children on this machine ({why}): pass --sandbox-unjailed (PIPELAB_SANDBOX_UNJAILED=1) to run every visitor's redis-server without a jail")]
pub struct NoJail {
    pub why: String,
}

impl Jail {
    /// No jail: the children run as pipelab's user with their limits only
    /// (`--sandbox-unjailed`).
    pub fn none() -> Jail {
        Jail {
            landlock_abi: 0,
            seccomp: false,
            no_new_privs: false,
            #[cfg(target_os = "linux")]
            imp: linux::Prepared::default(),
        }
    }

    /// Every mechanism this kernel offers, for children started from `bin`
    /// (a name looked up in PATH, or a path). Errors: none works.
    pub fn probe(bin: &str) -> Result<Jail, NoJail> {
        #[cfg(target_os = "linux")]
        {
            let (imp, landlock_abi, seccomp, why) = linux::Prepared::probe(bin);
            if landlock_abi == 0 && !seccomp {
                return Err(NoJail { why });
            }
            Ok(Jail { landlock_abi, seccomp, no_new_privs: true, imp })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = bin;
            Err(NoJail { why: "Landlock and seccomp are Linux's".into() })
        }
    }

    /// The jail `settings` ask for: none with `unjailed`, else the probed one.
    pub fn for_settings(settings: &super::Settings) -> Result<Jail, NoJail> {
        if settings.unjailed {
            return Ok(Jail::none());
        }
        Jail::probe(&settings.redis_server)
    }

    /// Whether anything confines the children.
    pub fn is_jailed(&self) -> bool {
        self.landlock_abi > 0 || self.seccomp
    }

    /// What is in force, for the start-up line and `/api/v1/info`:
    /// `landlock abi 7 + seccomp + no_new_privs`, with what is missing said.
    pub fn describe(&self) -> String {
        if !self.is_jailed() {
            return "none: visitors' redis-servers are not jailed (--sandbox-unjailed)".into();
        }
        let mut parts = Vec::new();
        match self.landlock_abi {
            0 => parts.push("no landlock (a child can read and write pipelab's other files and other children's)".to_string()),
            abi @ 1..=3 => parts.push(format!("landlock abi {abi} (files only: no TCP rule nor signal scope)")),
            abi @ 4..=5 => parts.push(format!("landlock abi {abi} (no signal scope)")),
            abi => parts.push(format!("landlock abi {abi}")),
        }
        parts.push(if self.seccomp { "seccomp".into() } else { "no seccomp (a child can connect to Unix sockets and use UDP)".into() });
        if self.no_new_privs {
            parts.push("no_new_privs".into());
        }
        parts.join(" + ")
    }

    /// Whether process `pid` (a child just started in this jail, past its
    /// exec) is under the filter and `no_new_privs`, as its
    /// `/proc/<pid>/status` says. Landlock leaves no mark there.
    pub(crate) fn check(&self, pid: u32) -> io::Result<()> {
        if !self.is_jailed() {
            return Ok(());
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).map(str::trim).unwrap_or("");
        if self.seccomp && field("Seccomp") != "2" {
            return Err(io::Error::other(format!("the child runs without its seccomp filter (Seccomp: {:?})", field("Seccomp"))));
        }
        if self.no_new_privs && field("NoNewPrivs") != "1" {
            return Err(io::Error::other(format!("the child runs without no_new_privs (NoNewPrivs: {:?})", field("NoNewPrivs"))));
        }
        Ok(())
    }

    /// Builds the confinement of a child whose private directory is `dir`,
    /// before the fork: the Landlock ruleset (a file descriptor with its
    /// rules) and the compiled filters. Drop the result after the spawn.
    pub(crate) fn prepare(self: &Arc<Jail>, dir: &Path) -> io::Result<Confinement> {
        #[cfg(target_os = "linux")]
        {
            let ruleset = if self.landlock_abi > 0 { Some(self.imp.ruleset(dir)?) } else { None };
            Ok(Confinement { ruleset, jail: self.clone() })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = dir;
            Ok(Confinement { ruleset: None, jail: self.clone() })
        }
    }
}

/// One child's confinement, ready to enter between fork and exec.
pub(crate) struct Confinement {
    ruleset: Option<OwnedFd>,
    jail: Arc<Jail>,
}

impl Confinement {
    /// What the child calls between fork and exec, after its limits:
    /// `no_new_privs`, Landlock, then the seccomp filters (last, so that the
    /// calls before them are not filtered).
    pub(crate) fn entry(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        use std::os::fd::AsRawFd;
        let ruleset = self.ruleset.as_ref().map_or(-1, |fd| fd.as_raw_fd());
        let jail = self.jail.clone();
        move || {
            if !jail.is_jailed() {
                return Ok(());
            }
            #[cfg(target_os = "linux")]
            // SAFETY: raw system calls on this process with memory prepared before the fork.
            unsafe {
                linux::enter(&jail, ruleset)?;
            }
            Ok(())
        }
    }
}

/// The redis-server binary `bin` names: itself if it has a `/`, else the
/// first executable of that name in PATH; symbolic links resolved.
pub fn resolve(bin: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let found = if bin.contains('/') {
        Some(PathBuf::from(bin))
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(bin)).find(|p| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
    };
    found?.canonicalize().ok()
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;
    use std::io;
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use landlock::{Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI};
    use seccompiler::{BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond, SeccompFilter, SeccompRule, TargetArch};

    /// Why the seccomp programs could not be built.
    #[derive(Debug, thiserror::Error)]
    enum FilterError {
        #[error("not in this kernel ({0})")]
        NotInKernel(io::Error),
        #[error("{0}")]
        Backend(#[from] seccompiler::BackendError),
    }

    /// The Landlock ABI the rules are written for (and tested with); a
    /// newer kernel gets these, an older one what it knows of them.
    const ABI_TARGET: ABI = ABI::V7;

    /// What the jail holds, opened and compiled once.
    #[derive(Default)]
    pub(super) struct Prepared {
        /// The ABI in force (`landlock_create_ruleset`'s answer, at most [`ABI_TARGET`]).
        abi: u8,
        /// The paths a child may read (and execute), opened once.
        read: Vec<(PathFd, BitFlags<AccessFs>)>,
        /// The access a child gets to its own `/proc/<pid>` (added between
        /// fork and exec, when its pid is known).
        proc_self: u64,
        /// The seccomp programs, installed in this order.
        filters: Vec<BpfProgram>,
    }

    impl Prepared {
        /// Probes Landlock and seccomp. Returns what works and, when
        /// something does not, why.
        pub(super) fn probe(bin: &str) -> (Prepared, u8, bool, String) {
            let mut why = Vec::new();
            // SAFETY: the version query takes no attribute.
            let abi = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
            let abi = if abi < 0 {
                why.push(format!("Landlock: {}", io::Error::last_os_error()));
                0
            } else {
                abi.min(ABI_TARGET as i64) as u8
            };
            let filters = match filters(abi) {
                Ok(f) => f,
                Err(e) => {
                    why.push(format!("seccomp: {e}"));
                    Vec::new()
                }
            };
            let mut me = Prepared { abi, read: Vec::new(), proc_self: 0, filters };
            if abi > 0 {
                let level = abi_of(abi);
                let read = AccessFs::from_read(level);
                let file = |a: BitFlags<AccessFs>| a & AccessFs::from_file(level);
                let rx = [AccessFs::ReadFile, AccessFs::Execute].into_iter().collect::<BitFlags<AccessFs>>();
                let r = BitFlags::from(AccessFs::ReadFile);
                let mut paths: Vec<(std::path::PathBuf, BitFlags<AccessFs>)> = ["/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin"].iter().map(|p| (p.into(), read)).collect();
                paths.extend(["/etc/ld.so.cache", "/etc/localtime", "/etc/locale.alias", "/etc/ssl/openssl.cnf", "/proc/sys/vm/overcommit_memory", "/proc/sys/net/core/somaxconn", "/dev/urandom", "/dev/random"].iter().map(|p| (p.into(), r)));
                paths.extend(["/sys/kernel/mm/transparent_hugepage", "/sys/devices/system/clocksource", "/sys/devices/system/cpu"].iter().map(|p| (p.into(), read & !AccessFs::Execute)));
                paths.push(("/dev/null".into(), r | AccessFs::WriteFile));
                if let Some(bin) = super::resolve(bin) {
                    // A build run from its own tree finds its libraries there
                    // (a run path of `$ORIGIN/../lib`, as Redict's): read only.
                    if let Some(lib) = bin.parent().and_then(Path::parent).map(|prefix| prefix.join("lib")).filter(|lib| lib.is_dir()) {
                        paths.push((lib, read & !AccessFs::Execute));
                    }
                    paths.push((bin, rx));
                }
                for (path, access) in paths {
                    // A path this machine lacks is a path Redis does not read there.
                    let Ok(fd) = PathFd::new(&path) else { continue };
                    let is_dir = std::fs::metadata(&path).is_ok_and(|m| m.is_dir());
                    me.read.push((fd, if is_dir { access } else { file(access) }));
                }
                me.proc_self = (AccessFs::ReadFile | AccessFs::ReadDir).bits();
            }
            let seccomp = !me.filters.is_empty();
            (me, abi, seccomp, why.join("; "))
        }

        /// A child's ruleset: the shared reads and its own directory.
        pub(super) fn ruleset(&self, dir: &Path) -> io::Result<OwnedFd> {
            let level = abi_of(self.abi);
            let own = AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::WriteFile | AccessFs::RemoveFile | AccessFs::MakeReg | AccessFs::MakeSock;
            let own = own | (AccessFs::from_all(level) & AccessFs::Truncate);
            let err = |e: landlock::RulesetError| io::Error::other(format!("landlock: {e}"));
            let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(level)).map_err(err)?;
            if self.abi >= 4 {
                ruleset = ruleset.handle_access(AccessNet::from_all(level)).map_err(err)?;
            }
            if self.abi >= 6 {
                ruleset = ruleset.scope(Scope::from_all(level)).map_err(err)?;
            }
            let mut created = ruleset.create().map_err(err)?;
            for (fd, access) in &self.read {
                created = created.add_rule(PathBeneath::new(fd, *access)).map_err(err)?;
            }
            let own_dir = PathFd::new(dir).map_err(|e| io::Error::other(format!("landlock: {e}")))?;
            created = created.add_rule(PathBeneath::new(own_dir, own)).map_err(err)?;
            Option::<OwnedFd>::from(created).ok_or_else(|| io::Error::other("landlock: no ruleset was created"))
        }
    }

    fn abi_of(abi: u8) -> ABI {
        match abi {
            0 => ABI::Unsupported,
            1 => ABI::V1,
            2 => ABI::V2,
            3 => ABI::V3,
            4 => ABI::V4,
            5 => ABI::V5,
            6 => ABI::V6,
            _ => ABI::V7,
        }
    }

    /// The seccomp programs: the system calls refused (`EPERM`), then the
    /// ones answered `ENOSYS` so that the C library falls back (`clone3`,
    /// whose flags a filter cannot read) and, on x86-64, the x32 calls.
    fn filters(landlock_abi: u8) -> Result<Vec<BpfProgram>, FilterError> {
        // SAFETY: reads this process's seccomp mode.
        if unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } < 0 {
            return Err(FilterError::NotInKernel(io::Error::last_os_error()));
        }
        let arch = TargetArch::try_from(std::env::consts::ARCH)?;
        let cond = |arg, len, op, val| Cond::new(arg, len, op, val);
        let rule = |conds: Vec<Cond>| SeccompRule::new(conds);
        let mut deny: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        let always = [
            libc::SYS_connect,
            libc::SYS_sendmsg,
            libc::SYS_sendmmsg,
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_process_vm_writev,
            libc::SYS_kcmp,
            libc::SYS_pidfd_getfd,
            libc::SYS_pidfd_send_signal,
            libc::SYS_rt_sigqueueinfo,
            libc::SYS_rt_tgsigqueueinfo,
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
            libc::SYS_bpf,
            libc::SYS_perf_event_open,
            libc::SYS_userfaultfd,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_chroot,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_open_tree,
            libc::SYS_move_mount,
            libc::SYS_fsopen,
            libc::SYS_fsconfig,
            libc::SYS_fsmount,
            libc::SYS_fspick,
            libc::SYS_mount_setattr,
            libc::SYS_open_by_handle_at,
            libc::SYS_name_to_handle_at,
            libc::SYS_fanotify_init,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_kexec_load,
            libc::SYS_kexec_file_load,
            libc::SYS_reboot,
            libc::SYS_swapon,
            libc::SYS_swapoff,
            libc::SYS_acct,
            libc::SYS_quotactl,
            libc::SYS_syslog,
            libc::SYS_vhangup,
        ];
        for nr in always {
            deny.insert(nr, Vec::new());
        }
        #[cfg(target_arch = "x86_64")]
        for nr in [libc::SYS_iopl, libc::SYS_ioperm, libc::SYS_uselib] {
            deny.insert(nr, Vec::new());
        }
        // Sockets of one family only: a Unix socket of its own to listen on.
        deny.insert(libc::SYS_socket, vec![rule(vec![cond(0, Len::Dword, Op::Ne, libc::AF_UNIX as u64)?])?]);
        deny.insert(libc::SYS_socketpair, vec![rule(vec![cond(0, Len::Dword, Op::Ne, libc::AF_UNIX as u64)?])?]);
        // pipelab raises the file-size limit only while it saves: the child
        // may read its limits (glibc's getrlimit is prlimit64 without a new
        // limit), never set them.
        deny.insert(libc::SYS_setrlimit, Vec::new());
        deny.insert(libc::SYS_prlimit64, vec![rule(vec![cond(2, Len::Qword, Op::Ne, 0)?])?]);
        // A datagram to an address is a connect by another name.
        deny.insert(libc::SYS_sendto, vec![rule(vec![cond(4, Len::Qword, Op::Ne, 0)?])?]);
        let namespaces = [libc::CLONE_NEWNS, libc::CLONE_NEWCGROUP, libc::CLONE_NEWUTS, libc::CLONE_NEWIPC, libc::CLONE_NEWUSER, libc::CLONE_NEWPID, libc::CLONE_NEWNET];
        deny.insert(libc::SYS_clone, namespaces.iter().map(|&f| rule(vec![cond(0, Len::Qword, Op::MaskedEq(f as u64), f as u64)?])).collect::<Result<_, _>>()?);
        if landlock_abi < 6 {
            // Landlock's signal scope is missing: only the child's own process group.
            deny.insert(libc::SYS_kill, vec![rule(vec![cond(0, Len::Dword, Op::Ne, 0)?])?]);
            deny.insert(libc::SYS_tkill, Vec::new());
            deny.insert(libc::SYS_tgkill, Vec::new());
        }
        let main = SeccompFilter::new(deny, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?;
        let nosys = SeccompFilter::new(BTreeMap::from([(libc::SYS_clone3, Vec::new())]), SeccompAction::Allow, SeccompAction::Errno(libc::ENOSYS as u32), arch)?;
        let main: BpfProgram = main.try_into()?;
        let mut nosys: BpfProgram = nosys.try_into()?;
        if arch == TargetArch::x86_64 {
            // x32 calls (numbers with bit 30 set) share x86-64's audit arch:
            // refused ahead of the arch check, which kills any other arch.
            const X32: u32 = 0x4000_0000;
            let guard = [
                seccompiler::sock_filter { code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, jt: 0, jf: 0, k: 0 },
                seccompiler::sock_filter { code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16, jt: 0, jf: 1, k: X32 },
                seccompiler::sock_filter { code: (libc::BPF_RET | libc::BPF_K) as u16, jt: 0, jf: 0, k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32 },
            ];
            nosys.splice(0..0, guard);
        }
        Ok(vec![main, nosys])
    }

    /// Between fork and exec: `no_new_privs`, the child's own `/proc/<pid>`
    /// added to its ruleset, Landlock, the filters. Raw system calls only.
    ///
    /// # Safety
    /// Only between fork and exec, with `ruleset` the fd of [`Prepared::ruleset`] or -1.
    pub(super) unsafe fn enter(jail: &super::Jail, ruleset: i32) -> io::Result<()> {
        let fail = || Err(io::Error::last_os_error());
        if jail.no_new_privs && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return fail();
        }
        if ruleset >= 0 {
            #[repr(C, packed)]
            struct PathBeneathAttr {
                allowed_access: u64,
                parent_fd: i32,
            }
            // Its pid is known only now; without /proc it has none to read.
            let proc_self = libc::open(c"/proc/self".as_ptr(), libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY);
            if proc_self >= 0 {
                let attr = PathBeneathAttr { allowed_access: jail.imp.proc_self, parent_fd: proc_self };
                let added = libc::syscall(libc::SYS_landlock_add_rule, ruleset, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &attr as *const PathBeneathAttr, 0u32);
                libc::close(proc_self);
                if added != 0 {
                    return fail();
                }
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
                return fail();
            }
        }
        for prog in &jail.imp.filters {
            let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut libc::sock_filter };
            if libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0u32, &fprog as *const libc::sock_fprog) != 0 {
                return fail();
            }
        }
        Ok(())
    }
}
