"""Slack interactive approvals: a waiting call is posted with Approve / Deny / Reply buttons.

``SlackSection`` is the ``[slack]`` section; ``SlackChannel`` posts a waiting call (the ``slack``
target of the ``toolcalls.notify`` activity, on the worker); ``SlackInteractions`` is the
``POST /slack/interactions`` endpoint the inbox's process serves; ``SlackAPI`` the Web API client
both use. See docs/approvals.md, "Slack".
"""

from toolcalls.worker.chat.slack.api import SlackAPI, SlackError
from toolcalls.worker.chat.slack.channel import SlackChannel
from toolcalls.worker.chat.slack.interactions import PATH, SlackInteractions
from toolcalls.worker.chat.slack.settings import TARGET, SlackSection
from toolcalls.worker.chat.slack.verify import RequestVerifier, slack_signature

__all__ = [
    "PATH",
    "TARGET",
    "RequestVerifier",
    "SlackAPI",
    "SlackChannel",
    "SlackError",
    "SlackInteractions",
    "SlackSection",
    "slack_signature",
]
