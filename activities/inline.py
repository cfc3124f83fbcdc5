"""Attestations of inline calls: how a tool activity knows the deployment planned its call.

A tool activity runs for ``ToolCallWorkflow`` (the deployment's own workflow, which planned,
decided and waited for any approval itself) or for a workflow holding an attestation of this
exact call: a MAC the ``plan`` activity made, under one of the deployment's ``[inline]`` keys, over
what Temporal says about the workflow run that asked for the plan (namespace, workflow id, run id,
from ``activity.info()``, never from the input) and what the plan fixed (call id, digest, the
tools a discovery call may see). The execute or prepare activity recomputes it from its own
``activity.info()`` and input, so an attestation is worth nothing in another run, for another call
or other arguments, and cannot be made without a key: application workflow code has none.

Keys are 32 random bytes; the newest signs, every listed one verifies (rotation, as with
``[codec]`` keys). What an attestation does not show, and so what the execute activity still
checks itself, is in docs/design.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence

from temporalio import activity

from toolcalls.workflows.models.call import WORKFLOW_NAME, ExecuteInput, InlineAttestation

_CONTEXT = "toolcalls.inline.v1"


class Attestor:
    """Signs inline plans and checks their attestations with the deployment's ``[inline]`` keys."""

    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        """``keys``: ``(id, key)`` pairs, newest first."""
        if not keys:
            raise ValueError("an attestor needs at least one key")
        self._keys = dict(keys)
        self._signing = keys[0]

    def issue(
        self, info: activity.Info, call_id: str, digest: str, visible: list[str] | None
    ) -> InlineAttestation | None:
        """The attestation of a call planned for the workflow run ``info`` names; ``None`` for a
        plan no workflow asked for."""
        if not info.workflow_id or not info.workflow_run_id:
            return None
        key_id, key = self._signing
        return InlineAttestation(key_id=key_id, signature=_mac(key, info, call_id, digest, visible))

    def problem(self, info: activity.Info, input: ExecuteInput) -> str | None:
        """Why ``input`` may not run for the workflow run ``info`` names; ``None``: it may."""
        attestation = input.attestation
        if attestation is None or not info.workflow_id or not info.workflow_run_id:
            return not_attested(info.workflow_type)
        key = self._keys.get(attestation.key_id)
        if key is None:
            return (
                f"the inline call's attestation names key {attestation.key_id[:64]!r}, which is "
                "not one of this worker's [inline] keys"
            )
        expected = _mac(key, info, input.call_id, input.digest, input.visible_tools)
        if not hmac.compare_digest(expected, attestation.signature):
            return (
                "the inline call's attestation is not the deployment's for this workflow run, "
                "call and arguments"
            )
        return None


def no_inline_calls(workflow_type: str | None, input: ExecuteInput) -> str:
    """Why a workflow that is not ``ToolCallWorkflow`` may not run a tool on a worker without
    ``[inline]`` keys."""
    if input.attestation is None:
        return not_attested(workflow_type)
    return "this worker runs no inline calls: it has no [inline] keys"


def not_attested(workflow_type: str | None) -> str:
    """Why a workflow that is not ``ToolCallWorkflow`` may not run a tool without attestation."""
    return f"tool activities run only inside {WORKFLOW_NAME}, not {workflow_type!r}"


def _mac(
    key: bytes, info: activity.Info, call_id: str, digest: str, visible: list[str] | None
) -> str:
    # A JSON array is an unambiguous encoding of the fields: no separator can be forged into one.
    message = json.dumps(
        [
            _CONTEXT,
            info.namespace,
            info.workflow_id,
            info.workflow_run_id,
            call_id,
            digest,
            visible,
        ],
        ensure_ascii=True,
    )
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()
