"""Encrypted history on the real dev server: what the plain ``temporal`` CLI sees, what
``toolcalls`` shows, rotation and wrong keys."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from tests.support.payloads import ENCRYPTED, decoded_data, key_line, metadata, payloads_in
from tests.worker.payloads.conftest import KEYS_ENV, Deployed, Deployment
from tests.worker.support import one_line
from toolcalls.worker.devserver import temporal_binary
from toolcalls.workflows.models.call import CallStatus, ToolCallResult

SECRET_TEXT = "launch codes: 0000 (do not share)"


async def plain_history(address: str, workflow_id: str) -> str:
    """The history as ``temporal workflow show --output json`` prints it, with no codec."""
    process = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *("workflow", "show", "-w", workflow_id, "--output", "json", "--address", address),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def listed_pending(deployed: Deployed, workflow_id: str, timeout: float = 20) -> Any:
    """The call's ``toolcalls pending --json`` entry, once visibility lists it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        pending = await deployed.run("pending", "--json")
        assert pending.code == 0, pending.stderr
        found = [e for e in json.loads(pending.stdout)["calls"] if e["workflow_id"] == workflow_id]
        if found:
            return found[0]
        assert loop.time() < deadline, f"pending never listed {workflow_id}"
        await asyncio.sleep(0.2)


async def closed(client: Client, workflow_id: str, timeout: float = 60) -> None:
    """Wait until the call has ended: the session's client has no keys, but it can describe."""
    handle = client.get_workflow_handle(workflow_id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while (await handle.describe()).status is WorkflowExecutionStatus.RUNNING:
        assert loop.time() < deadline, f"{workflow_id} still running"
        await asyncio.sleep(0.1)


def assert_ciphertext_only(history: str, *secrets: str) -> list[dict[str, object]]:
    """No secret in the text or in any payload's bytes; every payload encrypted. The payloads."""
    for secret in secrets:
        assert secret not in history
    found = list(payloads_in(json.loads(history)))
    assert found
    for payload in found:
        assert payload["metadata"]["encoding"] == ENCRYPTED, payload
        for secret in secrets:
            assert secret.encode() not in decoded_data(payload)
    return found


async def test_history_is_ciphertext_without_the_key_and_toolcalls_shows_plaintext(
    deployment: Deployment, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployed = deployment()
    secret_name = f"salaries-{uuid.uuid4().hex[:8]}.txt"
    (deployed.docs / secret_name).write_text(SECRET_TEXT)
    path = str(deployed.docs / secret_name)
    workflow_id = f"enc-{uuid.uuid4()}"
    async with deployed.worker(client, monkeypatch):
        started = await deployed.run(
            *("call", "read_file", json.dumps({"path": path}), "--require-approval"),
            *("--no-wait", "--id", workflow_id),
        )
        assert started.code == 0, started.stderr
        # The pending approval (memo: arguments, preview) decrypts for toolcalls pending.
        entry = await listed_pending(deployed, workflow_id)
        assert entry["approval"]["arguments"]["path"] == path
        # A worker serves the call: show asks it (the status query) and decrypts its answer.
        live = await deployed.run("show", workflow_id, "--json")
        assert live.code == 0, live.stderr
        view = json.loads(live.stdout)
        assert view["live"] is True
        assert view["state"]["pending_approval"]["arguments"]["path"] == path
        waiting = await plain_history(deployed.address, workflow_id)
        assert_ciphertext_only(waiting, secret_name)

        approved = await deployed.run("approve", workflow_id, "--by", "alice")
        assert approved.code == 0, approved.stderr
        await closed(client, workflow_id)

        # A failing call: its error message (a path) is encrypted too.
        missing = str(deployed.docs / f"missing-{secret_name}")
        failed_id = f"enc-failed-{uuid.uuid4()}"
        failed = await deployed.run(
            "call", "read_file", json.dumps({"path": missing}), "--id", failed_id, "--json"
        )
    assert failed.code == 1
    error = ToolCallResult.model_validate_json(failed.stdout).error
    assert error is not None
    assert error.message == f"read_file: {missing}: does not exist"

    done = await plain_history(deployed.address, workflow_id)
    payloads = assert_ciphertext_only(done, secret_name, SECRET_TEXT, "alice")
    assert {metadata(p, "encryption-key-id") for p in payloads} == {"k1"}
    # What stays readable: the tool's name and the call's status (search attributes), the ids.
    assert "read_file" in done
    assert workflow_id in done
    assert_ciphertext_only(await plain_history(deployed.address, failed_id), secret_name)

    shown = await deployed.run("show", workflow_id, "--json")
    assert shown.code == 0, shown.stderr
    result = ToolCallResult.model_validate(json.loads(shown.stdout)["state"]["result"])
    assert result.status is CallStatus.COMPLETED
    assert result.output is not None
    assert result.output["content"] == SECRET_TEXT
    assert result.approval is not None
    assert result.approval.approver == "alice"


async def test_rotation_and_a_wrong_key(
    deployment: Deployment, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployed = deployment()
    old_id, new_id = f"rot-old-{uuid.uuid4()}", f"rot-new-{uuid.uuid4()}"
    calc = ("call", "calculator", '{"expression": "6 * 7"}', "--json")
    async with deployed.worker(client, monkeypatch, ("k1",)):
        before = await deployed.run(*calc, "--id", old_id, key_ids=("k1",))
    assert before.code == 0, before.stderr
    # k2 is added in front: it encrypts from now on, and k1 still decrypts.
    async with deployed.worker(client, monkeypatch, ("k2", "k1")):
        after = await deployed.run(*calc, "--id", new_id, key_ids=("k2", "k1"))
    assert after.code == 0, after.stderr
    key_ids = {
        workflow_id: {
            metadata(p, "encryption-key-id")
            for p in payloads_in(json.loads(await plain_history(deployed.address, workflow_id)))
        }
        for workflow_id in (old_id, new_id)
    }
    assert key_ids == {old_id: {"k1"}, new_id: {"k2"}}
    for workflow_id in (old_id, new_id):
        shown = await deployed.run("show", workflow_id, "--json", key_ids=("k2", "k1"))
        assert shown.code == 0, shown.stderr
        assert json.loads(shown.stdout)["state"]["result"]["output"]["result"] == 42

    # A process that lacks k2, or holds another key under its id, says so and prints nothing.
    lacking = await deployed.run("show", new_id, key_ids=("k1",))
    assert (lacking.code, lacking.stdout) == (2, "")
    assert one_line(lacking.stderr).startswith(
        f"toolcalls: show {new_id}: payload encrypted with key 'k2', which this process does "
        "not have (its keys: k1)"
    )
    impostor = key_line("k2", b"\x01" * 32)
    wrong = await deployed.run("show", new_id, key_ids=(), env={KEYS_ENV: impostor})
    assert (wrong.code, wrong.stdout) == (2, "")
    assert one_line(wrong.stderr) == (
        f"toolcalls: show {new_id}: payload encrypted with key 'k2' does not decrypt with this "
        "process's key 'k2': the key differs from the one that encrypted it, or the payload was "
        "altered"
    )
    keyless = await deployed.run("show", new_id, key_ids=(), env={KEYS_ENV: ""})
    assert keyless.code == 2
    assert one_line(keyless.stderr) == (
        "toolcalls: codec.keys_env: the variable TOOLCALLS_TEST_KEYS is not set"
    )
