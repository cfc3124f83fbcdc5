"""The Slack channel's parts without a server: Block Kit within Slack's limits, the request
verifier's window, the ``[slack]`` section's checks, the inbox refusing to start without its
secrets, and Slack's errors mapped for the notify activity."""

from __future__ import annotations

import hmac
import re
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.worker.chat.support import (
    BOT_ENV,
    BOT_TOKEN,
    SIGNING_ENV,
    SIGNING_SECRET,
    FakeSlack,
    deployment_toml,
)
from toolcalls.worker.chat.slack import (
    PATH,
    RequestVerifier,
    SlackAPI,
    SlackError,
    slack_signature,
)
from toolcalls.worker.chat.slack.blocks import (
    MAX_BLOCKS,
    SECTION_TEXT_MAX,
    CallRef,
    request_message,
)
from toolcalls.worker.chat.slack.verify import Refused
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.worker.inbox.serve import slack_plan
from toolcalls.workflows.models.approval import ApprovalRequest, PreviewArtifact

LINK = "https://inbox.example.com/calls/call-1"


def request(preview: list[PreviewArtifact], *, respond: bool = True) -> ApprovalRequest:
    return ApprovalRequest(
        request_id="req-1",
        workflow_id="call-1",
        call_id="c1",
        tool="edit_file",
        arguments={"path": "/w/a.txt"},
        capabilities=["filesystem.write"],
        digest="d" * 64,
        preview=preview,
        reasons=[],
        requested_at=datetime(2026, 1, 1, tzinfo=UTC),
        expires_at=None,
        approvers=["alice", "bob"],
        approvers_shown=["ops"],
        respond=respond,
    )


def sections(blocks: list[dict[str, object]]) -> list[str]:
    return [block["text"]["text"] for block in blocks if block["type"] == "section"]  # type: ignore[index]


def test_a_long_diff_is_cut_within_a_section_with_a_link_to_the_inbox() -> None:
    diff = "\n".join(f"+line {n} <b> & more" for n in range(1000))
    _, blocks = request_message(
        request([PreviewArtifact(kind="diff", title="diff", text=diff)]), LINK
    )
    [head, preview] = sections(blocks)
    assert len(preview) <= SECTION_TEXT_MAX
    assert preview.endswith(f"... cut here: <{LINK}|the whole preview is in the inbox>")
    # Slack's markup characters are escaped, and the cut never splits an escape or a line.
    assert "<b>" not in preview
    assert "&lt;b&gt; &amp; more" in preview
    assert preview.split("```")[1].splitlines()[-1].endswith("&amp; more")
    assert head.startswith("*A tool call waits for approval*")


def test_a_short_preview_is_whole_and_many_parts_stay_within_fifty_blocks() -> None:
    short = PreviewArtifact(kind="arguments", title="arguments", data={"path": "/w/a.txt"})
    _, blocks = request_message(request([short]), LINK)
    assert '"path": "/w/a.txt"' in sections(blocks)[1]
    assert "cut here" not in sections(blocks)[1]

    many = [PreviewArtifact(kind="diff", title=f"part {n}", text="x") for n in range(80)]
    _, blocks = request_message(request(many), LINK, status="Approved by alice")
    assert len(blocks) == MAX_BLOCKS
    assert blocks[-1]["type"] == "actions"
    assert any("35 more parts of the preview" in str(block) for block in blocks)


def test_reply_is_offered_only_where_the_rules_allow_a_response() -> None:
    art = [PreviewArtifact(kind="diff", title="diff", text="+a")]
    _, allowed = request_message(request(art), LINK)
    _, forbidden = request_message(request(art, respond=False), LINK)
    assert [e["action_id"] for e in allowed[-1]["elements"]] == [
        "toolcalls_approve",
        "toolcalls_deny",
        "toolcalls_reply",
    ]
    assert [e["action_id"] for e in forbidden[-1]["elements"]] == [
        "toolcalls_approve",
        "toolcalls_deny",
    ]
    value = allowed[-1]["elements"][0]["value"]
    assert CallRef.decode(value) == CallRef("call-1", "req-1", "d" * 64)
    with pytest.raises(ValueError, match="the button does not name a call"):
        CallRef.decode('{"w": "call-1"}')


