"""The worker's side of per-principal connections: building the store from ``[connections]``,
the ``toolcalls connections`` command, and the inbox's consent pages
(``toolcalls.worker.connections.pages``)."""
