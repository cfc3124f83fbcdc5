"""Configuration, the worker process and the ``toolcalls`` command line."""
