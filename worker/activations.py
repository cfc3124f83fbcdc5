"""Where a worker on the fast path runs our own workflows' activations: its event loop's thread.

The SDK hands every activation to a thread pool (``workflow_task_executor``) and waits for it
there with a deadlock timeout of 2 s. Each activation thus costs two thread hand-offs: the pool's
thread wakes to run it, then wakes the event loop with its completion, and both threads take the
interpreter lock in turn. A call that waits and is approved takes six activations (nine when it
left the cache while it waited), and a profile of the worker on 2 cores put about 29% of its CPU
in the kernel, most of it switching threads (docs/performance.md, "The two paths").

``OwnOnTheLoop`` is the worker's executor: an activation of a workflow that ``OwnUnsandboxed``
created without the sandbox (``ToolCallWorkflow`` and its companions) runs as a callback on the
event loop, as the SDK's own debug mode runs every activation; every other activation (the user's
workflows, ours on an isolated worker) goes to the thread pool as before. The price is the SDK's
deadlock detector for those activations: a workflow of ours that blocked would hold the worker's
loop instead of failing its task after 2 s. Our workflow code does no I/O and never blocks; its
determinism is checked by the isolated test workers and the replay suite, which keep threads.

It recognises the SDK's private ``_RunningWorkflow`` by its ``instance`` attribute: when that
moves, every activation goes to the pool as before, and ``tests/worker/test_plugin.py`` fails. It
puts the worker's loop back as the running one after an activation through asyncio's private
``_set_running_loop``, which has no public equivalent: on a Python without it (``LOOP_SETTER`` is
``None``) the fast path keeps the SDK's pool (``toolcalls.worker.fast_path.fast_executor``).
Imported only by ``toolcalls.worker.fast_path`` when the fast path applies.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
from collections.abc import Callable
from typing import Any

from toolcalls.worker.sandbox import OwnUnsandboxed

LOOP_SETTER: Callable[[asyncio.AbstractEventLoop | None], None] | None = getattr(
    asyncio.events, "_set_running_loop", None
)
"""asyncio's private setter of the thread's running loop (CPython 3.7 and later)."""


class OwnOnTheLoop(concurrent.futures.ThreadPoolExecutor):
    """The workflow-task executor: ``runner``'s unsandboxed instances on the loop, the rest in
    threads (created only when needed, as many as the SDK's own pool would have)."""

    def __init__(self, runner: OwnUnsandboxed, max_workers: int | None = None) -> None:
        super().__init__(max_workers=max_workers or 500, thread_name_prefix="temporal_workflow_")
        self.runner = runner

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        instance = getattr(getattr(fn, "__self__", None), "instance", None)
        if instance is None or not self.runner.unsandboxed(instance):
            return super().submit(fn, *args, **kwargs)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # submitted from outside the worker's loop: a thread, as usual
            return super().submit(fn, *args, **kwargs)
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        # A callback of its own, outside the task that asked (an activation steps its own tasks),
        # in an empty context, as a pool thread would run it.
        call = functools.partial(fn, *args, **kwargs)
        loop.call_soon(_run, future, call, context=contextvars.Context())
        return future


def _run(future: concurrent.futures.Future[Any], call: Callable[[], Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    # The activation makes its workflow's loop the running one and clears it when done; the
    # worker's loop is put back after it (asyncio has no public setter for that).
    loop = asyncio.get_running_loop()
    try:
        result = call()
    except BaseException as exc:  # as a pool thread does: the waiter gets it
        future.set_exception(exc)
    else:
        future.set_result(result)
    finally:
        assert LOOP_SETTER is not None  # fast_executor installs no OwnOnTheLoop without it
        LOOP_SETTER(loop)
