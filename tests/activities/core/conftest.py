"""Fixtures of the core family's tests: the call the tools serve."""

from __future__ import annotations

import pytest

from toolcalls.activities.base import CallContext


@pytest.fixture
def call() -> CallContext:
    """A call with no approval and no precondition, as a plain allowed call has."""
    return CallContext(
        workflow_id="wf-core",
        call_id="call-1",
        idempotency_key="wf-core/call-1",
        approval=None,
        precondition=None,
    )
