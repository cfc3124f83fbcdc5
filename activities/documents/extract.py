"""The parser process: one document in, its bounded extraction out as JSON on stdout.

``DocumentTools`` starts this file as a script (``python -I extract.py --parent PID``) ahead of
the call it will serve, with a Unix socket as its standard input. It arms its death with the
worker, imports the parser libraries, and waits for one job: the rest of its options, with the
document (already opened through the roots, so nothing here resolves a path) attached as a
descriptor, which becomes its stdin (``wait_for_job``). It confines itself before touching the
document (address space, CPU time, no file writes, no core dumps) and writes one JSON object:
either ``{"format", "sections", "truncated"}`` or ``{"error", "message"}``, then exits: a process
serves one document. While it reads a PDF, it reports the pages done on the job's socket
(``pages``), which the worker trusts no more than the answer. The worker kills it when it runs
out of time, and never trusts more of its output than a fixed number of bytes.

What it extracts and refuses is ``extraction``, the file beside it, loaded by its path: run as
``python -I``, this process has neither this directory nor the project on ``sys.path``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import importlib
import importlib.util
import json
import math
import os
import resource
import select
import signal
import socket
import sys
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any

PRELOADED = ("pypdf", "docx", "openpyxl", "defusedxml.ElementTree")
"""Imported while the process waits for its job, so that the job does not pay for them; one that
is missing is reported by the format that needs it. A job that arrives first stops the imports."""
MAX_JOB_BYTES = 4_096
"""The job message: a few options as JSON."""
_OPEN_FILES = 64
_PR_SET_PDEATHSIG = 1


def _sibling(name: str) -> ModuleType:
    """The module ``name``.py beside this file, loaded by its path (nothing on ``sys.path`` is
    trusted or needed)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING or __package__:  # imported by the worker (its tools, its tests)
    from toolcalls.activities.documents import extraction, pages
else:  # the parser process
    extraction = _sibling("extraction")
    pages = _sibling("pages")


def confine(memory_bytes: int, cpu_seconds: int, parent: int) -> None:
    """Limit this process before it reads anything, and make it die with the worker."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (_OPEN_FILES, _OPEN_FILES))
    die_with(parent)


def die_with(parent: int) -> None:
    """Ask for ``SIGKILL`` when the worker dies, and die now if it is already gone."""
    prctl = getattr(ctypes.CDLL(None), "prctl", None)
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The worker may have died before the death signal was armed.
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


def wait_for_job() -> argparse.Namespace:
    """This process's one job, confined, with the document as stdin, once the worker sends it.

    Stdin is a ``SOCK_SEQPACKET`` socket; the job is one message on it: the options that follow
    this process's own (``--parent``), as a JSON list, with the document's descriptor attached
    (``SCM_RIGHTS``). A worker that closes the socket instead ends the process. The CPU ceiling
    counts from here: what the start and the imports used is added to ``--cpu-seconds``. The
    socket stays open, as ``args.progress`` (a descriptor), for the pages done (``pages``).
    """
    start = argparse.ArgumentParser(add_help=False)
    start.add_argument("--parent", type=int, required=True)
    die_with(start.parse_known_args()[0].parent)
    channel = socket.socket(fileno=0)
    try:
        # A job that came early waits for no more imports than its format needs.
        for module in PRELOADED:
            if select.select([channel], [], [], 0)[0]:
                break
            with contextlib.suppress(ImportError):
                importlib.import_module(module)
        # What the start built lives as long as the process: the collector can skip it.
        gc.freeze()
        message, fds, _, _ = socket.recv_fds(channel, MAX_JOB_BYTES, 1)
    finally:
        channel.detach()
    if not fds:
        sys.exit(0)
    args = arguments([*sys.argv[1:], *json.loads(message)])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    spent = math.ceil(usage.ru_utime + usage.ru_stime)
    confine(args.memory_bytes, args.cpu_seconds + spent, args.parent)
    args.progress = os.dup(0)
    os.dup2(fds[0], 0)
    os.close(fds[0])
    return args


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", required=True, choices=sorted(set(extraction.FORMATS.values())))
    for name in ("max-chars", "max-sections", "max-archive-bytes", "memory-bytes"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--cpu-seconds", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True)
    return parser.parse_args(argv, argparse.Namespace(progress=None))


def run(args: argparse.Namespace, stream: IO[bytes]) -> dict[str, Any]:
    """The extraction, or the error record, of ``stream``; never raises for a bad document.
    Pages done are reported on ``args.progress``, the job's socket, when there is one."""
    channel = None if args.progress is None else socket.socket(fileno=args.progress)
    try:
        return extraction.extract(
            stream,
            args.format,
            max_chars=args.max_chars,
            max_sections=args.max_sections,
            max_archive_bytes=args.max_archive_bytes,
            on_page=pages.PageReporter(channel),
        )
    except extraction.Refused as exc:
        return {"error": exc.code, "message": exc.message}
    except ImportError as exc:
        module = extraction.EXTRA_MODULES.get(args.format, exc.name or "a parser")
        return {"error": "missing_extra", "message": module}
    except MemoryError:
        return {"error": "memory", "message": "ran out of memory"}
    except RecursionError:
        return {"error": "failed", "message": "is nested too deeply to parse"}
    except Exception as exc:  # any parser failure is the document's, reported in one line
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        return {"error": "failed", "message": f"cannot be parsed ({detail})"}


def main() -> None:
    args = wait_for_job()
    with os.fdopen(0, "rb", closefd=False) as stream:
        payload = run(args, stream)
    sys.stdout.buffer.write(json.dumps(payload, ensure_ascii=False).encode("utf-8"))
    sys.stdout.flush()
    # Tearing the parser libraries down at exit takes longer than most parses; nothing is left
    # to write, and the worker waits for the end of the output, which is the process's end.
    os._exit(0)


if __name__ == "__main__":
    main()
