"""``fetch_url`` publishes the bytes it has received while a slow page arrives.

A loopback server sends a page in small pieces over two seconds; a reader following the call sees
growing ``bytes`` counts, then the result. A page that arrives at once publishes nothing.
"""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.activities.network.test_workflow import fetch_config, loopback_worker
from tests.support.harness import start_call
from tests.support.http_servers import Route, serve, text
from toolcalls.workflows.models.call import CallStatus, ToolCallResult
from toolcalls.workflows.models.progress import ProgressItem, ProgressKind
from toolcalls.workflows.reach.follow import follow

PIECES, PIECE = 40, b"x" * 1000


def slow_page(pause: float) -> Route:
    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(PIECES * len(PIECE)))
        handler.end_headers()
        for _ in range(PIECES):
            handler.wfile.write(PIECE)
            handler.wfile.flush()
            time.sleep(pause)

    return route


async def test_a_slow_download_shows_its_bytes_as_they_come(
    client: Client, task_queue: str
) -> None:
    config = fetch_config(task_queue, ceiling={"default_effect": "allow"})
    with serve({"/slow": slow_page(0.05), "/fast": text("quick")}) as server:
        async with loopback_worker(client, config):
            url = server.url("/slow").replace("127.0.0.1", "site.test")
            handle = await start_call(client, task_queue, "fetch_url", {"url": url})
            events = [event async for event in follow(client, handle.id)]
            fast = await start_call(
                client,
                task_queue,
                "fetch_url",
                {"url": server.url("/fast").replace("127.0.0.1", "site.test")},
            )
            quick = await fast.result()
    result = events[-1]
    assert isinstance(result, ToolCallResult)
    assert result.status is CallStatus.COMPLETED
    counts = [e.done or 0 for e in events if isinstance(e, ProgressItem)]
    assert {e.kind for e in events if isinstance(e, ProgressItem)} == {ProgressKind.BYTES}
    assert 1 <= len(counts) <= 10  # one count a batch, never one per piece
    assert counts == sorted(counts)
    assert all(0 < done < PIECES * len(PIECE) for done in counts[:-1])
    assert quick.status is CallStatus.COMPLETED
    history = await fast.fetch_history()
    signaled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    assert signaled not in [event.event_type for event in history.events]
