"""A client without the deployment's keys: refused in one typed error, never a plaintext leak.

A deployment that encrypts (``[codec]``) marks its workers' identity with ``ENCRYPTING_WORKER``.
A client whose data converter has no codec gets ``KeylessCodec``: plaintext passes, and an
encrypted payload it meets is a ``PayloadKeyError`` naming the key id (instead of the payload
converter's ``KeyError: 'Unknown payload encoding binary/encrypted'``). Before such a client
starts a call, ``KeysCheck`` looks at the workers polling the call's task queue: if
they encrypt, the call is refused with ``MissingKeys`` before anything is sent, so no request of
an encrypting deployment is stored in plaintext.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.converter import PayloadCodec

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
        """Raise ``MissingKeys`` if ``client`` has no keys and the workers of ``task_queue``
        encrypt.

        Only a client without a codec of its own asks (one describe of the task queue); with no
        worker seen on the queue lately there is nothing to go by, and the call goes ahead.
        """
        if not isinstance(client.data_converter.payload_codec, KeylessCodec):
            return
        cleared = self._cleared.get(task_queue)
        if cleared is not None and time.monotonic() - cleared < self.interval:
            return
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        if any(ENCRYPTING_WORKER in poller.identity.split() for poller in response.pollers):
            self._cleared.pop(task_queue, None)
            raise MissingKeys(
                f"the workers of task queue {task_queue!r} encrypt their payloads and this client "
                "has no keys: use the deployment's data converter (toolcalls --config FILE, or "
                "$TOOLCALLS_CONFIG, with its [codec] keys); nothing was started"
            )
        self._cleared[task_queue] = time.monotonic()
