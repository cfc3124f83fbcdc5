"""Fifty calls race for a quota of ten while their worker is killed halfway: exactly ten execute.

The first worker is a process of its own, killed with SIGKILL once a few calls have run (no
shutdown, reservations and activities in flight); a second worker finishes the rest. Every
execution of the tool, in either worker, is written to one log.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio.client import Client

from tests.support.harness import make_config, running_worker, start_call, worker_process
from tests.support.tools import EchoArgs, EchoResult, ProbeTools
from toolcalls.activities.base import CallContext
from toolcalls.workflows.call.ledger import QuotaLedgerWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.models.quota import Held

CALLS, LIMIT = 50, 10

WORKER_SCRIPT = """
import asyncio, sys
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from tests.support.harness import make_config, running_worker
from tests.workflows.test_quotas_racing import Logged, settings

address, queue, log = sys.argv[1:4]

async def main():
    client = await Client.connect(address, data_converter=pydantic_data_converter)
    async with running_worker(client, make_config(queue, **settings()), Logged(log)):
        await asyncio.Event().wait()

asyncio.run(main())
"""


def settings() -> dict[str, object]:
    return {
        "ceiling": {"default_effect": "allow"},
        "quotas": [{"name": "burst", "limit": LIMIT, "window": "1h", "tools": ["probe_echo"]}],
        # Few at a time, so that the kill finds calls at every step.
        "worker": {"max_concurrent_activities": 2},
    }


class Logged(ProbeTools):
    """``probe_echo`` that writes each execution's call to a log, and takes a moment."""

    def __init__(self, log: str) -> None:
        super().__init__()
        self.log = log

    async def probe_echo(self, args: EchoArgs, call: CallContext) -> EchoResult:
        await asyncio.to_thread(_append, self.log, call.call_id)
        await asyncio.sleep(0.3)
        return await super().probe_echo(args, call)


def _append(path: str, line: str) -> None:
    with open(path, "a") as log:
        log.write(line + "\n")


async def test_fifty_calls_against_ten_execute_ten_through_a_killed_worker(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    log = tmp_path / "executed.log"
    alice = Principal(id=f"racer-{uuid.uuid4().hex[:12]}")
    async with worker_process(WORKER_SCRIPT, client, task_queue, str(log)) as process:
        handles = await asyncio.gather(
            *(
                start_call(
                    client,
                    task_queue,
                    "probe_echo",
                    {"text": str(n)},
                    principal=alice,
                    call_id=f"race-{n}-{uuid.uuid4().hex[:8]}",
                )
                for n in range(CALLS)
            )
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while len(log.read_text().splitlines()) < 3 if log.exists() else True:
            assert process.returncode is None, "the worker process exited"
            assert loop.time() < deadline, "no call ran"
            await asyncio.sleep(0.05)
    ran_before_kill = set(log.read_text().splitlines())
    assert len(ran_before_kill) < LIMIT, "the kill came too late to test anything"

    async with running_worker(client, make_config(task_queue, **settings()), Logged(str(log))):
        results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 120)
        ledger = client.get_workflow_handle(f"toolcalls-quota:burst:{alice.id}")
        held: list[Held] = await ledger.query(QuotaLedgerWorkflow.held)

    ran = {r.call_id for r in results if r.status is not CallStatus.DENIED}
    denied = [r for r in results if r.status is CallStatus.DENIED]
    # A call whose tool was running when its worker died ends timed out, its units spent.
    assert {r.status for r in results} - {CallStatus.DENIED} <= {
        CallStatus.COMPLETED,
        CallStatus.TIMED_OUT,
    }
    assert len(ran) == LIMIT
    assert len(denied) == CALLS - LIMIT
    assert {r.error.code for r in denied if r.error} == {ErrorCode.QUOTA_EXCEEDED}
    # Only calls that were let through ever ran, each once, in either worker.
    executions = log.read_text().splitlines()
    assert set(executions) <= ran
    assert ran_before_kill <= ran
    assert len(executions) == len(set(executions))
    assert len(held) == LIMIT
