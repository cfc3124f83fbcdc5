"""The command line's principal (``call --as``) and the decision log (``decisions``), against a
real worker with a real Cedar policy."""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from pathlib import Path

from temporalio.client import Client

from tests.support.harness import make_config, running_worker
from tests.support.payloads import keys
from tests.worker.support import command, one_line, toolcalls
from toolcalls.worker.payloads.codec import EncryptionCodec
from toolcalls.worker.payloads.keys import parse_keys
from toolcalls.workflows.models.call import WORKFLOW_NAME, ToolCallRequest

POLICY = """@id("everyone")
permit(principal, action, resource);

@id("no-bob-writes")
forbid(principal == Principal::"bob", action == Action::"filesystem.write", resource);
"""


async def test_call_as_a_principal_and_list_the_decisions(
    client: Client, task_queue: str, address: str, tmp_path: Path
) -> None:
    policy = tmp_path / "main.cedar"
    policy.write_text(POLICY)
    config = make_config(
        task_queue,
        ceiling={"default_effect": "allow"},
        policies=[{"name": "main", "files": [str(policy)]}],
    )
    bobs, alices = f"bob-{uuid.uuid4()}", f"alice-{uuid.uuid4()}"
    queue = ("--task-queue", task_queue)
    async with running_worker(client, config):
        denied = await command(
            tmp_path, address, "call", "probe_write", '{"token": "b"}', "--as", "bob",
            "--id", bobs, *queue, "--json",
        )  # fmt: skip
        done = await command(
            tmp_path, address, "call", "probe_write", '{"token": "a"}',
            "--as", "alice", "--as-attr", "tenant=acme", "--id", alices, *queue, "--json",
        )  # fmt: skip
    assert json.loads(denied.stdout)["status"] == "denied", denied.stderr
    assert "no-bob-writes" in json.loads(denied.stdout)["error"]["message"]
    result = json.loads(done.stdout)
    assert result["status"] == "completed", done.stderr
    assert result["principal"] == "alice"

    shown = await command(tmp_path, address, "show", alices)
    assert re.search(r"^acts for:\s+alice$", shown.stdout, re.M), shown.stdout

    listed = await command(tmp_path, address, "decisions", "--since", "10m", "--limit", "50")
    assert listed.code == 0, listed.stderr
    lines = {line.split()[1]: line for line in listed.stdout.splitlines()}
    assert " bob  probe_write  deny " in lines[bobs]
    assert "no-bob-writes" in lines[bobs]
    assert " alice  probe_write  allow " in lines[alices]
    as_json = await command(tmp_path, address, "decisions", "--json", "--limit", "50")
    entries = {e["workflow_id"]: e for e in json.loads(as_json.stdout)["decisions"]}
    assert entries[bobs]["effect"] == "deny"
    assert entries[bobs]["principal"] == "bob"
    assert entries[alices]["policies"][0]["policies"] == ["everyone"]
    assert "token" not in as_json.stdout  # never argument values


async def test_an_unreadable_history_is_listed_as_such_and_the_rest_still_print(
    client: Client, task_queue: str, address: str, tmp_path: Path
) -> None:
    """A run named ToolCallWorkflow whose input is not a request, and one whose payloads are
    sealed under a key this process lacks: both listed ``unreadable`` with the reason (one
    line each), and the readable call beside them still shows its decision."""
    foreign, sealed, real = (f"{kind}-{uuid.uuid4()}" for kind in ("foreign", "sealed", "real"))
    elsewhere = f"{task_queue}-nobody"  # no worker: the runs stay started and are never read
    await client.start_workflow(
        WORKFLOW_NAME, {"not": "a request"}, id=foreign, task_queue=elsewhere
    )
    codec = EncryptionCodec(parse_keys(keys("k1"), "test"))
    locked = Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=dataclasses.replace(client.data_converter, payload_codec=codec),
    )
    request = ToolCallRequest(tool="calculator", arguments={"expression": "1+1"}, call_id="c")
    await locked.start_workflow(WORKFLOW_NAME, request, id=sealed, task_queue=elsewhere)
    async with running_worker(client, make_config(task_queue)):
        done = await command(
            tmp_path, address, "call", "calculator", '{"expression": "2+2"}', "--id", real,
            "--task-queue", task_queue,
        )  # fmt: skip
    assert done.code == 0, done.stderr
    listed = await command(tmp_path, address, "decisions", "--since", "10m", "--limit", "200")
    assert listed.code == 0, listed.stderr
    lines = {line.split()[1]: line for line in listed.stdout.splitlines()}
    assert " unreadable " in lines[foreign]
    assert "not a request this version reads" in lines[foreign]
    assert " unreadable " in lines[sealed]
    assert "key 'k1'" in lines[sealed]
    assert " calculator  allow " in lines[real]
    for handle in (client.get_workflow_handle(foreign), client.get_workflow_handle(sealed)):
        await handle.terminate("test done")


async def test_a_malformed_principal_is_a_usage_error(address: str, tmp_path: Path) -> None:
    done = await command(tmp_path, address, "call", "calculator", "--as-attr", "tenant=acme")
    assert done.code == 2
    assert one_line(done.stderr) == "toolcalls: call: --as-attr needs --as"
    done = await command(
        tmp_path, address, "call", "calculator", "--as", "alice", "--as-attr", "Tenant=acme"
    )
    assert done.code == 2
    assert "--as: invalid principal: attributes" in one_line(done.stderr)


async def test_a_worker_with_a_policy_that_does_not_parse_stops_before_connecting(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.cedar").write_text(
        "permit(principal, action, resource);\n\n"
        'permit(principal, action, resource)\n  when { resource.path lik "/a" };\n'
    )
    config = tmp_path / "toolcalls.toml"
    config.write_text(
        'tools = ["calculator"]\n[[policies]]\nname = "main"\n'
        f'files = ["{tmp_path / "bad.cedar"}"]\n'
    )
    done = await toolcalls(tmp_path, "worker", "--config", str(config), "--address", "127.0.0.1:1")
    assert done.code == 2
    assert one_line(done.stderr) == (
        f"toolcalls: policies main: {tmp_path / 'bad.cedar'}:4:24: unexpected token `lik`"
    )
