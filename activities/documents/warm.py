"""Parser processes started ahead of the calls they serve, each for exactly one document.

A parser process's start (the interpreter, then pypdf, python-docx and openpyxl) costs more than
parsing most documents, so ``WarmParsers`` keeps a few started: each has imported the libraries
and waits on its stdin, a Unix socket, for one job (``extract.wait_for_job``). A call takes one,
hands it the document's open descriptor and its options in one message, reads its answer, and
kills its process group, however the call ends; then a replacement starts in the background (not
before: it would compete with the call's parse for the CPU). No process serves a second
document, so nothing of one document (its memory, its limits, a library's state) reaches the
next, and the address-space and CPU ceilings are set by the process itself once its job is
known, before it reads the document.

Idle processes are killed when the pool closes (the worker stopping); each is also in its own
session and armed to die with the worker (``PR_SET_PDEATHSIG``), so none outlives a killed worker.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from toolcalls.activities.child_process import kill, signal_group
from toolcalls.activities.processes.runner import spawn

log = logging.getLogger(__name__)


@dataclass
class Parser:
    """One started parser process and the worker's end of the socket that is its stdin."""

    process: asyncio.subprocess.Process
    channel: socket.socket

    def hand_over(self, options: Sequence[str], document: int) -> bool:
        """Send the job: ``options`` and the open ``document``; ``False`` if the process can no
        longer take it (it died while it waited), and the socket is closed. Once the job is
        sent, the socket stays open, non-blocking, for the pages the parser reports
        (``progress.read_pages``), until the process is killed."""
        message = json.dumps(list(options)).encode()
        try:
            socket.send_fds(self.channel, [message], [document], socket.MSG_NOSIGNAL)
        except OSError:
            self.channel.close()
            return False
        self.channel.setblocking(False)
        return True

    async def kill(self) -> None:
        """SIGKILL the process's group and reap it."""
        self.channel.close()
        await kill(self.process)


class WarmParsers:
    """Up to ``size`` parser processes started ahead of the calls, each for one job.

    ``command`` starts one (``--parent`` and this process's pid are appended). The processes
    belong to the event loop that started them; a pool used from another loop forgets (and
    kills) the ones it has. A closed pool still starts a process for each call, but keeps none.
    """

    def __init__(self, command: Sequence[str], env: Mapping[str, str], size: int) -> None:
        self.command = (*command, "--parent", str(os.getpid()))
        self.env = dict(env)
        self.size = size
        self._waiting: deque[asyncio.Task[Parser]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    async def waiting(self) -> list[int]:
        """The pids of the processes started ahead and not yet taken, once they have started."""
        started = await asyncio.gather(
            *(asyncio.shield(task) for task in self._waiting), return_exceptions=True
        )
        return [parser.process.pid for parser in started if isinstance(parser, Parser)]

    async def take(self) -> Parser:
        """A started parser for one job: the oldest waiting one (started ahead, though perhaps
        still importing), or a new one."""
        self._same_loop()
        starting = self._waiting.popleft() if self._waiting else self._start_soon()
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            starting.add_done_callback(_discard)
            raise

    async def release(self, parser: Parser) -> None:
        """Kill a parser taken for a job, however the job ended, and start its replacement in
        the background: not before, so that it does not compete with the job for the CPU."""
        await parser.kill()
        self._fill()

    async def aclose(self) -> None:
        """Kill the waiting processes, and keep none from now on."""
        self._closed = True
        waiting, self._waiting = list(self._waiting), deque()
        for task in waiting:
            task.cancel()
        for outcome in await asyncio.gather(*waiting, return_exceptions=True):
            if isinstance(outcome, Parser):
                await outcome.kill()

    def _fill(self) -> None:
        while not self._closed and len(self._waiting) < self.size:
            self._waiting.append(self._start_soon())

    def _start_soon(self) -> asyncio.Task[Parser]:
        task = asyncio.ensure_future(self.start())
        task.add_done_callback(_log_failure)
        return task

    async def start(self) -> Parser:
        """A new parser process, not from the pool (the pool's starts come here too)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process, canceled = await spawn(
                *self.command,
                stdin=theirs.fileno(),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                cwd="/",
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        parser = Parser(process, ours)
        if canceled:
            await parser.kill()
            raise asyncio.CancelledError
        return parser

    def _same_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            waiting, self._waiting = list(self._waiting), deque()
            for task in waiting:
                if task.done():
                    _discard(task)
                else:
                    task.add_done_callback(_discard)
            self._loop = loop


def _discard(task: asyncio.Task[Parser]) -> None:
    """Kill the process of a start nobody will use (its reaping is left to the loop)."""
    if task.done() and not task.cancelled() and task.exception() is None:
        parser = task.result()
        parser.channel.close()
        signal_group(parser.process, signal.SIGKILL)


def _log_failure(task: asyncio.Task[Parser]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        log.warning("a document parser process could not be started: %s", error)
