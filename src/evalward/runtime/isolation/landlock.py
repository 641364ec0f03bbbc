"""Each program a run starts as an agent user, in a Landlock domain of its own (Linux 5.19+).

Programs of one side run as the same user, and the kernel lets a user trace its own
processes: without more, a pull request's agent could open its playground service's
`/proc/<pid>/mem` and rewrite the state the service reports, or read its environment. A
process in a Landlock domain may trace, read the memory of, or (ABI 6+) signal only processes
of its own domain and the domains below it: each program started in a domain of its own
reaches none of the others, while evalward (in none) still reaches them all. The domain
takes away no file access (it allows moving files between folders everywhere, which a domain
would otherwise refuse); where the kernel has signal scoping, signals are scoped too. Entering
it needs `no_new_privs`: a set-user-ID program the agent runs gains no privilege.

Where the kernel has no Landlock (or only its first ABI), `available` is 0 and programs start
as before; the job's log says so (`statement`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
from collections.abc import Callable

NOT_ENTERED = "it could not enter a Landlock domain of its own"
"""Why a program did not start whose child could not enter its domain (`confinement`: the
child's error is not told, only that its `preexec_fn` failed)."""
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
"""The system calls' numbers, one table for every architecture since Linux 5.13."""
_VERSION = 1 << 0
"""landlock_create_ruleset's flag that asks for the ABI version."""
_REFER = 1 << 13
"""LANDLOCK_ACCESS_FS_REFER (ABI 2): a domain denies moving a file to another folder unless
it handles this right and allows it there, so it is handled, and allowed beneath `/`."""
_PATH_BENEATH = 1
"""LANDLOCK_RULE_PATH_BENEATH."""
_SCOPE_SIGNAL = 1 << 1
"""LANDLOCK_SCOPE_SIGNAL (ABI 6)."""
_NO_NEW_PRIVS = 38
"""PR_SET_NO_NEW_PRIVS: an unprivileged process enters a domain only with it set."""


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@functools.cache
def available() -> int:
    """The kernel's Landlock ABI version, or 0 where it has none, has turned it off, or has
    only the first (whose domains refuse every move of a file to another folder)."""
    try:
        version = int(_libc().syscall(_CREATE_RULESET, None, 0, _VERSION))
    except (OSError, AttributeError):
        return 0
    return version if version >= 2 else 0


def statement() -> str:
    """What holds between a run's programs, for the job's log."""
    abi = available()
    if not abi or confinement() is None:
        why = "no Landlock (ABI 2 or later) in this kernel" if not abi else "no Landlock domain"
        return (
            f"evalward: {why}: programs of one side's agent user can read each other's "
            "environment and command line (a playground service's among them), and trace "
            "each other where the machine's Yama does not forbid it"
        )
    signals = " or signal" if abi >= 6 else ""
    return (
        f"evalward: each program of an agent user runs in a Landlock domain of its own (ABI "
        f"{abi}): it cannot trace, read the memory of{signals} another"
    )


@functools.cache
def confinement() -> Callable[[], None] | None:
    """What a child runs between switching user and exec to enter a domain of its own (as
    `preexec_fn`), or None where the kernel has no Landlock. The ruleset is made here, once,
    in the parent (its descriptor is the child's until exec): the child makes only two
    system calls, and each call makes a domain of its own."""
    abi = available()
    if not abi:
        return None
    libc = _libc()
    scoped = _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", _REFER, 0, scoped) if abi >= 6 else struct.pack("=Q", _REFER)
    ruleset = int(libc.syscall(_CREATE_RULESET, attr, ctypes.c_size_t(len(attr)), 0))
    if ruleset < 0:
        return None
    try:
        root = os.open("/", os.O_PATH | os.O_CLOEXEC)
        try:
            rule = struct.pack("=Qi", _REFER, root)
            added = libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, rule, 0) == 0
        finally:
            os.close(root)
    except OSError:
        added = False
    if not added:
        os.close(ruleset)
        return None

    def enter() -> None:
        if libc.prctl(_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")

    return enter
