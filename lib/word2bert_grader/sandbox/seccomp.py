"""The sandbox's seccomp filter: a classic-BPF program for ``bwrap --seccomp``, built from system calls by name."""

import os
import struct

# Calls student code has no use for, that container escapes go through (modules, keys, mounts, namespaces, eBPF, ...),
# and per-user or machine-wide quotas (inotify, Linux AIO): a name and its numbers on x86_64 and aarch64 (-: none).
_TABLE = """
ptrace 101 117, pivot_root 155 41, mount 165 40, umount2 166 39, reboot 169 142, init_module 175 105,
delete_module 176 106, io_setup 206 0, kexec_load 246 104, add_key 248 217, request_key 249 218, keyctl 250 219,
inotify_init 253 -, unshare 272 97, inotify_init1 294 26, perf_event_open 298 241, name_to_handle_at 303 264,
open_by_handle_at 304 265, setns 308 268, process_vm_readv 310 270, process_vm_writev 311 271, finit_module 313 273,
kexec_file_load 320 294, bpf 321 280, userfaultfd 323 282, io_uring_setup 425 425, io_uring_enter 426 426,
io_uring_register 427 427, open_tree 428 428, move_mount 429 429, fsopen 430 430, fsconfig 431 431, fsmount 432 432,
fspick 433 433, mount_setattr 442 442
"""
# Where no cgroup counts the kernel's memory, the watchdog sees only RSS: memory held in socket buffers, memfds and
# System V IPC is in no process's RSS, so those calls fail too (pipes are capped per user, the scratch tmpfs by size).
_UNCOUNTED = "socket 41 198, socketpair 53 199, memfd_create 319 279, shmget 29 194, msgget 68 186, semget 64 190"
_SYSCALLS = {name: numbers for name, *numbers in (entry.split() for entry in _TABLE.replace("\n", " ").split(","))}
_ARCHITECTURES = {"x86_64": (0xC000003E, 0), "aarch64": (0xC00000B7, 1)}  # AUDIT_ARCH_*, column of _SYSCALLS
# socket() of a virtual machine's channel to its host (AF_VSOCK), which no network namespace isolates
_SOCKET, AF_VSOCK = (41, 198), 40


def seccomp_filter(uncounted: bool = False) -> bytes | None:
    """The BPF program failing the calls above (and _UNCOUNTED's) and AF_VSOCK sockets; other architectures die."""
    machine = os.uname().machine
    if machine not in _ARCHITECTURES:
        return None
    arch, column = _ARCHITECTURES[machine]
    table = [*_SYSCALLS.values(), *(entry.split()[1:] for entry in _UNCOUNTED.split(",") if uncounted)]
    numbers = sorted(int(nr[column]) for nr in table if nr[column] != "-")
    ld_w_abs, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny, kill = 0x7FFF0000, 0x00050000 | 1, 0x80000000  # ALLOW, ERRNO(EPERM), KILL_PROCESS
    program = [(ld_w_abs, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, kill), (ld_w_abs, 0, 0, 0)]
    if machine == "x86_64":
        program.append((jge, len(numbers) + 4, 0, 0x40000000))  # x32 system calls
    for i, nr in enumerate(numbers):
        program.append((jeq, len(numbers) - i + 3, 0, nr))
    # socket(): its first argument (the low word of args[0], at offset 16 of seccomp_data) is not AF_VSOCK
    program += [(jeq, 0, 2, _SOCKET[column]), (ld_w_abs, 0, 0, 16), (jeq, 1, 0, AF_VSOCK)]
    program += [(ret, 0, 0, allow), (ret, 0, 0, deny)]  # every jump above lands on `deny`
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
