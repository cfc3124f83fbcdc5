"""A client without the deployment's keys: refused in one typed error, never a plaintext leak.

A deployment that encrypts (``[codec]``) marks its workers' identity with ``ENCRYPTING_WORKER``.
A client whose data converter has no codec gets ``KeylessCodec``: plaintext passes, and an
encrypted payload it meets is a ``PayloadKeyError`` naming the key id (instead of the payload
converter's ``KeyError: 'Unknown payload encoding binary/encrypted'``). Before such a client
starts a call, ``KeysCheck`` looks at the workers polling the call's task queue: if
they encrypt, or if the deployment's standing marker (``MARKER_WORKFLOW``, kept running by its
workflow worker while it encrypts) is running, the call is refused with ``MissingKeys`` before
anything is sent, so no request of an encrypting deployment is stored in plaintext, whether or not a
worker polls at that moment.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.converter import PayloadCodec
from temporalio.service import RPCError, RPCStatusCode

from toolcalls.workflows.models.call import MARKER_WORKFLOW

logger = logging.getLogger(__name__)

ENCODING = b"binary/encrypted"
"""The ``encoding`` of a payload the deployment's ``EncryptionCodec`` encrypted."""
KEY_ID = "encryption-key-id"
"""The metadata key naming the key that encrypted a payload."""
ENCRYPTING_WORKER = "toolcalls:encrypts"
"""What an encrypting deployment's workers add to their identity (visible, like the identity,
to anyone who can describe the task queue; it names no key)."""
KEYS_CHECK_SECONDS = 30.0
"""How long a keyless client trusts that a task queue's workers do not encrypt before it asks
again (a client starting thousands of calls asks once, not once a call)."""


def marker_id(task_queue: str) -> str:
    """The workflow id of the marker that says the deployment serving ``task_queue`` encrypts."""
    return f"toolcalls-encrypts-{task_queue}"


class PayloadKeyError(ValueError):
    """An encrypted payload cannot be decrypted here; the message names its key id."""


class MissingKeys(PayloadKeyError):
    """The deployment encrypts its payloads and this client has no keys: nothing was started."""


def key_id_of(payload: Payload) -> str | None:
    """The key id of a payload the deployment's codec encrypted, or ``None`` for any other."""
    if payload.metadata.get("encoding") != ENCODING or KEY_ID not in payload.metadata:
        return None
    return payload.metadata[KEY_ID].decode(errors="replace")


class KeylessCodec(PayloadCodec):
    """The codec of a process given no keys: plaintext passes, an encrypted payload is refused
    with its key id (instead of an unknown-encoding error from the payload converter)."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        for payload in payloads:
            key_id = key_id_of(payload)
            if key_id is not None:
                raise PayloadKeyError(
                    f"payload encrypted with key {key_id!r}, but this process has no keys: "
                    "configure [codec] keys_env or keys_file"
                )
        return list(payloads)


class KeysCheck:
    """Whether a keyless client may start calls on a task queue, asked of the server at most
    once per ``interval`` seconds and queue (a refusal is not remembered: it raises each time)."""

    def __init__(self, interval: float = KEYS_CHECK_SECONDS) -> None:
        self.interval = interval
        self._cleared: dict[str, float] = {}

    async def refuse_without_keys(self, client: Client, task_queue: str) -> None:
        """Raise ``MissingKeys`` if ``client`` has no keys and the deployment serving
        ``task_queue`` encrypts.

        Only a client without a codec of its own asks: is the deployment's marker running (one
        describe), else does a worker that encrypts poll the queue (one describe of the queue).
        With neither, nothing says the deployment encrypts, and the call goes ahead.
        """
        if not isinstance(client.data_converter.payload_codec, KeylessCodec):
            return
        cleared = self._cleared.get(task_queue)
        if cleared is not None and time.monotonic() - cleared < self.interval:
            return
        if await _marker_running(client, task_queue) or await _encrypting_poller(
            client, task_queue
        ):
            self._cleared.pop(task_queue, None)
            raise MissingKeys(
                f"the workers of task queue {task_queue!r} encrypt their payloads and this client "
                "has no keys: use the deployment's data converter (toolcalls --config FILE, or "
                "$TOOLCALLS_CONFIG, with its [codec] keys); nothing was started"
            )
        self._cleared[task_queue] = time.monotonic()


async def _marker_running(client: Client, task_queue: str) -> bool:
    try:
        described = await client.get_workflow_handle(marker_id(task_queue)).describe()
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            return False
        raise
    return described.status is WorkflowExecutionStatus.RUNNING


async def _encrypting_poller(client: Client, task_queue: str) -> bool:
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return any(ENCRYPTING_WORKER in poller.identity.split() for poller in response.pollers)


async def ensure_marker(client: Client, task_queue: str, *, encrypts: bool) -> None:
    """Keep the deployment's marker for ``task_queue`` as its workflow worker's ``[codec]``
    says: running while it encrypts, terminated once it no longer does.

    A server that refuses (a client without the permission to start or terminate workflows,
    say) costs one warning: the task queue's pollers still tell keyless clients while a worker
    polls.
    """
    handle = client.get_workflow_handle(marker_id(task_queue))
    try:
        if encrypts:
            await client.start_workflow(
                MARKER_WORKFLOW,
                id=marker_id(task_queue),
                task_queue=task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            )
        else:
            await handle.terminate(reason="this deployment no longer encrypts its payloads")
    except RPCError as exc:
        if encrypts or exc.status is not RPCStatusCode.NOT_FOUND:
            logger.warning(
                "toolcalls: cannot %s the marker %s that tells clients without keys this "
                "deployment encrypts: %s",
                "start" if encrypts else "end",
                marker_id(task_queue),
                exc.message,
            )
