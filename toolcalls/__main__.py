"""``python -m toolcalls ...`` is the ``toolcalls`` command."""

from toolcalls.command import main

main()
