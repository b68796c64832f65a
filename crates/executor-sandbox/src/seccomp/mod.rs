//! Compiles the seccomp policy ([`policy::RULES`]) into a classic BPF program.
//!
//! Layout: check the architecture (anything but x86_64 — i386 via `int 0x80`, for one —
//! kills the process), deny x32 system calls (`__X32_SYSCALL_BIT`), then one block per rule,
//! then allow. Written by hand (no dependency): the program is small and linear.

pub mod policy;

use policy::{Action, Rule, When, RULES};

const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;

// struct seccomp_data offsets.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const fn off_arg_low(arg: u8) -> u32 {
    16 + 8 * arg as u32
}

// BPF opcodes.
const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS (0x20)
const BPF_JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
const BPF_JSET_K: u16 = 0x05 | 0x40; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

fn ret_action(action: Action) -> libc::sock_filter {
    let errno = match action {
        Action::Eperm => libc::EPERM,
        Action::Enosys => libc::ENOSYS,
    };
    stmt(BPF_RET_K, SECCOMP_RET_ERRNO | (errno as u32 & 0xffff))
}

/// The body of a rule, run after its syscall number matched. Ends in a return.
fn rule_body(rule: &Rule) -> Vec<libc::sock_filter> {
    let allow = stmt(BPF_RET_K, SECCOMP_RET_ALLOW);
    match rule.when {
        When::Always => vec![ret_action(rule.action)],
        When::AnyBit { arg, mask } => vec![
            stmt(BPF_LD_W_ABS, off_arg_low(arg)),
            jump(BPF_JSET_K, mask, 0, 1),
            ret_action(rule.action),
            allow,
        ],
        When::OneOf { arg, values } => {
            // ld; (jeq v → deny)*; allow; deny
            let n = values.len();
            let mut out = vec![stmt(BPF_LD_W_ABS, off_arg_low(arg))];
            for (i, &v) in values.iter().enumerate() {
                // Distance to the deny at the end: remaining jeqs + the allow.
                out.push(jump(BPF_JEQ_K, v, (n - i) as u8, 0));
            }
            out.push(allow);
            out.push(ret_action(rule.action));
            out
        }
        When::NoneOf { arg, values } => {
            let n = values.len();
            let mut out = vec![stmt(BPF_LD_W_ABS, off_arg_low(arg))];
            for (i, &v) in values.iter().enumerate() {
                out.push(jump(BPF_JEQ_K, v, (n - i) as u8, 0));
            }
            out.push(ret_action(rule.action));
            out.push(allow);
            out
        }
    }
}

/// The BPF program for `rules`.
pub fn compile(rules: &[Rule]) -> Vec<libc::sock_filter> {
    let mut prog = vec![
        stmt(BPF_LD_W_ABS, OFF_ARCH),
        jump(BPF_JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        stmt(BPF_RET_K, SECCOMP_RET_KILL_PROCESS),
        stmt(BPF_LD_W_ABS, OFF_NR),
        jump(BPF_JGE_K, X32_SYSCALL_BIT, 0, 1),
        stmt(BPF_RET_K, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ];
    for rule in rules {
        let body = rule_body(rule);
        // The accumulator must hold the syscall number at each rule: bodies that load an
        // argument end in returns, so the fall-through path never sees a clobbered value.
        prog.push(jump(BPF_JEQ_K, rule.nr, 0, body.len() as u8));
        prog.extend(body);
    }
    prog.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
    prog
}

/// The program for the crate's policy.
pub fn default_filter() -> Vec<libc::sock_filter> {
    compile(RULES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_libc() {
        let known: &[(&str, libc::c_long)] = &[
            ("unshare", libc::SYS_unshare),
            ("setns", libc::SYS_setns),
            ("clone", libc::SYS_clone),
            ("clone3", libc::SYS_clone3),
            ("mount", libc::SYS_mount),
            ("umount2", libc::SYS_umount2),
            ("pivot_root", libc::SYS_pivot_root),
            ("ptrace", libc::SYS_ptrace),
            ("process_vm_readv", libc::SYS_process_vm_readv),
            ("process_vm_writev", libc::SYS_process_vm_writev),
            ("keyctl", libc::SYS_keyctl),
            ("add_key", libc::SYS_add_key),
            ("request_key", libc::SYS_request_key),
            ("bpf", libc::SYS_bpf),
            ("io_uring_setup", libc::SYS_io_uring_setup),
            ("io_uring_enter", libc::SYS_io_uring_enter),
            ("io_uring_register", libc::SYS_io_uring_register),
            ("userfaultfd", libc::SYS_userfaultfd),
            ("perf_event_open", libc::SYS_perf_event_open),
            ("kexec_load", libc::SYS_kexec_load),
            ("kexec_file_load", libc::SYS_kexec_file_load),
            ("init_module", libc::SYS_init_module),
            ("finit_module", libc::SYS_finit_module),
            ("delete_module", libc::SYS_delete_module),
            ("open_by_handle_at", libc::SYS_open_by_handle_at),
            ("name_to_handle_at", libc::SYS_name_to_handle_at),
            ("ioctl", libc::SYS_ioctl),
            ("acct", libc::SYS_acct),
            ("swapon", libc::SYS_swapon),
            ("swapoff", libc::SYS_swapoff),
            ("reboot", libc::SYS_reboot),
            ("settimeofday", libc::SYS_settimeofday),
            ("clock_settime", libc::SYS_clock_settime),
            ("clock_adjtime", libc::SYS_clock_adjtime),
            ("adjtimex", libc::SYS_adjtimex),
            ("syslog", libc::SYS_syslog),
            ("quotactl", libc::SYS_quotactl),
            ("fanotify_init", libc::SYS_fanotify_init),
            ("lookup_dcookie", libc::SYS_lookup_dcookie),
            ("personality", libc::SYS_personality),
            ("mount_setattr", libc::SYS_mount_setattr),
            ("fsopen", libc::SYS_fsopen),
            ("fsmount", libc::SYS_fsmount),
            ("fsconfig", libc::SYS_fsconfig),
            ("fspick", libc::SYS_fspick),
            ("move_mount", libc::SYS_move_mount),
            ("open_tree", libc::SYS_open_tree),
            ("pidfd_getfd", libc::SYS_pidfd_getfd),
            ("kcmp", libc::SYS_kcmp),
            ("chroot", libc::SYS_chroot),
            ("sethostname", libc::SYS_sethostname),
            ("setdomainname", libc::SYS_setdomainname),
            ("iopl", libc::SYS_iopl),
            ("ioperm", libc::SYS_ioperm),
            ("uselib", libc::SYS_uselib),
            ("vhangup", libc::SYS_vhangup),
            ("_sysctl", libc::SYS__sysctl),
            ("process_madvise", libc::SYS_process_madvise),
            ("quotactl_fd", libc::SYS_quotactl_fd),
        ];
        for (name, nr) in known {
            let rule = RULES
                .iter()
                .find(|r| r.name == *name)
                .unwrap_or_else(|| panic!("{name} missing from the policy"));
            assert_eq!(i64::from(rule.nr), *nr, "{name}");
        }
    }

    #[test]
    fn no_duplicates_and_fits_jump_offsets() {
        let mut nrs: Vec<u32> = RULES.iter().map(|r| r.nr).collect();
        nrs.sort_unstable();
        let before = nrs.len();
        nrs.dedup();
        assert_eq!(before, nrs.len());
        assert!(default_filter().len() < 4096);
    }
}
