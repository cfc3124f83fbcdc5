"""``--by`` names are canonical, as real ``toolcalls`` processes against the session's dev server
and a real worker: a spelling of the first approver is no second approver, and a name with an
invisible character is a usage error. And the ``[mcp] user`` is written canonically."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.client import Client

from tests.support.harness import make_config, pending_approval, running_worker, start_call
from tests.worker.support import Done, command, toolcalls
from toolcalls.worker.mcp.settings import McpSection
from toolcalls.workflows.models.call import CallStatus

TWO_OF_ANYONE = {"rules": {"filesystem.write": {"min_approvals": 2}}}


async def test_a_spelling_of_the_first_approver_is_no_second_approver_through_the_cli(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> None:
    config = make_config(task_queue, approvers=TWO_OF_ANYONE)
    async with running_worker(client, config) as probes:
        handle = await start_call(client, task_queue, "probe_write", {"token": "t"})
        await pending_approval(handle)
        first = await command(tmp_path, address, "approve", handle.id, "--by", "alice")
        assert first.code == 0, first.stderr
        for variant in ("Alice", "alice ", "\uff41\uff4c\uff49\uff43\uff45"):
            again = await command(tmp_path, address, "approve", handle.id, "--by", variant)
            assert again == Done(
                1,
                "",
                f"toolcalls: approve {handle.id}: rejected: 'alice' already approved this call\n",
            ), variant
        assert probes.runs == {}
        second = await command(tmp_path, address, "approve", handle.id, "--by", "BOB")
        assert second.code == 0, second.stderr
        result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert [r.approver for r in result.approvals] == ["alice", "bob"]
    assert probes.runs == {"probe_write": 1}


@pytest.mark.parametrize("verb", ["approve", "deny"])
async def test_a_name_with_an_invisible_character_is_a_usage_error(
    tmp_path: Path, verb: str
) -> None:
    # The address is unreachable: the name is refused before any connection is tried.
    workflow_id = f"call-{uuid.uuid4()}"
    done = await toolcalls(
        tmp_path, verb, workflow_id, "--by", "alice\u200b", "--address", "127.0.0.1:1"
    )
    assert done == Done(
        2,
        "",
        f"toolcalls {verb}: error: --by: 'alice\\u200b': a name cannot hold the invisible "
        "character U+200B (ZERO WIDTH SPACE)\n",
    )


def test_the_mcp_user_is_written_canonically() -> None:
    assert McpSection(user="alice").user == "alice"
    with pytest.raises(ValidationError, match="user: 'Alice': names are compared canonically"):
        McpSection(user="Alice")
