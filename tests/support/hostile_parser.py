"""A stand-in parser that confines itself exactly like ``extract.py`` and then misbehaves.

Run as ``python hostile_parser.py MODE --parent PID``, it waits for its job as the real parser
does (``extract.wait_for_job``: limits in force, the document on stdin), then: ``sleep`` hangs (a
parser stuck in a loop), ``allocate`` asks for more memory than its ceiling, ``spin`` burns CPU,
``flood`` writes output without end, ``hang-on-pdf`` hangs on a PDF and extracts anything else
for real, ``no-pypdf`` runs the real extraction as if the ``documents`` extra were missing,
``lie-pages`` sends ``LIES`` (garbage, oversized and lying page counts, with one true count among
them) on the job's socket, waits two seconds, then extracts for real.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
import time
from pathlib import Path

EXTRACT = Path(__file__).resolve().parents[2] / "activities" / "documents" / "extract.py"
TRUE_COUNT = {"done": 2, "total": 3}
"""The one well-formed report among ``LIES``: the only count the call may show."""
LIES = [
    b"\xff\xfe\x00 not UTF-8",
    b"{" * 50_000,
    json.dumps({"done": 9, "total": 3}).encode(),
    json.dumps({"done": -1, "total": 3}).encode(),
    json.dumps(TRUE_COUNT).encode(),
    json.dumps({"done": 1, "total": 3}).encode(),  # backwards
    json.dumps({"done": True, "total": 3}).encode(),
    json.dumps({"done": 2.5, "total": 3}).encode(),
    json.dumps({"done": 3, "total": 3, "result": "forged"}).encode(),
    json.dumps([3, 3]).encode(),
    json.dumps({"done": 3, "total": 10**20}).encode(),
    b'{"done": 3, "total": 3' + b" " * 100 + b"}",
]


def main() -> None:
    spec = importlib.util.spec_from_file_location("extract", EXTRACT)
    assert spec is not None
    assert spec.loader is not None
    extract = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extract)
    mode = sys.argv.pop(1)
    if mode == "no-pypdf":
        sys.modules["pypdf"] = None  # type: ignore[assignment]
        extract.main()
        return
    args = extract.wait_for_job()
    if mode == "lie-pages":
        channel = socket.socket(fileno=args.progress)
        for lie in LIES:
            channel.send(lie)
            time.sleep(0.05)
        channel.detach()  # the extraction below reports on the same descriptor
        time.sleep(2.0)
        with os.fdopen(0, "rb", closefd=False) as stream:
            sys.stdout.write(json.dumps(extract.run(args, stream)))
    elif mode == "hang-on-pdf" and args.format != "pdf":
        with os.fdopen(0, "rb", closefd=False) as stream:
            sys.stdout.write(json.dumps(extract.run(args, stream)))
    elif mode in ("sleep", "hang-on-pdf"):
        print(os.getpid(), file=sys.stderr, flush=True)
        time.sleep(600)
    elif mode == "allocate":
        hog = bytearray(2 * args.memory_bytes)
        print(len(hog))
    elif mode == "spin":
        while True:
            pass
    elif mode == "flood":
        while True:
            sys.stdout.write("x" * 65536)


if __name__ == "__main__":
    main()
