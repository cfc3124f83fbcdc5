"""Posting a waiting call to Slack: the ``slack`` target of the ``toolcalls.notify`` activity.

The notify activity has attested the notification (only the deployment's ``ToolCallWorkflow``
posts) before it reaches ``SlackChannel.post``. The message shows the call's pending request as
that very workflow run published it in its memo (the request id the buttons bind to and the whole
preview, which the notification carries only the start of), read with the worker's own client.
Posting is at least once: a post whose answer is lost is posted again by the activity's retry.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError

from toolcalls.activities.errors import tool_error
from toolcalls.worker.chat.slack.api import SlackAPI, SlackError
from toolcalls.worker.chat.slack.blocks import request_message
from toolcalls.worker.chat.slack.settings import SlackSection
from toolcalls.workflows.models.approval import ApprovalRequest
from toolcalls.workflows.models.call import MEMO_PENDING_APPROVAL, ErrorCode, Notification
from toolcalls.workflows.models.views import model_or_none


class SlackChannel:
    """Posts a waiting call's request to the ``[slack]`` channel with its buttons."""

    def __init__(self, section: SlackSection, api: SlackAPI, client: Client) -> None:
        self.section = section
        self.api = api
        self.client = client

    async def post(self, notification: Notification, link: str) -> None:
        run_id = activity.info().workflow_run_id or ""
        request = await self._pending(notification.workflow_id, run_id)
        try:
            text, blocks = request_message(request, link, kind=notification.kind)
            await self.api.post_message(self.section.channel, text, blocks)
        except ValueError as exc:
            raise tool_error(ErrorCode.CONFIGURATION_ERROR, f"notify: {exc}") from None
        except SlackError as exc:
            if exc.setup:
                raise tool_error(ErrorCode.CONFIGURATION_ERROR, f"notify: {exc}") from None
            code = ErrorCode.NETWORK_UNAVAILABLE if exc.retryable else ErrorCode.EXECUTION_FAILED
            raise tool_error(code, f"notify: {exc}", retryable=True) from None

    async def _pending(self, workflow_id: str, run_id: str) -> ApprovalRequest:
        """The request the notifying run publishes now (its memo, as that run wrote it)."""
        handle = self.client.get_workflow_handle(workflow_id, run_id=run_id)
        try:
            memo = await (await handle.describe()).memo()
        except RPCError as exc:
            raise tool_error(
                ErrorCode.NETWORK_UNAVAILABLE,
                f"notify: slack: cannot read the call: {exc.message}",
                retryable=True,
            ) from None
        request = model_or_none(ApprovalRequest, memo.get(MEMO_PENDING_APPROVAL))
        if request is None:
            # Decided (or ended) before the post: nothing is left to ask anyone.
            raise tool_error(
                ErrorCode.PRECONDITION_FAILED, "notify: slack: the call no longer waits"
            )
        return request
