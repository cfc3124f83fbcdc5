"""``GET /api/progress/{workflow_id}?from=N``: a page of a call's progress stream, for the call
page's live output (``static/progress.js``).

The page's script asks from offset 0 when it loads (so a reload shows again what the call keeps)
and then from where the last answer ended, until one says the stream has ended. Only a logged-in
viewer may ask, as for the call page itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from temporalio.service import RPCError, RPCStatusCode

from toolcalls.worker.inbox.auth import Refusal
from toolcalls.worker.inbox.base import Inbox
from toolcalls.workflows.reach.follow import page_of

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response


async def progress_api(inbox: Inbox, request: Request) -> Response:
    from starlette.responses import JSONResponse

    if inbox.viewer(request) is None:
        raise Refusal(401, "you are not logged in")
    workflow_id = request.path_params["workflow_id"]
    text = request.query_params.get("from", "0")
    if not text.isdigit():
        raise Refusal(400, f"from: {text!r} is not an offset (a whole number, 0 or more)")
    try:
        page = await page_of(inbox.calls.client, workflow_id, int(text))
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise Refusal(404, f"no call {workflow_id}") from None
        raise Refusal(503, f"cannot read {workflow_id}: {exc.message}") from None
    return JSONResponse(page.model_dump(mode="json", exclude_none=True))
