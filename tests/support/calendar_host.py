"""A tool worker in its own process whose calendar tools reach Google or Graph on loopback.

    python -m tests.support.calendar_host CONFIG ADDRESS SERVICE_ORIGIN

The worker is the real one (``build_worker`` with the deployment's ``CONFIG``, the real calendar
backend behind the production network guard); only the transport under the guard changes: every
request keeps its method, path, query, headers and body and is carried to ``SERVICE_ORIGIN``
(``tests.support.calendar_services``) instead of ``www.googleapis.com`` or
``graph.microsoft.com``. It prints ``polling task queue`` once it polls, and runs until killed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping

import httpx

from tests.support.calendars import GOOGLE_HOST, GRAPH_HOST, PUBLIC_ADDRESS
from tests.support.http_servers import MapResolver
from toolcalls.activities.calendar.settings import CalendarSettings
from toolcalls.activities.calendar.tools import CalendarTools
from toolcalls.activities.network.service import service_guard
from toolcalls.worker.config import load_config
from toolcalls.worker.connect import connect, resolve_target
from toolcalls.worker.payloads.converter import data_converter
from toolcalls.worker.run import build_worker


class ToLoopback(httpx.AsyncBaseTransport):
    """Carries each request to ``origin`` over plain http; the rest of the request is kept."""

    def __init__(self, origin: str) -> None:
        self._origin = httpx.URL(origin)
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(
            scheme="http", host=self._origin.host, port=self._origin.port
        )
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def forwarded_tools(
    settings: CalendarSettings, origin: str, environ: Mapping[str, str] | None = None
) -> CalendarTools:
    """The calendar tools for ``settings``, their service reached at ``origin``."""
    guard = service_guard(
        resolver=MapResolver({GOOGLE_HOST: [PUBLIC_ADDRESS], GRAPH_HOST: [PUBLIC_ADDRESS]}),
        transport=ToLoopback(origin),
    )
    return CalendarTools(settings, environ=environ, guard=guard)


async def main(config_path: str, address: str, origin: str) -> None:
    config = load_config(config_path)
    settings: CalendarSettings = config.calendar  # type: ignore[attr-defined]
    client = await connect(resolve_target(config.temporal, address=address), data_converter(config))
    worker = build_worker(
        client, config, instances={CalendarTools: forwarded_tools(settings, origin)}
    )
    async with worker:
        print(f"polling task queue {config.queue}", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main(*sys.argv[1:]))
    finally:
        sys.stdout.flush()
        os._exit(1)
