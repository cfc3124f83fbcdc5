"""Previews as people read them: each kind a tool prepares, rendered on the call's page; and
hostile content (markup in arguments, file content, a question, a mail body) rendered inert."""

from __future__ import annotations

import re

import markupsafe
from temporalio.client import Client

from tests.support.harness import pending_approval, pending_question, start_call
from tests.worker.inbox.conftest import Deployment, Visit
from tests.worker.inbox.support import call_path
from toolcalls.worker.inbox.base import environment
from toolcalls.worker.inbox.rendering import preview
from toolcalls.workflows.models.approval import PreviewArtifact

HOSTILE = '<script>alert("pwned")</script><img src=x onerror="alert(1)">'


def fragment(artifact: PreviewArtifact) -> str:
    """One artifact through the page's own template macro."""
    macros = environment().get_template("previews.html").module
    return str(macros.show(preview(artifact)))  # type: ignore[attr-defined]


def field_row(page: str, label: str) -> str:
    match = re.search(rf"<tr[^>]*><th>{re.escape(label)}</th><td>(.*?)</td></tr>", page, re.S)
    assert match, f"no {label} row"
    return match.group(1)


async def test_each_preview_kind_is_rendered_for_people(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    root = deployment.path.parent / "work"
    (root / "config.ini").write_text("mode = slow\nkeep = this\n")
    queue = deployment.task_queue
    diff = await start_call(
        client,
        queue,
        "edit_file",
        {"path": str(root / "config.ini"), "old_text": "mode = slow", "new_text": "mode = fast"},
    )
    process = await start_call(
        client,
        queue,
        "execute_command",
        {"argv": ["/bin/echo", "hello world"], "cwd": str(root), "env": {"GREETING": "hi"}},
    )
    http = await start_call(
        client, queue, "shop_api", {"method": "POST", "path": "orders", "body": {"qty": 2}}
    )
    event = await start_call(
        client,
        queue,
        "create_calendar_event",
        {
            "title": "Design review",
            "start": "2027-01-07T12:00:00+01:00",
            "end": "2027-01-07T13:00:00+01:00",
            "location": "Room 4",
            "description": "Bring the diagrams.",
        },
    )
    for handle in (diff, process, http, event):
        await pending_approval(handle)
    alice = visit()
    await alice.login("alice")

    page = (await alice.get(call_path(diff.id))).text
    assert '<div class="d-del">-mode = slow</div>' in page
    assert '<div class="d-add">+mode = fast</div>' in page
    assert '<div class="d-context"> keep = this</div>' in page
    assert '<div class="d-hunk">@@ -1,2 +1,2 @@</div>' in page

    page = (await alice.get(call_path(process.id))).text
    assert '<ol class="argv"><li><code>/bin/echo</code></li><li><code>hello world</code></li>' in (
        page
    )
    assert f"<code>{root.resolve()}</code>" in field_row(page, "cwd")
    assert "60 s" in field_row(page, "limits")
    # The variable the call gave, not the deployment, stands out.
    assert re.search(
        r'<tr class="mark-call"><th><code>GREETING</code></th><td><code>hi</code> '
        r'<span class="flag">given by the call</span>',
        page,
    )

    page = (await alice.get(call_path(http.id))).text
    assert "<code>POST</code>" in field_row(page, "method")
    assert "<code>http://127.0.0.1:9/api/orders</code>" in field_row(page, "URL")
    assert "<code>Accept, Content-Type, User-Agent</code>" in field_row(page, "headers")
    assert "names only" in field_row(page, "headers")
    assert re.search(r'<h4>body</h4>\s*<pre class="body">{&#34;qty&#34;:2}</pre>', page)

    page = (await alice.get(call_path(event.id))).text
    assert "<code>Design review</code>" in field_row(page, "title")
    assert "2027-01-07T12:00:00+01:00 (2027-01-07T11:00:00Z)" in field_row(page, "start")
    assert "<code>Room 4</code>" in field_row(page, "location")
    assert '<pre class="body">Bring the diagrams.</pre>' in page


def test_an_email_is_shown_as_the_message() -> None:
    # Shaped as the email family's prepare step shapes it: the headers, a blank line, the body.
    artifact = PreviewArtifact(
        kind="email",
        title="send email to ops@example.org: Release",
        text="From: bot@example.org\nTo: ops@example.org\nSubject: Release\n"
        "Message-ID: <abc@example.org>\n\nShipping 1.2 today.\nRegards",
        data={
            "from": "bot@example.org",
            "to": ["ops@example.org", "dev@example.org"],
            "subject": "Release",
            "message_id": "<abc@example.org>",
        },
    )
    shown = fragment(artifact)
    assert "<code>ops@example.org, dev@example.org</code>" in field_row(shown, "To")
    assert "<code>Release</code>" in field_row(shown, "Subject")
    assert "<code>&lt;abc@example.org&gt;</code>" in field_row(shown, "Message-ID")
    assert '<pre class="body">Shipping 1.2 today.\nRegards</pre>' in shown


def test_a_query_and_an_unknown_kind_show_their_text_and_data() -> None:
    sql = fragment(
        PreviewArtifact(kind="sql", title="read-only query", text="SELECT 1", data={"max_rows": 5})
    )
    assert '<pre class="body">SELECT 1</pre>' in sql
    assert "<code>5</code>" in field_row(sql, "max rows")
    other = fragment(PreviewArtifact(kind="custom", title="t", text="body", data={"k": [1]}))
    assert "<code>[1]</code>" in field_row(other, "k")
    assert '<pre class="body">body</pre>' in other


def test_hostile_mail_is_inert() -> None:
    shown = fragment(
        PreviewArtifact(
            kind="email",
            title=HOSTILE,
            text=f"From: a@b\n\n{HOSTILE}",
            data={"from": "a@b", "to": [HOSTILE], "subject": HOSTILE},
        )
    )
    assert "<script" not in shown
    assert "<img" not in shown
    assert str(markupsafe.escape(HOSTILE)) in shown


async def test_hostile_arguments_content_and_questions_are_inert(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    root = deployment.path.parent / "work"
    created = await start_call(
        client,
        deployment.task_queue,
        "create_file",
        {"path": str(root / "page.html"), "content": HOSTILE},
    )
    command = await start_call(
        client,
        deployment.task_queue,
        "execute_command",
        {"argv": ["/bin/echo", HOSTILE], "cwd": str(root), "env": {"NOTE": HOSTILE}},
    )
    asked = await start_call(
        client,
        deployment.task_queue,
        "ask_user",
        {"question": HOSTILE, "options": [HOSTILE, "</form><form action=//evil>"]},
    )
    await pending_approval(created)
    await pending_approval(command)
    await pending_question(asked)
    alice = visit()
    await alice.login("alice")
    for handle in (created, command, asked):
        page = (await alice.get(call_path(handle.id))).text
        assert "<script" not in page.replace('<script src="/static/inbox.js" defer></script>', "")
        assert "<img" not in page
        assert "<form action=//evil" not in page
        assert "alert(" in page  # it is there, as text
    listing = (await alice.get("/")).text
    assert "<img" not in listing
    assert '<script>alert("pwned")' not in listing
