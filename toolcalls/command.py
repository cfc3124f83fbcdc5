"""The ``toolcalls`` console script: the command line of ``toolcalls.worker.cli``, imported with
the garbage collector paused.

Importing the command line makes about 170,000 objects (the SDK's and the families' models),
and the collector would walk them again and again while they are made: a tenth of a second of CPU
on every command. What the import made is then frozen (``gc.freeze``), so that later collections
in a long-running worker do not walk it either.
"""

from __future__ import annotations

import gc


def main() -> None:
    """Entry point of the ``toolcalls`` console script and of ``python -m toolcalls``."""
    gc.disable()
    try:
        from toolcalls.worker.cli import main as run
    finally:
        gc.enable()
    gc.freeze()
    run()