def test_the_verifier_takes_a_request_once_within_five_minutes() -> None:
    now = 1_700_000_000.0
    verifier = RequestVerifier(SIGNING_SECRET, clock=lambda: now)
    body = b"payload=%7B%7D"
    # The signature is v0= and the hex HMAC-SHA256 of v0:{timestamp}:{body}.
    expected = hmac.new(b"8f742231b10e8888abc", b"v0:1531420618:token=x", "sha256").hexdigest()
    assert slack_signature("8f742231b10e8888abc", "1531420618", b"token=x") == f"v0={expected}"

    def signed(moment: float) -> tuple[str, str]:
        stamp = str(int(moment))
        return stamp, slack_signature(SIGNING_SECRET, stamp, body)

    for moment in (now + 299, now - 299):
        verifier.verify(*signed(moment), body)
    for moment in (now + 301, now - 301):
        with pytest.raises(Refused, match="more than five minutes away"):
            verifier.verify(*signed(moment), body)
    stamp, good = signed(now)
    verifier.verify(stamp, good, body)
    with pytest.raises(Refused, match="a replay"):
        verifier.verify(stamp, good, body)
    with pytest.raises(Refused, match="not signed"):
        verifier.verify(None, good, body)
    with pytest.raises(Refused, match="does not match"):
        verifier.verify(stamp, good.upper(), body)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('channel = "C0APPROVALS"', 'channel = "#approvals"'), "is not a channel id"),
        (('U0ALICE = "alice"', 'U0ALICE = "Alice"'), "write 'alice'"),
        (('U0BOB = "bob"', 'bob = "U0BOB"'), "'bob' is not a Slack user id"),
        (('team_id = "T0EXAMPLE"', 'team_id = "example"'), "is not a workspace id"),
        (('bot_token_env = "', 'bot_token = "'), "slack.bot_token"),
    ],
)
def test_the_slack_section_names_what_is_wrong(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    text = deployment_toml(tmp_path, "tq").replace(*change)
    with pytest.raises(ConfigError, match=message):
        parse_config(tomllib.loads(text))


def test_a_webhook_cannot_take_the_slack_channels_name(tmp_path: Path) -> None:
    from toolcalls.worker.config import build_catalog

    text = deployment_toml(tmp_path, "tq").replace(
        "[slack]\n",
        '[[notifications.webhooks]]\nname = "slack"\nurl = "https://hooks.example.com/x"\n\n'
        "[slack]\n",
    )
    with pytest.raises(ConfigError, match="'slack' names the \\[slack\\] channel"):
        build_catalog(parse_config(tomllib.loads(text)))


def test_the_inbox_needs_the_signing_secret_and_the_bot_token(tmp_path: Path) -> None:
    config = parse_config(tomllib.loads(deployment_toml(tmp_path, "tq")))
    with pytest.raises(ConfigError, match=f"slack: \\${SIGNING_ENV} is not set"):
        slack_plan(config, {BOT_ENV: BOT_TOKEN})
    with pytest.raises(ConfigError, match=f"slack: \\${BOT_ENV} is not set"):
        slack_plan(config, {SIGNING_ENV: SIGNING_SECRET})
    plan = slack_plan(config, {BOT_ENV: BOT_TOKEN, SIGNING_ENV: SIGNING_SECRET})
    assert plan is not None
    assert plan.link == "https://inbox.example.com/calls/{workflow_id}"


async def test_slack_errors_say_whether_a_retry_can_help() -> None:
    slack = FakeSlack(fail={"chat.postMessage": "channel_not_found"})
    api = SlackAPI(BOT_ENV, {BOT_ENV: BOT_TOKEN}, transport=slack.transport())
    with pytest.raises(SlackError) as raised:
        await api.post_message("C0GONE", "text", [])
    assert str(raised.value) == "slack: chat.postMessage: channel_not_found"
    assert raised.value.setup
    assert not raised.value.retryable

    limited = httpx.MockTransport(lambda _: httpx.Response(429, headers={"Retry-After": "30"}))
    api = SlackAPI(BOT_ENV, {BOT_ENV: BOT_TOKEN}, transport=limited)
    with pytest.raises(SlackError, match=r"ratelimited \(retry after 30 s\)") as raised:
        await api.post_message("C0APPROVALS", "text", [])
    assert raised.value.retryable

    unset = SlackAPI(BOT_ENV, {}, transport=slack.transport())
    with pytest.raises(SlackError, match=f"\\${BOT_ENV} is not set") as raised:
        await unset.post_message("C0APPROVALS", "text", [])
    assert raised.value.setup


def test_the_documented_manifest_points_slack_at_the_endpoint_with_chat_write() -> None:
    import yaml

    page = (Path(__file__).parents[3] / "docs" / "approvals.md").read_text(encoding="utf-8")
    [manifest] = re.findall(r"```yaml\n(.*?)```", page, re.S)
    settings = yaml.safe_load(manifest)
    url = settings["settings"]["interactivity"]["request_url"]
    assert url.endswith(PATH)
    assert settings["settings"]["interactivity"]["is_enabled"] is True
    assert settings["oauth_config"]["scopes"]["bot"] == ["chat:write"]
