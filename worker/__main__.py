"""``python -m worker`` runs the worker, like ``toolcalls worker``."""

import sys

from worker.cli import main

main(["worker", *sys.argv[1:]])
