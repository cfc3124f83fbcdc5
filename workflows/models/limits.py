"""Temporal's payload size limit, and the check that keeps requests, decisions and answers under it.

Temporal refuses a payload-bearing field (a workflow's input, a child's input, an update's or a
signal's argument) whose serialized ``Payloads`` is over its blob size limit. Refused by the
server, a client gets an error; emitted by a workflow, the SDK fails the workflow task before the
command leaves (``TMPRL1103``) and retries it, forever. So each front measures what it is about to
send, the way Temporal will, and refuses it first.

The sizes come from the caller's own converter: a workflow's payload converter (synchronous,
no codec), or a client's data converter with its codec.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from temporalio.api.common.v1 import Payload, Payloads
from temporalio.converter import DataConverter

from toolcalls.workflows.models.call import ErrorCode, ToolCallRequest, ToolError

PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024
"""Temporal's default blob size limit (``limit.blobSize.error``), per payload-bearing field."""
CODEC_MARGIN_BYTES = 64 * 1024
"""Room left for a codec where it cannot be measured: inside a workflow, payloads are encoded by
the worker after the workflow code has run. An encryption codec adds a nonce, a tag and metadata
(tens of bytes); a codec that grows a payload by more than this needs requests smaller by as
much. A compressing codec only makes the measure pessimistic."""


class PayloadTooLarge(ValueError):
    """A request, decision or answer is over Temporal's payload limit; nothing was sent.

    ``fixable_args`` names the argument of a request to shrink, when one makes up its bulk.
    """

    def __init__(self, message: str, fixable_args: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.fixable_args = list(fixable_args)


def encoded_size(payloads: Sequence[Payload]) -> int:
    """The size Temporal checks against its limit: the serialized ``Payloads`` of one field."""
    return Payloads(payloads=list(payloads)).ByteSize()


def oversized_request(
    tool: str, size: int, argument_sizes: Mapping[str, int], limit: int
) -> ToolError | None:
    """The ``invalid_arguments`` error for a request of ``size`` bytes over ``limit``, or ``None``.

    ``argument_sizes`` are the encoded sizes of the request's arguments. When they make up most
    of the request, the largest is the one to shrink and the error names it; otherwise the bulk
    is elsewhere (the policy, the metadata), which no model can fix.
    """
    if size <= limit:
        return None
    what = f"{tool}: the request is {size} bytes encoded; the limit is {limit} bytes"
    if limit < PAYLOAD_LIMIT_BYTES:
        what += (
            f" (Temporal's {PAYLOAD_LIMIT_BYTES} less {PAYLOAD_LIMIT_BYTES - limit} for a codec)"
        )
    if sum(argument_sizes.values()) * 2 < size:
        return ToolError(code=ErrorCode.INVALID_ARGUMENTS, message=what)
    largest = max(argument_sizes, key=lambda name: argument_sizes[name])
    return ToolError(
        code=ErrorCode.INVALID_ARGUMENTS,
        message=f"{what}: shrink {largest!r} ({argument_sizes[largest]} bytes)",
        fixable_args=[largest],
    )


def oversized_payload(what: str, size: int, limit: int = PAYLOAD_LIMIT_BYTES) -> str | None:
    """Why a decision or answer of ``size`` encoded bytes cannot be sent, or ``None``."""
    if size <= limit:
        return None
    return f"{what} is {size} bytes encoded; the limit is {limit} bytes"


async def _encoded(converter: DataConverter, value: object) -> int:
    # Measured as it would go inline: encoding through an external store would store it (an
    # object no history ever claims) and measure only the claim.
    if converter.external_storage is not None:
        converter = dataclasses.replace(converter, external_storage=None)
    return encoded_size(await converter.encode([value]))


async def check_request(converter: DataConverter, request: ToolCallRequest) -> None:
    """Raise ``PayloadTooLarge`` if ``request``, encoded by ``converter``, is over the limit."""
    size = await _encoded(converter, request)
    if size <= PAYLOAD_LIMIT_BYTES:
        return
    sizes = {name: await _encoded(converter, value) for name, value in request.arguments.items()}
    error = oversized_request(request.tool, size, sizes, PAYLOAD_LIMIT_BYTES)
    assert error is not None
    raise PayloadTooLarge(error.message, error.fixable_args)


async def check_payload(converter: DataConverter, what: str, value: object) -> None:
    """Raise ``PayloadTooLarge`` if ``value`` (a decision, an answer) is over the limit."""
    problem = oversized_payload(what, await _encoded(converter, value))
    if problem is not None:
        raise PayloadTooLarge(problem)
