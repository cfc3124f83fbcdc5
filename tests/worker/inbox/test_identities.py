"""The inbox's names are canonical: an account is found by any spelling of its name, the session
and every decision carry the name as configured, and a name with an invisible character signs no
one in."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError
from temporalio.client import Client

from tests.support.harness import pending_approval, start_call
from tests.worker.inbox.conftest import Deployment, Visit
from tests.worker.inbox.support import PASSWORDS, call_path, error
from toolcalls.worker.inbox.auth import LoginLimiter, Refusal, proxy_identity
from toolcalls.worker.inbox.settings import InboxSection, InboxUser
from toolcalls.workflows.models.call import CallStatus


def test_accounts_are_named_canonically_and_found_by_any_spelling() -> None:
    with pytest.raises(ValidationError, match="'Alice': names are compared canonically"):
        InboxSection.model_validate({"users": [{"name": "Alice"}]})
    with pytest.raises(ValidationError, match="invisible character U\\+200B"):
        InboxSection.model_validate({"users": [{"name": "alice\u200b"}]})
    section = InboxSection.model_validate({"users": [{"name": "alice"}, {"name": "bob"}]})
    for spelling in ("alice", "Alice", " alice ", "\uff41\uff4c\uff49\uff43\uff45", "ALICE\u3000"):
        user = section.user(spelling)
        assert user is not None
        assert user.name == "alice"
    assert section.user("alice\u200b") is None
    assert section.user("carol") is None


def test_the_proxys_name_is_canonical() -> None:
    section = InboxSection(
        proxy_header="X-Forwarded-User",
        trusted_proxies=["10.0.0.0/8"],
        users=[InboxUser(name="alice@example.com", groups=["ops"])],
    )
    identity = proxy_identity(section, "10.0.0.1", [" Alice@Example.COM"])
    assert (identity.name, identity.groups) == ("alice@example.com", ("ops",))
    with pytest.raises(Refusal) as raised:
        proxy_identity(section, "10.0.0.1", ["alice@example.com\u200b"])
    assert raised.value.status == 403
    assert raised.value.reason == (
        "X-Forwarded-User: 'alice@example.com\\u200b': a name cannot hold the invisible "
        "character U+200B (ZERO WIDTH SPACE)"
    )
    unlisted = section.model_copy(update={"proxy_unlisted_users": True})
    assert proxy_identity(unlisted, "10.0.0.1", ["\uff25ve"]).name == "eve"


def test_failed_logins_count_every_spelling_of_a_name_as_one() -> None:
    limiter = LoginLimiter(per_user=2, per_address=100, window_seconds=600)
    assert limiter.attempt("alice", "10.0.0.1") is None
    assert limiter.attempt("\uff41lice ", "10.0.0.2") is None
    assert limiter.attempt("ALICE", "10.0.0.3") is not None


async def test_a_login_by_another_spelling_signs_in_the_account_and_decides_as_it(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    target = deployment.path.parent / "work" / "spelled.txt"
    handle = await start_call(
        client, deployment.task_queue, "create_file", {"path": str(target), "content": "hi\n"}
    )
    await pending_approval(handle)
    someone = visit()
    refused = await someone.login("alice\u200b", PASSWORDS["alice"])
    assert refused.status_code == 401
    assert error(refused.text) == "Wrong user name or password."
    alice = visit()
    signed_in = await alice.login(" \uff21lice", PASSWORDS["alice"])
    assert signed_in.status_code == 303
    sent = await alice.act(call_path(handle.id), "approve", reason="fine")
    assert sent.status_code == 303
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.approver == "alice"
    assert target.read_text() == "hi\n"
