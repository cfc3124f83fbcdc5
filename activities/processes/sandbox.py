"""The bubblewrap backend: what a sandboxed command may see, and the ``bwrap`` argv that grants it.

A ``SandboxGrant`` is the boundary as data: the paths bound into the sandbox and their modes, the
paths hidden, whether the network is shared, the user, and the resource limits. It is built from
the deployment's settings and the tool's roots each time a command is resolved (for the preview
and again before running), shown to the approver, and compared as part of the call's
precondition, so a sandbox that changed between approval and run fails ``precondition_failed``.

``bwrap_argv`` turns a grant into ``bwrap --die-with-parent --unshare-all ... -- prlimit ... --
ARGV``: new user, PID, mount, IPC, UTS, cgroup and network namespaces (the network shared only
when granted), a read-only system, a fresh ``/tmp``, a private ``/proc`` and ``/dev``, every
capability dropped and ``PR_SET_NO_NEW_PRIVS`` (bwrap sets it always), so a set-user-ID program
runs with the caller's identity. ``--new-session`` is left out on purpose: the command starts with
no controlling terminal (the runner starts a new session), and staying in the runner's process
group is what lets a timeout or a cancellation SIGTERM the command and then kill the sandbox's
init, which takes the whole PID namespace with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""The read-only system a command sees; the ones this host lacks are left out."""
HIDDEN_PATHS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/sudoers",
    "/etc/sudoers.d",
)
"""Secrets under the system paths a command sees empty, unless the deployment says otherwise."""
DEFAULT_CPU_SECONDS = 300
DEFAULT_MEMORY_BYTES = 4 * 1024**3
DEFAULT_FILE_SIZE_BYTES = 1024**3
SANDBOX_FAILED = "the sandbox cannot start"


class Backend(StrEnum):
    """Where a family's commands run."""

    HOST = "host"
    BUBBLEWRAP = "bubblewrap"


class Mount(BaseModel):
    """One path the sandbox shows: bound read-only or read-write, or a link as on the host."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    mode: Literal["ro", "rw", "link"]
    target: str | None = None
    """A link's target (``usr/bin`` for ``/bin`` on a merged-/usr system)."""


class Limits(BaseModel):
    """Resource limits set with ``prlimit`` before the command runs; ``None`` is unlimited."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_seconds: int | None
    memory_bytes: int | None
    """Address space (``RLIMIT_AS``)."""
    processes: int | None
    """``RLIMIT_NPROC``: counted per user across the host, so meaningful with a dedicated user."""
    file_size_bytes: int | None

    def options(self) -> list[str]:
        """``prlimit``'s options, soft and hard limit alike."""
        pairs = (
            ("--cpu", self.cpu_seconds),
            ("--as", self.memory_bytes),
            ("--nproc", self.processes),
            ("--fsize", self.file_size_bytes),
        )
        return [f"{option}={value}:{value}" for option, value in pairs if value is not None]


