"""``python -m toolcalls.worker`` runs the worker, like ``toolcalls worker``."""

import sys

from toolcalls.worker.cli import main

main(["worker", *sys.argv[1:]])
