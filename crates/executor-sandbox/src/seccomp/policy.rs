//! The seccomp policy as data: which system calls the program may not make, and what it gets
//! instead. Everything not listed is allowed (the namespaces, the missing capabilities and
//! the cgroups do the confining; this list closes kernel attack surface that stays reachable
//! for an unprivileged process, and calls that make no sense in a sandbox).
//!
//! Numbers are x86_64; a unit test checks them against `libc::SYS_*` where libc knows them.

/// What a denied call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Fail with `EPERM`.
    Eperm,
    /// Fail with `ENOSYS`, as if the kernel were older (libc then falls back, e.g. clone3 → clone).
    Enosys,
}

/// When a rule applies, looking at one argument (low 32 bits) of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// The argument has any of these bits set.
    AnyBit {
        arg: u8,
        mask: u32,
    },
    /// The argument equals one of these values.
    OneOf {
        arg: u8,
        values: &'static [u32],
    },
    /// The argument equals none of these values.
    NoneOf {
        arg: u8,
        values: &'static [u32],
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub name: &'static str,
    pub nr: u32,
    pub when: When,
    pub action: Action,
}

const fn deny(name: &'static str, nr: u32) -> Rule {
    Rule {
        name,
        nr,
        when: When::Always,
        action: Action::Eperm,
    }
}

const fn nosys(name: &'static str, nr: u32) -> Rule {
    Rule {
        name,
        nr,
        when: When::Always,
        action: Action::Enosys,
    }
}

/// All `CLONE_NEW*` flags (`CLONE_NEWTIME` included).
pub const CLONE_NEW_MASK: u32 = 0x0002_0000 // NEWNS
    | 0x0200_0000 // NEWCGROUP
    | 0x0400_0000 // NEWUTS
    | 0x0800_0000 // NEWIPC
    | 0x1000_0000 // NEWUSER
    | 0x2000_0000 // NEWPID
    | 0x4000_0000 // NEWNET
    | 0x0000_0080; // NEWTIME

const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541C;
/// personality(2) values that change nothing: PER_LINUX and the query value.
const PERSONALITY_OK: &[u32] = &[0, 0xffff_ffff];

/// The policy. Reviewed as a table; the order does not matter.
pub const RULES: &[Rule] = &[
    // New namespaces and joining others.
    deny("unshare", 272),
    deny("setns", 308),
    Rule {
        name: "clone",
        nr: 56,
        when: When::AnyBit {
            arg: 0,
            mask: CLONE_NEW_MASK,
        },
        action: Action::Eperm,
    },
    // clone3 passes flags in memory, which seccomp cannot inspect: pretend it does not exist
    // so libc falls back to clone, whose flags are checked above.
    nosys("clone3", 435),
    // Mounts and roots.
    deny("mount", 165),
    deny("umount2", 166),
    deny("pivot_root", 155),
    deny("chroot", 161),
    nosys("open_tree", 428),
    nosys("move_mount", 429),
    nosys("fsopen", 430),
    nosys("fsconfig", 431),
    nosys("fsmount", 432),
    nosys("fspick", 433),
    nosys("mount_setattr", 442),
    nosys("statmount", 457),
    nosys("listmount", 458),
    nosys("open_tree_attr", 467),
    // Other processes' memory and descriptors.
    deny("ptrace", 101),
    deny("process_vm_readv", 310),
    deny("process_vm_writev", 311),
    deny("process_madvise", 440),
    deny("pidfd_getfd", 438),
    deny("kcmp", 312),
    // Kernel keyrings.
    deny("keyctl", 250),
    deny("add_key", 248),
    deny("request_key", 249),
    // Large kernel attack surface, not needed by programs we run.
    deny("bpf", 321),
    nosys("io_uring_setup", 425),
    nosys("io_uring_enter", 426),
    nosys("io_uring_register", 427),
    deny("userfaultfd", 323),
    deny("perf_event_open", 298),
    deny("fanotify_init", 300),
    deny("lookup_dcookie", 212),
    deny("name_to_handle_at", 303),
    deny("open_by_handle_at", 304),
    // Terminal injection.
    Rule {
        name: "ioctl",
        nr: 16,
        when: When::OneOf {
            arg: 1,
            values: &[TIOCSTI, TIOCLINUX],
        },
        action: Action::Eperm,
    },
    // Execution domains (e.g. READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE).
    Rule {
        name: "personality",
        nr: 135,
        when: When::NoneOf {
            arg: 0,
            values: PERSONALITY_OK,
        },
        action: Action::Eperm,
    },
    // Host administration.
    deny("kexec_load", 246),
    deny("kexec_file_load", 320),
    deny("init_module", 175),
    deny("finit_module", 313),
    deny("delete_module", 176),
    deny("acct", 163),
    deny("swapon", 167),
    deny("swapoff", 168),
    deny("reboot", 169),
    deny("settimeofday", 164),
    deny("clock_settime", 227),
    deny("clock_adjtime", 305),
    deny("adjtimex", 159),
    deny("syslog", 103),
    deny("quotactl", 179),
    deny("quotactl_fd", 443),
    deny("sethostname", 170),
    deny("setdomainname", 171),
    deny("iopl", 172),
    deny("ioperm", 173),
    deny("uselib", 134),
    deny("vhangup", 153),
    deny("nfsservctl", 180),
    deny("_sysctl", 156),
];
