"""``python -m toolcalls ...`` is the ``toolcalls`` command."""

from toolcalls.worker.cli import main

main()
