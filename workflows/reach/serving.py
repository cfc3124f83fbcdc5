"""Whether a worker serves a task queue, as far as the server's pollers tell.

A client asks before a decision goes as the ``decide`` update (which waits for a worker) rather
than the signal (queued until one returns). Only a positive answer is remembered, for
``SERVING_REMEMBERED`` seconds: a worker that stopped within them costs a decision the update's
deadline (the client's ``probe_timeout``) before it goes as the signal; one that started is seen
at once. The server itself lists a stopped worker's pollers as fresh for up to a minute.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

from toolcalls.workflows.reach.delivery import NO_ANSWER

POLLER_FRESHNESS = timedelta(minutes=1)
"""A workflow poller seen this recently may be a worker serving the call's queue."""
SERVING_REMEMBERED = 10.0
"""Seconds a positive answer is trusted without asking the server again."""


class ServingProbe:
    """``DescribeTaskQueue`` for one client, its positive answers remembered briefly."""

    def __init__(self) -> None:
        self._served_until: dict[str, float] = {}

    async def serving(self, client: Client, task_queue: str, timeout: timedelta) -> bool:
        """Whether a worker polled ``task_queue`` for workflow tasks in the last minute; ``False``
        too when the server does not answer within ``timeout``."""
        if time.monotonic() < self._served_until.get(task_queue, 0.0):
            return True
        try:
            response = await client.workflow_service.describe_task_queue(
                DescribeTaskQueueRequest(
                    namespace=client.namespace,
                    task_queue=TaskQueue(name=task_queue),
                    task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
                ),
                timeout=timeout,
            )
        except RPCError as exc:
            if exc.status in NO_ANSWER:
                return False
            raise
        now = datetime.now(UTC)
        found = any(
            now - poller.last_access_time.ToDatetime(UTC) < POLLER_FRESHNESS
            for poller in response.pollers
        )
        if found:
            self._served_until[task_queue] = time.monotonic() + SERVING_REMEMBERED
        return found
