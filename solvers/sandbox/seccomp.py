"""A seccomp-BPF filter built by hand (no libseccomp binding is needed) and installed with prctl via ctypes.

Policy: allow by default, deny what an OR program never needs and an attacker wants: tracing other processes,
mounting, namespaces, kernel modules, keyrings, BPF, perf, userfaultfd, io_uring, cross-process memory access, clock
changes, and IP/packet/netlink sockets (AF_UNIX stays: multiprocessing needs it). ``clone3`` answers ENOSYS so
glibc falls back to ``clone``, whose flags a classic BPF filter can inspect (namespace flags are denied).
x86_64 only; other architectures get no filter (and the isolation string says so).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
# x86_64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl)
DENIED = {
    "ptrace": 101, "syslog": 103, "personality": 135, "pivot_root": 155, "chroot": 161, "acct": 163,
    "settimeofday": 164, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
    "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176, "quotactl": 179, "clock_settime": 227,
    "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "perf_event_open": 298,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310,
    "process_vm_writev": 311, "finit_module": 313, "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323,
    "fsopen": 430, "fsmount": 432, "move_mount": 429, "open_tree": 428, "pidfd_getfd": 438,
    # io_uring runs its operations (openat, connect, socket ...) in the kernel, beyond this filter's reach;
    # the new mount API and kcmp complete the mount / cross-process sets above.
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "fsconfig": 431, "fspick": 433,
    "mount_setattr": 442, "kcmp": 312,
}
SYS_SOCKET, SYS_CLONE, SYS_CLONE3 = 41, 56, 435
DENIED_FAMILIES = (2, 10, 16, 17)  # AF_INET, AF_INET6, AF_NETLINK, AF_PACKET
CLONE_NS_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET

_LD_W_ABS, _JEQ, _JSET, _JGE, _RET = 0x20, 0x15, 0x45, 0x35, 0x06
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, SECCOMP_RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def build_filter() -> bytes:
    """The BPF program as bytes (8 bytes per instruction)."""
    deny = sorted(DENIED.values())
    prog: list[bytes] = []
    # arch check: anything not x86_64 (e.g. the 32-bit ABI) is killed; x32 numbers (>= 0x40000000) too.
    prog.append(_ins(_LD_W_ABS, 4))
    prog.append(_ins(_JEQ, AUDIT_ARCH_X86_64, 1, 0))
    prog.append(_ins(_RET, SECCOMP_RET_KILL_PROCESS))
    prog.append(_ins(_LD_W_ABS, 0))
    prog.append(_ins(_JGE, 0x40000000, 0, 1))
    prog.append(_ins(_RET, SECCOMP_RET_KILL_PROCESS))
    # n denied comparisons, then 3 special ones, then: [ALLOW][EPERM][ENOSYS][socket block][clone block]
    n = len(deny)
    tail_start = n + 3  # index (relative to first comparison) of the ALLOW instruction
    eperm, enosys, sock = tail_start + 1, tail_start + 2, tail_start + 3
    clone = sock + 1 + len(DENIED_FAMILIES) + 2  # the socket block: load, one jump per family, allow, deny
    for i, nr in enumerate(deny):
        prog.append(_ins(_JEQ, nr, eperm - i - 1, 0))
    i = n
    prog.append(_ins(_JEQ, SYS_CLONE3, enosys - i - 1, 0))
    i += 1
    prog.append(_ins(_JEQ, SYS_SOCKET, sock - i - 1, 0))
    i += 1
    prog.append(_ins(_JEQ, SYS_CLONE, clone - i - 1, 0))
    prog.append(_ins(_RET, SECCOMP_RET_ALLOW))
    prog.append(_ins(_RET, SECCOMP_RET_ERRNO | errno.EPERM))
    prog.append(_ins(_RET, SECCOMP_RET_ERRNO | errno.ENOSYS))
    # socket(family, ...): args[0] low word at offset 16
    prog.append(_ins(_LD_W_ABS, 16))
    for j, fam in enumerate(DENIED_FAMILIES):
        remaining = len(DENIED_FAMILIES) - j - 1
        prog.append(_ins(_JEQ, fam, remaining + 1, 0))
    prog.append(_ins(_RET, SECCOMP_RET_ALLOW))
    prog.append(_ins(_RET, SECCOMP_RET_ERRNO | errno.EACCES))
    # clone(flags, ...): deny namespace creation
    prog.append(_ins(_LD_W_ABS, 16))
    prog.append(_ins(_JSET, CLONE_NS_FLAGS, 1, 0))
    prog.append(_ins(_RET, SECCOMP_RET_ALLOW))
    prog.append(_ins(_RET, SECCOMP_RET_ERRNO | errno.EPERM))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() == "x86_64"


_prepared: dict[str, object] = {}


def prepare() -> None:
    """Build the filter and load libc once (in the warm worker), so each forked child only makes two prctl calls."""
    if not _prepared:
        code = build_filter()
        buf = ctypes.create_string_buffer(code, len(code))
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl  # noqa: B018 - resolved (and cached on the CDLL) here, not in every child
        _prepared.update(libc=libc, buf=buf, prog=_SockFprog(len(code) // 8, ctypes.addressof(buf)))


def install() -> None:
    """Install the filter on the calling (single-threaded) process. Raises OSError if the kernel refuses."""
    prepare()
    libc, prog = _prepared["libc"], _prepared["prog"]
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:  # type: ignore[attr-defined]
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(prog), 0, 0) != 0:  # type: ignore[attr-defined]
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
