"""The ``[inbox]`` section, and the inbox users' groups as the worker's approver groups."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.support.harness import decision, pending_approval, start_call, update_rejection
from tests.worker.inbox.support import fast_hash
from tests.worker.support import write_config
from toolcalls.worker.config import ConfigError, load_config, parse_config
from toolcalls.worker.inbox.settings import InboxUser, with_inbox_groups
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus
from toolcalls.workflows.rules.approvers import ApproversSettings


def inbox(**section: Any) -> dict[str, Any]:
    return {"inbox": section}


def refusal(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as raised:
        parse_config(data, "test.toml")
    return str(raised.value)


def test_the_section_and_its_defaults() -> None:
    hashed = fast_hash("pw")
    config = parse_config(
        inbox(users=[{"name": "alice", "password_hash": hashed, "groups": ["ops", "ops"]}])
    )
    section = config.inbox
    assert section.listen == "127.0.0.1:8234"
    assert section.users == [InboxUser(name="alice", password_hash=hashed, groups=["ops"])]
    assert section.can_sign_in()
    assert not parse_config({}).inbox.can_sign_in()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"users": [{"name": "a", "password_hash": "plain-text"}]},
            "inbox.users.0.password_hash: not an argon2 PHC string",
        ),
        ({"users": [{"name": "a"}, {"name": "a"}]}, "inbox: users: ['a'] listed twice"),
        ({"users": [{"name": " a"}]}, "inbox.users.0.name: name: ' a': a name is 1-200"),
        ({"proxy_header": "X-User"}, "inbox: proxy_header and trusted_proxies go together"),
        (
            {"proxy_header": "X-User", "trusted_proxies": ["10.0.0.0/33"]},
            "inbox.trusted_proxies: '10.0.0.0/33' is not an address or a network",
        ),
        (
            {"forwarded_proxies": ["10.0.0.1", "proxy.example"]},
            "inbox.forwarded_proxies: 'proxy.example' is not an address or a network",
        ),
        ({"proxy_header": "X User", "trusted_proxies": ["::1"]}, "'X User' is not a header name"),
        ({"session_secret_env": "not a name"}, "inbox.session_secret_env: 'not a name' is not"),
        ({"listen_on": "x"}, "inbox.listen_on: unknown key; did you mean 'listen'?"),
    ],
)
def test_bad_sections_are_refused_naming_the_key(section: dict[str, Any], message: str) -> None:
    assert message in refusal(inbox(**section))


def test_a_user_named_like_a_group_is_refused(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
[approvers.groups]
ops = ["alice"]
[[inbox.users]]
name = "ops"
[[inbox.users]]
name = "bob"
groups = ["bob"]
""",
    )
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value) == (
        f"{path}: inbox.users: 'ops' is also the name of a group; "
        "inbox.users: 'bob' is also the name of a group"
    )


def test_inbox_groups_join_the_approvers_groups() -> None:
    approvers = ApproversSettings(groups={"ops": ["carol"], "security": ["dave"]})
    users = [
        InboxUser(name="alice", groups=["ops", "release"]),
        InboxUser(name="carol", groups=["ops"]),
        InboxUser(name="erin"),
    ]
    merged = with_inbox_groups(approvers, users)
    assert merged is not None
    assert merged.groups == {
        "ops": ["carol", "alice"],
        "security": ["dave"],
        "release": ["alice"],
    }
    assert approvers.groups["ops"] == ["carol"]  # the configuration itself is left alone
    # Without [approvers] anyone may decide: nothing to merge into.
    assert with_inbox_groups(None, users) is None


async def test_the_worker_lets_inbox_groups_decide(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    path = write_config(
        tmp_path,
        f"""
task_queue = "{task_queue}"
tools = ["calculator"]
[worker]
isolate_workflows = true
[approvers.rules.calculator]
approvers = ["ops"]
[[inbox.users]]
name = "alice"
groups = ["ops"]
[[inbox.users]]
name = "mallory"
""",
    )
    config = load_config(path)
    policy = {"tools": {"calculator": "require_approval"}}
    async with build_worker(client, config):
        handle = await start_call(
            client, task_queue, "calculator", {"expression": "1"}, policy=policy
        )
        pending = await pending_approval(handle)
        assert pending.approvers == ["alice"]
        assert pending.approvers_shown == ["ops"]
        refused = await update_rejection(
            handle, ToolCallWorkflow.decide, decision(pending, approver="mallory")
        )
        assert refused == "'mallory' may not decide this call; it needs ops"
        await handle.execute_update(ToolCallWorkflow.decide, decision(pending, approver="alice"))
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED
