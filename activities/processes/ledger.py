"""The ledger of process groups a worker started, and what ``/proc`` says about a group.

A worker killed with SIGKILL cannot clean up, so each group is written to a ledger on disk as soon
as it runs and removed once it is gone; the next worker to start kills whatever groups the ledger
still lists for workers that are gone (``ProcessLedger.reap``): a live worker sharing the
directory keeps its own. Reading ``/proc`` and the ledger's files both block: callers on the event
loop run them in a thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class ProcessLedger:
    """Process groups this worker has running, one file each, so a successor can kill leftovers.

    Each entry names the group's leader (its pid and kernel start time), the worker that started
    it (likewise), and the boot it ran in. Several workers may share one directory: ``reap`` kills
    only the groups of workers that are gone.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    def record(self, pgid: int) -> None:
        owner = os.getpid()
        entry = {
            "leader_start": _start_time(pgid),
            "owner": owner,
            "owner_start": _start_time(owner),
            "boot": _boot_id(),
        }
        # Written aside and renamed into place: a worker reaping the directory meanwhile must never
        # read a half-written entry (it would name no owner, and be removed or even acted on).
        partial = self.directory / f".{pgid}.{owner}.tmp"
        partial.write_text(json.dumps(entry), encoding="ascii")
        os.replace(partial, self.directory / str(pgid))

    def forget(self, pgid: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.directory / str(pgid)).unlink()

    def reap(self) -> list[int]:
        """Kill the groups that workers now gone left running; the ones it killed."""
        killed = []
        boot = _boot_id()
        for entry in self.directory.iterdir():
            if not entry.name.isdigit():
                _discard_stale_partial(entry)
                continue
            pgid = int(entry.name)
            try:
                recorded = _read_entry(entry.read_text(encoding="ascii", errors="replace"))
            except FileNotFoundError:
                continue  # another worker sharing the directory reaped it first
            if recorded.get("boot") not in (None, boot):
                entry.unlink(missing_ok=True)  # from before a reboot: those processes are gone
                continue
            owner = recorded.get("owner")
            if isinstance(owner, int) and _start_time(owner) == recorded.get("owner_start"):
                continue  # its worker still runs (it shares this directory): not ours to kill
            leader = _start_time(pgid)
            # A live leader must be the one recorded (its pid could have been reused). A dead
            # leader's id cannot be reused while members of its group remain, so any group with
            # that id is still the old one.
            if (leader is None or leader == recorded.get("leader_start")) and group_alive(pgid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                    killed.append(pgid)
            entry.unlink(missing_ok=True)
        if killed:
            log.warning("killed process groups left by a previous worker: %s", killed)
        return killed


def _discard_stale_partial(entry: Path) -> None:
    """Remove an entry a worker that is gone was writing (``.<pgid>.<owner>.tmp``) when it died."""
    parts = entry.name.split(".")
    if len(parts) != 4 or parts[0] or parts[3] != "tmp" or not parts[2].isdigit():
        return
    if _start_time(int(parts[2])) is None:
        entry.unlink(missing_ok=True)


def _read_entry(text: str) -> dict[str, Any]:
    """A ledger entry; an unreadable one names no owner and no leader."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombies answer signal 0; a group of only zombies is dead for our purposes.
    return any(_member_state(pid) not in (None, "Z", "X") for pid in _members(pgid))


def _members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _process_group(int(entry)) == pgid:
            members.append(int(entry))
    return members


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name may hold spaces and parentheses: split after its closing one.
    return raw[raw.rindex(")") + 2 :].split()


def _process_group(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[2]) if fields else None


def _member_state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), to tell reused pids apart."""
    fields = _stat_fields(pid)
    return fields[19] if fields else None


def _boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return None
