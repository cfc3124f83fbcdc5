"""``[email]``: what the worker refuses to start without, the search syntax each backend
advertises, and a backend of the deployment's own loaded by import path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from tests.activities.email import custom_backend
from tests.support.harness import make_config, run_call, running_worker
from tests.support.tools import ALL_TOOL_NAMES
from toolcalls.activities.email.compose import message_id_for
from toolcalls.activities.email.gmail import QUERY_HELP as GMAIL_HELP
from toolcalls.activities.email.imap import QUERY_HELP as IMAP_HELP
from toolcalls.activities.email.outlook import QUERY_HELP as GRAPH_HELP
from toolcalls.activities.family import FamilyError
from toolcalls.worker.config import ConfigError, build_catalog, parse_config
from toolcalls.worker.plugin import build_instances
from toolcalls.workflows.models.call import CallStatus

READS = ["list_email_messages", "read_email"]
ALL = [*READS, "create_email_draft", "send_email"]
IMAP = {
    "username": "me@example.org",
    "password_env": "MAIL_PASSWORD",
    "imap_host": "imap.example.org",
    "smtp_host": "smtp.example.org",
    "drafts_mailbox": "Drafts",
}
CUSTOM = "tests.activities.email.custom_backend:MemoryMail"


def problems(tools: list[str], **email: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        build_catalog(parse_config({"tools": tools, "email": email}))
    return str(caught.value)


def description(tools: list[str], **email: Any) -> str:
    catalog = build_catalog(parse_config({"tools": tools, "email": email}))
    spec = catalog.get("list_email_messages")
    assert spec is not None
    return spec.description


def test_each_backend_s_requirements_are_named_by_their_keys() -> None:
    found = problems(ALL, backend="imap")
    for key in ("imap_host", "username", "password_env", "drafts_mailbox", "smtp_host"):
        assert f"email.{key}:" in found
    assert "send_email needs a sender address" in problems(
        ["send_email"], **{**IMAP, "username": "me"}
    )
    assert "email.token_env: the gmail backend needs token_env or token_file" in problems(
        READS, backend="gmail"
    )
    assert "gmail's fixed sender" in problems(
        ["create_email_draft"], backend="gmail", token_env="GMAIL_TOKEN"
    )
    assert "email.token_env" in problems(READS, backend="outlook")
    assert "email.backend: cannot import no_such_module" in problems(
        READS, backend="no_such_module:Mail"
    )
    assert "set token_env or token_file, not both" in problems(
        READS, backend="gmail", token_env="A", token_file="/run/token"
    )
    assert "is not a bare ASCII address" in problems(READS, **IMAP, sender="Me <me@example.org>")
    assert "neither gmail, outlook, imap nor an import path" in problems(
        READS, backend="pop3 server"
    )


def test_reads_need_no_drafts_folder_or_smtp_and_drafts_no_smtp() -> None:
    minimal = {k: v for k, v in IMAP.items() if k not in ("smtp_host", "drafts_mailbox")}
    build_catalog(parse_config({"tools": READS, "email": minimal}))
    build_catalog(
        parse_config(
            {
                "tools": [*READS, "create_email_draft"],
                "email": {**minimal, "drafts_mailbox": "Drafts"},
            }
        )
    )
    build_catalog(
        parse_config({"tools": READS, "email": {"backend": "outlook", "token_file": "/run/t"}})
    )


def test_a_shorter_start_to_close_must_still_hold_the_operation_s_deadline() -> None:
    data = {
        "tools": READS,
        "email": {**IMAP, "timeout_seconds": 30},
        "activities": {
            "timeouts": {"read_email": {"start_to_close_seconds": 35, "heartbeat_seconds": 5}}
        },
    }
    with pytest.raises(ConfigError) as caught:
        build_catalog(parse_config(data))
    assert (
        "email.timeout_seconds: 30 s (plus a 10 s margin) does not end inside read_email's 35 s"
        in str(caught.value)
    )


def test_a_missing_ca_file_is_refused_where_the_tools_run(tmp_path: Path) -> None:
    assert "email.ca_file:" in problems(READS, **IMAP, ca_file=str(tmp_path / "none.pem"))


def test_list_email_messages_says_the_backend_s_search_syntax() -> None:
    assert description(READS, **IMAP).endswith(IMAP_HELP)
    assert description(READS, backend="gmail", token_env="T").endswith(GMAIL_HELP)
    assert description(READS, backend="outlook", token_env="T").endswith(GRAPH_HELP)
    assert description(READS, backend=CUSTOM, options={"owner": "x"}).endswith(
        custom_backend.MemoryMail.query_help
    )
    assert "Gmail search syntax" in GMAIL_HELP
    assert "rfc822msgid:" in GMAIL_HELP
    assert "Microsoft Graph message search" in GRAPH_HELP
    assert "literal ASCII text" in IMAP_HELP


async def test_a_backend_of_your_own_serves_every_tool_through_the_workflow(
    client: Client, task_queue: str
) -> None:
    config = make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, *ALL],
        email={"backend": CUSTOM, "options": {"owner": "ops", "greeting": "hi"}},
        ceiling={"default_effect": "allow"},
    )
    async with running_worker(client, config):
        listed = await run_call(client, task_queue, "list_email_messages", {"query": "again"})
        read = await run_call(client, task_queue, "read_email", {"message_id": "m1"})
        drafted = await run_call(
            client,
            task_queue,
            "create_email_draft",
            {"to": ["a@example.com"], "subject": "s", "body": "b"},
        )
        sent = await run_call(
            client, task_queue, "send_email", {"to": ["a@example.com"], "subject": "s", "body": "b"}
        )
    results = (listed, read, drafted, sent)
    assert [r.status for r in results] == [CallStatus.COMPLETED] * 4, [r.error for r in results]
    assert listed.output == {
        "items": [{"id": "m2", "subject": "hi again", "from": "b@example.com"}],
        "next_page_token": None,
    }
    assert read.output["body_truncated"] is True
    assert len(read.output["body"]) == 20_000
    assert read.output["headers"] == {
        "from": "a@example.com",
        "to": None,
        "cc": None,
        "date": None,
        "subject": "hi",
        "message_id": None,
    }
    # The draft method takes no message_id: the result says none was set, and keeps its extras.
    assert drafted.output["message_id"] is None
    assert drafted.output["service"] == {"folder": "ops/drafts"}
    expected = message_id_for(f"{sent.workflow_id}:{sent.call_id}", "toolcalls.invalid")
    assert sent.output["message_id"] == expected
    assert sent.output["service"] == {"queue_id": "q-1"}
    assert custom_backend.SENT[-1] == {
        "to": ["a@example.com"],
        "subject": "s",
        "message_id": expected,
    }


def test_a_factory_that_builds_no_backend_stops_the_worker(tmp_path: Path) -> None:
    config = parse_config(
        {
            "tools": READS,
            "email": {"backend": "tests.activities.email.custom_backend:broken_factory"},
            "state_dir": str(tmp_path),
        }
    )
    catalog = build_catalog(config)
    with pytest.raises(FamilyError, match=r"email\.backend: .* has no list_messages method"):
        build_instances(config, catalog, READS)
