"""The live child processes of the test process: proof that a helper process was reaped."""

from __future__ import annotations

import os
from pathlib import Path


def children() -> set[int]:
    """Live (non-zombie) children of this process."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == os.getpid() and fields[0] not in "ZX":
            found.add(int(entry))
    return found
