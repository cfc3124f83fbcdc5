"""Payload sizes: what a result, a preview and a call's arguments may be.

Temporal refuses a payload near 2 MB; these bounds keep every payload a call makes well under it.
"""

from __future__ import annotations

MAX_PAYLOAD_BYTES = 1024 * 1024
"""No activity result over this leaves a worker (Temporal rejects 2 MiB), unless the deployment
stores large payloads outside history (``[payloads]``), which raises the limit."""
MAX_STORED_RESULT_BYTES = 64 * 1024 * 1024
"""The most a deployment's result limit may be with a payload store (``[payloads]
max_result_bytes``): a worker holds a few copies of a result while it converts, encrypts and
stores it."""
RESULT_ENVELOPE_BYTES = MAX_PAYLOAD_BYTES - 1_000_000
"""What a tool that cuts its own output keeps back from the result limit for the rest of its
result: 1 MiB less this is the 1,000,000 bytes the tools cut their output to by default."""
MAX_ARGUMENTS_BYTES = MAX_PAYLOAD_BYTES + 64 * 1024
"""The canonical JSON of one call's arguments. The workflow carries them in several payloads
(the plan, the activity input, the pending approval's memo beside a bounded preview), each under
Temporal's 2 MB limit, so the sum of per-argument limits (two 1 MiB texts of ``edit_file``) is
refused here, at plan, before anything is asked or run."""


def output_bytes(result_bytes: int) -> int:
    """The bytes a tool may give its output when its result may reach ``result_bytes``."""
    return result_bytes - RESULT_ENVELOPE_BYTES
