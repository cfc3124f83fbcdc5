"""``ToolCallsEncrypts``: an encrypting deployment's standing word, for clients without keys.

The workflow worker of a deployment that encrypts (``[codec]``) keeps one of these running per
task queue, with the id ``toolcalls-encrypts-<queue>``. It does nothing, holds no payload and never
ends by itself; a client without keys looks for it before it starts a call
(``keyless.KeysCheck``), so it is refused even while no worker polls the queue. A workflow worker
of a deployment that no longer encrypts terminates it (``ensure_marker``).
"""

from __future__ import annotations

from temporalio import workflow

from toolcalls.workflows.models.call import MARKER_WORKFLOW


@workflow.defn(name=MARKER_WORKFLOW)
class EncryptsMarkerWorkflow:
    """Runs until a worker of a deployment that stopped encrypting terminates it."""

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)