class User(BaseModel):
    """The host user bwrap (and so the command) runs as."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    uid: int
    gid: int


class SandboxGrant(BaseModel):
    """Everything a sandboxed command is granted: compared again before it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bwrap: str
    """The real path of the bwrap executable."""
    mounts: list[Mount]
    hidden: list[str]
    """Paths inside the mounts the command sees empty (a file as ``/dev/null``, a directory as an
    empty tmpfs)."""
    network: bool
    user: User | None
    """``None``: the worker's own user (inside a user namespace, with no capabilities)."""
    prlimit: str | None
    limits: Limits

    def digest(self) -> str:
        """A short fingerprint of the grant, to name it in a preview and in an audit."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()
        return "sha256:" + hashlib.sha256(canonical).hexdigest()[:16]

    def visible(self, path: str) -> bool:
        """Whether ``path`` (links resolved on the host) lies inside a bound path."""
        return any(
            mount.mode != "link" and _inside(path, mount.path) for mount in self.mounts
        ) and not any(_inside(path, hidden) for hidden in self.hidden)

    def writable(self, path: str) -> bool:
        return any(mount.mode == "rw" and _inside(path, mount.path) for mount in self.mounts)

    def lines(self) -> list[str]:
        """The grant as an approver reads it."""
        user = (
            f"{self.user.name} ({self.user.uid}:{self.user.gid})"
            if self.user
            else "the worker's own, without capabilities"
        )
        lines = [
            f"sandbox: bubblewrap ({self.bwrap}): own user, PID, mount, IPC, UTS and cgroup "
            "namespaces; no capabilities; no new privileges (set-user-ID does nothing)",
            f"network: {'SHARED with the host (can reach anything the worker can)' if self.network else 'none (an empty network namespace)'}",  # noqa: E501
            f"user:    {user}",
            "paths:   everything else is absent; /tmp is empty and private; /proc and /dev "
            "are the sandbox's own",
        ]
        for mount in self.mounts:
            if mount.mode == "link":
                lines.append(f"  link {mount.path} -> {mount.target}")
            else:
                shown = "read-write" if mount.mode == "rw" else "read-only"
                lines.append(f"  {shown:10} {mount.path}")
        lines += [f"  hidden     {path}" for path in self.hidden]
        lines.append(f"rlimits: {self.limits_text()}")
        return lines

    def limits_text(self) -> str:
        limits = self.limits
        parts = [
            f"cpu {_or_unlimited(limits.cpu_seconds, ' s')}",
            f"memory {_or_unlimited(_size(limits.memory_bytes))}",
            f"processes {_or_unlimited(limits.processes)}",
            f"file size {_or_unlimited(_size(limits.file_size_bytes))}",
        ]
        return ", ".join(parts)


def build_grant(
    *,
    bwrap: str,
    prlimit: str,
    writable: Sequence[Path],
    read_only: Sequence[Path],
    extra_read_only: Sequence[Path],
    system: Sequence[str],
    hide: Sequence[Path],
    network: bool,
    user: str | None,
    limits: Limits,
) -> SandboxGrant:
    """The grant for these paths as they are on this host now (links resolved).

    Raises:
        ValueError: naming a path or the user that does not exist.
    """
    mounts: list[Mount] = []
    for path in system:
        if os.path.islink(path):
            mounts.append(Mount(path=path, mode="link", target=os.readlink(path)))
        elif os.path.isdir(path):
            mounts.append(Mount(path=path, mode="ro"))
    # Later binds cover earlier ones: extra read-only paths, then the writable roots, then the
    # read-only ones (a read-only root inside a writable one stays read-only).
    binds: list[tuple[Literal["ro", "rw"], Sequence[Path]]] = [
        ("ro", extra_read_only),
        ("rw", writable),
        ("ro", read_only),
    ]
    for mode, paths in binds:
        for bound in paths:
            try:
                real = os.path.realpath(bound, strict=True)
            except OSError as exc:
                raise ValueError(f"{bound}: {(exc.strerror or str(exc)).lower()}") from None
            mounts.append(Mount(path=real, mode=mode))
    hidden = [
        os.path.abspath(path) for path in hide if os.path.lexists(path) and not os.path.islink(path)
    ]
    return SandboxGrant(
        bwrap=os.path.realpath(bwrap),
        mounts=mounts,
        hidden=hidden,
        network=network,
        user=find_user(user) if user is not None else None,
        prlimit=prlimit if limits.options() else None,
        limits=limits,
    )


def find_user(name: str) -> User:
    """The host user named ``name`` (or a numeric uid).

    Raises:
        ValueError: no such user.
    """
    try:
        entry = pwd.getpwuid(int(name)) if name.isdigit() else pwd.getpwnam(name)
    except (KeyError, OverflowError):
        raise ValueError(f"{name!r}: no such user on this host") from None
    return User(name=entry.pw_name, uid=entry.pw_uid, gid=entry.pw_gid)


def bwrap_argv(grant: SandboxGrant, argv: Sequence[str], cwd: str, status_fd: int) -> list[str]:
    """The command line that runs ``argv`` in ``cwd`` inside ``grant``; bwrap reports on
    ``status_fd`` (``--json-status-fd``) whether the command itself started and how it ended."""
    out = [grant.bwrap, "--die-with-parent", "--unshare-all"]
    if grant.network:
        out.append("--share-net")
    out += ["--json-status-fd", str(status_fd), "--tmpfs", "/tmp"]
    for mount in grant.mounts:
        if mount.mode == "link":
            out += ["--symlink", mount.target or "", mount.path]
        else:
            out += ["--ro-bind" if mount.mode == "ro" else "--bind", mount.path, mount.path]
    for path in grant.hidden:
        if os.path.isdir(path):
            out += ["--tmpfs", path, "--remount-ro", path]
        else:
            out += ["--ro-bind", "/dev/null", path]
    out += ["--proc", "/proc", "--dev", "/dev", "--chdir", cwd, "--cap-drop", "ALL", "--"]
    if grant.prlimit is not None:
        out += [grant.prlimit, *grant.limits.options(), "--"]
    return [*out, *argv]


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _or_unlimited(value: object, unit: str = "") -> str:
    return "unlimited" if value is None else f"{value}{unit}"


def _size(value: int | None) -> str | None:
    if value is None:
        return None
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= size and value % size == 0:
            return f"{value // size} {unit}"
    return f"{value} bytes"


class SandboxFailed(Exception):
    """The sandbox could not start (bwrap missing, namespaces refused, a bind that failed): the
    command did not run, on the host or anywhere."""

    @classmethod
    def from_stderr(cls, stderr: str, exit_code: int | None) -> SandboxFailed:
        reasons = [line for line in stderr.splitlines() if line.startswith("bwrap:")]
        reason = reasons[-1] if reasons else f"bwrap exited with {exit_code} before the command ran"
        return cls(f"{SANDBOX_FAILED}: {reason[:300]}")


class SandboxStatus:
    """The pipe on which bwrap reports (``--json-status-fd``) whether the command itself started:
    bwrap writes an ``exit-code`` only for a command that ran, so an exit without one is a sandbox
    that failed to start, whatever the exit status."""

    def __init__(self, grant: SandboxGrant) -> None:
        self.grant = grant
        self._read, self._write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._report = b""

    def argv(self, argv: Sequence[str], cwd: str) -> list[str]:
        return bwrap_argv(self.grant, argv, cwd, self._write)

    def options(self) -> dict[str, object]:
        """``create_subprocess_exec``'s options: the status pipe, and the grant's user."""
        options: dict[str, object] = {"pass_fds": (self._write,)}
        if self.grant.user is not None:
            options |= {
                "user": self.grant.user.uid,
                "group": self.grant.user.gid,
                "extra_groups": [],
            }
        return options

    def cannot_run(self, exc: OSError) -> SandboxFailed:
        """The failure for bwrap itself not starting (missing, not executable)."""
        return SandboxFailed(
            f"{SANDBOX_FAILED}: {self.grant.bwrap}: {(exc.strerror or str(exc)).lower()}"
        )

    def close_write_end(self) -> None:
        if self._write >= 0:
            os.close(self._write)
            self._write = -1

    def command_ran(self) -> bool:
        """Whether bwrap reported the command's exit (read once every holder is gone)."""
        while True:
            try:
                chunk = os.read(self._read, 65_536)
            except BlockingIOError:
                break
            if not chunk:
                break
            self._report += chunk
        return b'"exit-code"' in self._report

    def close(self) -> None:
        self.close_write_end()
        if self._read >= 0:
            os.close(self._read)
            self._read = -1
