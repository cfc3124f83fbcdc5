"""TCP forwarders between a client and a real server: one holds each connection until released
(a server slow to answer), one delays every piece the server sends (a slow link)."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType


class HeldProxy:
    """Accepts at once on ``port``; forwards to ``target`` only once ``release`` is set."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self.accepted = asyncio.Event()
        self.release = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> HeldProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            self.accepted.set()
            await self.release.wait()
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.target
            )
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            writer.close()
            self._tasks.discard(task)


class SlowLink:
    """Forwards on ``port`` to ``target``, each piece the server sends ``delay`` seconds late:
    every exchange with the server costs at least ``delay``, as over a distant link."""

    def __init__(self, target: int, delay: float) -> None:
        self.target = target
        self.delay = delay
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> SlowLink:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.target
            )
            await asyncio.gather(
                _pipe(reader, upstream_writer), _pipe(upstream_reader, writer, self.delay)
            )
        finally:
            writer.close()
            self._tasks.discard(task)


async def _pipe(
    source: asyncio.StreamReader, sink: asyncio.StreamWriter, delay: float = 0.0
) -> None:
    try:
        while data := await source.read(65536):
            if delay:
                await asyncio.sleep(delay)
            sink.write(data)
            await sink.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.close()
