"""A stand-in parser that confines itself exactly like ``extract.py`` and then misbehaves.

Run as ``python hostile_parser.py MODE --parent PID``, it waits for its job as the real parser
does (``extract.wait_for_job``: limits in force, the document on stdin), then: ``sleep`` hangs (a
parser stuck in a loop), ``allocate`` asks for more memory than its ceiling, ``spin`` burns CPU,
``flood`` writes output without end, ``hang-on-pdf`` hangs on a PDF and extracts anything else
for real, ``no-pypdf`` runs the real extraction as if the ``documents`` extra were missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

EXTRACT = Path(__file__).resolve().parents[2] / "activities" / "documents" / "extract.py"


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
    if mode == "hang-on-pdf" and args.format != "pdf":
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
