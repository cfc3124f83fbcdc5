"""Benchmarks: each module prints its figures and the ratios it compares, in one run."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn


def finish(name: str, measure: Callable[[], int]) -> NoReturn:
    """Run ``measure`` and leave with its status, or 1 with ``name: reason`` on stderr when it
    raises ``RuntimeError``. Leaves through ``os._exit`` after flushing: a process that used a
    temporalio client can abort at interpreter exit (temporalio/sdk-python issue 300)."""
    try:
        status = measure()
    except RuntimeError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
