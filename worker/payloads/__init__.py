"""What happens to payloads on their way to Temporal: encryption, the codec server, storage.

- ``settings``: the ``[codec]`` and ``[payloads]`` sections of the configuration file;
- ``keys`` and ``codec``: AES-256-GCM over every payload, keys from the environment or a file;
- ``storage``: large payloads in a store outside history (local files, or the SDK's S3 driver);
- ``converter``: the one data converter every client, worker and replayer of a deployment uses;
- ``server``: ``toolcalls codec-server``, Temporal's remote codec protocol for its UI and CLI.

Nothing is imported here, so that ``toolcalls.worker.config`` can import the settings alone.
"""
