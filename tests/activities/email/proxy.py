"""TCP forwarders between a client and a real server: one holds each connection until released
(a server slow to answer), one delays every piece the server sends (a slow link)."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Self


class _Forwarder:
    """Accepts on ``port`` (a free one) and forwards each connection to ``target`` as
    ``_forward`` does; every connection is closed on exit."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Self:
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
            await self._forward(reader, writer)
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.target)


class HeldProxy(_Forwarder):
    """Accepts at once on ``port``; forwards to ``target`` only once ``release`` is set."""

    def __init__(self, target: int) -> None:
        super().__init__(target)
        self.accepted = asyncio.Event()
        self.release = asyncio.Event()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted.set()
        await self.release.wait()
        upstream_reader, upstream_writer = await self._upstream()
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


class SlowLink(_Forwarder):
    """Forwards on ``port`` to ``target``, each piece the server sends ``delay`` seconds late:
    every exchange with the server costs at least ``delay``, as over a distant link."""

    def __init__(self, target: int, delay: float) -> None:
        super().__init__(target)
        self.delay = delay

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await self._upstream()
        await asyncio.gather(
            _pipe(reader, upstream_writer), _pipe(upstream_reader, writer, self.delay)
        )


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
